"""The analyses behind the claims, on small hand-made tables."""

from __future__ import annotations

import pandas as pd
import pytest

from dtrlab.analysis import ablation, claims, inversions, reeviction, regimes
from dtrlab.grids import expand_ratios, ratio_grid


def sweep(rows):
    return pd.DataFrame(rows, columns=["ratio", "budget", "status", "overhead"])


def test_ratio_grid_hits_the_decimal_ratios():
    g = ratio_grid(0.080, 0.150, 0.001)
    assert len(g) == 71 and g[24] == 0.104 and g[-1] == 0.15
    assert expand_ratios({"start": 0.1, "stop": 0.102, "step": 0.001, "extra": [0.5, 0.101]}) == [0.1, 0.101, 0.102, 0.5]
    with pytest.raises(ValueError):
        ratio_grid(0.2, 0.1, 0.01)


def test_brackets_need_ok_on_both_sides():
    s = sweep([(0.1, 10, "oom", None), (0.2, 20, "ok", 2.0), (0.3, 30, "oom", None), (0.4, 40, "thrashed", None),
               (0.5, 50, "ok", 1.5), (0.6, 60, "oom", None)])
    b = inversions.brackets(s)
    assert len(b) == 1
    assert (b[0]["lo_ratio"], b[0]["hi_ratio"], b[0]["below_ok_ratio"], b[0]["above_ok_ratio"]) == (0.3, 0.4, 0.2, 0.5)
    assert b[0]["n_budgets"] == 2 and b[0]["statuses"] == ["oom", "thrashed"]


def test_overhead_increases():
    s = sweep([(0.1, 1, "ok", 2.0), (0.2, 2, "ok", 3.0), (0.3, 3, "ok", 1.0)])
    inc = inversions.overhead_increases(s)
    assert [(i["from_ratio"], i["to_ratio"]) for i in inc] == [(0.1, 0.2)]


def test_regimes_split_at_the_widest_gap():
    s = sweep([(0.262, 1, "ok", 1.39), (0.263, 1, "ok", 1.40), (0.264, 1, "ok", 8.78), (0.265, 1, "ok", 1.38),
               (0.266, 1, "ok", 10.10), (0.267, 1, "oom", None)])
    df, info = regimes.classify(s)
    assert list(df.regime) == ["fast", "fast", "slow", "fast", "slow", None]
    assert 1.40 < info["threshold"] < 8.78
    adj = regimes.largest_adjacent_ratio(s)
    assert (adj["low_budget_ratio"], adj["high_budget_ratio"]) == (0.265, 0.266)
    assert round(adj["ratio"], 1) == 7.3
    summary = regimes.summarize(s, [0.264, 0.265])
    assert summary["switches"] == 3 and summary["points"]["0.264"]["regime"] == "slow"
    assert summary["largest_adjacent_ratio_points"]["ratio"] == 8.78 / 1.38  # only the given points
    gapped = s[s.ratio.isin([0.262, 0.264, 0.265])]
    assert regimes.largest_adjacent_ratio(gapped)["low_budget_ratio"] == 0.265  # 0.262-0.264 is 0.002 apart


def test_one_regime_when_no_gap():
    df, info = regimes.classify(sweep([(0.1, 1, "ok", 1.3), (0.2, 1, "ok", 1.5)]))
    assert set(df.regime) == {"fast"} and info["threshold"] is None


def test_reeviction_statistics():
    fast = {1: 1, 2: 1, 3: 2}
    slow = {1: 10, 2: 5, 4: 1}
    c = reeviction.compare(fast, slow, top=1)
    assert c["fast"]["evictions"] == 4 and c["fast"]["distinct_evicted"] == 3
    assert c["slow"]["evictions_per_storage"] == 16 / 3
    assert c["slow"]["top1_share"] == 10 / 16
    assert c["jaccard"] == 2 / 4 and (c["only_fast"], c["only_slow"]) == (1, 1)


def _ablation_tables(switching: set[str]):
    lstm, resnet = [], []
    for h in ablation.ABLATION_FAMILY:
        for r, o in [(0.264, 8.0), (0.265, 1.4)]:
            lstm.append({"heuristic": h, "seed": 0, "ratio": r, "status": "ok",
                         "overhead": o if h in switching else 1.4})
        for r, st in [(0.101, "ok"), (0.102, "oom"), (0.103, "ok")]:
            resnet.append({"heuristic": h, "seed": 0, "ratio": r, "status": st if h == "AbESizeStale" else "ok",
                           "overhead": 2.0, "budget": 1})
    return pd.DataFrame(lstm), pd.DataFrame(resnet)


def test_ablation_supports_the_joint_term_only_when_the_data_do():
    joint = {h for h, (c, size, stale) in ablation.TERMS.items()
             if h in ablation.ABLATION_FAMILY and size and stale}
    t = ablation.per_heuristic(*_ablation_tables(joint))
    c = ablation.conclusions(t)
    assert c["joint_size_staleness_supported"] and c["inverting_variants"] == ["e*, size, staleness"]
    assert "support the joint size-staleness term" in c["statement"]
    t = ablation.per_heuristic(*_ablation_tables({"AbESizeStale", "AbESize"}))
    c = ablation.conclusions(t)
    assert not c["joint_size_staleness_supported"]
    assert "without the joint size-staleness term (e*, size, no staleness)" in c["statement"]
    assert "do not support" in c["statement"]


def test_switching_needs_two_feasible_budgets():
    runs = pd.DataFrame({"ratio": [0.1, 0.2, 0.3], "status": ["thrashed", "ok", "ok"], "overhead": [None, 9.0, 1.5]})
    sw = ablation.switching(runs)
    assert sw["switches"] and sw["status_change"] and sw["max_adjacent_factor"] == 6.0
    runs = pd.DataFrame({"ratio": [0.1, 0.2], "status": ["thrashed", "oom"], "overhead": [None, None]})
    assert not ablation.switching(runs)["switches"]


def test_claims_check_respects_published_precision():
    computed = {"C1": {"a": 10.0998, "b": 1.3826015341875997, "c": 7.34}, "C3": {"lo": 0.102}}
    published = {"C1": {"a": {"value": 10.10, "decimals": 2}, "b": {"value": 1.3826015341875997},
                        "c": {"value": 7.3, "decimals": 1}, "missing": {"value": 1}},
                 "C3": {"lo": {"value": 0.103}}}
    rows = {r["key"]: r for r in claims.check(computed, published)}
    assert rows["a"]["match"] and rows["b"]["match"] and rows["c"]["match"]
    assert not rows["missing"]["match"] and rows["missing"]["computed"] is None
    assert not rows["lo"]["match"] and rows["lo"]["difference"] == pytest.approx(-0.001)


def test_refinement_windows_are_edges_regime_gaps_and_holes():
    from dtrlab.analysis import refine

    s = sweep([(0.1, 10, "oom", None), (0.2, 20, "ok", 9.0), (0.3, 30, "ok", 5.0), (0.4, 40, "ok", 1.2),
               (0.5, 50, "ok", 1.0), (0.6, 60, "ok", 1.0)])
    assert refine.windows(s, 2.0) == [(0.1, 0.2), (0.3, 0.4)]  # outcome differs; 5.0 / 1.2 >= 2 (9 / 5 is not)
    assert refine.windows(s, 2.0, holes=[(0.52, 0.53)]) == [(0.1, 0.2), (0.3, 0.4), (0.5, 0.6)]
    assert refine.windows(s, 2.0, holes=[(0.45, 0.55)]) == [(0.1, 0.2), (0.3, 0.4), (0.4, 0.5), (0.5, 0.6)]
    assert refine.fine_ratios([(0.25, 0.26), (0.26, 0.262)], 0.001) == [
        0.251, 0.252, 0.253, 0.254, 0.255, 0.256, 0.257, 0.258, 0.259, 0.261]  # decimal grid, ends excluded
    with pytest.raises(ValueError):
        refine.windows(s, 1.0)
    with pytest.raises(ValueError):
        refine.fine_ratios([(0.1, 0.2)], 0.0)


def test_refining_around_a_hole_finds_resnet32s_inversion(load):
    """The coarse grid steps over ResNet-32's OOM band (0.10 and 0.11 both
    ok); refined around the atlas's hole there, the sweep shows the C3
    bracket 0.102-0.106 (real replays)."""
    from dtrlab import sweeps
    from dtrlab.analysis import refine

    t = load("resnet32")

    def replay(ratios):
        points = [{"heuristic": "DTR", "ratio": r, "cap": 60.0, "seed": 0} for r in ratios]
        return sweeps.table(sweeps.run_points(t, points, progress=False))

    coarse = replay([0.09, 0.10, 0.11, 0.12])
    assert list(coarse.status) == ["oom", "ok", "ok", "ok"] and inversions.brackets(coarse) == []
    spans = refine.windows(coarse, 2.0, holes=[(0.1025, 0.1065)])
    assert spans == [(0.09, 0.1), (0.1, 0.11)]
    fine = replay([r for r in refine.fine_ratios(spans, 0.001) if r not in set(coarse.ratio)])
    (b,) = inversions.brackets(pd.concat([coarse, fine]))
    assert (b["lo_ratio"], b["hi_ratio"], b["statuses"]) == (0.102, 0.106, ["oom"])


def test_a_merged_sweep_does_not_depend_on_its_chunking(load, tmp_path):
    """The same replays chunked three ways merge into the same Parquet bytes
    (chunks of failing and succeeding runs both; real replays of ResNet-32,
    which fails at 0.09 and succeeds at 0.10)."""
    from dtrlab import sweeps
    from dtrlab.steps.io import write_table

    t = load("resnet32")
    points = [{"heuristic": "DTR", "ratio": r, "cap": 60.0, "seed": 0} for r in (0.09, 0.1, 0.11, 0.12)]
    rows = sweeps.run_points(t, points, progress=False)

    def merged(sizes, name):
        parts, at = [], 0
        for k, n in enumerate(sizes):
            write_table(sweeps.table(rows[at:at + n]), tmp_path / f"{name}-{k}.parquet")
            parts.append(pd.read_parquet(tmp_path / f"{name}-{k}.parquet"))
            at += n
        write_table(sweeps.merge(parts), tmp_path / f"{name}.parquet")
        return (tmp_path / f"{name}.parquet").read_bytes()

    # A chunk without a failure (the last three) beside one with, or all in one.
    assert merged([1, 3], "split") == merged([4], "whole") == merged([2, 2], "halves")


def test_the_comparison_row_counts_switches_inversions_and_holes():
    """One trace's row of the side-by-side (Section 'Beyond the public traces')."""
    from dtrlab.analysis import compare

    sweep = pd.DataFrame({
        "ratio": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
        "status": ["oom", "ok", "oom", "ok", "ok", "ok"],
        "overhead": [None, 9.0, None, 8.0, 1.2, 1.0],
        "budget": [10, 20, 30, 40, 50, 60],
        "heuristic": ["DTR"] * 6,
    })
    atlas = {"trace": "x", "heuristic": "DTR", "cap": 60.0, "peak": 100, "lo_budget": 0, "hi_budget": 99,
             "holes": [{"lo": 30, "hi": 34}, {"lo": 70, "hi": 70}],
             "classes": [{"lo": 0, "hi": 49, "status": "ok", "overhead": 1.0, "exact": True},
                         {"lo": 50, "hi": 99, "status": "ok", "overhead": None, "exact": False}]}
    atlas["forensics"] = [{"hole": {"lo": 30, "hi": 34}, "fail": {"depth": 7, "pinned": 24}},
                          {"hole": {"lo": 70, "hi": 70}, "fail": None}]  # an OOM, then a thrashed hole
    r = compare.row("x", True, sweep, {"peak": 100, "const": 25}, atlas, min_gap=2.0)
    assert (r["smallest_ok_ratio"], r["ok_budgets"], r["inversions"]) == (0.2, 4, 1)
    assert (r["oom_holes"], r["oom_max_depth"], r["oom_max_pinned_share"]) == (1, 7, 0.8)
    assert (r["full_budget_overhead"], r["sweep_step"], r["fine_step"], r["refined_budgets"]) == (None, 0.1, None, 0)
    assert (r["slow_budgets"], r["regime_switches"]) == (2, 1)  # 9, 8 slow | 1.2, 1.0 fast
    assert r["largest_adjacent_overhead_ratio"] == pytest.approx(8.0 / 1.2)
    assert (r["holes"], r["hole_bytes"], r["widest_hole_bytes"], r["atlas_exact_share"]) == (2, 6, 5, 0.5)
    assert r["const_share"] == 0.25
    assert compare.row("x", False, sweep, {"peak": 100, "const": 0}, None, 2.0)["holes"] is None
    # Refined: neighbours of the sweep are adjacent (0.45 and 0.5 here, a fine step apart).
    refined = pd.concat([sweep.assign(fine=False), pd.DataFrame({
        "ratio": [0.45], "status": ["ok"], "overhead": [1.1], "budget": [45], "heuristic": ["DTR"], "fine": [True]})])
    r = compare.row("x", True, refined, {"peak": 100, "const": 25}, None, min_gap=2.0)
    assert (r["sweep_step"], r["fine_step"], r["refined_budgets"]) == (0.1, 0.05, 1)
    assert r["largest_adjacent_overhead_ratio"] == pytest.approx(8.0 / 1.1)
