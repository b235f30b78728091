"""Rules ``capture_trace`` (a model captured from stock PyTorch),
``compare_refine`` (a trace's comparison sweep refined where it changes) and
``compare`` (every trace, public and captured, side by side)."""

from __future__ import annotations

import pandas as pd

from dtrlab import sweeps
from dtrlab.analysis import refine
from dtrlab.steps import Step, step
from dtrlab.steps.io import read_json, write_table


@step()
def capture_trace(s: Step) -> None:
    from dtrlab import capture  # the capture extra (torch)

    model = s.params.model
    c = capture.capture_workload(capture.load_workload(model, s.params.batch),
                                 optimizer_step=s.params.optimizer_step)
    capture.write_trace(c.text, s.output.trace)
    print(f"{model}: {c.operators} operators, peak of live storages {c.live_peak:,} B")


@step()
def compare_refine(s: Step) -> None:
    """The coarse sweep, plus the budgets of the fine grid between adjacent
    coarse budgets whose outcome or regime differ or that hold a hole of the
    trace's atlas (column ``fine``)."""
    coarse = pd.read_parquet(s.input.sweep)
    holes = [h for path in s.input.atlas for h in refine.hole_ratios(read_json(path))]
    spans = refine.windows(coarse, s.params.min_gap, holes)
    known = set(coarse.ratio)
    ratios = [r for r in refine.fine_ratios(spans, s.params.step) if r not in known]
    print(f"{len(spans)} windows to refine: " + ", ".join(f"{a:g}-{b:g}" for a, b in spans))
    points = [{"heuristic": s.params.heuristic, "ratio": r, "cap": s.params.cap, "seed": 0} for r in ratios]
    fine = sweeps.table(sweeps.run_points(s.trace(), points, threads=s.threads, engine_name=s.params.engine))
    parts = [coarse.assign(fine=False)] + ([fine.assign(fine=True)] if len(fine) else [])
    df = pd.concat(parts, ignore_index=True).sort_values("ratio", kind="stable").reset_index(drop=True)
    write_table(df, s.output.parquet, s.output.csv)


@step()
def compare(s: Step) -> None:
    from dtrlab.analysis import compare as cmp
    from dtrlab.report.compare_figure import compare_figure

    traces = list(s.params.traces)
    by_trace = {t: pd.read_parquet(p) for t, p in zip(traces, s.input.sweeps, strict=True)}
    baselines = {t: read_json(p) for t, p in zip(traces, s.input.baselines, strict=True)}
    # The atlas of the sweeps' heuristic, where the trace has one.
    heuristic = by_trace[traces[0]].heuristic.iloc[0]
    atlases = {a["trace"]: a for a in map(read_json, s.input.atlases) if a["heuristic"] == heuristic}
    df = cmp.table(traces, set(s.params.captured), by_trace, baselines, atlases, s.params.min_gap)
    write_table(df, s.output.parquet, s.output.csv)
    compare_figure(by_trace, set(s.params.captured), s.output.pdf, s.output.png)
