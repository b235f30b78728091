"""C5: which terms of the DTR score (e* cost, size, staleness) are needed for
the LSTM regime switching and the ResNet-32 feasibility inversion.

Every heuristic is described by its three terms; the summary states, from
the runs, which variants switch or invert, and whether the data support the
preprint's conclusion that the *joint size-staleness term* drives the LSTM
instability. The statement is generated from the table, either way.
"""

from __future__ import annotations

import pandas as pd

from dtrlab import engine
from dtrlab.analysis import inversions

#: heuristic -> (cost term, size term, staleness term), from the engine's
#: catalogue; cost: e* (neighbourhood regions), eq (equivalence classes),
#: local (own compute), msps, none, lru, random.
TERMS: dict[str, tuple[str, bool, bool]] = {
    name: (t.cost, t.size, t.staleness) for name, t in engine.HEURISTIC_TERMS.items()
}

ABLATION_FAMILY = [h for h in TERMS if h.startswith("Ab")]


def switching(runs: pd.DataFrame, min_factor: float = 2.0) -> dict:
    """Regime switching over close budgets: two consecutive budgets that both
    succeed with overheads at least ``min_factor`` apart. (A change between
    success and failure is reported separately: it is a feasibility change.)"""
    df = runs.sort_values("ratio").reset_index(drop=True)
    factor, status_change = 1.0, False
    for (_, a), (_, b) in zip(df.iterrows(), df.iloc[1:].iterrows()):
        if (a.status == "ok") != (b.status == "ok"):
            status_change = True
        elif a.status == "ok":
            factor = max(factor, a.overhead / b.overhead, b.overhead / a.overhead)
    return {"switches": factor >= min_factor, "max_adjacent_factor": float(factor),
            "status_change": status_change, "statuses": "/".join(df.status),
            "overheads": [None if pd.isna(o) else round(float(o), 4) for o in df.overhead]}


def per_heuristic(lstm: pd.DataFrame, resnet: pd.DataFrame, min_factor: float = 2.0) -> pd.DataFrame:
    """One row per (heuristic, seed): switching on LSTM, inversions on ResNet-32."""
    rows = []
    keys = sorted(set(zip(lstm.heuristic, lstm.seed)) | set(zip(resnet.heuristic, resnet.seed)))
    for h, seed in keys:
        cost, size, stale = TERMS[h]
        sw = switching(lstm[(lstm.heuristic == h) & (lstm.seed == seed)], min_factor)
        inv = inversions.brackets(resnet[(resnet.heuristic == h) & (resnet.seed == seed)])
        rows.append({
            "heuristic": h, "seed": seed, "cost_term": cost, "size_term": size, "staleness_term": stale,
            "lstm_switches": sw["switches"], "lstm_max_adjacent_factor": sw["max_adjacent_factor"],
            "lstm_feasibility_change": sw["status_change"], "lstm_statuses": sw["statuses"],
            "resnet32_inversions": len(inv),
            "resnet32_inversion_ratios": ";".join(f"{b['lo_ratio']:.3f}-{b['hi_ratio']:.3f}" for b in inv),
        })
    return pd.DataFrame(rows)


def _label(cost: str, size: bool, stale: bool) -> str:
    terms = [{"e*": "e*", "eq": "eq-class", "local": "local cost", "none": "no cost"}[cost]]
    terms.append("size" if size else "no size")
    terms.append("staleness" if stale else "no staleness")
    return ", ".join(terms)


def conclusions(table: pd.DataFrame) -> dict:
    """What the ablation supports, as data and as a sentence.

    Deterministic heuristics are grouped by their terms (DTR is the e*, size,
    staleness variant, LargestStorage the size-only one, ...)."""
    det = table[table.cost_term.isin(["e*", "eq", "local", "none"])]
    groups = det.groupby(["cost_term", "size_term", "staleness_term"], sort=True).agg(
        switches=("lstm_switches", "any"), inversions=("resnet32_inversions", "max"),
        heuristics=("heuristic", lambda h: sorted(set(h))))
    switching = [_label(*k) for k, g in groups.iterrows() if g.switches]
    inverting = [_label(*k) for k, g in groups.iterrows() if g.inversions > 0]
    joint = [k for k in groups.index if k[1] and k[2]]
    others = [k for k in groups.index if not (k[1] and k[2])]
    sw = groups.switches
    supported = bool(len(joint)) and bool(sw[joint].all()) and not bool(sw[others].any()) if len(sw) else False
    if not switching:
        sentence = ("No deterministic variant switches regimes on these LSTM budgets, so the data cannot "
                    "attribute the instability to any term.")
    elif supported:
        sentence = ("Regime switching appears exactly in the variants that combine size and staleness "
                    f"({'; '.join(switching)}): the data support the joint size-staleness term.")
    else:
        parts = [f"Regime switching appears in: {'; '.join(switching)}."]
        without = [_label(*k) for k in others if sw[k]]
        quiet = [_label(*k) for k in joint if not sw[k]]
        if without:
            parts.append(f"It also occurs without the joint size-staleness term ({'; '.join(without)}).")
        if quiet:
            parts.append(f"Some variants with both terms do not switch ({'; '.join(quiet)}).")
        parts.append("The data do not support attributing the instability to the joint size-staleness term alone.")
        sentence = " ".join(parts)
    return {
        "switching_variants": switching,
        "inverting_variants": inverting,
        "variants_tested": [_label(*k) for k in groups.index],
        "joint_size_staleness_supported": supported,
        "statement": sentence,
    }
