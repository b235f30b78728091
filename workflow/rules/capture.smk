# Beyond the 2020 traces: models captured from stock PyTorch (config capture),
# then every trace, public and captured, compared on one DTR budget sweep
# (sweeps compare_<trace>, refined where it changes by compare_refine) and its atlas (the captured ones' in
# results/atlas-captured). Steps: dtrlab.steps.capture.


wildcard_constraints:
    model="[a-z0-9_]+",


rule capture_trace:
    output:
        trace=f"{DATA}/captured/pt_{{model}}.log",
    log:
        f"{RESULTS}/logs/capture/{{model}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/capture/{{model}}.tsv"
    params:
        model=lambda wc: wc.model,
        batch=lambda wc: CAPTURE_BATCH[wc.model],
        optimizer_step=CAPTURE["optimizer_step"],
    script:
        STEP


rule compare_refine:
    input:
        sweep=f"{RESULTS}/sweeps/compare_{{trace}}.parquet",
        atlas=compare_atlas,
        trace=trace_input,
        engine=engine_inputs,
    output:
        parquet=f"{RESULTS}/compare/sweeps/{{trace}}.parquet",
        csv=f"{RESULTS}/compare/sweeps/{{trace}}.csv",
    log:
        f"{RESULTS}/logs/compare/refine-{{trace}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/compare/refine-{{trace}}.tsv"
    threads: EXP["threads"]
    params:
        step=CAPTURE["fine_step"],
        min_gap=CAPTURE["min_gap"],
        heuristic=HEURISTIC,
        cap=CAP,
        engine=ENGINE,
        start=START,
    script:
        STEP


rule compare:
    input:
        sweeps=expand(rules.compare_refine.output.parquet, trace=ALL_TRACES),
        baselines=[f"{RESULTS}/baselines/{t}.json" for t in ALL_TRACES],
        atlases=[*ATLAS_FILES, *atlas_files("atlas-captured")],
    output:
        parquet=f"{RESULTS}/compare/compare.parquet",
        csv=f"{RESULTS}/compare/compare.csv",
        pdf=f"{RESULTS}/compare/compare.pdf",
        png=report(
            f"{RESULTS}/compare/compare.png",
            caption="../report/compare.rst",
            category="Figures",
            labels={"figure": "compare"},
        ),
    log:
        f"{RESULTS}/logs/compare.log",
    params:
        traces=ALL_TRACES,
        captured=list(CAPTURED),
        min_gap=CAPTURE["min_gap"],
    script:
        STEP


ARTIFACTS["capture"] = [
    *[trace_file(t) for t in CAPTURED],
    *[f"{RESULTS}/baselines/{t}.json" for t in CAPTURED],
    *[
        f
        for t in CAPTURED
        for h in ATLAS["heuristics"]
        for f in expand(
            rules.atlas_trace.output, atlas="atlas-captured", trace=t, heuristic=h
        )
    ],
    *expand(rules.atlas_page.output, atlas="atlas-captured"),
    *expand(rules.compare_refine.output, trace=ALL_TRACES),
    *rules.compare.output,
]
