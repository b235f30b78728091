"""The paper's figures, each drawn from tidy results by one function that
returns a matplotlib figure (save it with :func:`dtrlab.report.style.save`).

Functions take DataFrames and summary dicts, never paths, so notebooks and
tests drive them the same way.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dtrlab.analysis.inversions import runs
from dtrlab.report.atlas_figure import atlas_figure  # noqa: F401  (the atlas target's figure)
from dtrlab.report.style import COLORS, COLUMN, MARKERS, PAGE, pyplot

GB = 1e9
#: Denser hatching for the small cells of the heatmap.
HATCH_SMALL = {"oom": "//////", "thrashed": "xxxx"}


def _panel_label(ax, label: str) -> None:
    ax.text(-0.02, 1.02, label, transform=ax.transAxes, fontweight="bold", ha="right", va="bottom")


def _budget_panels(fig, top, bottom):
    """Finish two stacked panels sharing the budget axis."""
    bottom.set_xlabel("budget (fraction of the baseline peak)")
    bottom.ticklabel_format(axis="x", useOffset=False)
    _panel_label(top, "a")
    _panel_label(bottom, "b")
    fig.align_ylabels((top, bottom))
    return fig


def lstm_regimes(sweep: pd.DataFrame, summary: dict):
    """LSTM overhead (log scale) and evictions per evicted storage against the
    budget, each budget coloured by its regime; the paper's budgets labelled.

    ``sweep``: the C1 table (ratio, overhead, evictions_per_storage, regime);
    ``summary``: the C1 summary (points, rule.threshold, largest ratios).
    """
    plt = pyplot()
    ok = sweep[sweep.status == "ok"].sort_values("ratio")
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(PAGE * 0.62, 3.6), sharex=True,
                                  gridspec_kw={"height_ratios": [2, 1]})
    for ax_, col in ((ax, "overhead"), (ax2, "evictions_per_storage")):
        ax_.plot(ok.ratio, ok[col], color="0.75", lw=0.8, zorder=1)
        if col == "overhead":
            ax_.set_yscale("log")
        for regime in ("fast", "slow"):
            part = ok[ok.regime == regime]
            ax_.scatter(part.ratio, part[col], s=16, marker=MARKERS[regime], color=COLORS[regime],
                        label=f"{regime} regime", zorder=2, edgecolor="white", linewidth=0.4)
    failed = sweep[sweep.status != "ok"]
    for _, r in failed.iterrows():
        ax.axvline(r.ratio, color=COLORS["oom"], lw=0.6, ls=":")
    ax.axhline(summary["rule"]["threshold"], color="0.4", lw=0.7, ls="--")
    ax.text(ok.ratio.max(), summary["rule"]["threshold"] * 1.08, "regime threshold", ha="right", va="bottom",
            fontsize=6.5, color="0.3")
    # The paper's budgets, labels alternately left and right so neighbours
    # 0.001 apart stay readable.
    labelled = [(r, p) for r, p in sorted(summary["points"].items()) if p["overhead"] is not None]
    for r, p in labelled:
        i = [q for q, pq in labelled if pq["regime"] == p["regime"]].index(r)
        dx = -10 if i % 2 == 0 else 10
        ax.annotate(f"{float(r):.3f}: {p['overhead']:.2f}×", (float(r), p["overhead"]),
                    xytext=(dx, 14 if p["regime"] == "slow" else -14), textcoords="offset points",
                    ha="right" if dx < 0 else "left", va="center", fontsize=6, color="0.15",
                    arrowprops={"arrowstyle": "-", "color": "0.5", "lw": 0.5})
    from matplotlib.ticker import LogLocator, NullFormatter

    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(lambda y, _: f"{y:g}")
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(ok.overhead.min() * 0.6, ok.overhead.max() * 1.4)
    ax.set_ylabel("overhead (×, log)")
    ax.legend(loc="upper right", fontsize=7, ncol=2, bbox_to_anchor=(1, 1.22))
    ax2.set_ylabel("evictions per\nevicted storage")
    return _budget_panels(fig, ax, ax2)


def eviction_distributions(counts: pd.DataFrame):
    """How often each evicted storage was evicted, one distribution per run
    (``counts``: run, storage_id, evictions): histogram and cumulative share."""
    plt = pyplot()
    import seaborn as sns

    runs = sorted(counts.run.unique())
    palette = {r: COLORS["fast" if r.startswith("fast") else "slow"] for r in runs}
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(PAGE * 0.75, 2.3))
    sns.histplot(counts, x="evictions", hue="run", hue_order=runs, palette=palette, discrete=True, stat="count",
                 element="step", fill=True, alpha=0.35, ax=ax, common_norm=False)
    ax.set_xlabel("evictions of one storage")
    ax.set_ylabel("storages")
    ax.get_legend().set_title(None)
    # Share of all evictions carried by the k most evicted storages: a hot set
    # would rise steeply at the left.
    for r in runs:
        e = np.sort(counts[counts.run == r].evictions.to_numpy())[::-1]
        share = np.cumsum(e) / e.sum()
        ax2.plot(np.arange(1, len(e) + 1) / len(e), share, color=palette[r], label=r,
                 ls="-" if r.startswith("fast") else "--")
    ax2.plot([0, 1], [0, 1], color="0.6", lw=0.6, ls=":")
    ax2.set_xlabel("fraction of evicted storages (most evicted first)")
    ax2.set_ylabel("share of evictions")
    ax2.legend(fontsize=7, loc="lower right")
    _panel_label(ax, "a")
    _panel_label(ax2, "b")
    fig.tight_layout()
    return fig


def _shade_bands(ax, sweep: pd.DataFrame, step: float) -> None:
    """Shade every run of consecutive failing budgets."""
    s = sweep.sort_values("ratio").reset_index(drop=True)
    for i, j in runs(s.status != "ok"):
        ax.axvspan(s.ratio[i] - step / 2, s.ratio[j] + step / 2, color=COLORS["band"], alpha=0.45, lw=0, zorder=0)


def _grid_step(ratios) -> float:
    d = np.diff(np.sort(np.asarray(ratios, dtype=float)))
    return float(np.min(d[d > 0])) if len(d) and (d > 0).any() else 0.001


def resnet_inversion(sweep: pd.DataFrame, inversions: pd.DataFrame):
    """ResNet-32: outcome and overhead against the budget, OOM bands shaded."""
    plt = pyplot()
    s = sweep.sort_values("ratio")
    step = _grid_step(s.ratio)
    fig, (ax0, ax) = plt.subplots(2, 1, figsize=(PAGE * 0.62, 3.0), sharex=True,
                                  gridspec_kw={"height_ratios": [1, 3]})
    for status in ("ok", "oom", "thrashed"):
        part = s[s.status == status]
        ax0.scatter(part.ratio, np.zeros(len(part)), marker=MARKERS[status], color=COLORS[status], s=18,
                    label=status, linewidth=0.3, edgecolor="white")
    ax0.set_yticks([])
    ax0.spines["left"].set_visible(False)
    ax0.set_ylabel("outcome", rotation=0, ha="right", va="center")
    ax0.legend(ncol=3, fontsize=7, loc="lower right", bbox_to_anchor=(1, 0.9))
    ok = s[s.status == "ok"]
    ax.plot(s.ratio, s.overhead, color="0.6", lw=0.8, marker="o", ms=2.5, mfc=COLORS["ok"], mec=COLORS["ok"])
    for a in (ax0, ax):
        _shade_bands(a, s, step)
    for _, band in inversions.iterrows():
        ax.annotate(f"inversion:\nOOM {band.lo_ratio:.3f}–{band.hi_ratio:.3f}",
                    ((band.lo_ratio + band.hi_ratio) / 2, ok.overhead.min()), xytext=(16, 0),
                    textcoords="offset points", ha="left", va="bottom", fontsize=6.5, color="0.2")
    ax.set_ylabel("overhead (×)")
    return _budget_panels(fig, ax0, ax)


def pinned_frontier(sweep: pd.DataFrame, frontier: pd.DataFrame, forensics: dict):
    """Peak pinned bytes and rematerialization depth against the budget, and
    the held frontier at the first failing forensics budget.

    ``frontier``: ratio, storage_id, bytes, state (locked/pinned), op_name;
    ``forensics``: the C4 summary by ratio (budget, fail request, ...)."""
    plt = pyplot()
    s = sweep.sort_values("ratio")
    step = _grid_step(s.ratio)
    fig = plt.figure(figsize=(PAGE, 2.5))
    grid = fig.add_gridspec(1, 3, width_ratios=[1.15, 1.15, 1], wspace=0.45)
    ax, ax2, ax3 = (fig.add_subplot(grid[0, i]) for i in range(3))
    ax.plot(s.ratio, s.budget / GB, color="0.45", ls="--", lw=0.8, label="budget")
    for status in ("ok", "oom", "thrashed"):
        part = s[s.status == status]
        ax.scatter(part.ratio, part.peak_pinned / GB, marker=MARKERS[status], color=COLORS[status], s=12,
                   label=f"peak pinned ({status})", linewidth=0.3, edgecolor="white")
    ax.set_ylabel("GB")
    ax.legend(fontsize=5.5, loc="upper left", handletextpad=0.2)
    ax2.plot(s.ratio, s.max_nesting_depth, color=COLORS["accent"], lw=0.9, label="max. nesting")
    ax2.plot(s.ratio, s.depth_at_peak_pinned, color=COLORS["fast"], lw=0.9, ls="--", marker=".", ms=3,
             label="depth at peak pinned")
    ax2.set_ylabel("rematerialization depth")
    ax2.legend(fontsize=6, loc="upper right", bbox_to_anchor=(1.0, 1.18), ncol=1)
    for a in (ax, ax2):
        _shade_bands(a, s, step)
        a.set_xlabel("budget (fraction of peak)")
        a.ticklabel_format(axis="x", useOffset=False)
        a.tick_params(axis="x", labelrotation=30, labelsize=6.5)
    failing = sorted(r for r, p in forensics.items() if p.get("fail"))
    if failing:
        r = failing[0]
        p = forensics[r]
        held = frontier[np.isclose(frontier.ratio, float(r))].sort_values("bytes", ascending=False)
        by_state = held.groupby("state").bytes.sum()
        bottom = 0.0
        for state, color in (("locked", COLORS["fast"]), ("pinned", COLORS["accent"])):
            v = by_state.get(state, 0) / GB
            n = int((held.state == state).sum())
            ax3.bar([0], [v], bottom=bottom, color=color, width=0.5, label=f"{state} ({n} storages)")
            bottom += v
        req = p["fail"]["request"] / GB
        ax3.bar([0], [req], bottom=bottom, color="white", edgecolor=COLORS["oom"], hatch="////", width=0.5,
                label="request")
        ax3.axhline(p["budget"] / GB, color="0.2", ls="--", lw=0.8)
        ax3.text(0.3, p["budget"] / GB, "budget", va="bottom", ha="left", fontsize=6.5)
        ax3.set_xlim(-0.5, 2.4)
        ax3.set_xticks([0])
        ax3.set_xticklabels([f"OOM at {float(r):.3f}"])
        ax3.set_ylabel("GB")
        ax3.legend(fontsize=6, loc="center right")
    else:
        ax3.set_axis_off()
        ax3.text(0.5, 0.5, "no failing budget", ha="center", transform=ax3.transAxes)
    for a, label in zip((ax, ax2, ax3), "abc"):
        _panel_label(a, label)
    return fig


def ablation_heatmap(lstm: pd.DataFrame, resnet: pd.DataFrame, table: pd.DataFrame):
    """log10 overhead of every heuristic at the LSTM regime budgets and over
    the ResNet-32 band; failed runs marked; one row per heuristic (seed 0 of
    random ones). ``table``: the C5 table, to order and label the rows."""
    plt = pyplot()
    import seaborn as sns

    order = list(dict.fromkeys(table.sort_values(["cost_term", "size_term", "staleness_term", "heuristic"],
                                                 na_position="first").heuristic))

    def matrix(df):
        df = df[df.seed == 0]
        val = df.pivot_table(index="heuristic", columns="ratio", values="overhead", aggfunc="first")
        status = df.pivot_table(index="heuristic", columns="ratio", values="status", aggfunc="first")
        rows = [h for h in order if h in status.index]
        return np.log10(val.reindex(index=rows, columns=status.columns)), status.reindex(rows)

    fig, axes = plt.subplots(1, 2, figsize=(PAGE, 0.19 * len(order) + 1.3),
                             gridspec_kw={"width_ratios": [max(2, lstm.ratio.nunique()), resnet.ratio.nunique()]})
    vmax = max(np.log10(lstm.overhead.max()), np.log10(resnet.overhead.max()))
    labels = {r.heuristic: _variant_label(r) for _, r in table.iterrows()}
    for ax, (df, title) in zip(axes, ((lstm, "LSTM"), (resnet, "ResNet-32"))):
        val, status = matrix(df)
        sns.heatmap(val, ax=ax, cmap="viridis", vmin=0, vmax=vmax, cbar=ax is axes[-1],
                    cbar_kws={"label": "log$_{10}$ overhead"}, linewidths=0.3, linecolor="white")
        for i, h in enumerate(status.index):
            for j, c in enumerate(status.columns):
                st = status.loc[h, c]
                if st != "ok":
                    ax.add_patch(plt.Rectangle((j, i), 1, 1, facecolor="0.93", edgecolor=COLORS[st],
                                               hatch=HATCH_SMALL.get(st, ""), lw=0))
        ax.set_title(title)
        ax.set_xlabel("budget (fraction of peak)")
        ax.set_xticklabels([f"{float(t.get_text()):.3f}" for t in ax.get_xticklabels()], rotation=90, fontsize=6)
        ax.set_ylabel("")
        ax.set_yticklabels([labels.get(t.get_text(), t.get_text()) for t in ax.get_yticklabels()], fontsize=6)
    axes[1].set_yticklabels([])
    from matplotlib.patches import Patch

    fig.legend(handles=[Patch(facecolor="0.93", edgecolor=COLORS[st], hatch=HATCH_SMALL[st], lw=0, label=st)
                        for st in ("oom", "thrashed")], loc="lower left", ncol=2, fontsize=7)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig



def _variant_label(row) -> str:
    if pd.isna(row.cost_term) or row.cost_term in (None, ""):
        return str(row.heuristic)
    size = "size" if row.size_term else "–"
    stale = "stale" if row.staleness_term else "–"
    return f"{row.heuristic} ({row.cost_term}, {size}, {stale})"
