"""What each agent write must do to the state: the typed-effect contracts (docs/paperclip.md#effects).

Pure. Written from the suite's effect lines (and, where they are silent, from
the words of the cases that rely on an effect), independently of the mock's
handlers, so a handler that forgets a field (or writes the wrong one) fails
the agent_tool_contract and combined_multi_hop checks. Also here: what the
reads a case relies on must answer, what a human's answer to an interaction
does, and how the control plane must open a run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from capeval.paperclip.diff import Change
from capeval.paperclip.fixtures import AGENT


@dataclass(frozen=True)
class FieldIs:
    entity: str
    id: str | None  # None when the write named no entity: the check then fails
    field: str
    value: Any


@dataclass(frozen=True)
class NewEntity:
    entity: str
    fields: tuple[tuple[str, Any], ...]  # (field, value) the new entity must carry


@dataclass(frozen=True)
class Unchanged:
    """An entity the write must leave exactly as it was (hb-wake-comment-01: an answer in
    one comment, "changing nothing else")."""

    entity: str
    id: str | None


Expectation = FieldIs | NewEntity | Unchanged

_ADMIN_COLLECTION = {
    "create_case": "cases",
    "update_case": "cases",
    "link_case": "caseLinks",
    "write_case_document": "caseDocuments",
    "control_workspace_runtime": "executionWorkspaces",
    "schedule_wake": "wakes",
    "create_routine": "routines",
    "update_routine": "routines",
    "add_routine_trigger": "routineTriggers",
    "update_routine_trigger": "routineTriggers",
    "run_routine": "routineRuns",
    "install_company_skill": "companySkills",
    "create_project": "projects",
    "create_project_workspace": "projectWorkspaces",
    "preview_company_export": "exports",
    "export_company": "exports",
    "create_agent_invite": "invites",
}


def write_expectations(
    op: str,
    args: dict[str, Any],
    entity_id: str | None,
    revision_before: int,
    *,
    run_id: str,
    before: dict[str, Any] | None = None,
) -> list[Expectation]:
    """Every write: revision +1, an audit record by the agent naming the run, an idempotency
    record; plus its effect. A comment carries the run it was written in (cm-runid-modify-01).

    `before` is the state the write was made on, for the effects that depend on it: a
    gateway call to a tool with an approval path opens a pending action request
    (ap-mcp-gate-01); one with no approver cannot (ap-mcp-pathmissing-01)."""
    out: list[Expectation] = [
        FieldIs("state", "-", "revision", revision_before + 1),
        NewEntity("auditRecords", (("actorId", AGENT), ("operation", op), ("runId", run_id))),
        FieldIs("idempotency", args["idempotencyKey"], "operation", op),
    ]
    task = args.get("task")
    prior = before or {}
    task_before = prior.get("tasks", {}).get(task) if isinstance(task, str) else None

    def comment(body: str) -> NewEntity:
        fields = (("taskId", task), ("body", body), ("authorId", AGENT), ("runId", run_id))
        return NewEntity("comments", fields)

    if op in ("report_progress", "answer_status_question"):
        out += [comment(args["body"]), Unchanged("tasks", task)]
    elif op == "finish_task":
        out += [FieldIs("tasks", task, "status", "done"), comment(args["summary"])]
    elif op == "block_task":
        out += [FieldIs("tasks", task, "status", "blocked"), comment(args["reason"])]
        if args.get("blockerIds") is not None:
            out.append(FieldIs("tasks", task, "blockerIds", list(args["blockerIds"])))
        elif task_before is not None:
            # no ids: the blocker set stays (bl-cancelled-not-resolved-01 "unchanged")
            out.append(FieldIs("tasks", task, "blockerIds", task_before.get("blockerIds")))
    elif op == "request_review":
        out += [FieldIs("tasks", task, "status", "in_review"), comment(args["body"])]
    elif op == "write_document":
        doc = f"{task}/{args['key']}"
        out += [
            FieldIs("documentRevisions", entity_id, "content", args["content"]),
            FieldIs("documentRevisions", entity_id, "baseRevisionId", args["baseRevisionId"]),
            FieldIs("documents", doc, "latestRevisionId", entity_id),
        ]
        if before is not None:
            # appends a revision: the earlier ones stay, and the new one is numbered after
            # them (dp-plan-doc-01 "revision 1", dp-base-revision-01 "revision 3")
            earlier = list((prior.get("documents", {}).get(doc) or {}).get("revisionIds", []))
            out += [
                FieldIs("documents", doc, "revisionIds", [*earlier, entity_id]),
                FieldIs("documentRevisions", entity_id, "number", len(earlier) + 1),
            ]
    elif op == "request_human_input":
        out += [
            FieldIs("interactions", entity_id, "taskId", task),
            FieldIs("interactions", entity_id, "status", "pending"),
            FieldIs("interactions", entity_id, "kind", args["kind"]),
            FieldIs("interactions", entity_id, "continuation", args["continuation"]),
            # what the human is asked: ix-questions-01 "holding all three", ix-verdicts-01
            # "one item per finding"
            FieldIs("interactions", entity_id, "items", list(args.get("items") or [])),
            FieldIs("tasks", task, "status", "in_review"),
        ]
    elif op == "register_deliverable":
        # ar-workproduct-pr-01: "with kind pull_request and its URL"
        kind, uri = args["kind"], args["uri"]
        out += [
            FieldIs("artifacts", entity_id, "taskId", task),
            FieldIs("artifacts", entity_id, "kind", kind),
            FieldIs("artifacts", entity_id, "uri", uri),
            NewEntity(
                "workProducts",
                (("taskId", task), ("artifactId", entity_id), ("kind", kind), ("uri", uri)),
            ),
        ]
    elif op == "create_task":
        blockers = list(args.get("blockerIds") or [])
        out += [
            # blocked because of these blockers (bl-create-blocked-01 "with i-0103 as blocker")
            FieldIs("tasks", entity_id, "status", "blocked" if blockers else "todo"),
            FieldIs("tasks", entity_id, "blockerIds", blockers),
            FieldIs("tasks", entity_id, "parentId", args.get("parentId")),
            FieldIs("tasks", entity_id, "assigneeId", args.get("assigneeId")),
        ]
    elif op == "request_approval":
        out += [
            FieldIs("approvals", entity_id, "status", "pending"),
            FieldIs("approvals", entity_id, "taskIds", [task]),
            FieldIs("tasks", task, "status", "in_review"),
        ]
    elif op == "call_gateway_tool":
        out.append(FieldIs("actionRequests", entity_id, "taskId", task))
        tool = (before or {}).get("gatewayTools", {}).get(args["tool"]) or {}
        if tool.get("approverRoles"):
            out.append(FieldIs("actionRequests", entity_id, "status", "pending"))
        elif before is not None:
            # no approver: nothing anyone could decide, so never pending
            out.append(FieldIs("actionRequests", entity_id, "status", "no_approval_path"))
    elif op == "sync_agent_skills":
        pass  # appends to a list; the revision and audit record still prove the write
    elif op in _ADMIN_COLLECTION:
        for key, value in sorted((args.get("fields") or {}).items()):
            out.append(FieldIs(_ADMIN_COLLECTION[op], entity_id, key, value))
    return out


# Writes whose whole effect the contracts above spell out (the effect lines of docs/paperclip.md#effects, the
# admin collections, the gateway). Anything else such a write changes is a side effect.
FULL_CONTRACT: frozenset[str] = frozenset(
    {
        "report_progress",
        "answer_status_question",
        "finish_task",
        "block_task",
        "request_review",
        "write_document",
        "request_human_input",
        "register_deliverable",
        "create_task",
        "request_approval",
        "call_gateway_tool",
        *_ADMIN_COLLECTION,
    }
)
_BOOKKEEPING_NEW = frozenset({"auditRecords", "idempotency"})


def side_effects(
    op: str, expectations: list[Expectation], before: dict[str, Any], diff: list[Change]
) -> list[Change]:
    """The changes a write made that its contract does not name.

    The expectations say what must change; without this, a write that also
    changed what it must not (a comment that closes another agent's task, a
    review request that files an approval) passed, because every expected
    field was right. A new entity may carry any fields in a collection the
    contract creates in; an existing one may change only the fields named
    (what an `Unchanged` covers is left to that check, so it is reported once).
    """
    if op not in FULL_CONTRACT:
        return []
    named = {(e.entity, e.id, e.field) for e in expectations if isinstance(e, FieldIs)}
    creates = {e.entity for e in expectations if isinstance(e, NewEntity)} | _BOOKKEEPING_NEW
    created = {(e.entity, e.id) for e in expectations if isinstance(e, FieldIs)}
    guarded = {(e.entity, e.id) for e in expectations if isinstance(e, Unchanged)}
    out = []
    for c in diff:
        if (c.entity, c.id) in guarded:
            continue  # its own expectation reports it ("must not change")
        if c.entity == "state":
            if c.field != "revision":
                out.append(c)
            continue
        if c.id not in (before.get(c.entity) or {}):
            if c.entity in creates or (c.entity, c.id) in created:
                continue
        elif (c.entity, c.id, c.field) in named:
            continue
        out.append(c)
    return out


def read_problems(op: str, args: dict[str, Any], data: Any, state: dict[str, Any]) -> list[str]:
    """What a read's answer got wrong about `state`, for the reads whose content a case
    relies on: the task context names each blocker with its status and owner
    (bl-read-owners-01), an approval read shows its decision (ap-approval-deny-01 "reads
    the rejection") and its linked tasks (ap-approval-wake-01), and an operation lookup
    returns the write's recorded result (the "verify" hop of a multi-hop row). The task's
    history, documents and revisions, the agent list and a search answer what the state
    holds: a read that answered nothing would otherwise pass every case that reads."""
    got = data if isinstance(data, dict) else {}
    if op == "get_task_context":
        tasks = state["tasks"]
        task = tasks.get(args.get("task")) or {}
        want = [
            {"id": b, "status": tasks[b]["status"], "assigneeId": tasks[b]["assigneeId"]}
            for b in task.get("blockerIds", [])
            if b in tasks
        ]
        shown = got.get("blockers")
        entries = [e for e in shown if isinstance(e, dict)] if isinstance(shown, list) else []
        if not all(any(e.items() <= entry.items() for entry in entries) for e in want):
            return [
                f"the context of {args.get('task')} shows blockers {shown!r}, expected {want!r}"
            ]
    elif op in ("get_approval", "get_approval_context"):
        approval = state["approvals"].get(args.get("approvalId")) or {}
        fields = ("status", "taskIds") if op == "get_approval" else ("taskIds",)
        wrong = [f for f in fields if got.get(f) != approval.get(f)]
        if wrong:
            read = {f: got.get(f) for f in wrong}
            held = {f: approval.get(f) for f in wrong}
            return [f"approval {args.get('approvalId')} read as {read!r}, expected {held!r}"]
    elif op in _TASK_READS:
        want_data = _TASK_READS[op](state, args)
        if got != want_data:
            return [f"{op} of {args.get('task')} answered {got!r}, expected {want_data!r}"]
    elif op == "list_agents":
        want_ids = sorted(state["actors"])
        if got.get("ids") != want_ids:
            return [f"list_agents answered {got.get('ids')!r}, expected {want_ids!r}"]
    elif op == "search_tasks":
        query, status = str(args.get("query") or "").lower(), args.get("status")
        want_ids = [
            t
            for t, v in sorted(state["tasks"].items())
            if query in v["title"].lower() and status in (None, v["status"])
        ]
        if got.get("taskIds") != want_ids:
            return [
                f"search_tasks for {args.get('query')!r} (status {status!r}) answered "
                f"{got.get('taskIds')!r}, expected {want_ids!r}"
            ]
    elif op == "inspect_operation_result":
        record = state["idempotency"].get(args.get("key")) or {}
        if got != record.get("result"):
            return [
                f"operation {args.get('key')!r} read as {got!r}, expected {record.get('result')!r}"
            ]
    return []


def _history(state: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    task = args.get("task")
    return {
        "comments": sorted(c for c, v in state["comments"].items() if v["taskId"] == task),
        "interactions": sorted(i for i, v in state["interactions"].items() if v["taskId"] == task),
    }


def _documents(state: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    return {
        d: v["latestRevisionId"]
        for d, v in sorted(state["documents"].items())
        if v["taskId"] == args.get("task")
    }


def _document(state: dict[str, Any], args: dict[str, Any]) -> dict[str, Any] | None:
    doc = state["documents"].get(f"{args.get('task')}/{args.get('key')}")
    if doc is None:
        return None
    latest = doc["latestRevisionId"]
    return {"revisionId": latest, "content": state["documentRevisions"][latest]["content"]}


def _revisions(state: dict[str, Any], args: dict[str, Any]) -> dict[str, Any] | None:
    doc = state["documents"].get(f"{args.get('task')}/{args.get('key')}")
    return None if doc is None else {"revisionIds": list(doc["revisionIds"])}


# The task-scoped always-tool reads and what each must answer: the tool contract of a read
# is its answer (hb-wake-comment-01 reads the comment it answers, dp-plan-* the plan).
_TASK_READS: dict[str, Callable[[dict[str, Any], dict[str, Any]], Any]] = {
    "get_task_history": _history,
    "list_documents": _documents,
    "read_document": _document,
    "list_document_revisions": _revisions,
}


WAKING_CONTINUATIONS = ("wake_assignee", "wake_assignee_on_accept")


def human_expectations(
    event: str, interaction: str, task: str, *, continuation: str, assignee: str | None
) -> list[Expectation]:
    """What a human answering an interaction does. Accepting one whose continuation wakes
    the assignee leaves a wake for the task's assignee on that task: without it there is
    no next turn (mh-plan-confirm-01's "after the owner accepts, turn two")."""
    if event == "accept":
        out: list[Expectation] = [
            FieldIs("interactions", interaction, "status", "accepted"),
            FieldIs("tasks", task, "status", "in_progress"),
        ]
        if continuation in WAKING_CONTINUATIONS:
            out.append(NewEntity("wakes", (("agentId", assignee), ("taskId", task))))
        return out
    return [FieldIs("interactions", interaction, "status", "rejected")]


def open_run_problems(
    before: dict[str, Any], after: dict[str, Any], run_task: str | None, run_id: str
) -> list[tuple[str, str]]:
    """What the control plane got wrong opening the run, as (operation, problem) pairs.

    Written from the fixture's state, not from the mock's `open_run`: a wake is
    routed to the agent for its task; a lost run is reconciled; an exhausted
    budget pauses the agent and checks nothing out; no task means no lock; a
    task another run holds stays that run's (the 409: checkout is an atomic
    lock) and this run does not run; otherwise this run takes the task's
    checkout and execution lock and runs. Without this, a control plane that
    ignored a budget or stole a held lock passed every case that checks it.
    """
    out: list[tuple[str, str]] = []
    new_wakes = [w for k, w in after["wakes"].items() if k not in before["wakes"]]
    if not any(w.get("agentId") == AGENT and w.get("taskId") == run_task for w in new_wakes):
        out.append(("route_wake", f"no wake routed to {AGENT} for task {run_task}"))
    for rid, run in sorted(before["runs"].items()):
        if (
            run.get("status") == "process_lost"
            and after["runs"][rid].get("status") == "process_lost"
        ):
            out.append(("reconcile_run", f"run {rid} was lost and is still not reconciled"))
    run_status = (after["runs"].get(run_id) or {}).get("status")
    budget = before["budgets"].get(AGENT)
    task_before = before["tasks"].get(run_task) if run_task is not None else None
    task_after = after["tasks"].get(run_task) if run_task is not None else None
    lock_before = (
        (task_before["checkoutRunId"], task_before["executionRunId"]) if task_before else None
    )
    lock_after = (task_after["checkoutRunId"], task_after["executionRunId"]) if task_after else None
    if budget and budget["spentCents"] >= budget["limitCents"]:
        if after["actors"][AGENT].get("status") != "paused":
            out.append(("enforce_budget", f"the budget is spent but {AGENT} is not paused"))
        if run_status == "running" or lock_after != lock_before:
            out.append(("enforce_budget", "the budget is spent but the run checked out work"))
    elif task_before is None:
        if run_status == "running":
            out.append(("select_work", "no task to work on, yet the run is running"))
    elif task_before["checkoutRunId"] not in (None, run_id):
        if lock_after != lock_before:
            out.append(
                (
                    "checkout_task",
                    f"task {run_task} is held by {task_before['checkoutRunId']}, yet its lock "
                    f"changed to {lock_after}",
                )
            )
        if run_status == "running":
            out.append(("checkout_task", f"task {run_task} is held by another run (409)"))
    elif lock_after != (run_id, run_id) or run_status != "running":
        out.append(
            (
                "checkout_task",
                f"task {run_task}: lock {lock_after}, run {run_status!r}; expected "
                f"{(run_id, run_id)} and a running run",
            )
        )
    return out
