"""The README and the docs name only what exists: every repository path they
cite in backticks, every relative link, every rule file and every page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: Our own pages (the docs copied from the project's design notes cite paths of
#: other repositories as examples, so they are left out of the path check).
PAGES = ["README.md", "CONTRIBUTING.md", "docs/WORKFLOW.md", "docs/ENGINE.md", "docs/ATLAS.md",
         "docs/CAPTURE.md", "docs/RUNTIME.md", "docs/REFERENCE-ENGINE.md", "docs/CLUSTERS.md",
         "docs/ARCHITECTURE.md"]
#: Folders the workflow, the set-up or the benchmarks generate (git-ignored).
GENERATED = ("results/", "data/", ".venv", ".snakemake", "benchmarks/out", "target/", "report.html")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
CODE = re.compile(r"`([^`\n]+)`")


def cited_paths(text: str) -> set[str]:
    """Backticked tokens that read as paths of this repository: their first
    component exists at the root (so an example such as `mypkg/models.py`
    or upstream's `simrd/logs.zip` is not mistaken for one)."""
    roots = {p.name for p in REPO.iterdir()}
    out = set()
    for token in CODE.findall(text):
        token = token.strip().split("::", 1)[0]  # a pytest node id names its file
        if " " in token or token.startswith(GENERATED) or "=" in token:
            continue
        first = token.split("/", 1)[0]
        if first in roots and ("/" in token or "." in first or first[0].isupper()):
            out.add(token)
    return out


def exists(token: str) -> bool:
    """A path, a folder, a glob (``rules/*.smk``), or a brace list
    (``out/a.{json,md}``) whose every member exists."""
    braces = re.search(r"\{([^}]*)\}", token)
    if braces:
        return all(exists(token[:braces.start()] + alt + token[braces.end():]) for alt in braces.group(1).split(","))
    if "<" in token:  # a placeholder: its fixed prefix must exist
        token = token[:token.index("<")].rsplit("/", 1)[0] or "."
    if "*" in token:
        return any(REPO.glob(token))
    return (REPO / token.rstrip("/")).exists()


@pytest.mark.parametrize("page", PAGES)
def test_every_path_a_page_names_exists(page):
    text = (REPO / page).read_text()
    missing = sorted(t for t in cited_paths(text) if not exists(t))
    assert not missing, f"{page} names paths that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES + ["benchmarks/RESULTS.md"])
def test_every_relative_link_resolves(page):
    path = REPO / page
    links = [t for t in LINK.findall(path.read_text()) if "://" not in t]
    broken = sorted(t for t in links if not (path.parent / t).exists())
    assert not broken, f"{page} links to missing files: {broken}"


def test_the_readme_lists_every_rule_file_and_page():
    readme = (REPO / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `workflow/rules/*.smk`"))
    listed = set(re.findall(r"`(\w+)`", row.split("|")[2]))
    assert listed == {p.stem for p in (REPO / "workflow/rules").glob("*.smk")}
    pages = {p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md")} | {"CONTRIBUTING.md"}
    unlinked = sorted(p for p in pages if f"]({p})" not in readme)
    assert not unlinked, f"pages the README does not link: {unlinked}"


def test_the_paths_check_catches_a_missing_path():
    assert cited_paths("see `workflow/rules/nothere.smk` and `mypkg/models.py`") == {"workflow/rules/nothere.smk"}
    assert not exists("workflow/rules/nothere.smk")
    assert exists("workflow/rules/*.smk") and exists("benchmarks/bench_{engine,scaling}.py")
    assert not exists("benchmarks/bench_{engine,nothere}.py")


def test_results_md_is_what_the_records_render():
    """benchmarks/RESULTS.md is written by the benchmarks (records.py), never by
    hand: it must equal the rendering of the records kept beside it."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("records", REPO / "benchmarks" / "records.py")
    records = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(records)
    assert (REPO / "benchmarks" / "RESULTS.md").read_text() == records.render()


def test_the_readme_quotes_no_measured_time():
    """The README is a user's guide: how long the two commands take is what
    benchmarks/bench_pipeline.py records in benchmarks/RESULTS.md, which the
    README points to, not a figure in its prose."""
    import re

    readme = " ".join((REPO / "README.md").read_text().split())
    assert not re.findall(r"\b\d+ min \d+ s\b|\b\d+(?:–\d+)? min\b", readme)
    assert "benchmarks/bench_pipeline.py" in readme and "(benchmarks/RESULTS.md)" in readme
    record = (REPO / "benchmarks" / "records" / "pipeline.json").read_text()
    assert "make test" in record and "make run" in record
