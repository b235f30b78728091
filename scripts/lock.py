"""Write requirements.lock: the exact versions pip resolves today for the
package's dependencies and its test, workflow, notebook, slurm and capture extras.

    make lock        # refresh it (then run make test and commit it)

pip resolves without installing anything (``--dry-run --report``); the lock
holds one ``name==version`` line per distribution, sorted, so a refresh
shows as a readable diff. `make setup` installs with it as constraints.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

EXTRAS = "test,workflow,notebooks,slurm,capture"
HEADER = """\
# Exact versions `make setup` installs (pip constraints), resolved by
# `make lock` (scripts/lock.py) for CPython {python} on {platform}.
# Regenerate with `make lock`, run `make test`, commit. Other platforms
# install within pyproject.toml's bounds instead.
"""


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed",
                        "--report", str(report), f".[{EXTRAS}]"], cwd=root, check=True)
        items = json.loads(report.read_text())["install"]
    from packaging.utils import canonicalize_name

    pins = sorted((canonicalize_name(i["metadata"]["name"]), i["metadata"]["version"]) for i in items
                  if canonicalize_name(i["metadata"]["name"]) != "dtrlab")
    import platform

    text = HEADER.format(python=".".join(platform.python_version_tuple()[:2]),
                         platform=f"{platform.system()} {platform.machine()}")
    text += "".join(f"{name}=={version}\n" for name, version in pins)
    (root / "requirements.lock").write_text(text)
    print(f"requirements.lock: {len(pins)} pins", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
