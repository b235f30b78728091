"""Properties of the native engine on generated traces."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import dtrlab
from dtrlab import _engine
from tracegen import traces

HEURISTICS = st.sampled_from(dtrlab.HEURISTICS)
RATIOS = st.floats(0.05, 1.2)


def _load(text: str) -> dtrlab.Trace:
    from pathlib import Path

    return dtrlab.Trace(_engine.Trace.parse(text, "generated.log", False), Path("generated.log"), False)


def _run(trace, **kw):
    return dtrlab.simulate(trace, **kw)


@given(traces(), HEURISTICS, RATIOS)
def test_invariants_hold_after_every_command(text, heuristic, ratio):
    """Incremental regions equal a from-scratch rebuild; the pool is exactly the
    resident, unlocked, unpinned storages; resident bytes fit the budget after
    every operator. (self_check raises EngineError on any violation.)"""
    _run(_load(text), ratio=ratio, heuristic=heuristic, self_check=True)


REGION_HEURISTICS = st.sampled_from(["DTR", "MSPS", "AbE", "AbESize", "AbEStale"])


@given(traces(), REGION_HEURISTICS, RATIOS, st.sampled_from([2.0, 60.0, None]))
def test_lazy_regions_give_the_eager_run(text, heuristic, ratio, cap):
    """Rebuilding a region only when it is read, and scoring only candidates
    that could win, changes no field and no event of a run."""
    trace = _load(text)
    lazy = _run(trace, ratio=ratio, heuristic=heuristic, cap=cap, events=True)
    eager = _run(trace, ratio=ratio, heuristic=heuristic, cap=cap, events=True, eager_regions=True)
    assert lazy.to_dict(evicted_ids=True) == eager.to_dict(evicted_ids=True)
    assert lazy.events_columns == eager.events_columns


@given(traces(), REGION_HEURISTICS, RATIOS, st.sampled_from([2.0, None]))
def test_lazy_regions_give_the_settled_run(text, heuristic, ratio, cap):
    """The self-check settles every region after every command, so that no
    absorb is owed when an alias of an evicted storage changes its compute
    (as the reference, which absorbs at eviction): the lazy run must give
    the same run, and at every victim choice the key scan must pick what the
    full scan picks (the self-check compares them)."""
    trace = _load(text)
    lazy = _run(trace, ratio=ratio, heuristic=heuristic, cap=cap, events=True)
    settled = _run(trace, ratio=ratio, heuristic=heuristic, cap=cap, events=True, self_check=True)
    assert lazy.to_dict(evicted_ids=True) == settled.to_dict(evicted_ids=True)
    assert lazy.events_columns == settled.events_columns


def _class_view(r: dtrlab.SimResult) -> dict:
    d = r.to_dict(evicted_ids=True)
    d.pop("budget")
    d.pop("ratio")
    if d["fail"]:
        d["fail"].pop("over_by")  # memory + request - budget: depends on the budget itself
    d["events"] = r.events_columns
    return d


@given(traces(), HEURISTICS, RATIOS)
def test_identical_budget_interval_is_exact(text, heuristic, ratio):
    trace = _load(text)
    r = _run(trace, ratio=ratio, heuristic=heuristic, events=True)
    lo, hi = r.identical_budget_interval
    view = _class_view(r)
    for b in {x for x in (lo, hi) if x is not None}:
        assert _class_view(_run(trace, budget=b, heuristic=heuristic, events=True)) == view
    if hi is not None:
        assert _class_view(_run(trace, budget=hi + 1, heuristic=heuristic, events=True)) != view
    if lo is not None and lo > 0:
        assert _class_view(_run(trace, budget=lo - 1, heuristic=heuristic, events=True)) != view


@given(traces(), HEURISTICS, RATIOS, st.integers(0, 2**32))
def test_same_inputs_same_run(text, heuristic, ratio, seed):
    trace = _load(text)
    a = _run(trace, ratio=ratio, heuristic=heuristic, seed=seed, events=True)
    b = _run(trace, ratio=ratio, heuristic=heuristic, seed=seed, events=True)
    assert a.digest() == b.digest()
    assert a.events_columns == b.events_columns


@given(traces())
def test_a_budget_of_the_baseline_peak_never_needs_the_heuristic(text):
    trace = _load(text)
    peak = dtrlab.baseline(trace).peak
    at_peak = _run(trace, budget=peak, heuristic="DTR")
    unbounded = _run(trace, budget=2**62, heuristic="DTR")
    assert at_peak.status == "ok" and at_peak.max_memory == peak
    assert at_peak.heuristic_eval_count == 0
    assert (at_peak.clock, at_peak.evictions) == (unbounded.clock, unbounded.evictions)


@given(st.integers(0, 2**53), st.floats(0.0, 1.5, allow_nan=False))
def test_a_ratio_gives_the_budget_python_computes(peak, ratio):
    """One rule for a ratio's budget everywhere (the engine's): int(peak * ratio)."""
    assert dtrlab.engine.budget_for_ratio(peak, ratio) == int(peak * ratio)
