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


def _released_chain(n: int, vary: bool) -> str:
    """A chain whose outputs are released as the next operator runs, read
    again from its end: at half its peak the pool holds half the chain
    (its sizes all 100 B, every candidate tied, or three sizes in turn)."""
    lines = ['{"INSTRUCTION":"CONSTANT","NAME":"x0"}', '{"INSTRUCTION":"MEMORY","NAME":"x0","MEMORY":"8"}']
    for i in range(1, n + 1):
        lines += [f'{{"INSTRUCTION":"CALL","NAME":"f","ARGS":["x{i - 1}"],"RESULT":["x{i}"],"TIME":1}}',
                  f'{{"INSTRUCTION":"MEMORY","NAME":"x{i}","MEMORY":"{100 + 8 * (i % 3) * vary}"}}',
                  f'{{"INSTRUCTION":"ALIAS","NAME":"x{i}","ALIAS":"-1"}}']
        if i > 1:
            lines.append(f'{{"INSTRUCTION":"RELEASE","NAME":"x{i - 1}"}}')
    lines += [f'{{"INSTRUCTION":"RELEASE","NAME":"x{n}"}}', '{"INSTRUCTION":"CONSTANT","NAME":"w"}',
              '{"INSTRUCTION":"MEMORY","NAME":"w","MEMORY":"150"}',
              f'{{"INSTRUCTION":"CALL","NAME":"g","ARGS":["x{n}"],"RESULT":["y"],"TIME":1}}',
              '{"INSTRUCTION":"MEMORY","NAME":"y","MEMORY":"100"}', '{"INSTRUCTION":"ALIAS","NAME":"y","ALIAS":"-1"}']
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("heuristic, ratio, vary", [("DTR", 0.5, False), ("AbESize", 0.7, True)])
def test_a_pool_large_enough_for_the_victim_tree(heuristic, ratio, vary, tmp_path):
    """5,000 deep: a pool of about 2,500 members, above the engine's
    TREE_FROM, so that the victims come from the victim tree (simrd: ~15 s)."""
    path = tmp_path / "chain.log"
    path.write_text(_released_chain(5_000, vary))
    _compare(path, heuristic=heuristic, ratio=ratio, cap=None)
