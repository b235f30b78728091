"""Rules of the paper: its tables and macros from the results, then the
compiled PDF (the notebooks that draw the figures are papermill rules)."""

from __future__ import annotations

import re

import pandas as pd

from dtrlab.atomic import write_text
from dtrlab.report import paper as latex
from dtrlab.steps import Step, step
from dtrlab.steps.io import read_json


@step()
def paper_tables(s: Step) -> None:
    """Every table of :data:`dtrlab.report.paper.LAYOUT` made by this rule."""
    from dtrlab.report import tables

    i = s.input
    texts = {
        "baselines": lambda: tables.baselines(pd.read_parquet(i.baselines)),
        "lstm_points": lambda: tables.lstm_points(pd.read_parquet(i.c1_table), s.params.lstm_points),
        "reeviction": lambda: tables.reeviction(read_json(i.c2)),
        "forensics": lambda: tables.forensics(read_json(i.c4)),
        "ablation": lambda: tables.ablation(pd.read_parquet(i.c5_table)),
        "claims_check": lambda: tables.claims_check(pd.read_parquet(i.claims_check)),
        "atlas_summary": lambda: tables.atlas_summary([read_json(p) for p in i.atlases]),
        "compare": lambda: tables.compare(pd.read_parquet(i.compare)),
    }
    if set(texts) != set(s.output):
        raise ValueError(f"paper_tables writes {sorted(texts)}, the rule declares {sorted(s.output)}")
    for name, text in texts.items():
        write_text(s.output[name], text())


@step()
def paper_macros(s: Step) -> None:
    """Every number of the prose as a LaTeX macro (inputs named as
    :func:`dtrlab.report.macros.collect` reads them)."""
    from dtrlab.report import macros

    write_text(s.output.macros, macros.render(macros.collect(**s.input)))


@step()
def paper(s: Step) -> None:
    """main.tex compiled with the generated files laid out beside it (input
    ``generated``: LAYOUT's files, in its order) and the commit (param ``code``)
    printed under each figure."""
    generated = s.input.generated
    files = dict(zip(latex.LAYOUT, generated))
    misplaced = [f"{dest} <- {path}" for (dest, g), path in zip(latex.LAYOUT.items(), generated)
                 if not path.replace("\\", "/").endswith("/" + g.path)]
    if len(generated) != len(latex.LAYOUT) or misplaced:
        raise ValueError(f"paper: the generated files must come in LAYOUT order ({len(generated)} given, "
                         f"{len(latex.LAYOUT)} read; misplaced: {misplaced[:3]})")
    # `git describe` may name a tag with characters TeX must not see.
    code = re.sub(r"[^\w.+-]", "-", s.params.code, flags=re.ASCII)[:100] or "unknown"
    latex.build(s.input.main, s.input.bib, files, s.output.pdf, code_version=code)
    # The layout's own check: no page but the last of the body and of the
    # whole is left more than half empty (a float alone, a page broken early).
    from dtrlab.report import pages

    short = pages.near_empty_pages(s.output.pdf, parts=(pages.APPENDIX,))
    if short:
        fills = pages.page_fill(s.output.pdf)
        raise ValueError(f"paper: page(s) {', '.join(map(str, short))} of {s.output.pdf} are more than half empty "
                         f"(filled {', '.join(f'{fills[i - 1]:.2f}' for i in short)}): mend the layout")
