"""Shared fixtures: verified public traces (from the mirror) and golden records."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

import dtrlab
from dtrlab import traces

GOLDEN = Path(__file__).parent / "golden"
SYNTHETIC = GOLDEN / "synthetic"

# Hypothesis: a fast profile by default, a thorough one with DTRLAB_HYPOTHESIS=thorough.
settings.register_profile("fast", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("DTRLAB_HYPOTHESIS", "fast"))


def golden_records(name: str) -> list[dict]:
    with open(GOLDEN / name) as f:
        return [json.loads(line) for line in f]


#: A workflow configuration with small grids that still covers every
#: published value (the paper's points), for end-to-end tests.
REDUCED = {
    "traces": ["lstm", "resnet32"],
    "experiments": {
        "chunk_size": 4,
        "lstm_regimes": {"ratios": [0.262, 0.264, 0.265, 0.266]},
        "resnet32_sweep": {"ratios": {"start": 0.100, "stop": 0.108, "step": 0.001, "extra": [0.111, 0.147]}},
        "ablation": {
            "heuristics": ["DTR", "LRU", "AbSizeStale", "RandomStorage"],
            "seeds": [0, 1],
            "lstm_ratios": [0.264, 0.265],
            "resnet32_ratios": {"start": 0.100, "stop": 0.108, "step": 0.001},
        },
        "determinism": {"repeats": 2, "points": [["resnet32", 0.104], ["lstm", 0.265]]},
    },
    # A narrow slice of ResNet-32 above the OOM band: its top edge and the
    # 128-byte holes just above it.
    "atlas": {"traces": ["resnet32"], "heuristics": ["DTR"], "lo": 0.1063, "hi": 0.1064, "chunks": 2,
              "max_runs": 1000, "max_total_runs": 1000, "max_work": None,
              "time_limit": 600},
}


def write_reduced_config(folder: Path, **overrides) -> Path:
    """The reduced configuration as a YAML file in ``folder``."""
    import yaml

    path = folder / "reduced.yaml"
    path.write_text(yaml.safe_dump({**REDUCED, **overrides}))
    return path


#: Our additions to an OOM record (the tensor whose operator needed the memory).
EXTRA_FAIL_FIELDS = ("computing_tensor_id", "computing_tensor_name", "computing_op_name", "held")


def strip_extra_fail_fields(fail: dict) -> dict:
    for k in EXTRA_FAIL_FIELDS:
        fail.pop(k)
    return fail


@pytest.fixture(scope="session")
def trace_dir() -> Path:
    """The eight public traces, fetched from the mirror and sha256-verified."""
    return traces.ensure_traces()


@lru_cache(maxsize=None)
def _load(path: str, start: bool) -> dtrlab.Trace:
    return dtrlab.load_trace(path, start=start)


@pytest.fixture(scope="session")
def load(trace_dir):
    """Load (once per session) a public trace by key or a file by path."""

    def get(key_or_path: str, start: bool = False) -> dtrlab.Trace:
        if key_or_path in traces.TRACE_FILES:
            return _load(str(trace_dir / traces.TRACE_FILES[key_or_path]), start)
        return _load(str(key_or_path), start)

    return get


@pytest.fixture(scope="session")
def run(tmp_path_factory) -> Path:
    """One reduced run of the whole workflow (`all` and `atlas`), shared by
    the experiment, paper and atlas tests."""
    from test_workflow import snakemake

    mirror = traces.default_mirror()
    if mirror is None:
        pytest.skip("no artifact mirror (set DTRLAB_ARTIFACT_MIRROR)")
    work = tmp_path_factory.mktemp("experiments")
    p = snakemake(work, "all", "atlas", "--configfile", str(write_reduced_config(work)),
                  env={traces.MIRROR_ENV: str(Path(mirror).resolve())})
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return work
