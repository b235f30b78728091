# The paper's experiments: sweeps in parallel chunks, then one rule per claim
# (C1-C6), the claims file and its check against the published values.


rule sweep_chunk:
    input:
        trace=lambda wc: trace_file(SWEEPS[wc.sweep]["trace"]),
        engine=engine_inputs,
    output:
        f"{RESULTS}/sweeps/{{sweep}}/chunk-{{chunk}}.parquet",
    log:
        f"{RESULTS}/logs/sweeps/{{sweep}}/chunk-{{chunk}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/sweeps/{{sweep}}/chunk-{{chunk}}.tsv"
    threads: EXP["threads"]
    params:
        spec=lambda wc, threads: task_params(
            points=sweep_chunks(wc.sweep)[int(wc.chunk)], threads=threads
        ),
        rule="sweep_chunk",
    shell:
        "dtrlab task sweep --in {input.trace:q} --out {output:q} "
        "--params {params.spec:q} --rule {params.rule:q} > {log:q} 2>&1"


rule sweep:
    input:
        sweep_chunk_files,
    output:
        parquet=f"{RESULTS}/sweeps/{{sweep}}.parquet",
        csv=f"{RESULTS}/sweeps/{{sweep}}.csv",
    log:
        f"{RESULTS}/logs/sweeps/{{sweep}}.log",
    params:
        rule="sweep",
    shell:
        "dtrlab task concat --in {input:q} --out {output.parquet:q} {output.csv:q} "
        "--rule {params.rule:q} > {log:q} 2>&1"


rule c1_regimes:
    input:
        f"{RESULTS}/sweeps/lstm_dtr.parquet",
    output:
        summary=f"{RESULTS}/claims/c1_regimes.json",
        parquet=f"{RESULTS}/claims/c1_regimes.parquet",
        csv=f"{RESULTS}/claims/c1_regimes.csv",
    log:
        f"{RESULTS}/logs/claims/c1_regimes.log",
    params:
        spec=task_params(
            points=EXP["lstm_regimes"]["points"],
            min_gap=EXP["lstm_regimes"]["min_gap"],
        ),
        rule="c1_regimes",
    shell:
        "dtrlab task c1_regimes --in {input:q} --out {output.summary:q} {output.parquet:q} "
        "{output.csv:q} --params {params.spec:q} --rule {params.rule:q} > {log:q} 2>&1"


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
        spec=task_params(
            fast=EXP["reeviction"]["fast"],
            slow=EXP["reeviction"]["slow"],
            heuristic=HEURISTIC,
            cap=CAP,
        ),
        rule="c2_reeviction",
    shell:
        "dtrlab task c2_reeviction --in {input.trace:q} --out {output.summary:q} {output.parquet:q} "
        "{output.csv:q} --params {params.spec:q} --rule {params.rule:q} > {log:q} 2>&1"


rule c3_inversions:
    input:
        f"{RESULTS}/sweeps/resnet32_dtr.parquet",
    output:
        summary=f"{RESULTS}/claims/c3_inversions.json",
        parquet=f"{RESULTS}/claims/c3_inversions.parquet",
        csv=f"{RESULTS}/claims/c3_inversions.csv",
    log:
        f"{RESULTS}/logs/claims/c3_inversions.log",
    params:
        spec=task_params(overhead_points=EXP["resnet32_sweep"]["overhead_points"]),
        rule="c3_inversions",
    shell:
        "dtrlab task c3_inversions --in {input:q} --out {output.summary:q} {output.parquet:q} "
        "{output.csv:q} --params {params.spec:q} --rule {params.rule:q} > {log:q} 2>&1"


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
        spec=task_params(
            ratios=EXP["forensics"]["ratios"], heuristic=HEURISTIC, cap=CAP
        ),
        rule="c4_forensics",
    shell:
        "dtrlab task c4_forensics --in {input.trace:q} --out {output.summary:q} {output.parquet:q} "
        "{output.csv:q} --params {params.spec:q} --rule {params.rule:q} > {log:q} 2>&1"


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
        spec=task_params(min_factor=EXP["ablation"]["min_factor"]),
        rule="c5_ablation",
    shell:
        "dtrlab task c5_ablation --in {input.lstm:q} {input.resnet32:q} --out {output.summary:q} "
        "{output.parquet:q} {output.csv:q} --params {params.spec:q} --rule {params.rule:q} > {log:q} 2>&1"


rule c6_determinism:
    input:
        traces=[trace_file(k) for k, _ in EXP["determinism"]["points"]],
        engine=engine_inputs,
    output:
        summary=f"{RESULTS}/claims/c6_determinism.json",
        parquet=f"{RESULTS}/claims/c6_determinism.parquet",
        csv=f"{RESULTS}/claims/c6_determinism.csv",
    log:
        f"{RESULTS}/logs/claims/c6_determinism.log",
    params:
        spec=task_params(
            points=EXP["determinism"]["points"],
            repeats=EXP["determinism"]["repeats"],
            heuristic=HEURISTIC,
            cap=CAP,
        ),
        rule="c6_determinism",
    shell:
        "dtrlab task c6_determinism --in {input.traces:q} --out {output.summary:q} {output.parquet:q} "
        "{output.csv:q} --params {params.spec:q} --rule {params.rule:q} > {log:q} 2>&1"


rule claims:
    input:
        rules.c1_regimes.output.summary,
        rules.c2_reeviction.output.summary,
        rules.c3_inversions.output.summary,
        rules.c4_forensics.output.summary,
        rules.c6_determinism.output.summary,
        f"{RESULTS}/baselines/lstm.json",
        f"{RESULTS}/baselines/resnet32.json",
    output:
        f"{RESULTS}/claims.json",
    log:
        f"{RESULTS}/logs/claims/claims.log",
    params:
        rule="claims",
    shell:
        "dtrlab task claims --in {input:q} --out {output:q} --rule {params.rule:q} > {log:q} 2>&1"


rule claims_check:
    input:
        claims=rules.claims.output,
        published=workflow.source_path("../../config/paper_claims.yaml"),
    output:
        parquet=f"{RESULTS}/claims/claims_check.parquet",
        csv=f"{RESULTS}/claims/claims_check.csv",
        md=f"{RESULTS}/claims/claims_check.md",
    log:
        f"{RESULTS}/logs/claims/claims_check.log",
    params:
        rule="claims_check",
    shell:
        "dtrlab task claims_check --in {input.claims:q} {input.published:q} --out {output.parquet:q} "
        "{output.csv:q} {output.md:q} --rule {params.rule:q} > {log:q} 2>&1"


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
