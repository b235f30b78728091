# The public traces: pinned archive, sha256-verified download (or local
# mirror), per-file verification on extraction. Nothing is written on mismatch.


TRACE_DATA = [f"{DATA}/logs.zip", *(trace_file(k) for k in TRACE_FILES)]


# Runs where snakemake runs: compute nodes often have no internet.
localrules:
    fetch_traces,


# Its provenance records are outputs too: traces that something else put in
# the data folder (an older dtrlab, a copy) lack them, so Snakemake fetches and
# verifies the traces again instead of adopting them.
rule fetch_traces:
    output:
        archive=TRACE_DATA[0],
        traces=TRACE_DATA[1:],
        provenance=[str(sidecar_path(f)) for f in TRACE_DATA],
    log:
        f"{RESULTS}/logs/fetch_traces.log",
    params:
        url=config["artifact"]["url"] or ARTIFACT_URL,
        retries=config["artifact"]["retries"],
    script:
        STEP


rule fetch_simrd:
    output:
        directory(SIMRD_FETCHED),
    log:
        f"{RESULTS}/logs/fetch_simrd.log",
    shell:
        "dtrlab fetch-simrd --dest {output:q} > {log:q} 2>&1"


ARTIFACTS["data"] = TRACE_DATA
