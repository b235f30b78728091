"""C2: the slow regime is broad re-eviction, not a small hot set."""

from __future__ import annotations


def stats(evictions_by_storage: dict[int, int], top: int = 10) -> dict:
    total = sum(evictions_by_storage.values())
    distinct = len(evictions_by_storage)
    counts = sorted(evictions_by_storage.values(), reverse=True)
    return {
        "evictions": total,
        "distinct_evicted": distinct,
        "evictions_per_storage": total / distinct if distinct else 0.0,
        f"top{top}_share": sum(counts[:top]) / total if total else 0.0,
        "max_per_storage": counts[0] if counts else 0,
    }


def jaccard(a: set[int], b: set[int]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def compare(fast: dict[int, int], slow: dict[int, int], top: int = 10) -> dict:
    """Statistics of both runs and the overlap of their evicted sets."""
    a, b = set(fast), set(slow)
    return {
        "fast": stats(fast, top),
        "slow": stats(slow, top),
        "jaccard": jaccard(a, b),
        "only_fast": len(a - b),
        "only_slow": len(b - a),
    }


def distribution_rows(label: str, counts: dict[int, int]) -> list[dict]:
    """Per-storage eviction counts as tidy rows (for the distribution figure)."""
    return [{"run": label, "storage_id": s, "evictions": c} for s, c in sorted(counts.items())]
