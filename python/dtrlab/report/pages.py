"""How full each page of a compiled PDF is: the share of the text block's
height that holds text, figures or tables, so that a float left alone on a
page, or a page broken early, is caught (the paper's own check, and its test).

Pages are rasterized with poppler's ``pdftoppm`` (a set-up dependency of the
paper) in grey at a low resolution; a row holds ink when any pixel is darker
than mid-grey. Gaps between ink shorter than :data:`MERGE_GAP` of the page
(line spacing, a caption's skip) count as filled; the page number, a small
mark alone at the foot of the page, does not count.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

#: Resolution of the raster (dpi): enough to see a line of text.
DPI = 40
#: Blank stretches shorter than this share of the page height count as filled.
MERGE_GAP = 0.03
#: The foot of the page where a lone small mark is the page number.
FOOTER = 0.10


#: How the paper's appendix opens, after a page break: the page before it
#: ends the body and may be short.
APPENDIX = "A Published values and ours"


class PageCheckError(RuntimeError):
    """The PDF could not be rasterized (poppler missing, or not a PDF)."""


def _read_pgm(path: Path) -> np.ndarray:
    data = path.read_bytes()
    fields, pos = [], 0
    while len(fields) < 4:  # magic, width, height, maxval; comments start with '#'
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    if fields[0] != b"P5" or int(fields[3]) > 255:
        raise PageCheckError(f"{path.name}: not an 8-bit greyscale PGM")
    w, h = int(fields[1]), int(fields[2])
    return np.frombuffer(data, dtype=np.uint8, count=w * h, offset=pos + 1).reshape(h, w)


def _ink_rows(page: np.ndarray) -> np.ndarray:
    return (page < 128).any(axis=1)


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each run of True rows."""
    padded = np.concatenate([[False], mask, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


def rasterize(pdf: str | os.PathLike, dpi: int = DPI) -> list[np.ndarray]:
    exe = shutil.which("pdftoppm")
    if exe is None:
        raise PageCheckError("pdftoppm not found: install poppler-utils (scripts/setup-system.sh)")
    with tempfile.TemporaryDirectory(prefix="dtrlab-pages-") as tmp:
        p = subprocess.run([exe, "-gray", "-r", str(dpi), str(pdf), str(Path(tmp) / "p")],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise PageCheckError(f"{pdf}: pdftoppm failed: {p.stderr.strip()[:300]}")
        return [_read_pgm(f) for f in sorted(Path(tmp).glob("p*.pgm"), key=lambda f: int(f.stem.split("-")[-1]))]


def page_fill(pdf: str | os.PathLike) -> list[float]:
    """For each page, the share of the text block (from the highest to the
    lowest ink on any page, page numbers left out) that holds content."""
    pages = rasterize(pdf)
    if not pages:
        raise PageCheckError(f"{pdf}: no pages")
    bodies = []
    for page in pages:
        h = page.shape[0]
        runs = _runs(_ink_rows(page))
        # the page number: the runs in the footer, together small (a digit can
        # raster as two runs), with the body ending above the footer
        foot = [r for r in runs if r[0] > (1 - FOOTER) * h]
        if foot and foot[-1][1] - foot[0][0] < 0.03 * h and len(foot) < len(runs):
            runs = runs[:len(runs) - len(foot)]
        bodies.append((h, runs))
    top = min(r[0][0] for _, r in bodies if r)
    bottom = max(r[-1][1] for _, r in bodies if r)
    fills = []
    for h, runs in bodies:
        if not runs:
            fills.append(0.0)
            continue
        gap = MERGE_GAP * h
        merged = [list(runs[0])]
        for s, e in runs[1:]:
            if s - merged[-1][1] <= gap:
                merged[-1][1] = e
            else:
                merged.append([s, e])
        filled = sum(e - s for s, e in merged)
        fills.append(round(filled / max(bottom - top, 1), 3))
    return fills


def page_text(pdf: str | os.PathLike, page: int) -> str:
    """The text of one page (1-based), by poppler's ``pdftotext``."""
    exe = shutil.which("pdftotext")
    if exe is None:
        raise PageCheckError("pdftotext not found: install poppler-utils (scripts/setup-system.sh)")
    p = subprocess.run([exe, "-f", str(page), "-l", str(page), str(pdf), "-"], capture_output=True, text=True)
    if p.returncode != 0:
        raise PageCheckError(f"{pdf}: pdftotext failed: {p.stderr.strip()[:300]}")
    return p.stdout


def near_empty_pages(pdf: str | os.PathLike, least: float = 0.5, parts: tuple[str, ...] = ()) -> list[int]:
    """Pages (1-based) filled less than ``least``. The last page is excepted,
    and so is the last page of each part that ends where a new part starts on
    a fresh page: a page whose text opens with one of ``parts`` (e.g. an
    appendix's first heading, set after a page break)."""
    fills = page_fill(pdf)
    words = [" ".join(p.split()) for p in parts]
    ends = {i - 1 for i in range(2, len(fills) + 1)
            if words and any(" ".join(page_text(pdf, i).split()).startswith(w) for w in words)}
    return [i + 1 for i, f in enumerate(fills[:-1]) if f < least and i + 1 not in ends]
