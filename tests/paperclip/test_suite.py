"""The suite end to end: 146 passing configurations, and each assertion class failing when broken."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from capeval.core.paperclip.catalog import CATALOG
from capeval.core.paperclip.policy import ALWAYS, GROUP_COUNTS
from capeval.paperclip import controlplane
from capeval.paperclip.counts import group_counts
from capeval.paperclip.derivative import Row
from capeval.paperclip.fakeagent import CALL, PROBE, WITHHELD, Step, derive_plan
from capeval.paperclip.report import REPORT_JSON, REPORT_MD, ROWS_JSONL, write_report
from capeval.paperclip.suite import (
    CONTROL_PLANE_NAMES,
    GRANTED,
    SINGLE,
    UNGRANTED,
    SuiteResult,
    run_configuration,
    run_suite,
)
from tests.clirun import capeval

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rows(paperclip_rows: list[Row]) -> list[Row]:
    return paperclip_rows


@pytest.fixture(scope="module")
def by_id(rows: list[Row]) -> dict[str, Row]:
    return {r.id: r for r in rows}


@pytest.fixture(scope="module")
def suite(rows: list[Row]) -> SuiteResult:
    return run_suite(rows)


def classes_failed(result: Any) -> set[str]:
    return {f.assertion_class for f in result.failures}


def test_all_146_configurations_pass(suite: SuiteResult) -> None:
    assert [str(f) for f in suite.failures] == []
    assert (len(suite.results), suite.configurations_passed, suite.configurations_failed) == (
        146,
        146,
        0,
    )
    assert [(c.name, c.passed) for c in suite.suite_checks] == [
        ("binding_parity", True),
        ("codex_sample", True),
    ]
    assert (suite.passed, suite.failed, suite.checks, suite.ok) == (148, 0, 148, True)
    grants = [r.grants for r in suite.results]
    assert grants.count(GRANTED) == grants.count(UNGRANTED) == 40
    assert grants.count(SINGLE) == 66


def test_optional_rows_are_allowed_granted_and_refused_ungranted(suite: SuiteResult) -> None:
    for r in suite.results:
        if r.grants == GRANTED:
            assert any(s.gated and c.decision.decision == "allowed" for s, c in r.calls), r.row.id
            assert r.diff, r.row.id
        if r.grants == UNGRANTED:
            assert r.calls and all(c.decision.decision in ("absent", "denied") for _, c in r.calls)
            assert r.diff == [], r.row.id


def test_restraint_rows_have_empty_diffs(suite: SuiteResult) -> None:
    restraint = [r for r in suite.results if "restraint_no_call" in r.row.assertionClasses]
    assert len(restraint) == 18
    assert all(r.diff == [] for r in restraint)


def test_multi_hop_rows_run_real_sequences(suite: SuiteResult) -> None:
    multi = [
        r
        for r in suite.results
        if "combined_multi_hop" in r.row.assertionClasses and r.grants != UNGRANTED
    ]
    assert len(multi) == 54
    assert all(len(r.calls) >= 2 for r in multi)
    confirm = next(r for r in multi if r.row.id == "mh-plan-confirm-01")
    assert [s.operation for s, _ in confirm.calls] == [
        "list_documents",
        "write_document",
        "request_human_input",
        "create_task",
    ]
    assert any(
        c.entity == "interactions" and c.field == "status" and c.after == "accepted"
        for c in confirm.diff
    )


def test_forbidden_operations_in_plans_are_refused(suite: SuiteResult) -> None:
    skill = next(r for r in suite.results if r.row.id == "wk-skilltest-mode-01")
    refused = [(s.operation, c.decision.reason) for s, c in skill.calls if s.kind == PROBE]
    assert ("finish_task", "task_out_of_scope") in refused
    ask = next(r for r in suite.results if r.row.id == "wk-ask-mode-01")
    assert ("finish_task", "operation_not_available_in_task_mode") in [
        (s.operation, c.decision.reason) for s, c in ask.calls
    ]


def test_plans_are_derived_from_the_rows_evidence(rows: list[Row]) -> None:
    for row in rows:
        plan = derive_plan(row)
        sources = {s.source for s in plan.steps} - {"plan"}
        assert sources <= set(row.expectedSemantics), row.id
        assert plan == derive_plan(row)


def test_exposing_checkout_fails_the_suite(rows: list[Row]) -> None:
    broken = CATALOG.with_disposition("checkout_task", ALWAYS)
    result = run_suite(rows, catalog=broken)
    assert (result.configurations_failed, result.failed, result.ok) == (146, 148, False)
    kinds = {f.assertion_class for f in result.failures}
    assert {"control_plane_invariant", "binding_parity", "codex_sample"} <= kinds
    f = next(
        f
        for f in result.failures
        if f.operation == "checkout_task" and f.case_id == "co-409-stop-01"
    )
    assert "co-409-stop-01 [control_plane_invariant] checkout_task decision=" in str(f)


def test_restraint_row_whose_plan_mutates_fails(by_id: dict[str, Row]) -> None:
    row = by_id["co-before-work-01"]
    plan = derive_plan(row)
    steps = tuple(
        dataclasses.replace(s, kind=CALL) if s.kind == WITHHELD else s for s in plan.steps
    )
    assert steps != plan.steps
    result = run_configuration(row, SINGLE, plan=dataclasses.replace(plan, steps=steps))
    failure = next(f for f in result.failures if f.assertion_class == "restraint_no_call")
    assert failure.state_diff and failure.operation == "report_progress"


def test_optional_tool_without_claims_fails_ungranted(by_id: dict[str, Row]) -> None:
    op = dataclasses.replace(CATALOG.operations["create_task"], claims=())
    result = run_configuration(
        by_id["su-parent-goal-01"], UNGRANTED, catalog=CATALOG.with_operation(op)
    )
    assert "authorization_policy" in classes_failed(result)
    assert any("ungranted configuration changed state" in f.message for f in result.failures)


def test_granted_configuration_that_does_not_mutate_fails(by_id: dict[str, Row]) -> None:
    row = by_id["se-q-filters-01"]
    plan = derive_plan(row)
    reads = tuple(s for s in plan.steps if not CATALOG.operations[s.operation].mutates)
    result = run_configuration(row, GRANTED, plan=dataclasses.replace(plan, steps=reads))
    assert any(f.message == "granted configuration did not mutate state" for f in result.failures)


def test_broken_effect_fails_the_tool_contract(
    by_id: dict[str, Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Deliberately wrong effect: finish_task moves the task to review instead of done.
    monkeypatch.setitem(
        controlplane._HANDLERS,
        "finish_task",
        controlplane._status_with_comment("in_review", "summary"),
    )
    result = run_configuration(by_id["st-done-comment-01"], SINGLE)
    f = next(f for f in result.failures if f.assertion_class == "agent_tool_contract")
    assert f.operation == "finish_task" and "expected 'done'" in f.message
    assert any(c.field == "status" and c.after == "in_review" for c in f.state_diff)


def test_side_effect_that_undoes_an_earlier_hop_fails_the_cumulative_check(
    by_id: dict[str, Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    original = controlplane._HANDLERS["report_progress"]

    def comment_and_reset(cp: Any, s: dict[str, Any], a: dict[str, Any]) -> Any:
        s["tasks"][a["task"]]["status"] = "todo"
        return original(cp, s, a)

    monkeypatch.setitem(controlplane._HANDLERS, "report_progress", comment_and_reset)
    result = run_configuration(by_id["wk-recovery-processlost-01"], SINGLE)
    assert any(
        f.assertion_class == "combined_multi_hop" and "cumulative state" in f.message
        for f in result.failures
    )


def test_forbidden_operation_allowed_fails_multi_hop(by_id: dict[str, Row]) -> None:
    # A catalog that lets anyone create children while still planning.
    op = dataclasses.replace(
        CATALOG.operations["create_task"], modes=("standard", "planning"), claims=()
    )
    row = by_id["bl-create-blocked-01"]
    assert run_configuration(row, SINGLE, catalog=CATALOG.with_operation(op)).passed
    result = run_configuration(
        by_id["wk-plan-directive-01"], SINGLE, catalog=CATALOG.with_operation(op)
    )
    f = next(f for f in result.failures if f.message == "a forbidden operation was allowed")
    assert (f.operation, f.decision) == ("create_task", "allowed")


def test_control_plane_that_does_not_open_the_run_fails(
    by_id: dict[str, Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(controlplane.ControlPlane, "open_run", lambda self: [])
    result = run_configuration(by_id["hb-scoped-wake-01"], SINGLE)
    assert any(
        f.assertion_class == "control_plane_invariant" and "did not open the run" in f.message
        for f in result.failures
    )


@pytest.mark.slow
def test_report_contract_and_byte_identical_reruns(rows: list[Row], tmp_path: Path) -> None:
    first = write_report(run_suite(rows), tmp_path / "a")
    second = write_report(run_suite(rows), str(tmp_path / "b"))  # a notebook's plain string
    for p, q in zip(first, second, strict=True):
        assert p.read_bytes() == q.read_bytes(), p.name
    report = json.loads((tmp_path / "a" / REPORT_JSON).read_text(encoding="utf-8"))
    assert report["groups"] == GROUP_COUNTS
    assert (report["passed"], report["failed"], len(report["results"])) == (148, 0, 146)
    assert (report["verdict"], report["configurationsPassed"], report["checks"]) == (
        "passed",
        146,
        148,
    )
    assert (
        report["fakeAgentOperations"] == report["codexOperations"]
        and len(report["codexOperations"]) == 18
    )
    sample = report["boundedCodexSample"]
    assert [s["group"] for s in sample] == ["hb", "dp", "bl", "ap", "ar", "ix", "mh", "rs", "wk"]
    for s in sample:
        assert s["presentInCodex"] is (s["operation"] != "checkout_task"), s
    assert set(report["assertionClasses"]) == {
        "agent_tool_contract",
        "authorization_policy",
        "control_plane_invariant",
        "combined_multi_hop",
        "restraint_no_call",
    }
    assert "checkout_task" not in report["operationCounts"]  # never executed, only refused
    assert report["refusedAttempts"]["checkout_task"]["absent"] > 0
    assert all({"caseId", "passed", "operation"} <= set(r) for r in report["results"])
    md = (tmp_path / "a" / REPORT_MD).read_text(encoding="utf-8")
    assert (
        "**PASSED**: 148 passed, 0 failed of 148 checks: 146/146 configurations, "
        "binding parity 18/18, Codex sample 9/9." in md
    )


@pytest.mark.slow
def test_reports_from_two_processes_are_byte_identical(tmp_path: Path) -> None:
    # "repeat runs are byte-identical": across processes too, where anything drawn from
    # Python's salted str hash (a plan seeded with hash(row.id)) would differ.
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"r{seed}"
        proc = subprocess.run(
            [sys.executable, "-m", "capeval", "paperclip", "report", "--out", str(out)],
            cwd=REPO,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        outs.append(out)
    for name in (REPORT_JSON, REPORT_MD, ROWS_JSONL):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name


def test_group_counts_come_from_the_row_stream(rows: list[Row], tmp_path: Path) -> None:
    _, _, stream = write_report(run_suite(rows), tmp_path)
    counts = group_counts(stream)
    assert {g: v["cases"] for g, v in counts.items()} == GROUP_COUNTS
    assert counts["rf"]["configurations"] == 44
    lines = stream.read_text(encoding="utf-8").splitlines(keepends=True)
    stream.write_text("".join(lines[:-1]), encoding="utf-8")
    assert group_counts(stream)["wk"]["cases"] == GROUP_COUNTS["wk"] - 1


@pytest.mark.slow
def test_cli_run_and_report(tmp_path: Path) -> None:
    jsonl = tmp_path / "rows.jsonl"
    cmd = [sys.executable, "-m", "capeval", "paperclip"]
    out = subprocess.run(
        [*cmd, "run", "--json", "--jsonl", str(jsonl)], capture_output=True, text=True, cwd=REPO
    )
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert (summary["passed"], summary["failed"], summary["parity"]["identical"]) == (148, 0, True)
    assert (summary["verdict"], summary["configurations"]) == ("passed", 146)
    lines = [json.loads(x) for x in jsonl.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 146
    assert {
        "caseId",
        "group",
        "assertionClasses",
        "grants",
        "operation",
        "operations",
        "authorizationDecision",
        "passed",
        "stateDiff",
        "stateDiffSize",
    } <= set(lines[0])
    again = subprocess.run(
        [*cmd, "run", "--jsonl", str(jsonl)], capture_output=True, text=True, cwd=REPO
    )
    assert again.returncode == 2 and "exists" in again.stderr
    rep = subprocess.run(
        [*cmd, "report", "--out", str(tmp_path / "r")], capture_output=True, text=True, cwd=REPO
    )
    assert rep.returncode == 0, rep.stderr
    assert (
        "148 passed, 0 failed of 148 checks: 146/146 configurations, binding parity 18/18, "
        "Codex sample 9/9" in rep.stdout
    )
    assert (tmp_path / "r" / ROWS_JSONL).is_file()


@pytest.mark.slow
def test_run_refuses_to_write_its_rows_over_its_own_derivative(
    paperclip_derivative: Path, tmp_path: Path
) -> None:
    copy_path = tmp_path / "copy.yaml"
    original = paperclip_derivative.read_bytes()
    copy_path.write_bytes(original)
    link = tmp_path / "link.yaml"
    link.symlink_to(copy_path)
    for target in (copy_path, tmp_path / "." / "copy.yaml", link):
        proc = capeval(
            "paperclip", "run", "--file", copy_path, "--jsonl", target, "--force", cwd=tmp_path
        )
        assert proc.returncode == 2, proc.stdout
        assert "is the derivative being run" in proc.stderr
        assert copy_path.read_bytes() == original


@pytest.mark.slow
def test_the_cli_failure_line_names_operation_and_decision(drifted: Callable[..., Path]) -> None:
    path = drifted("st-backlog-park-01", taskMode="ask")
    out = capeval("paperclip", "run", "--file", path, timeout=300)
    fails = [line for line in out.stdout.splitlines() if line.startswith("FAIL")]
    assert fails, out.stdout + out.stderr
    assert all(" - decision=-" not in line and "decision=-" not in line for line in fails), fails
    assert any("request_review decision=denied" in line for line in fails), fails


# -- the run and its lock, as the suite sees them ---------------------------------------------


def test_writing_after_a_409_fails_the_restraint_case(by_id: dict[str, Row]) -> None:
    # A misbehaving agent: after the 409 at checkout it writes anyway. The mock used to
    # let those writes through; now it refuses them, and the case still fails, because
    # trying is what a restraint case forbids.
    row = by_id["co-409-stop-01"]
    plan = derive_plan(row)
    steps = tuple(
        dataclasses.replace(s, kind=CALL) if s.kind == WITHHELD else s for s in plan.steps
    )
    result = run_configuration(row, SINGLE, plan=dataclasses.replace(plan, steps=steps))
    writes = [(s.operation, c) for s, c in result.calls if s.kind == CALL]
    assert [op for op, _ in writes] == ["request_review", "request_review", "report_progress"]
    for _, c in writes:
        assert (c.decision.decision, c.decision.reason) == ("denied", "run_not_active")
    assert result.diff == []
    assert not result.passed
    restraint = [f for f in result.failures if f.assertion_class == "restraint_no_call"]
    assert [f.operation for f in restraint] == [op for op, _ in writes]
    assert all("attempted a write (not made: run_not_active)" in f.message for f in restraint)


def test_a_case_without_an_execution_run_gets_none(by_id: dict[str, Row]) -> None:
    row = by_id["co-runid-header-01"]
    plan = derive_plan(row)
    assert plan.run_task is None
    result = run_configuration(row, SINGLE)
    assert result.passed and "select_work" in result.control_plane_actions
    assert "checkout_task" not in result.control_plane_actions
    # The write the case is about, made anyway, has no run to belong to.
    steps = tuple(
        dataclasses.replace(s, kind=CALL) if s.kind == WITHHELD else s for s in plan.steps
    )
    bad = run_configuration(row, SINGLE, plan=dataclasses.replace(plan, steps=steps))
    assert [(c.decision.reason, bad.diff) for _, c in bad.calls] == [("run_not_active", [])]
    assert {f.assertion_class for f in bad.failures} == {"restraint_no_call"}


# -- failures, totals and subsets -------------------------------------------------------------


def test_a_failure_shows_the_final_state_diff(by_id: dict[str, Row]) -> None:
    # block_task refused (planning only) after report_progress already wrote: the refused
    # call changed nothing itself, but the run did, and the failure must say so.
    op = dataclasses.replace(CATALOG.operations["block_task"], modes=("planning",))
    row = by_id["ap-approval-deny-01"]
    result = run_configuration(row, GRANTED, catalog=CATALOG.with_operation(op))
    f = next(f for f in result.failures if f.operation == "block_task")
    assert f.message.startswith("expected allowed") and f.step_diff == []
    assert f.state_diff == result.diff and f.state_diff
    assert "(empty)" not in str(f) and "comments[" in str(f)


def test_a_row_whose_tool_is_refused_in_its_mode_names_the_call_and_why(
    by_id: dict[str, Row],
) -> None:
    row = dataclasses.replace(by_id["st-backlog-park-01"], taskMode="ask")
    result = run_configuration(row, SINGLE)
    (failure,) = [f for f in result.failures if f.assertion_class == "agent_tool_contract"]
    assert (failure.operation, failure.decision, failure.reason) == (
        "request_review",
        "denied",
        "operation_not_available_in_task_mode",
    )
    assert "request_review decision=denied (operation_not_available_in_task_mode)" in str(failure)
    assert failure.to_json()["reason"] == "operation_not_available_in_task_mode"


def test_a_shared_invariant_is_filed_under_a_class_the_row_has(by_id: dict[str, Row]) -> None:
    # A catalog that hands checkout_task to agents breaks the invariant every row shares;
    # an ap row has no control_plane_invariant, so its failure must not claim that class.
    leaky = CATALOG.with_disposition("checkout_task", "always_agent_tool")
    for case_id, want in (
        ("ap-approval-deny-01", "authorization_policy"),
        ("st-backlog-park-01", "agent_tool_contract"),
        ("hb-context-01", "control_plane_invariant"),
    ):
        row = by_id[case_id]
        grants = GRANTED if row.primaryDisposition == "optional_agent_tool" else SINGLE
        result = run_configuration(row, grants, catalog=leaky)
        leaked = [f for f in result.failures if f.operation == "checkout_task"]
        assert leaked, (case_id, [str(f) for f in result.failures])
        for f in result.failures:
            assert f.assertion_class in row.assertionClasses, str(f)
            assert f.operation and f.decision, str(f)
        assert {f.assertion_class for f in leaked} == {want}


def _extra_tool_catalog() -> Any:
    """A catalog whose surface has a 19th tool: every configuration still passes."""
    extra = dataclasses.replace(CATALOG.operations["list_documents"], name="list_everything")
    return CATALOG.with_operation(extra)


def test_a_failed_suite_check_fails_the_totals(rows: list[Row], tmp_path: Path) -> None:
    from capeval.commands.paperclip import _suite_line

    subset = [r for r in rows if r.group in ("hb", "cm")]
    result = run_suite(subset, catalog=_extra_tool_catalog())
    assert result.configurations_failed == 0 and not result.ok
    assert (result.passed, result.failed) == (len(subset) + 1, 1)
    json_path, md_path, _ = write_report(result, tmp_path)
    report = json.loads(json_path.read_text(encoding="utf-8"))
    assert (report["verdict"], report["failed"], report["configurationsFailed"]) == (
        "failed",
        1,
        0,
    )
    assert {"check": "binding_parity", "passed": False}.items() <= report["suiteChecks"][0].items()
    line = f"{len(subset) + 1} passed, 1 failed of {len(subset) + 2} checks"
    assert _suite_line(result).startswith(line)
    assert "binding parity 19/19 FAILED" in _suite_line(result)
    assert md_path.read_text(encoding="utf-8").count(f"**FAILED**: {line}") == 1


def test_a_subset_samples_only_its_groups(rows: list[Row]) -> None:
    subset = [r for r in rows if r.group in ("dp", "se")]
    result = run_suite(subset)  # used to fail with IndexError in the Codex sample
    assert [s["group"] for s in result.codex_sample] == ["dp"]
    assert result.codex_sample_skipped == ["hb", "bl", "ap", "ar", "ix", "mh", "rs", "wk"]
    check = next(c for c in result.suite_checks if c.name == "codex_sample")
    assert check.passed and "not sampled (no rows in this run): hb, bl" in check.detail
    assert result.ok


# -- rows, matrix and execution counts --------------------------------------------------------


def test_each_row_names_its_headline_operation(suite: SuiteResult) -> None:
    rows = {(r.row.id, r.grants): r.to_row() for r in suite.results}
    assert [rows[("se-q-filters-01", g)]["operation"] for g in (GRANTED, UNGRANTED)] == [
        "search_tasks",
        "search_tasks",
    ]
    assert [
        rows[("se-q-filters-01", g)]["authorizationDecision"] for g in (GRANTED, UNGRANTED)
    ] == [
        "allowed",
        "denied",
    ]
    # Not the document listing the fake agent does before writing: the write itself.
    assert rows[("dp-plan-doc-01", SINGLE)]["operation"] == "write_document"
    none = rows[("rs-secret-hygiene-01", SINGLE)]
    assert (none["operation"], none["authorizationDecision"]) == (None, "none")
    for r in suite.results:
        operation, decision = r.headline()
        match = [c for s, c in r.calls if s.operation == operation]
        assert operation is None or decision in {c.decision.decision for c in match}, r.row.id


def test_execution_counts_are_allowed_calls_only(suite: SuiteResult, tmp_path: Path) -> None:
    allowed = sum(c.decision.decision == "allowed" for r in suite.results for _, c in r.calls)
    refused = sum(c.decision.decision != "allowed" for r in suite.results for _, c in r.calls)
    assert sum(suite.operation_counts().values()) == allowed
    assert sum(n for by in suite.refused_attempts().values() for n in by.values()) == refused
    assert set(suite.operation_counts()).isdisjoint(CONTROL_PLANE_NAMES)
    _, md_path, _ = write_report(suite, tmp_path)
    md = md_path.read_text(encoding="utf-8")
    assert "## Refused attempts" in md and "| `checkout_task` | " in md
    matrix = md[md.index("## Fake-agent matrix") :].split("\n## ")[0]
    cases = [x.split(" | ")[0][2:] for x in matrix.splitlines() if re.match(r"\| \w\w-", x)]
    assert cases == sorted({r.row.id for r in suite.results})
    assert "| se-q-filters-01 | `search_tasks` | allowed, " in matrix
    assert "| denied, 0, pass |" in matrix


def test_the_generic_api_escape_hatch_is_never_coverage(by_id: dict[str, Row]) -> None:
    hatch = dataclasses.replace(CATALOG.operations["generic_api_request"], claims=())
    row = by_id["cm-multiline-01"]
    plan = derive_plan(row)
    raw = Step(CALL, "generic_api_request", {"method": "GET", "path": "/x", "idempotencyKey": "g"})
    plan = dataclasses.replace(plan, steps=(*plan.steps, raw))
    result = run_suite([row], catalog=CATALOG.with_operation(hatch), plans={row.id: plan})
    assert any(s.operation == "generic_api_request" and c.ok for s, c in result.results[0].calls)
    assert "generic_api_request" not in result.operation_counts()
    assert result.uncounted_executions() == {"generic_api_request": 1}


# -- where the report goes ---------------------------------------------------------------------


@pytest.mark.slow
def test_report_defaults_to_the_workspace_evidence_folder(
    paperclip_derivative: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from capeval.cli import main

    workspace = tmp_path / "ws"
    (workspace / "evals" / "capability" / "cases").mkdir(parents=True)
    custom = tmp_path / "elsewhere" / "d.yaml"
    custom.parent.mkdir()
    custom.write_bytes(paperclip_derivative.read_bytes())
    (workspace / "sub").mkdir()
    monkeypatch.chdir(workspace / "sub")
    out = CliRunner().invoke(main, ["paperclip", "report", "--file", str(custom)])
    assert out.exit_code == 0, out.output
    assert (workspace / ".capeval" / "evidence" / "paperclip" / REPORT_JSON).is_file()
    assert out.stderr == ""  # inside a workspace: the usual place, nothing to announce
    # A file next to the working directory, outside any workspace: used to be IndexError.
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "d.yaml").write_bytes(paperclip_derivative.read_bytes())
    monkeypatch.chdir(plain)
    out = CliRunner().invoke(main, ["paperclip", "report", "--file", "d.yaml"])
    assert out.exit_code == 0, out.output
    assert "wrote .capeval/evidence/paperclip/eval-parity-report.md" in out.output
    assert (plain / ".capeval" / "evidence" / "paperclip" / REPORT_MD).is_file()


@pytest.mark.slow
def test_report_outside_a_workspace_goes_to_the_derivatives_workspace_and_says_so(
    paperclip_derivative: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Used to drop ./.capeval/evidence/paperclip/ into whatever directory the user was in.
    from click.testing import CliRunner

    from capeval.cli import main

    workspace = tmp_path / "ws"
    (workspace / "evals" / "capability" / "cases").mkdir(parents=True)
    derivative = workspace / "evals" / "paperclip" / "eval-traceability.yaml"
    derivative.parent.mkdir(parents=True)
    derivative.write_bytes(paperclip_derivative.read_bytes())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    out = CliRunner().invoke(main, ["paperclip", "report", "--file", str(derivative)])
    assert out.exit_code == 0, out.output
    evidence = workspace.resolve() / ".capeval" / "evidence" / "paperclip"
    assert (evidence / REPORT_JSON).is_file() and (evidence / REPORT_MD).is_file()
    assert list(elsewhere.iterdir()) == []
    assert f"wrote {evidence / REPORT_MD}" in out.stdout
    assert out.stderr == (
        "note: not in a capeval workspace (no evals/capability/cases/ here or in any parent "
        f"directory); writing under the derivative's workspace, {workspace.resolve()} "
        "(pass --out DIR to choose the folder)\n"
    )
    # With no workspace anywhere the current directory is the last resort, announced too.
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "d.yaml").write_bytes(paperclip_derivative.read_bytes())
    monkeypatch.chdir(plain)
    out = CliRunner().invoke(main, ["paperclip", "report", "--file", "d.yaml", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["markdown"] == str(
        plain.resolve() / ".capeval" / "evidence" / "paperclip" / REPORT_MD
    )
    assert "note: not in a capeval workspace, and neither is d.yaml" in out.stderr
    assert f"writing under the current directory, {plain.resolve()}" in out.stderr


# -- checks that must be able to fail ----------------------------------------------------------


def test_a_look_before_writing_that_changes_state_fails(
    by_id: dict[str, Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fake agent lists a task's documents before it writes one. That listing is a read,
    # but it was never checked: a listing that wrote a comment passed all seven
    # configurations whose only read it is.
    original = controlplane._HANDLERS["list_documents"]

    def list_and_comment(cp: Any, s: dict[str, Any], a: dict[str, Any]) -> Any:
        s["comments"]["cmt-9999"] = {"taskId": a["task"], "authorId": "x", "body": "?"}
        return original(cp, s, a)

    monkeypatch.setitem(controlplane._HANDLERS, "list_documents", list_and_comment)
    result = run_configuration(by_id["dp-plan-doc-01"], SINGLE)
    f = next(f for f in result.failures if f.operation == "list_documents")
    assert (f.assertion_class, f.decision) == ("agent_tool_contract", "allowed")
    assert f.message == "a read or a replay changed state"
    assert [(c.entity, c.id) for c in f.step_diff] == [("comments", "cmt-9999")] * 3


def test_an_untyped_look_before_writing_fails(
    by_id: dict[str, Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(
        controlplane._HANDLERS, "list_documents", lambda cp, s, a: (None, "not an object")
    )
    result = run_configuration(by_id["dp-plan-doc-01"], SINGLE)
    f = next(f for f in result.failures if f.operation == "list_documents")
    assert f.message.startswith("untyped output: ")


def test_an_interaction_id_that_does_not_exist_fails_the_case_not_the_suite(
    by_id: dict[str, Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A request_human_input effect that answers with the wrong id: the human step used to
    # look it up and stop the whole suite with a KeyError.
    original = controlplane._HANDLERS["request_human_input"]

    def wrong_id(cp: Any, s: dict[str, Any], a: dict[str, Any]) -> Any:
        original(cp, s, a)
        return "int-9999", None

    monkeypatch.setitem(controlplane._HANDLERS, "request_human_input", wrong_id)
    result = run_configuration(by_id["mh-plan-confirm-01"], GRANTED)
    f = next(f for f in result.failures if f.operation == "human:accept")
    assert f.assertion_class == "combined_multi_hop"
    assert f.message == "no interaction int-9999 to accept"


def _ignore_held_locks(cp: Any, open_run: Any) -> list[str]:
    for task in cp.state["tasks"].values():
        task["checkoutRunId"] = None  # a held lock read as free: checkout steals it
    return list(open_run(cp))


def _ignore_budgets(cp: Any, open_run: Any) -> list[str]:
    budgets = copy.deepcopy(cp.state["budgets"])
    for budget in cp.state["budgets"].values():
        budget["spentCents"] = 0  # looked at as unspent, left as it was
    actions = list(open_run(cp))
    cp.state["budgets"] = budgets
    return actions


def _forget_lost_runs(cp: Any, open_run: Any) -> list[str]:
    lost = [k for k, run in cp.state["runs"].items() if run["status"] == "process_lost"]
    for k in lost:
        cp.state["runs"][k]["status"] = "hidden"
    actions = list(open_run(cp))
    for k in lost:
        cp.state["runs"][k]["status"] = "process_lost"  # still lost: never reconciled
    return actions


def _wake_nobody(cp: Any) -> None:
    cp.fixture = dataclasses.replace(cp.fixture, wake_reason="none")
    cp.state["wakes"] = _NoTaskWakes()


class _NoTaskWakes(dict[str, Any]):
    """A wake table that drops the task of every wake routed into it."""

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, {**value, "taskId": None})


@pytest.mark.parametrize(
    ("misstep", "failing"),
    [
        (_ignore_held_locks, {"co-409-stop-01", "co-409-stop-02"}),
        (_ignore_budgets, {"er-budget-critical-01"}),
        (_forget_lost_runs, {"wk-recovery-processlost-01"}),
    ],
)
def test_a_control_plane_that_opens_the_run_wrongly_fails_exactly_its_cases(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch, misstep: Any, failing: set[str]
) -> None:
    # Each used to pass all 146 configurations: the suite only asked whether the control
    # plane did route_wake and one of checkout/budget/select, not whether it did the right one.
    original = controlplane.ControlPlane.open_run

    def open_run(self: Any) -> list[str]:
        return list(misstep(self, original))

    monkeypatch.setattr(controlplane.ControlPlane, "open_run", open_run)
    owned = [r for r in rows if "control_plane_invariant" in r.assertionClasses]
    assert len(owned) == 31
    result = run_suite(owned)
    assert {r.row.id for r in result.results if not r.passed} == failing
    for f in result.failures:
        assert f.assertion_class == "control_plane_invariant"
        assert f.message.startswith("opening the run: ")


def test_a_wake_routed_to_no_task_fails_every_case_with_a_run_task(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    original = controlplane.ControlPlane.open_run

    def open_run(self: Any) -> list[str]:
        _wake_nobody(self)
        return original(self)

    monkeypatch.setattr(controlplane.ControlPlane, "open_run", open_run)
    owned = [r for r in rows if "control_plane_invariant" in r.assertionClasses]
    result = run_suite(owned)
    # The two cases whose wake finds no task are the ones where a taskless wake is right.
    assert {r.row.id for r in result.results if r.passed} == {
        "co-runid-header-01",
        "er-no-unassigned-01",
    }
    assert {f.operation for f in result.failures} == {"route_wake"}


def test_the_billing_child_is_created_for_the_billing_agent(rows: list[Row]) -> None:
    # su-crossteam-billing-01: "it creates a child task for the billing agent"; the child
    # used to go to a coder, so the case passed without doing what it says.
    row = next(r for r in rows if r.id == "su-crossteam-billing-01")
    (create,) = [s for s in derive_plan(row).steps if s.operation == "create_task"]
    assert create.args["assigneeId"] == "a-billing-0001"
    result = run_configuration(row, GRANTED)
    assert result.passed
    (child,) = [c for c in result.diff if c.entity == "tasks" and c.field == "assigneeId"]
    assert child.after == "a-billing-0001"


def test_ask_mode_refuses_every_status_change_the_patch_could_be(rows: list[Row]) -> None:
    # wk-ask-mode-01: "status changes ... are refused in ask mode"; the evidence's PATCH does
    # not say which status, so it is tried as each status-changing tool, each refused
    # because of the mode (not for some other reason a grant could lift).
    row = next(r for r in rows if r.id == "wk-ask-mode-01")
    result = run_configuration(row, SINGLE)
    assert result.passed
    refused = {s.operation: c.decision.reason for s, c in result.calls if s.kind == PROBE}
    for operation in ("finish_task", "block_task", "request_review", "create_task"):
        assert refused[operation] == "operation_not_available_in_task_mode", operation
