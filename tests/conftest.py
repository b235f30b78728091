"""Shared fixtures: verified public traces (from the mirror) and golden
records; and the guard that a test run leaves the checkout as it found it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# Tests write nothing into the checkout, bytecode included (also in the
# workflow, notebook and CLI subprocesses they start).
sys.dont_write_bytecode = True
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"

from functools import lru_cache  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import yaml  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis.configuration import set_hypothesis_home_dir  # noqa: E402

import dtrlab  # noqa: E402
from dtrlab import traces  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "golden"
SYNTHETIC = GOLDEN / "synthetic"
#: Where tests keep what outlives a run: dtrlab's per-user cache (fetched
#: traces live there too; see dtrlab.traces.default_data_dir).
CACHE = traces.cache_dir()

# Hypothesis: a fast profile by default, a thorough one with DTRLAB_HYPOTHESIS=thorough;
# its storage (example database, constants) in the user cache, not in the checkout.
set_hypothesis_home_dir(CACHE / "hypothesis")
settings.register_profile("fast", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("DTRLAB_HYPOTHESIS", "fast"))

#: The folders the workflow owns in a checkout: no test may write there.
WORKFLOW_FOLDERS = ("data", "results", ".snakemake")


def checkout_state(root: Path = REPO) -> dict[str, tuple] | None:
    """What a test run must not change: ``git status --ignored`` of the
    checkout, and every file (size, mtime) under the workflow's folders.
    None outside a git checkout (e.g. tests run from an unpacked sdist)."""
    try:
        status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=root, capture_output=True,
                                text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    state: dict[str, tuple] = {line[3:]: ("status", line[:2]) for line in status.splitlines()}
    for folder in WORKFLOW_FOLDERS:
        for dirpath, _, files in os.walk(root / folder):
            for name in files:
                st = os.lstat(os.path.join(dirpath, name))
                state[os.path.relpath(os.path.join(dirpath, name), root)] = ("file", st.st_size, st.st_mtime_ns)
    return state


def checkout_changes(before: dict, after: dict) -> list[str]:
    """Paths added, removed or changed between two :func:`checkout_state`s."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def pytest_configure(config):
    config._dtrlab_checkout = checkout_state()


def pytest_sessionfinish(session, exitstatus):
    before = getattr(session.config, "_dtrlab_checkout", None)
    after = checkout_state() if before is not None else None
    if before is None or after is None:
        return
    changed = checkout_changes(before, after)
    if changed:
        shown = ", ".join(changed[:10]) + (f" (and {len(changed) - 10} more)" if len(changed) > 10 else "")
        session.config.get_terminal_writer().line(
            f"FAILED: the test run changed the checkout (git status --ignored / workflow folders): {shown}",
            red=True, bold=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def golden_records(name: str) -> list[dict]:
    with open(GOLDEN / name) as f:
        return [json.loads(line) for line in f]


#: The reduced workflow configuration (small grids that still cover every
#: published value, the paper's points), shared with CI: config/reduced.yaml.
REDUCED = yaml.safe_load((REPO / "config/reduced.yaml").read_text())


def write_reduced_config(folder: Path, **overrides) -> Path:
    """The reduced configuration as a YAML file in ``folder``."""
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
    """The eight public traces, fetched from the mirror and sha256-verified
    (into the per-user cache, never the checkout's data/)."""
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
