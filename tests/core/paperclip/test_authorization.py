"""The catalog, the authorization decisions (every reason) and the bindings' parity."""

from __future__ import annotations

import builtins
import json

import pytest

from capeval.core.paperclip import authorization as auth
from capeval.core.paperclip.authorization import AuthContext
from capeval.core.paperclip.catalog import (
    CATALOG,
    CONTINUATIONS,
    FAKE_AGENT_SEED_GRANTS,
    INTERACTION_KINDS,
)
from capeval.core.paperclip.policy import ALWAYS, CONTROL_PLANE, OPTIONAL, claims_for_grants
from capeval.paperclip.bindings import codex_binding, fake_agent_binding, parity
from capeval.paperclip.report import DEFAULT_OUT, REPORT_JSON, REPORT_MD
from capeval.paperclip.suite import CONTROL_PLANE_NAMES

ALWAYS_14 = [
    "get_task_context",
    "get_task_history",
    "list_documents",
    "read_document",
    "list_document_revisions",
    "report_progress",
    "answer_status_question",
    "finish_task",
    "block_task",
    "request_review",
    "write_document",
    "request_human_input",
    "register_deliverable",
    "inspect_operation_result",
]
SEED_4 = ["search_tasks", "list_agents", "create_task", "request_approval"]

# The authorization names of docs/paperclip.md, written out: these names are contracts.
SPEC_CONTROL_PLANE = [
    "checkout_task",
    "release_task",
    "select_work",
    "route_wake",
    "enforce_budget",
    "append_audit_record",
    "persist_run",
    "replay_run",
    "schedule_blocker_wake",
    "reconcile_run",
]
SPEC_REASONS = [
    "task_scoped_always_tool",
    "required_claims_granted",
    "required_claim_missing",
    "actor_role_not_authorized",
    "operation_not_available_in_task_mode",
    "control_plane_owned_operation",
    "unknown_operation",
]


def ctx(
    role: str = "engineer",
    claims: tuple[str, ...] = (),
    mode: str = "standard",
    task: str | None = "i-0101",
) -> auth.AuthContext:
    return auth.AuthContext(role, frozenset(claims), mode, task)


def test_catalog_has_the_spec_operations() -> None:
    assert CATALOG.names(ALWAYS) == ALWAYS_14
    assert len(CATALOG.names(CONTROL_PLANE)) == 10
    optional = CATALOG.names(OPTIONAL)
    for name in (
        *SEED_4,
        "get_agent",
        "list_projects",
        "list_goals",
        "set_dependencies",
        "reassign_task",
        "list_approvals",
        "get_approval",
        "get_approval_context",
        "decide_approval",
        "comment_on_approval",
        "generic_api_request",
    ):
        assert name in optional
    assert CATALOG.operations["generic_api_request"].counts_as_coverage is False
    assert all(CATALOG.operations[n].claims for n in optional)


def test_always_tool_is_allowed_and_exposed_without_claims() -> None:
    d = auth.decide("report_progress", ctx(), target_task="i-0101")
    assert (d.decision, d.reason) == (auth.ALLOWED, auth.TASK_SCOPED_ALWAYS_TOOL)
    d = auth.decide("report_progress", ctx(), listing=True)
    assert (d.decision, d.reason) == (auth.EXPOSED, auth.TASK_SCOPED_ALWAYS_TOOL)


def test_optional_tool_needs_every_claim() -> None:
    d = auth.decide("create_task", ctx())
    assert (d.decision, d.reason, d.missing_claims) == (
        auth.DENIED,
        auth.REQUIRED_CLAIM_MISSING,
        ("delegation:tasks:create",),
    )
    assert auth.decide("create_task", ctx(), listing=True).decision == auth.ABSENT
    d = auth.decide("create_task", ctx(claims=("delegation:tasks:create",)))
    assert (d.decision, d.reason) == (auth.ALLOWED, auth.REQUIRED_CLAIMS_GRANTED)


def test_scenario_grant_expands_to_claims() -> None:
    claims = claims_for_grants(["delegation:manage"])
    assert auth.decide("create_task", ctx(claims=tuple(claims))).decision == auth.ALLOWED
    assert auth.decide("search_tasks", ctx(claims=tuple(claims))).decision == auth.DENIED


def test_role_limited_operation_refuses_other_roles() -> None:
    claims = ("governance:approvals:decide",)
    d = auth.decide("decide_approval", ctx(claims=claims))
    assert (d.decision, d.reason) == (auth.DENIED, auth.ACTOR_ROLE_NOT_AUTHORIZED)
    assert auth.decide("decide_approval", ctx(role="board", claims=claims)).decision == auth.ALLOWED


def test_task_mode_limits_operations() -> None:
    d = auth.decide("finish_task", ctx(mode="ask"))
    assert (d.decision, d.reason) == (auth.DENIED, auth.OPERATION_NOT_AVAILABLE_IN_TASK_MODE)
    d = auth.decide("create_task", ctx(claims=("delegation:tasks:create",), mode="planning"))
    assert d.reason == auth.OPERATION_NOT_AVAILABLE_IN_TASK_MODE
    assert auth.decide("answer_status_question", ctx(mode="ask")).decision == auth.ALLOWED


def test_control_plane_operation_is_absent_whatever_the_grants() -> None:
    everything = tuple(sorted({c for op in CATALOG.operations.values() for c in op.claims}))
    for name in CATALOG.names(CONTROL_PLANE):
        for listing in (False, True):
            d = auth.decide(name, ctx(role="board", claims=everything), listing=listing)
            assert (d.decision, d.reason) == (auth.ABSENT, auth.CONTROL_PLANE_OWNED_OPERATION)


def test_unknown_operation_is_absent() -> None:
    d = auth.decide("delete_task", ctx())
    assert (d.decision, d.reason) == (auth.ABSENT, auth.UNKNOWN_OPERATION)


def test_writes_outside_the_run_task_are_denied_but_reads_are_not() -> None:
    d = auth.decide("finish_task", ctx(task="i-0190"), target_task="i-0101")
    assert (d.decision, d.reason) == (auth.DENIED, auth.TASK_OUT_OF_SCOPE)
    assert (
        auth.decide("get_task_context", ctx(task="i-0190"), target_task="i-0101").decision
        == auth.ALLOWED
    )


def test_writes_need_a_running_run_and_the_execution_lock() -> None:
    def gate(op: str, status: str | None, lock: str | None = "run-1", task: bool = True) -> object:
        d = auth.decide_execution(
            op, run_status=status, run_id="run-1", task_lock=lock, targets_task=task
        )
        return d and (d.decision, d.reason)

    refused = (auth.DENIED, auth.RUN_NOT_ACTIVE)
    for status in ("conflict", "budget_stopped", "idle", None):
        assert gate("finish_task", status) == refused
        assert gate("create_task", status, task=False) == refused
        assert gate("get_task_context", status) is None  # looking is never refused here
    assert gate("finish_task", "running") is None
    locked = (auth.DENIED, auth.EXECUTION_LOCK_NOT_HELD)
    assert gate("finish_task", "running", lock="run-0099") == locked
    assert gate("request_approval", "running", lock=None) == locked
    assert gate("create_task", "running", lock=None, task=False) is None
    # A delegation write on another task needs only that no other run holds it.
    assert gate("reassign_task", "running", lock=None) is None
    assert gate("reassign_task", "running", lock="run-0099") == locked


def test_every_reason_is_exercised_above() -> None:
    assert set(auth.REASONS) == {
        auth.TASK_SCOPED_ALWAYS_TOOL,
        auth.REQUIRED_CLAIMS_GRANTED,
        auth.REQUIRED_CLAIM_MISSING,
        auth.ACTOR_ROLE_NOT_AUTHORIZED,
        auth.OPERATION_NOT_AVAILABLE_IN_TASK_MODE,
        auth.CONTROL_PLANE_OWNED_OPERATION,
        auth.UNKNOWN_OPERATION,
        auth.TASK_OUT_OF_SCOPE,
        auth.RUN_NOT_ACTIVE,
        auth.EXECUTION_LOCK_NOT_HELD,
    }


def test_surface_is_the_18_operations_in_both_bindings() -> None:
    fake, codex, identical = parity()
    assert fake == ALWAYS_14 + SEED_4
    assert identical and json.dumps(fake) == json.dumps(codex)
    assert "checkout_task" not in codex


def test_fake_agent_binding_publishes_schemas() -> None:
    tools = {t.operation_id: t for t in fake_agent_binding()}
    finish = tools["finish_task"]
    assert finish.description
    assert finish.input_schema["required"] == ["idempotencyKey", "summary", "task"]
    assert finish.output_schema["properties"]["revision"] == {"type": "integer"}
    assert "idempotencyKey" not in tools["get_task_context"].input_schema["properties"]


def test_codex_binding_uses_strict_parameters() -> None:
    for tool in codex_binding():
        params = tool["parameters"]
        assert tool["type"] == "function" and tool["strict"] is True and tool["description"]
        assert params["additionalProperties"] is False
        assert params["required"] == sorted(params["properties"])
    block = next(t for t in codex_binding() if t["name"] == "block_task")
    assert block["parameters"]["properties"]["blockerIds"]["type"] == ["array", "null"]


def test_exposing_checkout_breaks_parity_size_not_equality() -> None:
    broken = CATALOG.with_disposition("checkout_task", ALWAYS)
    fake, codex, identical = parity(broken)
    assert identical and len(fake) == 19 and "checkout_task" in codex


def test_pure_core_does_no_io(monkeypatch: pytest.MonkeyPatch) -> None:
    from capeval.paperclip.diff import state_diff
    from capeval.paperclip.fixtures import build_fixture

    def no_io(*args: object, **kwargs: object) -> None:
        raise AssertionError("pure code opened a file")

    monkeypatch.setattr(builtins, "open", no_io)
    c = ctx(claims=tuple(FAKE_AGENT_SEED_GRANTS))
    assert len(auth.surface(c)) == 18
    assert auth.decide("checkout_task", c).decision == auth.ABSENT
    a, b = build_fixture("baseline").state, build_fixture("blocker-graph").state
    assert state_diff(a, b)


def test_names_are_spelled_as_the_spec_spells_them() -> None:
    # A rename in the catalog and the suite together (persist_run -> persist_runs) kept
    # every count and every check green: only the spelling says it broke the contract.
    assert CATALOG.names(CONTROL_PLANE) == SPEC_CONTROL_PLANE
    assert list(CONTROL_PLANE_NAMES) == SPEC_CONTROL_PLANE
    assert (auth.EXPOSED, auth.ALLOWED, auth.DENIED, auth.ABSENT) == (
        "exposed",
        "allowed",
        "denied",
        "absent",
    )
    assert list(auth.REASONS[: len(SPEC_REASONS)]) == SPEC_REASONS
    assert INTERACTION_KINDS == (
        "confirmation",
        "checkbox",
        "questions",
        "suggest_tasks",
        "item_verdicts",
    )
    assert CONTINUATIONS == ("none", "wake_assignee", "wake_assignee_on_accept")
    assert (REPORT_JSON, REPORT_MD) == ("eval-parity-report.json", "eval-parity-report.md")
    assert DEFAULT_OUT.as_posix() == ".capeval/evidence/paperclip"


def test_a_listing_hides_what_the_task_mode_refuses() -> None:
    # What an agent is shown and what it may call must agree: in ask mode finish_task is
    # refused, so it is not listed either.
    ask = AuthContext("engineer", frozenset(), "ask", "i-0101")
    d = auth.decide("finish_task", ask, listing=True)
    assert (d.decision, d.reason) == (auth.ABSENT, auth.OPERATION_NOT_AVAILABLE_IN_TASK_MODE)
    shown = auth.surface(ask)
    assert "finish_task" not in shown and "answer_status_question" in shown
