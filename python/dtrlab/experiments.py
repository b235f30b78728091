"""The paper's experiments (claims C1-C6), one function per workflow rule.

Every function has the same shape, ``fn(inputs, outputs, params)``: it reads
its input files, computes, writes every output atomically, and records their
provenance. Rules call them as ``dtrlab task NAME --in ... --out ... --params
JSON``; the registry :data:`TASKS` lists them.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Callable

import pandas as pd

from dtrlab import engine, provenance, sweeps
from dtrlab.analysis import ablation, claims, forensics, inversions, regimes, reeviction
from dtrlab.atomic import write_text
from dtrlab.tasks import write_table


def _trace(path: str, params: dict) -> engine.Trace:
    """A task's trace, parsed as the workflow's baselines are (config
    engine.start: from the ANNOTATE START marker or not)."""
    return engine.load_trace(path, start=params["start"])


def _json_out(path, obj) -> None:
    write_text(path, provenance.canonical_json(obj))


def _read_json(path) -> dict:
    return json.loads(Path(path).read_text())


def sweep(inputs, outputs, params) -> None:
    """Replay a list of points of one trace: ``params.points`` [{heuristic, ratio, cap, seed}]."""
    trace = _trace(inputs[0], params)
    rows = sweeps.run_points(trace, params["points"], threads=params.get("threads"),
                             engine_name=params["engine"])
    write_table(sweeps.table(rows), outputs[0], outputs[1] if len(outputs) > 1 else None)


def concat(inputs, outputs, params) -> None:
    """Concatenate sweep chunks into one table, sorted by ``params.sort_by``."""
    df = pd.concat([pd.read_parquet(p) for p in inputs], ignore_index=True)
    df = df.sort_values(params.get("sort_by", ["heuristic", "seed", "ratio"]), kind="stable").reset_index(drop=True)
    write_table(df, outputs[0], outputs[1])


def c1_regimes(inputs, outputs, params) -> None:
    sweep_df = pd.read_parquet(inputs[0])
    summary = regimes.summarize(sweep_df, params["points"], params["min_gap"])
    classified, _ = regimes.classify(sweep_df, params["min_gap"])
    _json_out(outputs[0], summary)
    write_table(classified[["ratio", "budget", "status", "overhead", "evictions", "distinct_evicted",
                            "evictions_per_storage", "regime"]], outputs[1], outputs[2])


def c2_reeviction(inputs, outputs, params) -> None:
    trace = _trace(inputs[0], params)
    runs = {label: engine.simulate(trace, ratio=params[label], cap=params["cap"], heuristic=params["heuristic"],
                                   engine=params["engine"])
            for label in ("fast", "slow")}
    result = reeviction.compare(runs["fast"].evictions_by_storage, runs["slow"].evictions_by_storage)
    result["ratios"] = {k: params[k] for k in ("fast", "slow")}
    result["overheads"] = {k: r.overhead for k, r in runs.items()}
    _json_out(outputs[0], result)
    rows = []
    for label, r in runs.items():
        rows += reeviction.distribution_rows(f"{label} ({params[label]})", r.evictions_by_storage)
    write_table(pd.DataFrame(rows), outputs[1], outputs[2])


def c3_inversions(inputs, outputs, params) -> None:
    sweep_df = pd.read_parquet(inputs[0])
    summary = inversions.summarize(sweep_df)
    by_ratio = sweep_df.set_index("ratio")
    summary["overheads"] = {f"{r:.3f}": (None if pd.isna(by_ratio.overhead[r]) else float(by_ratio.overhead[r]))
                            for r in params["overhead_points"]}
    _json_out(outputs[0], summary)
    write_table(pd.DataFrame(summary["inversions"]).drop(columns=["statuses"], errors="ignore"),
                outputs[1], outputs[2])


def c4_forensics(inputs, outputs, params) -> None:
    trace = _trace(inputs[0], params)
    runs = [engine.simulate(trace, ratio=r, cap=params["cap"], heuristic=params["heuristic"],
                            engine=params["engine"])
            for r in params["ratios"]]
    _json_out(outputs[0], forensics.summarize(trace, runs))
    rows = [row for r in runs for row in forensics.held_frontier(trace, r)]
    cols = ["ratio", "storage_id", "bytes", "state", "tensor_name", "op_name"]
    write_table(pd.DataFrame(rows, columns=cols), outputs[1], outputs[2])


def c5_ablation(inputs, outputs, params) -> None:
    lstm, resnet = pd.read_parquet(inputs[0]), pd.read_parquet(inputs[1])
    table = ablation.per_heuristic(lstm, resnet, params["min_factor"])
    _json_out(outputs[0], ablation.conclusions(table))
    write_table(table, outputs[1], outputs[2])


def c6_determinism(inputs, outputs, params) -> None:
    """Each key point replayed ``repeats`` times (fresh trace loads) must agree."""
    rows = []
    for path, (key, ratio) in zip(inputs, params["points"]):
        digests = [engine.simulate(_trace(path, params), ratio=ratio, cap=params["cap"],
                                   heuristic=params["heuristic"], engine=params["engine"]).digest()
                   for _ in range(params["repeats"])]
        rows.append({"trace": key, "ratio": ratio, "repeats": len(digests), "distinct_digests": len(set(digests)),
                     "digest": digests[0]})
    _json_out(outputs[0], {"identical": all(r["distinct_digests"] == 1 for r in rows), "points": rows})
    write_table(pd.DataFrame(rows), outputs[1], outputs[2])


def claims_json(inputs, outputs, params) -> None:
    """inputs: c1, c2, c3, c4, c6 summaries, then the baseline records."""
    c1, c2, c3, c4, c6 = (_read_json(p) for p in inputs[:5])
    baselines = {rec["trace"]: rec for rec in (_read_json(p) for p in inputs[5:])}
    _json_out(outputs[0], claims.flatten(c1, c2, c3, c4, c6, baselines))


def claims_check(inputs, outputs, params) -> None:
    """inputs: claims.json, the published values (YAML)."""
    import yaml

    computed = _read_json(inputs[0])
    published = yaml.safe_load(Path(inputs[1]).read_text())
    rows = claims.check(computed, published)
    df = pd.DataFrame(rows)
    df["published"] = df.published.astype(str)
    df["computed"] = df.computed.astype(str)
    write_table(df, outputs[0], outputs[1])
    n_ok = int(df.match.sum())
    lines = [f"# Claims check: {n_ok} of {len(df)} published values matched", "",
             "| claim | value | published | computed | match | difference |", "|---|---|---|---|---|---|"]
    for r in rows:
        diff = "" if r["difference"] in (None, 0.0) else f"{r['difference']:.3g}"
        lines.append(f"| {r['claim']} | {r['key']} | {r['published']} | {r['computed']} | "
                     f"{'yes' if r['match'] else 'NO'} | {diff} |")
    write_text(outputs[2], "\n".join(lines) + "\n")


def atlas_chunk(inputs, outputs, params) -> None:
    """One chunk of a trace's budget range, mapped into execution classes."""
    from dtrlab import atlas

    trace = _trace(inputs[0], params)
    peak = engine.baseline(trace).peak
    lo_b, hi_b = atlas.chunk_range(engine.budget_for_ratio(peak, params["lo"]),
                                   engine.budget_for_ratio(peak, params["hi"]), params["chunk"],
                                   params["chunks"])
    a = atlas.build(trace, lo_b, hi_b, heuristic=params["heuristic"], cap=params["cap"],
                    max_runs=params["max_runs"], time_limit=params["time_limit"], grid=params["grid"],
                    max_total_runs=params["max_total_runs"], edge_runs=params["edge_runs"],
                    max_work=params["max_work"], resolve=params["resolve"],
                    log=lambda line: print(line, file=sys.stderr, flush=True))
    print(f"{a.runs} runs, work {a.work:.1f}, {len(a.classes)} classes, {len(a.holes())} holes", file=sys.stderr)
    _json_out(outputs[0], a.to_dict())


def atlas_merge(inputs, outputs, params) -> None:
    """inputs: the trace, then its chunks. outputs: atlas JSON, classes
    (parquet, csv), holes (parquet, csv)."""
    from dtrlab import atlas

    trace = _trace(inputs[0], params)
    a = atlas.combine([atlas.from_dict(_read_json(p)) for p in inputs[1:]])
    forensics = [atlas.hole_forensics(trace, a, h) for h in a.holes()] if params["forensics"] else None
    doc = a.to_dict()
    doc["forensics"] = forensics
    _json_out(outputs[0], doc)
    classes = pd.DataFrame([{**{k: v for k, v in c.items() if k != "interval"}, "trace": a.trace,
                             "heuristic": a.heuristic} for c in doc["classes"]])
    classes["lo_ratio"] = classes.lo / a.peak
    classes["hi_ratio"] = classes.hi / a.peak
    write_table(classes, outputs[1], outputs[2])
    cols = ["trace", "heuristic", "lo", "hi", "bytes_wide", "lo_ratio", "hi_ratio", "below_ok_budget",
            "above_ok_budget", "statuses", "exact"]
    write_table(pd.DataFrame(atlas.holes_table(a, forensics), columns=None) if a.holes()
                else pd.DataFrame(columns=cols), outputs[3], outputs[4])


def atlas_report(inputs, outputs, params) -> None:
    """inputs: every atlas JSON. outputs: figure (pdf, png), holes (csv, tex)."""
    from dtrlab import atlas
    from dtrlab.report import figures, tables

    atlases = [(atlas.from_dict(d), d) for d in (_read_json(p) for p in inputs)]
    figures.atlas_figure([a for a, _ in atlases], outputs[0], outputs[1])
    rows = [row for a, d in atlases for row in atlas.holes_table(a, d.get("forensics"))]
    df = pd.DataFrame(rows, columns=["trace", "heuristic", "lo", "hi", "bytes_wide", "lo_ratio", "hi_ratio",
                                     "below_ok_budget", "above_ok_budget", "statuses", "exact"] if not rows else None)
    with_fx = [c for c in ("retention_removes_oom",) if c in df.columns]
    write_text(outputs[2], df.to_csv(index=False, lineterminator="\n"))
    write_text(outputs[3], tables.holes(df, with_fx))


def paper_tables(inputs, outputs, params) -> None:
    """inputs: baselines table, C1 table, C2, C4, C5 table, claims check, then
    every atlas JSON. outputs: the tables named in :data:`PAPER_TABLES` order."""
    from dtrlab.report import tables

    base, c1, c2, c4, c5, check, *atlases = inputs
    texts = {
        "baselines": tables.baselines(pd.read_parquet(base)),
        "lstm_points": tables.lstm_points(pd.read_parquet(c1), params["lstm_points"]),
        "reeviction": tables.reeviction(_read_json(c2)),
        "forensics": tables.forensics(_read_json(c4)),
        "ablation": tables.ablation(pd.read_parquet(c5)),
        "claims_check": tables.claims_check(pd.read_parquet(check)),
        "atlas_summary": tables.atlas_summary([_read_json(p) for p in atlases]),
    }
    for name, out in zip(PAPER_TABLES, outputs, strict=True):
        write_text(out, texts[name])


#: The generated tables, in the order of the ``paper_tables`` outputs.
PAPER_TABLES = ("baselines", "lstm_points", "reeviction", "forensics", "ablation", "claims_check", "atlas_summary")


def paper_macros(inputs, outputs, params) -> None:
    """inputs: C1 summary and table, C2, C3, ResNet-32 sweep, C4, C5 summary
    and table, C6, claims check, then ``params.baselines`` baseline records,
    then the atlas JSONs. output: macros.tex."""
    from dtrlab.report import macros

    c1, c1_table, c2, c3, sweep, c4, c5, c5_table, c6, check, *rest = inputs
    n = params["baselines"]
    found = macros.collect(c1=c1, c1_table=c1_table, c2=c2, c3=c3, resnet_sweep=sweep, c4=c4, c5=c5,
                           c5_table=c5_table, c6=c6, claims_check_table=check, baseline_records=rest[:n],
                           atlases=rest[n:])
    write_text(outputs[0], macros.render(found))


def paper(inputs, outputs, params) -> None:
    """inputs: main.tex, references.bib, then the generated files in
    :data:`dtrlab.report.paper.LAYOUT` order (the rule lists them from it)."""
    from dtrlab.report import paper as latex

    main, bib, *generated = inputs
    files = dict(zip(latex.LAYOUT, generated))
    misplaced = [f"{dest} <- {path}" for (dest, src), path in zip(latex.LAYOUT.items(), generated)
                 if not Path(path).as_posix().endswith("/" + src)]
    if len(generated) != len(latex.LAYOUT) or misplaced:
        raise ValueError(f"paper: the generated files must come in LAYOUT order ({len(generated)} given, "
                         f"{len(latex.LAYOUT)} read; misplaced: {misplaced[:3]})")
    # `git describe` may name a tag with characters TeX must not see.
    code = re.sub(r"[^\w.+-]", "-", params["code"], flags=re.ASCII)[:100] or "unknown"
    latex.build(main, bib, files, outputs[0], code_version=code)


TASKS: dict[str, Callable] = {
    "sweep": sweep,
    "concat": concat,
    "c1_regimes": c1_regimes,
    "c2_reeviction": c2_reeviction,
    "c3_inversions": c3_inversions,
    "c4_forensics": c4_forensics,
    "c5_ablation": c5_ablation,
    "c6_determinism": c6_determinism,
    "claims": claims_json,
    "claims_check": claims_check,
    "atlas_chunk": atlas_chunk,
    "atlas_merge": atlas_merge,
    "atlas_report": atlas_report,
    "paper_tables": paper_tables,
    "paper_macros": paper_macros,
    "paper": paper,
}


def run(name: str, inputs: list[str], outputs: list[str], params: dict, rule: str | None = None) -> None:
    """Run task ``name`` and record the provenance of its outputs."""
    recorded = {k: v for k, v in params.items() if k not in ("threads",)}
    with provenance.recording(outputs, rule or name, inputs=inputs, params=recorded):
        TASKS[name](inputs, outputs, params)
