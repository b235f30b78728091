# Infinite-budget baselines (peak, compute, const, bottleneck): one job per
# trace, then one table (steps in dtrlab.steps.baselines).


rule baseline:
    input:
        trace=trace_input,
        engine=engine_inputs,
    output:
        record=f"{RESULTS}/baselines/{{trace}}.json",
    log:
        f"{RESULTS}/logs/baseline/{{trace}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/baseline/{{trace}}.tsv"
    params:
        engine=ENGINE,
        start=START,
    script:
        STEP


rule baselines:
    input:
        records=expand(rules.baseline.output.record, trace=TRACES),
    output:
        parquet=f"{RESULTS}/baselines/baselines.parquet",
        csv=f"{RESULTS}/baselines/baselines.csv",
    log:
        f"{RESULTS}/logs/baselines.log",
    script:
        STEP


ARTIFACTS["baselines"] = [
    *expand(rules.baseline.output, trace=TRACES),
    *rules.baselines.output,
]
