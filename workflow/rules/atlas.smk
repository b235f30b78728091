# Beyond the paper: every trace's budget axis mapped exactly into execution
# classes (chunks in parallel), every feasibility hole with its byte edges and
# forensics, one figure and one table. Two atlases share these rules:
# `atlas` (the paper's) and `atlas-preview` (what `fig_atlas` draws alone:
# config atlas.preview in place of the walk settings). Steps: dtrlab.steps.atlas.
ATLAS = config["atlas"]
ATLAS_SETTINGS = {
    "atlas": ATLAS,
    "atlas-preview": {**ATLAS, **ATLAS["preview"]},
    "atlas-captured": ATLAS,
}


wildcard_constraints:
    atlas="atlas|atlas-preview|atlas-captured",


rule atlas_chunk:
    input:
        trace=lambda wc: trace_file(wc.trace),
    output:
        chunk=f"{RESULTS}/{{atlas}}/{{trace}}/{{heuristic}}/chunk-{{chunk}}.json",
    log:
        f"{RESULTS}/logs/{{atlas}}/{{trace}}/{{heuristic}}/chunk-{{chunk}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/{{atlas}}/{{trace}}/{{heuristic}}/chunk-{{chunk}}.tsv"
    params:
        heuristic=lambda wc: wc.heuristic,
        cap=CAP,
        lo=ATLAS["lo"],
        hi=ATLAS["hi"],
        chunk=lambda wc: int(wc.chunk),
        chunks=ATLAS["chunks"],
        max_runs=lambda wc: ATLAS_SETTINGS[wc.atlas]["max_runs"],
        walk_ops=lambda wc: ATLAS_SETTINGS[wc.atlas]["walk_ops"],
        walk_share=lambda wc: ATLAS_SETTINGS[wc.atlas]["walk_share"],
        time_limit=ATLAS["time_limit"],
        grid=lambda wc: ATLAS_SETTINGS[wc.atlas]["grid"],
        max_total_runs=lambda wc: ATLAS_SETTINGS[wc.atlas]["max_total_runs"],
        edge_runs=lambda wc: ATLAS_SETTINGS[wc.atlas]["edge_runs"],
        max_work=ATLAS["max_work"],
        resolve=ATLAS["resolve"],
        engine=ENGINE,
        start=START,
    script:
        STEP


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
        forensics=ATLAS["forensics"],
        engine=ENGINE,
        start=START,
    script:
        STEP


ATLAS_FILES = atlas_files("atlas")


rule atlas_report:
    input:
        atlases=lambda wc: atlas_files(wc.atlas),
    output:
        pdf=f"{RESULTS}/{{atlas}}/atlas.pdf",
        png=report(
            f"{RESULTS}/{{atlas}}/atlas.png",
            caption="../report/atlas.rst",
            category="Figures",
            # "atlas" or "atlas-preview": one label each in the report.
            labels={"figure": "{atlas}"},
        ),
        holes=f"{RESULTS}/{{atlas}}/holes.csv",
        tex=f"{RESULTS}/{{atlas}}/holes.tex",
    log:
        f"{RESULTS}/logs/{{atlas}}/report.log",
    script:
        STEP


# The atlas as a page to explore in a browser (self-contained, no network).
ATLAS_PAGE_TITLES = {
    "atlas": "Feasibility atlas: the public DTR traces",
    "atlas-preview": "Feasibility atlas (preview): the public DTR traces",
    "atlas-captured": "Feasibility atlas: traces captured from stock PyTorch",
}


rule atlas_page:
    input:
        atlases=lambda wc: atlas_files(wc.atlas),
    output:
        html=report(
            f"{RESULTS}/{{atlas}}/index.html",
            caption="../report/atlas_page.rst",
            category="Atlas",
            labels={"page": "{atlas}"},
        ),
    log:
        f"{RESULTS}/logs/{{atlas}}/page.log",
    params:
        title=lambda wc: ATLAS_PAGE_TITLES[wc.atlas],
    script:
        STEP


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
    *expand(rules.atlas_page.output, atlas="atlas"),
]
ARTIFACTS["atlas"] = ATLAS_ARTIFACTS


rule atlas_manifest:
    input:
        artifacts=ATLAS_ARTIFACTS,
    output:
        manifest=f"{RESULTS}/atlas/MANIFEST.json",
    log:
        f"{RESULTS}/logs/atlas/manifest.log",
    params:
        config_sha256=CONFIG_SHA256,
    script:
        STEP
