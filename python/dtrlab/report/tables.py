"""The paper's LaTeX tables (booktabs), each built from tidy results by one
function returning the ``tabular`` as text; ``\\input`` it inside a table
environment whose caption lives in the paper."""

from __future__ import annotations

import math

import pandas as pd


def escape(v) -> str:
    return (str(v).replace("\\", r"\textbackslash{}").replace("_", r"\_").replace("%", r"\%")
            .replace("&", r"\&").replace("#", r"\#").replace("*", r"$^{*}$"))


def integer(v) -> str:
    """1234567 → 1,234,567 ('--' for missing)."""
    return "--" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{int(v):,}"


def decimal(digits: int):
    def fmt(v) -> str:
        return "--" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{float(v):.{digits}f}"

    return fmt


def booktabs(df: pd.DataFrame, formats: dict | None = None, align: str | None = None) -> str:
    """``df`` as a booktabs tabular; ``formats`` maps columns to formatters,
    other cells are escaped text."""
    formats = formats or {}
    align = align or "".join("r" if c in formats else "l" for c in df.columns)
    cells = {c: [formats[c](v) if c in formats else escape(v) for v in df[c]] for c in df.columns}
    lines = [rf"\begin{{tabular}}{{{align}}}", r"\toprule", " & ".join(escape(c) for c in df.columns) + r" \\",
             r"\midrule"]
    for i in range(len(df)):
        lines.append(" & ".join(cells[c][i] for c in df.columns) + r" \\")
    if not len(df):
        lines.append(rf"\multicolumn{{{len(df.columns)}}}{{c}}{{(none)}} \\")
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)


TRACE_NAMES = {"densenet": "DenseNet-121", "inception": "Inception-v4", "lstm": "LSTM", "resnet32": "ResNet-32",
               "transformer": "Transformer", "treelstm": "TreeLSTM", "unet": "U-Net", "unroll_gan": "Unrolled GAN",
               # captured from stock PyTorch (dtrlab.capture)
               "pt_resnet50": "ResNet-50", "pt_vit_b_16": "ViT-B/16", "pt_gpt2_small": "GPT-2 small",
               "pt_lstm_lm": "LSTM LM", "pt_unet": "U-Net"}


def baselines(df: pd.DataFrame) -> str:
    t = pd.DataFrame({"trace": [TRACE_NAMES.get(k, k) for k in df.trace], "peak (B)": df.peak,
                      "compute": df.compute, "constants (B)": df.const})
    return booktabs(t, {"peak (B)": integer, "compute": integer, "constants (B)": integer})


def lstm_points(c1: pd.DataFrame, points) -> str:
    """The paper's LSTM budgets: outcome, overhead, evictions, regime."""
    sel = c1[c1.ratio.round(6).isin([round(float(p), 6) for p in points])].sort_values("ratio")
    t = pd.DataFrame({"budget (of peak)": sel.ratio, "budget (B)": sel.budget, "overhead (×)": sel.overhead,
                      "evictions": sel.evictions, "distinct": sel.distinct_evicted,
                      "per storage": sel.evictions_per_storage, "regime": sel.regime})
    return booktabs(t, {"budget (of peak)": decimal(3), "budget (B)": integer, "overhead (×)": decimal(4),
                        "evictions": integer, "distinct": integer, "per storage": decimal(2)})


def reeviction(c2: dict) -> str:
    """Fast vs slow LSTM runs: how evictions spread over storages."""
    rows = [("evictions", "evictions", integer), ("distinct storages evicted", "distinct_evicted", integer),
            ("evictions per evicted storage", "evictions_per_storage", decimal(2)),
            ("most evictions of one storage", "max_per_storage", integer),
            ("share of the ten most evicted", "top10_share", lambda v: f"{100 * v:.2f}\\%")]
    fast, slow = c2["ratios"]["fast"], c2["ratios"]["slow"]
    lines = [r"\begin{tabular}{lrr}", r"\toprule",
             rf" & fast ({fast:.3f}) & slow ({slow:.3f}) \\", r"\midrule"]
    lines.append(rf"overhead (×) & {c2['overheads']['fast']:.2f} & {c2['overheads']['slow']:.2f} \\")
    for label, key, fmt in rows:
        lines.append(rf"{label} & {fmt(c2['fast'][key])} & {fmt(c2['slow'][key])} \\")
    lines.append(rf"\midrule Jaccard index of the evicted sets & \multicolumn{{2}}{{c}}{{{c2['jaccard']:.5f}}} \\")
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)


def forensics(c4: dict) -> str:
    """Per forensics budget: outcome, pinned bytes, depth, nesting, failure."""
    rows = []
    for r in sorted(c4, key=float):
        p = c4[r]
        f = p.get("fail") or {}
        rows.append({"budget (of peak)": float(r), "budget (B)": p["budget"], "outcome": p["status"],
                     "peak pinned (B)": p["peak_pinned"], "depth at peak": p["depth_at_peak_pinned"],
                     "max. nesting": p["max_nesting_depth"], "request (B)": f.get("request"),
                     "over budget (B)": f.get("over_by")})
    t = pd.DataFrame(rows)
    return booktabs(t, {"budget (of peak)": decimal(3), "budget (B)": integer, "peak pinned (B)": integer,
                        "depth at peak": integer, "max. nesting": integer, "request (B)": integer,
                        "over budget (B)": integer}, align="rrlrrrrr")


def ablation(c5: pd.DataFrame) -> str:
    """Per heuristic: its score terms, LSTM regime switching, ResNet-32 inversions."""
    t = c5.sort_values(["cost_term", "size_term", "staleness_term", "heuristic", "seed"])
    t = pd.DataFrame({"heuristic": t.heuristic + t.seed.map(lambda s: f" (seed {s})" if s else ""),
                      "cost": t.cost_term, "size": t.size_term.map({True: "yes", False: "--"}),
                      "staleness": t.staleness_term.map({True: "yes", False: "--"}),
                      "LSTM switches": t.lstm_switches.map({True: "yes", False: "no"}),
                      # Only meaningful where two neighbouring LSTM budgets both succeeded.
                      "largest adjacent ratio": t.lstm_max_adjacent_factor.where(
                          t.lstm_statuses.map(_has_ok_pair)),
                      "ResNet-32 OOM bands": t.resnet32_inversions,
                      "band": t.resnet32_inversion_ratios.replace("", "--")})
    return booktabs(t, {"largest adjacent ratio": decimal(2), "ResNet-32 OOM bands": integer}, align="llcclrrl")


def _has_ok_pair(statuses: str) -> bool:
    s = statuses.split("/")
    return any(a == b == "ok" for a, b in zip(s, s[1:]))


def claims_check(df: pd.DataFrame) -> str:
    t = pd.DataFrame({"claim": df.claim, "quantity": df.key, "published": df.published, "computed": df.computed,
                      "match": df.match.map({True: "yes", False: "\\textbf{no}"})})
    return booktabs(t, {"match": str, "published": lambda v: escape(_short(v)),
                        "computed": lambda v: escape(_short(v))}, align="llrrc")


def _short(v) -> str:
    """Long floats shortened to 10 significant digits for the table."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if str(v).lstrip("-").isdigit():
        return f"{int(v):,}"
    return f"{f:.10g}"


def short_ratio(v: float) -> str:
    """A range edge at the precision it was configured with (0.10, 0.1063)."""
    for digits in (2, 3, 4, 5, 6):
        if abs(round(v, digits) - v) < 1e-6:
            return f"{v:.{digits}f}"
    return f"{v:.6f}"


def atlas_summary(atlases: list[dict]) -> str:
    """Per mapped trace: classes, holes, share of the range mapped exactly."""
    rows = []
    for a in atlases:
        width = a["hi_budget"] - a["lo_budget"] + 1
        exact = sum(c["hi"] - c["lo"] + 1 for c in a["classes"] if c.get("exact"))
        by = {s: sum(c["hi"] - c["lo"] + 1 for c in a["classes"] if c["status"] == s) / width
              for s in ("ok", "oom", "thrashed")}
        unresolved = sum((a.get("unresolved_bytes") or {}).values())
        rows.append({"trace": TRACE_NAMES.get(a["trace"], a["trace"]), "heuristic": a["heuristic"],
                     "range (of peak)": f"{short_ratio(a['lo_budget'] / a['peak'])}--{short_ratio(a['hi_budget'] / a['peak'])}",
                     "classes": len(a["classes"]), "holes": len(a["holes"]), "runs": a["runs"],
                     "work": a.get("work", 0.0),
                     "exact": f"{100 * exact / width:.1f}\\%", "ok": f"{100 * by['ok']:.1f}\\%",
                     "OOM": f"{100 * by['oom']:.1f}\\%", "thrashed": f"{100 * by['thrashed']:.1f}\\%",
                     "unresolved (B)": unresolved})
    t = pd.DataFrame(rows)
    return booktabs(t, {"classes": integer, "holes": integer, "runs": integer, "work": lambda w: integer(round(w)),
                        "exact": str, "ok": str, "OOM": str, "thrashed": str, "unresolved (B)": integer},
                    align="llcrrrrrrrrr")


def holes(df: pd.DataFrame, extra_columns=()) -> str:
    """The feasibility holes with their byte edges (and whether retention helps)."""
    lines = [r"\begin{tabular}{llrrrl" + "l" * len(extra_columns) + "}", r"\toprule",
             "trace & heuristic & first byte & last byte & width (B) & of peak"
             + "".join(" & retention removes OOM" for _ in extra_columns) + r" \\", r"\midrule"]
    if len(df) == 0:
        lines.append(rf"\multicolumn{{{6 + len(extra_columns)}}}{{c}}{{no holes found}} \\")
    for _, r in df.iterrows():
        cells = [escape(TRACE_NAMES.get(r.trace, r.trace)), r.heuristic, f"{r.lo:,}", f"{r.hi:,}",
                 f"{r.bytes_wide:,}", f"{r.lo_ratio:.6f}--{r.hi_ratio:.6f}"]
        cells += ["n/a" if r[c] is None or r[c] != r[c] else ("yes" if r[c] else "no") for c in extra_columns]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)


def compare(df: pd.DataFrame) -> str:
    """Every trace, public (2020) and captured, on the same DTR sweep and atlas."""
    def share(v):
        return "--" if v is None or pd.isna(v) else f"{100 * v:.0f}\\%"

    t = pd.DataFrame({
        "trace": [TRACE_NAMES.get(k, k) for k in df.trace],
        "from": ["captured" if c else "2020" for c in df.captured],
        "peak (MB)": [p / 1e6 for p in df.peak],
        "constants": df.const_share,
        "smallest ok": df.smallest_ok_ratio,
        "slow": df.slow_budgets,
        "switches": df.regime_switches,
        "largest ratio": df.largest_adjacent_overhead_ratio,
        "inversions": df.inversions,
        "holes": df.holes,
        "widest hole (B)": df.widest_hole_bytes,
        "OOM holes": df.oom_holes,
        "depth": df.oom_max_depth,
        "pinned": df.oom_max_pinned_share,
        "exact": df.atlas_exact_share,
    })
    return booktabs(t, {"peak (MB)": lambda v: integer(round(v)), "constants": share, "smallest ok": decimal(3),
                        "slow": integer, "switches": integer, "largest ratio": decimal(2), "inversions": integer,
                        "holes": integer, "widest hole (B)": integer, "OOM holes": integer, "depth": integer,
                        "pinned": share, "exact": share}, align="llrrrrrrrrrrrrr")
