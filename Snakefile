# dtrlab: reproduce "Deterministic Regime Switching and Feasibility Inversion in
# Dynamic Tensor Rematerialization" from the public DTR traces.
#
#   snakemake --cores 16 all          # everything, hashed into results/MANIFEST.json
#   snakemake --cores 2 baselines     # one target
#   snakemake --cores 16 atlas        # beyond the paper: the exact feasibility atlas
#
# Rules live in workflow/rules/ (one file per topic); the work behind each rule
# is a `dtrlab` command, tested in the package.


configfile: workflow.source_path("config/config.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/baselines.smk"
include: "workflow/rules/experiments.smk"
include: "workflow/rules/atlas.smk"
include: "workflow/rules/provenance.smk"


rule all:
    default_target: True
    input:
        rules.manifest.output,
