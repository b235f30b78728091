# dtrlab: reproduce "Deterministic Regime Switching and Feasibility Inversion in
# Dynamic Tensor Rematerialization" from the public DTR traces.
#
#   snakemake --cores 16 all               # everything: results/paper/main.pdf, every
#                                          # artifact hashed into results/MANIFEST.json
#   snakemake --cores 2 fig_lstm_regimes   # one figure (fig_*), or any one target
#   snakemake --cores 16 atlas             # beyond the paper: the feasibility atlas only
#   snakemake --report report.html         # captioned figures, after a run
#
# Rules live in workflow/rules/ (one file per topic); the work behind each rule
# is the dtrlab.steps function named after it, tested in the package.

from snakemake.utils import min_version

min_version("9.0")


configfile: workflow.source_path("config/config.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/baselines.smk"
include: "workflow/rules/experiments.smk"
include: "workflow/rules/atlas.smk"
include: "workflow/rules/capture.smk"
include: "workflow/rules/runtime.smk"
include: "workflow/rules/paper.smk"
include: "workflow/rules/provenance.smk"


rule all:
    default_target: True
    input:
        rules.manifest.output,
