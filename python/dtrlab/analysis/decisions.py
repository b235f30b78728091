"""Forensics of a decision: where two replays of one trace first choose a
different victim, and why, from their explained event logs
(``simulate(..., explain=True)``: each heuristic eviction with the victim's
score and terms and the runner-up's).

The first use is C2's pair: the LSTM at the fast and the slow budget, 0.1 %
apart. Both replays run the same operators on the same trace; until their
victims differ they evict the same storages, only at different clocks (the
smaller budget needs room sooner). So the first different victim comes from
one of three causes, tested in this order:

- ``clock``: the same two candidates lead both choices in swapped order, each
  with the same cost, size and last access in both runs. Only the clock
  differs, and with staleness in the score the two scores cross at one clock
  (``crossover_clock``, exact) between the two decisions' clocks;
- ``terms``: the same two candidates, swapped, but a cost term differs
  (their evicted neighbourhoods are not the same in the two runs);
- ``pool``: the choices are between different candidates.
"""

from __future__ import annotations

from fractions import Fraction

import pandas as pd

from dtrlab import engine

#: The terms of a scored candidate, as the explained event log names them
#: after ``victim_`` or ``runner_up_``.
TERMS = ("score", "cost", "own", "forward", "reverse", "classes", "staleness")


def decisions(events: pd.DataFrame) -> pd.DataFrame:
    """The heuristic evictions of an explained event log, in order."""
    if events is None or "candidates" not in events.columns:
        raise ValueError("the run keeps no decisions: simulate it with explain=True")
    return events[events["kind"] == "evict"].reset_index(drop=True)


def _value(x):
    """A JSON-ready scalar (pandas' missing value as None)."""
    if x is None or x is pd.NA:
        return None
    return x.item() if hasattr(x, "item") else x


def _candidate(trace: engine.Trace, row: pd.Series, who: str) -> dict | None:
    storage = _value(row["storage_id"] if who == "victim" else row["runner_up"])
    if storage is None:
        return None
    size = row["size"] if who == "victim" else row["runner_up_size"]
    out = {"storage_id": storage, "tensor_name": trace.tensor_name(storage), "op_name": trace.op_name_of(storage),
           "size": int(size)}
    out.update({term: _value(row[f"{who}_{term}"]) for term in TERMS})
    return out


def decision(trace: engine.Trace, row: pd.Series) -> dict:
    """One explained eviction: where it happened, the victim and the runner-up."""
    return {
        "model_op": int(row["model_op"]), "clock": int(row["clock"]), "depth": int(row["depth"]),
        "candidates": int(row["candidates"]),
        "victim": _candidate(trace, row, "victim"), "runner_up": _candidate(trace, row, "runner_up"),
    }


def crossover_clock(first: dict, second: dict, clock: int, size: bool) -> Fraction | None:
    """The clock at which two candidates' staleness scores are equal, their
    terms as given at ``clock`` (None when the scores never cross: equal
    cost per byte, or a candidate never accessed)."""
    if first["staleness"] is None or second["staleness"] is None:
        return None
    if size and 0 in (first["size"], second["size"]):
        return None  # +inf whatever the clock
    w = [Fraction(c["cost"], c["size"] if size else 1) for c in (first, second)]
    if w[0] == w[1]:
        return None
    a1, a2 = clock - first["staleness"], clock - second["staleness"]
    # c1 / (t - a1) = c2 / (t - a2) in cost per byte w: t = (w1 a2 - w2 a1) / (w1 - w2).
    return (w[0] * a2 - w[1] * a1) / (w[0] - w[1])


def _same_terms(x: dict, y: dict, clock_x: int, clock_y: int) -> bool:
    """The same cost, size and last access (clock minus staleness)."""
    last = [None if c["staleness"] is None else k - c["staleness"] for c, k in ((x, clock_x), (y, clock_y))]
    return x["cost"] == y["cost"] and x["size"] == y["size"] and last[0] == last[1]


def first_divergence(trace: engine.Trace, runs: dict[str, engine.SimResult], heuristic: str) -> dict:
    """The first heuristic eviction whose victim differs between two explained
    runs of ``trace`` (``runs``: label -> result), each side's decision there,
    and its cause (see the module's doc). ``decision`` is 1-based; None when
    one run's victims are the start of the other's."""
    if len(runs) != 2:
        raise ValueError(f"compare two runs, not {len(runs)}")
    if heuristic not in engine.HEURISTIC_TERMS:
        raise ValueError(f"unknown heuristic {heuristic!r}")
    (la, ra), (lb, rb) = runs.items()
    da, db = decisions(ra.events), decisions(rb.events)
    n = min(len(da), len(db))
    differ = (da["storage_id"].iloc[:n].to_numpy() != db["storage_id"].iloc[:n].to_numpy()).nonzero()[0]
    out: dict = {"runs": [la, lb], "decisions": {la: len(da), lb: len(db)}}
    if len(differ) == 0:
        return out | {"decision": None, "cause": None}
    k = int(differ[0])
    a, b = decision(trace, da.iloc[k]), decision(trace, db.iloc[k])
    out |= {"decision": k + 1, "same_victims_before": k, la: a, lb: b, "crossover_clock": None}
    terms = engine.HEURISTIC_TERMS[heuristic]
    swapped = (a["runner_up"] is not None and b["runner_up"] is not None
               and a["victim"]["storage_id"] == b["runner_up"]["storage_id"]
               and a["runner_up"]["storage_id"] == b["victim"]["storage_id"])
    if not swapped:
        return out | {"cause": "pool"}
    same = (_same_terms(a["victim"], b["runner_up"], a["clock"], b["clock"])
            and _same_terms(a["runner_up"], b["victim"], a["clock"], b["clock"]))
    cross = crossover_clock(a["victim"], a["runner_up"], a["clock"], terms.size) if terms.staleness else None
    lo, hi = sorted((a["clock"], b["clock"]))
    if same and cross is not None and lo <= cross <= hi:
        return out | {"cause": "clock", "crossover_clock": float(cross)}
    return out | {"cause": "terms"}


def margins(events: pd.DataFrame) -> dict:
    """How close the runner-up came, over a run's decisions: the share of
    exact ties, and of runner-ups within 1 % of the victim's score."""
    d = decisions(events)
    both = d.dropna(subset=["victim_score", "runner_up_score"])
    v, u = both["victim_score"].astype(float), both["runner_up_score"].astype(float)
    finite = (v > 0) & (v < float("inf"))
    n = len(both)
    return {
        "decisions": len(d),
        "with_runner_up": n,
        "ties": int((u == v).sum()),
        "within_1pct": int(((u <= v * 1.01) & finite).sum() + ((u == v) & ~finite).sum()),
    }
