# Beyond the paper: every trace's budget axis mapped exactly into execution
# classes (chunks in parallel), every feasibility hole with its byte edges and
# forensics, one figure and one table. Two atlases share these rules:
# `atlas` (the paper's) and `atlas-preview` (what `fig_atlas` draws alone:
# config atlas.preview in place of the walk settings).
ATLAS = config["atlas"]
ATLAS_SETTINGS = {"atlas": ATLAS, "atlas-preview": {**ATLAS, **ATLAS["preview"]}}


wildcard_constraints:
    atlas="atlas|atlas-preview",


rule atlas_chunk:
    input:
        trace=lambda wc: trace_file(wc.trace),
    output:
        f"{RESULTS}/{{atlas}}/{{trace}}/{{heuristic}}/chunk-{{chunk}}.json",
    log:
        f"{RESULTS}/logs/{{atlas}}/{{trace}}/{{heuristic}}/chunk-{{chunk}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/{{atlas}}/{{trace}}/{{heuristic}}/chunk-{{chunk}}.tsv"
    params:
        spec=lambda wc: task_params(
            heuristic=wc.heuristic,
            cap=CAP,
            lo=ATLAS["lo"],
            hi=ATLAS["hi"],
            chunk=int(wc.chunk),
            chunks=ATLAS["chunks"],
            max_runs=ATLAS_SETTINGS[wc.atlas]["max_runs"],
            time_limit=ATLAS["time_limit"],
            grid=ATLAS_SETTINGS[wc.atlas]["grid"],
            max_total_runs=ATLAS_SETTINGS[wc.atlas]["max_total_runs"],
            edge_runs=ATLAS_SETTINGS[wc.atlas]["edge_runs"],
            max_work=ATLAS["max_work"],
            resolve=ATLAS["resolve"],
        ),
        rule="atlas_chunk",
    shell:
        "dtrlab task atlas_chunk --in {input.trace:q} --out {output:q} --params {params.spec:q} "
        "--rule {params.rule:q} > {log:q} 2>&1"


rule atlas_trace:
    input:
        trace=lambda wc: trace_file(wc.trace),
        chunks=lambda wc: [
            f"{RESULTS}/{wc.atlas}/{wc.trace}/{wc.heuristic}/chunk-{i}.json"
            for i in range(ATLAS["chunks"])
        ],
    output:
        atlas=f"{RESULTS}/{{atlas}}/{{trace}}/{{heuristic}}/atlas.json",
        classes=f"{RESULTS}/{{atlas}}/{{trace}}/{{heuristic}}/classes.parquet",
        classes_csv=f"{RESULTS}/{{atlas}}/{{trace}}/{{heuristic}}/classes.csv",
        holes=f"{RESULTS}/{{atlas}}/{{trace}}/{{heuristic}}/holes.parquet",
        holes_csv=f"{RESULTS}/{{atlas}}/{{trace}}/{{heuristic}}/holes.csv",
    log:
        f"{RESULTS}/logs/{{atlas}}/{{trace}}/{{heuristic}}/merge.log",
    params:
        spec=task_params(forensics=ATLAS["forensics"]),
        rule="atlas_trace",
    shell:
        "dtrlab task atlas_merge --in {input.trace:q} {input.chunks:q} --out {output.atlas:q} "
        "{output.classes:q} {output.classes_csv:q} {output.holes:q} {output.holes_csv:q} "
        "--params {params.spec:q} --rule {params.rule:q} > {log:q} 2>&1"


ATLAS_FILES = atlas_files("atlas")


rule atlas_report:
    input:
        lambda wc: atlas_files(wc.atlas),
    output:
        pdf=f"{RESULTS}/{{atlas}}/atlas.pdf",
        png=report(
            f"{RESULTS}/{{atlas}}/atlas.png",
            caption="../report/atlas.rst",
            category="Figures",
            labels={"figure": "atlas"},
        ),
        holes=f"{RESULTS}/{{atlas}}/holes.csv",
        tex=f"{RESULTS}/{{atlas}}/holes.tex",
    log:
        f"{RESULTS}/logs/{{atlas}}/report.log",
    params:
        rule="atlas_report",
    shell:
        "dtrlab task atlas_report --in {input:q} --out {output.pdf:q} {output.png:q} {output.holes:q} "
        "{output.tex:q} --rule {params.rule:q} > {log:q} 2>&1"


rule atlas:
    input:
        f"{RESULTS}/atlas/MANIFEST.json",


# `atlas` is also a target of its own (the longest part of `all` on few
# cores), hashed in its own manifest.
ATLAS_ARTIFACTS = [
    *[
        f
        for t in ATLAS["traces"]
        for h in ATLAS["heuristics"]
        for f in expand(rules.atlas_trace.output, atlas="atlas", trace=t, heuristic=h)
    ],
    *expand(rules.atlas_report.output, atlas="atlas"),
]
ARTIFACTS["atlas"] = ATLAS_ARTIFACTS


rule atlas_manifest:
    input:
        ATLAS_ARTIFACTS,
    output:
        f"{RESULTS}/atlas/MANIFEST.json",
    log:
        f"{RESULTS}/logs/atlas/manifest.log",
    params:
        config_sha256=CONFIG_SHA256,
    shell:
        "dtrlab manifest {input:q} --out {output:q} --config-sha256 {params.config_sha256:q} > {log:q} 2>&1"
