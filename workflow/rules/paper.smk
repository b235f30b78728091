# The paper: figures drawn by papermill-executed notebooks, LaTeX tables and
# macros generated from the results, main.tex compiled by latexmk.
#
#   snakemake --cores 2 paper               # results/paper/main.pdf
#   snakemake --cores 2 fig_lstm_regimes    # one figure, and only what it needs
#
# What main.tex reads, where, and which rule makes it: dtrlab.report.paper.LAYOUT
# (the paper rule's inputs and paper_tables' outputs come from it). Steps:
# dtrlab.steps.paper.
from dtrlab.report.paper import LAYOUT, made_by


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
        baselines=rules.baselines.output.parquet,
        c1_table=rules.c1_regimes.output.parquet,
        c2=rules.c2_reeviction.output.summary,
        c4=rules.c4_forensics.output.summary,
        c5_table=rules.c5_ablation.output.parquet,
        claims_check=rules.claims_check.output.parquet,
        atlases=ATLAS_FILES,
        compare=rules.compare.output.parquet,
    output:
        **{name: f"{RESULTS}/{path}" for name, path in made_by("paper_tables").items()},
    log:
        f"{RESULTS}/logs/paper/tables.log",
    params:
        lstm_points=EXP["lstm_regimes"]["points"],
    script:
        STEP


rule paper_macros:
    input:
        # Named as dtrlab.report.macros.collect reads them.
        c1=rules.c1_regimes.output.summary,
        c1_table=rules.c1_regimes.output.parquet,
        c2=rules.c2_reeviction.output.summary,
        c3=rules.c3_inversions.output.summary,
        resnet_sweep=f"{RESULTS}/sweeps/resnet32_dtr.parquet",
        c4=rules.c4_forensics.output.summary,
        c5=rules.c5_ablation.output.summary,
        c5_table=rules.c5_ablation.output.parquet,
        c6=rules.c6_determinism.output.summary,
        claims_check_table=rules.claims_check.output.parquet,
        baseline_records=expand(rules.baseline.output.record, trace=TRACES),
        atlases=ATLAS_FILES,
        compare=rules.compare.output.parquet,
    output:
        macros=f"{RESULTS}/{LAYOUT['macros.tex'].path}",
    log:
        f"{RESULTS}/logs/paper/macros.log",
    script:
        STEP


rule paper:
    input:
        main=workflow.source_path("../../paper/main.tex"),
        bib=workflow.source_path("../../paper/references.bib"),
        generated=[f"{RESULTS}/{g.path}" for g in LAYOUT.values()],
    output:
        pdf=f"{RESULTS}/paper/main.pdf",
    log:
        f"{RESULTS}/logs/paper/latexmk.log",
    params:
        # The PDF names the commit its figures were made at: a new commit
        # rebuilds it (the figures themselves, data, stay as they are).
        code=code_version(workflow.basedir),
    script:
        STEP


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
