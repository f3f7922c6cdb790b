"""The suite against control planes broken in one rule: it must fail the cases about that rule.

Each test breaks one rule of the mock the way a faulty control plane would and
runs the whole suite: the cases whose scenario is that rule must fail, and no
other, and every failure must name the call and how it was decided. A rule no
case catches would let a broken control plane pass all 148 checks.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from capeval.core.paperclip import authorization
from capeval.core.paperclip.authorization import AuthContext
from capeval.core.paperclip.catalog import CATALOG, Catalog
from capeval.core.paperclip.policy import TASK_MODES
from capeval.paperclip import controlplane
from capeval.paperclip.derivative import Row
from capeval.paperclip.fakeagent import PROBE, REFUSALS, auth_context, check_plans, derive_plan
from capeval.paperclip.suite import SuiteResult, run_configuration, run_suite

ALL_CLAIMS = frozenset(c for op in CATALOG.operations.values() for c in op.claims)


@pytest.fixture(scope="module")
def rows(paperclip_rows: list[Row]) -> list[Row]:
    return paperclip_rows


def failing(result: SuiteResult) -> dict[str, set[str]]:
    """Failing case ids with the assertion classes they failed."""
    out: dict[str, set[str]] = {}
    for r in result.results:
        for f in r.failures:
            out.setdefault(r.row.id, set()).add(f.assertion_class)
    return out


def test_a_control_plane_without_idempotent_replay_fails_the_retry_cases(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A retry with the same key creates a second interaction instead of replaying the
    # first: exactly what ix-checkbox-01 and ix-stale-target-01 say must not happen.
    write = controlplane.ControlPlane._write

    def forgetful(self: Any, op: Any, decision: Any, handler: Any, args: dict[str, Any]) -> Any:
        self.state["idempotency"].pop(args["idempotencyKey"], None)
        return write(self, op, decision, handler, args)

    monkeypatch.setattr(controlplane.ControlPlane, "_write", forgetful)
    result = run_suite(rows)
    assert failing(result) == {
        "ix-checkbox-01": {"agent_tool_contract"},
        "ix-stale-target-01": {"agent_tool_contract"},
    }
    messages = [f.message for r in result.results for f in r.failures]
    assert all("did not replay" in m for m in messages), messages


def test_a_control_plane_that_lets_writes_through_without_a_running_run_fails(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The execution gate gone: after a 409, a budget stop or an idle wake the agent's
    # writes would land. The fake agent withholds them (restraint), so the suite asks
    # the control plane on a copy whether it would have refused them.
    monkeypatch.setattr(controlplane, "decide_execution", lambda *a, **k: None)
    result = run_suite(rows)
    assert failing(result) == {
        case: {"control_plane_invariant"}
        for case in (
            "co-409-stop-01",
            "co-409-stop-02",
            "co-runid-header-01",
            "er-budget-critical-01",
            "er-no-unassigned-01",
        )
    }
    conflict = next(r for r in result.results if r.row.id == "co-409-stop-01")
    message = conflict.failures[0].message
    assert "run run-0001 is conflict" in message and "withheld" in message
    # A what-if is not an agent call: nothing recorded, nothing changed.
    assert conflict.diff == [] and all(s.operation != "request_review" for s, _ in conflict.calls)


def test_the_execution_gate_is_what_refuses_the_withheld_writes(rows: list[Row]) -> None:
    # The sound control plane: each withheld write of those cases is refused by the gate.
    gate_reasons = {authorization.RUN_NOT_ACTIVE, authorization.EXECUTION_LOCK_NOT_HELD}
    assert gate_reasons <= set(authorization.REASONS)
    assert run_suite([r for r in rows if r.id.startswith(("co-", "er-"))]).ok


def test_a_control_plane_that_loses_the_run_id_fails_the_run_id_case(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # cm-runid-modify-01: the comment is stored with the current run's id and an audit
    # record names the same run. A mock that drops either must fail that case.
    add_comment = controlplane._add_comment

    def anonymous(cp: Any, s: dict[str, Any], task: str, body: str) -> str:
        cid = add_comment(cp, s, task, body)
        s["comments"][cid]["runId"] = None
        return cid

    monkeypatch.setattr(controlplane, "_add_comment", anonymous)
    result = run_suite([r for r in rows if r.id == "cm-runid-modify-01"])
    assert failing(result) == {"cm-runid-modify-01": {"agent_tool_contract"}}
    assert "'runId': 'run-0001'" in result.failures[0].message
    monkeypatch.undo()

    audit = controlplane.ControlPlane._audit

    def unattributed(self: Any, s: dict[str, Any], actor: str, *a: Any, **k: Any) -> None:
        audit(self, s, actor, *a, **k)
        s["auditRecords"][max(s["auditRecords"])]["runId"] = None

    monkeypatch.setattr(controlplane.ControlPlane, "_audit", unattributed)
    result = run_suite([r for r in rows if r.id == "cm-runid-modify-01"])
    assert failing(result) == {"cm-runid-modify-01": {"agent_tool_contract"}}


def test_a_replay_that_answers_with_another_result_fails_the_retry_cases(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    write = controlplane.ControlPlane._write

    def confused(self: Any, op: Any, decision: Any, handler: Any, args: dict[str, Any]) -> Any:
        res = write(self, op, decision, handler, args)
        if res.replayed:
            res.entity_id = "int-0999"
            res.output = {**res.output, "entityId": "int-0999"}
        return res

    monkeypatch.setattr(controlplane.ControlPlane, "_write", confused)
    result = run_suite([r for r in rows if r.group == "ix"])
    assert set(failing(result)) == {"ix-checkbox-01", "ix-stale-target-01"}


def _lifted(operation: str, **limits: Any) -> Catalog:
    """The catalog with one operation's role or task-mode limit taken away."""
    return CATALOG.with_operation(dataclasses.replace(CATALOG.operations[operation], **limits))


def test_a_control_plane_that_lets_any_role_decide_fails_the_self_approval_case(
    rows: list[Row],
) -> None:
    # ap-mcp-expiry-01: "its attempt to approve the action itself is denied for its role".
    # Without the role limit the engineer is still refused, for a missing claim, which a
    # grant would lift: the case must say the refusal is for the wrong reason.
    result = run_suite(rows, catalog=_lifted("decide_approval", roles=None))
    assert failing(result) == {"ap-mcp-expiry-01": {"authorization_policy"}}
    (failure,) = result.failures
    assert failure.operation == "decide_approval" and failure.decision == "denied"
    assert "refused as required_claim_missing" in failure.message
    assert "the case says actor_role_not_authorized" in failure.message


@pytest.mark.parametrize(
    ("operation", "cases"),
    [
        # wk-ask-mode-01: "status changes ... are refused in ask mode" (the PATCH's status
        # is left open by the evidence, so it is tried as each status-changing tool).
        ("block_task", {"wk-ask-mode-01"}),
        ("request_review", {"wk-ask-mode-01"}),
        ("finish_task", {"wk-ask-mode-01"}),
        ("write_document", {"wk-ask-mode-01"}),
        # "creating children is refused in planning mode" / "task creation ... in ask mode":
        # the engineer lacks the claim too, so only the reason tells the two apart.
        (
            "create_task",
            {
                "ix-confirmation-plan-01",
                "wk-ask-mode-01",
                "wk-plan-directive-01",
                "wk-plan-directive-02",
            },
        ),
    ],
)
def test_a_control_plane_without_a_task_mode_limit_fails_the_mode_cases(
    rows: list[Row], operation: str, cases: set[str]
) -> None:
    result = run_suite(rows, catalog=_lifted(operation, modes=TASK_MODES))
    assert failing(result) == {case: {"combined_multi_hop"} for case in cases}
    assert {f.operation for f in result.failures} == {operation}


def test_the_refusal_reasons_are_the_spec_catalogs_and_each_is_probed(rows: list[Row]) -> None:
    # Every reason in the table is one the canonical decision gives that probe, and every
    # entry is used: a stale entry would silently check nothing.
    by_id = {r.id: r for r in rows}
    for case, reasons in REFUSALS.items():
        row = by_id[case]
        plan = derive_plan(row)
        ctx = auth_context(row, plan.run_task, granted=True)
        probes = [s for s in plan.steps if s.kind == PROBE and s.operation in reasons]
        assert {s.operation for s in probes} == set(reasons), case
        for step in probes:
            assert step.refusal == reasons[step.operation]
            decision = authorization.decide(step.operation, ctx, target_task=step.args.get("task"))
            assert decision.reason == step.refusal, (case, step.operation)


def test_a_human_accept_that_wakes_nobody_fails_the_multi_turn_case(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # mh-plan-confirm-01: the confirmation's continuation is wake_assignee_on_accept, and
    # "after the owner accepts, turn two creates the child task": the accept must leave a
    # wake for the task's assignee, or there is no turn two.
    accept = controlplane.ControlPlane.human_event

    def silent(self: Any, event: str, target: str) -> None:
        wakes = set(self.state["wakes"])
        accept(self, event, target)
        for wake in set(self.state["wakes"]) - wakes:
            del self.state["wakes"][wake]

    monkeypatch.setattr(controlplane.ControlPlane, "human_event", silent)
    result = run_suite(rows)
    assert failing(result) == {"mh-plan-confirm-01": {"combined_multi_hop"}}
    (failure,) = result.failures
    assert failure.operation == "human:accept"
    assert "no new wakes entry" in failure.message and "'taskId': 'i-0102'" in failure.message


def gateway_files_as(monkeypatch: pytest.MonkeyPatch, status: str) -> None:
    """Make the gateway file every action request with `status`, whatever its tool."""
    gateway = controlplane._HANDLERS["call_gateway_tool"]

    def filed(cp: Any, s: dict[str, Any], a: dict[str, Any]) -> Any:
        rid, out = gateway(cp, s, a)
        s["actionRequests"][rid]["status"] = status
        return rid, out

    monkeypatch.setitem(controlplane._HANDLERS, "call_gateway_tool", filed)


def test_a_gateway_that_opens_no_pending_request_fails_the_gate_cases(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # ap-mcp-gate-01: "the gateway call opens a pending action request"; ap-mcp-expiry-01
    # requests the expired action again. A gateway that files it as anything but pending
    # (here: as if no approval path existed) leaves nothing for the approver to decide.
    gateway_files_as(monkeypatch, "no_approval_path")
    result = run_suite(rows)
    both = {"authorization_policy", "combined_multi_hop"}
    assert failing(result) == {"ap-mcp-expiry-01": both, "ap-mcp-gate-01": both}
    assert all("actionRequests[" in f.message and "'pending'" in f.message for f in result.failures)


def _after(monkeypatch: pytest.MonkeyPatch, operation: str, spoil: Any) -> None:
    """Break one effect: `spoil(state, args, entity_id)` runs after the sound handler."""
    handler = controlplane._HANDLERS[operation]

    def broken(cp: Any, s: dict[str, Any], a: dict[str, Any]) -> Any:
        entity_id, out = handler(cp, s, a)
        spoil(s, a, entity_id)
        return entity_id, out

    monkeypatch.setitem(controlplane._HANDLERS, operation, broken)


def test_a_created_task_that_loses_its_blockers_fails_the_blocked_child_cases(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # bl-create-blocked-01 "with i-0103 as blocker", mh-subtask-tree-01 "the second blocked
    # by the first": a child marked blocked with no blocker can never be woken.
    _after(monkeypatch, "create_task", lambda s, a, tid: s["tasks"][tid].update(blockerIds=[]))
    result = run_suite(rows)
    assert failing(result) == {
        "bl-create-blocked-01": {"agent_tool_contract", "combined_multi_hop"},
        "mh-subtask-tree-01": {"authorization_policy", "combined_multi_hop"},
    }
    assert any("blockerIds is [], expected ['i-0103']" in f.message for f in result.failures)


def test_an_interaction_that_loses_its_items_fails_the_interaction_cases(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # ix-questions-01 "holding all three", ix-verdicts-01 "one item per finding": what the
    # human is asked is part of the interaction.
    _after(
        monkeypatch, "request_human_input", lambda s, a, i: s["interactions"][i].update(items=[])
    )
    result = run_suite([r for r in rows if r.id in ("ix-questions-01", "ix-verdicts-01")])
    assert failing(result) == {
        case: {"agent_tool_contract", "combined_multi_hop"}
        for case in ("ix-questions-01", "ix-verdicts-01")
    }
    assert all(".items is []" in f.message for f in result.failures)


# The cases whose run comments (report_progress) on the cm and hb rows.
COMMENTING_CASES = {
    "cm-mention-structured-01",
    "cm-multiline-01",
    "cm-prefixed-url-01",
    "cm-progress-nextaction-01",
    "cm-runid-modify-01",
    "cm-ticket-link-01",
    "hb-context-01",
    "hb-wake-comment-01",
}


def test_a_comment_that_also_changes_the_task_fails_the_comment_cases(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # hb-wake-comment-01: "answers in one comment on i-0101, changing nothing else".
    _after(
        monkeypatch,
        "report_progress",
        lambda s, a, c: s["tasks"][a["task"]].update(status="done"),
    )
    result = run_suite([r for r in rows if r.group in ("cm", "hb")])
    assert set(failing(result)) == COMMENTING_CASES
    assert all("must not change" in f.message for f in result.failures)


def test_a_block_without_ids_that_clears_the_blockers_fails_the_cancelled_blocker_case(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # block_task "replaces the blocker set when ids are given"; without ids it stays
    # (bl-cancelled-not-resolved-01: "keeps it blocked (the blocker set unchanged)").
    def clear(s: dict[str, Any], a: dict[str, Any], task: str) -> None:
        if a.get("blockerIds") is None:
            s["tasks"][task]["blockerIds"] = []

    _after(monkeypatch, "block_task", clear)
    result = run_suite(rows)
    assert failing(result) == {
        "bl-cancelled-not-resolved-01": {"agent_tool_contract", "combined_multi_hop"}
    }


def test_a_document_write_that_drops_earlier_revisions_fails_the_revision_cases(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # write_document "appends a revision": dp-base-revision-01's write "succeeds as
    # revision 3", on top of the two the stale-plan fixture holds.
    def forget(s: dict[str, Any], a: dict[str, Any], rev: str) -> None:
        s["documents"][f"{a['task']}/{a['key']}"]["revisionIds"] = [rev]
        s["documentRevisions"][rev]["number"] = 1

    _after(monkeypatch, "write_document", forget)
    result = run_suite([r for r in rows if r.group == "dp"])
    assert failing(result) == {"dp-base-revision-01": {"agent_tool_contract"}}
    messages = " ".join(f.message for f in result.failures)
    assert ".number is 1, expected 3" in messages and ".revisionIds is ['rev-0001']" in messages


def test_a_deliverable_without_its_kind_and_url_fails_the_artifact_cases(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # ar-workproduct-pr-01: "with kind pull_request and its URL".
    _after(
        monkeypatch,
        "register_deliverable",
        lambda s, a, art: s["artifacts"][art].update(kind="file", uri=""),
    )
    result = run_suite([r for r in rows if r.group == "ar"])
    assert set(failing(result)) == {
        "ar-no-done-without-upload-01",
        "ar-upload-before-done-01",
        "ar-workproduct-pr-01",
        "ar-workproduct-wsfile-01",
    }


def _answering(monkeypatch: pytest.MonkeyPatch, operation: str, lie: Any) -> None:
    """Break one read: `lie(data)` is what it answers instead of the sound data."""
    handler = controlplane._HANDLERS[operation]

    def broken(cp: Any, s: dict[str, Any], a: dict[str, Any]) -> Any:
        _, data = handler(cp, s, a)
        return None, lie(data)

    monkeypatch.setitem(controlplane._HANDLERS, operation, broken)


def test_a_task_context_without_blocker_owners_fails_the_blocker_reading_cases(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # bl-read-owners-01: "reads the context of i-0103, which names the blocker and its owner".
    _answering(monkeypatch, "get_task_context", lambda d: {**d, "blockers": []})
    result = run_suite([r for r in rows if r.group == "bl"])
    assert failing(result) == {
        case: {"agent_tool_contract"}
        for case in ("bl-cancelled-not-resolved-01", "bl-clear-01", "bl-read-owners-01")
    }
    owners = next(r for r in result.results if r.row.id == "bl-read-owners-01")
    assert "'assigneeId': 'a-design-0001'" in owners.failures[0].message


def test_an_approval_read_that_hides_the_decision_fails_the_approval_cases(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # ap-approval-deny-01 "reads the rejection"; ap-approval-wake-01 "reads the approval
    # and its linked tasks".
    _answering(monkeypatch, "get_approval", lambda d: {**d, "status": "approved"})
    _answering(monkeypatch, "get_approval_context", lambda d: {"taskIds": []})
    result = run_suite([r for r in rows if r.group == "ap"])
    assert failing(result) == {
        "ap-approval-deny-01": {"authorization_policy"},
        "ap-approval-wake-01": {"authorization_policy"},
    }


def test_an_operation_lookup_that_misreports_fails_the_verify_hops(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A single-call multi-hop row is look, act, verify; the verify hop reads the write's
    # recorded result, so a lookup answering something else fails those rows.
    _answering(monkeypatch, "inspect_operation_result", lambda d: {**d, "entityId": "x-0000"})
    result = run_suite([r for r in rows if r.group in ("bl", "ix")])
    assert "ix-continuation-01" in failing(result) and "bl-firstclass-01" in failing(result)
    assert all(f.operation == "inspect_operation_result" for f in result.failures)


# -- derivatives that pass the structural checks but that the suite cannot run --------------


def _edited(rows: list[Row], case_id: str, **fields: Any) -> list[Row]:
    return [dataclasses.replace(r, **fields) if r.id == case_id else r for r in rows]


def test_evidence_naming_a_task_the_fixture_lacks_is_a_plan_problem(rows: list[Row]) -> None:
    # The run task comes from the evidence; a fixture that does not seed it used to pass
    # validate and then crash `run` with a KeyError in the control plane.
    bad = _edited(
        rows,
        "rf-api-review-changes-01",
        fixture="plan-annotations",
        expectedSemantics=(
            "GET /api/companies/c-mock-0001/issues",
            'PATCH "^/api/issues/(i-0160|MCK-160)$"',
        ),
    )
    (problem,) = check_plans(bad, file="drift.yaml")
    index = next(i for i, r in enumerate(bad) if r.id == "rf-api-review-changes-01")
    assert problem.field == f"rows[{index}] (rf-api-review-changes-01).expectedSemantics"
    assert "i-0160" in problem.message and "'plan-annotations'" in problem.message


def test_a_sample_group_with_no_call_fails_the_sample_instead_of_crashing(
    rows: list[Row],
) -> None:
    # Every evidence entry of the only ix row is refused: the Codex sample has nothing
    # to sample for ix, which is a failed sample check, not a StopIteration.
    row = dataclasses.replace(
        next(r for r in rows if r.id == "ix-stale-target-01"),
        expectedSemantics=(
            'POST "^/api/issues/(i-0104|MCK-104)/checkout$"',
            'POST "^/api/issues/(i-0104|MCK-104)/release$"',
        ),
    )
    result = run_suite([row])
    (item,) = result.codex_sample
    assert item["caseId"] == "ix-stale-target-01" and not result.ok
    assert any(f.assertion_class == "codex_sample" for f in result.failures)


def test_a_call_on_the_run_task_with_no_run_task_is_a_plan_problem(rows: list[Row]) -> None:
    # empty-inbox opens the run with no task; dp-base-revision-01's first write is on the
    # run's task, so `validate` said ok and `run` crashed with KeyError: None.
    bad = _edited(rows, "dp-base-revision-01", fixture="empty-inbox")
    (problem,) = check_plans(bad, file="drift.yaml")
    index = next(i for i, r in enumerate(bad) if r.id == "dp-base-revision-01")
    assert problem.field == f"rows[{index}] (dp-base-revision-01).fixture"
    assert "'empty-inbox'" in problem.message and "write_document" in problem.message
    assert check_plans(rows, file="drift.yaml") == []


def test_a_write_that_also_changes_another_entity_fails_its_cases(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each expected field was right, so a comment that also closed another agent's task
    # (i-0106 belongs to a-design-0001) passed every case that comments.
    _after(
        monkeypatch,
        "report_progress",
        lambda s, a, c: s["tasks"]["i-0106"].update(status="done"),
    )
    result = run_suite([r for r in rows if r.group in ("cm", "hb")])
    assert set(failing(result)) == COMMENTING_CASES
    assert all(
        "changed what its effect does not: tasks[i-0106].status: 'in_progress' -> 'done'"
        in f.message
        for f in result.failures
    ), [f.message for f in result.failures]


def test_every_failure_of_a_control_plane_that_ignores_grants_names_call_and_class(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ungranted, su rows must refuse create_task; a control plane that allows it anyway
    # fails them, and each failure must say which call did it and how it was decided.
    from capeval.core.paperclip import authorization
    from capeval.paperclip import controlplane
    from capeval.paperclip.suite import UNGRANTED

    real = authorization.decide

    def lax(operation: str, ctx: AuthContext, **kw: Any) -> authorization.Decision:
        return real(operation, dataclasses.replace(ctx, claims=ALL_CLAIMS), **kw)

    monkeypatch.setattr(controlplane, "decide", lax)
    changed = []
    for row in (r for r in rows if r.group == "su"):
        for f in run_configuration(row, UNGRANTED).failures:
            assert f.assertion_class in row.assertionClasses, str(f)
            assert f.operation and f.decision not in ("", "-"), str(f)
            if f.message == "ungranted configuration changed state":
                changed.append(f)
    assert changed and all(
        (f.operation, f.decision, f.reason) == ("create_task", "allowed", "required_claims_granted")
        for f in changed
    ), [str(f) for f in changed]


@pytest.mark.parametrize(
    ("operation", "lie"),
    [
        ("get_task_history", lambda d: {"comments": [], "interactions": []}),
        ("list_documents", lambda d: {}),
        ("read_document", lambda d: {**d, "content": "something else"}),
        ("list_agents", lambda d: {"ids": []}),
        ("search_tasks", lambda d: {"taskIds": []}),
    ],
)
def test_a_read_that_answers_wrongly_fails_the_cases_that_read(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch, operation: str, lie: Any
) -> None:
    # The cases whose read the lie changes (a task with no comments reads as none either way).
    sound = run_suite(rows)
    readers = {
        r.row.id
        for r in sound.results
        if any(
            s.operation == operation and c.ok and lie(c.output["data"]) != c.output["data"]
            for s, c in r.calls
        )
    }
    assert readers, operation
    _answering(monkeypatch, operation, lie)
    result = run_suite([r for r in rows if r.id in readers])
    assert set(failing(result)) == readers
    # A wrong look before a document write also fails the write that trusted it.
    assert operation in {f.operation for f in result.failures}
    assert {f.operation for f in result.failures} <= {operation, "write_document"}


def test_a_gateway_that_opens_a_pending_request_with_no_approver_fails(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    # ap-mcp-pathmissing-01: the gated tool has no approver, so its action request
    # "cannot be decided by the usual path"; filing it as pending says it can.
    gateway_files_as(monkeypatch, "pending")
    result = run_suite([r for r in rows if r.group == "ap"])
    both = {"authorization_policy", "combined_multi_hop"}
    assert failing(result) == {"ap-mcp-pathmissing-01": both}
