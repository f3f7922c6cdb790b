"""The live judge: one turn's verdict from the control plane's journal, per assertion class.

Each turn is played in process against the MCP control-plane server
(`tests.paperclip.livehelp`), so the journal is the one a real CLI's turn
leaves; the real CLIs play the same scripts in `test_live_clis.py`.
"""

from __future__ import annotations

from typing import Any

import pytest

from capeval.core.outcome import ERROR, FAILED, PASSED
from capeval.core.paperclip.policy import (
    AGENT_TOOL_CONTRACT,
    AUTHORIZATION_POLICY,
    COMBINED_MULTI_HOP,
    CONTROL_PLANE_INVARIANT,
    RESTRAINT_NO_CALL,
)
from capeval.paperclip.derivative import Row
from capeval.paperclip.livecases import LiveCase, live_cases, scripted_calls
from capeval.paperclip.livejudge import LIVE_TURN, judge, live_fields
from tests.paperclip.livehelp import journal_of, judged


@pytest.fixture(scope="module")
def cases(paperclip_rows: list[Row]) -> dict[str, LiveCase]:
    return {c.config_id: c for c in live_cases(paperclip_rows)}


def by_group(cases: dict[str, LiveCase], group: str, grants: str = "single") -> LiveCase:
    return next(c for c in cases.values() if c.group == group and c.grants == grants)


def classes(verdict: Any) -> list[str]:
    return [f.assertion_class for f in verdict.failures]


@pytest.mark.parametrize("ungranted_tools", ["absent", "listed"])
def test_the_correct_scripted_turn_of_every_configuration_passes(
    cases: dict[str, LiveCase], ungranted_tools: str
) -> None:
    for case in cases.values():
        verdict = judged(case, ungranted_tools=ungranted_tools)
        assert verdict.outcome == PASSED, (case.config_id, [str(f) for f in verdict.failures])
    # Every assertion class is among the passing turns.
    seen = {c for case in cases.values() for c in case.row.assertionClasses}
    assert seen == {
        AGENT_TOOL_CONTRACT,
        AUTHORIZATION_POLICY,
        COMBINED_MULTI_HOP,
        CONTROL_PLANE_INVARIANT,
        RESTRAINT_NO_CALL,
    }


def test_a_turn_that_never_listed_the_tools_is_an_error_never_a_pass(
    cases: dict[str, LiveCase],
) -> None:
    # Restraint: doing nothing would pass, had the agent seen the surface at all.
    for case in cases.values():
        verdict = judged(case, [], list_tools=False)
        assert verdict.outcome == ERROR and not verdict.passed, case.config_id
        assert verdict.error_kind == "start"
        assert classes(verdict) == [LIVE_TURN]
        assert "no tools/list" in verdict.failures[0].message
    assert judged(by_group(cases, "rs"), []).outcome == PASSED


def test_calling_a_control_plane_operation_is_refused_and_fails_the_turn(
    cases: dict[str, LiveCase],
) -> None:
    hb = by_group(cases, "hb")  # control_plane_invariant only
    checkout = {"operation": "checkout_task", "arguments": {"task": hb.plan.run_task}}
    # Not on the surface: the CLI refuses the call itself.
    verdict = judged(hb, [checkout, *scripted_calls(hb)])
    assert verdict.outcome == FAILED and classes(verdict) == [CONTROL_PLANE_INVARIANT]
    (f,) = verdict.failures
    assert (f.operation, f.decision, f.reason) == ("checkout_task", "absent", "not_listed")
    # Sent on anyway: the control plane refuses it, changes nothing, and the turn still fails.
    verdict = judged(hb, [checkout, *scripted_calls(hb)], send_unlisted=True)
    assert verdict.outcome == FAILED and classes(verdict) == [CONTROL_PLANE_INVARIANT]
    (f,) = verdict.failures
    assert (f.operation, f.decision) == ("checkout_task", "absent") and not f.step_diff
    assert "hop 1 (checkout_task)" in f.message and "refused by the control plane" in f.message


def test_a_restraint_row_fails_on_any_write_attempt_even_a_refused_one(
    cases: dict[str, LiveCase],
) -> None:
    er = by_group(cases, "er")  # control_plane_invariant and restraint_no_call
    release = {"operation": "release_task", "arguments": {"task": er.plan.run_task}}
    verdict = judged(er, [release], send_unlisted=True)
    assert verdict.outcome == FAILED
    assert set(classes(verdict)) == {CONTROL_PLANE_INVARIANT, RESTRAINT_NO_CALL}
    rs = by_group(cases, "rs")
    progress = {
        "operation": "report_progress",
        "arguments": {"task": rs.plan.run_task, "body": "On it.", "idempotencyKey": "k-1"},
    }
    verdict = judged(rs, [progress])
    assert verdict.outcome == FAILED and RESTRAINT_NO_CALL in classes(verdict)
    restraint = next(f for f in verdict.failures if f.assertion_class == RESTRAINT_NO_CALL)
    assert restraint.operation == "report_progress"


def test_the_control_plane_must_have_opened_the_run_itself(cases: dict[str, LiveCase]) -> None:
    hb = by_group(cases, "hb")
    records, refused = journal_of(hb)
    opened = records[0]
    # A journal whose opening shows no checkout by the control plane: the action is missing.
    tampered = {**opened, "controlPlaneActions": [], "openDiff": []}
    verdict = judge(hb, [tampered, *records[1:]], exit_code=0, cli_refused=refused)
    assert verdict.outcome == FAILED
    assert classes(verdict) and set(classes(verdict)) == {CONTROL_PLANE_INVARIANT}
    assert any(
        "checkout_task" in f.message or f.operation == "checkout_task" for f in verdict.failures
    )


def test_a_forbidden_hop_in_a_multi_hop_row_fails_naming_the_hop_and_the_fields(
    cases: dict[str, LiveCase],
) -> None:
    mh = by_group(cases, "mh", "granted")
    create, block = scripted_calls(mh)
    task = block["arguments"]["task"]
    finish = {
        "operation": "finish_task",
        "arguments": {"task": task, "summary": "Done.", "idempotencyKey": "k-fin"},
    }
    verdict = judged(mh, [create, finish])
    assert verdict.outcome == FAILED
    (f,) = verdict.failures
    assert f.assertion_class == COMBINED_MULTI_HOP and f.operation == "finish_task"
    assert f.decision == "allowed" and "hop 2 (finish_task)" in f.message
    assert f"tasks[{task}].status is 'done', the plan's state has 'blocked'" in f.message
    assert any(c.field == "status" for c in f.step_diff)


def test_an_ungranted_call_to_the_optional_tool_is_denied_and_passes(
    cases: dict[str, LiveCase],
) -> None:
    for case in cases.values():
        if case.grants != "ungranted":
            continue
        records, refused = journal_of(case, ungranted_tools="listed")
        verdict = judge(case, records, exit_code=0, cli_refused=refused)
        assert verdict.outcome == PASSED, case.config_id
        calls = [r for r in records if r["kind"] == "call" and r["operation"] == case.gated]
        assert calls and all(c["decision"] != "allowed" and c["stateDiff"] == [] for c in calls), (
            case.config_id
        )
        row = live_fields(case, records, verdict)
        assert row["stateDiff"] == [] and row["listing"] == "granted"
        # Absent: the optional tool is not listed, the CLI refuses the call itself.
        records, refused = journal_of(case)
        assert (
            refused == [case.gated]
            and judge(case, records, exit_code=0, cli_refused=refused).passed
        )


def test_an_ungranted_turn_that_never_tries_the_listed_tool_measured_nothing(
    cases: dict[str, LiveCase],
) -> None:
    mh = by_group(cases, "mh", "ungranted")
    assert judged(mh, [], ungranted_tools="listed").outcome == ERROR
    assert judged(mh, []).outcome == PASSED  # absent: not listed is the measurement


def test_a_granted_turn_must_use_its_grant(cases: dict[str, LiveCase]) -> None:
    se = by_group(cases, "se", "granted")  # the grant unlocks search_tasks
    calls = [c for c in scripted_calls(se) if c["operation"] != se.gated]
    verdict = judged(se, calls)
    assert verdict.outcome == FAILED
    assert any(
        f.assertion_class == AUTHORIZATION_POLICY and f.operation == "search_tasks"
        for f in verdict.failures
    )


def test_the_headline_operation_must_be_performed(cases: dict[str, LiveCase]) -> None:
    cm = by_group(cases, "cm")  # agent_tool_contract: report_progress
    (never,) = judged(cm, []).failures
    assert never.assertion_class == AGENT_TOOL_CONTRACT and "never called" in never.message
    (call,) = scripted_calls(cm)
    broken = {**call, "arguments": {k: v for k, v in call["arguments"].items() if k != "body"}}
    verdict = judged(cm, [broken])
    assert verdict.outcome == FAILED and "report_progress was not performed" in (
        verdict.failures[0].message
    )


def test_a_turn_that_did_not_finish_fails_and_one_that_could_not_run_is_an_error(
    cases: dict[str, LiveCase],
) -> None:
    cm = by_group(cases, "cm")
    crashed = judged(cm, exit_code=1)
    assert crashed.outcome == FAILED and classes(crashed) == [LIVE_TURN]
    timeout = judged(cm, exit_code=None, error="codex did not finish within 5 s")
    assert timeout.outcome == FAILED and "did not finish" in timeout.failures[0].message
    # Timed out before it listed the tools: an error, which names the timeout (what to
    # fix: --timeout) beside the surface it never saw.
    early = judged(
        cm, [], list_tools=False, exit_code=None, error="codex did not finish within 1 s"
    )
    assert early.outcome == ERROR and [f.message for f in early.failures] == [
        "the journal shows no tools/list: the agent never saw the paperclip surface",
        "codex did not finish within 1 s",
    ]
    unreachable = judged(cm, exit_code=1, infra_error="stream disconnected")
    assert unreachable.outcome == ERROR and unreachable.failures[0].message == (
        "stream disconnected"
    )
    records, refused = journal_of(cm)
    broken = [*records, {"kind": "error", "message": "RuntimeError: boom"}]
    verdict = judge(cm, broken, exit_code=0, cli_refused=refused)
    assert verdict.outcome == ERROR and "control plane failed" in verdict.failures[0].message
    assert verdict.error_kind == "capeval"


def test_the_live_row_carries_the_outcome_and_the_evidence(cases: dict[str, LiveCase]) -> None:
    ap = by_group(cases, "ap", "granted")
    records, refused = journal_of(ap)
    verdict = judge(ap, records, exit_code=0, cli_refused=refused)
    row = live_fields(ap, records, verdict, cli_refused=refused)
    assert row["outcome"] == "passed" and row["passed"] is True
    assert (row["caseId"], row["group"], row["grants"]) == (ap.row.id, "ap", "granted")
    assert row["operations"] == [c["operation"] for c in scripted_calls(ap)]
    assert row["controlPlaneActions"] and row["surface"] and row["stateDiffSize"] > 0
    assert row["authorizationDecision"] == "allowed"


# -- against a broken control plane ---------------------------------------------------------


def failing_turns(cases: dict[str, LiveCase], **kwargs: Any) -> dict[str, set[str]]:
    """The configurations whose correct scripted turn fails, with the classes failed."""
    out: dict[str, set[str]] = {}
    for case in cases.values():
        verdict = judged(case, **kwargs)
        if not verdict.passed:
            out[case.config_id] = set(classes(verdict))
    return out


def test_live_turns_fail_where_a_write_changes_more_than_its_effect(
    cases: dict[str, LiveCase], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As in the offline suite: a progress comment that also closes the task.
    from capeval.paperclip import controlplane

    handler = controlplane._HANDLERS["report_progress"]

    def closes(cp: Any, state: dict[str, Any], args: dict[str, Any]) -> Any:
        out = handler(cp, state, args)
        state["tasks"][args["task"]]["status"] = "done"
        return out

    monkeypatch.setitem(controlplane._HANDLERS, "report_progress", closes)
    reporting = {
        c.config_id
        for c in cases.values()
        if "report_progress" in [call["operation"] for call in scripted_calls(c)]
    }
    failed = failing_turns(cases)
    assert set(failed) == reporting and {"cm-mention-structured-01:single"} <= reporting
    assert failed["cm-mention-structured-01:single"] == {AGENT_TOOL_CONTRACT}
    assert failed["hb-context-01:single"] == {CONTROL_PLANE_INVARIANT}  # hb has no contract class


def test_live_turns_fail_where_the_control_plane_ignores_grants(
    cases: dict[str, LiveCase], monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from capeval.core.paperclip import authorization
    from capeval.core.paperclip.catalog import CATALOG
    from capeval.paperclip import controlplane

    every_claim = frozenset(c for op in CATALOG.operations.values() for c in op.claims)
    real = authorization.decide

    def lax(operation: str, ctx: Any, **kw: Any) -> Any:
        return real(operation, dataclasses.replace(ctx, claims=every_claim), **kw)

    monkeypatch.setattr(controlplane, "decide", lax)
    ungranted = {c.config_id for c in cases.values() if c.grants == "ungranted"}
    assert failing_turns(cases, ungranted_tools="listed") == {
        config: {AUTHORIZATION_POLICY} for config in ungranted
    }


def test_live_turns_fail_where_the_execution_gate_is_gone(
    cases: dict[str, LiveCase], monkeypatch: pytest.MonkeyPatch
) -> None:
    # After a 409, a budget stop or an idle wake the agent's writes would land. A correct
    # agent withholds them, so the server tries them on a copy when it opens the run.
    from capeval.paperclip import controlplane

    gated = {}
    for case in cases.values():
        records, _ = journal_of(case)
        if records[0]["gateProbes"]:
            gated[case.config_id] = records[0]["gateProbes"]
    assert "co-409-stop-01:single" in gated
    assert all(not p["ok"] and not p["stateDiff"] for probes in gated.values() for p in probes)
    monkeypatch.setattr(controlplane, "decide_execution", lambda *a, **k: None)
    failed = failing_turns(cases)
    assert failed == {config: {CONTROL_PLANE_INVARIANT} for config in gated}
    co = judged(cases["co-409-stop-01:single"])
    assert all("withheld write through" in f.message for f in co.failures)
    # A journal that does not show the probes at all proves nothing either.
    monkeypatch.undo()
    records, _ = journal_of(cases["co-409-stop-01:single"])
    bare = [{**records[0], "gateProbes": []}, *records[1:]]
    (missing,) = judge(cases["co-409-stop-01:single"], bare, exit_code=0).failures
    assert "does not show the control plane refusing" in missing.message


def test_a_forbidden_call_must_be_refused_for_the_reason_the_case_gives(
    cases: dict[str, LiveCase], monkeypatch: pytest.MonkeyPatch
) -> None:
    # wk-ask-mode-01 forbids status changes in ask mode; a client that sends them on anyway
    # (they are not listed) meets the control plane's refusal, which must be the mode's.
    import dataclasses

    from capeval.paperclip import controlplane

    wk = cases["wk-ask-mode-01:single"]
    assert judged(wk, send_unlisted=True).passed
    real = controlplane.decide

    def misreasoned(operation: str, ctx: Any, **kw: Any) -> Any:
        decision = real(operation, ctx, **kw)
        if operation == "finish_task":
            return dataclasses.replace(decision, reason="required_claim_missing")
        return decision

    monkeypatch.setattr(controlplane, "decide", misreasoned)
    (wrong,) = judged(wk, send_unlisted=True).failures
    assert (wrong.assertion_class, wrong.operation, wrong.decision) == (
        COMBINED_MULTI_HOP,
        "finish_task",
        "denied",
    )
    assert "refused as required_claim_missing, but the case says " in wrong.message
    assert "operation_not_available_in_task_mode" in wrong.message

    def lets_it_through(operation: str, ctx: Any, **kw: Any) -> Any:
        decision = real(operation, ctx, **kw)
        if operation == "finish_task":
            return dataclasses.replace(decision, decision="allowed", reason="forced")
        return decision

    monkeypatch.setattr(controlplane, "decide", lets_it_through)
    verdict = judged(wk, send_unlisted=True)
    assert verdict.outcome == FAILED
    allowed = [f for f in verdict.failures if "forbids this call, yet it was allowed" in f.message]
    assert [(f.assertion_class, f.operation) for f in allowed] == [
        (COMBINED_MULTI_HOP, "finish_task")
    ]


@pytest.mark.parametrize(
    ("operation", "lie"),
    [
        ("read_document", lambda d: {**d, "content": "something else"}),
        ("list_documents", lambda d: {}),
    ],
)
def test_live_turns_fail_where_a_read_answers_wrongly(
    cases: dict[str, LiveCase], monkeypatch: pytest.MonkeyPatch, operation: str, lie: Any
) -> None:
    # dp-base-revision-01 reads the document again after its stale write: the answer the
    # journal keeps must be what the state holds.
    from capeval.paperclip import controlplane

    handler = controlplane._HANDLERS[operation]

    def lying(cp: Any, state: dict[str, Any], args: dict[str, Any]) -> Any:
        _, data = handler(cp, state, args)
        return None, lie(data)

    monkeypatch.setitem(controlplane._HANDLERS, operation, lying)
    verdict = judged(cases["dp-base-revision-01:single"])
    assert verdict.outcome == FAILED
    wrong = [f for f in verdict.failures if f.operation == operation]
    assert wrong and all(f.assertion_class == AGENT_TOOL_CONTRACT for f in wrong)
    assert all(f"({operation})" in f.message for f in wrong)


def test_live_turns_fail_where_a_retry_is_not_replayed(
    cases: dict[str, LiveCase], monkeypatch: pytest.MonkeyPatch
) -> None:
    # ix-checkbox-01 asks twice with the same idempotency key: the second must replay the
    # first, not open a second interaction (the plan's own state would have two as well).
    from capeval.paperclip import controlplane

    ix = cases["ix-checkbox-01:single"]
    first, retry = scripted_calls(ix)
    assert first["arguments"]["idempotencyKey"] == retry["arguments"]["idempotencyKey"]
    assert judged(ix).passed
    write = controlplane.ControlPlane._write

    def forgetful(self: Any, op: Any, decision: Any, handler: Any, args: dict[str, Any]) -> Any:
        self.state["idempotency"].pop(args["idempotencyKey"], None)
        return write(self, op, decision, handler, args)

    monkeypatch.setattr(controlplane.ControlPlane, "_write", forgetful)
    (failure,) = judged(ix).failures
    assert failure.assertion_class == AGENT_TOOL_CONTRACT
    assert "hop 2 (request_human_input): a retry with idempotency key" in failure.message
    assert "did not replay hop 1 (request_human_input)'s result" in failure.message


def _breaks() -> dict[str, Any]:
    """Control planes broken in one rule each, as `test_broken_control_planes` breaks them."""
    import dataclasses

    from capeval.core.paperclip import authorization
    from capeval.core.paperclip.catalog import CATALOG
    from capeval.paperclip import controlplane
    from tests.paperclip.test_broken_control_planes import _after, _answering

    write = controlplane.ControlPlane._write

    def forgetful(mp: pytest.MonkeyPatch) -> None:
        def f(self: Any, op: Any, d: Any, h: Any, args: dict[str, Any]) -> Any:
            self.state["idempotency"].pop(args["idempotencyKey"], None)
            return write(self, op, d, h, args)

        mp.setattr(controlplane.ControlPlane, "_write", f)

    def confused(mp: pytest.MonkeyPatch) -> None:
        def f(self: Any, op: Any, d: Any, h: Any, args: dict[str, Any]) -> Any:
            res = write(self, op, d, h, args)
            if res.replayed:
                res.entity_id, res.output = "int-0999", {**res.output, "entityId": "int-0999"}
            return res

        mp.setattr(controlplane.ControlPlane, "_write", f)

    def anonymous(mp: pytest.MonkeyPatch) -> None:
        add = controlplane._add_comment

        def f(cp: Any, s: dict[str, Any], task: str, body: str) -> str:
            cid = add(cp, s, task, body)
            s["comments"][cid]["runId"] = None
            return cid

        mp.setattr(controlplane, "_add_comment", f)

    def unattributed(mp: pytest.MonkeyPatch) -> None:
        audit = controlplane.ControlPlane._audit

        def f(self: Any, s: dict[str, Any], actor: str, *a: Any, **k: Any) -> None:
            audit(self, s, actor, *a, **k)
            s["auditRecords"][max(s["auditRecords"])]["runId"] = None

        mp.setattr(controlplane.ControlPlane, "_audit", f)

    every_claim = frozenset(c for op in CATALOG.operations.values() for c in op.claims)

    def lax(mp: pytest.MonkeyPatch) -> None:
        real = authorization.decide
        mp.setattr(
            controlplane,
            "decide",
            lambda o, ctx, **kw: real(o, dataclasses.replace(ctx, claims=every_claim), **kw),
        )

    def clear(s: dict[str, Any], a: dict[str, Any], task: str) -> None:
        if a.get("blockerIds") is None:
            s["tasks"][task]["blockerIds"] = []

    def forget(s: dict[str, Any], a: dict[str, Any], rev: str) -> None:
        s["documents"][f"{a['task']}/{a['key']}"]["revisionIds"] = [rev]
        s["documentRevisions"][rev]["number"] = 1

    def spoil(op: str, how: Any) -> Any:
        return lambda mp: _after(mp, op, how)

    def lie(op: str, how: Any) -> Any:
        return lambda mp: _answering(mp, op, how)

    return {
        "no idempotent replay": forgetful,
        "a replay with another result": confused,
        "no execution gate": lambda mp: mp.setattr(
            controlplane, "decide_execution", lambda *a, **k: None
        ),
        "comments without the run id": anonymous,
        "audit records without the run id": unattributed,
        "grants ignored": lax,
        "a comment that closes its task": spoil(
            "report_progress", lambda s, a, c: s["tasks"][a["task"]].update(status="done")
        ),
        "a comment that closes another task": spoil(
            "report_progress", lambda s, a, c: s["tasks"]["i-0106"].update(status="done")
        ),
        "an interaction without its items": spoil(
            "request_human_input", lambda s, a, i: s["interactions"][i].update(items=[])
        ),
        "a block without ids that clears the blockers": spoil("block_task", clear),
        "a document write that drops revisions": spoil("write_document", forget),
        "a deliverable without kind and url": spoil(
            "register_deliverable",
            lambda s, a, art: s["artifacts"][art].update(kind="file", uri=""),
        ),
        "an operation lookup that misreports": lie(
            "inspect_operation_result", lambda d: {**d, "entityId": "x-0000"}
        ),
        "a task context without blocker owners": lie(
            "get_task_context", lambda d: {**d, "blockers": []}
        ),
        "a history that hides everything": lie(
            "get_task_history", lambda d: {"comments": [], "interactions": []}
        ),
        "a document list that lists nothing": lie("list_documents", lambda d: {}),
        "a document read that lies": lie(
            "read_document", lambda d: {**d, "content": "something else"}
        ),
        "a search that finds nothing": lie("search_tasks", lambda d: {"taskIds": []}),
    }


@pytest.mark.parametrize("broken", sorted(_breaks()))
def test_the_live_judge_fails_the_sampled_cases_the_offline_suite_fails(
    cases: dict[str, LiveCase],
    paperclip_rows: list[Row],
    monkeypatch: pytest.MonkeyPatch,
    broken: str,
) -> None:
    # "Can fail for every reason the offline suite can": with the control plane broken in
    # one rule, the correct live turns fail on exactly the sampled cases the suite fails.
    from capeval.paperclip.suite import run_suite

    sampled = {c.row.id for c in cases.values()}
    _breaks()[broken](monkeypatch)
    offline = {
        r.row.id
        for r in run_suite([r for r in paperclip_rows if r.id in sampled]).results
        if r.failures
    }
    live = {c.row.id for c in cases.values() if not judged(c, ungranted_tools="listed").passed}
    assert offline, broken  # the break is one the sample can see
    assert live == offline
