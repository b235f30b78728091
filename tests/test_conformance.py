"""Every golden record, replayed by the native engine, matches in every field."""

from __future__ import annotations

import pytest

import dtrlab
from conftest import SYNTHETIC, golden_records, strip_extra_fail_fields

# Inputs of a record, not outputs to compare.
INPUT_FIELDS = {"kind", "trace", "start", "heuristic", "ratio", "cap", "source", "baseline_runtime", "baseline_peak"}

RUN_FILES = [
    "resnet32_dtr_fine.jsonl",
    "resnet32_heuristics.jsonl",
    "resnet32_ablation.jsonl",
    "resnet32_cap2_start.jsonl",
    "resnet32_nocap.jsonl",
    "resnet32_eviction_sequences.jsonl",
    "lstm_dtr.jsonl",
]


def _cases(files):
    for name in files:
        for i, rec in enumerate(golden_records(name)):
            yield pytest.param(rec, id=f"{name.split('.')[0]}:{i + 1}:{rec['trace']}:{rec.get('heuristic')}:{rec.get('ratio')}")


def _synthetic_cases():
    for i, rec in enumerate(golden_records("synthetic/golden.jsonl")):
        yield pytest.param(rec, id=f"{rec['trace']}:{i + 1}:{rec.get('heuristic')}:{rec.get('ratio')}:{rec.get('cap')}")


def replay_as_record(trace: dtrlab.Trace, rec: dict) -> dict:
    """Replay a record's inputs and express the result with its field names."""
    wants_sequence = "eviction_sequence" in rec
    r = dtrlab.simulate(trace, ratio=rec["ratio"], heuristic=rec["heuristic"], cap=rec["cap"], events=wants_sequence)
    out = r.to_dict(evicted_ids=True)
    if out["fail"] is not None:
        strip_extra_fail_fields(out["fail"])
    if wants_sequence:
        out["eviction_sequence"] = [list(x) for x in r.eviction_sequence]
    out["baseline_peak"] = dtrlab.baseline(trace).peak
    return out


def assert_record_matches(out: dict, rec: dict) -> None:
    compared = {k: v for k, v in rec.items() if k not in INPUT_FIELDS}
    mismatches = {k: (out.get(k, "<missing>"), v) for k, v in compared.items() if out.get(k, "<missing>") != v}
    assert not mismatches, f"fields differ (ours, golden): {mismatches}"
    assert out["baseline_peak"] == rec["baseline_peak"]
    assert out["budget"] == int(rec["baseline_peak"] * rec["ratio"])


@pytest.mark.parametrize("rec", list(_cases(RUN_FILES)))
def test_public_trace_record(rec, load):
    trace = load(rec["trace"], start=rec["start"])
    assert_record_matches(replay_as_record(trace, rec), rec)


@pytest.mark.parametrize("rec", list(_cases(["baselines.jsonl"])))
def test_public_trace_baseline(rec, load):
    b = dtrlab.baseline(load(rec["trace"], start=rec["start"]))
    assert (b.peak, b.compute, b.const, b.bottleneck) == (rec["peak"], rec["compute"], rec["const"], rec["bottleneck"])


@pytest.mark.parametrize("rec", list(_synthetic_cases()))
def test_synthetic_record(rec, load):
    trace = load(str(SYNTHETIC / f"{rec['trace']}.log"))
    if rec["kind"] == "baseline":
        b = dtrlab.baseline(trace)
        assert (b.peak, b.compute, b.const, b.bottleneck) == (rec["peak"], rec["compute"], rec["const"], rec["bottleneck"])
    else:
        assert_record_matches(replay_as_record(trace, rec), rec)


def test_every_golden_record_is_covered():
    runs = sum(len(golden_records(f)) for f in RUN_FILES)
    assert runs == 71 + 50 + 84 + 30 + 3 + 3 + 4
    assert len(golden_records("baselines.jsonl")) == 16
    assert len(golden_records("synthetic/golden.jsonl")) == 2240


REGRESSIONS = SYNTHETIC.parent / "regressions"


@pytest.mark.parametrize("rec", golden_records("regressions/golden.jsonl"),
                         ids=lambda r: f"{r['trace']}:{r['heuristic']}:{r['ratio']}")
def test_regression_record(rec, load):
    """Traces where the engine once departed from simrd (found by the live
    differential tests); records computed by simrd itself."""
    trace = load(str(REGRESSIONS / f"{rec['trace']}.log"))
    r = dtrlab.simulate(trace, ratio=rec["ratio"], heuristic=rec["heuristic"], cap=rec["cap"], events=True)
    out = r.to_dict(evicted_ids=True)
    if out["fail"] is not None:
        strip_extra_fail_fields(out["fail"])
    out["eviction_sequence"] = [list(x) for x in r.eviction_sequence]
    compared = {k: v for k, v in rec.items() if k not in INPUT_FIELDS}
    assert {k: out[k] for k in compared} == compared
