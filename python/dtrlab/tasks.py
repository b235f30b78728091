"""The work behind each workflow rule, one function per rule.

Rules stay thin: they call ``dtrlab <command>``, which calls one function
here. Every function writes its outputs atomically and then records their
provenance (see :mod:`dtrlab.provenance`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable

from dtrlab import engine, provenance, traces
from dtrlab.atomic import atomic_open, write_text


def fetch_traces(dest: str | os.PathLike, mirror: str | None, url: str, retries: int,
                 rule: str = "fetch_traces") -> list[Path]:
    """Download (or copy from the mirror), verify against the pinned sha256,
    extract; record provenance (after, not before: a checksum mismatch
    writes nothing; the workflow declares these records as outputs of the
    rule)."""
    dest = Path(dest)
    sha256 = traces.ARTIFACT_SHA256
    archive = dest / "logs.zip"
    if not (archive.is_file() and traces.sha256_file(archive) == sha256):
        traces.fetch_archive(archive, mirror=mirror, url=url, sha256=sha256, retries=retries)
    paths = traces.extract_traces(archive, dest)
    outputs = [archive, *(paths[k] for k in traces.TRACE_KEYS)]
    provenance.record(outputs, rule, params={"url": url, "sha256": sha256})
    return outputs


def write_baseline(trace_path: str | os.PathLike, out: str | os.PathLike, start: bool = False,
                   rule: str = "baseline", engine_name: str = "native") -> dict:
    """The baseline figures of one trace as a JSON record."""
    trace_path = traces.resolve_trace(trace_path)  # a key names the verified file it stands for
    with provenance.recording([out], rule, inputs=[trace_path], params={"start": start, "engine": engine_name}):
        t = engine.load_trace(trace_path, start=start)
        record = {"trace": t.key, "start": start, **engine.baseline(t, engine=engine_name).to_dict()}
        write_text(out, provenance.canonical_json(record))
    return record


def tabulate(inputs: Iterable[str | os.PathLike], out_parquet: str | os.PathLike, out_csv: str | os.PathLike,
             sort_by: Iterable[str] = ("trace",), rule: str = "tabulate") -> None:
    """JSON records -> one tidy table (Parquet for programs, CSV for humans)."""
    import pandas as pd

    inputs = list(inputs)
    rows = [json.loads(Path(p).read_text()) for p in inputs]
    df = pd.DataFrame(rows)
    keys = [k for k in sort_by if k in df.columns]
    if keys:
        df = df[keys + [c for c in df.columns if c not in keys]]
        df = df.sort_values(keys, kind="stable").reset_index(drop=True)
    with provenance.recording([out_parquet, out_csv], rule, inputs=inputs, params={"sort_by": keys}):
        write_table(df, out_parquet, out_csv)


def write_table(df, out_parquet: str | os.PathLike, out_csv: str | os.PathLike | None) -> None:
    """Deterministic Parquet (and CSV, if asked) of a DataFrame, written atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    # pandas' schema metadata names the writer's versions: drop it so the
    # bytes depend on the data only (the manifest records versions).
    table = table.replace_schema_metadata(None)
    with atomic_open(out_parquet, "wb") as f:
        pq.write_table(table, f, compression="zstd", write_statistics=False)
    if out_csv is not None:
        with atomic_open(out_csv, "w", newline="") as f:
            df.to_csv(f, index=False, lineterminator="\n")


def make_manifest(out: str | os.PathLike, config_sha256: str, artifacts: Iterable[str],
                  root: str | os.PathLike = ".", unhashed: Iterable[str] = ()) -> dict:
    """Hash every artifact with its provenance into the manifest; ``unhashed``
    files (executed notebooks, which carry timestamps) are only listed."""
    manifest = provenance.build_manifest(artifacts, config_sha256, root=root)
    if unhashed:
        manifest["executed_notebooks"] = sorted({provenance.relpath(u, root) for u in unhashed})
    provenance.write_manifest(out, manifest)
    return manifest
