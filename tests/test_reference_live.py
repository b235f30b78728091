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
from conftest import golden_records
from tracegen import traces

pytestmark = pytest.mark.skipif(not os.environ.get("DTRLAB_SIMRD"), reason="DTRLAB_SIMRD not set")

# The reference's RandomStorage draws from Python's RNG: compared separately.
DETERMINISTIC = [h for h in dtrlab.HEURISTICS if h not in dtrlab.engine.RANDOM_HEURISTICS]


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


@pytest.mark.parametrize("rec", [r for r in golden_records("baselines.jsonl") if not r["start"]],
                         ids=lambda r: r["trace"])
def test_reference_baselines_match_golden(rec, trace_dir):
    b = dtrlab.baseline(dtrlab.load_trace(trace_dir / dtrlab.traces.TRACE_FILES[rec["trace"]]), engine="simrd")
    assert b.to_dict() == {k: rec[k] for k in ("peak", "compute", "const", "bottleneck")}


def test_fetch_unpacks_the_package_from_an_archive(tmp_path):
    """fetch() on a local archive laid out like the repository's (built from the
    configured checkout, in a temporary folder only)."""
    import tarfile

    from dtrlab import reference

    src = reference.locate() / "simrd"
    archive = tmp_path / "ref.tar.gz"
    with tarfile.open(archive, "w:gz", format=tarfile.PAX_FORMAT,
                      pax_headers={"comment": reference.SIMRD_COMMIT}) as tar:
        tar.add(src, arcname="dtr-prototype-x/simrd/simrd")
    dest = reference.fetch(tmp_path / "unpacked", url=f"file://{archive}")
    assert (dest / "simrd" / "runtime" / "v2.py").is_file()
    assert reference.locate(dest) == dest
