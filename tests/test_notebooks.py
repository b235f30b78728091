"""The quick-start notebook (what Binder opens) runs headless and draws its figure."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

REPO = Path(__file__).resolve().parents[1]


def test_quickstart_reproduces_the_resnet32_inversion(trace_dir, monkeypatch):
    monkeypatch.setenv("DTRLAB_DATA", str(trace_dir))
    nb = nbformat.read(REPO / "notebooks/quickstart.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(REPO)}}).execute()
    texts = [o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert any("inverted budgets: [0.102, 0.103, 0.104, 0.105, 0.106]" in t for t in texts)
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) == 1
