"""Forensics of a decision: ``simulate(explain=True)`` keeps each heuristic
eviction's victim and runner-up with their scores and terms, changes no
result, and ``analysis.decisions`` finds where two runs first part."""

from __future__ import annotations

import re
from fractions import Fraction

import pandas as pd
import pytest

import dtrlab
from conftest import SYNTHETIC
from dtrlab.analysis import decisions
from dtrlab.engine import HEURISTIC_TERMS
from dtrlab.report import macros

#: One heuristic of each cost term and score shape, and the two without a cost.
HEURISTICS = ["DTR", "MSPS", "DTREqClass", "AbE", "AbESize", "AbEStale", "AbLocal", "LargestStorage", "LRU",
              "RandomStorage"]
PARTS = {"e*": ("own", "forward", "reverse"), "msps": ("own", "reverse"), "eq": ("own", "classes"),
         "local": ("own",), "none": ()}


def missing(x) -> bool:
    return x is None or x is pd.NA


def score_of(cost: int, size: int, staleness, terms) -> float:
    """The score from logged terms, by exact fractions (correctly rounded,
    as the reference's ``int / int``); a zero denominator scores +inf."""
    if terms.staleness and missing(staleness):
        return float("inf") if terms.size and size == 0 else 0.0 * cost
    den = (size if terms.size else 1) * (int(staleness) if terms.staleness else 1)
    return float("inf") if den == 0 else float(Fraction(cost, den))


def explained(trace, heuristic, ratio):
    return dtrlab.simulate(trace, ratio=ratio, heuristic=heuristic, explain=True)


@pytest.mark.parametrize("heuristic", HEURISTICS)
@pytest.mark.parametrize("name", ["synth-003", "synth-011", "synth-027"])
def test_explaining_changes_no_result_and_logs_true_terms(name, heuristic, load):
    trace = load(str(SYNTHETIC / f"{name}.log"))
    terms = HEURISTIC_TERMS[heuristic]
    seen = 0
    for ratio in (0.4, 0.6, 0.8):
        plain = dtrlab.simulate(trace, ratio=ratio, heuristic=heuristic, events=True)
        r = explained(trace, heuristic, ratio)
        assert r.digest() == plain.digest() and r.eviction_sequence == plain.eviction_sequence
        ev = r.events
        same = ["kind", "model_op", "depth", "storage_id", "tensor_id", "size", "pinned", "clock"]
        assert {c: ev[c].tolist() for c in same} == {c: plain.events[c].tolist() for c in same}
        d = decisions.decisions(ev)
        assert len(d) == (plain.events.kind == "evict").sum()
        assert ev.loc[ev.kind != "evict", "candidates"].isna().all()
        for _, row in d.iterrows():
            seen += 1
            assert row["candidates"] >= 1 + (not missing(row["runner_up"]))
            for who, size_col in (("victim", "size"), ("runner_up", "runner_up_size")):
                if who == "runner_up" and missing(row["runner_up"]):
                    continue
                if terms.random:
                    assert missing(row[f"{who}_score"]) and missing(row[f"{who}_cost"])
                    continue
                if terms.cost == "lru":
                    assert missing(row[f"{who}_cost"])
                    continue
                parts = PARTS[terms.cost]
                cost = 1 if not parts else sum(int(row[f"{who}_{p}"]) for p in parts)
                assert int(row[f"{who}_cost"]) == cost
                unused = {"own", "forward", "reverse", "classes"} - set(parts)
                assert all(missing(row[f"{who}_{p}"]) for p in unused)
                assert row[f"{who}_score"] == score_of(cost, int(row[size_col]), row[f"{who}_staleness"], terms)
            if not terms.random and not missing(row["runner_up"]):
                assert row["runner_up"] != row["storage_id"]
                assert row["runner_up_score"] >= row["victim_score"]
    assert seen > 0


def test_explain_is_checked_and_only_the_native_engines(load):
    trace = load(str(SYNTHETIC / "synth-003.log"))
    with pytest.raises(TypeError, match="explain"):
        dtrlab.simulate(trace, ratio=0.5, explain="yes")
    with pytest.raises(ValueError, match="native engine"):
        dtrlab.simulate(trace, ratio=0.5, explain=True, engine="simrd")
    with pytest.raises(ValueError, match="explain=True"):
        decisions.decisions(dtrlab.simulate(trace, ratio=0.5, events=True).events)
    r = dtrlab.simulate(trace, ratio=0.5)
    with pytest.raises(ValueError, match="two runs"):
        decisions.first_divergence(trace, {"a": r}, "DTR")


def test_crossover_clock_is_where_the_two_scores_meet():
    a = {"cost": 29396, "size": 3481600, "staleness": 30306163}
    b = {"cost": 71776, "size": 3481600, "staleness": 73685326}
    clock = 89110808
    t = decisions.crossover_clock(a, b, clock, size=True)
    score = [Fraction(c["cost"], c["size"]) / (t - (clock - c["staleness"])) for c in (a, b)]
    assert score[0] == score[1]
    assert decisions.crossover_clock(a, dict(a), clock, size=True) is None
    assert decisions.crossover_clock(a, {**b, "staleness": None}, clock, size=True) is None


def test_the_same_run_twice_never_parts(load):
    trace = load(str(SYNTHETIC / "synth-003.log"))
    r = explained(trace, "DTR", 0.6)
    d = decisions.first_divergence(trace, {"a": r, "b": r}, "DTR")
    assert d["decision"] is None and d["cause"] is None


def test_the_lstm_pair_parts_where_two_scores_cross(load):
    """C2's pair: the first different victim, and the clock between the two
    decisions at which its two leading scores cross."""
    trace = load("lstm")
    runs = {"fast": explained(trace, "DTR", 0.265), "slow": explained(trace, "DTR", 0.264)}
    d = decisions.first_divergence(trace, runs, "DTR")
    fast, slow = d["fast"], d["slow"]
    assert d["cause"] == "clock"
    assert fast["victim"]["storage_id"] == slow["runner_up"]["storage_id"]
    assert slow["victim"]["storage_id"] == fast["runner_up"]["storage_id"]
    fv, sv = (decisions.decisions(r.events) for r in runs.values())
    k = d["same_victims_before"]
    assert fv.storage_id.iloc[:k].tolist() == sv.storage_id.iloc[:k].tolist()
    assert fv.storage_id.iloc[k] != sv.storage_id.iloc[k]
    assert min(fast["clock"], slow["clock"]) <= d["crossover_clock"] <= max(fast["clock"], slow["clock"])
    # Before the crossover the slow run's order holds, after it the fast run's.
    assert fast["victim"]["score"] < fast["runner_up"]["score"] and slow["victim"]["score"] < slow["runner_up"]["score"]


def divergence(cause: str, k: int) -> dict:
    def side(op, clock, victim, runner):
        cand = lambda s, op_name, score: {"storage_id": s, "op_name": op_name, "score": score}  # noqa: E731
        return {"model_op": op, "clock": clock, "victim": cand(victim, "tanh_1/2", 2.5e-10),
                "runner_up": cand(runner, "sigmoid/3", 2.6e-10)}

    return {"decision": k + 1, "same_victims_before": k, "cause": cause, "crossover_clock": 150.4,
            "fast": side(10, 200, 1, 2), "slow": side(9, 100, 2, 1)}


@pytest.mark.parametrize("cause", ["clock", "terms", "pool"])
@pytest.mark.parametrize("k", [0, 1, 2, 35])
def test_the_divergence_sentence_reads_for_every_cause_and_count(cause, k):
    text = macros.divergence_sentence({"divergence": divergence(cause, k)})
    assert (f"decision {k + 1} differs" in text) == (k > 0) and ("already differ" in text) == (k == 0)
    assert re.search(r"\b1 heuristic evictions\b|\b(0|[2-9]\d*) heuristic eviction\b", text) is None, text
    assert r"tanh\_1/2" in text and "100 clock units earlier" in text
    assert ("cross at clock 150" in text) == (cause == "clock")


def test_the_divergence_sentence_without_a_difference_or_forensics():
    assert "No victim differs" in macros.divergence_sentence({"divergence": {"decision": None}})
    assert "native engine" in macros.divergence_sentence({"divergence": None})
    assert macros.margins_sentence({"margins": None}) == ""
