"""Engine benchmark: wall time and peak RSS of the native engine, side by
side with the reference simulator when ``DTRLAB_SIMRD`` points at a checkout.

Workloads (the issue's): LSTM at ratios 0.264 (slow regime) and 0.265 (fast),
and the ResNet-32 DTR sweep 0.080-0.150 in steps of 0.001 (71 points), cap 60.
Each measurement runs in a fresh subprocess so its peak RSS is its own; trace
parsing and the baseline are included in the time, as in a real call.

    python benchmarks/bench_engine.py                 # native only
    DTRLAB_SIMRD=/path/to/dtr-prototype python benchmarks/bench_engine.py
    python benchmarks/bench_engine.py --only resnet32_sweep --repeat 3

Writes benchmarks/out/engine.json and its section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import records

WORKLOADS = {
    "lstm_0.264": ("lstm", [0.264]),
    "lstm_0.265": ("lstm", [0.265]),
    "resnet32_sweep": ("resnet32", [round(0.080 + 0.001 * i, 3) for i in range(71)]),
}

# Runs inside the measuring subprocess.
CHILD = r"""
import json, resource, sys, time
engine, key, ratios = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
import dtrlab
from dtrlab import traces
path = traces.resolve_trace(key)
t0 = time.perf_counter()
statuses = []
if engine == "native":
    trace = dtrlab.load_trace(path)
    for r in ratios:
        statuses.append(dtrlab.simulate(trace, ratio=r).status)
else:
    from dtrlab import reference
    base = reference.baseline(path)  # once, as the native engine does
    for r in ratios:
        statuses.append(reference.simulate(path, ratio=r, baseline_figures=base).status)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": time.perf_counter() - t0, "statuses": statuses, "peak_rss_mb": round(rss / 1024, 1)}))
"""


def measure(engine: str, key: str, ratios: list[float]) -> dict:
    """Run one workload in a fresh interpreter; it reports its own time and peak RSS."""
    out = subprocess.run([sys.executable, "-c", CHILD, engine, key, json.dumps(ratios)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=sorted(WORKLOADS), action="append")
    ap.add_argument("--repeat", type=int, default=1, help="native repeats (the minimum is reported)")
    ap.add_argument("--no-simrd", action="store_true", help="skip the reference even if configured")
    ap.add_argument("--out", default="benchmarks/out/engine.json")
    args = ap.parse_args()
    with_ref = bool(os.environ.get("DTRLAB_SIMRD")) and not args.no_simrd
    rows = []
    for name in args.only or WORKLOADS:
        key, ratios = WORKLOADS[name]
        print(f"[bench] {name}: native x{args.repeat} ...", file=sys.stderr, flush=True)
        native = [measure("native", key, ratios) for _ in range(args.repeat)]
        best = min(native, key=lambda m: m["seconds"])
        row = {"workload": name, "points": len(ratios), "native_s": round(best["seconds"], 3),
               "native_rss_mb": best["peak_rss_mb"], "statuses": best["statuses"]}
        if with_ref:
            print(f"[bench] {name}: simrd (slow) ...", file=sys.stderr, flush=True)
            ref = measure("simrd", key, ratios)
            assert ref["statuses"] == best["statuses"], (ref["statuses"], best["statuses"])
            row.update(simrd_s=round(ref["seconds"], 1), simrd_rss_mb=ref["peak_rss_mb"],
                       speedup=round(ref["seconds"] / best["seconds"], 1))
        rows.append(row)
        print(f"[bench] {json.dumps({k: v for k, v in row.items() if k != 'statuses'})}", file=sys.stderr, flush=True)
    meta = records.meta(repeat=args.repeat)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    lines = ["| workload | points | native (s) | native peak RSS (MB) | simrd (s) | speed-up |",
             "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['workload']} | {r['points']} | {r['native_s']} | {r['native_rss_mb']} | "
              f"{r.get('simrd_s', '-')} | {r.get('speedup', '-')} |" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    records.record("engine", "Engine: the paper's points, native and simrd", meta, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
