"""Beyond the 2020 traces: each trace, public or captured, in one row of the
same measures — its DTR sweep's regimes (as C1) and inversions (as C3), and
its atlas's holes."""

from __future__ import annotations

import pandas as pd

from dtrlab.analysis import inversions, regimes


def row(trace: str, captured: bool, sweep: pd.DataFrame, baseline: dict, atlas: dict | None,
        min_gap: float) -> dict:
    ratios = sorted(sweep.ratio)
    step = round(ratios[1] - ratios[0], 9) if len(ratios) > 1 else 0.0
    summary = regimes.summarize(sweep, [], min_gap, step)
    ok = sweep[sweep.status == "ok"]
    adjacent = summary["largest_adjacent_ratio"]
    out = {
        "trace": trace,
        "captured": captured,
        "peak": int(baseline["peak"]),
        "const_share": baseline["const"] / baseline["peak"],
        "smallest_ok_ratio": float(ok.ratio.min()) if len(ok) else None,
        "ok_budgets": int(len(ok)),
        "budgets": int(len(sweep)),
        "sweep_lo": float(ratios[0]),
        "sweep_hi": float(ratios[-1]),
        "sweep_step": step,
        "slow_budgets": summary["n_slow"],
        "regime_switches": summary["switches"],
        "largest_adjacent_overhead_ratio": adjacent["ratio"] if adjacent else None,
        "largest_adjacent_at": adjacent["low_budget_ratio"] if adjacent else None,
        "inversions": len(inversions.brackets(sweep)),
    }
    if atlas is None:
        out.update({"holes": None, "hole_bytes": None, "widest_hole_bytes": None, "atlas_exact_share": None})
    else:
        widths = [h["hi"] - h["lo"] + 1 for h in atlas["holes"]]
        width = atlas["hi_budget"] - atlas["lo_budget"] + 1
        exact = sum(c["hi"] - c["lo"] + 1 for c in atlas["classes"] if c.get("exact"))
        out.update({"holes": len(widths), "hole_bytes": sum(widths), "widest_hole_bytes": max(widths, default=0),
                    "atlas_exact_share": exact / width})
    return out


def table(traces: list[str], captured: set[str], sweeps: dict[str, pd.DataFrame], baselines: dict[str, dict],
          atlases: dict[str, dict], min_gap: float) -> pd.DataFrame:
    """One row per trace, in the given order (public first, then captured)."""
    return pd.DataFrame([row(t, t in captured, sweeps[t], baselines[t], atlases.get(t), min_gap) for t in traces])
