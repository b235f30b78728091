"""The command line: JSON output with golden field names, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import golden_records, strip_extra_fail_fields


def dtrlab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dtrlab", *args], capture_output=True, text=True, timeout=300)


def test_simulate_json_matches_golden(trace_dir):
    rec = golden_records("resnet32_dtr_fine.jsonl")[24]  # ratio 0.104
    p = dtrlab("simulate", "resnet32", "--ratio", str(rec["ratio"]), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    strip_extra_fail_fields(out["fail"])
    for k in ("status", "budget", "clock", "evictions", "fail", "identical_budget_interval", "peak_pinned"):
        assert out[k] == rec[k], k


def test_simulate_budget_no_cap_heuristic_retain(trace_dir):
    p = dtrlab("simulate", "resnet32", "--budget", "1046362683", "--heuristic", "DTR", "--no-cap",
               "--retain", "190", "--json", "--evicted-ids")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["cap"] is None and out["budget"] == 1046362683
    assert 190 not in {s for s, _ in out["evicted_ids"]}


def test_baseline_json(trace_dir):
    p = dtrlab("baseline", "resnet32", "--json")
    assert json.loads(p.stdout) == {"trace": "resnet32", "start": False, "peak": 10061179648,
                                    "compute": 291905487, "const": 35584920, "bottleneck": 539510784}


def test_human_output(trace_dir):
    p = dtrlab("simulate", "unet", "--ratio", "0.5")
    assert p.returncode == 0 and "status" in p.stdout and "overhead" in p.stdout


@pytest.mark.parametrize(
    "args, status, message",
    [
        # A command that failed: exit 1.
        (["simulate", "no-such-file.log", "--ratio", "0.5"], 1, "no such trace file"),
        (["simulate", "resnet32", "--ratio", "0.5", "--engine", "simrd"], 1, "DTRLAB_SIMRD"),
        # Bad usage: exit 2, naming the argument.
        (["simulate", "resnet32", "--ratio", "-2"], 2, "ratio must be > 0"),
        (["simulate", "resnet32", "--budget", "-5"], 2, "budget must be in [0, "),
        (["simulate", "resnet32", "--budget", "18446744073709551616"], 2, "budget must be in [0, "),
        (["simulate", "resnet32", "--ratio", "0.5", "--seed", "-1"], 2, "seed must be in [0, "),
        (["simulate", "resnet32", "--ratio", "0.5", "--retain=-1"], 2, "retain item must be in [0, 4294967295]"),
        (["simulate", "resnet32", "--ratio", "0.5", "--retain", "4294967296"], 2, "retain item must be in"),
        (["simulate", "resnet32", "--ratio", "0.5", "--cap", "0.5"], 2, "cap must be > 1"),
        (["simulate", "resnet32", "--ratio", "0.5", "--cap", "nan"], 2, "cap must be a finite number"),
        (["atlas", "resnet32", "--lo", "-1", "--hi", "0.2"], 2, "--lo must be >= 0"),
        (["atlas", "resnet32", "--lo", "0.1", "--hi", "0.2", "--grid", "0"], 2, "grid must be in [2, "),
        (["atlas", "resnet32", "--lo", "0.1", "--hi", "0.2", "--max-work", "-1"], 2, "max_work must be > 0"),
        (["fetch", "--retries", "0"], 2, "--retries must be in [1, "),
    ],
)
def test_errors_exit_1_or_2_with_one_line(args, status, message, trace_dir, monkeypatch, tmp_path):
    monkeypatch.delenv("DTRLAB_SIMRD", raising=False)
    monkeypatch.chdir(tmp_path)
    p = dtrlab(*args)
    assert p.returncode == status, p.stderr
    assert p.stderr.startswith("dtrlab: error:") and message in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_failures_on_files_are_one_line_not_a_traceback(tmp_path):
    """What the CLI used to answer with a Python traceback."""
    as_file = tmp_path / "a-file"
    as_file.write_text("x")
    empty, listed = tmp_path / "empty.json", tmp_path / "list.json"
    empty.write_text("")
    listed.write_text("[]")
    escape = tmp_path / "results" / "MANIFEST.json"
    escape.parent.mkdir()
    escape.write_text(json.dumps({"artifacts": [{"path": "../../etc/passwd", "sha256": "0" * 64, "bytes": 1}]}))
    for args, message in [
        (["fetch", "--dest", str(as_file)], "a-file"),
        (["verify", str(empty)], "not a dtrlab manifest"),
        (["verify", str(listed)], "not a dtrlab manifest"),
        (["verify", str(escape)], "outside the workflow root"),
    ]:
        p = dtrlab(*args)
        assert p.returncode == 1, (args, p.stderr)
        assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, (args, p.stderr)
        assert message in p.stderr, (args, p.stderr)


def test_malformed_trace_exit_1_names_line(tmp_path):
    bad = tmp_path / "bad.log"
    bad.write_text('{"INSTRUCTION":"CONSTANT","NAME":"a"}\n{"INSTRUCTION":"CALL"}\n')
    p = dtrlab("baseline", str(bad))
    assert p.returncode == 1 and "bad.log:2:" in p.stderr


def test_ratio_and_budget_are_exclusive():
    p = dtrlab("simulate", "resnet32", "--ratio", "0.5", "--budget", "5")
    assert p.returncode == 2 and "not allowed with" in p.stderr


def test_every_help_shows_each_default_and_it_is_the_one_used():
    """`dtrlab CMD --help` names every option's default (the schema's, where
    the schema has one: test_the_schema_is_the_only_source_of_defaults)."""
    import argparse

    from dtrlab import cli

    parser = cli.build_parser()
    commands = parser._subparsers._group_actions[0].choices
    for name, sub in commands.items():
        text = "".join(sub.format_help().split())  # wrapping may break a URL at a hyphen
        for action in sub._actions:
            if action.default in (None, False, [], argparse.SUPPRESS) or not action.option_strings:
                continue
            shown = (action.help or "").replace("%(default)s", str(action.default))
            assert f"default {action.default}" in shown and "".join(shown.split()) in text, (name, action.dest)


def test_why_names_the_first_different_victim_and_its_cause(trace_dir):
    p = dtrlab("why", "lstm", "--ratios", "0.265", "0.264", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["runs"] == ["0.265", "0.264"] and (out["decision"], out["cause"]) == (66, "clock")
    human = dtrlab("why", "lstm", "--ratios", "0.265", "0.264").stdout
    assert "decision 66 differs (65 same victims before)" in human and "cause: clock" in human


@pytest.mark.parametrize("ratios, message", [(["0.5", "0.5"], "two different budgets"), (["0.5", "0"], "must be > 0"),
                                             (["0.5"], "expected 2 arguments")])
def test_why_refuses_bad_ratios_in_one_line(ratios, message, tmp_path):
    p = dtrlab("why", "lstm", "--ratios", *ratios)
    # One error line (argparse's usage may come before it), never a traceback.
    assert p.returncode == 2 and message in p.stderr.strip().splitlines()[-1] and "Traceback" not in p.stderr, p.stderr
