"""How steps read and write results: one table writer (deterministic Parquet,
and CSV), canonical JSON; every file written atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path

from dtrlab.atomic import atomic_open, write_text
from dtrlab.provenance import canonical_json


def write_table(df, out_parquet: str | os.PathLike, out_csv: str | os.PathLike | None = None) -> None:
    """Deterministic Parquet (and CSV, if asked) of a DataFrame."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    # pandas' schema metadata names the writer's versions: drop it so the
    # bytes depend on the data only (the manifest records versions).
    table = table.replace_schema_metadata(None)
    with atomic_open(out_parquet, "wb") as f:
        pq.write_table(table, f, compression="zstd", write_statistics=False)
    if out_csv is not None:
        write_csv(df, out_csv)


def write_csv(df, path: str | os.PathLike) -> None:
    """A DataFrame as CSV for humans (no index, Unix line ends)."""
    with atomic_open(path, "w", newline="") as f:
        df.to_csv(f, index=False, lineterminator="\n")


def write_json(path: str | os.PathLike, obj) -> None:
    write_text(path, canonical_json(obj))


def read_json(path: str | os.PathLike):
    return json.loads(Path(path).read_text())
