"""Every number the paper's prose cites, as a LaTeX macro computed from the
results (``macros.tex``): no number in the text is typed by hand.

:func:`collect` reads the result files and returns ``{name: LaTeX text}``;
:func:`render` writes them as ``\\newcommand`` lines in a stable order.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd

from dtrlab import atlas as atlas_map
from dtrlab.report.tables import TRACE_NAMES, escape, integer, short_ratio

NAME = re.compile(r"^[A-Za-z]+$")


class MissingResult(KeyError):
    """A value the paper cites is absent from the results."""


def fixed(v, digits: int) -> str:
    return f"{float(v):.{digits}f}"


def ratio(v) -> str:
    """A budget as a fraction of the peak, at the grids' precision."""
    return f"{float(v):.3f}"


def percent(v, digits: int = 2) -> str:
    return f"{100 * float(v):.{digits}f}\\%"


def counted(n: int, one: str, many: str, none: str | None = None) -> str:
    """``n`` with its noun in the number it takes: "1 hole", "3 holes";
    ``none`` for 0 where given ("no hole")."""
    if n == 0 and none is not None:
        return none
    return f"{integer(n)} {one if n == 1 else many}"


def times(n: int) -> str:
    """How often, in words where English has them: "once", "twice", "3 times"."""
    return {0: "not once", 1: "once", 2: "twice"}.get(n, f"{integer(n)} times")


def _get(d: dict, *keys):
    cur = d
    for k in keys:
        if not isinstance(cur, dict) or k not in cur or cur[k] is None:
            raise MissingResult(f"result value {'.'.join(map(str, keys))} is missing")
        cur = cur[k]
    return cur


def lstm(c1: dict, c1_table: pd.DataFrame, c2: dict) -> dict[str, str]:
    pts = c1["points"]
    jump, fine = c1["largest_adjacent_ratio_points"], c1["largest_adjacent_ratio"]
    fast, slow = f"{c2['ratios']['fast']:.3f}", f"{c2['ratios']['slow']:.3f}"
    listing = ", ".join(f"{ratio(r)} ({fixed(p['overhead'], 2)}$\\times$, {p['regime']})"
                        for r, p in sorted(pts.items()) if p["overhead"] is not None)
    return {
        "LstmFastRatio": ratio(fast), "LstmSlowRatio": ratio(slow),
        "LstmFastOverhead": fixed(_get(pts, fast, "overhead"), 2),
        "LstmSlowOverhead": fixed(_get(pts, slow, "overhead"), 2),
        "LstmFastOverheadExact": repr(float(_get(pts, fast, "overhead"))),
        "LstmSlowOverheadExact": repr(float(_get(pts, slow, "overhead"))),
        "LstmPointsList": listing,
        "LstmJumpFactor": fixed(jump["ratio"], 1),
        "LstmJumpLowRatio": ratio(jump["low_budget_ratio"]), "LstmJumpHighRatio": ratio(jump["high_budget_ratio"]),
        "LstmJumpLowOverhead": fixed(jump["low_overhead"], 2), "LstmJumpHighOverhead": fixed(jump["high_overhead"], 2),
        "LstmSweepLo": ratio(c1_table.ratio.min()), "LstmSweepHi": ratio(c1_table.ratio.max()),
        "LstmSweepBudgets": integer(len(c1_table)),
        "LstmSweepStep": ratio(c1_table.ratio.sort_values().diff().dropna().min()) if len(c1_table) > 1 else "--",
        "LstmSweepFast": integer(c1["n_fast"]), "LstmSweepSlow": integer(c1["n_slow"]),
        "LstmSweepFailed": integer(c1["n_failed"]), "LstmSweepSwitches": integer(c1["switches"]),
        "LstmSweepFastPhrase": counted(c1["n_fast"], "budget is fast", "budgets are fast"),
        "LstmSweepSwitchTimes": times(c1["switches"]),
        "LstmSweepFailsPhrase": "never fails in the sweep" if not c1["n_failed"] else
        f"fails at {counted(c1['n_failed'], 'budget', 'budgets')} of the sweep",
        "LstmRegimeThreshold": fixed(c1["rule"]["threshold"], 2),
        "LstmSweepJumpFactor": fixed(fine["ratio"], 1),
        "LstmSweepJumpLowRatio": ratio(fine["low_budget_ratio"]),
        "LstmSweepJumpHighRatio": ratio(fine["high_budget_ratio"]),
        "LstmSweepJumpLowOverhead": fixed(fine["low_overhead"], 2),
        "LstmSweepJumpHighOverhead": fixed(fine["high_overhead"], 2),
        # The text's claim about the fine sweep depends on what it found.
        "LstmSweepJumpSentence": (
            f"the full sweep has a larger one, {fixed(fine['ratio'], 1)}$\\times$ between "
            f"{ratio(fine['high_budget_ratio'])} ({fixed(fine['high_overhead'], 2)}$\\times$) and "
            f"{ratio(fine['low_budget_ratio'])} ({fixed(fine['low_overhead'], 2)}$\\times$)"
            if fine["ratio"] > jump["ratio"] * (1 + 1e-12) else
            "no two neighbouring budgets of the full sweep differ more"),
        "LstmSweepMaxOverhead": fixed(c1_table.overhead.max(), 2),
        "LstmSweepMaxOverheadRatio": ratio(c1_table.loc[c1_table.overhead.idxmax(), "ratio"]),
    }


def reeviction(c2: dict) -> dict[str, str]:
    f, s = c2["fast"], c2["slow"]
    return {
        "EvictionsFast": integer(f["evictions"]), "EvictionsSlow": integer(s["evictions"]),
        "EvictionsFactor": fixed(s["evictions"] / f["evictions"], 1),
        "DistinctEvictedFast": integer(f["distinct_evicted"]), "DistinctEvictedSlow": integer(s["distinct_evicted"]),
        "EvictionsPerStorageFast": fixed(f["evictions_per_storage"], 2),
        "EvictionsPerStorageSlow": fixed(s["evictions_per_storage"], 2),
        "MaxEvictionsFast": integer(f["max_per_storage"]), "MaxEvictionsSlow": integer(s["max_per_storage"]),
        "TopTenShareFast": percent(f["top10_share"]), "TopTenShareSlow": percent(s["top10_share"]),
        "EvictedJaccard": fixed(c2["jaccard"], 3), "EvictedJaccardExact": fixed(c2["jaccard"], 5),
        "OnlySlowStorages": integer(c2["only_slow"]), "OnlyFastStorages": integer(c2["only_fast"]),
        "LstmDivergenceSentence": divergence_sentence(c2),
        "LstmMarginsSentence": margins_sentence(c2),
    }


def sci(v: float) -> str:
    r"""A score in scientific notation, math mode: $2.79\times10^{-10}$."""
    if v == 0 or not math.isfinite(v):
        return "$0$" if v == 0 else "$\\infty$" if v > 0 else "$-\\infty$"
    e = math.floor(math.log10(abs(v)))
    m = v / 10**e
    if round(m, 2) >= 10:  # 9.996e-11 prints as 1.00e-10
        m, e = m / 10, e + 1
    return f"${m:.2f}\\times10^{{{e}}}$"


def _output_of(c: dict) -> str:
    return f"the output of \\texttt{{{escape(c['op_name'])}}}"


def _choice(side: dict) -> str:
    """One side's decision: its victim ahead of its runner-up, with scores."""
    v, u = side["victim"], side["runner_up"]
    text = f"{_output_of(v)} (score {sci(v['score'])})"
    return text if u is None else f"{text} ahead of {_output_of(u)} ({sci(u['score'])})"


def divergence_sentence(c2: dict) -> str:
    """Where the fast and slow LSTM runs first choose different victims, and
    why (``analysis.decisions``), in words for each cause."""
    d = c2.get("divergence")
    if d is None:
        return "(The decision forensics need the native engine; this run used another.)"
    if d["decision"] is None:
        return ("No victim differs: one run's victims are the first of the other's, in the same order "
                "(the two runs part only in how many evictions they need).")
    k, fast, slow = d["same_victims_before"], d["fast"], d["slow"]
    earlier = fast["clock"] - slow["clock"]
    when = (f"{integer(earlier)} clock units earlier" if earlier > 0 else
            f"{integer(-earlier)} clock units later" if earlier < 0 else "at the same clock")
    text = ("Their first heuristic evictions already differ. " if k == 0 else
            f"Both runs choose the same victims in the same order for their first "
            f"{counted(k, 'heuristic eviction', 'heuristic evictions')}; decision {integer(d['decision'])} differs. ")
    text += (f"At operator {integer(fast['model_op'])} the fast run evicts {_choice(fast)}; "
             f"at operator {integer(slow['model_op'])}, {when}, the slow run evicts {_choice(slow)}. ")
    if d["cause"] == "clock":
        text += ("Each of the two has the same cost, size and last access in both runs: only the moment of the "
                 f"choice differs, and their scores cross at clock {integer(round(d['crossover_clock']))}, "
                 "between the two decisions.")
    elif d["cause"] == "terms":
        text += "The same two lead, but their cost terms differ: their evicted neighbourhoods have already parted."
    else:
        text += "The two choices are between different candidates."
    return text


def margins_sentence(c2: dict) -> str:
    """How often the runner-up came within 1 % of the victim's score."""
    m = c2.get("margins")
    if m is None:
        return ""
    share = {k: v["within_1pct"] / v["with_runner_up"] if v["with_runner_up"] else 0.0 for k, v in m.items()}
    return (f"The runner-up scores within 1\\% of the victim in "
            f"{percent(share['slow'], 1)} of the slow run's {integer(m['slow']['with_runner_up'])} decisions "
            f"that have one, and in {percent(share['fast'], 1)} of the fast run's "
            f"{integer(m['fast']['with_runner_up'])}.")


def resnet(c3: dict, sweep: pd.DataFrame, overhead_points: dict) -> dict[str, str]:
    inv = c3["inversions"]
    ok = sweep[sweep.status == "ok"]
    out = {
        "ResnetSweepLo": ratio(sweep.ratio.min()), "ResnetSweepHi": ratio(sweep.ratio.max()),
        "ResnetSweepBudgets": integer(len(sweep)), "ResnetInversions": integer(len(inv)),
        "ResnetInversionsPhrase": counted(len(inv), "such band", "such bands", "no such band"),
        "OverheadCap": "none" if sweep.cap.isna().all() else f"{float(sweep.cap.iloc[0]):g}",
        "ResnetLowestOk": ratio(ok.ratio.min()) if len(ok) else "--",
        "ResnetOverheadMin": fixed(ok.overhead.min(), 3), "ResnetOverheadMax": fixed(ok.overhead.max(), 3),
        "ResnetOverheadMaxRatio": ratio(ok.loc[ok.overhead.idxmax(), "ratio"]),
        "ResnetOverheadPointsList": ", ".join(f"{fixed(v, 3)}$\\times$ at {ratio(k)}"
                                              for k, v in sorted(overhead_points.items()) if v is not None),
    }
    if not inv:
        raise MissingResult("the ResNet-32 sweep found no feasibility inversion; the paper's C3 text cites one")
    b = inv[0]
    out.update({
        "ResnetBandLo": ratio(b["lo_ratio"]), "ResnetBandHi": ratio(b["hi_ratio"]),
        "ResnetBandBudgets": integer(b["n_budgets"]),
        "ResnetBelowOkRatio": ratio(b["below_ok_ratio"]), "ResnetAboveOkRatio": ratio(b["above_ok_ratio"]),
        "ResnetBelowOkOverhead": fixed(b["below_ok_overhead"], 3),
        "ResnetAboveOkOverhead": fixed(b["above_ok_overhead"], 3),
    })
    return out


def forensics(c4: dict) -> dict[str, str]:
    failing = sorted((r for r, p in c4.items() if p.get("fail")), key=float)
    if not failing:
        raise MissingResult("no forensics budget failed; the paper's C4 text cites one")
    r = failing[0]
    p, f, held = c4[r], c4[r]["fail"], c4[r].get("held") or {}
    out = {
        "OomRatio": ratio(r), "OomBudget": integer(p["budget"]), "OomRequest": integer(f["request"]),
        "OomPinned": integer(f["pinned"]), "OomOverBy": integer(f["over_by"]), "OomDepth": integer(f["depth"]),
        "OomNesting": integer(p["max_nesting_depth"]), "OomTensor": escape(f["tensor_name"]),
        "OomTensorId": integer(f["tensor_id"]), "OomModelOp": integer(f["model_op"]),
        "OomComputingTensor": escape(f["computing_tensor_name"]),
        "OomComputingOp": r"\texttt{" + escape(f["computing_op_name"]) + "}",
        "OomHeldStorages": integer(_get(held, "storages")), "OomLockedStorages": integer(_get(held, "locked_storages")),
        "OomLockedBytes": integer(_get(held, "locked_bytes")), "OomPinnedOnlyBytes": integer(_get(held, "pinned_bytes")),
        "OomPinnedShare": percent(f["pinned"] / p["budget"], 1),
    }
    below = [q for q in sorted(c4, key=float) if float(q) < float(r) and c4[q]["status"] == "ok"]
    above = [q for q in sorted(c4, key=float) if float(q) > float(r) and c4[q]["status"] == "ok"]
    for label, q in (("Below", below[-1] if below else None), ("Above", above[0] if above else None)):
        if q is None:
            raise MissingResult(f"no ok forensics budget {label.lower()} the failing one")
        out.update({f"Forensics{label}Ratio": ratio(q), f"Forensics{label}PeakPinned": integer(c4[q]["peak_pinned"]),
                    f"Forensics{label}Depth": integer(c4[q]["depth_at_peak_pinned"]),
                    f"Forensics{label}Nesting": integer(c4[q]["max_nesting_depth"])})
    return out


def listing(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``; "none" for no item."""
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def ablation(c5: dict, table: pd.DataFrame) -> dict[str, str]:
    def quoted(items):
        return listing([f"``{escape(v)}''" for v in items])

    return {
        "AblationHeuristics": integer(table.heuristic.nunique()),
        "AblationVariants": integer(len(c5["variants_tested"])),
        "AblationSwitching": quoted(c5["switching_variants"]),
        "AblationSwitchingCount": integer(len(c5["switching_variants"])),
        "AblationInverting": quoted(c5["inverting_variants"]),
        # The verb of the abstract's "the ablation ... support": both ways grammatical.
        "AblationSupported": "does" if c5["joint_size_staleness_supported"] else "does not",
        "AblationStatement": escape(c5["statement"]),
    }


def determinism(c6: dict) -> dict[str, str]:
    pts = c6["points"]
    return {"DeterminismPoints": integer(len(pts)), "DeterminismRepeats": integer(min(p["repeats"] for p in pts)),
            "DeterminismVerdict": "identical" if c6["identical"] else "not identical"}


def baselines(records: list[dict]) -> dict[str, str]:
    by = {r["trace"]: r for r in records}
    out = {"NumTraces": integer(len(records))}
    for key, name in (("lstm", "Lstm"), ("resnet32", "Resnet")):
        out[f"{name}Peak"] = integer(_get(by, key, "peak"))
        out[f"{name}Compute"] = integer(_get(by, key, "compute"))
    return out


def claims_check(df: pd.DataFrame) -> dict[str, str]:
    return {"ClaimsMatched": integer(df.match.sum()), "ClaimsTotal": integer(len(df))}


def atlas(atlases: list[dict]) -> dict[str, str]:
    holes = [(a, h) for a in atlases for h in a["holes"]]
    maps = [atlas_map.from_dict(a) for a in atlases]
    out = {
        "AtlasTraces": integer(len({a["trace"] for a in atlases})),
        "AtlasHeuristics": ", ".join(sorted({a["heuristic"] for a in atlases})),
        "AtlasClasses": integer(sum(len(a["classes"]) for a in atlases)),
        "AtlasRuns": integer(sum(a["runs"] for a in atlases)),
        "AtlasHoles": integer(len(holes)),
        "AtlasHolesPhrase": counted(len(holes), "feasibility hole", "feasibility holes", "no feasibility hole"),
        "AtlasTracesWithHoles": integer(len({a["trace"] for a, _ in holes})),
        "AtlasTracesWithHolesPhrase": counted(len({a["trace"] for a, _ in holes}), "trace", "traces"),
        "AtlasLo": short_ratio(min(a["lo_budget"] / a["peak"] for a in atlases)),
        "AtlasHi": short_ratio(max(a["hi_budget"] / a["peak"] for a in atlases)),
        "AtlasExactTraces": integer(sum(1 for a in atlases if a["exact"])),
        # Coverage, stated beside every hole count: the share of the mapped
        # bytes walked exactly (the rest is sampled) and the bytes unresolved.
        "AtlasExactShare": percent(sum(m.exact_bytes for m in maps)
                                   / max(1, sum(a["hi_budget"] - a["lo_budget"] + 1 for a in atlases)), 1),
        "AtlasMinExactShare": percent(min((m.exact_share for m in maps), default=0.0), 1),
        "AtlasUnresolvedBytes": integer(sum(sum((a.get("unresolved_bytes") or {}).values()) for a in atlases)),
    }
    if holes:
        widths = [h["hi"] - h["lo"] + 1 for _, h in holes]
        a, h = holes[max(range(len(holes)), key=lambda i: widths[i])]
        out.update({"AtlasWidestHoleTrace": TRACE_NAMES.get(a["trace"], a["trace"]),
                    "AtlasWidestHoleLo": integer(h["lo"]), "AtlasWidestHoleHi": integer(h["hi"]),
                    "AtlasWidestHoleBytes": integer(max(widths)), "AtlasNarrowestHoleBytes": integer(min(widths))})
    else:
        out.update({k: "--" for k in ("AtlasWidestHoleTrace", "AtlasWidestHoleLo", "AtlasWidestHoleHi",
                                      "AtlasWidestHoleBytes", "AtlasNarrowestHoleBytes")})
    return out


def oom_holes_clause(ooms: int, holes: int, label: str) -> str:
    """How many of a group's ``holes`` (at least one) fail by running out
    of memory, in words for every count."""
    where = f"of the {label} traces"
    if holes == 1:
        return f"the one hole {where} {'fails' if ooms else 'does not fail'} by running out of memory"
    if ooms == holes:
        return f"all {integer(holes)} holes {where} fail by running out of memory"
    if ooms == 0:
        return f"none of the {integer(holes)} holes {where} fails by running out of memory"
    return (f"{integer(ooms)} of the {integer(holes)} holes {where} "
            f"{'fails' if ooms == 1 else 'fail'} by running out of memory")


def _oom_sentence(pub: pd.DataFrame, cap: pd.DataFrame) -> str:
    """What the failures in the atlas holes look like (as C4), for each group
    that has holes; said plainly when a group has none."""
    parts = []
    for label, part in (("public", pub), ("captured", cap)):
        holes, ooms = int(part.holes.fillna(0).sum()), int(part.oom_holes.fillna(0).sum())
        if not holes:
            parts.append(f"the {label} traces have no hole")
            continue
        text = oom_holes_clause(ooms, holes, label)
        if ooms:
            text += (f", with up to {percent(part.oom_max_pinned_share.max())} of the budget pinned and at"
                     f" rematerialization depths up to {integer(part.oom_max_depth.max())}")
        parts.append(text)
    return "; ".join(parts)


def _sweep_only_sentence(df: pd.DataFrame) -> str:
    """Traces whose refined sweep fails between ok budgets where the atlas
    shows no hole: the atlas, exact on part of the axis only, missed them."""
    missed = df[(df.inversions > 0) & (df.holes.fillna(0) == 0) & df.holes.notna()]
    if missed.empty:
        return "Every inversion of the refined sweep lies on a trace where the atlas shows holes too."
    listed = listing([TRACE_NAMES.get(t, t) for t in missed.trace])
    return (f"On {listed} the refined sweep finds inversions where the atlas shows no hole: between two probes"
            " with the same outcome the atlas assumes that outcome, so its hole counts are lower bounds.")


def full_one_sentence(k: int, n: int) -> str:
    """How many traces replay at their peak with no overhead, said as a reader would."""
    if k == n:
        return f"All {integer(n)} traces replay at their peak with an overhead of exactly one."
    if k == 0:
        return f"None of the {integer(n)} traces replays at its peak with an overhead of exactly one."
    verb = "replays" if k == 1 else "replay"
    return f"{integer(k)} of the {integer(n)} traces {verb} at their peak with an overhead of exactly one."


def comparison(df: pd.DataFrame) -> dict[str, str]:
    """The side-by-side of public and captured traces, in words."""
    pub, cap = df[~df.captured], df[df.captured]

    def count(part, column):
        return integer(int((part[column].fillna(0) > 0).sum()))

    names = [TRACE_NAMES.get(t, t) for t in cap.trace]
    return {
        "CompareTraces": integer(len(df)),
        "CompareLo": short_ratio(float(df.sweep_lo.min())),
        "CompareHi": short_ratio(float(df.sweep_hi.max())),
        "CompareStep": short_ratio(float(df.sweep_step.max())),
        "CompareFineStep": short_ratio(float(df.fine_step.min())) if df.fine_step.notna().any() else "--",
        "CompareRefined": integer(int(df.refined_budgets.sum())),
        "CompareFullOne": integer(int((df.full_budget_overhead == 1.0).sum())),
        "CompareFullOneSentence": full_one_sentence(int((df.full_budget_overhead == 1.0).sum()), len(df)),
        "CompareCapturedNames": listing(names),
        "ComparePublic": integer(len(pub)),
        "CompareCaptured": integer(len(cap)),
        "ComparePublicSwitching": count(pub, "regime_switches"),
        "CompareCapturedSwitching": count(cap, "regime_switches"),
        "ComparePublicInverting": count(pub, "inversions"),
        "CompareCapturedInverting": count(cap, "inversions"),
        "ComparePublicHoled": count(pub, "holes"),
        "CompareCapturedHoled": count(cap, "holes"),
        "CompareCapturedHoles": integer(int(cap.holes.fillna(0).sum())),
        "CompareCapturedHolesPhrase": counted(int(cap.holes.fillna(0).sum()), "hole", "holes", "no hole"),
        "CompareOomFailures": _oom_sentence(pub, cap),
        "CompareSweepOnly": _sweep_only_sentence(df),
        "CompareCapturedSmallestOk": "--" if cap.smallest_ok_ratio.isna().all()
        else ratio(float(cap.smallest_ok_ratio.min())),
        "CompareCapturedLargestOk": "--" if cap.smallest_ok_ratio.isna().all()
        else ratio(float(cap.smallest_ok_ratio.max())),
        "ComparePublicLargestRatio": fixed(pub.largest_adjacent_overhead_ratio.max(), 2)
        if pub.largest_adjacent_overhead_ratio.notna().any() else "--",
        "CompareCapturedLargestRatio": fixed(cap.largest_adjacent_overhead_ratio.max(), 2)
        if cap.largest_adjacent_overhead_ratio.notna().any() else "--",
    }


def _json(path) -> dict:
    return json.loads(Path(path).read_text())


def collect(*, c1, c1_table, c2, c3, resnet_sweep, c4, c5, c5_table, c6, baseline_records, claims_check_table,
            atlases, compare) -> dict[str, str]:
    """All macros, from the result files (paths; see the ``paper_macros`` rule)."""
    c1d, c2d, c3d = _json(c1), _json(c2), _json(c3)
    macros = {}
    parts = [
        lstm(c1d, pd.read_parquet(c1_table), c2d),
        reeviction(c2d),
        resnet(c3d, pd.read_parquet(resnet_sweep), c3d.get("overheads", {})),
        forensics(_json(c4)),
        ablation(_json(c5), pd.read_parquet(c5_table)),
        determinism(_json(c6)),
        baselines([_json(p) for p in baseline_records]),
        claims_check(pd.read_parquet(claims_check_table)),
        atlas([_json(p) for p in atlases]),
        comparison(pd.read_parquet(compare)),
    ]
    for part in parts:
        for k, v in part.items():
            if not NAME.match(k) or k in macros:
                raise ValueError(f"bad or duplicate macro name {k!r}")
            macros[k] = v
    return macros


def render(macros: dict[str, str]) -> str:
    lines = ["% Generated by dtrlab from the results; do not edit.", ""]
    lines += [f"\\newcommand{{\\{k}}}{{{v}}}" for k, v in sorted(macros.items())]
    return "\n".join(lines) + "\n"


def defined(text: str) -> set[str]:
    """Names defined by a rendered macros file."""
    return set(re.findall(r"\\newcommand\{\\([A-Za-z]+)\}", text))
