"""Rules of the study in a real runtime: ``runtime_study`` (one workload:
its plan, the simulator's sweep of it, the runtime at the chosen budgets)
and ``runtime_report`` (every workload: the table, figure and macros of the
paper's section). Steps of workflow/rules/runtime.smk."""

from __future__ import annotations

import pandas as pd

from dtrlab.atomic import write_text
from dtrlab.grids import expand_ratios
from dtrlab.steps import Step, step
from dtrlab.steps.io import write_json, write_table


@step()
def runtime_study(s: Step) -> None:
    from dtrlab.runtime import study  # the capture extra (torch)

    p = s.params
    st = study.Settings(ratios=expand_ratios(p.ratios), fine_step=p.fine_step, min_gap=p.min_gap,
                        max_budgets=p.max_budgets, heuristic=p.heuristic, cap=p.cap,
                        optimizer_step=p.optimizer_step, threads=p.threads or s.threads, atlas=dict(p.atlas))
    out = study.study(p.workload, dict(p.sizes), st)
    write_text(s.output.plan, out["text"])
    write_json(s.output.atlas, out["atlas"])
    write_table(out["sweep"], s.output.sweep)
    write_table(out["decisions"], s.output.decisions, s.output.decisions_csv)
    write_table(out["plan"], s.output.summary)
    write_table(out["measured"], s.output.measured, s.output.measured_csv)
    d = out["decisions"]
    print(f"{p.workload}: {len(d)} budgets, {int(d.same_decisions.sum())} with the simulator's decisions, "
          f"{int((d.equal == True).sum())} of {int((d.status == 'ok').sum())} ok runs bitwise equal")  # noqa: E712


@step()
def runtime_report(s: Step) -> None:
    from dtrlab.analysis import runtime as analysis
    from dtrlab.report import runtime as report

    decisions = pd.concat([pd.read_parquet(p) for p in s.input.decisions], ignore_index=True)
    measured = pd.concat([pd.read_parquet(p) for p in s.input.measured], ignore_index=True)
    plans = pd.concat([pd.read_parquet(p) for p in s.input.summaries], ignore_index=True)
    sweeps = pd.concat([pd.read_parquet(p) for p in s.input.sweeps], ignore_index=True)
    table = analysis.summary(decisions, measured, plans, s.params.min_gap)
    write_table(table, s.output.parquet, s.output.csv)
    write_text(s.output.table, report.table(table))
    write_text(s.output.macros, report.macros(table, decisions, measured, s.params.min_gap))
    report.figure(sweeps, decisions, measured, s.output.pdf, s.output.png)
