"""The side-by-side figure: DTR's overhead against the budget on every trace,
one small panel per trace (public ones first, then the captured ones), all on
one sweep, so that no two curves cross in one panel."""

from __future__ import annotations

import math

import pandas as pd

from dtrlab.report.style import COLORS, MARKERS, TEXT, pyplot, save
from dtrlab.report.tables import TRACE_NAMES

#: Panels per row: four fit a page at a legible size.
COLUMNS = 4


def compare_figure(sweeps: dict[str, pd.DataFrame], captured: set[str], pdf_path, png_path) -> None:
    """Overhead (log scale) of each ok budget; failed budgets as crosses on
    the panel's floor. Each panel has its own overhead scale (the traces'
    overheads differ by orders of magnitude) and the same budget axis."""
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    order = [t for t in sweeps if t not in captured] + [t for t in sweeps if t in captured]
    rows = max(1, math.ceil(len(order) / COLUMNS))
    fig, axes = plt.subplots(rows, COLUMNS, figsize=(TEXT, 1.5 * rows + 0.35), sharex=True, squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k >= len(order):
            ax.set_visible(False)
            continue
        t = order[k]
        df = sweeps[t].sort_values("ratio")
        ok, bad = df[df.status == "ok"], df[df.status != "ok"]
        color = COLORS["slow"] if t in captured else COLORS["fast"]
        ax.plot(ok.ratio, ok.overhead, marker=MARKERS["ok"], markersize=1.6, linewidth=0.8, color=color)
        ax.set_yscale("log")
        lo = float(ok.overhead.min()) if len(ok) else 1.0
        hi = float(ok.overhead.max()) if len(ok) else 1.0
        floor = lo / 1.15
        ax.plot(bad.ratio, [floor] * len(bad), linestyle="none", marker=MARKERS["oom"], markersize=2.4,
                color=COLORS["neutral"], alpha=0.8)
        ax.set_ylim(floor / 1.1, max(hi * 1.3, floor * 1.6))
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.tick_params(labelsize=6.5, length=2, pad=1)
        ax.set_xlim(0, 1.02)
        ax.set_title(TRACE_NAMES.get(t, t) + (" (captured)" if t in captured else ""), fontsize=7, pad=2)
        if k % COLUMNS == 0:
            ax.set_ylabel("overhead (×)", fontsize=6.5)
        if k >= len(order) - COLUMNS:
            ax.set_xlabel("budget (of peak)", fontsize=6.5)
            ax.xaxis.set_tick_params(labelbottom=True)
    fig.tight_layout(h_pad=0.6, w_pad=0.6)
    save(fig, pdf_path, png_path)
    plt.close(fig)
