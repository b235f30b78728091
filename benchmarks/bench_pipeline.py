"""Pipeline benchmark: the README's two commands, timed on a fresh clone.

Clones the checkout's HEAD into a temporary folder (committed files only,
as a newcomer gets them) and runs, in this order, the README's test command
(``make test``) and its main job (``make run CORES=N``), each timed from the
outside; the first of them includes the set-up (Debian packages already
present are skipped, the venv and the Rust engine are built, Python packages
come from pip's cache when it has them). Then compares the run's manifest
with ``reference/MANIFEST.json`` (``dtrlab verify --against``).

    python benchmarks/bench_pipeline.py                    # make test, then make run CORES=$(nproc)
    python benchmarks/bench_pipeline.py --order run,test --cores 2
    python benchmarks/bench_pipeline.py --config config/reduced.yaml --only run

The traces come from ``DTRLAB_ARTIFACT_MIRROR`` when set (or the shared copy
beside the checkout, as ``.ci/run`` finds it). Logs go to
benchmarks/out/pipeline/; the table to its section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import records

ROOT = Path(__file__).resolve().parent.parent


def mirror_env() -> dict:
    env = dict(os.environ)
    shared = ROOT.parent / "shared" / "dtr-artifact" / "logs.zip"
    if not env.get("DTRLAB_ARTIFACT_MIRROR") and shared.is_file():
        env["DTRLAB_ARTIFACT_MIRROR"] = str(shared)
    return env


def timed(cmd: list[str], cwd: Path, log: Path, env: dict) -> dict:
    """Run ``cmd``, its output to ``log``; wall time and its children's CPU."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with log.open("w") as f:
        rc = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, env=env).returncode
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"command": " ".join(cmd), "rc": rc, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1)}


def minutes(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s:02d} s"


def verify_against(clone: Path, log: Path, env: dict) -> str:
    """``dtrlab verify --against`` in the clone: its count line, e.g. how
    many data artifacts are identical to the reference run."""
    p = subprocess.run([str(clone / ".venv/bin/dtrlab"), "verify", "--against", "reference/MANIFEST.json"],
                       cwd=clone, capture_output=True, text=True, env=env)
    log.write_text(p.stdout + p.stderr)
    counts = [ln for ln in (p.stdout + p.stderr).splitlines() if re.search(r"\bidentical\b", ln)]
    return (counts[-1].strip() if counts else "no summary") + ("" if p.returncode == 0 else f" (exit {p.returncode})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--order", default="test,run", help="which command first: test,run or run,test")
    ap.add_argument("--only", choices=["test", "run"], help="time one command only")
    ap.add_argument("--cores", type=int, default=os.cpu_count(), help="CORES of make run")
    ap.add_argument("--config", help="CONFIG of make run (e.g. config/reduced.yaml); default the shipped one")
    ap.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "out" / "pipeline"))
    args = ap.parse_args()
    order = [args.only] if args.only else args.order.split(",")
    if sorted(order) not in (["run", "test"], ["run"], ["test"]) or args.cores < 1:
        ap.error("--order is test,run or run,test; --cores must be positive")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = mirror_env()
    work = Path(tempfile.mkdtemp(prefix="dtrlab-pipeline-"))
    clone = work / "dtrlab"
    rows = []
    try:
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        # What was measured is the clone's commit: the checkout may be dirty,
        # or move on, while the benchmark runs.
        cloned = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=clone, capture_output=True, text=True,
                                check=True).stdout.strip()
        if (ROOT.parent / "shared").is_dir():  # the clone finds the shared mirror as the checkout does
            (work / "shared").symlink_to(ROOT.parent / "shared")
        for i, what in enumerate(order):
            cmd = ["make", "test"] if what == "test" else \
                ["make", "run", f"CORES={args.cores}"] + ([f"CONFIG={args.config}"] if args.config else [])
            print(f"[bench] {' '.join(cmd)} in {clone} ...", file=sys.stderr, flush=True)
            row = {"what": what, "setup_included": i == 0, **timed(cmd, clone, out / f"{what}.log", env)}
            if what == "test":
                tail = (out / "test.log").read_text().splitlines()
                row["summary"] = next((ln.strip("= ") for ln in reversed(tail) if re.search(r"\d+ passed", ln)), "")
            elif row["rc"] == 0 and not args.config:
                row["summary"] = verify_against(clone, out / "verify.log", env)
            rows.append(row)
            print(f"[bench] {json.dumps(row)}", file=sys.stderr, flush=True)
    finally:
        if args.keep:
            print(f"[bench] clone kept: {clone}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    meta = records.meta(commit=cloned, cores=args.cores, config=args.config or "config/config.yaml")
    (out / "pipeline.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    lines = ["| command | set-up included | exit | wall | CPU (children) | result |", "|---|---|---:|---:|---:|---|"]
    lines += [f"| `{r['command']}` | {'yes' if r['setup_included'] else 'no'} | {r['rc']} | {minutes(r['wall_s'])} | "
              f"{r['cpu_s']:,.0f} s | {r.get('summary', '')} |" for r in rows]
    text = "On a fresh clone of the commit, in this order.\n\n" + "\n".join(lines) + "\n"
    print(text)
    records.record("pipeline", "Pipeline: the README's two commands on a fresh clone", meta, text)
    return 0 if all(r["rc"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
