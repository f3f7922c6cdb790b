"""Every notebook runs top to bottom on the committed samples (so none of them rots)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def test_the_four_notebooks_are_there() -> None:
    names = {p.stem for p in NOTEBOOKS}
    assert {"explore_matrix", "compare_runs", "history", "paperclip_counts"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, path.name
    assert "/work/" not in path.read_text() and "/home/" not in path.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(path: Path, tmp_path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    # `python3` is the kernel of this interpreter: jupyter_client launches a
    # kernelspec whose command is `python` with sys.executable.
    client = NotebookClient(
        nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()  # raises CellExecutionError naming the cell on any error
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert images, f"{path.name}: no figure was displayed"
    (tmp_path / path.name).write_text(json.dumps(nb))  # kept for inspection on failure
