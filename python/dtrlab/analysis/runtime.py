"""The study in a real runtime, one row per workload: what the simulator
finds on the step's own trace (regime switches, feasibility holes), whether
the runtime took its decisions and kept the step exact, what the changes
cost in wall-clock time, and how far the measured mode departs."""

from __future__ import annotations

import math

import pandas as pd


#: A regime switch shows in wall-clock time when the time changes by this factor or more.
WALL_VISIBLE = 1.1


def _switch_costs(d: pd.DataFrame, m: pd.DataFrame) -> list[tuple[float, float, float]]:
    """Each regime switch whose two sides the runtime ran: ``(ratio below,
    modelled overhead ratio, wall-clock overhead ratio)``."""
    wall = dict(zip(m.budget, m.wall_overhead))
    out = []
    for _, g in d[d.kind == "switch"].groupby("group"):
        lo, hi = g[g.side == "below"], g[g.side == "above"]
        if len(lo) == len(hi) == 1 and lo.status.iloc[0] == hi.status.iloc[0] == "ok":
            a, b = lo.iloc[0], hi.iloc[0]
            slow, fast = (a, b) if a.overhead >= b.overhead else (b, a)
            out.append((float(a.ratio), float(slow.overhead / fast.overhead),
                        float(wall[slow.budget] / wall[fast.budget])))
    return out


def _measured_as_decided(d: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """The budgets of ``d`` (their kind, group and side) with the measured
    mode's status and overhead there (the same fractions of the peak)."""
    by_ratio = meas.drop_duplicates("ratio").set_index("ratio")[["status", "overhead"]]
    return d.drop(columns=["status", "overhead"]).join(by_ratio, on="ratio", how="inner")


def _switches_kept(d: pd.DataFrame, min_gap: float) -> tuple[int, int]:
    """Regime switches run on both sides to completion, and of them those
    whose two sides' overheads still differ by ``min_gap`` or more."""
    run = kept = 0
    for _, g in d[d.kind == "switch"].groupby("group"):
        lo, hi = g[g.side == "below"], g[g.side == "above"]
        if len(lo) == len(hi) == 1 and lo.status.iloc[0] == hi.status.iloc[0] == "ok":
            run += 1
            a, b = float(lo.overhead.iloc[0]), float(hi.overhead.iloc[0])
            kept += max(a, b) >= min_gap * min(a, b)
    return run, kept


def _holes_shown(d: pd.DataFrame) -> set:
    """The holes (groups) whose inside failed and whose both sides completed."""
    shown = set()
    for group, g in d[d.kind == "hole"].groupby("group"):
        sides = dict(zip(g.side, g.status))
        if sides.get("below") == "ok" and sides.get("above") == "ok" and sides.get("inside") in ("oom", "thrashed"):
            shown.add(group)
    return shown


def _holes_run(d: pd.DataFrame) -> int:
    """Holes whose inside failed and whose both sides completed in the runtime."""
    return len(_holes_shown(d))


def _edge(d: pd.DataFrame) -> bool | None:
    """Whether the runtime failed a byte below the lowest feasible budget and completed at it."""
    e = dict(zip(d[d.kind == "edge"].side, d[d.kind == "edge"].status))
    if not e:
        return None
    return e.get("below") in ("oom", "thrashed") and e.get("above") == "ok"


def _lowest_ok(df: pd.DataFrame) -> float | None:
    ok = df[df.status == "ok"]
    return float(ok.ratio.min()) if len(ok) else None


def _max_or_none(x: pd.Series) -> float | None:
    x = x.dropna()
    return float(x.max()) if len(x) else None


def row(name: str, d: pd.DataFrame, m: pd.DataFrame, plan: pd.Series, min_gap: float) -> dict:
    model = m[m["mode"] == "model"]
    meas = m[m["mode"] == "measured"]
    ok = d[d.status == "ok"]
    switches = _switch_costs(d, model)
    in_measured = _measured_as_decided(d, meas)
    measured_switches, measured_switches_kept = _switches_kept(in_measured, min_gap)
    # The allocator's bytes are counted from the step's start, when the
    # constants (parameters, inputs) were there already: added back, they
    # compare with the budget as the engine's bytes do.
    model_ok = model[model.status == "ok"]
    allocator = (model_ok.allocator_peak.astype(float) + float(plan.const)) / model_ok.budget
    per_call = (model.bookkeeping_ns / model.calls)[model.status == "ok"]
    tight = model[model.status == "ok"].sort_values("ratio")
    lowest_sim, lowest_measured = _lowest_ok(d.assign(status=d.sim_status)), _lowest_ok(meas)
    return {
        "workload": name,
        "sizes": plan.sizes,
        "operators": int(plan.operators),
        "peak": int(plan.peak),
        "const_share": float(plan.const / plan.peak),
        "sim_switches": int(plan.switches),
        "sim_holes": int(plan.holes),
        "atlas_exact_share": float(plan.atlas_exact_share),
        "budgets": int(len(d)),
        "ok": int(len(ok)),
        "same_decisions": int(d.same_decisions.sum()),
        "equal": int((ok.equal == True).sum()),  # noqa: E712
        "ledger_equal": int(d.ledger_equal.sum()),
        "leak_free": int((d.leaked == 0).sum()),
        "switches_run": len(switches),
        "holes_run": _holes_run(d),
        "edge_exact": _edge(d),
        "switch_model_ratio": max((s[1] for s in switches), default=None),
        "switch_wall_ratio": max((s[2] for s in switches), default=None),
        "switch_wall_ratio_min": min((s[2] for s in switches), default=None),
        "switches_in_wall_time": sum(1 for s in switches if s[2] >= WALL_VISIBLE),
        "switch_model_ratio_min": min((s[1] for s in switches), default=None),
        "lowest_ok": lowest_sim,
        "wall_overhead_full": float(model[model.ratio == model.ratio.max()].wall_overhead.iloc[0]),
        "wall_overhead_tightest": float(tight.wall_overhead.iloc[0]) if len(tight) else None,
        "bookkeeping_us_per_call": float(per_call.median() / 1e3) if len(per_call) else None,
        "transient_over_budget": int(max(0, (model.transient_peak - model.budget).max())),
        "measured_agree": int(meas.agree.sum()),
        "measured_budgets": int(len(meas)),
        "measured_lowest_ok": lowest_measured,
        "measured_edge_shift": (None if lowest_sim is None or lowest_measured is None
                                else float(round(lowest_measured - lowest_sim, 9))),
        "measured_equal": int((meas[meas.status == "ok"].equal == True).sum()),  # noqa: E712
        # Of the holes shown in model memory, those shown in measured mode too.
        "measured_holes_run": len(_holes_shown(d) & _holes_shown(in_measured)),
        "measured_switches_run": measured_switches,
        "measured_switches_kept": measured_switches_kept,
        "allocator_over_budget": _max_or_none(allocator),
        "process_peak_mb": _max_or_none(model_ok.process_peak_above_start.astype(float) / 1e6),
    }


def summary(decisions: pd.DataFrame, measured: pd.DataFrame, plans: pd.DataFrame, min_gap: float) -> pd.DataFrame:
    """One row per workload, in the order of ``plans``; ``min_gap``, the
    factor between two overheads that makes a regime switch."""
    rows = []
    for _, plan in plans.iterrows():
        w = plan.workload
        rows.append(row(w, decisions[decisions.workload == w], measured[measured.workload == w], plan, min_gap))
    df = pd.DataFrame(rows)
    return df.replace({math.nan: None}) if len(df) else df
