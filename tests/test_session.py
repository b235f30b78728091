"""The engine fed a command at a time (``_engine.Session``, what the runtime
drives): the same result and event log as ``simulate`` on every public
trace and on captured ones, however the schedule is cut; its events arrive
in order as the commands that cause them are replayed; misuse is an error."""

from __future__ import annotations

import random

import pytest

import dtrlab
from dtrlab import _engine, engine
from dtrlab.traces import TRACE_KEYS


def session(t: dtrlab.Trace, **kw) -> _engine.Session:
    return _engine.Session(t._native, key=t.key, start=t.start, heuristic=kw.pop("heuristic", "DTR"),
                           cap=kw.pop("cap", engine.DEFAULT_CAP), **kw)


def fed(t: dtrlab.Trace, seed: int, **kw):
    """Replay ``t`` in random pieces; the result and every event handed out."""
    s = session(t, **kw)
    n, pos, events = t._native.n_commands, 0, []
    rng = random.Random(seed)
    while pos < n:
        pos = min(n, pos + rng.choice([1, 1, 2, 7, 50, 400]))
        status, new = s.advance(pos)
        events += new
        if status != "running":
            break
    return s.finish(engine.SimResult), events


def as_events(sim) -> list[tuple[int, int, int]]:
    kinds = {"evict": 0, "eager_evict": 1, "remat": 2}
    ev = sim.events_columns
    return [(kinds[k], s, t) for k, s, t in zip(ev["kind"], ev["storage_id"], ev["tensor_id"])]


@pytest.mark.parametrize("key", TRACE_KEYS)
def test_a_session_fed_in_pieces_is_the_replay_of_every_public_trace(load, key):
    t = load(key)
    for i, ratio in enumerate((0.9, 0.5, 0.3)):
        sim = dtrlab.simulate(t, ratio=ratio, events=True)
        got, events = fed(t, seed=i, ratio=ratio)
        assert got == sim, (key, ratio)
        assert events == as_events(sim), (key, ratio)


def test_the_papers_points_fed_command_by_command(load):
    """LSTM's fast and slow regimes, ResNet-32's feasibility hole."""
    for key, ratio in (("lstm", 0.265), ("lstm", 0.264), ("resnet32", 0.104), ("resnet32", 0.101)):
        t = load(key)
        got, _ = fed(t, seed=3, ratio=ratio)
        assert got == dtrlab.simulate(t, ratio=ratio, events=True), (key, ratio)


def test_a_captured_trace_fed_in_pieces(tmp_path):
    torch = pytest.importorskip("torch", reason="the capture extra (torch) is not installed")
    from dtrlab import capture
    from dtrlab.capture import models

    torch.set_num_threads(1)
    c = capture.capture_workload(models.unet(batch=1, size=32))
    path = tmp_path / "unet.log"
    capture.write_trace(c.text, path)
    t = dtrlab.load_trace(path)
    for heuristic in ("DTR", "MSPS", "LRU"):
        for ratio in (0.8, 0.5):
            sim = dtrlab.simulate(t, ratio=ratio, heuristic=heuristic, events=True)
            got, events = fed(t, seed=5, ratio=ratio, heuristic=heuristic)
            assert got == sim and events == as_events(sim), (heuristic, ratio)


def test_a_measured_offset_decides_as_a_smaller_budget(load):
    t = load("resnet32")
    budget = engine.budget_for_ratio(dtrlab.baseline(t).peak, 0.2)
    s = session(t, budget=budget + 1000)
    s.set_memory_offset(1000)
    s.advance(t._native.n_commands)
    got = s.finish(engine.SimResult)
    want = dtrlab.simulate(t, budget=budget, events=True)
    assert (got.status, got.clock, got.evictions, got.events_columns) == (
        want.status, want.clock, want.evictions, want.events_columns)


def test_misuse_is_an_error(load):
    t = load("resnet32")
    s = session(t, ratio=0.5)
    with pytest.raises(ValueError, match="past the schedule"):
        s.advance(t._native.n_commands + 1)
    s.advance(10)
    with pytest.raises(ValueError, match="replay the rest"):
        s.finish(engine.SimResult)
    s.advance(t._native.n_commands)
    s.finish(engine.SimResult)
    with pytest.raises(ValueError, match="already taken"):
        s.advance(t._native.n_commands)
    s = session(t, ratio=0.104)
    status, _ = s.advance(t._native.n_commands)
    assert status == "oom"
    with pytest.raises(ValueError, match="has ended"):
        s.advance(s.position + 1)
    with pytest.raises(ValueError, match="unknown heuristic"):
        session(t, ratio=0.5, heuristic="nope")
    with pytest.raises(TypeError):
        session(t, ratio="half")


def test_the_trace_tables_describe_the_schedule(load):
    t = load("resnet32")
    kinds, args, lines, body = t._native.schedule_table()
    assert len(kinds) == len(args) == len(lines) == t._native.n_commands
    assert lines[:body] == sorted(lines[:body]) and set(kinds[body:]) <= {2}  # then the final pins
    first, n, const = t._native.op_table()
    storage, size = t._native.tensor_table()
    assert sum(n) == len(storage) == t.n_tensors == len(t._native.tensor_names())
    assert all(storage[s] == s for s in storage)  # a storage id is its root tensor's
    assert t._native.op_inputs(first.index(first[-1])) is not None
    with pytest.raises(ValueError):
        t._native.op_inputs(len(first))
