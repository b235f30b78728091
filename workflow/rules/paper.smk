# The paper: figures drawn by papermill-executed notebooks, LaTeX tables and
# macros generated from the results, main.tex compiled by latexmk.
#
#   snakemake --cores 2 paper               # results/paper/main.pdf
#   snakemake --cores 2 fig_lstm_regimes    # one figure, and only what it needs
from dtrlab.experiments import PAPER_TABLES
from dtrlab.report.paper import LAYOUT


rule nb_lstm_regimes:
    input:
        notebook=notebook("lstm_regimes"),
        c1_table=rules.c1_regimes.output.parquet,
        c1_summary=rules.c1_regimes.output.summary,
        c2_counts=rules.c2_reeviction.output.parquet,
    output:
        *figure("lstm_regimes"),
        *figure("eviction_distributions"),
        notebook=f"{NOTEBOOKS}/lstm_regimes.ipynb",
        html=f"{NOTEBOOKS}/lstm_regimes.html",
    log:
        f"{RESULTS}/logs/paper/nb_lstm_regimes.log",
    params:
        out_dir=lambda wc, output: os.path.dirname(output[0]),
        html_dir=lambda wc, output: os.path.dirname(output.html),
        rule="nb_lstm_regimes",
        args=lambda wc, input: papermill_args(
            c1_table=input.c1_table,
            c1_summary=input.c1_summary,
            c2_counts=input.c2_counts,
        ),
    shell:
        PAPERMILL


rule nb_resnet_inversion:
    input:
        notebook=notebook("resnet_inversion"),
        sweep_table=f"{RESULTS}/sweeps/resnet32_dtr.parquet",
        inversions_table=rules.c3_inversions.output.parquet,
        frontier_table=rules.c4_forensics.output.parquet,
        forensics_summary=rules.c4_forensics.output.summary,
    output:
        *figure("resnet_inversion"),
        *figure("pinned_frontier"),
        notebook=f"{NOTEBOOKS}/resnet_inversion.ipynb",
        html=f"{NOTEBOOKS}/resnet_inversion.html",
    log:
        f"{RESULTS}/logs/paper/nb_resnet_inversion.log",
    params:
        out_dir=lambda wc, output: os.path.dirname(output[0]),
        html_dir=lambda wc, output: os.path.dirname(output.html),
        rule="nb_resnet_inversion",
        args=lambda wc, input: papermill_args(
            sweep_table=input.sweep_table,
            inversions_table=input.inversions_table,
            frontier_table=input.frontier_table,
            forensics_summary=input.forensics_summary,
        ),
    shell:
        PAPERMILL


rule nb_ablation:
    input:
        notebook=notebook("ablation"),
        lstm_table=f"{RESULTS}/sweeps/ablation_lstm.parquet",
        resnet_table=f"{RESULTS}/sweeps/ablation_resnet32.parquet",
        ablation_table=rules.c5_ablation.output.parquet,
    output:
        *figure("ablation_heatmap"),
        notebook=f"{NOTEBOOKS}/ablation.ipynb",
        html=f"{NOTEBOOKS}/ablation.html",
    log:
        f"{RESULTS}/logs/paper/nb_ablation.log",
    params:
        out_dir=lambda wc, output: os.path.dirname(output[0]),
        html_dir=lambda wc, output: os.path.dirname(output.html),
        rule="nb_ablation",
        args=lambda wc, input: papermill_args(
            lstm_table=input.lstm_table,
            resnet_table=input.resnet_table,
            ablation_table=input.ablation_table,
        ),
    shell:
        PAPERMILL


# One target per figure: `snakemake fig_NAME` builds that figure only.
rule fig_lstm_regimes:
    input:
        f"{FIGURES}/lstm_regimes.pdf",


rule fig_eviction_distributions:
    input:
        f"{FIGURES}/eviction_distributions.pdf",


rule fig_resnet_inversion:
    input:
        f"{FIGURES}/resnet_inversion.pdf",


rule fig_pinned_frontier:
    input:
        f"{FIGURES}/pinned_frontier.pdf",


rule fig_ablation_heatmap:
    input:
        f"{FIGURES}/ablation_heatmap.pdf",


# From the preview atlas (config atlas.preview), so that it builds in minutes
# on two cores; the paper's figure is results/atlas/atlas.pdf (target atlas).
rule fig_atlas:
    input:
        expand(rules.atlas_report.output.pdf, atlas="atlas-preview"),


rule paper_tables:
    input:
        rules.baselines.output.parquet,
        rules.c1_regimes.output.parquet,
        rules.c2_reeviction.output.summary,
        rules.c4_forensics.output.summary,
        rules.c5_ablation.output.parquet,
        rules.claims_check.output.parquet,
        ATLAS_FILES,
    output:
        [f"{RESULTS}/tables/{name}.tex" for name in PAPER_TABLES],
    log:
        f"{RESULTS}/logs/paper/tables.log",
    params:
        spec=task_params(lstm_points=EXP["lstm_regimes"]["points"]),
        rule="paper_tables",
    shell:
        "dtrlab task paper_tables --in {input:q} --out {output:q} --params {params.spec:q} "
        "--rule {params.rule:q} > {log:q} 2>&1"


rule paper_macros:
    input:
        rules.c1_regimes.output.summary,
        rules.c1_regimes.output.parquet,
        rules.c2_reeviction.output.summary,
        rules.c3_inversions.output.summary,
        f"{RESULTS}/sweeps/resnet32_dtr.parquet",
        rules.c4_forensics.output.summary,
        rules.c5_ablation.output.summary,
        rules.c5_ablation.output.parquet,
        rules.c6_determinism.output.summary,
        rules.claims_check.output.parquet,
        expand(rules.baseline.output, trace=TRACES),
        ATLAS_FILES,
    output:
        f"{RESULTS}/paper/macros.tex",
    log:
        f"{RESULTS}/logs/paper/macros.log",
    params:
        spec=task_params(baselines=len(TRACES)),
        rule="paper_macros",
    shell:
        "dtrlab task paper_macros --in {input:q} --out {output:q} --params {params.spec:q} "
        "--rule {params.rule:q} > {log:q} 2>&1"


rule paper:
    input:
        main=workflow.source_path("../../paper/main.tex"),
        bib=workflow.source_path("../../paper/references.bib"),
        generated=[f"{RESULTS}/{path}" for path in LAYOUT.values()],
    output:
        f"{RESULTS}/paper/main.pdf",
    log:
        f"{RESULTS}/logs/paper/latexmk.log",
    params:
        # The PDF names the commit its figures were made at: a new commit
        # rebuilds it (the figures themselves, data, stay as they are).
        spec=task_params(code=code_version(workflow.basedir)),
        rule="paper",
    shell:
        "dtrlab task paper --in {input.main:q} {input.bib:q} {input.generated:q} --out {output:q} "
        "--params {params.spec:q} --rule {params.rule:q} > {log:q} 2>&1"


# Hashed: figures, tables, macros and the PDF. The executed notebooks carry
# timestamps, so they are listed in the manifest as provenance, not hashed.
ARTIFACTS["paper"] = [
    *[f for f in rules.nb_lstm_regimes.output if "/figures/" in f],
    *[f for f in rules.nb_resnet_inversion.output if "/figures/" in f],
    *[f for f in rules.nb_ablation.output if "/figures/" in f],
    *rules.paper_tables.output,
    *rules.paper_macros.output,
    *rules.paper.output,
]
EXECUTED_NOTEBOOKS = [
    rules.nb_lstm_regimes.output.notebook,
    rules.nb_lstm_regimes.output.html,
    rules.nb_resnet_inversion.output.notebook,
    rules.nb_resnet_inversion.output.html,
    rules.nb_ablation.output.notebook,
    rules.nb_ablation.output.html,
]
