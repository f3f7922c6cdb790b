"""Reading any result file: format told by content, rows brought up to date."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from capeval.core.metrics import NUMERIC_METRICS
from capeval.results.errors import ResultFileError, ResultFileWarning
from capeval.results.formats import format_of
from capeval.results.jsonl import JsonlWriter
from capeval.results.load import read_many, read_rows
from capeval.results.v3 import build_v3, write_v3
from tests.rowfactory import result_row


def make_row(case: str = "c", repeat: int = 0, **extra: Any) -> dict[str, Any]:
    behaviors = {"shellCommandCount": 1, "taskToolCallCount": 0}
    return result_row(case, repeat, **{"behaviors": behaviors, **extra})


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    with JsonlWriter(path) as writer:
        for row in rows:
            writer.write(row)
    return path


def test_jsonl_named_json_is_read_as_jsonl(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "stream.json", [make_row("a"), make_row("b")])
    assert format_of(path) == "jsonl"
    assert [r["id"] for r in read_rows(path)] == ["a", "b"]


def test_single_row_jsonl_is_not_mistaken_for_v3(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "one.json", [make_row("a")])
    assert format_of(path) == "jsonl"
    # Rows that predate `outcome` are read with it, derived from `passed`.
    assert read_rows(path) == [{**make_row("a"), "outcome": "passed"}]


@pytest.mark.parametrize("pretty", [True, False])
def test_v3_named_jsonl_is_read_as_v3(tmp_path: Path, pretty: bool) -> None:
    path = tmp_path / "results.jsonl"
    doc = build_v3([make_row("a")], started_at=None, finished_at=None)
    path.write_text(json.dumps(doc, indent=2 if pretty else None))
    assert format_of(path) == "v3"
    # Rows that predate `outcome` are read with it, derived from `passed`.
    assert read_rows(path) == [{**make_row("a"), "outcome": "passed"}]


def test_older_rows_get_task_tool_call_count(tmp_path: Path) -> None:
    old = make_row("a", behaviors={"shellCommandCount": 1, "toolCallsByName": {"spawn_agent": 2}})
    none = make_row("b", behaviors={"shellCommandCount": 1, "toolCallsByName": {"read": 2}})
    kept = make_row("c", behaviors={"taskToolCallCount": 5, "toolCallsByName": {"task": 1}})
    null = make_row("d", behaviors=None)
    path = tmp_path / "old.json"
    write_v3(path, [old, none, kept, null], started_at=None, finished_at=None)
    rows = read_rows(path)
    assert [r["behaviors"] and r["behaviors"]["taskToolCallCount"] for r in rows] == [2, 0, 5, None]
    # Nothing else about the row changes but its derived `outcome`.
    assert {k: v for k, v in rows[0].items() if k != "behaviors"} == {
        **{k: v for k, v in old.items() if k != "behaviors"},
        "outcome": "passed",
    }


def test_torn_line_goes_to_on_warning(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "torn.jsonl", [make_row("a")])
    with open(path, "a") as handle:
        handle.write('{"id": "b"')
    seen: list[str] = []
    assert [r["id"] for r in read_rows(path, on_warning=seen.append)] == ["a"]
    assert len(seen) == 1 and "torn.jsonl:2" in seen[0]


def test_torn_line_default_is_a_python_warning(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "torn.jsonl", [make_row("a")])
    with open(path, "a") as handle:
        handle.write('{"id": "b"')
    with pytest.warns(ResultFileWarning, match="torn last line"):
        read_rows(path)


def test_torn_only_line_in_jsonl_named_file_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "crashed.jsonl"
    path.write_text('{"id": "a", "pass')
    seen: list[str] = []
    assert read_rows(path, on_warning=seen.append) == []
    assert len(seen) == 1


def test_empty_jsonl_has_no_rows_but_empty_json_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    assert read_rows(tmp_path / "empty.jsonl") == []
    (tmp_path / "empty.json").write_text("\n")
    with pytest.raises(ResultFileError, match=r"empty\.json: file is empty"):
        read_rows(tmp_path / "empty.json")


def test_broken_json_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "half.json"
    path.write_text('{\n  "version": 3,\n  "cases": [\n')
    with pytest.raises(ResultFileError, match=r"half\.json: not valid JSON .*line 4"):
        read_rows(path)


def test_a_truncated_v3_file_says_where_in_plain_words(tmp_path: Path) -> None:
    # The message read "Unterminated string starting at at line 3 column 12".
    path = tmp_path / "cut.json"
    path.write_text('{\n  "version": 3,\n  "cases": [{"id": "a')
    with pytest.raises(ResultFileError) as info:
        read_rows(path)
    assert str(info.value).startswith(
        f"{path}: not valid JSON at line 3 column 20: Unterminated string starting at; "
    )
    assert " at at " not in str(info.value)


def test_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match="is a directory"):
        read_rows(tmp_path)


def test_read_many_keeps_file_then_row_order(tmp_path: Path) -> None:
    first = write_jsonl(tmp_path / "1.jsonl", [make_row("b"), make_row("a")])
    second = tmp_path / "2.json"
    write_v3(second, [make_row("c")], started_at=None, finished_at=None)
    assert [r["id"] for r in read_many([first, second])] == ["b", "a", "c"]


def test_duplicate_repeat_in_one_file_is_kept_with_a_warning(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "dup.jsonl", [make_row("a", 0), make_row("a", 1), make_row("a", 0)]
    )
    seen: list[str] = []
    assert len(read_rows(path, on_warning=seen.append)) == 3
    assert seen == [f"{path}: row 3 repeats v::a repeat 0 (first at row 1); both are counted"]


def test_same_repeat_in_different_runs_is_not_a_duplicate(tmp_path: Path) -> None:
    rows = [make_row("a", 0, runId="r1"), make_row("a", 0, runId="r2")]
    seen: list[str] = []
    read_rows(write_jsonl(tmp_path / "two.jsonl", rows), on_warning=seen.append)
    assert seen == []


def test_row_with_a_version_field_is_still_a_row(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "v.json", [make_row("a", version="1.2.3")])
    assert format_of(path) == "jsonl"


# Valid JSON that Python's parser will not hold: DuckDB reads it, so the
# reference reader must refuse it as clearly as any bad line (it used to
# raise a traceback, and the gate exited 1, its "regressed" code).
TOO_BIG = {"huge-integer": "9" * 5000, "deep": "[" * 5000 + "]" * 5000}
TOO_BIG_SAYS = {"huge-integer": "integer longer than", "deep": "nested too deeply"}


@pytest.mark.parametrize("kind", sorted(TOO_BIG))
@pytest.mark.parametrize("terminated", [True, False])
def test_a_jsonl_line_python_cannot_hold_is_an_error_naming_the_line(
    tmp_path: Path, kind: str, terminated: bool
) -> None:
    odd = json.dumps(make_row(repeat=1, note="@")).replace('"@"', TOO_BIG[kind])
    path = tmp_path / "odd.jsonl"
    # Unterminated too: a complete line is no torn line, however long.
    path.write_text(json.dumps(make_row()) + "\n" + odd + ("\n" if terminated else ""))
    with pytest.raises(ResultFileError, match=rf"odd\.jsonl:2: .*{TOO_BIG_SAYS[kind]}"):
        read_rows(path, on_warning=pytest.fail)


@pytest.mark.parametrize("kind", sorted(TOO_BIG))
@pytest.mark.parametrize("pretty", [True, False])
def test_a_v3_file_python_cannot_hold_is_an_error_naming_the_file(
    tmp_path: Path, kind: str, pretty: bool
) -> None:
    doc = build_v3([make_row(note="@")], started_at=None, finished_at=None)
    text = json.dumps(doc, indent=2 if pretty else None).replace('"@"', TOO_BIG[kind])
    path = tmp_path / "odd.json"
    path.write_text(text)
    with pytest.raises(ResultFileError, match=rf"odd\.json: .*{TOO_BIG_SAYS[kind]}"):
        read_rows(path)


def test_a_file_named_twice_is_read_once_with_a_warning(tmp_path: Path) -> None:
    # Read twice, every repeat counted double: no same-run warning compares a
    # file with itself, and real-results files carry no run id at all.
    from capeval.analysis.fastload import load_sides
    from capeval.analysis.frame import load_frame
    from capeval.results.load import read_many

    rows = [
        {"resultKey": "v::a", "id": "a", "variantId": "v", "passed": p, "repeat": i}
        for i, p in enumerate((True, False, True))
    ]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "sub").mkdir()
    again = tmp_path / "sub" / ".." / "r.jsonl"
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    warned: list[str] = []
    assert len(read_many([path, again, link], on_warning=warned.append)) == 3
    assert len(warned) == 2 and all("read once" in w for w in warned)
    for fast in (True, False):
        (cells,), messages = load_sides([[path, link]], fast=fast)
        assert (cells["v::a"].repeats, cells["v::a"].passCount) == (3, 2)
        assert any("read once" in m for m in messages)
    frame_warnings: list[str] = []
    assert load_frame([path, path], on_warning=frame_warnings.append).height == 3
    assert frame_warnings and "read once" in frame_warnings[0]


def _stream(tmp_path: Path, bad: dict[str, Any] | str) -> Path:
    """A row stream whose second line is `bad` (a row, or raw text)."""
    path = tmp_path / "rows.jsonl"
    line = bad if isinstance(bad, str) else json.dumps(bad)
    path.write_text(
        json.dumps(result_row("ok")) + "\n" + line + "\n" + json.dumps(result_row("z")) + "\n"
    )
    return path


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (result_row(""), "id"),
        (result_row("a", passed=1), "passed"),  # type: ignore[arg-type]
        (result_row("a", repeat=True), "repeat"),  # type: ignore[arg-type]
        (result_row("a", behaviors=[1, 2]), "behaviors"),
        (result_row("a", tokenUsage=[1, 2]), "tokenUsage"),
        (result_row("a", behaviors={"networkCommandCount": True}), "behaviors.networkCommandCount"),
        (
            '{"id": "a", "variantId": "v", "passed": true, "behaviors": {"maxTurnDurationMs": NaN}}',
            "behaviors.maxTurnDurationMs",
        ),
        (
            '{"id": "a", "variantId": "v", "passed": true, "behaviors": {"longestToolOnlyStreak": '
            "-Infinity}}",
            "behaviors.longestToolOnlyStreak",
        ),
        (
            '{"id": "a", "variantId": "v", "passed": true, "behaviors": {"chainSegmentCount": 1'
            + "0" * 400
            + "}}",
            "behaviors.chainSegmentCount",
        ),
    ]
    + [
        (result_row("a", behaviors={metric: "1"}), f"behaviors.{metric}")
        for metric in NUMERIC_METRICS
    ],
)
def test_a_row_aggregates_cannot_trust_is_refused_naming_line_and_field(
    tmp_path: Path, bad: dict[str, Any] | str, field: str
) -> None:
    # Python would count `true` as 1 and a NaN would poison every median:
    # such a row must stop the read, naming where it is and what to fix.
    path = _stream(tmp_path, bad)
    with pytest.raises(ResultFileError, match=rf"rows\.jsonl:2: field '{re.escape(field)}' must"):
        read_rows(path)


def test_a_row_with_only_a_result_key_is_a_row(tmp_path: Path) -> None:
    # The harness's rows always carry both, but either names the cell.
    row = result_row("a")
    del row["variantId"]
    assert read_rows(_stream(tmp_path, row))[1]["resultKey"] == "v::a"


def test_a_concatenation_of_one_line_v3_files_is_refused(tmp_path: Path) -> None:
    # Reading only the first document would drop every row of the others.
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    write_v3(one, [result_row("a")], started_at="s1", finished_at=None)
    write_v3(two, [result_row("b")], started_at="s2", finished_at=None)
    both = tmp_path / "both.json"
    compact = [json.dumps(json.loads(p.read_bytes())) for p in (one, two)]
    both.write_text("\n".join(compact) + "\n")
    with pytest.raises(
        ResultFileError, match=r"both\.json: not valid JSON at line 2 column 1: Extra data"
    ):
        read_rows(both)
