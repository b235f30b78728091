# In a real runtime (config runtime): each workload's training step under
# budgets, tensors really freed and recomputed by dtrlab.runtime, at budgets
# bracketing the changes the simulator finds on the step's own trace
# (runtime_study), then the paper's table, figure and macros (runtime_report).
# What was measured (times, bytes, the measured mode) is under
# results/runtime/measured/: it differs from run to run (dtrlab verify
# --against reports it as measurements). Steps: dtrlab.steps.runtime.

RUNTIME = config["runtime"]


wildcard_constraints:
    workload="[a-z0-9_]+",


rule runtime_study:
    output:
        plan=f"{RESULTS}/runtime/{{workload}}/plan.log",
        sweep=f"{RESULTS}/runtime/{{workload}}/sweep.parquet",
        atlas=f"{RESULTS}/runtime/{{workload}}/atlas.json",
        decisions=f"{RESULTS}/runtime/{{workload}}/decisions.parquet",
        decisions_csv=f"{RESULTS}/runtime/{{workload}}/decisions.csv",
        summary=f"{RESULTS}/runtime/{{workload}}/summary.parquet",
        measured=f"{RESULTS}/runtime/measured/{{workload}}.parquet",
        measured_csv=f"{RESULTS}/runtime/measured/{{workload}}.csv",
    log:
        f"{RESULTS}/logs/runtime/{{workload}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/runtime/{{workload}}.tsv"
    # Every core: its wall-clock times are measured without a neighbour, and
    # its operators run on them all (runtime.threads: null).
    threads: workflow.cores
    params:
        workload=lambda wc: wc.workload,
        sizes=lambda wc: RUNTIME["sizes"].get(wc.workload, {}),
        ratios=RUNTIME["ratios"],
        fine_step=RUNTIME["fine_step"],
        min_gap=RUNTIME["min_gap"],
        max_budgets=RUNTIME["max_budgets"],
        atlas=RUNTIME["atlas"],
        threads=RUNTIME["threads"],
        heuristic=HEURISTIC,
        cap=CAP,
        optimizer_step=CAPTURE["optimizer_step"],
    script:
        STEP


rule runtime_report:
    input:
        decisions=expand(
            rules.runtime_study.output.decisions, workload=RUNTIME["workloads"]
        ),
        measured=expand(
            rules.runtime_study.output.measured, workload=RUNTIME["workloads"]
        ),
        summaries=expand(
            rules.runtime_study.output.summary, workload=RUNTIME["workloads"]
        ),
        sweeps=expand(rules.runtime_study.output.sweep, workload=RUNTIME["workloads"]),
    output:
        parquet=f"{RESULTS}/runtime/measured/summary.parquet",
        csv=f"{RESULTS}/runtime/measured/summary.csv",
        table=f"{RESULTS}/runtime/measured/runtime.tex",
        macros=f"{RESULTS}/runtime/measured/macros.tex",
        pdf=f"{RESULTS}/runtime/measured/runtime.pdf",
        png=report(
            f"{RESULTS}/runtime/measured/runtime.png",
            caption="../report/runtime.rst",
            category="Figures",
            labels={"figure": "runtime"},
        ),
    log:
        f"{RESULTS}/logs/runtime/report.log",
    params:
        min_gap=RUNTIME["min_gap"],
    script:
        STEP


# One target: the section's figure and everything it needs.
rule fig_runtime:
    input:
        rules.runtime_report.output.pdf,


ARTIFACTS["runtime"] = [
    *[
        f
        for w in RUNTIME["workloads"]
        for f in expand(rules.runtime_study.output, workload=w)
    ],
    *rules.runtime_report.output,
]
