"""One look for every figure: seaborn's paper theme, the Okabe-Ito palette
(colour-blind safe; status also carried by hatching or markers, so greyscale
print works), and byte-reproducible saving."""

from __future__ import annotations

import os
from typing import Iterable

from dtrlab.atomic import atomic_open

#: Okabe & Ito (2008) colours by meaning.
COLORS = {
    "ok": "#009E73",
    "fast": "#0072B2",
    "slow": "#D55E00",
    "oom": "#D55E00",
    "thrashed": "#CC79A7",
    "sampled": "#999999",
    "mixed": "#F0E442",
    "unknown": "#FFFFFF",
    "accent": "#E69F00",
    "neutral": "#000000",
    "band": "#F0E442",
}
HATCH = {"ok": "", "oom": "////", "thrashed": "xxxx"}
MARKERS = {"ok": "o", "fast": "o", "slow": "s", "oom": "X", "thrashed": "^"}

#: Widths of an article's text column and full page, in inches.
COLUMN, PAGE = 3.4, 7.0
#: The paper's own text width (A4 less 2.4 cm margins): a figure drawn at it
#: prints its fonts at the sizes set, not shrunk.
TEXT = (21.0 - 2 * 2.4) / 2.54


def pyplot():
    """matplotlib's pyplot on the headless backend, with the paper theme set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(context="paper", style="ticks", font_scale=0.9,
                  rc={"axes.spines.right": False, "axes.spines.top": False, "pdf.fonttype": 42,
                      "svg.hashsalt": "dtrlab", "figure.dpi": 100, "legend.frameon": False})
    return plt


def save(fig, pdf_path: str | os.PathLike, png_path: str | os.PathLike | None = None, *, rule: str | None = None,
         inputs: Iterable[str | os.PathLike] = (), params: dict | None = None) -> None:
    """Write ``fig`` as PDF (and PNG) atomically, with fixed metadata so the
    bytes depend on the figure only; record provenance when ``rule`` is given."""
    from dtrlab import provenance

    with atomic_open(pdf_path, "wb") as f:
        fig.savefig(f, format="pdf", bbox_inches="tight",
                    metadata={"CreationDate": None, "ModDate": None, "Producer": "dtrlab", "Creator": "dtrlab"})
    outputs = [pdf_path]
    if png_path is not None:
        with atomic_open(png_path, "wb") as f:
            fig.savefig(f, format="png", dpi=200, bbox_inches="tight", metadata={"Software": "dtrlab"})
        outputs.append(png_path)
    if rule is not None:
        provenance.record(outputs, rule, inputs=inputs, params=params)


def save_and_show(fig, name: str, inputs: Iterable[str | os.PathLike], *, out_dir: str | os.PathLike,
                  rule: str) -> None:
    """A notebook's figure: ``out_dir/name.pdf`` and ``.png`` (as :func:`save`,
    with its provenance), then shown inline."""
    from IPython.display import Image, display

    save(fig, f"{out_dir}/{name}.pdf", f"{out_dir}/{name}.png", rule=rule, inputs=inputs)
    display(Image(filename=f"{out_dir}/{name}.png"))
