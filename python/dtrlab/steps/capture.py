"""Rules ``capture_trace`` (a model captured from stock PyTorch) and
``compare`` (every trace, public and captured, side by side)."""

from __future__ import annotations

import pandas as pd

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
def compare(s: Step) -> None:
    from dtrlab.analysis import compare as cmp
    from dtrlab.report.compare_figure import compare_figure

    traces = list(s.params.traces)
    sweeps = {t: pd.read_parquet(p) for t, p in zip(traces, s.input.sweeps, strict=True)}
    baselines = {t: read_json(p) for t, p in zip(traces, s.input.baselines, strict=True)}
    # The atlas of the sweeps' heuristic, where the trace has one.
    heuristic = sweeps[traces[0]].heuristic.iloc[0]
    atlases = {a["trace"]: a for a in map(read_json, s.input.atlases) if a["heuristic"] == heuristic}
    df = cmp.table(traces, set(s.params.captured), sweeps, baselines, atlases, s.params.min_gap)
    write_table(df, s.output.parquet, s.output.csv)
    compare_figure(sweeps, set(s.params.captured), s.output.pdf, s.output.png)
