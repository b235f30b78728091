"""The workflow's steps: one per rule, named after it, given the rule's named
inputs, outputs and params; provenance recorded in one place."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dtrlab import exceptions, provenance, steps
from dtrlab.report import paper
from dtrlab.steps import Named, Step
from test_workflow import rule_blocks

REPO = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "golden" / "synthetic" / "synth-000.log"


def test_every_rule_runs_the_step_named_after_it():
    """A rule with `script: STEP` has a step of its name, and every step a rule."""
    blocks = rule_blocks()
    scripted = {name for name, body in blocks.items() if re.search(r"^    script:\n        STEP$", body, re.M)}
    assert scripted == set(steps.steps())
    # The rest run papermill, a user command (fetch-simrd), or only gather targets.
    assert not [name for name, body in blocks.items() if "dtrlab task" in body or "--params" in body]


def test_each_rule_is_found_in_its_module_alone():
    """`steps.MODULES` says which module registers each step (a job imports
    that one only): every module registers exactly the rules listed for it."""
    for module, rules in steps.MODULES.items():
        code = (f"import importlib, dtrlab.steps as s; importlib.import_module('dtrlab.steps.{module}'); "
                "print(' '.join(sorted(s._STEPS)))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        assert out.split() == sorted(rules), module


def test_a_chunk_job_imports_no_pandas():
    """The chunk jobs, hundreds of them, start without pandas (its import
    is about half a second a job)."""
    code = ("import sys, dtrlab.steps as s; s.step_of('atlas_chunk'); "
            "print('pandas' in sys.modules, 'matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_named_values_say_what_is_declared():
    n = Named(trace="t.log", chunks=["a", "b"])
    assert n.trace == "t.log" and n.files() == ["t.log", "a", "b"] and dict(n) == {"trace": "t.log", "chunks": ["a", "b"]}
    with pytest.raises(AttributeError, match=r"'sweep' is not declared \(declared: trace, chunks\)"):
        n.sweep
    with pytest.raises(AttributeError, match="read-only"):
        n.trace = "other"


def test_a_rule_with_unnamed_files_is_refused():
    from snakemake.iocontainers import Namedlist

    files = Namedlist(["a", "b"])
    files._set_name("first", 0)
    with pytest.raises(ValueError, match=r"every input of a step's rule must be named \(1 unnamed\)"):
        steps._named(files, "input")
    files._set_name("second", 1)
    assert dict(steps._named(files, "input")) == {"first": "a", "second": "b"}


def test_an_unknown_rule_has_no_step(tmp_path):
    with pytest.raises(ValueError, match="no step for rule 'nope'"):
        steps.run(Step("nope", output=Named(out=str(tmp_path / "x"))))


def _no_marker(tmp_path: Path) -> Path:
    lines = [ln for ln in GOLDEN.read_text().splitlines(keepends=True) if '"START"' not in ln]
    trace = tmp_path / "no-marker.log"
    trace.write_text("".join(lines))
    return trace


def test_every_step_parses_traces_as_the_baselines_do(tmp_path):
    """config engine.start reaches every step that reads a trace: a trace
    without an ANNOTATE START marker is refused when it is set (nothing is
    written, not even provenance), replayed when it is not."""
    trace = str(_no_marker(tmp_path))
    point = {"heuristic": "DTR", "ratio": 0.5, "cap": 60.0, "seed": 0}
    ok = tmp_path / "a.parquet"
    steps.run(Step("sweep_chunk", Named(trace=trace), Named(table=str(ok)),
                   Named(points=[point], engine="native", start=False)))
    assert len(pd.read_parquet(ok)) == 1
    assert json.loads(provenance.sidecar_path(ok).read_text())["params"] == {
        "points": [point], "engine": "native", "start": False}
    run = {"heuristic": "DTR", "cap": 60.0, "engine": "native", "start": True}
    atlas = {"lo": 0.4, "hi": 0.5, "chunk": 0, "chunks": 1, "max_runs": 2, "time_limit": None, "grid": 4,
             "max_total_runs": 2, "edge_runs": 0, "max_work": None, "resolve": True}
    three = ("summary", "parquet", "csv")
    cases = [("sweep_chunk", {"trace": trace}, ("table",), {"points": [point], **run}),
             ("baseline", {"trace": trace}, ("record",), run),
             ("c2_reeviction", {"trace": trace}, three, {**run, "fast": 0.5, "slow": 0.4}),
             ("c4_forensics", {"trace": trace}, three, {**run, "ratios": [0.5]}),
             ("c6_determinism", {"traces": [trace]}, three, {**run, "points": [["x", 0.5]], "repeats": 2}),
             ("atlas_chunk", {"trace": trace}, ("chunk",), {**run, **atlas})]
    for rule, inputs, outputs, params in cases:
        outs = {name: str(tmp_path / f"{rule}-{name}") for name in outputs}
        with pytest.raises(exceptions.TraceError, match="no ANNOTATE START"):
            steps.run(Step(rule, Named(inputs), Named(outs), Named(params)))
        assert not any(Path(o).exists() or provenance.sidecar_path(o).exists() for o in outs.values()), rule


def test_a_failing_job_is_one_line_in_its_log(tmp_path):
    """What a rule's job prints when its step fails: no traceback, exit 1."""
    log = tmp_path / "job.log"
    code = f"""
from snakemake.iocontainers import Namedlist
from dtrlab.steps import job

class Job:
    rule = "baseline"
    threads = 1
    log = [{str(log)!r}]
    input = Namedlist(fromdict={{"trace": {str(tmp_path / "missing.log")!r}}})
    output = Namedlist(fromdict={{"record": {str(tmp_path / "b.json")!r}}})
    params = Namedlist(fromdict={{"engine": "native", "start": False}})

job(Job)
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    text = log.read_text()
    assert text.startswith("dtrlab: error: rule baseline: ") and "missing.log" in text, text
    assert "Traceback" not in text and len(text.strip().splitlines()) == 1, text
    assert not (tmp_path / "b.json").exists()


def test_the_paper_step_refuses_inputs_out_of_layout_order(tmp_path):
    files = [str(p) for p in paper.layout_files(tmp_path / "results").values()]
    for f in files:
        Path(f).parent.mkdir(parents=True, exist_ok=True)
        Path(f).write_text("")
    files[0], files[1] = files[1], files[0]
    with pytest.raises(ValueError, match="LAYOUT order"):
        steps.run(Step("paper", Named(main=str(REPO / "paper/main.tex"), bib=str(REPO / "paper/references.bib"),
                                      generated=files), Named(pdf=str(tmp_path / "main.pdf")), Named(code="v1")))
    assert not (tmp_path / "main.pdf").exists()
