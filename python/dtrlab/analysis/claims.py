"""The paper's numbers, computed from the analyses, and their check against
the published values (config/paper_claims.yaml)."""

from __future__ import annotations

import math
from typing import Any


def flatten(c1: dict, c2: dict, c3: dict, c4: dict, c6: dict, baselines: dict) -> dict[str, dict[str, Any]]:
    """Each claim's figures under the keys of the published-values file."""
    pts = c1["points"]
    adj = c1["largest_adjacent_ratio_points"]
    fine = c1["largest_adjacent_ratio"]
    claims = {
        "baseline": {
            "lstm_peak": baselines["lstm"]["peak"], "lstm_compute": baselines["lstm"]["compute"],
            "resnet32_peak": baselines["resnet32"]["peak"], "resnet32_compute": baselines["resnet32"]["compute"],
        },
        "C1": {
            **{f"lstm_overhead_{r}": pts[r]["overhead"] for r in sorted(pts)},
            **{f"lstm_regime_{r}": pts[r]["regime"] for r in sorted(pts)},
            "largest_adjacent_overhead_ratio": adj["ratio"],
            "largest_adjacent_between": [adj["low_budget_ratio"], adj["high_budget_ratio"]],
            "sweep_largest_adjacent_overhead_ratio": fine["ratio"],
            "sweep_largest_adjacent_between": [fine["low_budget_ratio"], fine["high_budget_ratio"]],
            "regime_threshold": c1["rule"]["threshold"],
            "sweep_fast": c1["n_fast"], "sweep_slow": c1["n_slow"], "sweep_switches": c1["switches"],
        },
        "C2": {
            "evictions_fast_0.265": c2["fast"]["evictions"], "evictions_slow_0.264": c2["slow"]["evictions"],
            "distinct_evicted_fast_0.265": c2["fast"]["distinct_evicted"],
            "distinct_evicted_slow_0.264": c2["slow"]["distinct_evicted"],
            "evictions_per_storage_fast_0.265": c2["fast"]["evictions_per_storage"],
            "evictions_per_storage_slow_0.264": c2["slow"]["evictions_per_storage"],
            "jaccard_evicted_sets": c2["jaccard"],
            "top10_share_fast_0.265": c2["fast"]["top10_share"], "top10_share_slow_0.264": c2["slow"]["top10_share"],
        },
        "C3": {},
        "C4": {},
        "C6": {"repeats_identical": c6["identical"], "points_repeated": len(c6["points"])},
    }
    inv = c3["inversions"]
    band = inv[0] if inv else None
    claims["C3"] = {
        "inversions": len(inv),
        "oom_band_lo": band["lo_ratio"] if band else None,
        "oom_band_hi": band["hi_ratio"] if band else None,
        **{f"overhead_{k}": v for k, v in c3["overheads"].items()},
    }
    for r, p in c4.items():
        claims["C4"][f"peak_pinned_{r}"] = p["peak_pinned"]
        claims["C4"][f"depth_at_peak_pinned_{r}"] = p["depth_at_peak_pinned"]
        claims["C4"][f"max_nesting_{r}"] = p["max_nesting_depth"]
        claims["C4"][f"budget_{r}"] = p["budget"]
        if "fail" in p:
            f = p["fail"]
            for k in ("tensor_name", "tensor_id", "model_op", "request", "pinned", "over_by", "depth",
                      "computing_tensor_name", "computing_op_name"):
                claims["C4"][f"fail_{k}_{r}"] = f[k]
    return claims


def matches(computed: Any, published: Any, decimals: int | None) -> bool:
    if computed is None:
        return False
    if decimals is None:
        return computed == published
    return math.isclose(round(float(computed), decimals), float(published), abs_tol=10 ** -(decimals + 6))


def check(claims: dict, published: dict) -> list[dict]:
    """One row per published value: computed, published, match, difference."""
    rows = []
    for claim in published:
        for key, spec in published[claim].items():
            computed = claims.get(claim, {}).get(key)
            decimals = spec.get("decimals")
            value = spec["value"]
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool) and computed is not None
            rows.append({
                "claim": claim, "key": key, "published": value, "decimals": decimals, "computed": computed,
                "match": matches(computed, value, decimals),
                "difference": (float(computed) - float(value)) if numeric else None,
            })
    return rows
