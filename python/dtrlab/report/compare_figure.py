"""The side-by-side figure: DTR's overhead against the budget on every trace,
the public ones and the captured ones in two panels, on one sweep."""

from __future__ import annotations

import pandas as pd

from dtrlab.report.style import COLORS, MARKERS, PAGE, pyplot, save
from dtrlab.report.tables import TRACE_NAMES


def compare_figure(sweeps: dict[str, pd.DataFrame], captured: set[str], pdf_path, png_path) -> None:
    """Overhead (log scale) of each ok budget; failed budgets as crosses on the floor."""
    plt = pyplot()
    import seaborn as sns
    from matplotlib.ticker import FuncFormatter, LogLocator

    groups = [("public traces (2020)", [t for t in sweeps if t not in captured]),
              ("captured from PyTorch", [t for t in sweeps if t in captured])]
    groups = [(title, ts) for title, ts in groups if ts]
    fig, axes = plt.subplots(1, len(groups), figsize=(PAGE, 2.6), sharey=True, squeeze=False)
    palette = sns.color_palette("colorblind", max(len(ts) for _, ts in groups))
    for ax, (title, ts) in zip(axes[0], groups):
        for k, t in enumerate(ts):
            df = sweeps[t].sort_values("ratio")
            ok = df[df.status == "ok"]
            ax.plot(ok.ratio, ok.overhead, marker=MARKERS["ok"], markersize=2, linewidth=0.9, color=palette[k],
                    label=TRACE_NAMES.get(t, t))
            bad = df[df.status != "ok"]
            ax.plot(bad.ratio, [1.0] * len(bad), linestyle="none", marker=MARKERS["oom"], markersize=2.5,
                    color=palette[k], alpha=0.5)
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        ax.set_title(title, fontsize=8)
        ax.set_xlabel("budget (fraction of the trace's peak)")
        ax.legend(fontsize=6, ncols=2, loc="upper right")
    axes[0, 0].set_ylabel("overhead (×)")
    fig.text(0.01, -0.02, "crosses on the floor: budgets that failed (OOM or thrashed)", fontsize=6,
             color=COLORS["neutral"])
    fig.tight_layout()
    save(fig, pdf_path, png_path)
    plt.close(fig)
