"""The result class: declared once in the binding (``_engine.RunResult``),
typed by the shipped stub, subclassed by ``dtrlab.SimResult``."""

from __future__ import annotations

import ast
import copy
import inspect
import json
import pickle
import weakref
from pathlib import Path

import pytest

import dtrlab
from dtrlab import _engine, engine

STUB = Path(dtrlab.__file__).with_name("_engine.pyi")


def _stub_class(name: str) -> ast.ClassDef:
    tree = ast.parse(STUB.read_text())
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def test_the_stub_the_class_and_result_fields_agree():
    cls = _stub_class("RunResult")
    properties = [n.name for n in cls.body if isinstance(n, ast.FunctionDef)
                  and any(isinstance(d, ast.Name) and d.id == "property" for d in n.decorator_list)]
    new = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__new__")
    keywords = [a.arg for a in new.args.kwonlyargs]
    fields = _engine.RunResult.FIELDS
    assert properties == list(fields)
    assert keywords == list(fields)
    assert not new.args.args[1:] and new.args.vararg is None and new.args.kwarg is None
    # RUN_FIELDS, then the record, then what lies beside it.
    assert fields[:len(engine.RUN_FIELDS)] == engine.RUN_FIELDS == _engine.RunResult.RUN_FIELDS
    assert fields[len(engine.RUN_FIELDS):][:len(engine.RESULT_FIELDS)] == engine.RESULT_FIELDS
    assert engine.RESULT_FIELDS == _engine.RunResult.RECORD_FIELDS
    # Every field is the binding's attribute; the conveniences shadow none.
    assert all(inspect.isdatadescriptor(vars(_engine.RunResult)[f]) for f in fields)
    assert not set(vars(dtrlab.SimResult)) & set(fields)


def test_the_stub_names_everything_the_module_exports():
    tree = ast.parse(STUB.read_text())
    declared = {t.id for n in tree.body if isinstance(n, ast.AnnAssign) for t in [n.target]}
    declared |= {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    assert set(_engine.__all__) <= declared
    trace = {n.name for n in _stub_class("Trace").body if isinstance(n, ast.FunctionDef)}
    assert {m for m in dir(_engine.Trace) if not m.startswith("_")} == trace


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """x0 -> x1 -> x2 -> x3, each released once its successor exists; then a
    pinned constant and y = g(x3), which rematerializes the chain."""
    lines = ['{"INSTRUCTION":"CONSTANT","NAME":"x0"}', '{"INSTRUCTION":"MEMORY","NAME":"x0","MEMORY":"8"}']
    for i in range(1, 4):
        lines.append(json.dumps({"INSTRUCTION": "CALL", "NAME": "f", "ARGS": [f"x{i-1}"], "RESULT": [f"x{i}"],
                                 "TIME": 1}))
        lines.append(json.dumps({"INSTRUCTION": "MEMORY", "NAME": f"x{i}", "MEMORY": "100"}))
        lines.append(json.dumps({"INSTRUCTION": "ALIAS", "NAME": f"x{i}", "ALIAS": "-1"}))
        if i > 1:
            lines.append(json.dumps({"INSTRUCTION": "RELEASE", "NAME": f"x{i-1}"}))
    lines += [json.dumps({"INSTRUCTION": "RELEASE", "NAME": "x3"}), '{"INSTRUCTION":"CONSTANT","NAME":"w"}',
              '{"INSTRUCTION":"MEMORY","NAME":"w","MEMORY":"150"}',
              json.dumps({"INSTRUCTION": "CALL", "NAME": "g", "ARGS": ["x3"], "RESULT": ["y"], "TIME": 1}),
              '{"INSTRUCTION":"MEMORY","NAME":"y","MEMORY":"100"}', '{"INSTRUCTION":"ALIAS","NAME":"y","ALIAS":"-1"}']
    path = tmp_path_factory.mktemp("tiny") / "tiny.log"
    path.write_text("\n".join(lines) + "\n")
    return dtrlab.load_trace(path)


def _fields(r) -> dict:
    return {f: getattr(r, f) for f in _engine.RunResult.FIELDS}


def test_results_are_typed_as_before(tiny):
    oom = dtrlab.simulate(tiny, budget=300, cap=None, heuristic="LRU", events=True)
    ok = dtrlab.simulate(tiny, ratio=0.9)
    assert type(oom) is dtrlab.SimResult and isinstance(oom, _engine.RunResult)
    assert (oom.trace, oom.engine, oom.status, oom.ok, ok.ok) == ("tiny", "native", "oom", False, True)
    assert isinstance(oom.fail, dict) and ok.fail is None
    assert type(oom.identical_budget_interval) is tuple and len(oom.identical_budget_interval) == 2
    assert type(oom.evicted_ids) is tuple and all(type(x) is tuple for x in oom.evicted_ids)
    assert oom.evictions_by_storage == dict(oom.evicted_ids)
    assert list(oom.events.columns) == list(oom.events_columns) and ok.events is None
    assert type(ok.overhead) is float and type(ok.clock) is int and type(ok.ratio) is float
    d = oom.to_dict(evicted_ids=True)
    assert list(d) == ["trace", "heuristic", "ratio", "cap", "start", *engine.RESULT_FIELDS, "evicted_ids"]
    assert d["identical_budget_interval"] == list(oom.identical_budget_interval)
    assert d["evicted_ids"] == [list(x) for x in oom.evicted_ids]
    assert "seed" in dtrlab.simulate(tiny, ratio=0.9, heuristic="RandomStorage").to_dict()
    assert repr(ok).startswith("SimResult(trace='tiny', heuristic='DTR', ratio=0.9, ")
    assert "evicted_ids" not in repr(oom) and "events_columns" not in repr(oom)


def test_results_are_frozen_values(tiny):
    r = dtrlab.simulate(tiny, budget=300, cap=None, heuristic="LRU", events=True)
    again = dtrlab.simulate(tiny, budget=300, cap=None, heuristic="LRU", events=True)
    other = dtrlab.simulate(tiny, budget=301, cap=None, heuristic="LRU", events=True)
    assert r == again and not r != again and r != other
    for name in (*_engine.RunResult.FIELDS, "anything"):
        with pytest.raises(AttributeError):
            setattr(r, name, getattr(again, name, 1))
    with pytest.raises(AttributeError):
        del r.status
    for twin in (pickle.loads(pickle.dumps(r)), copy.copy(r), copy.deepcopy(r)):
        assert type(twin) is dtrlab.SimResult and twin == r and twin.digest() == r.digest()
    ok = dtrlab.simulate(tiny, ratio=0.9)
    assert hash(ok) == hash(dtrlab.simulate(tiny, ratio=0.9))
    with pytest.raises(TypeError):
        hash(r)  # a dict among its fields, as for a frozen dataclass
    # Only results of one class compare equal.
    assert _engine.RunResult(**_fields(r)) != r
    assert weakref.ref(r)() is r
    match r:
        case dtrlab.SimResult(_, _, _, _, _, _, "native", "oom"):
            pass
        case _:
            pytest.fail("no positional pattern")


def test_the_constructor_takes_every_field_by_keyword(tiny):
    r = dtrlab.simulate(tiny, budget=300, cap=None, heuristic="LRU", events=True)
    fields = _fields(r)
    assert dtrlab.SimResult(**fields) == r
    missing = dict(fields)
    del missing["clock"]
    with pytest.raises(TypeError, match="clock"):
        dtrlab.SimResult(**missing)
    with pytest.raises(TypeError, match="colour"):
        dtrlab.SimResult(**fields, colour=1)
    with pytest.raises(TypeError):
        dtrlab.SimResult(*fields.values())
    with pytest.raises(TypeError, match="clock"):
        dtrlab.SimResult(**{**fields, "clock": "12"})
    with pytest.raises(TypeError, match="identical_budget_interval"):
        dtrlab.SimResult(**{**fields, "identical_budget_interval": [1, 2]})
