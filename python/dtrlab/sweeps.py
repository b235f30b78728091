"""Many replays of one trace as a tidy table (one row per run).

Replays run on threads: the engine releases the GIL, so a job uses as many
cores as it is given. Rows are ordered by the input points, never by
completion, so tables are byte-deterministic.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Mapping

from dtrlab import engine

#: Columns of a sweep table, in order.
COLUMNS = (
    "trace", "heuristic", "ratio", "cap", "seed", "budget", "status", "overhead", "overhead_clock", "clock",
    "model_compute", "remat_compute", "max_memory", "evictions", "distinct_evicted", "evictions_per_storage",
    "heuristic_eval_count", "peak_pinned", "depth_at_peak_pinned", "max_nesting_depth", "model_ops",
    "fail_pinned", "fail_request", "fail_over_by", "fail_depth", "fail_model_op", "fail_tensor_id",
    "fail_tensor_name", "fail_computing_tensor_name", "fail_computing_op_name",
    "interval_lo", "interval_hi", "digest",
)

FAIL_KEYS = ("pinned", "request", "over_by", "depth", "model_op", "tensor_id", "tensor_name",
             "computing_tensor_name", "computing_op_name")

#: Text columns that are empty where a run did not fail (the failure's
#: names). A chunk read back holds them as strings if any of its runs failed,
#: as objects if none did, and concatenation keeps strings only if every
#: chunk had them: so the merged table holds them as objects, and its types
#: depend on its rows only, never on how the sweep was chunked.
NULLABLE_TEXT = tuple(f"fail_{k}" for k in FAIL_KEYS if k.endswith("_name"))


def row(r: engine.SimResult) -> dict:
    """One run as a flat record (nulls where a field does not apply)."""
    d = r.to_dict()
    fail = d.pop("fail") or {}
    lo, hi = d.pop("identical_budget_interval") or (None, None)
    out = {k: d.get(k) for k in COLUMNS if k in d}
    out["seed"] = r.seed
    for k in FAIL_KEYS:
        out[f"fail_{k}"] = fail.get(k)
    out["interval_lo"], out["interval_hi"] = lo, hi
    out["digest"] = r.digest()
    return {k: out.get(k) for k in COLUMNS}


def run_points(
    trace: engine.Trace,
    points: Iterable[Mapping],
    threads: int | None = None,
    engine_name: str = "native",
    progress: bool = True,
) -> list[dict]:
    """Replay every point ``{heuristic, ratio, cap, seed}``; rows in point order."""
    points = list(points)
    threads = threads or int(os.environ.get("DTRLAB_THREADS", "1"))

    def one(p):
        return row(engine.simulate(trace, ratio=p["ratio"], heuristic=p["heuristic"], cap=p.get("cap"),
                                   seed=p.get("seed"), engine=engine_name))

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(points), desc=f"{trace.key} replays", unit="run", file=sys.stderr,
                   disable=None)
    rows = []
    with ThreadPoolExecutor(max(1, threads)) as pool:
        for r in pool.map(one, points):
            rows.append(r)
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    return rows


def table(rows: list[dict]):
    """Rows -> a DataFrame with the sweep columns and stable dtypes."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=list(COLUMNS))
    for c in ("budget", "fail_pinned", "fail_request", "fail_over_by", "fail_depth", "fail_model_op",
              "fail_tensor_id", "interval_lo", "interval_hi"):
        df[c] = df[c].astype("Int64")
    for c in ("overhead", "overhead_clock", "cap"):
        df[c] = df[c].astype("float64")
    return df


def merge(chunks):
    """Chunk tables (read back from Parquet) as one, sorted by heuristic,
    seed and ratio, with column types that do not depend on the chunking."""
    import pandas as pd

    df = pd.concat(chunks, ignore_index=True)
    df = df.sort_values(["heuristic", "seed", "ratio"], kind="stable").reset_index(drop=True)
    for c in NULLABLE_TEXT:
        df[c] = df[c].astype(object)
    return df
