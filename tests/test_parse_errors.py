"""Malformed traces raise dtrlab.TraceError naming the file and the line."""

from __future__ import annotations

import re

import pytest

import dtrlab

GOOD_HEAD = [
    '{"INSTRUCTION":"ANNOTATE","ANNOTATION":"START"}',
    '{"INSTRUCTION":"CONSTANT","NAME":"a"}',
    '{"INSTRUCTION":"MEMORY","NAME":"a","MEMORY":"64"}',
]


def call(result="b", args=("a",), time=5):
    import json

    return json.dumps({"INSTRUCTION": "CALL", "NAME": "op", "RESULT": [result], "ARGS": list(args), "TIME": time})


def mem(name="b", size='"8"'):
    return f'{{"INSTRUCTION":"MEMORY","NAME":"{name}","MEMORY":{size}}}'


def alias(name="b", value='"-1"'):
    return f'{{"INSTRUCTION":"ALIAS","NAME":"{name}","ALIAS":{value}}}'


# (lines after the good head, line number reported, message pattern)
CASES = {
    "bad json": (["{not json"], 4, "not valid JSON"),
    "not an object": (["[1, 2]"], 4, "JSON object"),
    "unknown instruction": (['{"INSTRUCTION":"FROBNICATE"}'], 4, "unknown instruction"),
    "missing instruction": (['{"NAME":"x"}'], 4, "missing field INSTRUCTION"),
    "constant without memory": (['{"INSTRUCTION":"CONSTANT","NAME":"c"}', call("d"), mem("d"), alias("d")], 5, "expected MEMORY"),
    "memory of another name": (['{"INSTRUCTION":"CONSTANT","NAME":"c"}', mem("zz")], 5, "expects \"c\""),
    "call without memory": ([call(), alias()], 5, "expected MEMORY"),
    "call without alias": ([call(), mem(), mem()], 6, "expected ALIAS"),
    "unknown argument": ([call(args=("nope",)), mem(), alias()], 4, "unknown tensor name \"nope\""),
    "non-integer size": ([call(), mem(size='"8.5"'), alias()], 5, "MEMORY must be a non-negative integer"),
    "negative size": ([call(), mem(size='"-8"'), alias()], 5, "MEMORY must be a non-negative integer"),
    "non-integer time": ([call(time=1.5), mem(), alias()], 4, "TIME must be a non-negative integer"),
    "non-integer alias": ([call(), mem(), alias(value='"x"')], 6, "ALIAS must be an integer"),
    "alias out of range": ([call(), mem(), alias(value='"3"')], 6, "not -1 or an argument index"),
    "alias of a multi-argument op": ([call(args=("a", "a")), mem(), alias(value='"0"')], 6, "only views"),
    "truncated call": ([call()], 4, "file ends before the MEMORY line"),
    "stray memory": ([mem()], 4, "without a preceding CONSTANT or CALL"),
    "empty line": (["", call(), mem(), alias()], 4, "empty line"),
    "duplicate result name": ([call("a"), mem("a"), alias("a")], 4, "already a live name"),
    "copy onto a live name": (['{"INSTRUCTION":"COPY","DST":"a","SRC":"a"}'], 4, "already a live name"),
    "second mutation of one tensor": (
        [
            '{"INSTRUCTION":"COPY","DST":"b","SRC":"a"}',
            '{"INSTRUCTION":"MUTATE","NAME":"m","ARGS":["a"],"MUTATE":[0],"TIME":1}',
            '{"INSTRUCTION":"MUTATE","NAME":"m","ARGS":["b"],"MUTATE":[0],"TIME":1}',
        ],
        6,
        "defined twice",
    ),
    "mutate index out of range": (['{"INSTRUCTION":"MUTATE","NAME":"m","ARGS":["a"],"MUTATE":[2],"TIME":1}'], 4, "out of range"),
    "call without outputs": (['{"INSTRUCTION":"CALL","NAME":"op","RESULT":[],"ARGS":["a"],"TIME":5}'], 4,
                             "without outputs (RESULT is empty)"),
    "mutate without outputs": (['{"INSTRUCTION":"MUTATE","NAME":"m","ARGS":["a"],"MUTATE":[],"TIME":1}'], 4,
                               "without outputs (MUTATE is empty)"),
    "double release": (['{"INSTRUCTION":"RELEASE","NAME":"a"}', '{"INSTRUCTION":"RELEASE","NAME":"a"}'], 5,
                       '"a" is released more often than it was referenced'),
    "reference after the last release": (['{"INSTRUCTION":"RELEASE","NAME":"a"}',
                                          '{"INSTRUCTION":"COPY","DST":"b","SRC":"a"}'], 5,
                                         '"a" is referenced again after its last reference was released'),
    "sizes past 2^64": ([call(), mem(size='"18446744073709551615"'), alias()], 4, "sum past 2^64 bytes"),
    "costs past 2^64": ([call(time=2**64 - 1), mem(), alias(), call("c", time=1), mem("c"), alias("c")], 7,
                        "costs of all operators sum past 2^64"),
    "a name as long as the file": ([call(args=("x" * 1_000_000,)), mem(), alias()], 4, "more bytes)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_trace_names_file_and_line(tmp_path, case):
    tail, line, pattern = CASES[case]
    path = tmp_path / "broken-trace.log"
    path.write_text("\n".join(GOOD_HEAD + tail) + "\n")
    with pytest.raises(dtrlab.TraceError) as err:
        dtrlab.load_trace(path)
    msg = str(err.value)
    assert msg.startswith(f"broken-trace.log:{line}: "), msg
    assert re.search(re.escape(pattern), msg), msg


def test_binary_garbage_is_a_trace_error(tmp_path):
    path = tmp_path / "garbage.log"
    path.write_bytes(b'{"INSTRUCTION":"ANNOTATE","ANNOTATION":"START"}\n\xff\xfe\x00')
    with pytest.raises(dtrlab.TraceError, match=r"garbage.log:2: not valid UTF-8"):
        dtrlab.load_trace(path)


def test_start_without_marker(tmp_path):
    path = tmp_path / "nostart.log"
    path.write_text("\n".join(GOOD_HEAD[1:]) + "\n")
    assert dtrlab.load_trace(path).n_ops == 1
    with pytest.raises(dtrlab.TraceError, match="no ANNOTATE START"):
        dtrlab.load_trace(path, start=True)


def test_trace_error_is_a_value_error():
    assert issubclass(dtrlab.TraceError, ValueError)


def test_schedule_that_releases_twice_is_found_when_loading(tmp_path):
    # Valid line by line, but the schedule releases a reference it does not
    # hold: found by the parser (references depend on the schedule alone).
    path = tmp_path / "double-release.log"
    lines = GOOD_HEAD + [call(), mem(), alias(), '{"INSTRUCTION":"COPY_FROM","DST":"b","SRC":"a"}',
                         '{"INSTRUCTION":"COPY","DST":"c","SRC":"b"}',
                         '{"INSTRUCTION":"COPY_FROM","DST":"c","SRC":"a"}',
                         '{"INSTRUCTION":"COPY_FROM","DST":"b","SRC":"a"}',
                         '{"INSTRUCTION":"RELEASE","NAME":"a"}', '{"INSTRUCTION":"RELEASE","NAME":"a"}',
                         '{"INSTRUCTION":"RELEASE","NAME":"a"}', '{"INSTRUCTION":"RELEASE","NAME":"a"}',
                         '{"INSTRUCTION":"RELEASE","NAME":"a"}']
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(dtrlab.TraceError, match=r'^double-release.log:14: "a" is released more often'):
        dtrlab.load_trace(path)


@pytest.mark.parametrize("text", ["", '{"INSTRUCTION":"ANNOTATE","ANNOTATION":"START"}\n'])
def test_a_trace_without_operators_is_refused(tmp_path, text):
    path = tmp_path / "empty.log"
    path.write_text(text)
    with pytest.raises(dtrlab.TraceError, match=r"^empty.log: the trace has no operators"):
        dtrlab.load_trace(path)


def test_large_trace_reports_the_first_error_in_file_order(tmp_path):
    """Large traces are decoded on several threads: the error reported is
    still the first one in the file."""
    lines = ['{"INSTRUCTION":"ANNOTATE","ANNOTATION":"START"}']
    for i in range(20_000):
        lines += [f'{{"INSTRUCTION":"CONSTANT","NAME":"c{i}"}}', f'{{"INSTRUCTION":"MEMORY","NAME":"c{i}","MEMORY":"8"}}']
    lines[30_000] = "{oops"
    lines[35_000] = '{"INSTRUCTION":"NOPE"}'
    path = tmp_path / "big.log"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(dtrlab.TraceError, match=r"^big.log:30001: not valid JSON"):
        dtrlab.load_trace(path)
    lines[30_000] = '{"INSTRUCTION":"MEMORY","NAME":"c14999","MEMORY":"8"}'
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(dtrlab.TraceError, match=r"^big.log:35001: unknown instruction"):
        dtrlab.load_trace(path)


def test_the_engine_reads_text_or_bytes_and_nothing_else():
    from dtrlab import _engine

    text = "\n".join(GOOD_HEAD + [call(), mem(), alias()]) + "\n"
    from_text = _engine.Trace.parse(text, "t.log", False)
    from_bytes = _engine.Trace.parse(text.encode(), "t.log", False)
    assert (from_text.n_ops, from_text.n_commands) == (from_bytes.n_ops, from_bytes.n_commands) == (2, 5)
    assert from_bytes.op_name_of(1) == "op/1" and from_bytes.tensor_name(1) == "b"
    with pytest.raises(TypeError, match="str or bytes"):
        _engine.Trace.parse(12, "t.log", False)
