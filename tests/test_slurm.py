"""The SLURM profile on a real cluster: jobs submitted with sbatch and tracked
by the executor plugin give byte for byte the artifacts of a local run.

Runs where a SLURM partition is up and the plugin is installed, e.g. the
single-node cluster of ``scripts/slurm-local.sh up`` (``.ci/run`` starts it,
with its accounting database, and stops it); skipped elsewhere. Two ways, as
docs/CLUSTERS.md gives them: as a user on a site with accounting (the
plugin's defaults: jobs followed with sacct, charged to an account), and
with the two flags for a cluster without it.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_reduced_config
from dtrlab import traces

REPO = Path(__file__).resolve().parent.parent
PARTITION = os.environ.get("DTRLAB_SLURM_PARTITION", "compute")
ACCOUNT = os.environ.get("DTRLAB_SLURM_ACCOUNT", "dtrlab")
# Baselines of the reduced study's traces, one sweep chunk (LSTM around its
# regime switch) and the claim computed from it.
TARGETS = ["baselines", "results/claims/c1_regimes.json"]


def _partition_up() -> bool:
    if shutil.which("sinfo") is None:
        return False
    p = subprocess.run(["sinfo", "-h", "-p", PARTITION, "-o", "%T"], capture_output=True, text=True)
    return p.returncode == 0 and any(s in p.stdout for s in ("idle", "mixed", "allocated"))


def _accounting() -> bool:
    """sacct answers (slurmdbd is up), and our user holds the account."""
    p = subprocess.run(["sacct", "-n", "-X", "-S", "now"], capture_output=True, text=True)
    if p.returncode != 0 or "disabled" in (p.stdout + p.stderr):
        return False
    q = subprocess.run(["sacctmgr", "-n", "-P", "show", "assoc", f"user={getpass.getuser()}", "format=account"],
                       capture_output=True, text=True)
    return q.returncode == 0 and ACCOUNT in q.stdout.split()


def _plugin() -> bool:
    import importlib.util

    return importlib.util.find_spec("snakemake_executor_plugin_slurm") is not None


pytestmark = pytest.mark.skipif(not (_partition_up() and _plugin()),
                                reason=f"no SLURM partition {PARTITION!r} up, or no executor plugin")


def _run(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    mirror = traces.default_mirror()
    if mirror is None:
        pytest.skip("no artifact mirror (set DTRLAB_ARTIFACT_MIRROR)")
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
           *TARGETS, "--configfile", str(write_reduced_config(workdir)), *args]
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {**os.environ, "PATH": path, traces.MIRROR_ENV: str(Path(mirror).resolve())}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=1200, env=env)


def _artifacts(workdir: Path) -> dict[str, str]:
    """sha256 of every result file but logs and timings."""
    root = workdir / "results"
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.relative_to(root).parts[0] not in ("logs", "benchmarks")}


@pytest.fixture(scope="module")
def local_run(tmp_path_factory) -> dict[str, str]:
    local = tmp_path_factory.mktemp("local")
    q = _run(local, "--cores", "2")
    assert q.returncode == 0, (q.stdout + q.stderr)[-4000:]
    return _artifacts(local)


def _through_the_profile(tmp_path: Path, resources: list[str], *flags: str) -> dict[str, str]:
    cluster = tmp_path / "cluster"
    cluster.mkdir()
    p = _run(cluster, "--profile", str(REPO / "profiles" / "slurm"),
             "--default-resources", f"slurm_partition={PARTITION}", "runtime=30", "mem_mb=2000", *resources,
             *flags, "--slurm-init-seconds-before-status-checks", "5",
             "--slurm-logdir", str(tmp_path / "slurm_logs"), "--slurm-keep-successful-logs")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    # Real jobs: each compute rule went through sbatch; the download ran here.
    logs = [p.relative_to(tmp_path / "slurm_logs") for p in (tmp_path / "slurm_logs").rglob("*.log")]
    rules = {p.parts[0].removeprefix("rule_") for p in logs}
    assert {"baseline", "sweep_chunk", "c1_regimes"} <= rules, sorted(rules)
    assert "fetch_traces" not in rules
    return _artifacts(cluster)


def _jobs_in_accounting(since: str) -> list[tuple[str, str, str]]:
    p = subprocess.run(["sacct", "-n", "-X", "-P", "-S", since, "-o", "JobName,State,Account"],
                       capture_output=True, text=True, check=True)
    return [tuple(line.split("|")) for line in p.stdout.splitlines() if line]


@pytest.mark.skipif(not (_partition_up() and _accounting()),
                    reason=f"no accounting database, or no account {ACCOUNT!r} for this user")
def test_on_a_site_with_accounting_the_profile_runs_as_it_ships(tmp_path, local_run):
    """No status-command flag: the plugin follows the jobs with sacct, as on
    most sites, and charges them to the account the user names."""
    since = subprocess.run(["date", "+%Y-%m-%dT%H:%M:%S"], capture_output=True, text=True).stdout.strip()
    artifacts = _through_the_profile(tmp_path, [f"slurm_account={ACCOUNT}"])
    assert artifacts and artifacts == local_run
    jobs = _jobs_in_accounting(since)
    assert jobs and all(state == "COMPLETED" and account == ACCOUNT for _, state, account in jobs), jobs


def test_without_accounting_the_two_flags_follow_jobs_with_squeue(tmp_path, local_run):
    """docs/CLUSTERS.md's variant for a cluster without slurmdbd."""
    artifacts = _through_the_profile(tmp_path, [], "--slurm-status-command", "squeue", "--slurm-no-account")
    assert artifacts and artifacts == local_run
