"""The deterministic fake agent: plans derived from each row's REST evidence.

Pure planning plus a small executor. `derive_plan` walks a row's
`expectedSemantics` in order, maps every entry to a semantic operation
(`capeval.core.paperclip.semantics`) and fills its arguments; a few per-row tables
say what the evidence alone cannot (which status a PATCH means, a retry that
reuses an idempotency key, a human accepting an interaction between turns).
Every step carries what must happen to it: `allowed` or `refused`, decided
with the canonical catalog, so a suite run against a different catalog is
judged against the spec, not against itself. Wording and idempotency keys are
drawn from the fixture seed, so repeat runs are byte-identical.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from capeval.core.paperclip.authorization import (
    ACTOR_ROLE_NOT_AUTHORIZED,
    CONTROL_PLANE_OWNED_OPERATION,
    OPERATION_NOT_AVAILABLE_IN_TASK_MODE,
    REQUIRED_CLAIM_MISSING,
    TASK_OUT_OF_SCOPE,
    UNKNOWN_OPERATION,
    AuthContext,
    decide,
)
from capeval.core.paperclip.catalog import CATALOG
from capeval.core.paperclip.policy import (
    AUTHORIZATION_POLICY,
    COMBINED_MULTI_HOP,
    RESTRAINT_NO_CALL,
    claims_for_grants,
)
from capeval.core.paperclip.semantics import OTHER_TASK, classify, parse
from capeval.core.problems import Problem
from capeval.paperclip.corpus import CORPUS_FACTS
from capeval.paperclip.derivative import Row
from capeval.paperclip.fixtures import AGENT, ROLE_CLAIMS, Fixture, build_fixture

CALL = "call"  # attempted; must be allowed (or fail with `error`)
PROBE = "probe"  # attempted; must be refused (absent or denied) and change nothing
WITHHELD = "withheld"  # the case forbids it and authorization would allow it: not attempted
COVERED = "covered"  # the evidence is already realised by an earlier step's effect
HUMAN = "human"  # a human acts between turns (not an agent call)
RETRY_KEY = "$retry"  # the idempotency key of the write a step retries: it must replay
# A task PATCH whose status the evidence leaves open, in a row whose words refuse every
# status change (wk-ask-mode-01): it stands for each status-changing tool in turn.
ANY_STATUS = "any_status"

# The status a task PATCH stands for, per occurrence, for rows that make such calls.
INTENTS: dict[str, tuple[str, ...]] = {
    "ap-approval-deny-01": ("block",),
    "ap-approval-wake-01": ("finish", "finish"),
    "ap-board-approval-01": ("covered",),
    "ap-mcp-expiry-01": ("block", "covered", "covered"),
    "ap-mcp-gate-01": ("block", "covered", "covered"),
    "ap-mcp-pathmissing-01": ("block",),
    "ar-no-done-without-upload-01": ("finish",),
    "ar-upload-before-done-01": ("finish",),
    "bl-cancelled-not-resolved-01": ("block",),
    "bl-clear-01": ("block:i-0142",),
    "bl-firstclass-01": ("block:i-0103",),
    "dp-plan-doc-01": ("review", "covered"),
    "dp-plan-link-comment-01": ("review",),
    "hb-context-01": ("review",),
    "ix-confirmation-plan-01": ("covered",),
    "ix-questions-01": ("covered",),
    "ix-superseded-comment-01": ("covered",),
    "mh-blocked-handoff-01": ("block:$created",),
    "mh-children-complete-01": ("finish",),
    "mh-plan-confirm-01": ("covered",),
    "rf-api-cancel-obsolete-01": ("review", "covered"),
    "rf-api-review-changes-01": ("review", "covered", "covered"),
    "se-q-comments-01": ("review",),
    "se-q-topic-01": ("review",),
    "st-backlog-park-01": ("review", "covered"),
    "st-blocked-owner-01": ("block",),
    "st-crossteam-cancel-01": ("review", "covered"),
    "st-done-comment-01": ("finish",),
    "st-env-blocked-notdone-01": ("block", "covered", "covered"),
    "st-ephemeral-verify-01": ("review", "covered"),
    "st-handback-review-01": ("review", "covered"),
    "st-unverified-toolchain-01": ("block", "covered", "covered"),
    "su-crossteam-billing-01": ("review",),
    "wk-ask-mode-01": (ANY_STATUS,),
    "wk-plan-accepted-01": ("covered",),
    "wk-plan-directive-01": ("covered", "covered"),
    "wk-plan-directive-02": ("covered", "covered"),
    "wk-recovery-processlost-01": ("review",),
    "wk-resume-delta-01": ("review",),
    "wk-skilltest-mode-01": ("finish", "finish", "finish"),
}

# Steps the evidence implies but does not spell out: (operation, args) before/after it.
PREFIX: dict[str, tuple[tuple[str, dict[str, Any]], ...]] = {
    "ap-mcp-gate-01": (("call_gateway_tool", {}),),
    "dp-base-revision-01": (("write_document", {"key": "plan", "baseRevisionId": "$known"}),),
    "mh-children-complete-01": (("list_agents", {}),),
    "rf-api-cancel-obsolete-01": (("search_tasks", {"query": "contractor"}),),
    "rf-api-mention-discipline-01": (("list_agents", {}),),
    "rf-api-review-changes-01": (("search_tasks", {"query": "release"}),),
    "rf-art-attachment-wp-01": (("create_case", {}),),
}
SUFFIX: dict[str, tuple[tuple[str, dict[str, Any]], ...]] = {
    "ap-mcp-pathmissing-01": (("block_task", {}),),
    "bl-read-owners-01": (("report_progress", {}),),
    "se-get-issue-01": (("answer_status_question", {}),),
    "se-q-comments-01": (("answer_status_question", {}),),
    "se-q-filters-01": (("answer_status_question", {}),),
    "se-q-topic-01": (("answer_status_question", {}),),
}
# Rows whose scenario has the agent act from a context with no execution run: the
# control plane checks nothing out for them (the run stays idle), so a write the
# agent made would be one outside any run, which is what the case forbids.
NO_EXECUTION_RUN: frozenset[str] = frozenset({"co-runid-header-01"})
# A human accepts the latest interaction before the step with this operation.
HUMAN_BEFORE: dict[str, str] = {"mh-plan-confirm-01": "create_task"}
# Step n (0-based among request_human_input steps) retries step n-1 with the same key.
RETRIES: dict[str, int] = {"ix-checkbox-01": 1, "ix-stale-target-01": 1}
# Blockers for create_task, per occurrence.
CREATE_BLOCKERS: dict[str, tuple[tuple[str, ...] | None, ...]] = {
    "bl-create-blocked-01": (("i-0103",),),
    "mh-subtask-tree-01": (None, ("$created",)),
}
# Why a refused call must be refused, where the row's words say it ("denied for its role",
# "refused in planning mode", "refused as out of scope", "not an operation"): a control
# plane that refused it only for some other reason would let it through once that other
# reason is gone (a claim granted, the call aimed at the run's own task).
REFUSALS: dict[str, dict[str, str]] = {
    "ap-approval-wake-01": {"finish_task": TASK_OUT_OF_SCOPE},
    "ap-mcp-expiry-01": {"decide_approval": ACTOR_ROLE_NOT_AUTHORIZED},
    "hb-inbox-lite-01": {
        "select_work": CONTROL_PLANE_OWNED_OPERATION,
        "checkout_task": CONTROL_PLANE_OWNED_OPERATION,
        "search_tasks": REQUIRED_CLAIM_MISSING,
    },
    "ix-confirmation-plan-01": {"create_task": OPERATION_NOT_AVAILABLE_IN_TASK_MODE},
    "ix-suggest-tasks-01": {"create_task": REQUIRED_CLAIM_MISSING},
    "se-q-comments-01": {
        "request_review": TASK_OUT_OF_SCOPE,
        "report_progress": TASK_OUT_OF_SCOPE,
    },
    "st-backlog-park-01": {"delete_task": UNKNOWN_OPERATION},
    "wk-ask-mode-01": {
        "finish_task": OPERATION_NOT_AVAILABLE_IN_TASK_MODE,
        "block_task": OPERATION_NOT_AVAILABLE_IN_TASK_MODE,
        "request_review": OPERATION_NOT_AVAILABLE_IN_TASK_MODE,
        "write_document": OPERATION_NOT_AVAILABLE_IN_TASK_MODE,
        "create_task": OPERATION_NOT_AVAILABLE_IN_TASK_MODE,
    },
    "wk-plan-annotation-01": {"resolve_document_annotation": UNKNOWN_OPERATION},
    "wk-plan-directive-01": {"create_task": OPERATION_NOT_AVAILABLE_IN_TASK_MODE},
    "wk-plan-directive-02": {"create_task": OPERATION_NOT_AVAILABLE_IN_TASK_MODE},
    "wk-resume-delta-01": {"get_agent": REQUIRED_CLAIM_MISSING},
    "wk-skilltest-mode-01": {
        "finish_task": TASK_OUT_OF_SCOPE,
        "write_task_subresource": UNKNOWN_OPERATION,
    },
}
# Who a created child is for, where the row names the agent (else a coder of the company).
CREATE_ASSIGNEE: dict[str, str] = {"su-crossteam-billing-01": "a-billing-0001"}
# Expected errors (the call is allowed and must fail without a state change).
ERRORS: dict[tuple[str, int], str] = {
    ("dp-base-revision-01", 0): "document_revision_conflict",
    ("rf-api-404-report-01", 0): "task_not_found",
}
INTERACTION_KIND: dict[str, str] = {
    "ix-checkbox-01": "checkbox",
    "ix-questions-01": "questions",
    "ix-suggest-tasks-01": "suggest_tasks",
    "ix-verdicts-01": "item_verdicts",
}
CONTINUATION: dict[str, str] = {
    "ix-continuation-01": "wake_assignee",
    "ix-confirmation-plan-01": "wake_assignee_on_accept",
    "mh-plan-confirm-01": "wake_assignee_on_accept",
    "wk-plan-accepted-01": "wake_assignee_on_accept",
    "wk-plan-directive-01": "wake_assignee_on_accept",
    "wk-plan-directive-02": "wake_assignee_on_accept",
    "wk-plan-annotation-01": "wake_assignee_on_accept",
}

_PHRASES = (
    "Done: {what}. Next: hand over for review.",
    "Progress on {what}; evidence attached in the run log.",
    "Update for {what}: verified locally, nothing else pending.",
)


@dataclass(frozen=True)
class Step:
    kind: str
    operation: str
    args: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # the expectedSemantics entry, or "plan" for an implied step
    error: str | None = None  # expected error code for an allowed call
    gated: bool = False  # unlocked only by the row's grants
    refusal: str | None = None  # a probe: the reason it must be refused for (see REFUSALS)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "operation": self.operation,
            "source": self.source,
            "gated": self.gated,
            "error": self.error,
            "refusal": self.refusal,
        }


@dataclass(frozen=True)
class Plan:
    case_id: str
    fixture: str
    seed: int
    run_task: str | None
    role: str
    task_mode: str
    steps: tuple[Step, ...]

    def executed(self) -> list[Step]:
        return [s for s in self.steps if s.kind in (CALL, PROBE)]


class PlanError(ValueError):
    """A row the fake agent cannot turn into a plan that tests what the row claims.

    Carries the row field at fault, so the loader can report it like any other
    derivative problem instead of the run stopping with a traceback.
    """

    def __init__(self, case_id: str, field: str, message: str) -> None:
        super().__init__(f"{case_id}: {field}: {message}")
        self.case_id = case_id
        self.field = field
        self.message = message


def role_claims(role: str) -> frozenset[str]:
    """The claims an actor role carries; an unknown role is an error, never "no claims".

    Defaulting to no claims would quietly turn a typo into a different case
    that still passes; the loader rejects such rows, and this guards the rest.
    """
    if role not in ROLE_CLAIMS:
        raise ValueError(f"unknown actor role {role!r}; known: {', '.join(sorted(ROLE_CLAIMS))}")
    return frozenset(ROLE_CLAIMS[role])


def auth_context(row: Row, run_task: str | None, *, granted: bool) -> AuthContext:
    """The union of the actor's and (when granted) the scenario's claims."""
    claims = set(role_claims(row.actor))
    if granted:
        claims |= claims_for_grants(row.requiredGrants)
    return AuthContext(row.actor, frozenset(claims), row.taskMode, run_task)


def plan_fixture(plan: Plan) -> Fixture:
    """The fixture a plan runs on, with the plan's run task (None: no execution run).

    Every place that opens a run for a plan (suite, live scripts, MCP server)
    uses this, so they all check out the same task, or none.
    """
    fixture = build_fixture(plan.fixture, run_task=plan.run_task)
    return fixture if plan.run_task is not None else replace(fixture, run_task=None)


def _run_task(row: Row, default: str | None) -> str | None:
    if default is None or row.id in NO_EXECUTION_RUN:
        return None
    for entry in row.expectedSemantics:
        target = classify(parse(entry))
        op = CATALOG.get(target.operation)
        writes = target.operation == "" or (
            op is not None and op.mutates and op.disposition != "control_plane_owned"
        )
        if writes and target.task and target.task != OTHER_TASK:
            return target.task
    return default


def derive_plan(row: Row) -> Plan:
    fixture = build_fixture(row.fixture)
    run_task = _run_task(row, fixture.run_task)
    if run_task is not None and run_task not in fixture.state["tasks"]:
        # The control plane checks the run task out before the first turn; one the
        # fixture does not seed would stop the whole run with a KeyError.
        raise PlanError(
            row.id,
            "expectedSemantics",
            f"the evidence has the run write to task {run_task}, which fixture "
            f"{row.fixture!r} does not seed (it has {', '.join(sorted(fixture.state['tasks']))}); "
            "correct the task in the evidence or use a fixture that seeds it",
        )
    rng = random.Random(fixture.seed ^ sum(map(ord, row.id)))
    ctx = auth_context(row, run_task, granted=True)
    actor_claims = role_claims(row.actor)
    intents = list(INTENTS.get(row.id, ()))
    creates = list(CREATE_BLOCKERS.get(row.id, ()))
    raw: list[tuple[str, dict[str, Any], str, str | None]] = []  # op, args, source, intent
    for op, prefix_args in PREFIX.get(row.id, ()):
        raw.append((op, dict(prefix_args), "plan", None))
    for entry in row.expectedSemantics:
        t = classify(parse(entry))
        args: dict[str, Any] = {}
        if t.task:
            args["task"] = t.task
        op = t.operation
        if op == "":
            intent = intents.pop(0) if intents else "review"
            if intent == ANY_STATUS:
                for name in ("finish", "block", "review"):
                    status_op, extra = _intent(name)
                    raw.append((status_op, {**args, **extra}, entry, name))
                continue
            op, extra = _intent(intent)
            if op == COVERED:
                raw.append((COVERED, {"task": t.task}, entry, intent))
                continue
            args.update(extra)
        if t.resource:
            args["$resource"] = t.resource
        if t.detail:
            args["$detail"] = t.detail
        if op == "create_task":
            blockers = creates.pop(0) if creates else None
            args["blockerIds"] = list(blockers) if blockers else None
        raw.append((op, args, entry, None))
    for op, args in SUFFIX.get(row.id, ()):
        raw.append((op, dict(args), "plan", None))

    steps: list[Step] = []
    restraint = row.has(RESTRAINT_NO_CALL)
    human_before = HUMAN_BEFORE.get(row.id)
    interactions_seen = 0
    for index, (op, args, source, _intent_name) in enumerate(raw):
        if op == COVERED:
            steps.append(Step(COVERED, "", args, source))
            continue
        if human_before == op and not any(s.kind == HUMAN for s in steps):
            steps.append(Step(HUMAN, "accept", {"interaction": "$last_interaction"}, "plan"))
        full = _fill(row, op, args, run_task, rng, index)
        if op == "request_human_input":
            if RETRIES.get(row.id) == interactions_seen:
                full["idempotencyKey"] = RETRY_KEY
            interactions_seen += 1
        spec = CATALOG.get(op)
        decision = decide(op, ctx, target_task=full.get("task"))
        gated = bool(
            spec is not None
            and spec.claims
            and not set(spec.claims) <= actor_claims
            and set(spec.claims) <= claims_for_grants(row.requiredGrants)
        )
        if not decision.permitted:
            refusal = REFUSALS.get(row.id, {}).get(op)
            steps.append(Step(PROBE, op, full, source, gated=gated, refusal=refusal))
        elif restraint and spec is not None and spec.mutates:
            steps.append(Step(WITHHELD, op, full, source, gated=gated))
        else:
            steps.append(Step(CALL, op, full, source, ERRORS.get((row.id, index)), gated))
    if row.has(COMBINED_MULTI_HOP) and not restraint:
        steps = _at_least_two_hops(steps, run_task)
    _check_task_targets(row, steps, run_task)
    if row.has(AUTHORIZATION_POLICY) and not any(s.gated and s.kind == CALL for s in steps):
        ops = sorted({s.operation for s in steps if s.operation})
        raise _actor_or_mode_problem(row, steps, ctx, actor_claims) or PlanError(
            row.id,
            "expectedSemantics",
            "an authorization_policy row needs a call its requiredGrants "
            f"{list(row.requiredGrants)} unlock, but its entries map to none "
            f"(they map to: {', '.join(ops) or 'nothing'}); add the REST call the grant "
            "is for, or correct requiredGrants",
        )
    return Plan(row.id, row.fixture, fixture.seed, run_task, row.actor, row.taskMode, tuple(steps))


def _actor_or_mode_problem(
    row: Row, steps: list[Step], ctx: AuthContext, actor_claims: frozenset[str]
) -> PlanError | None:
    """Why the evidence's calls the grant is for cannot test it, when the cause is the row's
    actor or task mode rather than its evidence; None when it is the evidence.

    The evidence is the corpus's and checked against it, but actor and task mode are
    the project's: a role that already holds the grant's claims leaves nothing for the
    ungranted run to refuse, and a mode that refuses the call leaves nothing to allow.
    Blaming the evidence then sends the user to edit the one field that is right.
    """
    grant = claims_for_grants(row.requiredGrants)
    wanted = [
        (s, spec)
        for s in steps
        if (spec := CATALOG.get(s.operation)) is not None
        and spec.claims
        and set(spec.claims) <= grant
    ]
    facts = CORPUS_FACTS.get(row.id)
    if facts is not None and tuple(row.expectedSemantics) == facts.expected_semantics:
        corpus = f"; the evidence is corpus case {row.id}'s, so it is not what drifted"
    else:
        corpus = ""
    for step, spec in wanted:
        held = sorted(set(spec.claims) & actor_claims)
        if set(spec.claims) <= actor_claims:
            lacking = [
                r for r, claims in ROLE_CLAIMS.items() if not set(spec.claims) <= set(claims)
            ]
            return PlanError(
                row.id,
                "actor",
                f"role {row.actor!r} already holds {', '.join(held)}, the claim(s) requiredGrants "
                f"{list(row.requiredGrants)} unlock for {step.operation}, so without the grant "
                f"{step.operation} is still allowed and the case's authorization cannot be "
                f"tested{corpus}; write actor: {' or '.join(lacking) or '?'} (a role without "
                "those claims)",
            )
    for step, spec in wanted:
        d = decide(step.operation, ctx, target_task=step.args.get("task"))
        if d.reason == OPERATION_NOT_AVAILABLE_IN_TASK_MODE:
            return PlanError(
                row.id,
                "taskMode",
                f"taskMode {row.taskMode!r} refuses {step.operation} even with the grant "
                f"({d.reason}), so nothing the grant unlocks can be allowed{corpus}; write "
                f"taskMode: {' or '.join(spec.modes)}",
            )
        if d.reason == ACTOR_ROLE_NOT_AUTHORIZED and spec.roles is not None:
            return PlanError(
                row.id,
                "actor",
                f"role {row.actor!r} may not call {step.operation} whatever its grants "
                f"({d.reason}){corpus}; write actor: {' or '.join(spec.roles)}",
            )
    return None


def check_plans(rows: Sequence[Row], *, file: str) -> list[Problem]:
    """Every row the fake agent cannot plan for, as problems naming file, row and field.

    Rows must already have passed `check_derivative` (known fixtures and roles);
    this is the part of "runnable" only a derived plan can tell.
    """
    problems: list[Problem] = []
    for i, row in enumerate(rows):
        try:
            derive_plan(row)
        except PlanError as exc:
            problems.append(Problem(file, f"rows[{i}] ({row.id}).{exc.field}", exc.message))
    return problems


def _check_task_targets(row: Row, steps: list[Step], run_task: str | None) -> None:
    """A step on "the run's task" needs the run to have one.

    With no run task (a fixture whose wake finds no work, a row with no execution
    run) such a step would be a call on task None: it crashed the run (a `$known`
    base revision looked the task up) or was refused for its arguments, which a
    withheld write counts as the refusal the case wants, so it could not fail.
    """
    if run_task is not None:
        return
    why = "the row has no execution run" if row.id in NO_EXECUTION_RUN else "its wake finds no work"
    for step in steps:
        op = CATALOG.get(step.operation)
        needs_task = op is not None and "task" in op.required
        if step.kind in (CALL, WITHHELD) and needs_task and step.args.get("task") is None:
            raise PlanError(
                row.id,
                "fixture",
                f"fixture {row.fixture!r} opens the run with no task ({why}), "
                f"but the plan's {step.operation} acts on the run's task; use a fixture "
                "that gives the run a task, or name the task in the evidence",
            )


def _at_least_two_hops(steps: list[Step], run_task: str | None) -> list[Step]:
    """A single-call multi-hop row becomes look, act, verify: read the task, act, then
    confirm the write through its idempotency record."""
    if sum(s.kind in (CALL, PROBE) for s in steps) >= 2:
        return steps
    out = [Step(CALL, "get_task_context", {"task": run_task}, "plan"), *steps]
    if any(s.kind == CALL and (CATALOG.operations[s.operation].mutates) for s in steps):
        out.append(Step(CALL, "inspect_operation_result", {"key": "$last_key"}, "plan"))
    return out


def _intent(intent: str) -> tuple[str, dict[str, Any]]:
    name, _, arg = intent.partition(":")
    if name == "covered":
        return COVERED, {}
    if name == "block":
        return "block_task", ({"blockerIds": [arg]} if arg else {})
    return {"finish": "finish_task", "review": "request_review"}[name], {}


def _fill(
    row: Row, op: str, args: dict[str, Any], run_task: str | None, rng: random.Random, index: int
) -> dict[str, Any]:
    """Concrete arguments for one call; `$...` placeholders are resolved at execution time."""
    a = {k: v for k, v in args.items() if not k.startswith("$")}
    resource, detail = args.get("$resource"), args.get("$detail")
    task = a.get("task") or run_task
    text = rng.choice(_PHRASES).format(what=row.title.lower())
    if op in ("report_progress", "answer_status_question", "request_review"):
        a.update(task=task, body=text)
    elif op == "finish_task":
        a.update(task=task, summary=text)
    elif op == "block_task":
        a.update(task=task, reason=f"Blocked: {row.title.lower()}.")
        a.setdefault("blockerIds", None)
    elif op == "write_document":
        a.update(task=task, key=resource or a.get("key", "plan"), content=f"{row.title}\n\n{text}")
        a.setdefault("baseRevisionId", "$latest")
    elif op == "read_document":
        a.update(task=task, key=resource or "plan")
    elif op in ("get_task_context", "get_task_history", "list_documents"):
        a.setdefault("task", task)
    elif op == "request_human_input":
        a.update(
            task=task,
            kind=INTERACTION_KIND.get(row.id, "confirmation"),
            prompt=f"{row.title}?",
            continuation=CONTINUATION.get(row.id, "none"),
            items=["a", "b", "c"],
        )
    elif op == "register_deliverable":
        kind = "file"
        if detail == "work-products":
            kind = "pull_request" if "pr" in row.id.split("-") else "workspace_file"
        a.update(task=task, name="weekly.csv", kind=kind, uri=f"workspace://{task}/weekly.csv")
    elif op == "create_task":
        a.update(
            title=f"Child of {run_task}: step {index}",
            parentId=run_task,
            assigneeId=CREATE_ASSIGNEE.get(row.id, "a-coder-0001"),
        )
        a.setdefault("blockerIds", None)
    elif op == "request_approval":
        a.update(task=task, approvalType="hire_agent", payload=row.title)
    elif op in ("get_approval", "get_approval_context"):
        a["approvalId"] = resource
    elif op == "call_gateway_tool":
        a.update(task=task, tool="deploy")
    elif op == "decide_approval":
        a.update(approvalId="$last_action", decision="approve")
    elif op == "search_tasks":
        a.setdefault("query", "")
        a["status"] = None
    elif op == "get_agent":
        a["agentId"] = AGENT
    elif op in ("checkout_task", "release_task", "reassign_task", "delete_task"):
        a.setdefault("task", task)
        if op == "reassign_task":
            a["assigneeId"] = AGENT
    elif CATALOG.get(op) is not None and "fields" in CATALOG.operations[op].properties:
        a.update(target=resource, fields=_admin_fields(op, resource, detail))
    op_spec = CATALOG.get(op)
    if op_spec is not None and op_spec.mutates:
        a["idempotencyKey"] = f"{row.id}-{index:02d}-{rng.getrandbits(32):08x}"
    return a


def _admin_fields(op: str, resource: str | None, detail: str | None) -> dict[str, Any]:
    if op == "create_case":
        return {"title": "Follow-up case", "status": "open", "parentId": "case-0001"}
    if op == "update_case":
        return {"status": "resolved"}
    if op == "link_case":
        return {"caseId": resource, "taskId": "i-0101"}
    if op == "write_case_document":
        return {"caseId": resource, "key": "body", "content": "What happened and why."}
    if op == "control_workspace_runtime":
        return {"runtimeStatus": "running", "lastAction": detail}
    if op == "create_routine":
        return {"title": "Weekly report", "status": "active", "policy": "skip"}
    if op == "update_routine":
        return {"status": "paused", "policy": "queue"}
    if op == "add_routine_trigger":
        return {"routineId": resource, "kind": "webhook", "status": "active"}
    if op == "update_routine_trigger":
        return {"status": "removed"}
    if op == "run_routine":
        return {"routineId": resource, "source": "manual"}
    if op == "install_company_skill":
        return {"name": "release-notes"}
    if op == "sync_agent_skills":
        return {"skills": "sk-9001"}
    if op == "create_project":
        return {"name": "Billing"}
    if op == "create_project_workspace":
        return {"projectId": resource, "repo": "billing"}
    if op in ("preview_company_export", "export_company"):
        return {"kind": "preview" if op.startswith("preview") else "full"}
    if op == "create_agent_invite":
        return {"role": "engineer"}
    return {}
