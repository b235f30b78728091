"""The command line: JSON output with golden field names, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import golden_records, strip_extra_fail_fields


def dtrlab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dtrlab", *args], capture_output=True, text=True, timeout=300)


def test_simulate_json_matches_golden(trace_dir):
    rec = golden_records("resnet32_dtr_fine.jsonl")[24]  # ratio 0.104
    p = dtrlab("simulate", "resnet32", "--ratio", str(rec["ratio"]), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    strip_extra_fail_fields(out["fail"])
    for k in ("status", "budget", "clock", "evictions", "fail", "identical_budget_interval", "peak_pinned"):
        assert out[k] == rec[k], k


def test_simulate_budget_no_cap_heuristic_retain(trace_dir):
    p = dtrlab("simulate", "resnet32", "--budget", "1046362683", "--heuristic", "DTR", "--no-cap",
               "--retain", "190", "--json", "--evicted-ids")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["cap"] is None and out["budget"] == 1046362683
    assert 190 not in {s for s, _ in out["evicted_ids"]}


def test_baseline_json(trace_dir):
    p = dtrlab("baseline", "resnet32", "--json")
    assert json.loads(p.stdout) == {"trace": "resnet32", "start": False, "peak": 10061179648,
                                    "compute": 291905487, "const": 35584920, "bottleneck": 539510784}


def test_human_output(trace_dir):
    p = dtrlab("simulate", "unet", "--ratio", "0.5")
    assert p.returncode == 0 and "status" in p.stdout and "overhead" in p.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["simulate", "no-such-file.log", "--ratio", "0.5"], "no such trace file"),
        (["simulate", "resnet32", "--ratio", "-2"], "ratio must be"),
        (["simulate", "resnet32", "--ratio", "0.5", "--engine", "simrd"], "DTRLAB_SIMRD"),
    ],
)
def test_errors_exit_2_with_a_message(args, message, trace_dir, monkeypatch):
    monkeypatch.delenv("DTRLAB_SIMRD", raising=False)
    p = dtrlab(*args)
    assert p.returncode == 2
    assert p.stderr.startswith("dtrlab: error:") and message in p.stderr


def test_malformed_trace_exit_2_names_line(tmp_path):
    bad = tmp_path / "bad.log"
    bad.write_text('{"INSTRUCTION":"CONSTANT","NAME":"a"}\n{"INSTRUCTION":"CALL"}\n')
    p = dtrlab("baseline", str(bad))
    assert p.returncode == 2 and "bad.log:2:" in p.stderr


def test_ratio_and_budget_are_exclusive():
    p = dtrlab("simulate", "resnet32", "--ratio", "0.5", "--budget", "5")
    assert p.returncode == 2 and "not allowed with" in p.stderr
