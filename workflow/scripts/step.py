# Every rule's job: the dtrlab step named after the rule, with the rule's
# named inputs, outputs and params (see dtrlab.steps).
from dtrlab.steps import job

job(snakemake)  # noqa: F821 (provided by Snakemake's `script:`)
