# The paper's experiments: sweeps in parallel chunks, then one rule per claim
# (C1-C6), the claims file and its check against the published values.
# Each rule's step is the function of the same name in dtrlab.steps.experiments.


rule sweep_chunk:
    input:
        trace=lambda wc: trace_file(SWEEPS[wc.sweep]["trace"]),
        engine=engine_inputs,
    output:
        table=f"{RESULTS}/sweeps/{{sweep}}/chunk-{{chunk}}.parquet",
    log:
        f"{RESULTS}/logs/sweeps/{{sweep}}/chunk-{{chunk}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/sweeps/{{sweep}}/chunk-{{chunk}}.tsv"
    threads: EXP["threads"]
    params:
        points=lambda wc: sweep_chunks(wc.sweep)[int(wc.chunk)],
        engine=ENGINE,
        start=START,
    script:
        STEP


rule sweep:
    input:
        chunks=sweep_chunk_files,
    output:
        parquet=f"{RESULTS}/sweeps/{{sweep}}.parquet",
        csv=f"{RESULTS}/sweeps/{{sweep}}.csv",
    log:
        f"{RESULTS}/logs/sweeps/{{sweep}}.log",
    script:
        STEP


rule c1_regimes:
    input:
        sweep=f"{RESULTS}/sweeps/lstm_dtr.parquet",
    output:
        summary=f"{RESULTS}/claims/c1_regimes.json",
        parquet=f"{RESULTS}/claims/c1_regimes.parquet",
        csv=f"{RESULTS}/claims/c1_regimes.csv",
    log:
        f"{RESULTS}/logs/claims/c1_regimes.log",
    params:
        points=EXP["lstm_regimes"]["points"],
        min_gap=EXP["lstm_regimes"]["min_gap"],
    script:
        STEP


rule c2_reeviction:
    input:
        trace=trace_file("lstm"),
        engine=engine_inputs,
    output:
        summary=f"{RESULTS}/claims/c2_reeviction.json",
        parquet=f"{RESULTS}/claims/c2_eviction_counts.parquet",
        csv=f"{RESULTS}/claims/c2_eviction_counts.csv",
    log:
        f"{RESULTS}/logs/claims/c2_reeviction.log",
    params:
        fast=EXP["reeviction"]["fast"],
        slow=EXP["reeviction"]["slow"],
        heuristic=HEURISTIC,
        cap=CAP,
        engine=ENGINE,
        start=START,
    script:
        STEP


rule c3_inversions:
    input:
        sweep=f"{RESULTS}/sweeps/resnet32_dtr.parquet",
    output:
        summary=f"{RESULTS}/claims/c3_inversions.json",
        parquet=f"{RESULTS}/claims/c3_inversions.parquet",
        csv=f"{RESULTS}/claims/c3_inversions.csv",
    log:
        f"{RESULTS}/logs/claims/c3_inversions.log",
    params:
        overhead_points=EXP["resnet32_sweep"]["overhead_points"],
    script:
        STEP


rule c4_forensics:
    input:
        trace=trace_file("resnet32"),
        engine=engine_inputs,
    output:
        summary=f"{RESULTS}/claims/c4_forensics.json",
        parquet=f"{RESULTS}/claims/c4_held_frontier.parquet",
        csv=f"{RESULTS}/claims/c4_held_frontier.csv",
    log:
        f"{RESULTS}/logs/claims/c4_forensics.log",
    params:
        ratios=EXP["forensics"]["ratios"],
        heuristic=HEURISTIC,
        cap=CAP,
        engine=ENGINE,
        start=START,
    script:
        STEP


rule c5_ablation:
    input:
        lstm=f"{RESULTS}/sweeps/ablation_lstm.parquet",
        resnet32=f"{RESULTS}/sweeps/ablation_resnet32.parquet",
    output:
        summary=f"{RESULTS}/claims/c5_ablation.json",
        parquet=f"{RESULTS}/claims/c5_ablation.parquet",
        csv=f"{RESULTS}/claims/c5_ablation.csv",
    log:
        f"{RESULTS}/logs/claims/c5_ablation.log",
    params:
        min_factor=EXP["ablation"]["min_factor"],
    script:
        STEP


rule c6_determinism:
    input:
        # One per point, in the points' order.
        traces=[trace_file(k) for k, _ in EXP["determinism"]["points"]],
        engine=engine_inputs,
    output:
        summary=f"{RESULTS}/claims/c6_determinism.json",
        parquet=f"{RESULTS}/claims/c6_determinism.parquet",
        csv=f"{RESULTS}/claims/c6_determinism.csv",
    log:
        f"{RESULTS}/logs/claims/c6_determinism.log",
    params:
        points=EXP["determinism"]["points"],
        repeats=EXP["determinism"]["repeats"],
        heuristic=HEURISTIC,
        cap=CAP,
        engine=ENGINE,
        start=START,
    script:
        STEP


rule claims:
    input:
        c1=rules.c1_regimes.output.summary,
        c2=rules.c2_reeviction.output.summary,
        c3=rules.c3_inversions.output.summary,
        c4=rules.c4_forensics.output.summary,
        c6=rules.c6_determinism.output.summary,
        baselines=[f"{RESULTS}/baselines/{t}.json" for t in ("lstm", "resnet32")],
    output:
        claims=f"{RESULTS}/claims.json",
    log:
        f"{RESULTS}/logs/claims/claims.log",
    script:
        STEP


rule claims_check:
    input:
        claims=rules.claims.output.claims,
        published=workflow.source_path("../../config/paper_claims.yaml"),
    output:
        parquet=f"{RESULTS}/claims/claims_check.parquet",
        csv=f"{RESULTS}/claims/claims_check.csv",
        md=f"{RESULTS}/claims/claims_check.md",
    log:
        f"{RESULTS}/logs/claims/claims_check.log",
    script:
        STEP


ARTIFACTS["experiments"] = [
    *expand(rules.sweep.output, sweep=sorted(SWEEPS)),
    *rules.c1_regimes.output,
    *rules.c2_reeviction.output,
    *rules.c3_inversions.output,
    *rules.c4_forensics.output,
    *rules.c5_ablation.output,
    *rules.c6_determinism.output,
    *rules.claims.output,
    *rules.claims_check.output,
]
