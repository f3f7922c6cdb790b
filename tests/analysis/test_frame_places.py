"""`load_frame` names a bad row as every other reader does, and reads a pattern once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import capeval.analysis.frame as frame_module
from capeval.analysis.frame import load_frame
from capeval.results.columns import ColumnTypeError
from capeval.results.v3 import write_v3
from tests.analysis.test_frame import make_row, write_jsonl


@pytest.mark.parametrize("fast", [True, False])
def test_a_misfit_value_names_file_and_line_counted_from_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool
) -> None:
    # It said `r.jsonl: row 2: field 'turnsUsed': expected int`: a row counted
    # from 0, blank lines not counted, where the reader says `r.jsonl:4: ...`.
    monkeypatch.setattr(frame_module, "FAST_MIN_BYTES", 0)  # the fast path declines it
    rows = [make_row("a"), make_row("b"), make_row("c", turnsUsed="6")]
    path = tmp_path / "r.jsonl"
    lines = [json.dumps(r) for r in rows]
    path.write_text(f"{lines[0]}\n\n{lines[1]}\n{lines[2]}\n")
    with pytest.raises(ColumnTypeError) as raised:
        load_frame([path], fast=fast)
    assert str(raised.value) == f"{path}:4: field 'turnsUsed' must be an integer, found \"6\""


def test_a_misfit_in_a_v3_file_is_named_as_the_v3_reader_names_rows(tmp_path: Path) -> None:
    rows = [make_row("a"), make_row("b", durationMs=True)]
    path = tmp_path / "r.json"
    write_v3(path, rows, started_at="2026-01-02T00:00:00Z", finished_at=None)
    with pytest.raises(ColumnTypeError) as raised:
        load_frame([path])
    assert str(raised.value) == f"{path}: cases[1]: field 'durationMs' must be a number, found true"


def test_each_file_of_several_is_named_by_its_own_line(tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", [make_row("x"), make_row("y")])
    b = write_jsonl(tmp_path / "b.jsonl", [make_row("x"), make_row("y", overBudget=1)])
    with pytest.raises(
        ColumnTypeError, match=r"b\.jsonl:2: field 'overBudget' must be true or false"
    ):
        load_frame([a, b], fast=False)


def results_folder(root: Path) -> Path:
    folder = root / "results"
    (folder / "old").mkdir(parents=True)
    (folder / "r1.jsonl.artifacts").mkdir()
    write_jsonl(folder / "r1.jsonl", [make_row("a", runId="r1")])
    (folder / "r1.jsonl.plan.json").write_text('{"cases": [], "runId": "r1"}')
    (folder / "r1.jsonl.artifacts" / "summary.json").write_text("{}")
    write_jsonl(folder / "old" / "r0.jsonl", [make_row("a", runId="r0")])
    return folder


def test_a_recursive_pattern_reads_each_file_once_without_warning(tmp_path: Path) -> None:
    # `results/**` matches the folder, `old/` and every file: each file was
    # reached two or three times and said to be "given twice".
    folder = results_folder(tmp_path)
    for pattern in (f"{folder}/**", f"{folder}/**/*.jsonl", f"{folder}/**/*"):
        warned: list[str] = []
        frame = load_frame(pattern, on_warning=warned.append)
        assert warned == [], pattern
        assert sorted(frame["runId"].to_list()) == ["r0", "r1"], pattern
    # Two arguments naming one file are still named.
    warned = []
    frame = load_frame([f"{folder}/**", folder / "r1.jsonl"], on_warning=warned.append)
    assert frame.height == 2
    assert warned == [f"{folder / 'r1.jsonl'} is given twice; read once (read twice, its "
                      "repeats would count twice)"]  # fmt: skip
