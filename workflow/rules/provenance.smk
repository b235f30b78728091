# The manifest: every artifact with sha256, size, producing rule, input
# hashes, config hash, code, engine and package versions; the executed
# notebooks listed beside them.


rule manifest:
    input:
        artifacts=[a for topic in sorted(ARTIFACTS) for a in ARTIFACTS[topic]],
        notebooks=EXECUTED_NOTEBOOKS,
    output:
        f"{RESULTS}/MANIFEST.json",
    log:
        f"{RESULTS}/logs/manifest.log",
    conda:
        ENV
    params:
        config_sha256=CONFIG_SHA256,
    shell:
        "dtrlab manifest {input.artifacts} --unhashed {input.notebooks} --out {output} "
        "--config-sha256 {params.config_sha256} > {log} 2>&1"
