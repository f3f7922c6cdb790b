"""The in-process mock control plane: state, effects, idempotency, audit, revisions.

Every agent call goes through `ControlPlane.call`, which asks
`authorization.decide` first: a refused call returns its decision and touches
nothing. An allowed call's arguments are then checked against the operation's
published input schema (a malformed call fails with `invalid_arguments`
instead of reaching a handler), and an allowed write must also be one the run
may make now (`authorization.decide_execution`: the run is running and holds
the task's execution lock). An allowed write runs its effect on a copy of the
state and commits only on success, so a failed write (a revision conflict, a
missing task) also leaves no trace. Successful writes bump the state revision,
store their idempotency record and append an audit record; a retry with a
known key replays the stored result without a second effect.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from capeval.core.paperclip.authorization import (
    ALLOWED,
    RUN_NOT_ACTIVE,
    AuthContext,
    Decision,
    decide,
    decide_execution,
)
from capeval.core.paperclip.catalog import (
    CATALOG,
    CONTINUATIONS,
    INTERACTION_KINDS,
    Catalog,
    Operation,
)
from capeval.paperclip.fixtures import AGENT, COMPANY, Fixture

CONTROL_PLANE_ACTOR = "control-plane"
INVALID_ARGUMENTS = "invalid_arguments"


class EffectError(Exception):
    """A write that cannot apply; `code` is what the caller sees (e.g. document_revision_conflict)."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code


@dataclass
class CallResult:
    operation: str
    decision: Decision
    ok: bool
    output: dict[str, Any] = field(default_factory=dict)
    entity_id: str | None = None
    error: str | None = None
    replayed: bool = False
    detail: str | None = None  # why, in words: the schema message, the lock holder

    def to_json(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "decision": self.decision.decision,
            "reason": self.decision.reason,
            "ok": self.ok,
            "entityId": self.entity_id,
            "error": self.error,
            "detail": self.detail,
            "replayed": self.replayed,
        }


def _next_id(state: dict[str, Any], prefix: str) -> str:
    """A fresh id for a new entity, never one the state already holds.

    Fixtures seed entities with the same ids the counter starts at (int-0001 in
    continuation-wake, act-0001 in mcp-approval-gate): a write that took the
    counter's next id silently overwrote the seeded entity (an accepted
    interaction turned pending, an expired action request gone).
    """
    seq = state.setdefault("_seq", {})
    while True:
        seq[prefix] = seq.get(prefix, 0) + 1
        # "i-9" -> i-9001 (ids the corpus evidence names for created entities); "cmt" -> cmt-0001
        if prefix[-1].isdigit():
            new_id = f"{prefix}{seq[prefix]:03d}"
        else:
            new_id = f"{prefix}-{seq[prefix]:04d}"
        if not any(isinstance(held, dict) and new_id in held for held in state.values()):
            return new_id


Handler = Callable[["ControlPlane", dict[str, Any], dict[str, Any]], tuple[str | None, Any]]


class ControlPlane:
    """One run of one agent against one fixture state."""

    def __init__(
        self,
        fixture: Fixture,
        ctx: AuthContext,
        *,
        catalog: Catalog = CATALOG,
        run_id: str = "run-0001",
    ) -> None:
        self.state: dict[str, Any] = copy.deepcopy(fixture.state)
        self.fixture = fixture
        self.ctx = ctx
        self.catalog = catalog
        self.run_id = run_id
        self.calls: list[CallResult] = []
        self._validators: dict[str, Any] = {}
        self.state["actors"][AGENT]["role"] = ctx.role

    # -- the control plane's own actions -------------------------------------------------
    def open_run(self) -> list[str]:
        """What the control plane does before the agent's first turn; returns its actions."""
        s = self.state
        actions = ["route_wake"]
        wake_id = _next_id(s, "wake")
        s["wakes"][wake_id] = {
            "agentId": AGENT,
            "taskId": self.fixture.run_task,
            "reason": self.fixture.wake_reason,
        }
        self._audit(s, CONTROL_PLANE_ACTOR, "route_wake", "wakes", wake_id)
        for run_id, run in sorted(s["runs"].items()):
            if run.get("status") == "process_lost":
                run["status"] = "reconciled"
                actions.append("reconcile_run")
                self._audit(s, CONTROL_PLANE_ACTOR, "reconcile_run", "runs", run_id)
        budget = s["budgets"].get(AGENT)
        if budget and budget["spentCents"] >= budget["limitCents"]:
            actions.append("enforce_budget")
            s["actors"][AGENT]["status"] = "paused"
            self._audit(s, CONTROL_PLANE_ACTOR, "enforce_budget", "actors", AGENT)
            s["runs"][self.run_id] = {"taskId": None, "agentId": AGENT, "status": "budget_stopped"}
            s["revision"] += 1
            return actions
        task_id = self.fixture.run_task
        if task_id is None:
            actions.append("select_work")
            self._audit(s, CONTROL_PLANE_ACTOR, "select_work", "runs", self.run_id)
            s["runs"][self.run_id] = {"taskId": None, "agentId": AGENT, "status": "idle"}
            s["revision"] += 1
            return actions
        actions.append("checkout_task")
        task = s["tasks"][task_id]
        if task["checkoutRunId"] not in (None, self.run_id):
            s["runs"][self.run_id] = {"taskId": task_id, "agentId": AGENT, "status": "conflict"}
            self._audit(s, CONTROL_PLANE_ACTOR, "checkout_task", "tasks", task_id, outcome="409")
        else:
            self._checkout(s, task_id)
            s["runs"][self.run_id] = {"taskId": task_id, "agentId": AGENT, "status": "running"}
            self._audit(s, CONTROL_PLANE_ACTOR, "checkout_task", "tasks", task_id)
        s["revision"] += 1
        return actions

    def _checkout(self, s: dict[str, Any], task_id: str) -> None:
        task = s["tasks"][task_id]
        task["checkoutRunId"] = self.run_id
        task["executionRunId"] = self.run_id
        if task["status"] in ("todo", "backlog"):
            task["status"] = "in_progress"

    def human_event(self, event: str, target: str) -> None:
        """A human acts between agent turns (e.g. accepts an interaction); not an agent call."""
        s = self.state
        if event in ("accept", "reject"):
            inter = s["interactions"][target]
            inter["status"] = "accepted" if event == "accept" else "rejected"
            if event == "accept" and inter["continuation"] in (
                "wake_assignee",
                "wake_assignee_on_accept",
            ):
                wake_id = _next_id(s, "wake")
                s["wakes"][wake_id] = {
                    "agentId": AGENT,
                    "taskId": inter["taskId"],
                    "reason": "interaction_answered",
                }
                s["tasks"][inter["taskId"]]["status"] = "in_progress"
                self._audit(s, CONTROL_PLANE_ACTOR, "route_wake", "wakes", wake_id)
            self._audit(s, "u-board-0001", f"{event}_interaction", "interactions", target)
            s["revision"] += 1
            return
        raise ValueError(f"unknown human event {event!r}")

    # -- agent calls ---------------------------------------------------------------------
    def surface(self) -> list[str]:
        from capeval.core.paperclip.authorization import surface

        return surface(self.ctx, catalog=self.catalog)

    def call(self, operation: str, args: dict[str, Any]) -> CallResult:
        """Decide, check and (when allowed) run one agent call; every attempt is recorded."""
        task = args.get("task")
        # Only a task id can be out of scope: a malformed one (a list, a number) would
        # be "another task" to `decide` and answered task_out_of_scope, hiding that the
        # call itself is malformed; left to the schema check, it is invalid_arguments.
        target = task if isinstance(task, str) else None
        decision = decide(operation, self.ctx, target_task=target, catalog=self.catalog)
        if decision.decision != ALLOWED:
            return self._record(CallResult(operation, decision, ok=False, error=decision.reason))
        op = self.catalog.get(operation)
        assert op is not None
        handler = _HANDLERS.get(operation)
        if handler is None:
            return self._record(
                CallResult(operation, decision, ok=False, error="operation_not_implemented")
            )
        args = _without_null_options(op, args)
        rejected = self._reject(op, decision, args)
        if rejected is not None:
            return self._record(rejected)
        if not op.mutates:
            return self._record(self._read(op, decision, handler, args))
        return self._record(self._write(op, decision, handler, args))

    def _reject(self, op: Operation, decision: Decision, args: dict[str, Any]) -> CallResult | None:
        """Why an allowed call cannot run as given, before anything is touched; else None.

        In order: a write without an idempotency key, arguments its published
        schema refuses, a write this run may not make now (`decide_execution`).
        """
        name = op.name
        if op.mutates and not args.get("idempotencyKey"):
            return CallResult(name, decision, ok=False, error="idempotency_key_required")
        problem = self._argument_problem(op, args)
        if problem is not None:
            out = self._failed_output(op, INVALID_ARGUMENTS)
            return CallResult(
                name, decision, ok=False, output=out, error=INVALID_ARGUMENTS, detail=problem
            )
        refusal = self._execution_refusal(op, args)
        if refusal is not None:
            gate, why = refusal
            return CallResult(name, gate, ok=False, error=gate.reason, detail=why)
        return None

    def _read(
        self, op: Operation, decision: Decision, handler: Handler, args: dict[str, Any]
    ) -> CallResult:
        try:
            _, data = handler(self, self.state, args)
        except EffectError as exc:
            out = self._failed_output(op, exc.code)
            return CallResult(op.name, decision, ok=False, output=out, error=exc.code)
        out = {"ok": True, "data": data, "error": None}
        return CallResult(op.name, decision, ok=True, output=out)

    def _write(
        self, op: Operation, decision: Decision, handler: Handler, args: dict[str, Any]
    ) -> CallResult:
        """Replay a known idempotency key, else run the effect on a draft and commit it."""
        operation, key = op.name, args["idempotencyKey"]
        known = self.state["idempotency"].get(key)
        if known is not None:
            if known["operation"] != operation:
                return CallResult(operation, decision, ok=False, error="idempotency_key_reused")
            out = dict(known["result"])
            return CallResult(
                operation,
                decision,
                ok=True,
                output=out,
                entity_id=out["entityId"],
                replayed=True,
            )
        draft = copy.deepcopy(self.state)
        try:
            entity_id, _ = handler(self, draft, args)
        except EffectError as exc:
            out = self._failed_output(op, exc.code)
            return CallResult(operation, decision, ok=False, output=out, error=exc.code)
        draft["revision"] += 1
        out = {"ok": True, "revision": draft["revision"], "entityId": entity_id, "error": None}
        draft["idempotency"][key] = {"operation": operation, "result": out, "runId": self.run_id}
        entity = _ENTITY_OF.get(operation) or str(getattr(handler, "collection", "tasks"))
        self._audit(draft, AGENT, operation, entity, entity_id)
        self.state = draft
        return CallResult(operation, decision, ok=True, output=out, entity_id=entity_id)

    def _argument_problem(self, op: Operation, args: dict[str, Any]) -> str | None:
        """The schema's complaint about `args`, or None: handlers may trust what they get.

        The input schema is the one the bindings publish, so an agent that
        follows what it was shown never sees this; one that does not gets a
        failed call it can read, not a control plane that falls over.
        """
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import best_match

        validator = self._validators.get(op.name)
        if validator is None:
            validator = self._validators[op.name] = Draft202012Validator(op.input_schema())
        error = best_match(validator.iter_errors(args))
        if error is None:
            return None
        where = ".".join(str(p) for p in error.absolute_path)
        return f"{where}: {error.message}" if where else error.message

    def _execution_refusal(
        self, op: Operation, args: dict[str, Any]
    ) -> tuple[Decision, str] | None:
        """A write this run may not make now (see `decide_execution`), with the reason in words."""
        run = self.state["runs"].get(self.run_id) or {}
        status = run.get("status")
        task_id = args.get("task") if "task" in op.properties else None
        task = self.state["tasks"].get(task_id) if isinstance(task_id, str) else None
        lock = task.get("executionRunId") if task is not None else None
        gate = decide_execution(
            op.name,
            run_status=status,
            run_id=self.run_id,
            task_lock=lock,
            targets_task=task is not None,
            catalog=self.catalog,
        )
        if gate is None:
            return None
        if gate.reason == RUN_NOT_ACTIVE:
            return gate, f"run {self.run_id} is {status or 'not open'}, not running"
        holder = f"held by {lock}" if lock else "not held by any run"
        return gate, f"task {task_id}'s execution lock is {holder}, not by {self.run_id}"

    def _failed_output(self, op: Operation, code: str) -> dict[str, Any]:
        """A failed call's typed output: the same shape a successful one has."""
        if op.mutates:
            return {
                "ok": False,
                "revision": self.state["revision"],
                "entityId": None,
                "error": code,
            }
        return {"ok": False, "data": None, "error": code}

    def _record(self, result: CallResult) -> CallResult:
        self.calls.append(result)
        return result

    def _audit(
        self,
        s: dict[str, Any],
        actor: str,
        operation: str,
        entity: str,
        entity_id: str | None,
        *,
        outcome: str = "ok",
    ) -> None:
        aid = _next_id(s, "aud")
        s["auditRecords"][aid] = {
            "actorId": actor,
            "operation": operation,
            "entity": entity,
            "entityId": entity_id,
            "runId": self.run_id,
            "outcome": outcome,
            "revision": s["revision"],
        }


def _without_null_options(op: Operation, args: dict[str, Any]) -> dict[str, Any]:
    """`args` without null optional arguments: the Codex binding's strict parameters make
    every optional property nullable, and a null there means "not given"."""
    required = set(op.input_schema()["required"])
    return {k: v for k, v in args.items() if v is not None or k in required}


# -- effects -------------------------------------------------------------------------------


def _task_of(s: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    task = s["tasks"].get(args.get("task"))
    if task is None:
        raise EffectError("task_not_found", str(args.get("task")))
    return task


def _add_comment(cp: ControlPlane, s: dict[str, Any], task: str, body: str) -> str:
    cid = _next_id(s, "cmt")
    s["comments"][cid] = {"taskId": task, "authorId": AGENT, "body": body, "runId": cp.run_id}
    return cid


def _comment(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[str, None]:
    _task_of(s, a)
    return _add_comment(cp, s, a["task"], a["body"]), None


def _status_with_comment(status: str, text_field: str) -> Handler:
    def handler(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[str, None]:
        task = _task_of(s, a)
        task["status"] = status
        if status == "blocked" and a.get("blockerIds") is not None:
            missing = [b for b in a["blockerIds"] if b not in s["tasks"]]
            if missing:
                raise EffectError("blocker_not_found", ", ".join(missing))
            task["blockerIds"] = list(a["blockerIds"])
        _add_comment(cp, s, a["task"], a[text_field])
        return a["task"], None

    return handler


def _write_document(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[str, None]:
    _task_of(s, a)
    doc_id = f"{a['task']}/{a['key']}"
    doc = s["documents"].get(doc_id)
    base = a.get("baseRevisionId")
    latest = doc["latestRevisionId"] if doc else None
    if base != latest:
        raise EffectError(
            "document_revision_conflict", f"base {base!r} is not the latest {latest!r}"
        )
    if doc is None:
        doc = {
            "taskId": a["task"],
            "key": a["key"],
            "latestRevisionId": None,
            "revisionIds": [],
            "annotations": [],
        }
        s["documents"][doc_id] = doc
    rid = _next_id(s, "rev")
    s["documentRevisions"][rid] = {
        "documentId": doc_id,
        "number": len(doc["revisionIds"]) + 1,
        "content": a["content"],
        "baseRevisionId": base,
        "runId": cp.run_id,
    }
    doc["revisionIds"] = [*doc["revisionIds"], rid]
    doc["latestRevisionId"] = rid
    return rid, None


def _request_human_input(
    cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]
) -> tuple[str, None]:
    task = _task_of(s, a)
    if a["kind"] not in INTERACTION_KINDS:
        raise EffectError("invalid_interaction_kind", a["kind"])
    if a["continuation"] not in CONTINUATIONS:
        raise EffectError("invalid_continuation", a["continuation"])
    iid = _next_id(s, "int")
    s["interactions"][iid] = {
        "taskId": a["task"],
        "kind": a["kind"],
        "prompt": a["prompt"],
        "continuation": a["continuation"],
        "status": "pending",
        "items": list(a.get("items") or []),
    }
    task["status"] = "in_review"
    return iid, None


def _register_deliverable(
    cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]
) -> tuple[str, None]:
    _task_of(s, a)
    art = _next_id(s, "art")
    s["artifacts"][art] = {
        "taskId": a["task"],
        "name": a["name"],
        "kind": a["kind"],
        "uri": a["uri"],
    }
    wp = _next_id(s, "wp")
    s["workProducts"][wp] = {
        "taskId": a["task"],
        "artifactId": art,
        "kind": a["kind"],
        "uri": a["uri"],
    }
    return art, None


def _create_task(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[str, None]:
    assignee = a.get("assigneeId")
    if assignee is not None and assignee not in s["actors"]:
        raise EffectError("assignee_not_in_company", assignee)
    parent = a.get("parentId")
    if parent is not None and parent not in s["tasks"]:
        raise EffectError("task_not_found", parent)
    blockers = list(a.get("blockerIds") or [])
    missing = [b for b in blockers if b not in s["tasks"]]
    if missing:
        raise EffectError("blocker_not_found", ", ".join(missing))
    tid = _next_id(s, "i-9")
    s["tasks"][tid] = {
        "title": a["title"],
        "status": "blocked" if blockers else "todo",
        "priority": "medium",
        "workMode": "standard",
        "parentId": parent,
        "assigneeId": assignee,
        "blockerIds": blockers,
        "checkoutRunId": None,
        "executionRunId": None,
    }
    return tid, None


def _request_approval(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[str, None]:
    task = _task_of(s, a)
    aid = _next_id(s, "apr-9")
    s["approvals"][aid] = {
        "status": "pending",
        "type": a["approvalType"],
        "taskIds": [a["task"]],
        "payload": a["payload"],
        "requestedBy": AGENT,
    }
    task["status"] = "in_review"
    return aid, None


def _set_dependencies(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[str, None]:
    _task_of(s, a)["blockerIds"] = list(a["blockerIds"])
    return a["task"], None


def _reassign(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[str, None]:
    if a["assigneeId"] not in s["actors"]:
        raise EffectError("assignee_not_in_company", a["assigneeId"])
    _task_of(s, a)["assigneeId"] = a["assigneeId"]
    return a["task"], None


def _gateway_call(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[str, None]:
    _task_of(s, a)
    tool = s["gatewayTools"].get(a["tool"])
    if tool is None:
        raise EffectError("gateway_tool_not_found", a["tool"])
    rid = _next_id(s, "act")
    status = "pending" if tool["approverRoles"] else "no_approval_path"
    s["actionRequests"][rid] = {"taskId": a["task"], "tool": a["tool"], "status": status}
    return rid, None


def _decide_approval(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[str, None]:
    target = s["approvals"].get(a["approvalId"]) or s["actionRequests"].get(a["approvalId"])
    if target is None:
        raise EffectError("approval_not_found", a["approvalId"])
    if target["status"] != "pending":
        # Only a pending request is open to a decision: re-deciding would flip an
        # approved one to rejected, and an expired or unroutable one was never askable.
        raise EffectError("approval_not_pending", f"{a['approvalId']} is {target['status']}")
    target["status"] = {"approve": "approved", "reject": "rejected"}[a["decision"]]
    return a["approvalId"], None


def _approval_comment(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[str, None]:
    cid = _next_id(s, "acm")
    s["approvalComments"][cid] = {"approvalId": a["approvalId"], "body": a["body"]}
    return cid, None


def _admin(collection: str, action: str, prefix: str) -> Handler:
    """Generic create/update on an extended-admin collection (cases, routines, skills...)."""

    def handler(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[str, None]:
        fields = dict(a.get("fields") or {})
        target = a.get("target")
        coll = s[collection]
        if action == "create":
            new_id = _next_id(s, prefix)
            coll[new_id] = {**fields, **({"target": target} if target else {})}
            return new_id, None
        if target not in coll:
            raise EffectError("not_found", f"{collection}/{target}")
        if action == "append":
            if not fields:  # `fields` is optional in the schema: say so, do not raise
                raise EffectError("fields_required", f"{collection}/{target}: nothing to append")
            key, value = next(iter(fields.items()))
            coll[target][key] = [*coll[target].get(key, []), value]
        else:
            coll[target].update(fields)
        return str(target), None  # a key of the collection: a string

    handler.collection = collection  # type: ignore[attr-defined]
    return handler


def _read_task(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[None, Any]:
    task = _task_of(s, a)
    blockers = [
        {"id": b, "status": s["tasks"][b]["status"], "assigneeId": s["tasks"][b]["assigneeId"]}
        for b in task["blockerIds"]
        if b in s["tasks"]
    ]
    children = sorted(t for t, v in s["tasks"].items() if v.get("parentId") == a["task"])
    return None, {"task": task, "blockers": blockers, "children": children}


def _history(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[None, Any]:
    _task_of(s, a)
    return None, {
        "comments": sorted(c for c, v in s["comments"].items() if v["taskId"] == a["task"]),
        "interactions": sorted(i for i, v in s["interactions"].items() if v["taskId"] == a["task"]),
    }


def _documents(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[None, Any]:
    _task_of(s, a)
    return None, {
        d: v["latestRevisionId"]
        for d, v in sorted(s["documents"].items())
        if v["taskId"] == a["task"]
    }


def _read_document(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[None, Any]:
    doc = s["documents"].get(f"{a['task']}/{a['key']}")
    if doc is None:
        raise EffectError("document_not_found", f"{a['task']}/{a['key']}")
    rev = s["documentRevisions"][doc["latestRevisionId"]]
    return None, {"revisionId": doc["latestRevisionId"], "content": rev["content"]}


def _revisions(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[None, Any]:
    doc = s["documents"].get(f"{a['task']}/{a['key']}")
    if doc is None:
        raise EffectError("document_not_found", f"{a['task']}/{a['key']}")
    return None, {"revisionIds": list(doc["revisionIds"])}


def _inspect(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[None, Any]:
    rec = s["idempotency"].get(a["key"])
    if rec is None:
        raise EffectError("operation_not_found", a["key"])
    return None, dict(rec["result"])


def _search(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[None, Any]:
    q = str(a.get("query") or "").lower()
    hits = [
        t
        for t, v in sorted(s["tasks"].items())
        if q in v["title"].lower() and (a.get("status") in (None, v["status"]))
    ]
    return None, {"taskIds": hits}


def _lister(collection: str) -> Handler:
    def handler(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[None, Any]:
        return None, {"ids": sorted(s[collection])}

    return handler


def _getter(collection: str, key: str) -> Handler:
    def handler(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[None, Any]:
        item = s[collection].get(a[key])
        if item is None:
            raise EffectError("not_found", f"{collection}/{a[key]}")
        return None, dict(item)

    return handler


def _approval_context(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[None, Any]:
    item = s["approvals"].get(a["approvalId"])
    if item is None:
        raise EffectError("not_found", f"approvals/{a['approvalId']}")
    return None, {"taskIds": list(item["taskIds"])}


def _secret_value(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[None, Any]:
    return None, {"value": "<redacted in the mock>"}


def _checkout_handler(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[str, None]:
    """Reached only through a catalog that wrongly exposes checkout: it really takes the lock."""
    _task_of(s, a)
    cp._checkout(s, a["task"])
    return a["task"], None


def _release_handler(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[str, None]:
    task = _task_of(s, a)
    task["checkoutRunId"] = None
    return a["task"], None


def _generic_api(cp: ControlPlane, s: dict[str, Any], a: dict[str, Any]) -> tuple[str, None]:
    rid = _next_id(s, "api")
    s["apiRequests"][rid] = {"method": a["method"], "path": a["path"]}
    return rid, None


_HANDLERS: dict[str, Handler] = {
    "get_task_context": _read_task,
    "get_task_history": _history,
    "list_documents": _documents,
    "read_document": _read_document,
    "list_document_revisions": _revisions,
    "inspect_operation_result": _inspect,
    "report_progress": _comment,
    "answer_status_question": _comment,
    "finish_task": _status_with_comment("done", "summary"),
    "block_task": _status_with_comment("blocked", "reason"),
    "request_review": _status_with_comment("in_review", "body"),
    "write_document": _write_document,
    "request_human_input": _request_human_input,
    "register_deliverable": _register_deliverable,
    "search_tasks": _search,
    "list_agents": _lister("actors"),
    "get_agent": _getter("actors", "agentId"),
    "list_projects": _lister("projects"),
    "list_goals": _lister("goals"),
    "create_task": _create_task,
    "request_approval": _request_approval,
    "set_dependencies": _set_dependencies,
    "reassign_task": _reassign,
    "list_approvals": _lister("approvals"),
    "get_approval": _getter("approvals", "approvalId"),
    "get_approval_context": _approval_context,
    "decide_approval": _decide_approval,
    "comment_on_approval": _approval_comment,
    "call_gateway_tool": _gateway_call,
    "create_case": _admin("cases", "create", "case-9"),
    "update_case": _admin("cases", "update", "case-9"),
    "link_case": _admin("caseLinks", "create", "cl"),
    "write_case_document": _admin("caseDocuments", "create", "cdoc"),
    "control_workspace_runtime": _admin("executionWorkspaces", "update", "ews"),
    "schedule_wake": _admin("wakes", "create", "wake"),
    "create_routine": _admin("routines", "create", "rt-9"),
    "update_routine": _admin("routines", "update", "rt-9"),
    "add_routine_trigger": _admin("routineTriggers", "create", "rtr-9"),
    "update_routine_trigger": _admin("routineTriggers", "update", "rtr-9"),
    "run_routine": _admin("routineRuns", "create", "rrun"),
    "list_company_skills": _lister("companySkills"),
    "install_company_skill": _admin("companySkills", "create", "sk-9"),
    "sync_agent_skills": _admin("actors", "append", "a"),
    "list_secret_metadata": _lister("secrets"),
    "read_secret_value": _secret_value,
    "create_project": _admin("projects", "create", "p-9"),
    "create_project_workspace": _admin("projectWorkspaces", "create", "pws"),
    "preview_company_export": _admin("exports", "create", "exp"),
    "export_company": _admin("exports", "create", "exp"),
    "create_agent_invite": _admin("invites", "create", "inv"),
    "generic_api_request": _generic_api,
    "checkout_task": _checkout_handler,
    "release_task": _release_handler,
}

_ENTITY_OF: dict[str, str] = {
    "report_progress": "comments",
    "answer_status_question": "comments",
    "write_document": "documentRevisions",
    "request_human_input": "interactions",
    "register_deliverable": "artifacts",
    "request_approval": "approvals",
    "call_gateway_tool": "actionRequests",
    "decide_approval": "approvals",
    "comment_on_approval": "approvalComments",
    "generic_api_request": "apiRequests",
}

__all__ = ["COMPANY", "CONTROL_PLANE_ACTOR", "CallResult", "ControlPlane", "EffectError"]
