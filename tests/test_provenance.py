"""Provenance records: written before their artifact, taken back on failure,
and the artifacts that lack one are found."""

from __future__ import annotations

import json

import pytest

from conftest import checkout_changes, checkout_state
from dtrlab import provenance


def test_the_record_is_written_before_the_artifact(tmp_path):
    inp = tmp_path / "in.txt"
    inp.write_text("input\n")
    out = tmp_path / "out.txt"
    with provenance.recording([out], "some_rule", inputs=[inp], params={"k": 1}):
        # A job killed here leaves a record without an artifact (it reruns),
        # never an artifact without a record.
        assert provenance.sidecar_path(out).is_file() and not out.exists()
        out.write_text("result\n")
    doc = json.loads(provenance.sidecar_path(out).read_text())
    assert doc["rule"] == "some_rule" and doc["params"] == {"k": 1}
    assert doc["inputs"] == {provenance.relpath(inp): provenance.sha256_file(inp)}
    assert provenance.unrecorded([out]) == []


def test_a_failed_step_takes_its_records_back(tmp_path):
    out = tmp_path / "out.txt"
    with pytest.raises(RuntimeError):
        with provenance.recording([out], "some_rule"):
            raise RuntimeError("the work failed")
    assert not provenance.sidecar_path(out).exists()


def test_unrecorded_names_present_files_without_a_record(tmp_path):
    made, copied, absent = tmp_path / "made.txt", tmp_path / "copied.txt", tmp_path / "absent.txt"
    with provenance.recording([made], "r"):
        made.write_text("x")
    copied.write_text("y")
    assert provenance.unrecorded([made, copied, absent]) == [str(copied)]


def test_the_checkout_guard_sees_a_new_file_in_a_workflow_folder(tmp_path):
    """The guard that fails a test run which writes into the checkout, on a
    throwaway git repository."""
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("/data/\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data/old.log").write_text("old")
    before = checkout_state(tmp_path)
    assert before is not None and checkout_changes(before, checkout_state(tmp_path)) == []
    (tmp_path / "data/new.log").write_text("new")
    (tmp_path / "stray.txt").write_text("untracked")
    assert checkout_changes(before, checkout_state(tmp_path)) == ["data/new.log", "stray.txt"]


def _manifest(path, config, artifacts):
    path.write_text(json.dumps({"config_sha256": config, "artifacts": [
        {"path": p, "sha256": h, "bytes": 1} for p, h in artifacts.items()]}))
    return path


def test_a_run_is_compared_with_a_reference_artifact_by_artifact(tmp_path):
    ours = _manifest(tmp_path / "ours.json", "c", {"results/a": "1", "results/b": "2", "results/new": "3",
                                                   "results/paper/main.pdf": "5"})
    ref = _manifest(tmp_path / "ref.json", "c", {"results/a": "1", "results/b": "9", "results/gone": "4",
                                                 "results/paper/main.pdf": "6"})
    rows = provenance.compare(ours, ref)
    assert [(r.path, r.status, r.document, r.acceptable) for r in rows] == [
        ("results/a", "identical", False, True),
        ("results/b", "differs", False, False),
        ("results/gone", "missing", False, False),
        ("results/new", "extra", False, False),
        ("results/paper/main.pdf", "differs", True, True),
    ]
    assert {r.status for r in provenance.compare(ours, ours)} == {"identical"}


def test_runs_of_different_configurations_are_not_compared(tmp_path):
    ours = _manifest(tmp_path / "ours.json", "c1", {"results/a": "1"})
    ref = _manifest(tmp_path / "ref.json", "c2", {"results/a": "1"})
    with pytest.raises(ValueError, match="runs of different configurations are not compared"):
        provenance.compare(ours, ref)


def test_verify_against_a_reference_fails_on_a_difference(tmp_path, capsys):
    from dtrlab.cli import main

    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "a").write_text("x")
    digest = provenance.sha256_file(tmp_path / "results" / "a")
    ours = tmp_path / "results" / "MANIFEST.json"
    ours.write_text(json.dumps({"config_sha256": "c", "artifacts": [
        {"path": "results/a", "sha256": digest, "bytes": 1}]}))
    same = _manifest(tmp_path / "same.json", "c", {"results/a": digest})
    other = _manifest(tmp_path / "other.json", "c", {"results/a": "0" * 64})
    assert main(["verify", str(ours), "--against", str(same)]) == 0
    assert "identical  data     results/a" in capsys.readouterr().out
    assert main(["verify", str(ours), "--against", str(other)]) == 1
    assert "DIFFERS    data     results/a" in capsys.readouterr().out
    # A figure or the paper may differ (renderer versions, the commit it names); data may not.
    figure = tmp_path / "results" / "f.pdf"
    figure.write_text("pdf")
    ours.write_text(json.dumps({"config_sha256": "c", "artifacts": [
        {"path": "results/a", "sha256": digest, "bytes": 1},
        {"path": "results/f.pdf", "sha256": provenance.sha256_file(figure), "bytes": 3}]}))
    rendered_elsewhere = _manifest(tmp_path / "docs.json", "c", {"results/a": digest, "results/f.pdf": "0" * 64})
    assert main(["verify", str(ours), "--against", str(rendered_elsewhere)]) == 0
    out = capsys.readouterr().out
    assert "differs    document results/f.pdf" in out and "1 of 1 data artifacts identical" in out
    assert main(["verify", str(ours), "--against", str(_manifest(tmp_path / "c2.json", "c2", {}))]) == 1
    assert "runs of different configurations are not compared" in capsys.readouterr().err


def test_a_measurement_may_differ_from_the_reference_and_data_beside_it_may_not(tmp_path, capsys):
    from dtrlab.cli import main

    folder = tmp_path / "results" / "runtime" / "measured"
    folder.mkdir(parents=True)
    (folder / "unet.parquet").write_text("times")
    (tmp_path / "results" / "runtime" / "decisions.parquet").write_text("decisions")
    files = {p: provenance.sha256_file(tmp_path / p) for p in
             ("results/runtime/measured/unet.parquet", "results/runtime/decisions.parquet")}
    ours = tmp_path / "results" / "MANIFEST.json"
    ours.write_text(json.dumps({"config_sha256": "c", "artifacts": [
        {"path": p, "sha256": d, "bytes": (tmp_path / p).stat().st_size} for p, d in files.items()]}))
    measured_elsewhere = _manifest(tmp_path / "m.json", "c", {**files, "results/runtime/measured/unet.parquet": "0" * 64})
    assert main(["verify", str(ours), "--against", str(measured_elsewhere)]) == 0
    out = capsys.readouterr().out
    assert "differs    measured results/runtime/measured/unet.parquet" in out
    assert "0 of 1 measurements identical" in out and "1 of 1 data artifacts identical" in out
    decided_elsewhere = _manifest(tmp_path / "d.json", "c", {**files, "results/runtime/decisions.parquet": "0" * 64})
    assert main(["verify", str(ours), "--against", str(decided_elsewhere)]) == 1
    # (A folder named like it, not a file: "measured" in a file name is data.)
    assert not provenance.Comparison("results/measured.parquet", "differs").acceptable
