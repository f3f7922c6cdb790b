"""Seeded fixtures: the control-plane state each corpus fixture starts a case from.

Pure builders: a fixture name in, a fresh JSON-shaped state out. Every fixture
is the shared `baseline` company plus a small overlay, so a case sees exactly
the situation its scenario describes (a lock held elsewhere, a cancelled
blocker, an answered interaction) rather than an empty world. The seed is a
stable hash of the fixture name; the fake agent draws its wording from it.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

COMPANY = "c-mock-0001"
AGENT = "a-test-0001"

# Grants an actor carries by role (claims). Scenario grants are added on top.
ROLE_CLAIMS: dict[str, tuple[str, ...]] = {
    "engineer": (),
    "reviewer": (),
    "manager": ("delegation:tasks:create", "discovery:agents:read"),
}


@dataclass(frozen=True)
class Fixture:
    name: str
    seed: int
    state: dict[str, Any]
    run_task: str | None  # None: the wake found no task to check out
    wake_reason: str


def fixture_seed(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


def _task(
    title: str,
    *,
    status: str = "todo",
    assignee: str | None = AGENT,
    priority: str = "medium",
    parent: str | None = None,
    blockers: tuple[str, ...] = (),
    work_mode: str = "standard",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "title": title,
        "status": status,
        "priority": priority,
        "workMode": work_mode,
        "parentId": parent,
        "assigneeId": assignee,
        "blockerIds": list(blockers),
        "checkoutRunId": None,
        "executionRunId": None,
        **extra,
    }


def baseline() -> dict[str, Any]:
    """The company every fixture starts from."""
    return {
        "revision": 1,
        "company": {COMPANY: {"name": "Mock Co", "prefix": "MCK"}},
        "actors": {
            AGENT: {"role": "engineer", "status": "active", "claims": [], "skills": []},
            "a-coder-0001": {"role": "engineer", "status": "active", "claims": [], "skills": []},
            "a-design-0001": {"role": "engineer", "status": "active", "claims": [], "skills": []},
            "a-billing-0001": {"role": "engineer", "status": "active", "claims": [], "skills": []},
            "a-lead-0001": {"role": "manager", "status": "active", "claims": [], "skills": []},
            "u-board-0001": {"role": "board", "status": "active", "claims": [], "skills": []},
        },
        "budgets": {AGENT: {"limitCents": 5000, "spentCents": 1200}},
        "goals": {"g-0001": {"title": "Ship the metrics pipeline"}},
        "tasks": {
            "i-0101": _task("Export the weekly metrics CSV", priority="high", goalId="g-0001"),
            "i-0102": _task("Add the contractor onboarding flow"),
            "i-0103": _task("Review the settings page", status="blocked", blockers=("i-0106",)),
            "i-0104": _task("Plan the billing migration", work_mode="planning"),
            "i-0105": _task(
                "Fix the flaky login test", status="in_progress", assignee="a-coder-0001"
            ),
            "i-0106": _task(
                "Settings page mockups", status="in_progress", assignee="a-design-0001"
            ),
        },
        "comments": {},
        "documents": {},
        "documentRevisions": {},
        "interactions": {},
        "approvals": {},
        "actionRequests": {},
        "gatewayTools": {"deploy": {"gated": True, "approverRoles": ["board"]}},
        "artifacts": {},
        "workProducts": {},
        "projects": {"p-0001": {"name": "Metrics"}},
        "projectWorkspaces": {},
        "executionWorkspaces": {"ews-0001": {"runtimeStatus": "stopped", "restarts": 0}},
        "cases": {"case-0001": {"title": "Login outage", "status": "open", "parentId": None}},
        "caseLinks": {},
        "caseDocuments": {},
        "routines": {"rt-0001": {"title": "Weekly digest", "status": "active", "policy": "skip"}},
        "routineTriggers": {
            "rtr-0001": {"routineId": "rt-0001", "kind": "schedule", "status": "active"}
        },
        "routineRuns": {},
        "companySkills": {"sk-0001": {"name": "sql-review"}},
        "secrets": {"sec-0001": {"name": "DEPLOY_TOKEN", "scope": "company"}},
        "exports": {},
        "invites": {},
        "wakes": {},
        "runs": {},
        "auditRecords": {},
        "idempotency": {},
        "apiRequests": {},
        "approvalComments": {},
        "_seq": {},
    }


def _comment(state: dict[str, Any], cid: str, task: str, author: str, body: str) -> None:
    state["comments"][cid] = {"taskId": task, "authorId": author, "body": body, "runId": None}


def _document(state: dict[str, Any], task: str, key: str, contents: list[str]) -> None:
    doc_id = f"{task}/{key}"
    revs: list[str] = []
    for n, content in enumerate(contents, start=1):
        rid = f"rev-{task[2:]}-{key}-{n}"
        state["documentRevisions"][rid] = {
            "documentId": doc_id,
            "number": n,
            "content": content,
            "baseRevisionId": revs[-1] if revs else None,
            "runId": None,
        }
        revs.append(rid)
    state["documents"][doc_id] = {
        "taskId": task,
        "key": key,
        "latestRevisionId": revs[-1],
        "revisionIds": revs,
        "annotations": [],
    }


def _deliverable_file(s: dict[str, Any]) -> None:
    s["tasks"]["i-0101"]["status"] = "in_progress"
    s["tasks"]["i-0101"]["workspaceFiles"] = ["reports/weekly.csv"]


def _blocker_graph(s: dict[str, Any]) -> None:
    t = s["tasks"]
    t["i-0140"] = _task("Migrate the audit table", status="blocked", blockers=("i-0144",))
    t["i-0141"] = _task("Schema freeze", status="done", assignee="a-lead-0001")
    t["i-0142"] = _task("Backfill job", status="in_progress", assignee="a-coder-0001")
    t["i-0143"] = _task("Cut over reads", status="blocked", blockers=("i-0141", "i-0142"))
    t["i-0144"] = _task("Vendor evaluation", status="cancelled", assignee="a-lead-0001")


def _checkout_conflict(s: dict[str, Any]) -> None:
    t = s["tasks"]["i-0105"]
    t.update(assigneeId=AGENT, checkoutRunId="run-0099", executionRunId="run-0099")
    s["runs"]["run-0099"] = {"taskId": "i-0105", "agentId": "a-coder-0001", "status": "running"}


def _exec(participants: list[str]) -> Callable[[dict[str, Any]], None]:
    def apply(s: dict[str, Any]) -> None:
        s["tasks"]["i-0160"] = _task(
            "Release 2.4 sign-off", status="in_review", executionParticipants=participants
        )

    return apply


def _wake_comment(s: dict[str, Any]) -> None:
    _comment(s, "cmt-9001", "i-0101", "u-board-0001", "Is the CSV going to include refunds?")


def _continuation_wake(s: dict[str, Any]) -> None:
    s["tasks"]["i-0104"]["status"] = "in_review"
    _document(s, "i-0104", "plan", ["1. freeze\n2. migrate\n3. verify\n4. switch"])
    s["interactions"]["int-0001"] = {
        "taskId": "i-0104",
        "kind": "checkbox",
        "prompt": "Which steps should be separate tasks?",
        "continuation": "wake_assignee_on_accept",
        "status": "accepted",
        "items": ["freeze", "migrate", "verify", "switch"],
        "answer": ["freeze", "migrate", "verify", "switch"],
    }


def _approval(status: str, aid: str, tasks: list[str]) -> Callable[[dict[str, Any]], None]:
    def apply(s: dict[str, Any]) -> None:
        s["approvals"][aid] = {
            "status": status,
            "type": "hire_agent",
            "taskIds": tasks,
            "payload": "contractor agent",
            "requestedBy": AGENT,
        }
        s["tasks"]["i-0102"]["status"] = "in_review"

    return apply


def _mcp_gate(s: dict[str, Any]) -> None:
    s["actionRequests"]["act-0001"] = {"taskId": "i-0101", "tool": "deploy", "status": "expired"}


def _mcp_path_missing(s: dict[str, Any]) -> None:
    s["gatewayTools"]["deploy"]["approverRoles"] = []


def _stale_plan(s: dict[str, Any]) -> None:
    _document(s, "i-0104", "plan", ["draft plan", "draft plan, reviewed"])
    s["tasks"]["i-0104"]["agentKnownRevisionId"] = "rev-0104-plan-1"


def _blocked_dedup(s: dict[str, Any]) -> None:
    _comment(s, "cmt-8001", "i-0103", AGENT, "Blocked on i-0106 (mockups); nothing to do yet.")


def _budget_critical(s: dict[str, Any]) -> None:
    s["budgets"][AGENT]["spentCents"] = s["budgets"][AGENT]["limitCents"]
    s["tasks"]["i-0131"] = _task("Tidy the changelog", priority="low")


def _patch_fault(s: dict[str, Any]) -> None:
    s["tasks"]["i-0102"]["status"] = "in_progress"
    s["runs"]["run-0041"] = {"taskId": "i-0102", "agentId": AGENT, "status": "failed_write"}


def _mention(directive: bool) -> Callable[[dict[str, Any]], None]:
    def apply(s: dict[str, Any]) -> None:
        s["tasks"]["i-0150"] = _task("Quarterly plan", assignee="a-lead-0001")
        body = "@a-test-0001 please take this over" if directive else "FYI @a-test-0001"
        _comment(s, "cmt-9150", "i-0150", "a-lead-0001", body)

    return apply


def _empty_inbox(s: dict[str, Any]) -> None:
    for task in s["tasks"].values():
        if task["assigneeId"] == AGENT:
            task["assigneeId"] = "a-coder-0001"
    s["tasks"]["i-0130"] = _task("Unowned cleanup", assignee=None)


def _stale_target(s: dict[str, Any]) -> None:
    s["interactions"]["int-0002"] = {
        "taskId": "i-0104",
        "kind": "questions",
        "prompt": "Which database?",
        "continuation": "none",
        "status": "superseded",
        "items": [],
    }


def _superseded(s: dict[str, Any]) -> None:
    s["tasks"]["i-0104"]["status"] = "in_review"
    _document(s, "i-0104", "plan", ["plan v1"])
    s["interactions"]["int-0003"] = {
        "taskId": "i-0104",
        "kind": "confirmation",
        "prompt": "Approve plan v1?",
        "continuation": "wake_assignee",
        "status": "pending",
        "items": [],
    }
    _comment(s, "cmt-9007", "i-0104", "u-board-0001", "Scope changed: keep the old API too.")


def _children_done(s: dict[str, Any]) -> None:
    t = s["tasks"]
    t["i-0104"]["status"] = "in_progress"
    t["i-0111"] = _task("Migrate invoices", status="done", parent="i-0104", assignee="a-coder-0001")
    t["i-0112"] = _task(
        "Migrate refunds", status="done", parent="i-0104", assignee="a-billing-0001"
    )


def _issue_detail(s: dict[str, Any]) -> None:
    s["tasks"]["i-0121"] = _task("Flaky test in CI on arm64", assignee="a-coder-0001")


def _single(task: str, title: str, **kw: Any) -> Callable[[dict[str, Any]], None]:
    def apply(s: dict[str, Any]) -> None:
        s["tasks"][task] = _task(title, **kw)

    return apply


def _handback(s: dict[str, Any]) -> None:
    s["tasks"]["i-0101"]["status"] = "in_progress"
    _comment(s, "cmt-9101", "i-0101", "a-lead-0001", "Why are refunds excluded?")


def _plan_annotations(s: dict[str, Any]) -> None:
    _document(s, "i-0104", "plan", ["plan with two open points"])
    s["documents"]["i-0104/plan"]["annotations"] = ["ann-0001", "ann-0002"]


def _recovery(s: dict[str, Any]) -> None:
    s["tasks"]["i-0195"] = _task("Rebuild the search index", status="in_progress")
    s["runs"]["run-0042"] = {"taskId": "i-0195", "agentId": AGENT, "status": "process_lost"}


def _dependency_wake(s: dict[str, Any]) -> None:
    s["tasks"]["i-0103"]["wakeReason"] = "blocker_updated"


# name -> (overlay, run task, wake reason)
_OVERLAYS: dict[str, tuple[Callable[[dict[str, Any]], None] | None, str | None, str]] = {
    "baseline": (None, "i-0101", "assignment"),
    "deliverable-file": (_deliverable_file, "i-0101", "assignment"),
    "blocker-graph": (_blocker_graph, "i-0143", "blocker_updated"),
    "checkout-conflict": (_checkout_conflict, "i-0105", "assignment"),
    "exec-participant": (_exec([AGENT]), "i-0160", "execution_review"),
    "exec-not-participant": (_exec(["a-lead-0001"]), "i-0160", "execution_review"),
    "wake-comment": (_wake_comment, "i-0101", "comment"),
    "continuation-wake": (_continuation_wake, "i-0104", "interaction_answered"),
    "approval-denied": (
        _approval("rejected", "apr-0002", ["i-0102"]),
        "i-0102",
        "approval_decided",
    ),
    "approval-approved": (
        _approval("approved", "apr-0001", ["i-0102", "i-0103"]),
        "i-0102",
        "approval_decided",
    ),
    "mcp-approval-gate": (_mcp_gate, "i-0101", "action_request_expired"),
    "mcp-approval-path-missing": (_mcp_path_missing, "i-0101", "assignment"),
    "stale-plan": (_stale_plan, "i-0104", "assignment"),
    "blocked-dedup": (_blocked_dedup, "i-0103", "heartbeat"),
    "budget-critical": (_budget_critical, "i-0102", "heartbeat"),
    "patch-fault-close": (_patch_fault, "i-0102", "retry"),
    "mention-directive": (_mention(True), "i-0150", "mention"),
    "mention-fyi": (_mention(False), "i-0150", "mention"),
    "empty-inbox": (_empty_inbox, None, "heartbeat"),
    "stale-target": (_stale_target, "i-0104", "interaction_superseded"),
    "superseded-interaction": (_superseded, "i-0104", "comment"),
    "children-done": (_children_done, "i-0104", "children_completed"),
    "dependency-blocked-wake": (_dependency_wake, "i-0103", "blocker_updated"),
    "issue-detail": (_issue_detail, "i-0101", "assignment"),
    "crossteam": (
        _single("i-0170", "Retire the legacy export", assignee=AGENT),
        "i-0170",
        "assignment",
    ),
    "done-evidence": (
        _single(
            "i-0102",
            "Add the contractor onboarding flow",
            status="in_progress",
            evidence="tests: 42 passed",
        ),
        "i-0102",
        "heartbeat",
    ),
    "env-blocked-task": (
        _single("i-0201", "Verify the staging deploy", status="in_progress"),
        "i-0201",
        "heartbeat",
    ),
    "toolchain-verify-task": (
        _single("i-0202", "Verify the Rust build", status="in_progress"),
        "i-0202",
        "heartbeat",
    ),
    "ephemeral-artifacts-task": (
        _single("i-0203", "Check the preview build", status="in_progress"),
        "i-0203",
        "heartbeat",
    ),
    "handback-comment": (_handback, "i-0101", "comment"),
    "plan-annotations": (_plan_annotations, "i-0104", "document_annotated"),
    "recovery-processlost": (_recovery, "i-0195", "run_recovered"),
    "skill-test-task": (
        _single(
            "i-0190", "Skill test: summarise a diff", status="in_progress", work_mode="skill_test"
        ),
        "i-0190",
        "skill_test",
    ),
}

FIXTURE_NAMES: tuple[str, ...] = tuple(sorted(_OVERLAYS))


class UnknownFixtureError(KeyError):
    pass


def build_fixture(name: str, *, run_task: str | None = None) -> Fixture:
    """A fresh state for `name`; `run_task` overrides the fixture's default task for the run."""
    if name not in _OVERLAYS:
        raise UnknownFixtureError(
            f"unknown Paperclip fixture {name!r}; known: {', '.join(FIXTURE_NAMES)}"
        )
    overlay, default_task, wake = _OVERLAYS[name]
    state = baseline()
    if overlay is not None:
        overlay(state)
    return Fixture(name, fixture_seed(name), state, run_task or default_task, wake)
