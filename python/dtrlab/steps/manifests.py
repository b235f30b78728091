"""Rules ``manifest`` and ``atlas_manifest``: every artifact hashed with its
provenance record (not artifacts themselves: nothing records them)."""

from __future__ import annotations

import os
from typing import Iterable

from dtrlab import provenance
from dtrlab.steps import Step, step


def make_manifest(out: str | os.PathLike, config_sha256: str, artifacts: Iterable[str],
                  root: str | os.PathLike = ".", unhashed: Iterable[str] = ()) -> dict:
    """Hash every artifact with its provenance into the manifest; ``unhashed``
    files (executed notebooks, which carry timestamps) are only listed."""
    manifest = provenance.build_manifest(artifacts, config_sha256, root=root)
    if unhashed:
        manifest["executed_notebooks"] = sorted({provenance.relpath(u, root) for u in unhashed})
    provenance.write_manifest(out, manifest)
    return manifest


@step(record="none")
def manifest(s: Step) -> None:
    m = make_manifest(s.output.manifest, s.params.config_sha256, s.input.artifacts,
                      unhashed=s.input.get("notebooks", ()))
    print(f"{s.output.manifest}: {len(m['artifacts'])} artifacts hashed")


@step(record="none")
def atlas_manifest(s: Step) -> None:
    manifest(s)
