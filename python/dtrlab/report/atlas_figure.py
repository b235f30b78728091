"""The atlas figure: every trace's budget axis as execution classes coloured
by status (hatched too, for greyscale print), holes marked."""

from __future__ import annotations

from dtrlab.report.style import COLORS, HATCH, pyplot, save


def bars(atlas) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """The atlas's bars by look (colour, hatch): each a budget range
    ``(lo, hi)``, neighbouring classes of one look joined. One collection a
    look: an atlas has tens of thousands of classes, and matplotlib's cost
    is per collection and per bar."""
    out: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for c in sorted(atlas.classes, key=lambda c: c.lo):
        color = COLORS["sampled"] if not c.exact and c.status in HATCH else COLORS[c.status]
        runs = out.setdefault((color, HATCH.get(c.status, "")), [])
        if runs and runs[-1][1] + 1 == c.lo:
            runs[-1] = (runs[-1][0], c.hi)
        else:
            runs.append((c.lo, c.hi))
    return out


def atlas_figure(atlases, pdf_path, png_path) -> None:
    """One row per atlas: execution classes along the budget axis coloured by
    status (overhead of ok classes on top), holes marked."""
    from matplotlib.patches import Patch

    plt = pyplot()

    n = len(atlases)
    fig, axes = plt.subplots(n, 1, figsize=(7.2, 1.25 * n + 0.6), squeeze=False)
    for ax, a in zip(axes[:, 0], atlases):
        peak = a.peak
        for (color, hatch), runs in bars(a).items():
            ax.broken_barh([(lo / peak, (hi - lo + 1) / peak) for lo, hi in runs], (0, 1), facecolors=color,
                           hatch=hatch, edgecolor="none", linewidth=0)
        holes = a.holes()
        for h in holes:
            ax.plot([(h["lo"] + h["hi"]) / 2 / peak], [1.12], marker="v", color="black", markersize=4,
                    clip_on=False)
        ax.set_xlim(a.lo_budget / peak, a.hi_budget / peak)
        ax.set_ylim(0, 1)
        ax.set_yticks([])
        ax.set_ylabel(f"{a.trace}\n{a.heuristic}", rotation=0, ha="right", va="center", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.ticklabel_format(axis="x", useOffset=False)
        n_holes = f"{len(holes)} hole" + ("" if len(holes) == 1 else "s")
        ax.text(1.005, 0.5, f"{len(a.classes):,} classes\n{n_holes}\n{100 * a.exact_share:.1f}% exact",
                transform=ax.transAxes, fontsize=6.5, va="center")
    axes[-1, 0].set_xlabel("budget (fraction of the baseline peak)")
    handles = [Patch(facecolor=COLORS[s], hatch=HATCH.get(s, ""), label=s) for s in ("ok", "oom", "thrashed")]
    handles.append(Patch(facecolor=COLORS["sampled"], label="sampled (not exact)"))
    handles.append(Patch(facecolor=COLORS["mixed"], label="unresolved (run or work limit)"))
    fig.legend(handles=handles, loc="upper center", ncol=5, frameon=False, fontsize=7)
    fig.tight_layout(rect=(0, 0, 0.9, 0.95))
    save(fig, pdf_path, png_path)
    plt.close(fig)
