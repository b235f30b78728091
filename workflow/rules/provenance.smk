# The manifest: every artifact with sha256, size, producing rule, input
# hashes, config hash, code, engine and package versions; the executed
# notebooks listed beside them.


MANIFEST_ARTIFACTS = [a for topic in sorted(ARTIFACTS) for a in ARTIFACTS[topic]]

# Fail at the start, not in the manifest at the end: every artifact present
# must carry the provenance record its rule wrote before writing it. (The
# traces' records are outputs of fetch_traces, which reruns without them.)
# Only the main process checks: a cluster job re-reads this file mid-run.
if workflow.is_main_process:
    _foreign = unrecorded(a for a in MANIFEST_ARTIFACTS if a not in TRACE_DATA)
    if _foreign:
        raise WorkflowError(
            f"{_foreign[0]}"
            + (f" (and {len(_foreign) - 1} more)" if len(_foreign) > 1 else "")
            + ": present but not produced by a workflow rule (no provenance record);"
            + " delete it (or rerun its rule with --forcerun RULE) and run again"
        )


rule manifest:
    input:
        artifacts=MANIFEST_ARTIFACTS,
        # Requested here, where they are read, so that Snakemake redoes
        # fetch_traces when one is missing.
        traces_provenance=rules.fetch_traces.output.provenance,
        notebooks=EXECUTED_NOTEBOOKS,
    output:
        manifest=f"{RESULTS}/MANIFEST.json",
    log:
        f"{RESULTS}/logs/manifest.log",
    params:
        config_sha256=CONFIG_SHA256,
    script:
        STEP
