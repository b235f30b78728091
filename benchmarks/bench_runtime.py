"""Runtime benchmark: what the real runtime (dtrlab.runtime) costs beyond the
operators themselves, against the no-op dispatch baseline, and the engine's
time per decision against a batch replay's.

For each workload: the no-op baseline (a dispatch mode that only runs each
operator) and the runtime at each budget, ``--rounds`` rounds taking them in
turn (so that a drifting machine moves them alike); each figure is the
median of its rounds, with the range.

- bookkeeping per call = (runtime wall - operators - recomputation - engine
  - (baseline wall - baseline operators)) / operator calls: the runtime's
  own Python, beyond what any dispatch mode pays. Target: <= 50 us.
- engine per command, runtime = engine time / schedule commands; batch =
  one ``simulate`` of the plan at the same budget / commands. Target:
  within 2x. Beside them, the core fed alone: a session over the plan
  given one command at a time with nothing run between. Between the two
  core figures is what the operators run between the runtime's calls
  leave of the engine's code and data in the caches.

    python benchmarks/bench_runtime.py                     # every workload, 5 rounds
    python benchmarks/bench_runtime.py --only unet --rounds 3

Writes benchmarks/out/runtime.{json,md} and its section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

import records
from dtrlab import engine, runtime
from dtrlab.runtime import workloads

#: Workload -> (sizes, budgets as fractions of the plan's peak).
WORKLOADS = {
    "unet": ({"batch": 4, "size": 64}, [1.0, 0.9]),
    "resnet50": ({"batch": 2}, [1.0, 0.8]),
    "lstm_lm": ({"batch": 32, "tokens": 20}, [1.0, 0.8]),
    "lstm_2020": ({}, [1.0, 0.5]),
    "resnet32_2020": ({}, [1.0, 0.6]),
}


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def fed_alone(r: runtime.Runner, ratio: float) -> int:
    """Nanoseconds in the core for a session over ``r``'s plan fed one
    command at a time, with nothing run between its calls."""
    s = r.session(ratio=ratio)
    for i in range(1, r.trace._native.n_commands + 1):
        if s.advance(i)[0] != "running":
            break
    return s.core_ns


def bench(name: str, sizes: dict, ratios: list[float], rounds: int) -> list[dict]:
    r = runtime.Runner(workloads.make(name, sizes), optimizer_step=False)
    n_commands = r.trace._native.n_commands
    r.run(ratio=ratios[0], check=False, poll_allocator=False)  # (warm-up)
    samples: dict[float, list[dict]] = {x: [] for x in ratios}
    bases = []
    for _ in range(rounds):
        bases.append(r.baseline())
        for x in ratios:
            run = r.run(ratio=x, check=False, poll_allocator=False)
            t0 = time.perf_counter_ns()
            engine.simulate(r.trace, ratio=x, events=True)
            batch = time.perf_counter_ns() - t0
            samples[x].append({"run": run, "batch": batch, "alone": fed_alone(r, x)})
    rows = []
    dispatch = [b["wall"] - b["operators"] for b in bases]
    for x in ratios:
        ss = samples[x]
        calls = ss[0]["run"].calls
        own = [(s["run"].timing["wall"] - s["run"].timing["operators"] - s["run"].timing["recompute"]
                - s["run"].timing["engine"] - d) / calls / 1e3 for s, d in zip(ss, dispatch)]
        rows.append({
            "workload": name, "ratio": x, "status": ss[0]["run"].status, "calls": calls, "commands": n_commands,
            "evictions": ss[0]["run"].result.evictions,
            "bookkeeping_us_per_call": spread(own),
            "dispatch_baseline_us_per_call": spread([d / calls / 1e3 for d in dispatch]),
            "engine_ns_per_command": spread([s["run"].timing["engine"] / n_commands for s in ss]),
            "engine_core_ns_per_command": spread([s["run"].timing["engine_core"] / n_commands for s in ss]),
            "core_alone_ns_per_command": spread([s["alone"] / n_commands for s in ss]),
            "batch_ns_per_command": spread([s["batch"] / n_commands for s in ss]),
            "wall_ms": spread([s["run"].timing["wall"] / 1e6 for s in ss]),
            "recompute_ms": spread([s["run"].timing["recompute"] / 1e6 for s in ss]),
        })
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| workload | budget | status | calls | evictions | bookkeeping µs/call | no-op dispatch µs/call | "
             "engine ns/command (runtime) | (of it in the core) | (core fed alone) | (batch replay) | ratio | "
             "ratio alone | wall ms |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        b, e, s = r["bookkeeping_us_per_call"], r["engine_ns_per_command"], r["batch_ns_per_command"]
        a = r["core_alone_ns_per_command"]
        lines.append(f"| {r['workload']} | {r['ratio']:g} | {r['status']} | {r['calls']:,} | {r['evictions']:,} | "
                     f"{b['median']:.0f} ({b['min']:.0f}–{b['max']:.0f}) | "
                     f"{r['dispatch_baseline_us_per_call']['median']:.0f} | {e['median']:.0f} | "
                     f"{r['engine_core_ns_per_command']['median']:.0f} | {a['median']:.0f} | {s['median']:.0f} | "
                     f"{e['median'] / s['median']:.2f}x | {a['median'] / s['median']:.2f}x | "
                     f"{r['wall_ms']['median']:.0f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", choices=sorted(WORKLOADS), default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=str(Path(__file__).parent / "out" / "runtime"))
    args = ap.parse_args()
    rows = []
    with runtime.deterministic(1):
        threads = torch.get_num_threads()  # (what the runs used: deterministic() sets it)
        for name in args.only or WORKLOADS:
            sizes, ratios = WORKLOADS[name]
            rows += bench(name, sizes, ratios, args.rounds)
            print(table([r for r in rows if r["workload"] == name]), flush=True)
    meta = records.meta(threads=f"{threads} torch thread(s)", torch=torch.__version__, rounds=args.rounds)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    text = f"Median of {args.rounds} rounds (range).\n\n" + table(rows)
    out.with_suffix(".md").write_text(text)
    records.record("runtime", "Runtime: bookkeeping and engine time per decision", meta, text)
    print(text)


if __name__ == "__main__":
    main()
