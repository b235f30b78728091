"""Scaling benchmark: how the engine's time and peak memory grow with the work.

Five axes, each point measured in a fresh subprocess (its peak RSS is its own)
under a time limit:

- **chain depth**: a synthetic trace x0 -> x1 -> ... -> xn whose tensors are
  all released (evicted eagerly) before `y = g(xn)` needs the whole chain
  again, n levels deep, at the tightest budget that lets it finish. Parse time,
  replay time (DTR, and LRU which keeps no evicted-neighbourhood regions) and
  peak RSS, for n = 1k ... 10^6;
- **half-peak chain**: the same chain replayed with DTR at half its peak
  (the rematerialization of the whole chain is the peak), so that every
  step of it is rematerialized while the pool holds about half the chain
  and every candidate ties: replay time, evaluations and peak RSS for
  n = 1k ... 10^6 (a victim choice that reads the pool is quadratic here);
- **training shapes** (:mod:`dtrlab.synthetic`, as the chain): graphs shaped
  as training steps, replayed with DTR at half their peak (no cap), n = 1k
  ... 100k: a deep network's forward pass kept for a backward pass that
  releases each activation after its gradient (``backward``), the same with
  two recurrent chains (an LSTM's hidden and cell states, ``two-chain``),
  a chain in which each step reads the two before it (``skip``) or the one
  and the fourth before it (``ladder``), an encoder whose levels a
  decoder reads on the way back (``unet``), and backward passes over a
  residual network (``residual``) and over a random graph (``dag``).
  Released activations stay in the evicted neighbourhoods the scores sum,
  so these regions grow with n; written to a record of its own
  (``shapes``);
- **evictions**: every public trace replayed with DTR (cap 60) at a spread of
  budget ratios; replay time against the number of evictions;
- **regimes**: the issue's workloads (LSTM at 0.265, fast; at 0.264, slow;
  Inception-v4 at 0.20, thrashed at cap 60) and Inception-v4's own fast
  budgets: time per eviction, each against the fast regime's, and time per
  heuristic evaluation (the reference's own unit of work); ``--rounds`` (5)
  rounds take the points in turn, each the minimum of ``--repeat`` replays
  at every point, and each point keeps its median round.

Replay times are the minimum over repeated replays in that subprocess, for
both engines alike: at least ``--repeat`` (3) for the engine and once for
simrd, then again until ``--min-time`` seconds (1) have been spent on the point
(at most 100 replays), as `timeit` does, so that sub-millisecond points are not
one scheduler hiccup away from a wrong figure. Each axis gets a log-log least-squares slope (1 = linear). With ``DTRLAB_SIMRD``
set, the reference simulator runs the same points where it finishes within the
time limit, side by side.

    python benchmarks/bench_scaling.py                      # everything
    python benchmarks/bench_scaling.py --axis chain --max-depth 100000
    python benchmarks/bench_scaling.py --axis regimes --no-simrd
    python benchmarks/bench_scaling.py --limit 600          # seconds per point
    python benchmarks/bench_scaling.py --axis shapes --max-depth 30000

Writes benchmarks/out/scaling.{json,md,png} and its section of benchmarks/RESULTS.md
(the training shapes: benchmarks/out/shapes.{json,md} and their own section).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import records
from dtrlab import synthetic

DEPTHS = [1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000]
SHAPE_DEPTHS = [1_000, 3_000, 10_000, 30_000, 100_000]
RATIOS = [0.10, 0.15, 0.20, 0.25, 0.30, 0.50]
TRACES = ["densenet", "inception", "lstm", "resnet32", "transformer", "treelstm", "unet", "unroll_gan"]
# Constants (x0: 8 B, w: 150 B) plus two chain tensors of 100 B: the whole
# chain is walked with two tensors resident.
CHAIN_BUDGET = 158 + 200
#: The regimes axis: (trace, ratio, regime), the fast regime's reference point first.
REGIMES = [("lstm", 0.265, "fast"), ("lstm", 0.264, "slow"), ("inception", 0.20, "thrashed"),
           ("inception", 0.25, "fast"), ("inception", 0.30, "fast")]

# Runs inside the measuring subprocess: parse, then replay each request.
CHILD = r"""
import json, resource, sys, time
engine, path, runs, repeat = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
min_time = float(sys.argv[5])
out = {"runs": []}


def timed(replay, at_least):
    # The minimum time of replay() over at least `at_least` calls, more until
    # `min_time` seconds are spent (at most 100); and its last result.
    best, spent, n = float("inf"), 0.0, 0
    while n < at_least or (spent < min_time and n < 100):
        t0 = time.perf_counter()
        r = replay()
        dt = time.perf_counter() - t0
        best, spent, n = min(best, dt), spent + dt, n + 1
    return best, n, r


if engine == "native":
    import dtrlab
    t0 = time.perf_counter()
    trace = dtrlab.load_trace(path)
    out["parse_s"] = time.perf_counter() - t0
    for run in runs:
        cap = run.pop("cap", 60.0)
        best, n, r = timed(lambda: dtrlab.simulate(trace, cap=cap, **run), repeat)
        out["runs"].append({"seconds": best, "replays": n, "status": r.status, "evictions": r.evictions,
                            "evaluations": r.heuristic_eval_count})
else:
    from dtrlab import reference  # runs simrd in a thread with a deep stack
    base = reference.baseline(path)
    for run in runs:
        best, n, r = timed(lambda: reference.simulate(path, baseline_figures=base, **run), 1)
        out["runs"].append({"seconds": best, "replays": n, "status": r.status, "evictions": r.evictions,
                            "evaluations": r.heuristic_eval_count})
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def log(msg: str) -> None:
    print(f"[scaling] {msg}", file=sys.stderr, flush=True)


#: Engine replays per point at least (simrd: once), and seconds spent on a
#: point before its minimum is taken (see the module's docstring).
REPEAT = 3
MIN_TIME = 1.0


def measure(engine: str, path: Path, runs: list[dict], limit: float, min_time: float | None = None) -> dict | None:
    """One subprocess; None if it did not finish within ``limit`` seconds.
    ``min_time`` (default ``MIN_TIME``): replay until that many seconds are spent."""
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, engine, str(path), json.dumps(runs), str(REPEAT),
                            str(MIN_TIME if min_time is None else min_time)],
                           capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return None
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"}
    return json.loads(p.stdout)


#: The training shapes (:mod:`dtrlab.synthetic`).
SHAPES = ("backward", "two-chain", "skip", "ladder", "unet", "residual", "dag")


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log y against log x (None with < 2 points)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx if sxx else None


def chain_axis(depths: list[int], limit: float, with_ref: bool, ref_max_depth: int, work: Path,
               heuristics: tuple[str, ...] = ("DTR", "LRU"), at: dict | None = None, what: str = "chain") -> list[dict]:
    """The synthetic chain at each depth, replayed with each of
    ``heuristics`` at ``at`` (default: the tightest budget that lets it
    finish, ``CHAIN_BUDGET``), without a cap."""
    at = at or {"budget": CHAIN_BUDGET}
    rows = []
    for n in depths:
        path = synthetic.write("chain", n, work / f"chain-{n}.log")
        size_mb = path.stat().st_size / 2**20
        engines = ["native", "simrd"] if with_ref and n <= ref_max_depth else ["native"]
        for heuristic in heuristics:
            for engine in engines:
                log(f"{what} {n:,} ({size_mb:.0f} MB) {heuristic}: {engine} ...")
                m = measure(engine, path, [{**at, "cap": None, "heuristic": heuristic}], limit)
                row = {"depth": n, "file_mb": round(size_mb, 1), "heuristic": heuristic, "engine": engine}
                row.update(result_fields(m))
                rows.append(row)
                log(json.dumps(row))
        path.unlink()
    return rows


def halfpeak_axis(depths: list[int], limit: float, with_ref: bool, ref_max_depth: int, work: Path) -> list[dict]:
    """The chain at half its peak, DTR without a cap."""
    return chain_axis(depths, limit, with_ref, ref_max_depth, work, ("DTR",), {"ratio": 0.5}, "half-peak chain")


def shapes_axis(depths: list[int], limit: float, with_ref: bool, ref_max_depth: int, work: Path) -> list[dict]:
    """Each training shape at each depth, DTR at half its peak without a cap;
    a shape stops growing after a point that did not finish."""
    rows = []
    for shape in SHAPES:
        for engine in ["native", "simrd"] if with_ref else ["native"]:
            for n in depths:
                if engine == "simrd" and n > ref_max_depth:
                    break
                path = synthetic.write(shape, n, work / f"{shape}-{n}.log")
                log(f"{shape} {n:,}: {engine} ...")
                m = measure(engine, path, [{"ratio": 0.5, "cap": None, "heuristic": "DTR"}], limit)
                row = {"shape": shape, "depth": n, "engine": engine, **result_fields(m)}
                rows.append(row)
                log(json.dumps(row))
                path.unlink()
                if not row["finished"]:
                    break
    return rows


def shapes_fits(rows: list[dict]) -> dict:
    fits = {}
    for shape in SHAPES:
        for engine in ("native", "simrd"):
            pts = [r for r in rows if r["shape"] == shape and r["engine"] == engine and r.get("finished")]
            if len(pts) > 1:
                fits[f"{shape} {engine}: replay time vs depth"] = slope([r["depth"] for r in pts],
                                                                        [r["replay_s"] for r in pts])
    return {k: (round(v, 3) if v is not None else None) for k, v in fits.items()}


def shapes_markdown(rows: list[dict], fits: dict) -> str:
    out = ["Each shape replayed with DTR at half its peak, no cap (see `bench_scaling.py`).", "",
           "| shape | depth | engine | replay (s) | replays | status | evictions | evaluations | peak RSS (MB) |",
           "|---|---:|---|---:|---:|---|---:|---:|---:|"]
    out += table_rows(rows, ["shape", "depth", "engine"], lambda r: [
        str(r["replay_s"]), str(r["replays"]), r["status"], f"{r['evictions']:,}", f"{r['evaluations']:,}",
        str(r["peak_rss_mb"])], 6)
    pairs = side_by_side([], [], shapes=rows)
    if pairs:
        out += ["", *pairs_table(pairs)]
    out += ["", "| fit | slope |", "|---|---:|"] + [f"| {k} | {v} |" for k, v in fits.items()]
    return "\n".join(out) + "\n"


def result_fields(m: dict | None) -> dict:
    if m is None:
        return {"finished": False}
    if "error" in m:
        return {"finished": False, "error": m["error"]}
    run = m["runs"][0]
    return {"finished": True, "parse_s": round(m.get("parse_s", float("nan")), 6),
            "replay_s": round(run["seconds"], 6), "replays": run["replays"], "status": run["status"],
            "evictions": run["evictions"], "evaluations": run["evaluations"],
            "peak_rss_mb": round(m["peak_rss_mb"], 1)}


def evictions_axis(trace_keys: list[str], ratios: list[float], limit: float, with_ref: bool) -> list[dict]:
    from dtrlab import traces

    rows = []
    for key in trace_keys:
        path = traces.resolve_trace(key)
        engines = ["native", "simrd"] if with_ref else ["native"]
        for engine in engines:
            log(f"{key}: {engine} at {len(ratios)} ratios ...")
            # simrd from the largest budget down: once a point passes the
            # time limit, the smaller budgets (more evictions) are not tried.
            order = sorted(ratios, reverse=True) if engine == "simrd" else ratios
            timed_out = False
            for r in order:
                row = {"trace": key, "ratio": r, "engine": engine}
                if timed_out:
                    row.update(finished=False, error="not run (a larger budget passed the time limit)")
                    rows.append(row)
                    continue
                m = measure(engine, path, [{"ratio": r}], limit)
                timed_out = m is None
                if m is None or "error" in m:
                    row.update(finished=False, **({"error": m["error"]} if m else {}))
                else:
                    run = m["runs"][0]
                    row.update(finished=True, replay_s=round(run["seconds"], 6), replays=run["replays"],
                               status=run["status"], evictions=run["evictions"],
                               peak_rss_mb=round(m["peak_rss_mb"], 1))
                rows.append(row)
                log(json.dumps(row))
    return rows


def regimes_axis(limit: float, rounds: int) -> list[dict]:
    """The native engine on each of `REGIMES`: time per eviction and per
    heuristic evaluation, and the ratio of the former to the fast regime's
    reference point (the first). The points are measured in `rounds` rounds
    that take them in turn, and each keeps the median of its rounds (each
    the minimum of ``REPEAT`` replays at every point): a machine whose speed
    drifts moves every point alike, and each point's figure rests on as many
    samples."""
    from dtrlab import traces

    rows: list[dict] = [{} for _ in REGIMES]
    times: list[list[float]] = [[] for _ in REGIMES]
    for k in range(rounds):
        for i, (key, ratio, regime) in enumerate(REGIMES):
            if rows[i] and not rows[i]["finished"]:
                continue
            log(f"regimes: {key} {ratio} ({regime}), round {k + 1} of {rounds} ...")
            # The same number of replays at every point: a minimum over more
            # samples would favour the short points.
            m = measure("native", traces.resolve_trace(key), [{"ratio": ratio}], limit, min_time=0.0)
            rows[i] = {"trace": key, "ratio": ratio, "regime": regime, **result_fields(m)}
            if rows[i]["finished"]:
                times[i].append(rows[i]["replay_s"])
            log(json.dumps(rows[i]))
    for row, ts in zip(rows, times):
        if row["finished"]:
            row.update(replay_s=round(statistics.median(ts), 6), replay_range_s=[min(ts), max(ts)], rounds=len(ts))
            row.update(us_per_eviction=round(1e6 * row["replay_s"] / max(row["evictions"], 1), 2),
                       ns_per_evaluation=round(1e9 * row["replay_s"] / max(row["evaluations"], 1), 1))
    ref = rows[0] if rows and rows[0].get("finished") else None
    for row in rows:
        if ref and row.get("finished"):
            row["vs_fast"] = round(row["us_per_eviction"] / ref["us_per_eviction"], 2)
    return rows


def summarize(chain: list[dict], evictions: list[dict], halfpeak: list[dict] = ()) -> dict:
    fits = {}
    for engine in ("native", "simrd"):
        pts = [r for r in halfpeak if r["engine"] == engine and r.get("finished")]
        if pts:
            fits[f"half-peak chain {engine} DTR: replay time vs depth"] = slope([r["depth"] for r in pts],
                                                                                [r["replay_s"] for r in pts])
            fits[f"half-peak chain {engine} DTR: peak RSS vs depth"] = slope([r["depth"] for r in pts],
                                                                             [r["peak_rss_mb"] for r in pts])
    for engine in ("native", "simrd"):
        for h in ("DTR", "LRU"):
            pts = [r for r in chain if r["engine"] == engine and r["heuristic"] == h and r.get("finished")]
            if pts:
                fits[f"chain {engine} {h}: replay time vs depth"] = slope([r["depth"] for r in pts],
                                                                          [r["replay_s"] for r in pts])
                fits[f"chain {engine} {h}: peak RSS vs depth"] = slope([r["depth"] for r in pts],
                                                                       [r["peak_rss_mb"] for r in pts])
        pts = [r for r in chain if r["engine"] == engine and r["heuristic"] == "DTR" and r.get("finished")]
        if pts and engine == "native":
            fits["chain native: parse time vs depth"] = slope([r["depth"] for r in pts], [r["parse_s"] for r in pts])
        pts = [r for r in evictions if r["engine"] == engine and r.get("finished") and r["evictions"] > 0]
        if pts:
            fits[f"traces {engine}: replay time vs evictions"] = slope([r["evictions"] for r in pts],
                                                                       [r["replay_s"] for r in pts])
    return {k: (round(v, 3) if v is not None else None) for k, v in fits.items()}


def table_rows(rows: list[dict], key: list[str], cells, width: int) -> list[str]:
    """A Markdown row per measured point: its `key` columns, then `cells(row)`
    if it finished, else why not and dashes for the `width` other columns."""
    out = []
    for r in rows:
        tail = cells(r) if r.get("finished") else [str(r.get("error", "time limit"))] + ["-"] * (width - 1)
        out.append("| " + " | ".join([str(r[k]) for k in key] + tail) + " |")
    return out


def regimes_markdown(regimes: list[dict]) -> list[str]:
    if not regimes:
        return []
    first = regimes[0]
    out = ["## Regimes (native, DTR, cap 60)", "",
           f"Time per eviction against the fast regime's ({first['trace']} {first['ratio']}): each point's replay "
           f"time is the median of {first.get('rounds', '-')} rounds that take the points in turn (each round the "
           "minimum of the same number of replays), with the rounds' range.", "",
           "| trace | ratio | regime | replay (s) | range (s) | replays | status | evictions | evaluations "
           "| µs per eviction | vs fast | ns per evaluation |",
           "|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    out += table_rows(regimes, ["trace", "ratio", "regime"], lambda r: [
        str(r["replay_s"]), "{:.4g}–{:.4g}".format(*r["replay_range_s"]), str(r["replays"]), r["status"],
        f"{r['evictions']:,}", f"{r['evaluations']:,}", str(r["us_per_eviction"]), f"{r.get('vs_fast', '-')}x",
        str(r["ns_per_evaluation"])], 9)
    return out + [""]


def halfpeak_markdown(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    out = ["## Half-peak chain (DTR, no cap, half the peak)", "",
           "| depth | file (MB) | engine | parse (s) | replay (s) | replays | status | evictions | evaluations "
           "| peak RSS (MB) |", "|---:|---:|---|---:|---:|---:|---|---:|---:|---:|"]
    out += table_rows(rows, ["depth", "file_mb", "engine"], lambda r: [
        str(r["parse_s"]), str(r["replay_s"]), str(r["replays"]), r["status"], f"{r['evictions']:,}",
        f"{r['evaluations']:,}", str(r["peak_rss_mb"])], 7)
    return out + [""]


def markdown(chain: list[dict], evictions: list[dict], fits: dict, regimes: list[dict] = (),
             halfpeak: list[dict] = ()) -> str:
    out = regimes_markdown(list(regimes)) + halfpeak_markdown(list(halfpeak))
    if chain:
        out += ["## Chain depth", "",
                "| depth | file (MB) | heuristic | engine | parse (s) | replay (s) | replays | status | evictions "
                "| peak RSS (MB) |",
                "|---:|---:|---|---|---:|---:|---:|---|---:|---:|"]
    for r in chain:
        if r.get("finished"):
            out.append(f"| {r['depth']:,} | {r['file_mb']} | {r['heuristic']} | {r['engine']} | {r['parse_s']} | "
                       f"{r['replay_s']} | {r['replays']} | {r['status']} | {r['evictions']:,} | {r['peak_rss_mb']} |")
        else:
            out.append(f"| {r['depth']:,} | {r['file_mb']} | {r['heuristic']} | {r['engine']} | - | "
                       f"{r.get('error', 'time limit')} | - | - | - | - |")
    if evictions:
        out += ["", "## Evictions (every trace, DTR, cap 60)", "",
                "| trace | ratio | engine | replay (s) | replays | status | evictions | µs per eviction |",
                "|---|---:|---|---:|---:|---|---:|---:|"]
    out += table_rows(evictions, ["trace", "ratio", "engine"], lambda r: [
        str(r["replay_s"]), str(r["replays"]), r["status"], f"{r['evictions']:,}",
        f"{1e6 * r['replay_s'] / r['evictions']:.1f}" if r["evictions"] else "-"], 5)
    pairs = side_by_side(chain, evictions, halfpeak)
    if pairs:
        out += ["", "## Side by side with simrd (same run, same machine)", "", *pairs_table(pairs)]
        done = [p["speedup"] for p in pairs if p["speedup"] is not None]
        if done:
            out += ["", f"Smallest speedup: {min(done):,.0f}x over the {len(done)} points simrd finished "
                        f"({len(pairs) - len(done)} more it did not finish within the time limit or was not "
                        "given)."]
    out += ["", "## Log-log slopes (1 = linear)", "", "| fit | slope |", "|---|---:|"]
    out += [f"| {k} | {v} |" for k, v in fits.items()]
    return "\n".join(out) + "\n"


def pairs_table(pairs: list[dict]) -> list[str]:
    """The Markdown table of `side_by_side`'s points."""
    out = ["| point | native (s) | simrd (s) | speedup |", "|---|---:|---:|---:|"]
    for p in pairs:
        if p["speedup"] is None:
            out.append(f"| {p['point']} | {p['native_s']} | {p['note']} | - |")
        else:
            out.append(f"| {p['point']} | {p['native_s']} | {p['simrd_s']} | {p['speedup']:,.0f}x |")
    return out


def side_by_side(chain: list[dict], evictions: list[dict], halfpeak: list[dict] = (),
                 shapes: list[dict] = ()) -> list[dict]:
    """Points measured by both engines: native replay time against simrd's
    (``simrd_s`` is None where simrd did not finish within the time limit)."""
    def pair(native: dict, ref: dict, point: str) -> dict | None:
        if not native.get("finished") or not native["replay_s"]:
            return None
        ref_s = ref["replay_s"] if ref.get("finished") else None
        return {"point": point, "native_s": native["replay_s"], "simrd_s": ref_s,
                "speedup": None if ref_s is None else ref_s / native["replay_s"],
                "note": ref.get("error", "did not finish within the time limit")}

    out = []
    for r in chain:
        if r["engine"] == "simrd":
            n = next(x for x in chain if x["engine"] == "native" and x["depth"] == r["depth"]
                     and x["heuristic"] == r["heuristic"])
            out.append(pair(n, r, f"chain {r['depth']:,} {r['heuristic']}"))
    for r in evictions:
        if r["engine"] == "simrd":
            n = next(x for x in evictions if x["engine"] == "native" and x["trace"] == r["trace"]
                     and x["ratio"] == r["ratio"])
            out.append(pair(n, r, f"{r['trace']} {r['ratio']}"))
    for r in halfpeak:
        if r["engine"] == "simrd":
            n = next(x for x in halfpeak if x["engine"] == "native" and x["depth"] == r["depth"])
            out.append(pair(n, r, f"half-peak chain {r['depth']:,}"))
    for r in shapes:
        if r["engine"] == "simrd":
            n = next(x for x in shapes if x["engine"] == "native" and x["shape"] == r["shape"]
                     and x["depth"] == r["depth"])
            out.append(pair(n, r, f"{r['shape']} {r['depth']:,}"))
    return [p for p in out if p is not None]


def figure(chain: list[dict], evictions: list[dict], path: Path, halfpeak: list[dict] = ()) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for engine, color, fmt in (("native", "#0072B2", "o-"), ("simrd", "#D55E00", "o--")):
        pts = [r for r in halfpeak if r["engine"] == engine and r.get("finished")]
        if pts:
            d = [r["depth"] for r in pts]
            axes[3].loglog(d, [r["replay_s"] for r in pts], fmt, color=color, label=f"{engine}: replay (s)")
            axes[3].loglog(d, [r["peak_rss_mb"] / 1e3 for r in pts], fmt.replace("o", "s"), color=color,
                           alpha=0.5, label=f"{engine}: peak RSS (GB)")
    axes[3].set(xlabel="chain depth", title="half-peak chain (DTR)")
    styles = {("native", "DTR"): ("#0072B2", "o-"), ("native", "LRU"): ("#009E73", "s-"),
              ("simrd", "DTR"): ("#D55E00", "o--"), ("simrd", "LRU"): ("#CC79A7", "s--")}
    for (engine, h), (color, fmt) in styles.items():
        pts = [r for r in chain if r["engine"] == engine and r["heuristic"] == h and r.get("finished")]
        if pts:
            d = [r["depth"] for r in pts]
            axes[0].loglog(d, [r["replay_s"] for r in pts], fmt, color=color, label=f"{engine} {h}")
            axes[1].loglog(d, [r["peak_rss_mb"] for r in pts], fmt, color=color, label=f"{engine} {h}")
    axes[0].set(xlabel="chain depth", ylabel="replay time (s)", title="time vs depth")
    axes[1].set(xlabel="chain depth", ylabel="peak RSS (MB)", title="memory vs depth")
    for engine, color in (("native", "#0072B2"), ("simrd", "#D55E00")):
        pts = [r for r in evictions if r["engine"] == engine and r.get("finished") and r["evictions"] > 0]
        if pts:
            axes[2].loglog([r["evictions"] for r in pts], [r["replay_s"] for r in pts], "o", color=color,
                           alpha=0.7, label=engine)
    axes[2].set(xlabel="evictions", ylabel="replay time (s)", title="time vs evictions (8 traces)")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    global REPEAT, MIN_TIME
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--axis", choices=["chain", "halfpeak", "shapes", "evictions", "regimes", "all"], default="all")
    ap.add_argument("--max-depth", type=int, default=DEPTHS[-1], help="deepest chain (default 10^6)")
    ap.add_argument("--limit", type=float, default=300.0, help="seconds per measured point")
    ap.add_argument("--simrd-max-depth", type=int, default=3_000, help="deepest chain given to simrd")
    ap.add_argument("--traces", default=",".join(TRACES))
    ap.add_argument("--no-simrd", action="store_true", help="skip the reference even if configured")
    ap.add_argument("--repeat", type=int, default=REPEAT,
                    help="engine replays per point at least (simrd: once); the minimum is kept")
    ap.add_argument("--min-time", type=float, default=MIN_TIME,
                    help="replay a point again until this many seconds are spent on it (at most 100 replays)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds of the regimes axis, taking its points in turn; each point keeps the median")
    ap.add_argument("--out", default="benchmarks/out/scaling")
    args = ap.parse_args()
    REPEAT, MIN_TIME = args.repeat, args.min_time
    if args.limit <= 0 or args.max_depth < 1 or args.repeat < 1 or args.rounds < 1 or args.min_time < 0:
        ap.error("--limit, --max-depth, --repeat and --rounds must be positive, --min-time not negative")
    with_ref = bool(os.environ.get("DTRLAB_SIMRD")) and not args.no_simrd
    chain, evictions, regimes, halfpeak, shapes = [], [], [], [], []
    if args.axis in ("regimes", "all"):
        regimes = regimes_axis(args.limit, args.rounds)
    with tempfile.TemporaryDirectory(prefix="dtrlab-scaling-") as work:
        depths = [d for d in DEPTHS if d <= args.max_depth]
        if args.axis in ("shapes", "all"):
            shapes = shapes_axis([d for d in SHAPE_DEPTHS if d <= args.max_depth], args.limit, with_ref,
                                 args.simrd_max_depth, Path(work))
        if args.axis in ("halfpeak", "all"):
            halfpeak = halfpeak_axis(depths, args.limit, with_ref, args.simrd_max_depth, Path(work))
        if args.axis in ("chain", "all"):
            chain = chain_axis(depths, args.limit, with_ref, args.simrd_max_depth, Path(work))
    if args.axis in ("evictions", "all"):
        evictions = evictions_axis([k for k in args.traces.split(",") if k], RATIOS, args.limit, with_ref)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = records.meta(limit_s=args.limit)
    if shapes:
        fits = shapes_fits(shapes)
        text = shapes_markdown(shapes, fits)
        shapes_out = out.with_name("shapes")
        shapes_out.with_suffix(".json").write_text(json.dumps({"meta": meta, "shapes": shapes, "slopes": fits},
                                                              indent=1) + "\n")
        shapes_out.with_suffix(".md").write_text(text)
        records.record("shapes", "Scaling: training-shaped graphs at half their peak", meta, text,
                       command=" ".join(["python", "benchmarks/bench_scaling.py", *sys.argv[1:]]))
        print(text)
        if args.axis == "shapes":
            return 0
    fits = summarize(chain, evictions, halfpeak)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "regimes": regimes, "halfpeak": halfpeak,
                                                    "chain": chain, "evictions": evictions, "slopes": fits},
                                                   indent=1) + "\n")
    text = markdown(chain, evictions, fits, regimes, halfpeak)
    out.with_suffix(".md").write_text(text)
    figure(chain, evictions, out.with_suffix(".png"), halfpeak)
    records.record("scaling", "Scaling: chain depth, half-peak chain, evictions, regimes", meta, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
