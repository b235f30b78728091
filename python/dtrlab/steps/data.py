"""Rule ``fetch_traces``: the pinned archive, verified, extracted."""

from __future__ import annotations

import os
from pathlib import Path

from dtrlab import provenance, traces
from dtrlab.steps import Step, step


def fetch(dest: str | os.PathLike, mirror: str | None, url: str, retries: int,
          rule: str = "fetch_traces") -> list[Path]:
    """Download (or copy from the mirror), verify against the pinned sha256,
    extract; then record provenance (after, not before: a checksum mismatch
    writes nothing)."""
    dest = Path(dest)
    sha256 = traces.ARTIFACT_SHA256
    archive = dest / "logs.zip"
    if not (archive.is_file() and traces.sha256_file(archive) == sha256):
        traces.fetch_archive(archive, mirror=mirror, url=url, sha256=sha256, retries=retries)
    paths = traces.extract_traces(archive, dest)
    outputs = [archive, *(paths[k] for k in traces.TRACE_KEYS)]
    provenance.record(outputs, rule, params={"url": url, "sha256": sha256})
    return outputs


@step(record="self")
def fetch_traces(s: Step) -> None:
    # The mirror comes through the job's environment (see common.smk).
    fetch(os.path.dirname(s.output.archive), traces.default_mirror(), s.params.url, s.params.retries, rule=s.rule)
