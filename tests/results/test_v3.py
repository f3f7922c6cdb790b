"""The v3 results JSON: lossless rows, computed aggregates, clear errors."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capeval.core.aggregate import aggregate, totals
from capeval.results.errors import ResultFileError
from capeval.results.load import read_rows
from capeval.results.v3 import build_v3, read_v3, write_v3
from tests.rowfactory import result_row


def make_row(case: str = "c1", repeat: int = 0, **extra: Any) -> dict[str, Any]:
    defaults = {
        "durationMs": 100,
        "tokenUsage": {"input": 10, "output": 1, "cacheRead": 0, "cacheWrite": 0, "thinking": 0},
        "behaviors": {"shellCommandCount": repeat + 1, "taskToolCallCount": 0},
    }
    return result_row(case, repeat, **{**defaults, **extra})


ROWS = [make_row("a", 0), make_row("a", 1, passed=False), make_row("b", 0, runId="r1")]


def write(path: Path, rows: list[dict[str, Any]] = ROWS, **kw: Any) -> None:
    write_v3(
        path, rows, started_at="2026-01-01T00:00:00Z", finished_at="2026-01-01T01:00:00Z", **kw
    )


def test_round_trip_is_lossless(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    write(path, provider="p", model="m", repeats=2, variants=[{"id": "v", "provider": "p"}])
    header, rows = read_v3(path)
    assert rows == ROWS
    assert header == {
        "version": 3,
        "startedAt": "2026-01-01T00:00:00Z",
        "finishedAt": "2026-01-01T01:00:00Z",
        "provider": "p",
        "model": "m",
        "repeats": 2,
        "variants": [{"id": "v", "provider": "p"}],
    }


def test_written_aggregates_and_totals_come_from_rows(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    write(path)
    doc = json.loads(path.read_text())
    assert doc["aggregates"] == aggregate(ROWS)
    assert doc["totals"] == totals(ROWS)
    assert [a["passCount"] for a in doc["aggregates"]] == [1, 1]
    assert doc["totals"]["failed"] == 1


def test_defaults_for_repeats_and_variants(tmp_path: Path) -> None:
    rows = [make_row("a", 0, variantId="x", requestedProvider="p", requestedModel="m")]
    rows.append(make_row("a", 4, variantId="y"))
    doc = build_v3(rows, started_at=None, finished_at=None)
    assert doc["repeats"] == 5
    assert doc["variants"] == [{"id": "x", "provider": "p", "model": "m"}, {"id": "y"}]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    extras=st.lists(
        st.dictionaries(st.text().filter(lambda k: k not in make_row()), json_values, max_size=4),
        min_size=1,
        max_size=4,
    )
)
def test_round_trip_property(tmp_path: Path, extras: list[dict[str, Any]]) -> None:
    # Added to each row, not passed to `make_row`, whose `case` would clash.
    rows = [{**make_row(f"c{i}", 0), **extra} for i, extra in enumerate(extras)]
    path = tmp_path / "prop.json"
    write(path, rows)
    assert read_v3(path)[1] == rows


def test_hand_edited_aggregates_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "edited.json"
    write(path)
    doc = json.loads(path.read_text())
    doc["aggregates"][0]["passCount"] = 99
    doc["aggregates"][0]["passRate"] = 1.0
    doc["aggregates"][0]["behaviorStats"]["shellCommandCount"]["median"] = 1000
    doc["totals"]["passed"] = 99
    path.write_text(json.dumps(doc))
    header, _ = read_v3(path)
    assert "aggregates" not in header and "totals" not in header
    assert aggregate(read_rows(path)) == aggregate(ROWS)


def test_unknown_top_level_fields_survive(tmp_path: Path) -> None:
    path = tmp_path / "extra.json"
    write(path)
    doc = json.loads(path.read_text())
    doc["harness"] = {"name": "ts", "build": 286}
    path.write_text(json.dumps(doc))
    assert read_v3(path)[0]["harness"] == {"name": "ts", "build": 286}


def test_rewrite_replaces_atomically_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    write(path)
    write(path, ROWS[:1])
    assert read_v3(path)[1] == ROWS[:1]
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_the_file_gets_umask_permissions_not_mkstemps_0600(tmp_path: Path) -> None:
    # It was written through mkstemp and kept its 0600: a refrozen baseline or
    # a CI results file was unreadable to every other user.
    path = tmp_path / "out.json"
    old = os.umask(0o022)
    try:
        write(path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_bad_rows_are_refused_before_writing(tmp_path: Path) -> None:
    path = tmp_path / "never.json"
    with pytest.raises(ValueError, match=r"rows\[1\]: field 'passed'"):
        write(path, [make_row("a"), make_row("b", passed="yes")])
    assert not path.exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"bad\.json: not valid JSON at line 1 column 2: Expecting property name"),
        ("[1, 2]", r"bad\.json: top level is a JSON list"),
        ('{"cases": []}', r"bad\.json: no 'version' field"),
        ('{"version": 2, "cases": []}', r"bad\.json: field 'version' is 2; .*version 3"),
        ('{"version": "3", "cases": []}', r"field 'version' is \"3\""),
        ('{"version": 3}', r"bad\.json: field 'cases' is missing"),
        ('{"version": 3, "cases": {}}', r"field 'cases' is a JSON dict"),
        ('{"version": 3, "cases": [{"id": "a", "passed": true}]}', r"cases\[0\]: .*'resultKey'"),
        ('{"version": 3, "cases": [{"passed": true}]}', r"cases\[0\]: field 'id'"),
        (
            '{"version": 3, "cases": [{"id": "a", "variantId": "v", "passed": true, '
            '"behaviors": {"shellCommandCount": "3"}}]}',
            r"cases\[0\]: field 'behaviors\.shellCommandCount' must be a finite number",
        ),
        # Valid JSON that Python cannot hold: an error, not a traceback.
        ('{"version": 3, "n": ' + "9" * 5000 + "}", r"bad\.json: .*integer longer than"),
        ('{"version": 3, "n": ' + "[" * 5000 + "]" * 5000 + "}", r"bad\.json: .*too deeply"),
    ],
)
def test_errors_name_file_and_problem(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ResultFileError, match=message):
        read_v3(path)


def test_file_has_one_row_per_line(tmp_path: Path) -> None:
    # Diff-friendly and written by the fast C encoder (see dump_v3).
    path = tmp_path / "layout.json"
    write(path)
    lines = path.read_text().splitlines()
    case_lines = [json.loads(line.strip().rstrip(",")) for line in lines if '"resultKey"' in line]
    assert [c for c in case_lines if "passed" in c] == ROWS


def test_a_failed_v3_write_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    (target / "inside").mkdir(parents=True)  # the rename onto it fails
    with pytest.raises(OSError):
        write_v3(target, [result_row("a")], started_at=None, finished_at=None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
