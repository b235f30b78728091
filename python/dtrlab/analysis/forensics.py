"""C4: what an out-of-memory failure looks like: pinned bytes, nesting depth,
and the *held frontier* at the failure (resident storages no eviction could
free: pinned for good, or locked by a materialization in progress)."""

from __future__ import annotations

from dtrlab import engine


def point(r: engine.SimResult) -> dict:
    d = {
        "ratio": r.ratio, "budget": r.budget, "status": r.status, "overhead": r.overhead,
        "peak_pinned": r.peak_pinned, "depth_at_peak_pinned": r.depth_at_peak_pinned,
        "max_nesting_depth": r.max_nesting_depth, "evictions": r.evictions,
    }
    if r.fail:
        f = dict(r.fail)
        f.pop("held", None)
        d["fail"] = f
    return d


def held_frontier(trace: engine.Trace, r: engine.SimResult) -> list[dict]:
    """The storages holding memory at the failure, largest first."""
    if not r.fail:
        return []
    rows = []
    for storage, size, pinned in r.fail["held"]:
        rows.append({
            "ratio": r.ratio, "storage_id": storage, "bytes": size, "state": "pinned" if pinned else "locked",
            "tensor_name": trace.tensor_name(storage), "op_name": trace.op_name_of(storage),
        })
    rows.sort(key=lambda x: (-x["bytes"], x["storage_id"]))
    return rows


def summarize(trace: engine.Trace, runs: list[engine.SimResult]) -> dict:
    out = {f"{r.ratio:.3f}": point(r) for r in runs}
    for r in runs:
        if r.fail:
            held = held_frontier(trace, r)
            locked = [h for h in held if h["state"] == "locked"]
            out[f"{r.ratio:.3f}"]["held"] = {
                "storages": len(held),
                "bytes": sum(h["bytes"] for h in held),
                "locked_storages": len(locked),
                "locked_bytes": sum(h["bytes"] for h in locked),
                "pinned_bytes": sum(h["bytes"] for h in held if h["state"] == "pinned"),
            }
    return out
