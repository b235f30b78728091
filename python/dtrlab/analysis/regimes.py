"""C1: fast and slow regimes of DTR on the LSTM trace.

Rule (stated in the paper's text, computed here): sort the overheads of the
ok runs of a sweep; the widest multiplicative gap between consecutive sorted
values splits them into two regimes, *fast* below and *slow* above (the
threshold is the geometric mean of the gap's ends). A sweep whose widest gap
is under ``min_gap`` has a single regime (all fast).
"""

from __future__ import annotations

import math

import pandas as pd


def classify(sweep: pd.DataFrame, min_gap: float = 2.0) -> tuple[pd.DataFrame, dict]:
    """Add a ``regime`` column (fast/slow; None for failed runs)."""
    df = sweep.sort_values("ratio").reset_index(drop=True).copy()
    ok = df[df.status == "ok"]
    values = sorted(ok.overhead)
    gap, threshold = 1.0, math.inf
    for a, b in zip(values, values[1:]):
        if b / a > gap:
            gap, threshold = b / a, math.sqrt(a * b)
    gap, threshold = float(gap), float(threshold)
    if gap < min_gap:
        threshold = math.inf
    df["regime"] = pd.Series(
        [None if s != "ok" else ("slow" if o > threshold else "fast") for s, o in zip(df.status, df.overhead)],
        dtype=object,
    )
    info = {"threshold": None if math.isinf(threshold) else threshold, "widest_gap": gap, "min_gap": min_gap}
    return df, info


def largest_adjacent_ratio(sweep: pd.DataFrame, step: float | None = 0.001) -> dict | None:
    """The largest overhead ratio between two ok budgets ``step`` apart
    (``None``: between any two neighbouring budgets of the sweep)."""
    df = sweep.sort_values("ratio").reset_index(drop=True)
    best = None
    for (_, a), (_, b) in zip(df.iterrows(), df.iloc[1:].iterrows()):
        if a.status != "ok" or b.status != "ok":
            continue
        if step is not None and round(b.ratio - a.ratio, 9) != round(step, 9):
            continue
        hi, lo = (a, b) if a.overhead >= b.overhead else (b, a)
        ratio = hi.overhead / lo.overhead
        if best is None or ratio > best["ratio"]:
            best = {"ratio": float(ratio), "high_budget_ratio": float(hi.ratio), "high_overhead": float(hi.overhead),
                    "low_budget_ratio": float(lo.ratio), "low_overhead": float(lo.overhead)}
    return best


def _plain(x):
    """NaN/NA -> None, numpy scalars -> Python (JSON-ready)."""
    if x is None or (not isinstance(x, str) and pd.isna(x)):
        return None
    return x.item() if hasattr(x, "item") else x


def summarize(sweep: pd.DataFrame, points: list[float], min_gap: float = 2.0, step: float | None = 0.001) -> dict:
    """Regimes of the sweep; the largest adjacent ratio both among the paper's
    points (what the paper quotes) and over the whole sweep (finer)."""
    classified, info = classify(sweep, min_gap)
    by_ratio = classified.set_index("ratio")
    return {
        "largest_adjacent_ratio_points": largest_adjacent_ratio(sweep[sweep.ratio.isin(points)], step),
        "rule": info,
        "points": {f"{r:.3f}": {"overhead": _plain(by_ratio.overhead[r]), "regime": _plain(by_ratio.regime[r]),
                                "status": by_ratio.status[r]} for r in points},
        "largest_adjacent_ratio": largest_adjacent_ratio(sweep, step),
        "n_fast": int((classified.regime == "fast").sum()),
        "n_slow": int((classified.regime == "slow").sum()),
        "n_failed": int((classified.status != "ok").sum()),
        "switches": int(sum(1 for a, b in zip(classified.regime, classified.regime[1:])
                            if a and b and a != b)),
    }
