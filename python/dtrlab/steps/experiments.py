"""Rules of the paper's experiments: sweeps in chunks, one step per claim
(C1-C6), the claims file and its check against the published values."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dtrlab import engine, sweeps
from dtrlab.analysis import ablation, decisions, forensics, inversions, regimes, reeviction
from dtrlab.analysis import claims as claim_values
from dtrlab.atomic import write_text
from dtrlab.steps import Step, step
from dtrlab.steps.io import read_json, write_json, write_table


@step()
def sweep_chunk(s: Step) -> None:
    """Replay points ``{heuristic, ratio, cap, seed}`` of one trace on the job's threads."""
    rows = sweeps.run_points(s.trace(), s.params.points, threads=s.threads, engine_name=s.params.engine)
    write_table(sweeps.table(rows), s.output.table)


@step()
def sweep(s: Step) -> None:
    """The chunks as one table, sorted by heuristic, seed and ratio."""
    write_table(sweeps.merge(pd.read_parquet(p) for p in s.input.chunks), s.output.parquet, s.output.csv)


def _run(s: Step, t: engine.Trace, ratio: float, explain: bool = False) -> engine.SimResult:
    """A replay under the configured heuristic, cap and engine (``explain``:
    with each decision's forensics)."""
    return engine.simulate(t, ratio=ratio, cap=s.params.cap, heuristic=s.params.heuristic, engine=s.params.engine,
                           explain=explain)


@step()
def c1_regimes(s: Step) -> None:
    sweep_df = pd.read_parquet(s.input.sweep)
    summary = regimes.summarize(sweep_df, s.params.points, s.params.min_gap)
    classified, _ = regimes.classify(sweep_df, s.params.min_gap)
    write_json(s.output.summary, summary)
    write_table(classified[["ratio", "budget", "status", "overhead", "evictions", "distinct_evicted",
                            "evictions_per_storage", "regime"]], s.output.parquet, s.output.csv)


@step()
def c2_reeviction(s: Step) -> None:
    t = s.trace()
    ratios = {"fast": s.params.fast, "slow": s.params.slow}
    # Which decision differs first, and why: forensics only the native engine keeps.
    explained = s.params.engine == "native"
    runs = {label: _run(s, t, r, explain=explained) for label, r in ratios.items()}
    result = reeviction.compare(runs["fast"].evictions_by_storage, runs["slow"].evictions_by_storage)
    result["ratios"] = ratios
    result["overheads"] = {k: r.overhead for k, r in runs.items()}
    result["divergence"] = decisions.first_divergence(t, runs, s.params.heuristic) if explained else None
    result["margins"] = {k: decisions.margins(r.events) for k, r in runs.items()} if explained else None
    write_json(s.output.summary, result)
    rows = []
    for label, r in runs.items():
        rows += reeviction.distribution_rows(f"{label} ({ratios[label]})", r.evictions_by_storage)
    write_table(pd.DataFrame(rows), s.output.parquet, s.output.csv)


@step()
def c3_inversions(s: Step) -> None:
    sweep_df = pd.read_parquet(s.input.sweep)
    summary = inversions.summarize(sweep_df)
    by_ratio = sweep_df.set_index("ratio")
    summary["overheads"] = {f"{r:.3f}": (None if pd.isna(by_ratio.overhead[r]) else float(by_ratio.overhead[r]))
                            for r in s.params.overhead_points}
    write_json(s.output.summary, summary)
    write_table(pd.DataFrame(summary["inversions"]).drop(columns=["statuses"], errors="ignore"),
                s.output.parquet, s.output.csv)


@step()
def c4_forensics(s: Step) -> None:
    t = s.trace()
    runs = [_run(s, t, r) for r in s.params.ratios]
    write_json(s.output.summary, forensics.summarize(t, runs))
    rows = [row for r in runs for row in forensics.held_frontier(t, r)]
    cols = ["ratio", "storage_id", "bytes", "state", "tensor_name", "op_name"]
    write_table(pd.DataFrame(rows, columns=cols), s.output.parquet, s.output.csv)


@step()
def c5_ablation(s: Step) -> None:
    table = ablation.per_heuristic(pd.read_parquet(s.input.lstm), pd.read_parquet(s.input.resnet32),
                                   s.params.min_factor)
    write_json(s.output.summary, ablation.conclusions(table))
    write_table(table, s.output.parquet, s.output.csv)


@step()
def c6_determinism(s: Step) -> None:
    """Each key point replayed ``repeats`` times (fresh trace loads) must agree."""
    points = s.params.points  # [[trace key, ratio]], the traces input in the same order
    if len(points) != len(s.input.traces):
        raise ValueError(f"{len(points)} points but {len(s.input.traces)} traces")
    rows = []
    for path, (key, ratio) in zip(s.input.traces, points):
        digests = [_run(s, engine.load_trace(path, start=s.params.start), ratio).digest()
                   for _ in range(s.params.repeats)]
        rows.append({"trace": key, "ratio": ratio, "repeats": len(digests), "distinct_digests": len(set(digests)),
                     "digest": digests[0]})
    write_json(s.output.summary, {"identical": all(r["distinct_digests"] == 1 for r in rows), "points": rows})
    write_table(pd.DataFrame(rows), s.output.parquet, s.output.csv)


@step()
def claims(s: Step) -> None:
    """Every claim's figures in one flat file (``claims.json``)."""
    c1, c2, c3, c4, c6 = (read_json(s.input[k]) for k in ("c1", "c2", "c3", "c4", "c6"))
    baselines = {rec["trace"]: rec for rec in map(read_json, s.input.baselines)}
    write_json(s.output.claims, claim_values.flatten(c1, c2, c3, c4, c6, baselines))


@step()
def claims_check(s: Step) -> None:
    from dtrlab.config import load_yaml

    computed = read_json(s.input.claims)
    published = load_yaml(Path(s.input.published).read_text())
    rows = claim_values.check(computed, published)
    df = pd.DataFrame(rows)
    df["published"] = df.published.astype(str)
    df["computed"] = df.computed.astype(str)
    write_table(df, s.output.parquet, s.output.csv)
    n_ok = int(df.match.sum())
    lines = [f"# Claims check: {n_ok} of {len(df)} published values matched", "",
             "| claim | value | published | computed | match | difference |", "|---|---|---|---|---|---|"]
    for r in rows:
        diff = "" if r["difference"] in (None, 0.0) else f"{r['difference']:.3g}"
        lines.append(f"| {r['claim']} | {r['key']} | {r['published']} | {r['computed']} | "
                     f"{'yes' if r['match'] else 'NO'} | {diff} |")
    write_text(s.output.md, "\n".join(lines) + "\n")
