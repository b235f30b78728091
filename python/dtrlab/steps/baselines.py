"""Rules ``baseline`` and ``baselines``: each trace's infinite-budget figures,
then one table."""

from __future__ import annotations

from dtrlab import engine
from dtrlab.steps import Step, step
from dtrlab.steps.io import read_json, write_json, write_table


@step()
def baseline(s: Step) -> None:
    t = s.trace()
    record = {"trace": t.key, "start": t.start, **engine.baseline(t, engine=s.params.engine).to_dict()}
    write_json(s.output.record, record)


@step()
def baselines(s: Step) -> None:
    """The records as one tidy table (Parquet for programs, CSV for humans)."""
    import pandas as pd

    df = pd.DataFrame([read_json(p) for p in s.input.records])
    df = df[["trace"] + [c for c in df.columns if c != "trace"]]
    df = df.sort_values("trace", kind="stable").reset_index(drop=True)
    write_table(df, s.output.parquet, s.output.csv)
