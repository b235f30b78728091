"""``dtrlab run-dtr MODEL --ratio R``: one training step under the runtime,
reported beside the simulator's replay of the same step's trace."""

from __future__ import annotations

import json
import statistics

from dtrlab import arguments, capture, engine, runtime


def run_dtr(args) -> int:
    if args.batch is not None:
        arguments.integer("--batch", args.batch, 1)
    arguments.integer("--threads", args.threads, 1)
    arguments.integer("--repeat", args.repeat, 1)
    if args.ratio is not None:
        arguments.real("--ratio", args.ratio, 0.0, lo_open=True)
    if args.budget is not None:
        arguments.integer("--budget", args.budget)
    cap = None if args.no_cap else arguments.cap(args.cap)
    with runtime.deterministic(args.threads):
        try:
            workload = capture.load_workload(args.model, args.batch)
            r = runtime.Runner(workload, optimizer_step=not args.no_optimizer_step, costs=args.costs)
            r.baseline(repeat=args.repeat)
            runs = [r.run(budget=args.budget, ratio=args.ratio, heuristic=args.heuristic, cap=cap,
                          trigger=args.trigger) for _ in range(args.repeat)]
        except RuntimeError as e:  # PyTorch's own errors (a model that cannot train, ...)
            raise ValueError(f"run-dtr of {args.model} failed: {e}") from None
    walls = sorted(run.timing["wall"] for run in runs)
    run = next(x for x in runs if x.timing["wall"] == walls[(len(walls) - 1) // 2])
    sim = engine.simulate(r.trace, budget=args.budget, ratio=args.ratio, heuristic=args.heuristic, cap=cap,
                          events=True)
    same = run.result == sim
    out = run.to_dict(events=args.events)
    out["model"] = args.model
    out["plan"] = {"lines": r.plan.n_lines, "operators": r.trace.n_ops, **engine.baseline(r.trace).to_dict()}
    out["simulator"] = {"status": sim.status, "overhead": sim.overhead, "same_decisions": same}
    out["wall_range"] = [walls[0], walls[-1]]
    if args.json:
        print(json.dumps(out, sort_keys=True))
        return 0
    _print(out, run, len(runs))
    return 0


def _ms(ns: int | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:,.1f} ms"


def _bytes(n: int | None) -> str:
    return "-" if n is None else f"{n:,} B"


def _print(out: dict, run: runtime.RuntimeRun, n: int) -> None:
    t, m, sim = out["timing"], out["memory"], out["simulator"]
    calls = max(run.calls, 1)
    over = None if t["bookkeeping"] is None else t["bookkeeping"] / calls / 1e3
    rows = [
        ("model", out["model"]),
        ("status", run.status + (f": {run.failure}" if run.failure else "")),
        ("budget", _bytes(run.budget) + (f" (ratio {run.ratio:g} of the plan's peak {out['plan']['peak']:,} B)"
                                          if run.ratio is not None else "")),
        ("overhead (model)", "-" if out["overhead"] is None else f"{out['overhead']:.4f}"),
        ("simulator", f"{sim['status']}, overhead {sim['overhead'] if sim['overhead'] is None else round(sim['overhead'], 4)}, "
                      f"same evictions and recomputations: {'yes' if sim['same_decisions'] else 'NO'}"),
        ("bitwise equal", {True: "yes", False: "NO: " + ", ".join(run.differences[:5]), None: "-"}[run.equal]),
        ("wall", f"{_ms(t['wall'])} (median of {n}; {_ms(out['wall_range'][0])} to {_ms(out['wall_range'][1])})"),
        ("  operators", _ms(t["operators"])),
        ("  recomputation", _ms(t["recompute"])),
        ("  engine", _ms(t["engine"])),
        ("  bookkeeping", _ms(t["bookkeeping"]) + ("" if over is None else f" ({over:.0f} us per operator call)")),
        ("  no-op dispatch baseline", f"{_ms(t['baseline_wall'])} (operators {_ms(t['baseline_operators'])})"),
        ("operator calls", f"{run.calls:,} ({out['plan']['lines']:,} plan lines)"),
        ("evictions", f"{run.result.evictions:,}" if run.result else "-"),
        ("engine peak", _bytes(m["engine_peak"])),
        ("ledger peak", _bytes(m["ledger_peak"]) + f" ({_bytes(m['transient_peak'])} with a recomputed "
                                                     "buffer being copied into place)"),
        ("allocator peak", _bytes(m["allocator_peak"]) + " above the start"),
        ("process peak", _bytes(m["process_peak"]) + f" resident ({_bytes(m['process_peak_above_start'])} "
                                                       "above the start)"),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    if "events" in out:
        print("events (kind, storage or tensor):")
        for kind, x in out["events"]:
            print(f"  {kind} {x}")
