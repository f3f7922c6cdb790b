"""The semantic operation catalog: what an agent may be offered, and on what terms.

Pure data plus small pure helpers. Every operation the suite, the bindings and
the mock control plane talk about is named here once, with its disposition,
the claims that unlock it, the roles and task modes it is limited to, and the
JSON schemas the bindings publish. The REST evidence in the derivative is
mapped onto these names in `capeval.core.paperclip.semantics`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from capeval.core.paperclip.policy import ALWAYS, CONTROL_PLANE, OPTIONAL, TASK_MODES

READ = "read"
WRITE = "write"


@dataclass(frozen=True)
class Operation:
    name: str
    disposition: str
    description: str
    kind: str = READ  # read | write
    claims: tuple[str, ...] = ()
    roles: tuple[str, ...] | None = None  # None: any role
    modes: tuple[str, ...] = TASK_MODES
    properties: Mapping[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    counts_as_coverage: bool = True
    # A delegation write on someone else's task (its blockers, its assignee): the
    # run does not execute that task, so it needs only that no other run holds it,
    # where a write on the run's own task needs the run to hold its lock.
    acts_on_other_tasks: bool = False

    @property
    def mutates(self) -> bool:
        return self.kind == WRITE

    def input_schema(self) -> dict[str, Any]:
        """The schema the fake-agent binding publishes; writes also take an idempotency key."""
        props = dict(self.properties)
        required = list(self.required)
        if self.mutates:
            props["idempotencyKey"] = {
                "type": "string",
                "description": "Client key; a retry with the same key replays the first result.",
            }
            required.append("idempotencyKey")
        return {
            "type": "object",
            "properties": {k: props[k] for k in sorted(props)},
            "required": sorted(required),
            "additionalProperties": False,
        }

    def output_schema(self) -> dict[str, Any]:
        if self.mutates:
            return {
                "type": "object",
                "properties": {
                    "ok": {"type": "boolean"},
                    "revision": {"type": "integer"},
                    "entityId": {"type": ["string", "null"]},
                    "error": {"type": ["string", "null"]},
                },
                "required": ["entityId", "error", "ok", "revision"],
                "additionalProperties": False,
            }
        return {
            "type": "object",
            "properties": {
                "ok": {"type": "boolean"},
                "data": {"type": ["object", "array", "null"]},
                "error": {"type": ["string", "null"]},
            },
            "required": ["data", "error", "ok"],
            "additionalProperties": False,
        }


_S = {"type": "string"}
_S_NULL = {"type": ["string", "null"]}
_IDS = {"type": "array", "items": {"type": "string"}}
TASK = {"task": {"type": "string", "description": "Task id, e.g. i-0102."}}

INTERACTION_KINDS = ("confirmation", "checkbox", "questions", "suggest_tasks", "item_verdicts")
CONTINUATIONS = ("none", "wake_assignee", "wake_assignee_on_accept")
APPROVAL_VERBS = ("approve", "reject")  # decide_approval's decisions

_ANSWER_MODES = ("standard", "ask", "planning", "skill_test")
_NO_ASK = ("standard", "planning", "skill_test")
_WORK = ("standard", "skill_test")
_DELEGATE = ("standard", "planning")
_HANDOFF = ("standard", "planning")


def _op(name: str, disposition: str, description: str, **kw: Any) -> Operation:
    return Operation(name=name, disposition=disposition, description=description, **kw)


def _always(name: str, description: str, **kw: Any) -> Operation:
    return _op(name, ALWAYS, description, **kw)


def _optional(name: str, description: str, *claims: str, **kw: Any) -> Operation:
    return _op(name, OPTIONAL, description, claims=claims, **kw)


def _admin(name: str, description: str, claim: str, **kw: Any) -> Operation:
    props = {"target": _S_NULL, "fields": {"type": "object"}}
    return _optional(name, description, claim, kind=WRITE, properties=props, **kw)


ALWAYS_TOOLS: tuple[Operation, ...] = (
    _always(
        "get_task_context",
        "Read the task, its parent, blockers and wake reason.",
        properties=TASK,
        required=("task",),
    ),
    _always(
        "get_task_history",
        "Read the task's comments and interactions in order.",
        properties=TASK,
        required=("task",),
    ),
    _always(
        "list_documents",
        "List the task's documents with their latest revision ids.",
        properties=TASK,
        required=("task",),
    ),
    _always(
        "read_document",
        "Read one document of the task at its latest revision.",
        properties={**TASK, "key": _S},
        required=("key", "task"),
    ),
    _always(
        "list_document_revisions",
        "List every revision of one task document.",
        properties={**TASK, "key": _S},
        required=("key", "task"),
    ),
    _always(
        "report_progress",
        "Add a progress comment to the task.",
        kind=WRITE,
        modes=_ANSWER_MODES,
        properties={**TASK, "body": _S},
        required=("body", "task"),
    ),
    _always(
        "answer_status_question",
        "Answer a question about the task in a comment, changing nothing else.",
        kind=WRITE,
        modes=_ANSWER_MODES,
        properties={**TASK, "body": _S},
        required=("body", "task"),
    ),
    _always(
        "finish_task",
        "Mark the task done with a summary comment.",
        kind=WRITE,
        modes=_WORK,
        properties={**TASK, "summary": _S},
        required=("summary", "task"),
    ),
    _always(
        "block_task",
        "Mark the task blocked, optionally replacing its blockers, with a reason comment.",
        kind=WRITE,
        modes=_NO_ASK,
        properties={
            **TASK,
            "reason": _S,
            "blockerIds": {"type": ["array", "null"], "items": {"type": "string"}},
        },
        required=("reason", "task"),
    ),
    _always(
        "request_review",
        "Hand the task to review with a comment.",
        kind=WRITE,
        modes=_HANDOFF,
        properties={**TASK, "body": _S},
        required=("body", "task"),
    ),
    _always(
        "write_document",
        "Write a new revision of a task document against its latest revision.",
        kind=WRITE,
        modes=_NO_ASK,
        properties={**TASK, "key": _S, "content": _S, "baseRevisionId": _S_NULL},
        required=("baseRevisionId", "content", "key", "task"),
    ),
    _always(
        "request_human_input",
        "Open a pending interaction for a human and move the task to review.",
        kind=WRITE,
        modes=_HANDOFF,
        properties={
            **TASK,
            "kind": {"type": "string", "enum": list(INTERACTION_KINDS)},
            "prompt": _S,
            "continuation": {"type": "string", "enum": list(CONTINUATIONS)},
            "items": _IDS,
        },
        required=("continuation", "kind", "prompt", "task"),
    ),
    _always(
        "register_deliverable",
        "Attach a deliverable to the task and record its work product.",
        kind=WRITE,
        modes=_WORK,
        properties={
            **TASK,
            "name": _S,
            "kind": {"type": "string", "enum": ["file", "pull_request", "workspace_file"]},
            "uri": _S,
        },
        required=("kind", "name", "task", "uri"),
    ),
    _always(
        "inspect_operation_result",
        "Look up the recorded result of an earlier write by its idempotency key.",
        properties={"key": _S},
        required=("key",),
    ),
)

FAKE_AGENT_SEED_GRANTS: tuple[str, ...] = (
    "discovery:tasks:read",
    "discovery:agents:read",
    "delegation:tasks:create",
    "governance:approvals:request",
)

_DECIDER_ROLES = ("board", "approver", "security")

OPTIONAL_TOOLS: tuple[Operation, ...] = (
    # The four the fake-agent surface unlocks with its seed grants.
    _optional(
        "search_tasks",
        "Search the company's tasks by text and filters.",
        "discovery:tasks:read",
        properties={"query": _S, "status": _S_NULL},
        required=("query", "status"),
    ),
    _optional(
        "list_agents", "List the company's agents with role and status.", "discovery:agents:read"
    ),
    _optional(
        "create_task",
        "Create a child task; blocked when blockers are given, else todo.",
        "delegation:tasks:create",
        kind=WRITE,
        modes=("standard",),
        properties={
            "title": _S,
            "parentId": _S_NULL,
            "assigneeId": _S_NULL,
            "blockerIds": {"type": ["array", "null"], "items": {"type": "string"}},
        },
        required=("assigneeId", "blockerIds", "parentId", "title"),
    ),
    _optional(
        "request_approval",
        "Ask the board for an approval linked to the task and move it to review.",
        "governance:approvals:request",
        kind=WRITE,
        modes=_DELEGATE,
        properties={**TASK, "approvalType": _S, "payload": _S},
        required=("approvalType", "payload", "task"),
    ),
    # Discovery.
    _optional(
        "get_agent",
        "Read one agent's profile.",
        "discovery:agents:detail",
        properties={"agentId": _S},
        required=("agentId",),
    ),
    _optional("list_projects", "List the company's projects.", "discovery:projects:read"),
    _optional("list_goals", "List the company's goals.", "discovery:goals:read"),
    # Delegation.
    _optional(
        "set_dependencies",
        "Replace the blockers of another task.",
        "delegation:dependencies:write",
        kind=WRITE,
        modes=_DELEGATE,
        acts_on_other_tasks=True,
        properties={**TASK, "blockerIds": _IDS},
        required=("blockerIds", "task"),
    ),
    _optional(
        "reassign_task",
        "Give a task to another agent of the company.",
        "delegation:tasks:reassign",
        kind=WRITE,
        modes=_DELEGATE,
        acts_on_other_tasks=True,
        properties={**TASK, "assigneeId": _S},
        required=("assigneeId", "task"),
    ),
    # Governance.
    _optional(
        "list_approvals", "List approvals visible to the actor.", "governance:approvals:read"
    ),
    _optional(
        "get_approval",
        "Read one approval and its decision.",
        "governance:approvals:read",
        properties={"approvalId": _S},
        required=("approvalId",),
    ),
    _optional(
        "get_approval_context",
        "Read the tasks linked to an approval.",
        "governance:approvals:read",
        properties={"approvalId": _S},
        required=("approvalId",),
    ),
    _optional(
        "decide_approval",
        "Approve or reject a pending approval or gateway action.",
        "governance:approvals:decide",
        kind=WRITE,
        roles=_DECIDER_ROLES,
        # Only the two verbs: a free string let a typo ("approved") decide as a rejection.
        properties={"approvalId": _S, "decision": {"type": "string", "enum": list(APPROVAL_VERBS)}},
        required=("approvalId", "decision"),
    ),
    _optional(
        "comment_on_approval",
        "Comment on an approval thread.",
        "governance:approvals:comment",
        kind=WRITE,
        properties={"approvalId": _S, "body": _S},
        required=("approvalId", "body"),
    ),
    _optional(
        "call_gateway_tool",
        "Call an MCP tool through the tool gateway; gated tools open an action request.",
        "governance:gateway:call",
        kind=WRITE,
        properties={**TASK, "tool": _S},
        required=("task", "tool"),
    ),
    # Cases.
    _admin("create_case", "Create a case, optionally as a child of another.", "cases:write"),
    _admin("update_case", "Move a case through its lifecycle.", "cases:write"),
    _admin("link_case", "Link a case to a task or another case.", "cases:write"),
    _admin("write_case_document", "Upsert a case document.", "cases:write"),
    # Workspace runtime.
    _admin(
        "control_workspace_runtime",
        "Start or restart an execution workspace's runtime service.",
        "workspace:runtime",
    ),
    # Wake scheduling.
    _admin("schedule_wake", "Ask for a wake of an agent at a later time.", "wake:schedule"),
    # Routines.
    _admin("create_routine", "Create a routine.", "routines:write"),
    _admin("update_routine", "Change a routine's schedule, policy or status.", "routines:write"),
    _admin(
        "add_routine_trigger", "Add a trigger (schedule or webhook) to a routine.", "routines:write"
    ),
    _admin("update_routine_trigger", "Change or remove a routine trigger.", "routines:write"),
    _admin("run_routine", "Run a routine once by hand.", "routines:write"),
    # Company skills.
    _optional(
        "list_company_skills",
        "List the skills installed in the company and on an agent.",
        "skills:write",
    ),
    _admin(
        "install_company_skill",
        "Install a skill from the catalog into the company.",
        "skills:write",
    ),
    _admin("sync_agent_skills", "Attach the company's skills to an agent.", "skills:write"),
    # Secrets: metadata is readable with a claim, values never are.
    _optional(
        "list_secret_metadata",
        "List secret names and scopes, never values.",
        "secrets:metadata:read",
    ),
    _optional(
        "read_secret_value", "Read a secret's value.", "secrets:values:read", roles=("security",)
    ),
    # Projects, portability and administration.
    _admin("create_project", "Create a project.", "projects:write"),
    _admin("create_project_workspace", "Add a workspace to a project.", "projects:write"),
    _admin(
        "preview_company_export",
        "Preview what a company export would contain.",
        "portability:admin",
    ),
    _admin("export_company", "Export the company.", "portability:admin"),
    _admin("create_agent_invite", "Create an invite prompt for a new agent.", "portability:admin"),
    # Test-only escape hatch: reachable only with its own claim, never coverage.
    _optional(
        "generic_api_request",
        "Test-only raw API call.",
        "test:generic-api",
        kind=WRITE,
        counts_as_coverage=False,
        properties={"method": _S, "path": _S},
        required=("method", "path"),
    ),
)

# The lock operations name their task, so a catalog that wrongly hands one to an
# agent gets a call the mock can really run (and the suite must then catch).
_ON_TASK = frozenset({"checkout_task", "release_task"})

CONTROL_PLANE_OPERATIONS: tuple[Operation, ...] = tuple(
    _op(
        name,
        CONTROL_PLANE,
        description,
        kind=WRITE,
        **({"properties": TASK, "required": ("task",)} if name in _ON_TASK else {}),
    )
    for name, description in (
        ("checkout_task", "Take the task's atomic execution lock for a run."),
        ("release_task", "Release the task's execution lock."),
        ("select_work", "Pick the next task for a woken agent."),
        ("route_wake", "Route a wake to the agent that owns it."),
        ("enforce_budget", "Stop work when an actor's budget is exhausted."),
        ("append_audit_record", "Record a write in the audit log."),
        ("persist_run", "Store a run's record."),
        ("replay_run", "Replay a stored run."),
        ("schedule_blocker_wake", "Wake a blocked task's assignee when its blockers resolve."),
        ("reconcile_run", "Reconcile a run whose process was lost."),
    )
)


@dataclass(frozen=True)
class Catalog:
    """An immutable name -> operation map; tests derive broken variants with `with_operation`."""

    operations: Mapping[str, Operation]

    def get(self, name: str) -> Operation | None:
        return self.operations.get(name)

    def names(self, disposition: str | None = None) -> list[str]:
        return [
            n
            for n, op in self.operations.items()
            if disposition is None or op.disposition == disposition
        ]

    def with_operation(self, op: Operation) -> Catalog:
        ops = dict(self.operations)
        ops[op.name] = op
        return Catalog(MappingProxyType(ops))

    def with_disposition(self, name: str, disposition: str) -> Catalog:
        return self.with_operation(replace(self.operations[name], disposition=disposition))


CATALOG = Catalog(
    MappingProxyType(
        {op.name: op for op in (*ALWAYS_TOOLS, *OPTIONAL_TOOLS, *CONTROL_PLANE_OPERATIONS)}
    )
)
