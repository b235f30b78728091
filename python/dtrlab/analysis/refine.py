"""Where a coarse budget sweep is refined: between adjacent budgets whose
outcome differs (a feasibility edge), whose overheads differ by at least the
regime gap (a possible regime switch), or that hold a hole of the atlas
(an inversion the coarse grid steps over), the budgets in between are
replayed on a finer grid.

The refinement is targeted, not exhaustive: a regime switch that begins and
ends between two coarse budgets with similar overheads is not seen."""

from __future__ import annotations

from decimal import Decimal

import pandas as pd


def windows(sweep: pd.DataFrame, min_gap: float,
            holes: list[tuple[float, float]] = ()) -> list[tuple[float, float]]:
    """Adjacent ratios ``(a, b)`` of the sweep between which to refine;
    ``holes`` are ``(lo, hi)`` ratios of failing stretches known otherwise."""
    if not min_gap > 1:
        raise ValueError(f"min_gap must be above 1, got {min_gap}")
    df = sweep.sort_values("ratio").reset_index(drop=True)
    out = []
    for i in range(len(df) - 1):
        a, b = df.iloc[i], df.iloc[i + 1]
        ra, rb = float(a.ratio), float(b.ratio)
        if a.status != b.status:
            out.append((ra, rb))
        elif a.status == "ok" and max(a.overhead, b.overhead) / min(a.overhead, b.overhead) >= min_gap:
            out.append((ra, rb))
        elif any(lo < rb and hi > ra for lo, hi in holes):
            out.append((ra, rb))
    return out


def hole_ratios(atlas: dict) -> list[tuple[float, float]]:
    """An atlas's holes as ``(lo, hi)`` ratios of its peak."""
    return [(h["lo"] / atlas["peak"], h["hi"] / atlas["peak"]) for h in atlas["holes"]]


def fine_ratios(spans: list[tuple[float, float]], step: float) -> list[float]:
    """The ratios strictly inside each window on the grid ``a + k * step``
    (decimal, as every grid of the study), ascending."""
    s = Decimal(str(step))
    if s <= 0:
        raise ValueError(f"step must be positive, got {step}")
    out = set()
    for a, b in spans:
        lo, hi = Decimal(str(a)), Decimal(str(b))
        x = lo + s
        while x < hi:
            out.add(float(x))
            x += s
    return sorted(out)
