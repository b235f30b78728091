"""Provenance: who produced each artifact from what, and the hashed manifest.

Every command that a workflow rule runs records a small sidecar next to each
output (``<dir>/.provenance/<name>.json``: producing rule, input hashes,
parameters), before it writes the output: so an artifact without its sidecar
was never produced by a rule, and the workflow refuses it at the start
(:func:`unrecorded`) instead of failing in the manifest at the end. The
``manifest`` rule gathers them into ``results/MANIFEST.json`` with each
artifact's sha256 and size, the config hash, the code version, the engine
version and the package versions. ``dtrlab verify`` re-hashes every
artifact against the manifest.

Everything hashed is byte-deterministic: no timestamps, no absolute paths.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from dtrlab.atomic import write_text
from dtrlab.traces import sha256_file

MANIFEST_VERSION = 1
PACKAGES = ("dtrlab", "numpy", "pandas", "pyarrow", "snakemake", "matplotlib", "seaborn", "papermill")


def canonical_json(obj) -> str:
    """Stable JSON text: sorted keys, fixed separators, trailing newline."""
    return json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def relpath(path: str | os.PathLike, root: str | os.PathLike = ".") -> str:
    """A path relative to the workflow root, with forward slashes. A file
    outside the root (e.g. the workflow's own config when run elsewhere) is
    named ``external/<name>``: hashed records never hold machine paths."""
    p = Path(os.path.relpath(Path(path).resolve(), Path(root).resolve())).as_posix()
    return f"external/{Path(path).name}" if p.startswith("../") else p


def sidecar_path(output: str | os.PathLike) -> Path:
    output = Path(output)
    return output.parent / ".provenance" / f"{output.name}.json"


def record(
    outputs: Iterable[str | os.PathLike],
    rule: str,
    inputs: Iterable[str | os.PathLike] = (),
    params: Mapping | None = None,
) -> None:
    """Write the provenance sidecar of each output."""
    entry_inputs = dict(sorted((relpath(i), sha256_file(i)) for i in set(map(str, inputs))))
    for out in outputs:
        doc = {"artifact": relpath(out), "rule": rule, "inputs": entry_inputs, "params": dict(params or {})}
        write_text(sidecar_path(out), canonical_json(doc))


@contextmanager
def recording(
    outputs: Iterable[str | os.PathLike],
    rule: str,
    inputs: Iterable[str | os.PathLike] = (),
    params: Mapping | None = None,
) -> Iterator[None]:
    """Record the provenance of ``outputs``, then let the caller write them.

    Sidecar first: a job killed in between leaves a sidecar without its
    output (the rule simply reruns), never an output without a sidecar. If
    the work fails, the sidecars are taken back.
    """
    outputs = list(outputs)
    record(outputs, rule, inputs=inputs, params=params)
    try:
        yield
    except BaseException:
        for out in outputs:
            sidecar_path(out).unlink(missing_ok=True)
        raise


def unrecorded(artifacts: Iterable[str | os.PathLike]) -> list[str]:
    """The artifacts that exist without a provenance sidecar: files no
    workflow rule produced (copied in, or left by other tools)."""
    return sorted(str(a) for a in artifacts if Path(a).exists() and not sidecar_path(a).is_file())


def code_version(root: str | os.PathLike = ".") -> str:
    """``git describe`` of the workflow's checkout (``-dirty`` if modified)."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=root, capture_output=True, text=True, timeout=30, check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return versions


def build_manifest(
    artifacts: Iterable[str | os.PathLike],
    config_hash: str,
    root: str | os.PathLike = ".",
    code: str | None = None,
) -> dict:
    """The manifest of ``artifacts`` (each must have a provenance sidecar)."""
    from dtrlab.engine import ENGINE_VERSION

    entries = []
    for a in sorted({relpath(a, root) for a in artifacts}):
        path = Path(root) / a
        side = sidecar_path(path)
        if not side.is_file():
            raise FileNotFoundError(f"{a}: no provenance record ({side}); was it produced by a workflow rule?")
        prov = json.loads(side.read_text())
        entries.append({
            "path": a,
            "sha256": sha256_file(path),
            "bytes": path.stat().st_size,
            "rule": prov["rule"],
            "inputs": prov["inputs"],
            "params": prov["params"],
        })
    return {
        "manifest_version": MANIFEST_VERSION,
        "config_sha256": config_hash,
        "code_version": code if code is not None else code_version(root),
        "engine_version": ENGINE_VERSION,
        "packages": package_versions(),
        "artifacts": entries,
    }


def write_manifest(path: str | os.PathLike, manifest: dict) -> None:
    write_text(path, canonical_json(manifest))


def read_manifest(manifest_path: str | os.PathLike) -> dict:
    """A manifest, checked for the structure `verify` and `compare` rely on."""
    manifest_path = Path(manifest_path)
    try:
        manifest = json.loads(manifest_path.read_text())
        entries = manifest["artifacts"]
        if not isinstance(entries, list) or not all(
                isinstance(e, dict) and isinstance(e.get("path"), str) and isinstance(e.get("sha256"), str)
                and isinstance(e.get("bytes"), int) for e in entries):
            raise TypeError
    except (ValueError, TypeError, KeyError):
        raise ValueError(f"{manifest_path}: not a dtrlab manifest (a JSON object whose 'artifacts' list "
                         "names each file's path, sha256 and bytes)") from None
    return manifest


#: Artifacts rendered for reading (figures, the paper). Their bytes also
#: depend on the matplotlib and TeX Live versions, and the paper names the
#: commit it was built from; so across machines and commits they may differ
#: while every data artifact (traces, tables, results, macros) stays identical.
DOCUMENT_SUFFIXES = (".pdf", ".png")

#: Artifacts that hold measurements (wall-clock times, measured bytes, what a
#: runtime measuring its memory decided): a folder named ``measured`` (the
#: real runtime's, ``results/runtime/measured/``). They are hashed and
#: verified like any artifact, but across runs they differ by nature.
MEASURED_FOLDER = "measured"


@dataclass(frozen=True)
class Comparison:
    """One artifact of a run against a reference run."""

    path: str
    #: ``identical``, ``differs``, ``missing`` (only in the reference) or
    #: ``extra`` (only in this run).
    status: str

    @property
    def document(self) -> bool:
        return self.path.endswith(DOCUMENT_SUFFIXES)

    @property
    def measurement(self) -> bool:
        return MEASURED_FOLDER in Path(self.path).parts[:-1]

    @property
    def kind(self) -> str:
        return "measured" if self.measurement else "document" if self.document else "data"

    @property
    def acceptable(self) -> bool:
        """Identical, or a document or measurement that differs (see
        :data:`DOCUMENT_SUFFIXES`, :data:`MEASURED_FOLDER`)."""
        return self.status == "identical" or (self.status == "differs" and (self.document or self.measurement))


def compare(manifest_path: str | os.PathLike, reference_path: str | os.PathLike) -> list[Comparison]:
    """Every artifact of a run's manifest and of a reference run's, compared
    by hash, sorted by path. Runs of different configurations are not
    compared (``ValueError``)."""
    ours, ref = read_manifest(manifest_path), read_manifest(reference_path)
    if ours.get("config_sha256") != ref.get("config_sha256"):
        raise ValueError(f"configuration {ours.get('config_sha256')} != reference {ref.get('config_sha256')}: "
                         "runs of different configurations are not compared")
    a = {e["path"]: e["sha256"] for e in ours["artifacts"]}
    b = {e["path"]: e["sha256"] for e in ref["artifacts"]}

    def status(p: str) -> str:
        if p not in a:
            return "missing"
        if p not in b:
            return "extra"
        return "identical" if a[p] == b[p] else "differs"

    return [Comparison(p, status(p)) for p in sorted(a.keys() | b.keys())]


def verify(manifest_path: str | os.PathLike, root: str | os.PathLike | None = None) -> list[str]:
    """Re-hash every artifact; returns the problems found (empty = verified)."""
    manifest_path = Path(manifest_path)
    root = Path(root) if root is not None else manifest_path.parent.parent
    entries = read_manifest(manifest_path)["artifacts"]
    problems = []
    for e in entries:
        # A manifest names files inside the workflow root, never beside or above it.
        if Path(e["path"]).is_absolute() or ".." in Path(e["path"]).parts:
            problems.append(f"{e['path']}: outside the workflow root; not read")
            continue
        p = root / e["path"]
        if not p.is_file():
            problems.append(f"{e['path']}: missing")
            continue
        digest = sha256_file(p)
        if digest != e["sha256"]:
            problems.append(f"{e['path']}: sha256 {digest} != manifest {e['sha256']}")
        elif p.stat().st_size != e["bytes"]:
            problems.append(f"{e['path']}: size {p.stat().st_size} != manifest {e['bytes']}")
    return problems
