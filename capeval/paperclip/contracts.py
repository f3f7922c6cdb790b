"""What each agent write must do to the state: the typed-effect contracts of section 4.

Pure. Written from the spec's effect lines, independently of the mock's
handlers, so a handler that forgets a field (or writes the wrong one) fails
the agent_tool_contract and combined_multi_hop checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


Expectation = FieldIs | NewEntity

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
    op: str, args: dict[str, Any], entity_id: str | None, revision_before: int, *, run_id: str
) -> list[Expectation]:
    """Every write: revision +1, an audit record by the agent naming the run, an idempotency
    record; plus its effect. A comment carries the run it was written in (cm-runid-modify-01)."""
    out: list[Expectation] = [
        FieldIs("state", "-", "revision", revision_before + 1),
        NewEntity("auditRecords", (("actorId", AGENT), ("operation", op), ("runId", run_id))),
        FieldIs("idempotency", args["idempotencyKey"], "operation", op),
    ]
    task = args.get("task")

    def comment(body: str) -> NewEntity:
        fields = (("taskId", task), ("body", body), ("authorId", AGENT), ("runId", run_id))
        return NewEntity("comments", fields)

    if op in ("report_progress", "answer_status_question"):
        out.append(comment(args["body"]))
    elif op == "finish_task":
        out += [FieldIs("tasks", task, "status", "done"), comment(args["summary"])]
    elif op == "block_task":
        out += [FieldIs("tasks", task, "status", "blocked"), comment(args["reason"])]
        if args.get("blockerIds") is not None:
            out.append(FieldIs("tasks", task, "blockerIds", list(args["blockerIds"])))
    elif op == "request_review":
        out += [FieldIs("tasks", task, "status", "in_review"), comment(args["body"])]
    elif op == "write_document":
        doc = f"{task}/{args['key']}"
        out += [
            FieldIs("documentRevisions", entity_id, "content", args["content"]),
            FieldIs("documentRevisions", entity_id, "baseRevisionId", args["baseRevisionId"]),
            FieldIs("documents", doc, "latestRevisionId", entity_id),
        ]
    elif op == "request_human_input":
        out += [
            FieldIs("interactions", entity_id, "status", "pending"),
            FieldIs("interactions", entity_id, "kind", args["kind"]),
            FieldIs("interactions", entity_id, "continuation", args["continuation"]),
            FieldIs("tasks", task, "status", "in_review"),
        ]
    elif op == "register_deliverable":
        out += [
            FieldIs("artifacts", entity_id, "taskId", task),
            NewEntity("workProducts", (("artifactId", entity_id), ("kind", args["kind"]))),
        ]
    elif op == "create_task":
        status = "blocked" if args.get("blockerIds") else "todo"
        out += [
            FieldIs("tasks", entity_id, "status", status),
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
    elif op == "sync_agent_skills":
        pass  # appends to a list; the revision and audit record still prove the write
    elif op in _ADMIN_COLLECTION:
        for key, value in sorted((args.get("fields") or {}).items()):
            out.append(FieldIs(_ADMIN_COLLECTION[op], entity_id, key, value))
    return out


def human_expectations(event: str, interaction: str, task: str) -> list[FieldIs]:
    if event == "accept":
        return [
            FieldIs("interactions", interaction, "status", "accepted"),
            FieldIs("tasks", task, "status", "in_progress"),
        ]
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
