"""C3: feasibility inversions (a failing budget with succeeding budgets below
and above it) and non-monotone overhead, from a budget sweep."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the atlas's chunk jobs use `runs` and start without pandas
    import pandas as pd


def runs(flags) -> list[tuple[int, int]]:
    """Maximal runs ``(first, last)`` of consecutive true flags."""
    out: list[tuple[int, int]] = []
    for k, f in enumerate(flags):
        if f and out and out[-1][1] == k - 1:
            out[-1] = (out[-1][0], k)
        elif f:
            out.append((k, k))
    return out


def brackets(sweep: pd.DataFrame) -> list[dict]:
    """Every maximal run of failing budgets with ok budgets on both sides."""
    df = sweep.sort_values("ratio").reset_index(drop=True)
    out = []
    n = len(df)
    for i, j in runs(df.status != "ok"):
        if i > 0 and j + 1 < n:  # ok below (i-1) and above (j+1)
            out.append({
                "lo_ratio": df.ratio[i], "hi_ratio": df.ratio[j],
                "lo_budget": int(df.budget[i]), "hi_budget": int(df.budget[j]),
                "below_ok_ratio": df.ratio[i - 1], "above_ok_ratio": df.ratio[j + 1],
                "below_ok_overhead": df.overhead[i - 1], "above_ok_overhead": df.overhead[j + 1],
                "statuses": sorted(set(df.status[i : j + 1])),
                "n_budgets": j - i + 1,
            })
    return out


def overhead_increases(sweep: pd.DataFrame) -> list[dict]:
    """Consecutive ok budgets where more memory gives a higher overhead."""
    df = sweep[sweep.status == "ok"].sort_values("ratio").reset_index(drop=True)
    return [
        {"from_ratio": a, "to_ratio": b, "from_overhead": oa, "to_overhead": ob, "factor": ob / oa}
        for a, b, oa, ob in zip(df.ratio, df.ratio[1:], df.overhead, df.overhead[1:])
        if ob > oa
    ]


def summarize(sweep: pd.DataFrame) -> dict:
    ok = sweep[sweep.status == "ok"]
    return {
        "inversions": brackets(sweep),
        "overhead_increases": overhead_increases(sweep),
        "lowest_ok_ratio": float(ok.ratio.min()) if len(ok) else None,
        "n_points": len(sweep),
        "n_failed": int((sweep.status != "ok").sum()),
    }
