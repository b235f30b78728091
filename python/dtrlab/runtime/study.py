"""The study "in a real runtime": for each workload, the simulator maps its
own plan exactly (the feasibility atlas, :mod:`dtrlab.atlas`: the budget
axis in execution classes, down to the byte) and sweeps it on a grid; the
runtime then runs the step on both sides of every feasibility hole, every
regime switch (neighbouring classes whose overheads differ by ``min_gap``)
and the lowest feasible budget, each a byte apart, and on the coarse grid,
in two modes:

- **model memory**: the budget checked against the engine's bytes, costs
  from the cost model. Every decision is the simulator's by construction;
  the rows record that they were (``same_decisions``), that the step was
  bitwise the step without the runtime (``equal``), and what it cost in
  wall-clock time and measured memory.
- **measured**: costs measured (the plan captured with timed operators),
  the budget checked against the C allocator's bytes before each operator,
  victims still the engine's. Its outcome and regime are compared with the
  simulator's replay of the timed plan at the same budget (``agree``): how
  far real execution departs from the model.

A regime is the C1 rule's (:mod:`dtrlab.analysis.regimes`) on the
simulator's overheads of the workload's budgets: fast below the widest
overhead gap of at least ``min_gap``, slow above it.

Tables are deterministic where they hold decisions and bitwise checks
(``decisions``); what was measured (times, bytes, the measured mode) is in
``measured`` tables, which differ from run to run.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from time import perf_counter

import pandas as pd
from tqdm import tqdm

from dtrlab import atlas, engine
from dtrlab.analysis import refine, regimes
from dtrlab.runtime import Runner, deterministic
from dtrlab.runtime import workloads as wl


@dataclass(frozen=True)
class Settings:
    ratios: list[float]
    fine_step: float
    min_gap: float
    max_budgets: int
    heuristic: str
    cap: float | None
    optimizer_step: bool
    threads: int
    #: The atlas's limits (:func:`dtrlab.atlas.build`'s keywords).
    atlas: dict


def sweep(trace: engine.Trace, st: Settings) -> pd.DataFrame:
    """The simulator on the plan: the coarse grid, refined on the fine step
    between neighbours whose outcome differs or whose overheads differ by
    ``min_gap`` (as the capture study's comparison sweep)."""
    def rows(ratios, fine):
        out = []
        for r in ratios:
            sim = engine.simulate(trace, ratio=r, heuristic=st.heuristic, cap=st.cap)
            out.append({"ratio": r, "budget": sim.budget, "status": sim.status, "overhead": sim.overhead,
                        "evictions": sim.evictions, "fine": fine})
        return out

    coarse = pd.DataFrame(rows(st.ratios, False))
    known = set(st.ratios)
    fine = [r for r in refine.fine_ratios(refine.windows(coarse, st.min_gap), st.fine_step) if r not in known]
    df = pd.concat([coarse, pd.DataFrame(rows(fine, True), columns=coarse.columns)], ignore_index=True)
    return df.sort_values("ratio", kind="stable").reset_index(drop=True)


def map_budgets(trace: engine.Trace, df: pd.DataFrame, st: Settings) -> atlas.Atlas:
    """The atlas of the plan from a grid step below the lowest budget the
    sweep completes up to the peak."""
    peak = engine.baseline(trace).peak
    ok = df[df.status == "ok"]
    lo_ratio = max(float(ok.ratio.min()) - (st.ratios[1] - st.ratios[0] if len(st.ratios) > 1 else 0.05), 0.0) \
        if len(ok) else 0.0
    lo = engine.budget_for_ratio(peak, lo_ratio) if lo_ratio > 0 else 0
    return atlas.build(trace, lo, peak, heuristic=st.heuristic, cap=st.cap, time_limit=None, **st.atlas)


def switches(a: atlas.Atlas, min_gap: float) -> list[tuple[int, int]]:
    """Neighbouring exact, completed classes whose overheads differ by
    ``min_gap``: ``(last budget of the lower, first of the upper)``."""
    cs = a.classes
    out = []
    for x, y in zip(cs, cs[1:]):
        if (x.exact and y.exact and x.status == y.status == "ok" and x.overhead and y.overhead
                and max(x.overhead, y.overhead) / min(x.overhead, y.overhead) >= min_gap):
            out.append((x.hi, y.lo))
    return out


def feasibility_edge(a: atlas.Atlas) -> tuple[int, int] | None:
    """The lowest budget the atlas finds feasible and the one below it."""
    ok = [c for c in a.classes if c.status == "ok"]
    if not ok or ok[0].lo <= a.lo_budget:
        return None
    return (ok[0].lo - 1, ok[0].lo)


def sweep_switches(df: pd.DataFrame, min_gap: float) -> list[tuple[int, int]]:
    """Neighbouring budgets of the sweep, both completed, whose overheads
    differ by ``min_gap``: ``(lower budget, upper budget)``."""
    df = df.sort_values("ratio").reset_index(drop=True)
    return [(int(a.budget), int(b.budget)) for (_, a), (_, b) in zip(df.iterrows(), df.iloc[1:].iterrows())
            if a.status == b.status == "ok" and max(a.overhead, b.overhead) / min(a.overhead, b.overhead) >= min_gap]


@dataclass(frozen=True)
class Budget:
    """A budget the runtime runs, and why: ``kind`` (hole, switch, edge or
    grid), which one of its kind (``group``), and on which ``side``."""

    budget: int
    kind: str
    group: int
    side: str


def budgets(a: atlas.Atlas, df: pd.DataFrame, st: Settings) -> list[Budget]:
    """The budgets (bytes) the runtime runs: both sides of (and inside)
    every hole of the atlas, both sides of every regime switch (the atlas's,
    a byte apart, and the sweep's, a fine step apart) and of the feasibility
    edge, then the coarse grid from the top down to its first failure; at
    most ``max_budgets``, ascending. A group is kept whole or not at all."""
    chosen: dict[int, Budget] = {}

    def add(group: list[Budget]) -> None:
        new = [g for g in group if g.budget not in chosen]
        if len(chosen) + len(new) <= st.max_budgets:
            chosen.update((g.budget, g) for g in new)

    for k, h in enumerate(a.holes()):
        add([Budget(int(h["below_ok_budget"]), "hole", k, "below"), Budget(int(h["lo"]), "hole", k, "inside"),
             Budget(int(h["above_ok_budget"]), "hole", k, "above")])
    pairs = sorted(set(switches(a, st.min_gap)) | set(sweep_switches(df, st.min_gap)))
    for k, (lo, hi) in enumerate(pairs):
        add([Budget(lo, "switch", k, "below"), Budget(hi, "switch", k, "above")])
    edge = feasibility_edge(a)
    if edge is not None:
        add([Budget(int(edge[0]), "edge", 0, "below"), Budget(int(edge[1]), "edge", 0, "above")])
    for _, row in df[~df.fine].sort_values("ratio", ascending=False).iterrows():
        add([Budget(int(row.budget), "grid", 0, "")])
        if row.status != "ok":
            break
    return sorted(chosen.values(), key=lambda g: g.budget)


class _Phases:
    """Says, on the log beside the progress bars, what each part of a
    workload's study did and how long it took: what the study costs is what
    sizes its workloads."""

    def __init__(self, name: str, progress: bool) -> None:
        self.name, self.progress = name, progress
        self.start = perf_counter()

    def done(self, what: str) -> None:
        now = perf_counter()
        if self.progress:
            tqdm.write(f"{self.name}: {what} ({now - self.start:.1f} s)", file=sys.stderr)
        self.start = now


def _regime(overhead: float | None, threshold: float | None) -> str | None:
    if overhead is None:
        return None
    return "slow" if threshold is not None and overhead > threshold else "fast"


def study(name: str, sizes: dict, st: Settings, progress: bool = True) -> dict:
    """Everything the study measures of one workload: the simulator's sweep
    and atlas of its plan, the runtime's decisions at the chosen budgets
    (deterministic) and what was measured (times, bytes, the measured mode)."""
    said = _Phases(name, progress)
    with deterministic(st.threads):
        runner = Runner(wl.make(name, sizes), optimizer_step=st.optimizer_step)
        peak = engine.baseline(runner.trace).peak
        said.done(f"the step run and captured as its plan, {runner.trace.n_ops:,} operators, peak {peak:,} B")
        sim_sweep = sweep(runner.trace, st)
        said.done(f"the simulator at {len(sim_sweep)} budgets of the plan")
        amap = map_budgets(runner.trace, sim_sweep, st)
        said.done(f"the plan's atlas, {len(amap.classes):,} classes in {amap.runs:,} runs, "
                  f"{amap.exact_share:.1%} exact")
        chosen = budgets(amap, sim_sweep, st)
        _, rule = regimes.classify(sim_sweep, st.min_gap)
        base = runner.baseline(repeat=3)
        runner.run(budget=chosen[-1].budget, heuristic=st.heuristic, cap=st.cap)  # (a warm-up, not measured)
        said.done("the step three times without the runtime (the baseline) and once with it (a warm-up)")
        decisions, measured = [], []
        bar = tqdm(chosen, desc=f"{name}: the runtime at {len(chosen)} budgets", disable=not progress, leave=False)
        for g in bar:
            b = g.budget
            sim = engine.simulate(runner.trace, budget=b, heuristic=st.heuristic, cap=st.cap, events=True)
            run = runner.run(budget=b, heuristic=st.heuristic, cap=st.cap)
            decisions.append({
                "workload": name, "budget": b, "ratio": b / peak, "kind": g.kind, "group": g.group,
                "side": g.side, "status": run.status,
                "overhead": run.result.overhead, "evictions": run.result.evictions,
                "remat_compute": run.result.remat_compute, "regime": _regime(run.result.overhead, rule["threshold"]),
                "sim_status": sim.status, "sim_overhead": sim.overhead, "same_decisions": run.result == sim,
                "equal": run.equal, "ledger_equal": not run.ledger_mismatches, "leaked": run.leaked,
            })
            t, m = run.timing, run.memory
            measured.append({
                "workload": name, "budget": b, "ratio": b / peak, "mode": "model", "status": run.status,
                "wall_ns": t["wall"], "operators_ns": t["operators"], "recompute_ns": t["recompute"],
                "engine_ns": t["engine"], "bookkeeping_ns": t["bookkeeping"], "baseline_wall_ns": base["wall"],
                "baseline_operators_ns": base["operators"], "calls": run.calls,
                "wall_overhead": t["wall"] / base["wall"],
                "compute_overhead": (t["operators"] + t["recompute"]) / base["operators"],
                "engine_peak": m["engine_peak"], "ledger_peak": m["ledger_peak"],
                "transient_peak": m["transient_peak"], "allocator_peak": m["allocator_peak"],
                "process_peak_above_start": m["process_peak_above_start"],
            })
        said.done(f"the runtime at {len(chosen)} budgets")
        # Measured mode: timed costs, the allocator's bytes as the trigger,
        # at the same budgets (as fractions of the timed plan's peak).
        timed = Runner(wl.make(name, sizes), optimizer_step=st.optimizer_step, costs="measured")
        said.done("the step run and captured again with timed operators")
        timed_peak = engine.baseline(timed.trace).peak
        # (The costs do not change the peak: the same budgets.)
        tb = {g.budget: g.budget if timed_peak == peak else engine.budget_for_ratio(timed_peak, g.budget / peak)
              for g in chosen}
        sims = {b: engine.simulate(timed.trace, budget=tb[b], heuristic=st.heuristic, cap=st.cap) for b in tb}
        timed_sweep = pd.DataFrame([{"ratio": b / peak, "status": x.status, "overhead": x.overhead}
                                    for b, x in sims.items()])
        _, timed_rule = regimes.classify(timed_sweep, st.min_gap)
        for b in tqdm([g.budget for g in chosen], desc=f"{name}: measured mode", disable=not progress, leave=False):
            run = timed.run(budget=tb[b], heuristic=st.heuristic, cap=st.cap, trigger="allocator")
            sim = sims[b]
            overhead = run.result.overhead if run.result is not None else None
            regime = _regime(overhead, timed_rule["threshold"])
            sim_regime = _regime(sim.overhead, timed_rule["threshold"])
            measured.append({
                "workload": name, "budget": tb[b], "ratio": b / peak, "mode": "measured", "status": run.status,
                "overhead": overhead, "regime": regime, "sim_status": sim.status, "sim_overhead": sim.overhead,
                "sim_regime": sim_regime, "agree": run.status == sim.status and regime == sim_regime,
                "equal": run.equal, "wall_ns": run.timing["wall"], "allocator_peak": run.memory["allocator_peak"],
                "engine_peak": run.memory["engine_peak"],
            })
        said.done(f"measured mode at {len(chosen)} budgets")
        kinds = [g.kind for g in chosen]
        plan = {"workload": name, "lines": runner.plan.n_lines, "operators": runner.trace.n_ops,
                **engine.baseline(runner.trace).to_dict(), "sizes": str(sorted(sizes.items())),
                "switches": len(set(switches(amap, st.min_gap)) | set(sweep_switches(sim_sweep, st.min_gap))),
                "holes": len(amap.holes()),
                "atlas_classes": len(amap.classes), "atlas_runs": amap.runs,
                "atlas_exact_share": amap.exact_share,
                "budgets_run": len(chosen), "hole_budgets": kinds.count("hole"),
                "switch_budgets": kinds.count("switch"), "edge_budgets": kinds.count("edge")}
    return {"sweep": sim_sweep.assign(workload=name), "decisions": pd.DataFrame(decisions),
            "measured": pd.DataFrame(measured), "plan": pd.DataFrame([plan]), "text": runner.plan.text,
            "atlas": amap.to_dict()}
