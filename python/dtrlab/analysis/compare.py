"""Beyond the 2020 traces: each trace, public or captured, in one row of the
same measures — its DTR sweep's regimes (as C1) and inversions (as C3), and
its atlas's holes with the state at each hole's failure (as C4).

The sweep is coarse, refined where it changes (column ``fine``, see
:mod:`dtrlab.analysis.refine`): adjacent budgets are neighbours of the sweep,
a fine step apart inside a refined window and a coarse step apart elsewhere."""

from __future__ import annotations

import pandas as pd

from dtrlab import atlas as atlas_map
from dtrlab.analysis import inversions, regimes


def _step(ratios) -> float | None:
    ratios = sorted(ratios)
    return round(min(b - a for a, b in zip(ratios, ratios[1:])), 9) if len(ratios) > 1 else None


def row(trace: str, captured: bool, sweep: pd.DataFrame, baseline: dict, atlas: dict | None,
        min_gap: float) -> dict:
    fine = sweep.fine if "fine" in sweep else pd.Series(False, index=sweep.index)
    coarse = sweep[~fine]
    summary = regimes.summarize(sweep, [], min_gap, step=None)
    ok = sweep[sweep.status == "ok"]
    full = sweep[sweep.ratio == 1.0]
    adjacent = summary["largest_adjacent_ratio"]
    out = {
        "trace": trace,
        "captured": captured,
        "peak": int(baseline["peak"]),
        "const_share": baseline["const"] / baseline["peak"],
        "full_budget_overhead": float(full.overhead.iloc[0]) if len(full) and full.status.iloc[0] == "ok" else None,
        "smallest_ok_ratio": float(ok.ratio.min()) if len(ok) else None,
        "ok_budgets": int(len(ok)),
        "budgets": int(len(sweep)),
        "refined_budgets": int(fine.sum()),
        "sweep_lo": float(sweep.ratio.min()),
        "sweep_hi": float(sweep.ratio.max()),
        "sweep_step": _step(coarse.ratio),
        "fine_step": _step(sweep.ratio) if fine.any() else None,
        "slow_budgets": summary["n_slow"],
        "regime_switches": summary["switches"],
        "largest_adjacent_overhead_ratio": adjacent["ratio"] if adjacent else None,
        "largest_adjacent_at": adjacent["low_budget_ratio"] if adjacent else None,
        "inversions": len(inversions.brackets(sweep)),
    }
    out.update(_atlas_columns(atlas))
    return out


def _atlas_columns(atlas: dict | None) -> dict:
    """Holes, their widths, the exact share, and (as C4) the failure in each
    hole's lowest budget: how many are out-of-memory failures, the deepest
    rematerialization and the largest share of the budget pinned there."""
    if atlas is None:
        return {"holes": None, "hole_bytes": None, "widest_hole_bytes": None, "atlas_exact_share": None,
                "oom_holes": None, "oom_max_depth": None, "oom_max_pinned_share": None}
    widths = [h["hi"] - h["lo"] + 1 for h in atlas["holes"]]
    fails = [(f["hole"]["lo"], f["fail"]) for f in atlas.get("forensics") or [] if f.get("fail")]
    return {
        "holes": len(widths), "hole_bytes": sum(widths), "widest_hole_bytes": max(widths, default=0),
        "atlas_exact_share": atlas_map.from_dict(atlas).exact_share,
        "oom_holes": len(fails) if atlas.get("forensics") is not None else None,
        "oom_max_depth": max((f["depth"] for _, f in fails), default=None),
        "oom_max_pinned_share": max((f["pinned"] / budget for budget, f in fails), default=None),
    }


def table(traces: list[str], captured: set[str], sweeps: dict[str, pd.DataFrame], baselines: dict[str, dict],
          atlases: dict[str, dict], min_gap: float) -> pd.DataFrame:
    """One row per trace, in the given order (public first, then captured)."""
    return pd.DataFrame([row(t, t in captured, sweeps[t], baselines[t], atlases.get(t), min_gap) for t in traces])
