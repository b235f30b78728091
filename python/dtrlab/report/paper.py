"""Compile the paper: ``paper/main.tex`` with the generated figures, tables and
macros laid out beside it, built by latexmk in a scratch folder and moved
into place atomically. The PDF is byte-reproducible (fixed dates, no trailer
id, no file paths: see the preamble of main.tex and :data:`TEX_ENV`)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Mapping

from dtrlab.atomic import atomic_open

#: Where each generated file sits beside main.tex (key, as \input or
#: \includegraphics names it) and where the workflow writes it (value,
#: relative to the results folder).
LAYOUT: dict[str, str] = {
    "macros.tex": "paper/macros.tex",
    "figures/lstm_regimes.pdf": "figures/lstm_regimes.pdf",
    "figures/eviction_distributions.pdf": "figures/eviction_distributions.pdf",
    "figures/resnet_inversion.pdf": "figures/resnet_inversion.pdf",
    "figures/pinned_frontier.pdf": "figures/pinned_frontier.pdf",
    "figures/ablation_heatmap.pdf": "figures/ablation_heatmap.pdf",
    "figures/atlas.pdf": "atlas/atlas.pdf",
    "tables/baselines.tex": "tables/baselines.tex",
    "tables/lstm_points.tex": "tables/lstm_points.tex",
    "tables/reeviction.tex": "tables/reeviction.tex",
    "tables/forensics.tex": "tables/forensics.tex",
    "tables/ablation.tex": "tables/ablation.tex",
    "tables/claims_check.tex": "tables/claims_check.tex",
    "tables/atlas_summary.tex": "tables/atlas_summary.tex",
    "tables/holes.tex": "atlas/holes.tex",
}

#: Fixed dates for pdfTeX (\today, /CreationDate): the PDF depends on its sources only.
TEX_ENV = {"SOURCE_DATE_EPOCH": "0", "FORCE_SOURCE_DATE": "1", "TZ": "UTC"}

_REFERENCE = re.compile(r"\\(input|includegraphics)(?:\[[^\]]*\])?\{([^}]+)\}")


class PaperBuildError(RuntimeError):
    """LaTeX failed; the message carries the errors from the log."""


def strip_comments(tex: str) -> str:
    """``tex`` without its comments (an escaped ``\\%`` is text, not a comment)."""
    return "\n".join(re.sub(r"(?<!\\)%.*", "", line) for line in tex.splitlines())


def references(tex: str) -> list[tuple[str, str]]:
    """Every ``\\input``/``\\includegraphics`` target of ``tex`` (comments ignored)."""
    body = strip_comments(tex)
    return [(kind, name if "." in Path(name).name else name + (".tex" if kind == "input" else ".pdf"))
            for kind, name in _REFERENCE.findall(body)]


def _errors(log: str) -> str:
    lines = log.splitlines()
    keep = [i for i, line in enumerate(lines) if line.startswith("!") or re.match(r"^\./?[\w/.-]+:\d+:", line)]
    out = []
    for i in keep[:5]:
        out += lines[i:i + 3]
    return "\n".join(out) or "\n".join(lines[-20:])


#: What main.tex reads (if present) for ``\CodeVersion``, the commit its
#: figures' notes name (``\madeby{rule}``).
BUILD_INFO = "dtrlab-build.tex"
_CODE_VERSION = re.compile(r"[\w.+-]{1,100}", re.ASCII)


def layout_files(results: str | os.PathLike) -> dict[str, Path]:
    """Each generated file main.tex reads, where the workflow writes it."""
    return {dest: Path(results) / src for dest, src in LAYOUT.items()}


def build(main_tex: str | os.PathLike, bib: str | os.PathLike | None, generated: Mapping[str, str | os.PathLike],
          out_pdf: str | os.PathLike, latexmk: str = "latexmk", code_version: str = "unknown") -> None:
    """Lay out the sources in a scratch folder, run latexmk, move the PDF in.
    ``generated`` gives every file of :data:`LAYOUT` (its name beside
    main.tex -> the file). ``code_version`` (``git describe`` of the
    workflow) is printed under each figure beside the rule that made it."""
    if set(generated) != set(LAYOUT):
        raise ValueError(f"generated files must be exactly main.tex's: missing {sorted(set(LAYOUT) - set(generated))}, "
                         f"unknown {sorted(set(generated) - set(LAYOUT))}")
    if not isinstance(code_version, str) or not _CODE_VERSION.fullmatch(code_version):
        raise ValueError(f"code_version must be a git describe string (letters, digits, . _ + -), "
                         f"got {code_version!r}")
    if shutil.which(latexmk) is None:
        raise PaperBuildError(f"{latexmk} not found: install TeX (see README: scripts/setup-system.sh)")
    with tempfile.TemporaryDirectory(prefix="dtrlab-paper-") as tmp:
        build_dir = Path(tmp)
        shutil.copyfile(main_tex, build_dir / "main.tex")
        if bib is not None:
            shutil.copyfile(bib, build_dir / "references.bib")
        (build_dir / BUILD_INFO).write_text(f"\\newcommand{{\\CodeVersion}}{{\\detokenize{{{code_version}}}}}\n")
        for dest, src in generated.items():
            (build_dir / dest).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, build_dir / dest)
        p = subprocess.run([latexmk, "-pdf", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error",
                            "main.tex"], cwd=build_dir, env={**os.environ, **TEX_ENV}, capture_output=True,
                           text=True, timeout=600)
        log = (build_dir / "main.log").read_text(errors="replace") if (build_dir / "main.log").exists() else ""
        if p.returncode != 0 or not (build_dir / "main.pdf").exists():
            raise PaperBuildError(f"latexmk failed on {main_tex}:\n{_errors(log) or p.stdout[-2000:]}")
        problems = [line for line in log.splitlines()
                    if re.search(r"(Reference|Citation) .* undefined|undefined references", line)]
        if problems:
            raise PaperBuildError(f"{main_tex}: unresolved references:\n" + "\n".join(problems[:10]))
        # A float taller than the page loses its caption off the page's foot.
        too_large = [line for line in log.splitlines() if "Float too large for page" in line]
        if too_large:
            raise PaperBuildError(f"{main_tex}: a figure or table does not fit on a page (limit its height):\n"
                                  + "\n".join(too_large[:10]))
        with atomic_open(out_pdf, "wb") as f:
            f.write((build_dir / "main.pdf").read_bytes())
