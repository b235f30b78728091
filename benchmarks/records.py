"""Where the benchmarks keep what they measured: one record per benchmark in
``benchmarks/records/<name>.json`` (its latest run: date, commit, machine and
its table), rendered together into ``benchmarks/RESULTS.md``.

The README states no measurement of its own; it points here. A record is
replaced only by a later run of the same benchmark, so the file always shows
each benchmark's newest figures with the commit and machine they belong to.
Measurements recorded by hand before the benchmarks wrote this file are kept
below them, verbatim, in ``benchmarks/records/earlier.md``.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORDS = HERE / "records"
RESULTS = HERE / "RESULTS.md"

#: The order of RESULTS.md's sections (a record not listed comes after, by name).
ORDER = ("pipeline", "engine", "scaling", "shapes", "runtime")


def commit() -> str:
    """The checkout's commit (``-dirty`` when it has uncommitted changes)."""
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], capture_output=True,
                              text=True, check=True, cwd=HERE).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def meta(**extra) -> dict:
    """Date, commit and machine of a run, with the benchmark's own settings."""
    mem = memory_gib()
    machine = f"{os.cpu_count()} cores ({cpu_model()})" + (f", {mem:g} GiB" if mem else "")
    return {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "commit": commit(),
            "machine": machine, "python": platform.python_version(), **extra}


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def record(name: str, title: str, run_meta: dict, markdown: str, records: Path = RECORDS,
           results: Path = RESULTS, command: str | None = None) -> Path:
    """Keep ``markdown`` (the benchmark's tables) as the latest record of
    ``name`` and render RESULTS.md again. Returns the RESULTS.md path.
    ``command``: what was run, where it is not ``benchmarks/bench_<name>.py``."""
    entry = {"name": name, "title": title, "meta": run_meta, "markdown": markdown.strip() + "\n"}
    if command is not None:
        entry["command"] = command
    _write_atomically(records / f"{name}.json", json.dumps(entry, indent=1, sort_keys=True) + "\n")
    _write_atomically(results, render(records))
    return results


def render(records: Path = RECORDS) -> str:
    entries = [json.loads(p.read_text()) for p in records.glob("*.json")]
    rank = {n: i for i, n in enumerate(ORDER)}
    entries.sort(key=lambda e: (rank.get(e["name"], len(ORDER)), e["name"]))
    out = ["# Benchmark results", "",
           "Written by the benchmark scripts themselves (`benchmarks/records.py`): each section is the",
           "latest run of one script, with its date, commit and machine. Rerun a script to refresh its",
           "section; compare figures only within one section (one run, one machine).", ""]
    for e in entries:
        m = e["meta"]
        settings = ", ".join(f"{k} {v}" for k, v in m.items() if k not in ("date", "commit", "machine", "python"))
        command = e.get("command", f"python benchmarks/bench_{e['name']}.py")
        out += [f"## {e['title']}", "",
                f"`{command}` — {m['date']}, commit `{m['commit']}`, "
                f"{m['machine']}, Python {m['python']}" + (f"; {settings}" if settings else "") + ".", "",
                e["markdown"].rstrip(), ""]
    earlier = records / "earlier.md"
    if earlier.exists():
        out += [earlier.read_text().rstrip(), ""]
    return "\n".join(out)
