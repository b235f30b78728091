# Infinite-budget baselines (peak, compute, const, bottleneck): one job per
# trace, then one table.


rule baseline:
    input:
        trace=trace_input,
        engine=engine_inputs,
    output:
        f"{RESULTS}/baselines/{{trace}}.json",
    log:
        f"{RESULTS}/logs/baseline/{{trace}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/baseline/{{trace}}.tsv"
    params:
        start=["--start"] if config["engine"]["start"] else [],
        engine=engine_args(),
        rule="baseline",
    shell:
        "dtrlab baseline {input.trace:q} {params.start:q} {params.engine:q} --out {output:q} "
        "--rule {params.rule:q} > {log:q} 2>&1"


rule baselines:
    input:
        expand(rules.baseline.output, trace=TRACES),
    output:
        parquet=f"{RESULTS}/baselines/baselines.parquet",
        csv=f"{RESULTS}/baselines/baselines.csv",
    log:
        f"{RESULTS}/logs/baselines.log",
    params:
        rule="baselines",
    shell:
        "dtrlab tabulate {input:q} --parquet {output.parquet:q} --csv {output.csv:q} "
        "--rule {params.rule:q} > {log:q} 2>&1"


ARTIFACTS["baselines"] = [
    *expand(rules.baseline.output, trace=TRACES),
    *rules.baselines.output,
]
