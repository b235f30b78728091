"""Differential tests against the live reference simulator (simrd).

Run only where ``DTRLAB_SIMRD`` points at a checkout of uwsampl/dtr-prototype
@ eff53cc4 (never part of this repository)."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dtrlab
from tracegen import traces

pytestmark = pytest.mark.skipif(not os.environ.get("DTRLAB_SIMRD"), reason="DTRLAB_SIMRD not set")

# The reference's RandomStorage draws from Python's RNG: compared separately.
DETERMINISTIC = [h for h in dtrlab.HEURISTICS if h not in ("RandomStorage", "AbRandom")]


def _compare(path, **kw):
    ours = dtrlab.simulate(dtrlab.load_trace(path), events=True, **kw)
    ref = dtrlab.simulate(dtrlab.load_trace(path), events=True, engine="simrd", **kw)
    a, b = ours.to_dict(evicted_ids=True), ref.to_dict(evicted_ids=True)
    assert a == b
    assert ours.events_columns == ref.events_columns


def _sample(seed: int, n: int):
    rng = random.Random(seed)
    return [(rng.choice(DETERMINISTIC), round(rng.uniform(0.08, 1.0), 4)) for _ in range(n)]


@pytest.mark.parametrize("heuristic, ratio", _sample(2026, 12))
def test_resnet32_random_points(heuristic, ratio, trace_dir):
    _compare(trace_dir / dtrlab.traces.TRACE_FILES["resnet32"], heuristic=heuristic, ratio=ratio)


@pytest.mark.parametrize("heuristic, ratio", _sample(7, 4))
def test_unet_random_points(heuristic, ratio, trace_dir):
    _compare(trace_dir / dtrlab.traces.TRACE_FILES["unet"], heuristic=heuristic, ratio=ratio)


@settings(max_examples=int(os.environ.get("DTRLAB_SIMRD_EXAMPLES", "60")), deadline=None)
@given(traces(), st.sampled_from(DETERMINISTIC), st.floats(0.1, 1.1), st.sampled_from([None, 2.0, 60.0]))
def test_generated_traces(tmp_path_factory, text, heuristic, ratio, cap):
    path = tmp_path_factory.mktemp("gen") / "generated.log"
    path.write_text(text)
    _compare(path, heuristic=heuristic, ratio=ratio, cap=cap)


def test_retention_matches_reference(trace_dir):
    _compare(trace_dir / dtrlab.traces.TRACE_FILES["resnet32"], ratio=0.104, retain=[190])
