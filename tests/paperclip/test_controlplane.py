"""The mock control plane: effects, idempotency, audit, revisions, fixtures, field-level diffs."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from capeval.core.paperclip import authorization as auth
from capeval.core.paperclip.authorization import AuthContext
from capeval.core.paperclip.catalog import CATALOG
from capeval.paperclip.controlplane import CONTROL_PLANE_ACTOR, INVALID_ARGUMENTS, ControlPlane
from capeval.paperclip.diff import Change, state_diff
from capeval.paperclip.fixtures import FIXTURE_NAMES, UnknownFixtureError, build_fixture

MANAGER = ("delegation:tasks:create", "governance:approvals:request")
ALL_CLAIMS = frozenset(c for op in CATALOG.operations.values() for c in op.claims)


def plane(
    fixture: str = "baseline",
    task: str | None = "i-0102",
    claims: tuple[str, ...] = (),
    mode: str = "standard",
) -> ControlPlane:
    cp = ControlPlane(
        build_fixture(fixture, run_task=task),
        AuthContext("engineer", frozenset(claims), mode, task),
    )
    cp.open_run()
    return cp


def call(cp: ControlPlane, op: str, idem: str | None = None, **args: Any) -> Any:
    if idem is not None:
        args["idempotencyKey"] = idem
    return cp.call(op, args)


def test_every_corpus_fixture_used_twice_is_seeded() -> None:
    for name in (
        "baseline",
        "deliverable-file",
        "blocker-graph",
        "checkout-conflict",
        "exec-participant",
        "wake-comment",
        "continuation-wake",
    ):
        assert name in FIXTURE_NAMES
    assert build_fixture("blocker-graph").state["tasks"]["i-0144"]["status"] == "cancelled"
    assert build_fixture("blocker-graph").seed == build_fixture("blocker-graph").seed
    with pytest.raises(UnknownFixtureError, match="unknown Paperclip fixture 'nope'"):
        build_fixture("nope")


def test_run_opens_with_the_control_plane_checking_out() -> None:
    cp = plane()
    task = cp.state["tasks"]["i-0102"]
    assert task["checkoutRunId"] == cp.run_id and task["status"] == "in_progress"
    ops = [(r["actorId"], r["operation"]) for r in cp.state["auditRecords"].values()]
    assert (CONTROL_PLANE_ACTOR, "checkout_task") in ops


def test_checkout_conflict_leaves_the_other_runs_lock() -> None:
    cp = ControlPlane(
        build_fixture("checkout-conflict"),
        AuthContext("engineer", frozenset(), "standard", "i-0105"),
    )
    cp.open_run()
    assert cp.state["tasks"]["i-0105"]["checkoutRunId"] == "run-0099"
    assert cp.state["runs"][cp.run_id]["status"] == "conflict"


def test_budget_is_enforced_before_any_checkout() -> None:
    cp = ControlPlane(
        build_fixture("budget-critical"), AuthContext("engineer", frozenset(), "standard", "i-0102")
    )
    assert "enforce_budget" in cp.open_run()
    assert cp.state["tasks"]["i-0102"]["checkoutRunId"] is None


def test_write_bumps_revision_and_leaves_audit_and_idempotency_records() -> None:
    cp = plane()
    before = copy.deepcopy(cp.state)
    res = call(cp, "finish_task", "k1", task="i-0102", summary="shipped")
    assert res.ok and res.output["revision"] == before["revision"] + 1
    diff = state_diff(before, cp.state)
    assert Change("tasks", "i-0102", "status", "in_progress", "done") in diff
    assert any(c.entity == "comments" and c.field == "body" and c.after == "shipped" for c in diff)
    assert any(
        c.entity == "auditRecords" and c.field == "operation" and c.after == "finish_task"
        for c in diff
    )
    assert cp.state["idempotency"]["k1"]["operation"] == "finish_task"


def test_retry_with_the_same_key_replays_without_a_second_effect() -> None:
    cp = plane()
    first = call(cp, "report_progress", "k", task="i-0102", body="one")
    snap = copy.deepcopy(cp.state)
    again = call(cp, "report_progress", "k", task="i-0102", body="one")
    assert again.replayed and again.output == first.output
    assert state_diff(snap, cp.state) == []


def test_write_without_idempotency_key_is_rejected() -> None:
    cp = plane()
    snap = copy.deepcopy(cp.state)
    res = call(cp, "report_progress", task="i-0102", body="x")
    assert res.error == "idempotency_key_required" and state_diff(snap, cp.state) == []


def test_document_revisions_need_the_latest_base() -> None:
    cp = plane()
    new = call(
        cp, "write_document", "d1", task="i-0102", key="plan", content="v1", baseRevisionId=None
    )
    assert new.ok
    snap = copy.deepcopy(cp.state)
    stale = call(
        cp, "write_document", "d2", task="i-0102", key="plan", content="v2", baseRevisionId=None
    )
    assert stale.error == "document_revision_conflict" and state_diff(snap, cp.state) == []
    ok = call(
        cp,
        "write_document",
        "d3",
        task="i-0102",
        key="plan",
        content="v2",
        baseRevisionId=new.entity_id,
    )
    doc = cp.state["documents"]["i-0102/plan"]
    assert doc["latestRevisionId"] == ok.entity_id and len(doc["revisionIds"]) == 2


def test_block_replaces_blockers_only_when_given() -> None:
    cp = plane("blocker-graph", "i-0143")
    call(cp, "block_task", "b1", task="i-0143", reason="still waiting")
    assert cp.state["tasks"]["i-0143"]["blockerIds"] == ["i-0141", "i-0142"]
    call(cp, "block_task", "b2", task="i-0143", reason="i-0141 is done", blockerIds=["i-0142"])
    assert cp.state["tasks"]["i-0143"]["blockerIds"] == ["i-0142"]


def test_interaction_is_pending_and_moves_the_task_to_review() -> None:
    cp = plane()
    res = call(
        cp,
        "request_human_input",
        "i1",
        task="i-0102",
        kind="questions",
        prompt="?",
        continuation="wake_assignee",
    )
    assert cp.state["interactions"][res.entity_id]["status"] == "pending"
    assert cp.state["tasks"]["i-0102"]["status"] == "in_review"
    cp.human_event("accept", res.entity_id)
    assert cp.state["tasks"]["i-0102"]["status"] == "in_progress"


def test_deliverable_adds_artifact_and_work_product() -> None:
    cp = plane("deliverable-file", "i-0101")
    res = call(
        cp,
        "register_deliverable",
        "a1",
        task="i-0101",
        name="w.csv",
        kind="file",
        uri="workspace://w.csv",
    )
    assert cp.state["artifacts"][res.entity_id]["taskId"] == "i-0101"
    assert [w["artifactId"] for w in cp.state["workProducts"].values()] == [res.entity_id]


def test_child_task_status_and_company_membership() -> None:
    cp = plane(claims=MANAGER)
    todo = call(
        cp,
        "create_task",
        "c1",
        title="a",
        parentId="i-0102",
        assigneeId="a-coder-0001",
        blockerIds=None,
    )
    blocked = call(
        cp,
        "create_task",
        "c2",
        title="b",
        parentId="i-0102",
        assigneeId=None,
        blockerIds=[todo.entity_id],
    )
    assert cp.state["tasks"][todo.entity_id]["status"] == "todo"
    assert cp.state["tasks"][blocked.entity_id]["status"] == "blocked"
    outsider = call(
        cp, "create_task", "c3", title="c", parentId=None, assigneeId="a-stranger", blockerIds=None
    )
    assert outsider.error == "assignee_not_in_company"


def test_approval_is_pending_and_linked() -> None:
    cp = plane(claims=MANAGER)
    res = call(cp, "request_approval", "p1", task="i-0102", approvalType="hire_agent", payload="x")
    approval = cp.state["approvals"][res.entity_id]
    assert (approval["status"], approval["taskIds"]) == ("pending", ["i-0102"])
    assert cp.state["tasks"]["i-0102"]["status"] == "in_review"


def test_refused_call_changes_nothing() -> None:
    cp = plane()
    snap = copy.deepcopy(cp.state)
    for op, args in (
        ("checkout_task", {"task": "i-0102"}),
        ("create_task", {"title": "x"}),
        ("delete_task", {"task": "i-0102"}),
    ):
        res = cp.call(op, args)
        assert not res.ok and not res.decision.permitted
    assert state_diff(snap, cp.state) == []


def test_reads_change_nothing() -> None:
    cp = plane()
    snap = copy.deepcopy(cp.state)
    assert (
        cp.call("get_task_context", {"task": "i-0103"}).output["data"]["blockers"][0]["assigneeId"]
        == "a-design-0001"
    )
    assert cp.call("get_task_context", {"task": "i-0777"}).error == "task_not_found"
    assert state_diff(snap, cp.state) == []


def test_diff_names_entity_id_field_before_and_after() -> None:
    before = {"tasks": {"t": {"status": "todo"}}, "revision": 1}
    after = {"tasks": {"t": {"status": "done"}, "u": {"status": "todo"}}, "revision": 2}
    assert state_diff(before, after) == [
        Change("state", "-", "revision", 1, 2),
        Change("tasks", "t", "status", "todo", "done"),
        Change("tasks", "u", "status", None, "todo"),
    ]


# -- the run and its execution lock ---------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "task", "status", "op", "args"),
    [
        # A 409 at checkout: the lock is run-0099's, yet finish_task used to go through.
        ("checkout-conflict", "i-0105", "conflict", "finish_task", {"summary": "done anyway"}),
        # The budget stopped the run (and paused the actor): no progress comment either.
        ("budget-critical", "i-0102", "budget_stopped", "report_progress", {"body": "still here"}),
        # An idle wake checked nothing out: a write has no run to belong to.
        ("empty-inbox", None, "idle", "finish_task", {"task": "i-0102", "summary": "grabbed"}),
    ],
)
def test_writes_are_refused_when_the_run_is_not_running(
    fixture: str, task: str | None, status: str, op: str, args: dict[str, Any]
) -> None:
    cp = plane(fixture, task)
    assert cp.state["runs"][cp.run_id]["status"] == status
    snap = copy.deepcopy(cp.state)
    res = cp.call(op, {"task": task, **args, "idempotencyKey": "k"})
    assert (res.decision.decision, res.decision.reason) == (auth.DENIED, auth.RUN_NOT_ACTIVE)
    assert not res.ok and res.error == auth.RUN_NOT_ACTIVE and status in (res.detail or "")
    assert state_diff(snap, cp.state) == []
    # Looking is still allowed: it is how the agent learns it should stop.
    assert cp.call("get_task_context", {"task": task or "i-0102"}).ok


def test_a_task_write_needs_this_runs_execution_lock() -> None:
    # The run holds i-0101; i-0105 is locked by another run, i-0103 by none.
    grants = ("governance:approvals:request", "delegation:tasks:reassign")
    cp = plane("checkout-conflict", "i-0101", claims=grants)
    snap = copy.deepcopy(cp.state)
    for task in ("i-0105", "i-0103"):
        res = call(cp, "request_approval", f"a-{task}", task=task, approvalType="x", payload="y")
        assert res.decision.reason == auth.EXECUTION_LOCK_NOT_HELD, task
    held = call(cp, "reassign_task", "r1", task="i-0105", assigneeId="a-coder-0001")
    assert held.decision.reason == auth.EXECUTION_LOCK_NOT_HELD and "run-0099" in str(held.detail)
    assert state_diff(snap, cp.state) == []
    assert call(cp, "request_approval", "a-own", task="i-0101", approvalType="x", payload="y").ok
    # A delegation write on an unlocked task of someone else is what reassigning is for.
    assert call(cp, "reassign_task", "r2", task="i-0103", assigneeId="a-coder-0001").ok


# -- arguments are checked against the published input schema --------------------------------


@pytest.mark.parametrize(
    ("op", "args", "detail"),
    [
        ("finish_task", {"task": "i-0102", "idempotencyKey": "k"}, "'summary' is a required"),
        ("read_document", {"task": "i-0102"}, "'key' is a required property"),
        ("report_progress", {"task": "i-0102", "body": 7, "idempotencyKey": "k"}, "body: 7 is"),
        (
            "report_progress",
            {"task": "i-0102", "body": "x", "idempotencyKey": "k", "mood": "!"},
            "('mood' was unexpected)",
        ),
        (
            "request_human_input",
            {"task": "i-0102", "kind": "questions", "prompt": "?", "continuation": "whenever"},
            "continuation: 'whenever' is not one of",
        ),
    ],
)
def test_malformed_arguments_fail_without_touching_state(
    op: str, args: dict[str, Any], detail: str
) -> None:
    cp = plane()
    if op == "request_human_input":
        args["idempotencyKey"] = "k"
    snap = copy.deepcopy(cp.state)
    res = cp.call(op, args)  # finish_task and read_document used to raise KeyError here
    assert (res.ok, res.error, res.decision.decision) == (False, "invalid_arguments", "allowed")
    assert detail in str(res.detail)
    assert res.output["error"] == "invalid_arguments"
    assert state_diff(snap, cp.state) == []


def test_null_optional_arguments_mean_not_given() -> None:
    # Codex's strict parameters make every optional property nullable.
    cp = plane()
    res = call(
        cp,
        "request_human_input",
        "k",
        task="i-0102",
        kind="questions",
        prompt="?",
        continuation="none",
        items=None,
    )
    assert res.ok and cp.state["interactions"][res.entity_id]["items"] == []


def test_unknown_continuation_is_refused_by_the_effect_too() -> None:
    # A catalog whose schema forgot the enum still cannot store an unknown continuation.
    op = CATALOG.operations["request_human_input"]
    loose = dataclasses.replace(
        op, properties={**op.properties, "continuation": {"type": "string"}}
    )
    cp = ControlPlane(
        build_fixture("baseline", run_task="i-0102"),
        AuthContext("engineer", frozenset(), "standard", "i-0102"),
        catalog=CATALOG.with_operation(loose),
    )
    cp.open_run()
    snap = copy.deepcopy(cp.state)
    res = call(
        cp,
        "request_human_input",
        "k",
        task="i-0102",
        kind="questions",
        prompt="?",
        continuation="whenever",
    )
    assert res.error == "invalid_continuation" and state_diff(snap, cp.state) == []


def test_child_task_blockers_must_exist() -> None:
    cp = plane(claims=MANAGER)
    snap = copy.deepcopy(cp.state)
    res = call(
        cp,
        "create_task",
        "c1",
        title="x",
        parentId="i-0102",
        assigneeId="a-coder-0001",
        blockerIds=["i-0103", "i-0999"],
    )
    assert (res.ok, res.error) == (False, "blocker_not_found")
    assert state_diff(snap, cp.state) == []


def test_syncing_skills_without_fields_fails_typed_not_with_an_exception() -> None:
    # `fields` is optional in the published schema, so a real Codex may leave it out;
    # the append effect used to raise StopIteration out of the control plane (an MCP
    # internal error in the live matrix) instead of answering with a failed call.
    cp = plane(claims=("skills:write",))
    before = copy.deepcopy(cp.state)
    res = call(cp, "sync_agent_skills", "k-sync", target="a-test-0001")
    assert (res.ok, res.error) == (False, "fields_required")
    assert res.output == {"ok": False, "revision": 2, "entityId": None, "error": "fields_required"}
    assert state_diff(before, cp.state) == []
    ok = call(cp, "sync_agent_skills", "k-sync-2", target="a-test-0001", fields={"skills": "s"})
    assert ok.ok and cp.state["actors"]["a-test-0001"]["skills"] == ["s"]


def test_a_new_entity_never_takes_the_id_of_a_seeded_one() -> None:
    # continuation-wake seeds the accepted int-0001 and mcp-approval-gate the expired
    # act-0001; the id counter starts at the same ids, and a write used to overwrite them.
    cp = plane("continuation-wake", "i-0104", mode="planning")
    seeded = copy.deepcopy(cp.state["interactions"]["int-0001"])
    res = call(
        cp,
        "request_human_input",
        "i1",
        task="i-0104",
        kind="confirmation",
        prompt="?",
        continuation="none",
    )
    assert res.ok and res.entity_id != "int-0001"
    assert cp.state["interactions"]["int-0001"] == seeded
    cp = plane("mcp-approval-gate", "i-0101", claims=("governance:gateway:call",))
    res = call(cp, "call_gateway_tool", "g1", task="i-0101", tool="deploy")
    assert res.ok and res.entity_id != "act-0001"
    assert cp.state["actionRequests"]["act-0001"]["status"] == "expired"
    assert cp.state["actionRequests"][res.entity_id]["status"] == "pending"


@pytest.mark.parametrize(("role", "allowed"), [("engineer", False), ("security", True)])
def test_a_secret_value_is_read_only_by_the_security_role_even_with_the_claim(
    role: str, allowed: bool
) -> None:
    # No corpus case reaches this rule: without this test, dropping the role
    # limit left every suite count unchanged.
    cp = ControlPlane(
        build_fixture("baseline", run_task="i-0102"),
        AuthContext(role, frozenset({"secrets:values:read"}), "standard", "i-0102"),
    )
    cp.open_run()
    before = copy.deepcopy(cp.state)
    result = cp.call("read_secret_value", {})
    assert result.ok is allowed
    if not allowed:
        assert result.error == "actor_role_not_authorized"
    assert state_diff(before, cp.state) == []  # a read changes nothing either way


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


def test_a_write_that_fails_half_way_leaves_no_trace() -> None:
    # block_task sets the status before it finds the unknown blocker: applied in place,
    # the failed write would leave the task blocked with no comment and no revision.
    cp = plane()
    before = copy.deepcopy(cp.state)
    res = cp.call(
        "block_task",
        {"task": "i-0102", "reason": "waiting", "blockerIds": ["i-0999"], "idempotencyKey": "k1"},
    )
    assert (res.ok, res.error) == (False, "blocker_not_found")
    assert state_diff(before, cp.state) == []


def test_a_new_document_needs_a_null_base_revision() -> None:
    cp = plane()
    before = copy.deepcopy(cp.state)
    res = cp.call(
        "write_document",
        {
            "task": "i-0102",
            "key": "notes",
            "content": "v1",
            "baseRevisionId": "rev-0001",
            "idempotencyKey": "k1",
        },
    )
    assert (res.ok, res.error) == (False, "document_revision_conflict")
    assert state_diff(before, cp.state) == []
