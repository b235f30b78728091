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
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from dtrlab.atomic import atomic_open

@dataclass(frozen=True)
class Generated:
    """A file main.tex reads: where the workflow writes it (relative to the
    results folder) and the rule that makes it."""

    path: str
    rule: str


#: The paper's layout, written once: each generated file by its name beside
#: main.tex (as ``\input`` or ``\figurefrom`` names it). The paper rule's
#: inputs, the ``paper_tables`` rule's outputs, the rule printed under each
#: figure and the tests' checks of main.tex are all derived from it.
LAYOUT: dict[str, Generated] = {
    "macros.tex": Generated("paper/macros.tex", "paper_macros"),
    "figures/lstm_regimes.pdf": Generated("figures/lstm_regimes.pdf", "nb_lstm_regimes"),
    "figures/eviction_distributions.pdf": Generated("figures/eviction_distributions.pdf", "nb_lstm_regimes"),
    "figures/resnet_inversion.pdf": Generated("figures/resnet_inversion.pdf", "nb_resnet_inversion"),
    "figures/pinned_frontier.pdf": Generated("figures/pinned_frontier.pdf", "nb_resnet_inversion"),
    "figures/ablation_heatmap.pdf": Generated("figures/ablation_heatmap.pdf", "nb_ablation"),
    "figures/atlas.pdf": Generated("atlas/atlas.pdf", "atlas_report"),
    "figures/compare.pdf": Generated("compare/compare.pdf", "compare"),
    **{f"tables/{name}.tex": Generated(f"tables/{name}.tex", "paper_tables")
       for name in ("baselines", "lstm_points", "reeviction", "forensics", "ablation", "claims_check",
                    "atlas_summary", "compare")},
    "tables/holes.tex": Generated("atlas/holes.tex", "atlas_report"),
    # In a real runtime: measured, so under runtime/measured/ (see dtrlab.provenance.MEASURED).
    "runtime_macros.tex": Generated("runtime/measured/macros.tex", "runtime_report"),
    "tables/runtime.tex": Generated("runtime/measured/runtime.tex", "runtime_report"),
    "figures/runtime.pdf": Generated("runtime/measured/runtime.pdf", "runtime_report"),
}


def made_by(rule: str) -> dict[str, str]:
    """The files of :data:`LAYOUT` that ``rule`` makes: their stem (e.g. a
    table's name) -> path in the results folder."""
    return {Path(dest).stem: g.path for dest, g in LAYOUT.items() if g.rule == rule}


#: Fixed dates for pdfTeX (\today, /CreationDate): the PDF depends on its sources only.
TEX_ENV = {"SOURCE_DATE_EPOCH": "0", "FORCE_SOURCE_DATE": "1", "TZ": "UTC"}

_REFERENCE = re.compile(r"\\(input|includegraphics|figurefrom)(?:\[[^\]]*\])?\{([^}]+)\}")


class PaperBuildError(RuntimeError):
    """LaTeX failed; the message carries the errors from the log."""


def strip_comments(tex: str) -> str:
    """``tex`` without its comments (an escaped ``\\%`` is text, not a comment)."""
    return "\n".join(re.sub(r"(?<!\\)%.*", "", line) for line in tex.splitlines())


def references(tex: str) -> list[tuple[str, str]]:
    """Every ``\\input``/``\\includegraphics``/``\\figurefrom`` target of ``tex``
    (comments ignored; a macro's parameter, ``#2``, is not a file)."""
    body = strip_comments(tex)
    return [(kind, name if "." in Path(name).name else name + (".tex" if kind == "input" else ".pdf"))
            for kind, name in _REFERENCE.findall(body) if not name.startswith("#")]


def _errors(log: str) -> str:
    lines = log.splitlines()
    keep = [i for i, line in enumerate(lines) if line.startswith("!") or re.match(r"^\./?[\w/.-]+:\d+:", line)]
    out = []
    for i in keep[:5]:
        out += lines[i:i + 3]
    return "\n".join(out) or "\n".join(lines[-20:])


#: What main.tex reads (if present): ``\CodeVersion``, the commit its
#: figures' notes name, and the rule that made each figure (from LAYOUT).
BUILD_INFO = "dtrlab-build.tex"
_CODE_VERSION = re.compile(r"[\w.+-]{1,100}", re.ASCII)


def layout_files(results: str | os.PathLike) -> dict[str, Path]:
    """Each generated file main.tex reads, where the workflow writes it."""
    return {dest: Path(results) / g.path for dest, g in LAYOUT.items()}


def build_info(code_version: str) -> str:
    """``\\CodeVersion`` and, per figure, the rule that made it (read by
    main.tex's ``\\figurefrom``)."""
    lines = [f"\\newcommand{{\\CodeVersion}}{{\\detokenize{{{code_version}}}}}"]
    lines += [f"\\expandafter\\def\\csname dtrlab@rule@{dest.removesuffix('.pdf')}\\endcsname"
              f"{{\\detokenize{{{g.rule}}}}}" for dest, g in LAYOUT.items() if dest.startswith("figures/")]
    return "\n".join(lines) + "\n"


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
        (build_dir / BUILD_INFO).write_text(build_info(code_version))
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
