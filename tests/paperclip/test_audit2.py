"""Second Paperclip audit: failures that named no operation or decision, a validation
error that blamed the wrong field, approvals decided from any string, a malformed task
id answered as out of scope, and duplicate YAML keys the loader let through."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from capeval.paperclip.authorization import AuthContext
from capeval.paperclip.catalog import CATALOG
from capeval.paperclip.controlplane import INVALID_ARGUMENTS, ControlPlane
from capeval.paperclip.derivative import Row
from capeval.paperclip.fixtures import build_fixture
from capeval.paperclip.suite import GRANTED, SINGLE, run_configuration
from tests.clirun import capeval

ALL_CLAIMS = frozenset(c for op in CATALOG.operations.values() for c in op.claims)


@pytest.fixture(scope="module")
def doc(paperclip_derivative: Path) -> dict[str, Any]:
    return yaml.safe_load(paperclip_derivative.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def rows(paperclip_rows: list[Row]) -> dict[str, Row]:
    return {r.id: r for r in paperclip_rows}


def _drifted(tmp_path: Path, doc: dict[str, Any], case_id: str, **fields: Any) -> Path:
    obj = copy.deepcopy(doc)
    next(r for r in obj["rows"] if r["id"] == case_id).update(fields)
    path = tmp_path / "drift.yaml"
    path.write_text(yaml.safe_dump(obj, sort_keys=False), encoding="utf-8")
    return path


# -- 1. every failure names its operation and decision, under a class the row has ------------


def test_a_row_whose_tool_is_refused_in_its_mode_names_the_call_and_why(
    rows: dict[str, Row],
) -> None:
    row = dataclasses.replace(rows["st-backlog-park-01"], taskMode="ask")
    result = run_configuration(row, SINGLE)
    (failure,) = [f for f in result.failures if f.assertion_class == "agent_tool_contract"]
    assert (failure.operation, failure.decision, failure.reason) == (
        "request_review",
        "denied",
        "operation_not_available_in_task_mode",
    )
    assert "request_review decision=denied (operation_not_available_in_task_mode)" in str(failure)
    assert failure.to_json()["reason"] == "operation_not_available_in_task_mode"


def test_the_cli_failure_line_names_operation_and_decision(
    tmp_path: Path, doc: dict[str, Any]
) -> None:
    path = _drifted(tmp_path, doc, "st-backlog-park-01", taskMode="ask")
    out = capeval("paperclip", "run", "--file", path, timeout=300)
    fails = [line for line in out.stdout.splitlines() if line.startswith("FAIL")]
    assert fails, out.stdout + out.stderr
    assert all(" - decision=-" not in line and "decision=-" not in line for line in fails), fails
    assert any("request_review decision=denied" in line for line in fails), fails


def test_a_shared_invariant_is_filed_under_a_class_the_row_has(rows: dict[str, Row]) -> None:
    # A catalog that hands checkout_task to agents breaks the invariant every row shares;
    # an ap row has no control_plane_invariant, so its failure must not claim that class.
    leaky = CATALOG.with_disposition("checkout_task", "always_agent_tool")
    for case_id, want in (
        ("ap-approval-deny-01", "authorization_policy"),
        ("st-backlog-park-01", "agent_tool_contract"),
        ("hb-context-01", "control_plane_invariant"),
    ):
        row = rows[case_id]
        grants = GRANTED if row.primaryDisposition == "optional_agent_tool" else SINGLE
        result = run_configuration(row, grants, catalog=leaky)
        leaked = [f for f in result.failures if f.operation == "checkout_task"]
        assert leaked, (case_id, [str(f) for f in result.failures])
        for f in result.failures:
            assert f.assertion_class in row.assertionClasses, str(f)
            assert f.operation and f.decision, str(f)
        assert {f.assertion_class for f in leaked} == {want}


# -- 2. a drifted actor is named as the actor, with the fix ----------------------------------


def test_an_actor_that_already_holds_the_grant_is_named_as_the_field_at_fault(
    tmp_path: Path, doc: dict[str, Any]
) -> None:
    path = _drifted(tmp_path, doc, "su-no-poll-01", actor="manager")
    out = capeval("paperclip", "validate", "--file", path)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "(su-no-poll-01).actor:" in text, text
    assert "delegation:tasks:create" in text and "write actor: engineer" in text, text
    assert "expectedSemantics" not in text.replace("the evidence is corpus case", ""), text
    assert "add the REST call" not in text, text


def test_a_task_mode_that_refuses_the_granted_call_is_named_as_the_field_at_fault(
    tmp_path: Path, doc: dict[str, Any]
) -> None:
    path = _drifted(tmp_path, doc, "su-no-poll-01", taskMode="ask")
    text = (lambda r: r.stdout + r.stderr)(capeval("paperclip", "validate", "--file", path))
    assert "(su-no-poll-01).taskMode:" in text and "write taskMode: standard" in text, text


# -- 3. decide_approval: only approve/reject, only a pending approval -------------------------


def _board(fixture: str) -> ControlPlane:
    fx = build_fixture(fixture)
    cp = ControlPlane(fx, AuthContext("board", ALL_CLAIMS, "standard", fx.run_task))
    cp.open_run()
    return cp


def test_a_decision_that_is_not_approve_or_reject_is_invalid_arguments() -> None:
    cp = _board("approval-approved")
    before = copy.deepcopy(cp.state)
    res = cp.call(
        "decide_approval", {"approvalId": "apr-0001", "decision": "approved", "idempotencyKey": "k"}
    )
    assert (res.ok, res.error) == (False, INVALID_ARGUMENTS)
    assert cp.state == before
    schema = CATALOG.operations["decide_approval"].input_schema()
    assert schema["properties"]["decision"]["enum"] == ["approve", "reject"]


def test_an_approval_that_is_not_pending_cannot_be_decided_again() -> None:
    cp = _board("approval-approved")
    before = copy.deepcopy(cp.state)
    res = cp.call(
        "decide_approval", {"approvalId": "apr-0001", "decision": "reject", "idempotencyKey": "k"}
    )
    assert (res.ok, res.error) == (False, "approval_not_pending")
    assert cp.state == before and cp.state["approvals"]["apr-0001"]["status"] == "approved"


def test_a_pending_approval_is_approved_or_rejected_as_asked() -> None:
    for verb, status in (("approve", "approved"), ("reject", "rejected")):
        cp = _board("baseline")
        asked = cp.call(
            "request_approval",
            {"task": cp.fixture.run_task, "approvalType": "hire_agent", "payload": "p"}
            | {"idempotencyKey": "a"},
        )
        assert asked.ok, asked
        res = cp.call(
            "decide_approval",
            {"approvalId": asked.entity_id, "decision": verb, "idempotencyKey": "d"},
        )
        assert res.ok and cp.state["approvals"][asked.entity_id]["status"] == status


# -- 4. malformed task ids and duplicate keys -------------------------------------------------


def test_a_malformed_task_argument_is_invalid_arguments_not_out_of_scope() -> None:
    fx = build_fixture("baseline")
    cp = ControlPlane(fx, AuthContext("engineer", frozenset(), "standard", fx.run_task))
    cp.open_run()
    before = copy.deepcopy(cp.state)
    res = cp.call("finish_task", {"task": [fx.run_task], "summary": "s", "idempotencyKey": "k"})
    assert (res.ok, res.error) == (False, INVALID_ARGUMENTS)
    assert cp.state == before
    other = cp.call("finish_task", {"task": "i-0103", "summary": "s", "idempotencyKey": "k2"})
    assert other.error == "task_out_of_scope"  # a real other task is still out of scope


@pytest.mark.parametrize(
    ("key", "where"),
    [("title", "row"), ("schemaVersion", "top")],
)
def test_a_duplicate_key_is_refused_naming_line_and_key(
    tmp_path: Path, paperclip_derivative: Path, key: str, where: str
) -> None:
    lines = paperclip_derivative.read_text(encoding="utf-8").splitlines(keepends=True)
    if where == "top":
        at = next(i for i, line in enumerate(lines) if line.startswith("schemaVersion:"))
        extra = "schemaVersion: 1\n"
    else:
        at = next(i for i, line in enumerate(lines) if line.startswith("  title:"))
        extra = "  title: A second title that used to win silently\n"
    lines.insert(at + 1, extra)
    path = tmp_path / "dup.yaml"
    path.write_text("".join(lines), encoding="utf-8")
    out = capeval("paperclip", "validate", "--file", path)
    text = out.stdout + out.stderr
    assert out.returncode != 0, text
    assert f"line {at + 2}: duplicate key '{key}' (already at line {at + 1}" in text, text
    assert str(path) in text and "found 1" not in text, text


def test_every_failure_of_a_control_plane_that_ignores_grants_names_call_and_class(
    rows: dict[str, Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ungranted, su rows must refuse create_task; a control plane that allows it anyway
    # fails them, and each failure must say which call did it and how it was decided.
    from capeval.paperclip import authorization, controlplane
    from capeval.paperclip.suite import UNGRANTED

    real = authorization.decide

    def lax(operation: str, ctx: AuthContext, **kw: Any) -> authorization.Decision:
        return real(operation, dataclasses.replace(ctx, claims=ALL_CLAIMS), **kw)

    monkeypatch.setattr(controlplane, "decide", lax)
    changed = []
    for row in (r for r in rows.values() if r.group == "su"):
        for f in run_configuration(row, UNGRANTED).failures:
            assert f.assertion_class in row.assertionClasses, str(f)
            assert f.operation and f.decision not in ("", "-"), str(f)
            if f.message == "ungranted configuration changed state":
                changed.append(f)
    assert changed and all(
        (f.operation, f.decision, f.reason) == ("create_task", "allowed", "required_claims_granted")
        for f in changed
    ), [str(f) for f in changed]


def test_the_live_progress_line_names_the_decision_and_its_reason() -> None:
    from capeval.commands.paperclip import failure_line

    line = failure_line(
        {
            "assertionClass": "agent_tool_contract",
            "operation": "request_review",
            "decision": "denied",
            "reason": "operation_not_available_in_task_mode",
            "message": "no agent tool call was allowed",
        }
    )
    assert line == (
        "agent_tool_contract: request_review decision=denied "
        "(operation_not_available_in_task_mode): no agent tool call was allowed"
    )
    assert failure_line({"assertionClass": "live_turn", "operation": "", "message": "m"}) == (
        "live_turn: - decision=-: m"
    )
