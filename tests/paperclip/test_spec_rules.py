"""Spec rules no other Paperclip test pinned: names spelled as the spec spells them, what a
listing shows per task mode, failed writes that leave no trace, and the reads and gateway
effects whose breaking used to pass the whole suite."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from capeval.paperclip import authorization as auth
from capeval.paperclip import controlplane
from capeval.paperclip.authorization import AuthContext
from capeval.paperclip.catalog import CATALOG, CONTINUATIONS, INTERACTION_KINDS
from capeval.paperclip.controlplane import ControlPlane
from capeval.paperclip.derivative import Row
from capeval.paperclip.diff import state_diff
from capeval.paperclip.fixtures import build_fixture
from capeval.paperclip.policy import CONTROL_PLANE
from capeval.paperclip.report import DEFAULT_OUT, REPORT_JSON, REPORT_MD, ROWS_JSONL
from capeval.paperclip.suite import CONTROL_PLANE_NAMES, SuiteResult, run_suite
from tests.paperclip.test_mutations import gateway_files_as

# Section 4 of the conformance spec, verbatim: these names are contracts.
REPO = Path(__file__).resolve().parents[2]

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


@pytest.fixture(scope="module")
def rows(paperclip_rows: list[Row]) -> list[Row]:
    return paperclip_rows


def failing(result: SuiteResult) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in result.results:
        for f in r.failures:
            out.setdefault(r.row.id, set()).add(f.assertion_class)
    return out


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


def plane(fixture: str = "baseline", task: str = "i-0102") -> ControlPlane:
    cp = ControlPlane(
        build_fixture(fixture, run_task=task),
        AuthContext("engineer", frozenset(), "standard", task),
    )
    cp.open_run()
    return cp


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


def _answering(monkeypatch: pytest.MonkeyPatch, operation: str, lie: Any) -> None:
    """Break one read: `lie(data)` is what it answers instead of the sound data."""
    handler = controlplane._HANDLERS[operation]

    def broken(cp: Any, s: dict[str, Any], a: dict[str, Any]) -> Any:
        _, data = handler(cp, s, a)
        return None, lie(data)

    monkeypatch.setitem(controlplane._HANDLERS, operation, broken)


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
