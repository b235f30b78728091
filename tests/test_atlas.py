"""The exact feasibility atlas: classes partition the range, every boundary is
confirmed one byte either side, the paper's inversion is found with exact
edges, and the sampled fallback never reports a hole a run contradicts."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import dtrlab
from dtrlab import atlas

#: The ResNet-32 OOM band of the paper (0.102-0.106 on the 0.001 grid), to the byte.
BAND = (1_024_657_200, 1_069_656_159)


#: No limit on the exact walks, a fine fallback grid: each test names the
#: limits it is about (the workflow's defaults are the schema's).
UNBOUNDED = dict(max_runs=None, walk_ops=None, walk_share=1.0, time_limit=None, grid=200, max_total_runs=None,
                 edge_runs=0, max_work=None)


def build(*args, **kwargs) -> atlas.Atlas:
    return atlas.build(*args, **{**UNBOUNDED, **kwargs})


@pytest.fixture(scope="module")
def resnet(load):
    return load("resnet32")


@pytest.fixture(scope="module")
def exact_atlas(resnet):
    peak = dtrlab.baseline(resnet).peak
    return build(resnet, int(peak * 0.100), int(peak * 0.108))


def _class_view(r: dtrlab.SimResult) -> tuple:
    return (r.status, r.clock, r.evictions, r.identical_budget_interval, r.evicted_ids)


def test_classes_partition_the_range(exact_atlas):
    a = exact_atlas
    assert a.exact and a.classes[0].lo == a.lo_budget and a.classes[-1].hi == a.hi_budget
    for c, d in zip(a.classes, a.classes[1:]):
        assert c.hi + 1 == d.lo


def test_the_paper_inversion_with_exact_byte_edges(exact_atlas, resnet):
    holes = exact_atlas.holes()
    main = max(holes, key=lambda h: h["hi"] - h["lo"])
    assert (main["lo"], main["hi"]) == BAND
    assert main["below_ok_budget"] == BAND[0] - 1 and main["above_ok_budget"] == BAND[1] + 1
    # The paper's grid points 0.102..0.106 fall inside, 0.101 and 0.107 outside.
    peak = exact_atlas.peak
    assert all(BAND[0] <= int(peak * r) <= BAND[1] for r in (0.102, 0.103, 0.104, 0.105, 0.106))
    assert int(peak * 0.101) < BAND[0] and int(peak * 0.107) > BAND[1]
    # Narrow holes no 0.001 grid can see.
    assert len(holes) > 1 and min(h["hi"] - h["lo"] + 1 for h in holes) < 1024


def test_every_class_boundary_is_confirmed_one_byte_either_side(exact_atlas, resnet):
    for c in exact_atlas.classes[:-1]:
        inside = dtrlab.simulate(resnet, budget=c.hi)
        outside = dtrlab.simulate(resnet, budget=c.hi + 1)
        assert inside.status == c.status
        assert _class_view(inside) != _class_view(outside), c


def test_hole_forensics(exact_atlas, resnet):
    main = next(h for h in exact_atlas.holes() if (h["lo"], h["hi"]) == BAND)
    f = atlas.hole_forensics(resnet, exact_atlas, main)
    assert f["fail"]["tensor_name"] == "x7977" and f["fail"]["model_op"] == 471
    assert f["first_difference"]["ok_eviction"] != f["first_difference"]["failing_eviction"]
    assert f["retention"]["retained_storage"] == 190
    assert f["retention"]["status"] in {"ok", "oom", "thrashed"}


@pytest.mark.parametrize("max_runs, grid, finds_band", [(3, 12, False), (10, 60, True)])
def test_sampled_fallback_is_never_contradicted(resnet, max_runs, grid, finds_band):
    peak = dtrlab.baseline(resnet).peak
    a = build(resnet, int(peak * 0.080), int(peak * 0.150), max_runs=max_runs, grid=grid)
    assert not a.exact
    _confirmed_partition(a, resnet)
    if finds_band:  # a grid fine enough to sample inside and below the band
        assert any((h["lo"], h["hi"]) == BAND for h in a.holes())
    # Status changes found by bisection are exact: exact classes on both sides.
    for c, d in zip(a.classes, a.classes[1:]):
        if c.status != d.status:
            assert c.exact and d.exact


def _confirmed_partition(a, trace) -> None:
    """Classes tile the range; every reported hole is confirmed by runs."""
    assert a.classes[0].lo == a.lo_budget and a.classes[-1].hi == a.hi_budget
    for c, d in zip(a.classes, a.classes[1:]):
        assert c.hi + 1 == d.lo
    for h in a.holes():
        for b in (h["lo"], h["hi"]):
            assert dtrlab.simulate(trace, budget=b).status != "ok"
        for b in (h["below_ok_budget"], h["above_ok_budget"]):
            assert dtrlab.simulate(trace, budget=b).status == "ok"


def test_edge_walks_find_the_narrow_holes_a_grid_misses(exact_atlas, resnet):
    """Sampling 0.10-0.30 finds the band but not the 128-byte holes above it;
    walking outward from the status changes finds exactly those of the exact map."""
    peak = dtrlab.baseline(resnet).peak
    lo, hi = int(peak * 0.10), int(peak * 0.30)
    narrow = {(h["lo"], h["hi"]) for h in exact_atlas.holes()} - {BAND}
    assert len(narrow) == 4
    plain = build(resnet, lo, hi, max_runs=20, grid=24)
    walked = build(resnet, lo, hi, max_runs=20, grid=24, edge_runs=40)
    for a in (plain, walked):
        _confirmed_partition(a, resnet)
    assert {(h["lo"], h["hi"]) for h in plain.holes()} == {BAND}
    assert {(h["lo"], h["hi"]) for h in walked.holes()} == {BAND} | narrow
    assert all(h["exact"] for h in walked.holes() if (h["lo"], h["hi"]) != BAND)


def test_edge_walks_respect_the_run_limit(resnet):
    peak = dtrlab.baseline(resnet).peak
    a = build(resnet, int(peak * 0.10), int(peak * 0.30), max_runs=20, grid=24, edge_runs=40,
                    max_total_runs=70, resolve=False)
    assert a.runs <= 20 + 70 + 1  # the walk from the start, then the limit (checked before each run)
    _confirmed_partition(a, resnet)


def test_chunks_combine_into_the_same_atlas(exact_atlas, resnet):
    parts = [build(resnet, *atlas.chunk_range(exact_atlas.lo_budget, exact_atlas.hi_budget, i, 3))
             for i in range(3)]
    whole = atlas.combine(parts)
    assert [(c.lo, c.hi, c.status) for c in whole.classes] == [(c.lo, c.hi, c.status) for c in exact_atlas.classes]
    assert whole.holes() == exact_atlas.holes()


def test_cli_json_schema(trace_dir):
    """`dtrlab atlas` bounds its exact walks as the workflow does (0 lifts a
    limit) and, off a terminal, says what it runs."""
    cmd = [sys.executable, "-m", "dtrlab", "atlas", "resnet32", "--lo", "0.1016", "--hi", "0.1020", "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert {"trace", "heuristic", "lo_budget", "hi_budget", "classes", "holes", "exact"} <= set(d)
    assert {"lo", "hi", "status", "overhead"} <= set(d["classes"][0])
    assert d["trace"] == "resnet32" and d["exact"] is False
    assert "run 1: budget" in p.stderr and "exact walk stopped" in p.stderr
    p = subprocess.run(cmd + ["--max-runs", "0", "--walk-ops", "0", "--walk-share", "1", "--max-total-runs", "0",
                             "--max-work", "0"], capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["exact"] is True and "exact walk stopped" not in p.stderr


def test_run_limit_leaves_unresolved_stretches_marked(resnet):
    peak = dtrlab.baseline(resnet).peak
    a = build(resnet, int(peak * 0.080), int(peak * 0.150), max_runs=2, grid=30, max_total_runs=8,
                    resolve=False)
    assert a.runs <= 2 + 8 + 1  # the walk, then the limit, checked before each probe
    assert a.classes[0].lo == a.lo_budget and a.classes[-1].hi == a.hi_budget
    for c, d in zip(a.classes, a.classes[1:]):
        assert c.hi + 1 == d.lo
    unresolved = a.unresolved()
    assert sum(unresolved.values()) > 0 and a.to_dict()["unresolved_bytes"] == unresolved
    for h in a.holes():  # whatever is reported is still confirmed
        assert dtrlab.simulate(resnet, budget=h["lo"]).status != "ok"
        assert dtrlab.simulate(resnet, budget=h["below_ok_budget"]).status == "ok"


def test_limits_bound_the_walks_but_resolution_always_completes(resnet):
    """With ``resolve`` (the default) the run and work limits stop the exact
    walks, not the grid or the bisections: every byte gets a definite status,
    at a cost bounded by the grid plus one bisection per status change."""
    peak = dtrlab.baseline(resnet).peak
    lo, hi = int(peak * 0.080), int(peak * 0.150)
    a = build(resnet, lo, hi, max_runs=2, grid=30, max_total_runs=8, edge_runs=40, max_work=5)
    assert a.unresolved() == {"mixed": 0, "unknown": 0}
    assert {c.status for c in a.classes} <= {"ok", "oom", "thrashed"}
    _confirmed_partition(a, resnet)
    changes = sum(1 for c, d in zip(a.classes, a.classes[1:]) if c.status != d.status)
    assert 8 < a.runs <= 2 + 30 + changes * (hi - lo).bit_length()
    # What the walks did find agrees with the unlimited atlas.
    full = build(resnet, lo, hi, max_runs=2, grid=30)
    assert {(c.lo, c.hi, c.status) for c in a.classes if c.exact} <= \
        {(c.lo, c.hi, c.status) for c in full.classes if c.exact}


def test_work_limit_bounds_simulated_time(resnet):
    """The work budget counts simulated time in baseline replays: a job stops
    within one run of it, has sampled its whole grid before bisecting, reports
    what it could not bisect as unresolved, and is deterministic."""
    base = dtrlab.baseline(resnet)
    lo, hi = int(base.peak * 0.080), int(base.peak * 0.150)
    full = build(resnet, lo, hi, max_runs=2, grid=30)
    lines: list[str] = []
    limited = build(resnet, lo, hi, max_runs=2, grid=30, max_work=80, resolve=False, log=lines.append)
    budgets = [int(m[1].replace(",", "")) for m in map(re.compile(r"run \d+: budget ([\d,]+)").match, lines) if m]
    assert full.work > 80 and full.unresolved() == {"mixed": 0, "unknown": 0}
    assert len(budgets) == limited.runs < full.runs
    # The work is the runs' summed clock over the baseline compute ...
    assert limited.clock == sum(dtrlab.simulate(resnet, budget=b).clock for b in budgets)
    assert limited.work == limited.clock / base.compute
    # ... counted after the walk from the start (2 runs), and checked before
    # each run, so it overshoots by less than one run.
    after = limited.clock - sum(dtrlab.simulate(resnet, budget=b).clock for b in budgets[:2])
    assert 80 * base.compute <= after
    assert after - dtrlab.simulate(resnet, budget=budgets[-1]).clock < 80 * base.compute
    _confirmed_partition(limited, resnet)
    unresolved = limited.unresolved()
    assert unresolved["unknown"] == 0 and unresolved["mixed"] > 0
    exact = {(c.lo, c.hi, c.status) for c in full.classes if c.exact}
    assert {(c.lo, c.hi, c.status) for c in limited.classes if c.exact} <= exact
    again = build(resnet, lo, hi, max_runs=2, grid=30, max_work=80, resolve=False)
    assert again.to_dict() == limited.to_dict()
    assert atlas.from_dict(limited.to_dict()).work == limited.work


def test_forensics_of_a_thrashed_hole(tmp_path):
    """A hole of thrashed runs has no failing request: forensics says so."""
    from dtrlab.report import tables

    a = atlas.Atlas("t", "DTR", 60.0, 0, 30, 100)
    a.classes = [atlas.ExecClass(0, 9, "ok", 1.0), atlas.ExecClass(10, 19, "thrashed", None),
                 atlas.ExecClass(20, 30, "ok", 1.0)]
    rows = atlas.holes_table(a, [{"first_difference": {"index": 0, "ok_eviction": None, "failing_eviction": None},
                                  "fail": None, "retention": None, "status": "thrashed"}])
    assert rows[0]["retention_removes_oom"] is None and rows[0]["statuses"] == "thrashed"
    import pandas as pd

    assert "n/a" in tables.holes(pd.DataFrame(rows), ["retention_removes_oom"])


@pytest.mark.parametrize("share", [0.25, 0.6])
def test_the_walk_stops_once_its_share_is_exact(resnet, exact_atlas, share):
    """The walk from the start stops at the first class that ends past
    ``walk_share`` of the range: the exact prefix is the unlimited atlas's,
    and no shorter than the share asked."""
    lo, hi = exact_atlas.lo_budget, exact_atlas.hi_budget
    lines: list[str] = []
    a = build(resnet, lo, hi, walk_share=share, grid=30, log=lines.append)
    stop = next(line for line in lines if line.startswith("exact walk stopped at"))
    b = int(stop.split(" at ")[1].split(":")[0].replace(",", ""))
    assert b - lo >= share * (hi - lo + 1)
    walked = {(c.lo, c.hi, c.status) for c in a.classes if c.exact and c.hi < b}
    full = [(c.lo, c.hi, c.status) for c in exact_atlas.classes if c.hi < b]
    assert walked == set(full) and sum(h - l + 1 for l, h, _ in full) == b - lo
    # The last class the walk ran ended short of the share: one more run was due.
    assert max(h for _, h, _ in full) + 1 == b and full[-1][0] - lo < share * (hi - lo + 1)


def test_exact_share_counts_the_bytes_of_exact_classes(resnet, exact_atlas):
    """The coverage stated beside every hole count: all of an unlimited
    walk; for a sampled one, the range less its sampled stretches, at least
    the walk's share; the same read back from the atlas's JSON."""
    lo, hi = exact_atlas.lo_budget, exact_atlas.hi_budget
    assert exact_atlas.exact_bytes == hi - lo + 1 and exact_atlas.exact_share == 1.0
    a = build(resnet, lo, hi, walk_share=0.3, grid=4)
    sampled = sum(c.hi - c.lo + 1 for c in a.classes if not c.exact)
    assert sampled > 0 and a.exact_bytes == hi - lo + 1 - sampled
    assert 0.3 <= a.exact_share == a.exact_bytes / (hi - lo + 1) < 1.0
    assert atlas.from_dict(json.loads(json.dumps(a.to_dict()))).exact_share == a.exact_share


def test_the_walk_budget_counts_operators_replayed(resnet):
    """``walk_ops`` bounds the walk's simulated time times the trace's
    operators (checked before each run: at most one run over); a cheaper
    budget walks a prefix of a dearer one."""
    base = dtrlab.baseline(resnet)
    lo, hi = int(base.peak * 0.080), int(base.peak * 0.150)
    walks = {}
    for ops in (20 * resnet.n_ops, 60 * resnet.n_ops):
        lines: list[str] = []
        build(resnet, lo, hi, walk_ops=ops, grid=8, max_total_runs=1, log=lines.append)
        runs = [line for line in lines if re.match(r"run \d+: budget", line)]
        stop = next(i for i, line in enumerate(lines) if line.startswith("exact walk stopped"))
        walk = [line for line in lines[:stop] if re.match(r"run \d+: budget", line)]
        works = [float(line.rsplit("work ", 1)[1]) for line in walk]
        assert works[-2] < ops / resnet.n_ops <= works[-1] and len(runs) > len(walk)
        walks[ops] = [line.split(" -> ")[0] for line in walk]
    small, large = walks.values()
    assert large[:len(small)] == small and len(large) > len(small)


def test_the_figure_draws_each_look_once_joining_neighbours():
    """The atlas figure's bars: one list per look (colour, hatch), touching
    classes of a look joined, every budget of every class drawn once in its
    class's look (sampled failures grey with their status's hatch)."""
    from dtrlab.report.atlas_figure import bars
    from dtrlab.report.style import COLORS, HATCH

    a = atlas.Atlas("t", "DTR", 60.0, 0, 79, 100)
    a.classes = [atlas.ExecClass(40, 49, "ok", 1.0), atlas.ExecClass(0, 9, "oom", None),
                 atlas.ExecClass(10, 19, "oom", None), atlas.ExecClass(20, 29, "ok", 1.0),
                 atlas.ExecClass(30, 39, "oom", None, exact=False), atlas.ExecClass(50, 59, "ok", 1.2),
                 atlas.ExecClass(60, 69, "thrashed", None), atlas.ExecClass(70, 79, "ok", None, exact=False)]
    got = bars(a)
    assert got == {
        (COLORS["oom"], HATCH["oom"]): [(0, 19)],
        (COLORS["ok"], ""): [(20, 29), (40, 59)],
        (COLORS["sampled"], HATCH["oom"]): [(30, 39)],
        (COLORS["thrashed"], HATCH["thrashed"]): [(60, 69)],
        (COLORS["sampled"], ""): [(70, 79)],
    }
    drawn = sorted(b for bs in got.values() for lo, hi in bs for b in range(lo, hi + 1))
    assert drawn == list(range(80))
