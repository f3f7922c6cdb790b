"""The mock control plane: effects, idempotency, audit, revisions, fixtures, field-level diffs."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from capeval.paperclip.authorization import AuthContext
from capeval.paperclip.controlplane import CONTROL_PLANE_ACTOR, ControlPlane
from capeval.paperclip.diff import Change, state_diff
from capeval.paperclip.fixtures import FIXTURE_NAMES, UnknownFixtureError, build_fixture

MANAGER = ("delegation:tasks:create", "governance:approvals:request")


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
