"""The study in a real runtime: which budgets it runs (both sides of every
hole, switch and edge of a workload's atlas), its summary, the paper's
sentences for every value they can take, and one workload end to end."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from dtrlab import atlas, config
from dtrlab.analysis import runtime as analysis
from dtrlab.report import macros as macro_text
from dtrlab.report import runtime as report

torch = pytest.importorskip("torch", reason="the capture extra (torch) is not installed")

from dtrlab.runtime import study, workloads  # noqa: E402


def settings(**kw) -> study.Settings:
    base = dict(ratios=[0.5, 0.75, 1.0], fine_step=0.05, min_gap=1.5, max_budgets=16, heuristic="DTR", cap=60.0,
                optimizer_step=False, threads=1, atlas={})
    return study.Settings(**{**base, **kw})


def an_atlas() -> atlas.Atlas:
    """Budgets 0..999: fails to 99, ok (1.2) to 399, a hole 400..409, ok (1.1)
    to 699, then ok (3.0: a switch) to 999."""
    a = atlas.Atlas("t", "DTR", 60.0, 0, 999, 1000)
    a.classes = [atlas.ExecClass(0, 99, "oom", None), atlas.ExecClass(100, 399, "ok", 1.2),
                 atlas.ExecClass(400, 409, "oom", None), atlas.ExecClass(410, 699, "ok", 3.0),
                 atlas.ExecClass(700, 999, "ok", 1.1)]
    return a


def a_sweep() -> pd.DataFrame:
    return pd.DataFrame({"ratio": [0.5, 0.75, 1.0], "budget": [500, 750, 1000], "status": ["ok"] * 3,
                         "overhead": [3.0, 1.1, 1.0], "fine": [False] * 3})


def test_the_runtime_runs_both_sides_of_every_change():
    b = study.budgets(an_atlas(), a_sweep(), settings())
    got = {(x.kind, x.side): x.budget for x in b if x.kind != "grid"}
    assert got[("hole", "below")] == 399 and got[("hole", "inside")] == 400 and got[("hole", "above")] == 410
    assert got[("edge", "below")] == 99 and got[("edge", "above")] == 100
    switches = sorted(x.budget for x in b if x.kind == "switch")
    assert switches == [500, 699, 700, 750]  # the atlas's, a byte apart, and the sweep's
    assert [x.budget for x in b] == sorted(x.budget for x in b)
    assert {x.budget for x in b if x.kind == "grid"} == {1000}


def test_a_change_is_run_whole_or_not_at_all():
    b = study.budgets(an_atlas(), a_sweep(), settings(max_budgets=4))
    assert len(b) <= 4
    for kind in ("hole", "switch", "edge"):
        groups = {}
        for x in b:
            if x.kind == kind:
                groups.setdefault(x.group, []).append(x.side)
        assert all(len(s) == (3 if kind == "hole" else 2) for s in groups.values()), (kind, groups)


def decisions(statuses: list[str], kinds: list[tuple[str, int, str]], overheads: list[float | None]) -> pd.DataFrame:
    n = len(statuses)
    return pd.DataFrame({
        "workload": ["w"] * n, "budget": list(range(100, 100 + n)), "ratio": [0.1 * (i + 1) for i in range(n)],
        "kind": [k for k, _, _ in kinds], "group": [g for _, g, _ in kinds], "side": [s for _, _, s in kinds],
        "status": statuses, "overhead": overheads, "sim_status": statuses, "same_decisions": [True] * n,
        "equal": [True if s == "ok" else None for s in statuses], "ledger_equal": [True] * n, "leaked": [0] * n})


def test_the_summary_counts_what_real_execution_reproduced():
    d = decisions(["oom", "ok", "oom", "ok", "ok", "ok"],
                  [("edge", 0, "below"), ("edge", 0, "above"), ("hole", 0, "inside"), ("hole", 0, "above"),
                   ("switch", 0, "below"), ("switch", 0, "above")], [None, 1.5, None, 3.0, 3.0, 1.0])
    d.loc[1, "kind"], d.loc[1, "side"] = "hole", "below"  # (the edge's upper side is the hole's lower side too)
    d = pd.concat([d, d.iloc[[1]].assign(kind="edge", side="above", budget=99)], ignore_index=True)
    m = pd.DataFrame({"workload": "w", "budget": d.budget, "ratio": d.ratio, "mode": "model", "status": d.status,
                      "wall_overhead": [1, 2, 1, 4, 4, 2, 2], "bookkeeping_ns": 1000, "calls": 10,
                      "transient_peak": d.budget + 5, "allocator_peak": d.budget - 90,
                      "process_peak_above_start": [2e6, 3e6, 4e6, 5e6, 6e6, 7e6, 8e6]})
    # Measured mode: the hole's inside completes there; the switch's sides
    # come 1.2-fold apart (below the factor 1.5).
    meas = m.assign(mode="measured", agree=[True, True, True, False, True, True, True], equal=d.equal,
                    status=["oom", "ok", "ok", "ok", "ok", "ok", "ok"], overhead=[None, 1.5, 2.0, 3.0, 1.2, 1.0, 1.5])
    plan = pd.Series({"sizes": "[]", "operators": 10, "peak": 1000, "const": 100, "switches": 1, "holes": 1,
                      "atlas_exact_share": 0.5})
    row = analysis.row("w", d, pd.concat([m, meas]), plan, 1.5)
    assert row["holes_run"] == 1 and row["switches_run"] == 1
    assert row["switch_model_ratio"] == 3.0 and row["switch_wall_ratio"] == 2.0
    assert row["measured_agree"] == 6 and row["measured_budgets"] == 7
    assert row["bookkeeping_us_per_call"] == 0.1 and row["transient_over_budget"] == 5
    assert row["measured_holes_run"] == 0  # its inside completed in measured mode
    assert row["measured_switches_run"] == 1 and row["measured_switches_kept"] == 0
    # (budget - 90 + the 100 bytes of constants) / budget, largest at the smallest completed (99)
    assert row["allocator_over_budget"] == pytest.approx(109 / 99)
    assert row["process_peak_mb"] == 8.0


@pytest.mark.parametrize("holes_run", [0, 1, 3])
@pytest.mark.parametrize("switches", [0, 1, 2])
def test_the_measured_pathology_sentence_reads_for_every_count(holes_run, switches):
    for holes in range(holes_run + 1):
        for kept in range(switches + 1):
            text = report.measured_pathology_sentence(holes, holes_run, switches, kept, 1.5)
            assert text.startswith("In measured mode") and text.endswith(".") and "  " not in text
            assert "1 holes" not in text and "1 switches" not in text and "of the 1 " not in text
            assert ("no hole or regime switch" in text) == (holes_run == switches == 0)
            if holes_run:
                assert ("appear" in text.split(";")[0]) and (("not" in text or "none" in text) == (holes == 0)
                                                               or kept < switches)


def test_the_memory_sentence_reads_with_what_was_measured():
    both = report.memory_sentence(1.234, 56.7)
    assert "1.23 times the budget" in both and "57~MB" in both and both.endswith(".")
    assert "times the budget" not in report.memory_sentence(None, 5.0)
    assert report.memory_sentence(None, None).startswith("This system gave no")


@pytest.mark.parametrize("holes, run", [(0, 0), (1, 0), (1, 1), (3, 2)])
def test_the_hole_sentence_reads_for_every_count(holes, run):
    text = report.hole_sentence(holes, run)
    assert text.endswith(".") and "  " not in text
    assert ("1 feasibility holes" not in text) and ("0 of" not in text)


@pytest.mark.parametrize("n, model, wall", [(0, None, None), (1, (3.0, 3.0), (2.0, 2.0)),
                                            (2, (1.6, 2.5), (1.2, 1.5))])
def test_the_switch_and_verdict_sentences_read_for_every_count(n, model, wall):
    text = report.switch_sentence(n, model, wall)
    assert text.endswith(".") and ("1 regime switches" not in text) and ("across it " in text) == (n == 1)
    assert n < 2 or ("1.60- to 2.50-fold" in text and "1.20- to 1.50-fold" in text)
    for holes in (0, 2):
        for visible in range(n + 1):
            v = report.verdict_sentence(holes, n, visible, 1.1)
            assert v.endswith(".") and ("cannot tell" in v) == (holes == 0 and n == 0)
            assert ("hides" in v) == (visible < n)


@pytest.mark.parametrize("same, budgets, equal, ok", [(5, 5, 3, 3), (4, 5, 3, 3), (5, 5, 2, 3)])
def test_the_exactness_sentence_says_all_only_when_all(same, budgets, equal, ok):
    text = report.exact_sentence(same, budgets, equal, ok)
    assert text.startswith("At all") == (same == budgets and equal == ok)


@pytest.mark.parametrize("fails, completes", [(0, 0), (2, 0), (0, 1), (1, 3)])
def test_the_measured_sentences_read_both_ways(fails, completes):
    why = report.measured_why(fails, completes)
    assert (why == "") == (fails == completes == 0)
    assert ("we take this to be why" in why) == (fails > 0)
    assert report.measured_sentence(4, 4).startswith("Outcome and regime agreed") and "all 4" in \
        report.measured_sentence(4, 4)
    assert "3 of 4" in report.measured_sentence(3, 4)
    for holes, switches, visible in ((0, 0, 0), (1, 0, 0), (2, 3, 2), (0, 1, 1), (0, 1, 0)):
        text = report.abstract_sentence(holes, switches, visible, 5, 5)
        assert text.endswith(".") and ("1 feasibility holes" not in text) and ("1 regime switches" not in text)


def test_the_edge_sentence():
    assert report.edge_sentence(0, 0).startswith("No workload")
    assert report.edge_sentence(3, 3).startswith("On all 3")
    assert report.edge_sentence(2, 3).startswith("On 2 of the 3")


def test_the_schema_names_every_workload():
    schema = config.schema()["properties"]["runtime"]["properties"]
    assert schema["workloads"]["items"]["enum"] == list(workloads.WORKLOADS) == schema["workloads"]["default"]
    assert set(schema["sizes"]["default"]) == set(workloads.WORKLOADS)
    for name, sizes in schema["sizes"]["default"].items():
        workloads.make(name, sizes)  # (every default size is a valid call)
    with pytest.raises(ValueError, match="unknown workload"):
        workloads.make("nope")


def test_one_workload_end_to_end(capsys):
    """The smallest workload through the whole study: every budget's
    decisions the simulator's, every completed step bitwise exact, and the
    paper's table and macros from it; the log says what each part took."""
    st = settings(ratios=[0.3, 0.5, 0.7, 0.9, 1.0], max_budgets=8,
                  atlas=dict(max_runs=200, walk_share=1.0, walk_ops=30_000, max_total_runs=300, max_work=150, grid=16,
                             edge_runs=4))
    out = study.study("resnet32_2020", {"batch": 2}, st, progress=True)
    d, m = out["decisions"], out["measured"]
    said = [line for line in capsys.readouterr().err.splitlines() if re.fullmatch(r"resnet32_2020: .+ \(\d+\.\d s\)", line)]
    assert [re.sub(r"\d[\d,.]*", "N", line.split(": ", 1)[1]) for line in said] == [
        "the step run and captured as its plan, N operators, peak N B (N s)",
        "the simulator at N budgets of the plan (N s)",
        "the plan's atlas, N classes in N runs, N% exact (N s)",
        "the step three times without the runtime (the baseline) and once with it (a warm-up) (N s)",
        "the runtime at N budgets (N s)",
        "the step run and captured again with timed operators (N s)",
        "measured mode at N budgets (N s)",
    ]
    assert f"{out['plan'].atlas_exact_share[0]:.1%}" in said[2]
    assert len(d) >= 4 and d.same_decisions.all() and d.ledger_equal.all() and (d.leaked == 0).all()
    assert (d[d.status == "ok"].equal == True).all()  # noqa: E712
    assert set(m["mode"]) == {"model", "measured"} and (m[m["mode"] == "measured"].equal != False).all()  # noqa: E712
    assert {"edge"} <= set(d.kind)
    edge = dict(zip(d[d.kind == "edge"].side, d[d.kind == "edge"].status))
    assert edge == {"below": "oom", "above": "ok"}  # a byte apart, as the atlas says
    table = analysis.summary(d, m, out["plan"], st.min_gap)
    tex = report.table(table)
    assert "ResNet-32 (2020)" in tex and tex.count("\\\\\n") == 2  # (the header and one row)
    names = macro_text.defined(report.macros(table, d, m, st.min_gap))
    assert {"RuntimeExactSentence", "RuntimeHoleSentence", "RuntimeMeasuredSentence", "RuntimeAbstractSentence"} <= names


@pytest.mark.parametrize("visible, words", [(5, "all of them visibly"), (0, "none of them visibly"),
                                            (3, "3 of them visibly")])
def test_the_abstract_says_all_or_none_of_the_switches_in_words(visible, words):
    assert words in report.abstract_sentence(2, 5, visible, 5, 5)
