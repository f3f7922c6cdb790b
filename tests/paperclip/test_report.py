"""The parity report's `live` section: live rows folded in, counted by DuckDB, as a contract.

The suite's own report contract is in `test_suite.py`; these tests hold the
live section to what docs/paperclip.md#live-report says: per group, agent and
grant configuration the turns, passed, failed and error counts and the pass
rate (passed / (passed + failed), an `error` turn left out), the same per
group and agent, per agent its versions, models and first and last turn,
the turns that did not pass; deterministic apart from the fields the section
names in `nondeterministic`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from capeval.cli import main
from capeval.paperclip.derivative import Row
from capeval.paperclip.report import (
    LIVE_NONDETERMINISTIC,
    REPORT_JSON,
    REPORT_MD,
    read_live_rows,
    write_report,
)
from capeval.paperclip.suite import run_suite
from capeval.results.errors import ResultFileError

FAILURE = {
    "caseId": "mh-blocked-handoff-01",
    "assertionClass": "combined_multi_hop",
    "operation": "finish_task",
    "decision": "allowed",
    "reason": "",
    "message": "cumulative state: hop 2 (finish_task) left tasks[i-0102].status is 'done'",
    "stateDiff": [],
    "stepDiff": [],
}


def live_row(
    group: str,
    grants: str,
    outcome: str,
    *,
    agent: str = "codex",
    repeat: int = 0,
    model: str = "gpt-5.5",
    started: str = "2026-12-06T07:00:00.000+00:00",
) -> dict[str, Any]:
    return {
        "caseId": f"{group}-case-01",
        "id": f"{group}-case-01:{grants}",
        "group": group,
        "grants": grants,
        "agent": agent,
        "variantId": agent,
        "resultKey": f"{agent}::{group}-case-01:{grants}",
        "agentVersion": "1.0.0",
        "model": model,
        "scripted": False,
        "repeat": repeat,
        "outcome": outcome,
        "passed": outcome == "passed",
        "failures": [] if outcome == "passed" else [FAILURE],
        "startedAt": started,
        "finishedAt": started.replace("07:00:00", "07:00:09"),
    }


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def mh_rows(paperclip_rows: list[Row]) -> list[Row]:
    return [r for r in paperclip_rows if r.group == "mh"]


MATRIX = [
    live_row("mh", "granted", "passed"),
    live_row("mh", "granted", "failed", repeat=1),
    live_row("mh", "granted", "error", repeat=2),
    live_row("mh", "ungranted", "passed"),
    live_row("mh", "granted", "passed", agent="claude-code", model="claude-x"),
    live_row("rs", "single", "error", agent="claude-code", model="claude-x"),
]


def test_the_live_section_counts_outcomes_and_leaves_errors_out_of_the_rate(
    mh_rows: list[Row], tmp_path: Path
) -> None:
    rows = write_rows(tmp_path / "live-rows.jsonl", MATRIX)
    json_path, md_path, _ = write_report(run_suite(mh_rows), tmp_path / "out", live_rows=[rows])
    live = json.loads(json_path.read_text())["live"]
    assert set(live) == {
        "nondeterministic", "turns", "passed", "failed", "error", "passRate", "agents",
        "groups", "matrix", "failures",
    }  # fmt: skip
    assert (live["turns"], live["passed"], live["failed"], live["error"]) == (6, 3, 1, 2)
    assert live["passRate"] == 0.75  # 3 / (3 + 1): the two error turns measured nothing
    assert live["nondeterministic"] == list(LIVE_NONDETERMINISTIC)
    groups = {(g["group"], g["agent"], g["grants"]): g for g in live["groups"]}
    assert list(groups) == [
        ("mh", "claude-code", "granted"),
        ("mh", "codex", "granted"),
        ("mh", "codex", "ungranted"),
        ("rs", "claude-code", "single"),
    ]
    granted = groups[("mh", "codex", "granted")]
    assert (granted["cases"], granted["turns"], granted["passed"], granted["failed"]) == (
        1, 3, 1, 1,
    )  # fmt: skip
    assert granted["error"] == 1 and granted["passRate"] == 0.5
    assert groups[("rs", "claude-code", "single")]["passRate"] is None  # nothing judged
    assert live["matrix"]["mh"]["codex"] == {
        "turns": 4, "passed": 2, "failed": 1, "error": 1, "passRate": 0.6667,
    }  # fmt: skip
    assert live["matrix"]["mh"]["claude-code"]["passRate"] == 1.0
    assert live["agents"]["codex"]["models"] == ["gpt-5.5"]
    assert live["agents"]["claude-code"]["agentVersions"] == ["1.0.0"]
    assert live["agents"]["codex"]["startedAt"] == "2026-12-06T07:00:00.000+00:00"
    failing = [(f["agent"], f["caseId"], f["repeat"], f["outcome"]) for f in live["failures"]]
    assert failing == [
        ("claude-code", "rs-case-01", 0, "error"),
        ("codex", "mh-case-01", 1, "failed"),
        ("codex", "mh-case-01", 2, "error"),
    ]
    assert live["failures"][1]["failures"][0]["operation"] == "finish_task"
    md = md_path.read_text()
    assert "## Live conformance" in md
    assert "6 turns: 3 passed, 1 failed, 2 error; pass rate 75%" in md
    assert "| mh | 100% (1/1) | 67% (2/3, 1 error) |" in md
    assert "| mh | codex | granted | 3 | 1 | 1 | 1 | 50% |" in md
    assert "hop 2 (finish_task)" in md


def test_the_report_is_deterministic_apart_from_the_fields_it_names(
    mh_rows: list[Row], tmp_path: Path
) -> None:
    result = run_suite(mh_rows)
    one = write_rows(tmp_path / "one.jsonl", MATRIX)
    # The same turns, recorded at another time by another model snapshot.
    later = [
        {**r, "model": r["model"] + "-2", "startedAt": r["startedAt"].replace("07:", "08:"),
         "finishedAt": r["finishedAt"].replace("07:", "08:")}
        for r in MATRIX
    ]  # fmt: skip
    two = write_rows(tmp_path / "two.jsonl", later)
    a = write_report(result, tmp_path / "a", live_rows=[one])
    again = write_report(result, tmp_path / "again", live_rows=[one])
    b = write_report(result, tmp_path / "b", live_rows=[two])
    for p, q in zip(a, again, strict=True):
        assert p.read_bytes() == q.read_bytes(), p.name
    ra, rb = (json.loads(x[0].read_text()) for x in (a, b))
    assert ra != rb
    for report in (ra, rb):
        for entry in report["live"]["agents"].values():
            for key in ("startedAt", "finishedAt", "models"):
                entry.pop(key)
    assert ra == rb  # nothing else differs


def test_without_live_rows_the_section_is_null_and_says_how_to_get_one(
    mh_rows: list[Row], tmp_path: Path
) -> None:
    json_path, md_path, _ = write_report(run_suite(mh_rows), tmp_path)
    assert json.loads(json_path.read_text())["live"] is None
    assert "No live rows folded in (`capeval paperclip live`, then `report`)." in (
        md_path.read_text()
    )


def test_live_rows_are_read_by_the_result_stream_reader(mh_rows: list[Row], tmp_path: Path) -> None:
    torn = tmp_path / "torn.jsonl"
    torn.write_text(json.dumps(MATRIX[0]) + "\n" + json.dumps(MATRIX[1])[:30])
    rows, warnings = read_live_rows([torn])
    assert len(rows) == 1 and len(warnings) == 1
    _, _, suite_rows = write_report(run_suite(mh_rows), tmp_path)  # the suite's own rows
    with pytest.raises(ResultFileError, match=r"rows\.jsonl:1: .*pass the live-rows\.jsonl"):
        read_live_rows([suite_rows])
    result_row = {k: v for k, v in MATRIX[0].items() if k not in ("outcome", "grants")}
    with pytest.raises(
        ResultFileError, match=r"row 1 is not a live turn's row \(no grants, outcome\)"
    ):
        read_live_rows([write_rows(tmp_path / "x.jsonl", [result_row])])
    odd = write_rows(tmp_path / "odd.jsonl", [{**MATRIX[0], "outcome": "cancelled"}])
    with pytest.raises(
        ResultFileError, match="field 'outcome' must be one of passed, failed, error"
    ):
        read_live_rows([odd])


@pytest.mark.slow  # the suite runs five times
def test_report_folds_in_the_live_rows_beside_it_or_those_named(
    paperclip_derivative: Path, tmp_path: Path
) -> None:
    out = tmp_path / "evidence"
    (out / "live").mkdir(parents=True)
    write_rows(out / "live" / "live-rows.jsonl", MATRIX)
    argv = ["paperclip", "report", "--file", str(paperclip_derivative), "--out", str(out)]
    runner = CliRunner()
    result = runner.invoke(main, [*argv, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["live"] == [str(out / "live" / "live-rows.jsonl")]
    assert json.loads((out / REPORT_JSON).read_text())["live"]["turns"] == 6
    assert runner.invoke(main, [*argv, "--no-live"]).exit_code == 0
    assert json.loads((out / REPORT_JSON).read_text())["live"] is None
    other = write_rows(tmp_path / "other.jsonl", MATRIX[:2])
    assert runner.invoke(main, [*argv, "--live", str(other)]).exit_code == 0
    assert json.loads((out / REPORT_JSON).read_text())["live"]["turns"] == 2
    assert "## Live conformance" in (out / REPORT_MD).read_text()
    bad = write_rows(tmp_path / "bad.jsonl", [{k: v for k, v in MATRIX[0].items() if k != "agent"}])
    refused = runner.invoke(main, [*argv, "--live", str(bad)])
    assert refused.exit_code == 2 and "not a live turn's row" in refused.output
    both = runner.invoke(main, [*argv, "--live", str(other), "--no-live"])
    assert both.exit_code == 2 and "contradict" in both.output


def test_a_live_file_named_twice_is_counted_once_and_a_copy_is_warned_about(
    mh_rows: list[Row], tmp_path: Path
) -> None:
    # `--live F --live F` counted every turn twice, silently: 12 turns of 6.
    one = write_rows(tmp_path / "one.jsonl", [{**r, "runId": "r1"} for r in MATRIX])
    rows, warnings = read_live_rows([one, one])
    assert len(rows) == 6
    assert warnings == [
        f"{one} is given twice; read once (read twice, its repeats would count twice)"
    ]
    json_path, _, _ = write_report(run_suite(mh_rows), tmp_path / "out", live_rows=[one, one])
    assert json.loads(json_path.read_text())["live"]["turns"] == 6
    copy = write_rows(tmp_path / "copy.jsonl", [{**r, "runId": "r1"} for r in MATRIX])
    rows, warnings = read_live_rows([one, copy])
    assert len(rows) == 12  # counted in both, as every result reader counts a copy
    assert warnings == [
        f"{copy} holds 6 repeat(s) that {one} holds too (same run, cell and repeat); both are "
        "counted: pass one file per run (its .jsonl or its v3 export)"
    ]


def test_the_live_section_does_not_depend_on_the_order_of_its_files(
    mh_rows: list[Row], tmp_path: Path
) -> None:
    # Two matrices' rows (each a repeat 0) failing the same configuration for other
    # reasons: the failures list was ordered by agent, case, grants and repeat only,
    # so the report followed the order the files were named in.
    other = {**FAILURE, "operation": "block_task", "message": "another reason"}
    first = write_rows(
        tmp_path / "first.jsonl", [{**live_row("mh", "granted", "failed"), "runId": "r1"}]
    )
    second = write_rows(
        tmp_path / "second.jsonl",
        [{**live_row("mh", "granted", "failed"), "runId": "r2", "failures": [other]}],
    )
    result = run_suite(mh_rows)
    a = write_report(result, tmp_path / "a", live_rows=[first, second])
    b = write_report(result, tmp_path / "b", live_rows=[second, first])
    for p, q in zip(a[:2], b[:2], strict=True):
        assert p.read_bytes() == q.read_bytes(), p.name
