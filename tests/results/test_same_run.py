"""A copy of a v3 file whose rows name no run is the same run: counted, with a warning.

Files of the TypeScript harness carry no runId in their rows, so the checks
keyed on run ids let a copy under another name double every repeat silently.
As for two JSON Lines files of one run, both copies are counted and the
warning names both files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from capeval.analysis import fastload
from capeval.core.metrics import METRIC_NAMES
from capeval.results import formats
from capeval.results.formats import v3_header
from capeval.results.jsonl import JsonlWriter
from capeval.results.load import read_rows
from capeval.results.overlap import same_run_warnings
from capeval.results.provenance import mixed_writer_warnings, written_by_capeval
from capeval.results.v3 import write_v3
from tests.analysis.test_frame import same_frame
from tests.analysis.test_gate import BAIT_FLAGS
from tests.clirun import capeval
from tests.rowfactory import result_row


def copies(real_results: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """(a run, the same run under another name, another run)."""
    run = Path(shutil.copy(real_results / "baseline-0286-grok.json", tmp_path / "a.json"))
    copy = Path(shutil.copy(run, tmp_path / "copy-of-a.json"))
    other = Path(shutil.copy(real_results / "after-0286-grok.json", tmp_path / "other.json"))
    return run, copy, other


def test_load_frame_reports_a_copy_of_a_v3_file_on_both_paths(
    real_results: Path, tmp_path: Path
) -> None:
    run, copy, other = copies(real_results, tmp_path)
    # As the harness wrote them (the reference path reads them)...
    frame, found = same_frame([run, other, copy], fast=False)
    assert frame.height == 3 * 21  # counted, as the copies of a JSON Lines run are
    assert found == [
        f"{copy} holds 21 repeat(s) that {run} holds too (same run, cell and repeat); both are "
        "counted: pass one file per run (its .jsonl or its v3 export)"
    ]
    # ...and as capeval writes v3 without run ids (the fast path reads them).
    header = json.loads(run.read_bytes())
    fast = tmp_path / "fast"
    fast.mkdir()
    rows = read_rows(run)
    write_v3(fast / "a.json", rows, started_at=header["startedAt"], finished_at=None)
    shutil.copy(fast / "a.json", fast / "copy-of-a.json")
    _, found = same_frame([fast / "a.json", fast / "copy-of-a.json"], fast=True)
    assert [
        f"{fast / 'copy-of-a.json'} holds 21 repeat(s) that {fast / 'a.json'}" in m for m in found
    ] == [True]
    # Different runs share nothing, even with the same cells and repeats.
    _, found = same_frame([run, other], fast=False)
    assert found == []


def test_compare_and_gate_warn_about_a_copy_of_a_v3_file(
    real_results: Path, tmp_path: Path
) -> None:
    run, copy, other = copies(real_results, tmp_path)
    expected = (
        f"{copy} and {run} both hold the run started at {json.loads(run.read_bytes())['startedAt']}"
    )
    args = ("--baseline", run, "--baseline", copy, "--candidate", other)
    done = capeval(
        "compare", *args, "--json", "--no-advisory", "--allow-provider-fallback", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [w for w in result["warnings"] if expected in w] != []
    assert result["cells"][0]["baseline"]["repeats"] == 6  # counted, with the warning
    gated = capeval("gate", *args, "--allow-provider-fallback", *BAIT_FLAGS, cwd=tmp_path)
    assert gated.returncode == 3, gated.stderr  # bait flags, as the real files have
    assert f"warning: {expected}" in gated.stdout
    # Two runs on one side are pooled without a word, as before.
    pooled = capeval(
        "compare",
        "--baseline",
        run,
        "--baseline",
        other,
        "--candidate",
        other,
        "--json",
        "--no-advisory",
        "--allow-provider-fallback",
        cwd=tmp_path,
    )
    assert not [w for w in json.loads(pooled.stdout)["warnings"] if "both hold" in w]


def test_the_gates_fast_path_warns_about_a_copy_of_a_v3_file(
    real_results: Path, tmp_path: Path
) -> None:
    # capeval-written v3 (`cases` last) without run ids: DuckDB reads them.
    run, _, _ = copies(real_results, tmp_path)
    header = json.loads(run.read_bytes())
    first = tmp_path / "fast.json"
    write_v3(first, read_rows(run), started_at=header["startedAt"], finished_at=None)
    second = Path(shutil.copy(first, tmp_path / "fast-copy.json"))
    fastload._load_duckdb([[first, second]], with_values=False, headline=True)  # no fallback
    (cells,), warnings = fastload.load_sides([[first, second]])
    assert warnings == [
        f"{second} and {first} both hold the run started at {header['startedAt']} (the same "
        "v3 header startedAt, rows without run ids); its repeats are counted twice: pass one "
        "file per run (one is a copy of the other)"
    ]
    assert {c.repeats for c in cells.values()} == {6}
    assert fastload.load_sides([[first, second]], fast=False)[1] == warnings


def _rows_of(run: str, repeats: range) -> list[str]:
    return [
        json.dumps(
            {"resultKey": "v::a", "id": "a", "variantId": "v", "passed": r % 2 == 0,
             "repeat": r, "runId": run}
        )
        for r in repeats
    ]  # fmt: skip


def test_both_readers_name_repeats_a_pooled_file_holds_after_another_run(tmp_path: Path) -> None:
    # `all.jsonl` holds run r1, then run r2; `r2.jsonl` holds r2 again. The
    # fast path compared first rows only: r1 and r2 differ, so r2's repeats
    # were counted twice without a word (the reference reader warned).
    both = tmp_path / "all.jsonl"
    both.write_text("\n".join(_rows_of("r1", range(2)) + _rows_of("r2", range(2))) + "\n")
    again = tmp_path / "r2.jsonl"
    again.write_text("\n".join(_rows_of("r2", range(2))) + "\n")
    expected = [
        f"{again} holds 2 repeat(s) that {both} holds too (same run, cell and repeat); both "
        "are counted: pass one file per run (its .jsonl or its v3 export)"
    ]
    fastload._load_duckdb([[both, again]], with_values=False, headline=False)  # no fallback
    for fast in (True, False):
        (cells,), warnings = fastload.load_sides([[both, again]], fast=fast)
        assert warnings == expected, fast
        assert cells["v::a"].repeats == 6


def test_two_parts_of_one_run_with_different_repeats_are_no_double_count(tmp_path: Path) -> None:
    # Same run id first in both files, no repeat in common: the fast path
    # warned "its repeats are counted twice", which was false.
    first, second = tmp_path / "part1.jsonl", tmp_path / "part2.jsonl"
    first.write_text("\n".join(_rows_of("r9", range(0, 2))) + "\n")
    second.write_text("\n".join(_rows_of("r9", range(2, 4))) + "\n")
    for fast in (True, False):
        (cells,), warnings = fastload.load_sides([[first, second]], fast=fast)
        assert warnings == [], fast
        assert cells["v::a"].repeats == 4


def _head_with_number_at(offset: int, number: str) -> bytes:
    """A v3 document whose top-level `repeats` number starts at byte `offset`."""
    prefix = '{"version": 3, "startedAt": "2026-01-01T00:00:00Z", "note": "'
    middle = '", "repeats": '
    pad = offset - len(prefix) - len(middle)
    return (prefix + "x" * pad + middle + number + ', "cases": []}').encode()


def test_a_copy_is_told_when_its_header_spans_chunks(tmp_path: Path) -> None:
    data = _head_with_number_at(formats.HEAD_CHUNK - 2, "321")
    run, copy = tmp_path / "a.json", tmp_path / "copy-of-a.json"
    run.write_bytes(data)
    copy.write_bytes(data)
    assert v3_header(run) is not None
    found = same_run_warnings([run, copy])
    assert len(found) == 1 and "started at 2026-01-01T00:00:00Z" in found[0]


def _many_cell_run(tmp_path: Path, cells: int) -> tuple[Path, Path]:
    """A run of `cells` cells written by capeval: (its row stream, its v3 export)."""
    rows = [
        result_row(
            f"case-{i:03d}",
            behaviors=dict.fromkeys(METRIC_NAMES, 1),
            runId="run-1",
            capevalVersion="0.1.0",
        )
        for i in range(cells)
    ]
    stream, export = tmp_path / f"run{cells}.jsonl", tmp_path / f"run{cells}.json"
    with JsonlWriter(stream) as writer:
        for row in rows:
            writer.write(row)
    write_v3(export, rows, started_at="2026-01-01T00:00:00Z", finished_at=None)
    return stream, export


@pytest.mark.parametrize("cells", [3, 150])
def test_a_v3_export_beside_its_stream_is_told_however_many_cells(
    tmp_path: Path, cells: int
) -> None:
    # capeval's v3 export stores one aggregate per cell before `cases`: with
    # many cells its first rows (and their run id) lie past the first 64 KiB.
    stream, export = _many_cell_run(tmp_path, cells)
    assert export.read_bytes().index(b'"cases"') > (1 << 16) or cells < 100
    assert same_run_warnings([stream, export]) == [
        f"{export} and {stream} both hold run run-1; its repeats are counted twice: pass one "
        "file per run (its .jsonl or its v3 export)"
    ]


@pytest.mark.parametrize("cells", [3, 150])
def test_capevals_own_v3_export_is_known_as_capevals(
    tmp_path: Path, real_results: Path, cells: int
) -> None:
    stream, export = _many_cell_run(tmp_path, cells)
    assert written_by_capeval(export) and written_by_capeval(stream)
    assert mixed_writer_warnings([export], [stream]) == []
    harness = real_results / "baseline-0286.json"
    assert not written_by_capeval(harness)
    (found,) = mixed_writer_warnings([harness], [export])
    assert (
        found.startswith("the baseline was not written by capeval") and "the candidate was" in found
    )
    (found,) = mixed_writer_warnings([stream], [harness])
    assert (
        found.startswith("the candidate was not written by capeval") and "the baseline was" in found
    )


def test_rows_without_a_repeat_field_are_not_duplicates(tmp_path: Path) -> None:
    rows = [result_row("a"), result_row("a")]
    for row in rows:
        del row["repeat"]
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    found: list[str] = []
    assert len(read_rows(path, on_warning=found.append)) == 2
    assert found == []


def test_files_with_an_empty_started_at_are_not_taken_for_copies(tmp_path: Path) -> None:
    # An empty header `startedAt` tells no run apart: two such files are two runs.
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    write_v3(one, [result_row("a")], started_at="", finished_at=None)
    write_v3(two, [result_row("b")], started_at="", finished_at=None)
    assert same_run_warnings([one, two]) == []
