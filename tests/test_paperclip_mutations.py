"""Mutation checks: a control plane broken in one rule must fail the cases about that rule.

Each test breaks one rule of the mock the way a faulty control plane would and
runs the whole suite: the cases whose scenario is that rule must fail, and no
other. A rule no case catches would let a broken control plane pass all 148 checks.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from capeval.paperclip import authorization, controlplane
from capeval.paperclip.derivative import Row
from capeval.paperclip.fakeagent import check_plans
from capeval.paperclip.suite import SuiteResult, run_suite


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


# -- derivatives that pass section 1 but that the suite cannot run ------------------------------


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
