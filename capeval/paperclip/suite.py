"""The conformance suite: every row's configurations, executed and judged.

An optional-tool row runs twice (granted and ungranted), every other row
once: 106 + 40 = 146 configurations. Each configuration opens a run on a fresh
fixture, lets the fake agent execute its plan through the mock control plane,
and checks the row's assertion classes plus the invariants every
configuration shares (control-plane operations absent, typed outputs). A
failure names the case, the assertion class, the operation, the
authorization decision and the field-level state diff.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from capeval.core.paperclip.authorization import ABSENT, ALLOWED, EXPOSED, RUNNING, Decision, decide
from capeval.core.paperclip.catalog import CATALOG, Catalog
from capeval.core.paperclip.policy import (
    AGENT_TOOL_CONTRACT,
    AUTHORIZATION_POLICY,
    CODEX_SAMPLE_GROUPS,
    COMBINED_MULTI_HOP,
    CONTROL_PLANE_INVARIANT,
    OPTIONAL,
    RESTRAINT_NO_CALL,
    claims_for_grants,
)
from capeval.paperclip.bindings import codex_binding, fake_agent_binding, operation_names_json
from capeval.paperclip.contracts import (
    Expectation,
    FieldIs,
    Unchanged,
    human_expectations,
    open_run_problems,
    read_problems,
    side_effects,
    write_expectations,
)
from capeval.paperclip.controlplane import CONTROL_PLANE_ACTOR, CallResult, ControlPlane
from capeval.paperclip.derivative import Row
from capeval.paperclip.diff import Change, state_diff
from capeval.paperclip.fakeagent import (
    CALL,
    HUMAN,
    PROBE,
    RETRY_KEY,
    WITHHELD,
    Plan,
    Step,
    auth_context,
    derive_plan,
    plan_fixture,
)
from capeval.paperclip.fixtures import AGENT

# The ten control-plane-owned operations, spelled out from the spec rather than
# read from the catalog, so a catalog that hands one to agents is caught.
CONTROL_PLANE_NAMES: tuple[str, ...] = (
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
)
SURFACE_SIZE = 18
_BOOKKEEPING = frozenset({"auditRecords", "idempotency", "state"})
# An expected field of the run's final state, the operation whose effect set it, and
# that operation's decision: a cumulative failure names where the field came from.
Folded = tuple[FieldIs, str, Decision]
GRANTED = "granted"
UNGRANTED = "ungranted"
SINGLE = "single"


def _diff_text(changes: list[Change], limit: int = 12) -> str:
    # Domain changes first: the audit/idempotency/revision bookkeeping every write
    # leaves would otherwise bury the change that matters.
    shown = sorted(changes, key=lambda c: c.entity in _BOOKKEEPING)
    text = "; ".join(str(c) for c in shown[:limit]) or "(empty)"
    return text + (f" (+{len(changes) - limit} more)" if len(changes) > limit else "")


@dataclass
class Failure:
    """One failed check. `state_diff` is the configuration's final diff (what the run
    left behind, as the spec asks); `step_diff` is what the failing call itself changed,
    when the failure is about one call."""

    case_id: str
    assertion_class: str
    operation: str
    decision: str
    message: str
    state_diff: list[Change] = field(default_factory=list)
    step_diff: list[Change] = field(default_factory=list)
    reason: str = ""  # why the decision is what it is (e.g. operation_not_available_in_task_mode)

    def __str__(self) -> str:
        step = ""
        if self.step_diff and self.step_diff != self.state_diff:
            step = f"; step diff: {_diff_text(self.step_diff)}"
        why = f" ({self.reason})" if self.reason else ""
        return (
            f"{self.case_id} [{self.assertion_class}] {self.operation or '-'} "
            f"decision={self.decision or '-'}{why}: {self.message}{step}; "
            f"state diff: {_diff_text(self.state_diff)}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "caseId": self.case_id,
            "assertionClass": self.assertion_class,
            "operation": self.operation,
            "decision": self.decision,
            "reason": self.reason,
            "message": self.message,
            "stateDiff": [c.to_json() for c in self.state_diff],
            "stepDiff": [c.to_json() for c in self.step_diff],
        }


@dataclass
class ConfigResult:
    row: Row
    grants: str  # granted | ungranted | single
    calls: list[tuple[Step, CallResult]]
    control_plane_actions: list[str]
    diff: list[Change]
    failures: list[Failure]

    @property
    def passed(self) -> bool:
        return not self.failures

    def headline(self) -> tuple[str | None, str]:
        """The configuration's headline call as (operation, decision), taken from one call.

        The first call the row's grant unlocks, else the first call its evidence
        asked for (not a look the fake agent took on its own), else the first
        call; (None, "none") when the configuration made no call.
        """
        head = _headline_call(self.calls)
        if head is None:
            return None, NONE
        return head[0].operation, head[1].decision.decision

    def decision(self) -> str:
        """The headline call's authorization decision (see `headline`)."""
        return self.headline()[1]

    def to_row(self) -> dict[str, Any]:
        """The JSON Lines row for this configuration."""
        operation, decision = self.headline()
        return {
            "caseId": self.row.id,
            "group": self.row.group,
            "assertionClasses": list(self.row.assertionClasses),
            "grants": self.grants,
            "requiredGrants": list(self.row.requiredGrants),
            "operation": operation,
            "operations": [s.operation for s, _ in self.calls],
            "decisions": [r.decision.decision for _, r in self.calls],
            "authorizationDecision": decision,
            "controlPlaneActions": self.control_plane_actions,
            "passed": self.passed,
            "stateDiffSize": len(self.diff),
            "stateDiff": [c.to_json() for c in self.diff],
            "failures": [f.to_json() for f in self.failures],
        }


def configurations(row: Row) -> list[str]:
    return [GRANTED, UNGRANTED] if row.primaryDisposition == OPTIONAL else [SINGLE]


def check_expectation(exp: Expectation, state: dict[str, Any], diff: list[Change]) -> str | None:
    """What `state` (reached by `diff`) gets wrong about one expectation; None when it holds.

    Shared by the suite and the live judge, so both read an effect the same way."""
    if isinstance(exp, Unchanged):
        touched = [c for c in diff if c.entity == exp.entity and c.id == exp.id]
        if touched:
            return f"{exp.entity}[{exp.id}] must not change: {'; '.join(map(str, touched))}"
        return None
    if isinstance(exp, FieldIs):
        if exp.entity == "state":
            got = state.get(exp.field)
        else:
            got = state.get(exp.entity, {}).get(exp.id, {}).get(exp.field, "<missing>")
        if got != exp.value:
            return f"{exp.entity}[{exp.id}].{exp.field} is {got!r}, expected {exp.value!r}"
        return None
    new_ids = {c.id for c in diff if c.entity == exp.entity and c.before is None}
    for eid in sorted(new_ids):
        entity = state[exp.entity].get(eid, {})
        if all(entity.get(k) == v for k, v in exp.fields):
            return None
    return f"no new {exp.entity} entry with {dict(exp.fields)!r}"


def run_configuration(
    row: Row, grants: str, *, catalog: Catalog = CATALOG, plan: Plan | None = None
) -> ConfigResult:
    plan = plan or derive_plan(row)
    fixture = plan_fixture(plan)
    ctx = auth_context(row, plan.run_task, granted=grants != UNGRANTED)
    cp = ControlPlane(fixture, ctx, catalog=catalog)
    actions = cp.open_run()
    start = copy.deepcopy(cp.state)
    opened = open_run_problems(fixture.state, start, fixture.run_task, cp.run_id)
    failures: list[Failure] = []
    calls: list[tuple[Step, CallResult]] = []
    memory: dict[str, Any] = {}
    folded: dict[tuple[str, str | None, str], Folded] = {}  # what the run must end with
    first_results: dict[str, dict[str, Any]] = {}  # idempotency key -> first write's output

    def fail(
        cls: str, op: str, decision: str | Decision, message: str, step_diff: list[Change]
    ) -> None:
        # The final diff is known only at the end; it is filled in below. A Decision
        # brings its reason along: "denied" alone does not say what would lift it.
        verdict, reason = (
            (decision.decision, decision.reason)
            if isinstance(decision, Decision)
            else (decision, "")
        )
        failures.append(Failure(row.id, cls, op, verdict, message, [], step_diff, reason))

    steps = [s for s in plan.steps if s.kind in (CALL, PROBE, HUMAN)]
    if grants == UNGRANTED:
        # Without the grant the agent can only try what the grant would unlock.
        steps = [s for s in steps if s.gated]
    for step in steps:
        if step.kind == HUMAN:
            target = memory.get("interaction")
            # A human answers the interaction a request_human_input call opened: the
            # failure is about that call (its decision), or says none was made.
            asking = _asking_call(calls, target)
            if target is None or target not in cp.state["interactions"]:
                # A wrong id from request_human_input is this case's failure, not a crash.
                what = "no interaction" if target is None else f"no interaction {target}"
                fail(COMBINED_MULTI_HOP, f"human:{step.operation}", asking, f"{what} to accept", [])
                continue
            asked = cp.state["interactions"][target]
            task, continuation = asked["taskId"], asked["continuation"]
            assignee = (cp.state["tasks"].get(task) or {}).get("assigneeId")
            before = copy.deepcopy(cp.state)
            cp.human_event(step.operation, target)
            step_diff = state_diff(before, cp.state)
            for e in human_expectations(
                step.operation, target, task, continuation=continuation, assignee=assignee
            ):
                if isinstance(e, FieldIs):
                    folded[(e.entity, e.id, e.field)] = (e, f"human:{step.operation}", asking)
                else:
                    problem = check_expectation(e, cp.state, step_diff)
                    if problem:
                        fail(
                            COMBINED_MULTI_HOP,
                            f"human:{step.operation}",
                            asking,
                            problem,
                            step_diff,
                        )
            continue
        before = copy.deepcopy(cp.state)
        looked = len(calls)
        args = resolve_args(step.args, cp, memory, calls, look=step.kind == CALL)
        if len(calls) > looked:
            # resolve_args made real calls (the look before a document write): they are
            # reads like any other and get the same checks, else a look could write.
            _check_looks(
                row, grants, calls[looked:], state_diff(before, cp.state), catalog, fail, cp.state
            )
            before = copy.deepcopy(cp.state)
        res = cp.call(step.operation, args)
        calls.append((step, res))
        step_diff = state_diff(before, cp.state)
        decision = res.decision.decision
        expect_refused = step.kind == PROBE or (grants == UNGRANTED and step.gated)
        cls = class_for(row, step, grants)
        # What a call did (or showed) is the tool contract's, where the row has it.
        contract_cls = AGENT_TOOL_CONTRACT if row.has(AGENT_TOOL_CONTRACT) else cls
        if expect_refused:
            if res.decision.permitted:
                fail(
                    cls,
                    step.operation,
                    res.decision,
                    "a forbidden operation was allowed",
                    step_diff,
                )
            elif step_diff:
                fail(cls, step.operation, res.decision, "a refused call changed state", step_diff)
            elif (
                step.refusal is not None
                and grants != UNGRANTED  # without the grant a missing claim may come first
                and res.decision.reason != step.refusal
            ):
                # The row says why it is refused; refused for another reason, the call
                # would go through once that reason is gone (a grant, another task).
                fail(
                    AUTHORIZATION_POLICY if row.has(AUTHORIZATION_POLICY) else cls,
                    step.operation,
                    res.decision,
                    f"refused as {res.decision.reason}, but the case says {step.refusal}",
                    step_diff,
                )
            continue
        op = catalog.get(step.operation)
        if decision != ALLOWED:
            if not _restraint_write(row, step, catalog):  # that check reports it, by its name
                fail(
                    cls,
                    step.operation,
                    res.decision,
                    f"expected allowed ({res.decision.reason})",
                    [],
                )
            continue
        if op is not None:
            from jsonschema import Draft202012Validator

            errors = list(Draft202012Validator(op.output_schema()).iter_errors(res.output))
            if errors:
                fail(
                    cls,
                    step.operation,
                    res.decision,
                    f"untyped output: {errors[0].message}",
                    step_diff,
                )
        if step.error is not None:
            if res.error != step.error or step_diff:
                fail(
                    cls,
                    step.operation,
                    res.decision,
                    f"expected error {step.error}, got {res.error}",
                    step_diff,
                )
            continue
        if not res.ok:
            fail(cls, step.operation, res.decision, f"call failed: {res.error}", step_diff)
            continue
        raw_key = args.get("idempotencyKey")
        key = raw_key if isinstance(raw_key, str) else None
        first = first_results.get(key) if key is not None else None
        if step.args.get("idempotencyKey") == RETRY_KEY and (
            not res.replayed or res.output != first
        ):
            # The case is that a retry with the same key replays the first result: a
            # second effect (a duplicate interaction) would otherwise pass as a write.
            fail(
                cls,
                step.operation,
                res.decision,
                f"a retry with idempotency key {key!r} did not replay the first result "
                f"{first!r}: got {res.output!r}",
                step_diff,
            )
            continue
        remember_result(step.operation, args, res, memory)
        if key is not None and not res.replayed:
            first_results[key] = res.output
        if op is None or not op.mutates or res.replayed:
            if step_diff:
                fail(
                    cls, step.operation, res.decision, "a read or a replay changed state", step_diff
                )
            if op is not None and not op.mutates:
                for problem in read_problems(
                    step.operation, args, res.output.get("data"), cp.state
                ):
                    fail(contract_cls, step.operation, res.decision, problem, step_diff)
            continue
        expectations = write_expectations(
            step.operation, args, res.entity_id, before["revision"], run_id=cp.run_id, before=before
        )
        for exp in expectations:
            problem = check_expectation(exp, cp.state, step_diff)
            if problem:
                fail(contract_cls, step.operation, res.decision, problem, step_diff)
            if isinstance(exp, FieldIs) and exp.entity not in ("state", "idempotency"):
                folded[(exp.entity, exp.id, exp.field)] = (exp, step.operation, res.decision)
        extra = side_effects(step.operation, expectations, before, step_diff)
        if extra:
            fail(
                contract_cls,
                step.operation,
                res.decision,
                f"the write changed what its effect does not: {_diff_text(extra, limit=4)}",
                step_diff,
            )

    diff = state_diff(start, cp.state)
    if row.has(CONTROL_PLANE_INVARIANT):
        for operation, problem in opened:
            # The control plane's own action: for the agent it is absent (and says why).
            fail(
                CONTROL_PLANE_INVARIANT,
                operation,
                decide(operation, ctx, catalog=catalog),
                f"opening the run: {problem}",
                [],
            )
        _check_gate(plan, cp, memory, fail)
    _check_shared(row, cp, ctx, catalog, diff, fail)
    _check_classes(row, grants, plan, calls, diff, cp, actions, folded, fail, catalog)
    for f in failures:
        f.state_diff = diff
    return ConfigResult(row, grants, calls, actions, diff, failures)


def _check_looks(
    row: Row,
    grants: str,
    looks: list[tuple[Step, CallResult]],
    diff: list[Change],
    catalog: Catalog,
    fail: Callable[..., None],
    cp_state: dict[str, Any],
) -> None:
    """The reads the fake agent made on its own to fill a step's arguments: typed output,
    a true answer (the write that follows relies on it), and no state change (`diff` is
    what they changed together)."""
    from jsonschema import Draft202012Validator

    for step, res in looks:
        decision = res.decision
        cls = class_for(row, step, grants)
        op = catalog.get(step.operation)
        if decision.decision == ALLOWED and op is not None:
            errors = list(Draft202012Validator(op.output_schema()).iter_errors(res.output))
            if errors:
                fail(cls, step.operation, decision, f"untyped output: {errors[0].message}", diff)
            elif res.ok:
                data = res.output.get("data")
                for problem in read_problems(step.operation, step.args, data, cp_state):
                    fail(cls, step.operation, decision, problem, diff)
        if diff:
            fail(cls, step.operation, decision, "a read or a replay changed state", diff)


def gate_probes(
    plan: Plan, cp: ControlPlane, memory: dict[str, Any]
) -> list[tuple[str, CallResult, list[Change]]]:
    """With no running run (a 409, a budget stop, an idle wake), each write the agent
    withheld, tried on a copy of the control plane: (operation, result, what it changed).

    The fake agent never makes them (restraint), so without this a control plane
    that let writes through after a 409 passed every case. A copy: not an agent
    call, nothing recorded, the run untouched. Empty while the run is running.
    The live control-plane server journals the same probes when it opens a run.
    """
    status = (cp.state["runs"].get(cp.run_id) or {}).get("status")
    if status == RUNNING:
        return []
    out = []
    for step in plan.steps:
        if step.kind != WITHHELD:
            continue
        shadow = copy.copy(cp)  # same catalog and context; its own state and call log
        shadow.state, shadow.calls = copy.deepcopy(cp.state), []
        res = shadow.call(step.operation, resolve_args(step.args, shadow, memory, [], look=False))
        out.append((step.operation, res, state_diff(cp.state, shadow.state)))
    return out


def _check_gate(
    plan: Plan, cp: ControlPlane, memory: dict[str, Any], fail: Callable[..., None]
) -> None:
    """The control plane must refuse the writes the agent withheld (`gate_probes`)."""
    status = (cp.state["runs"].get(cp.run_id) or {}).get("status")
    for operation, res, changed in gate_probes(plan, cp, memory):
        if res.ok or changed:  # refused, whatever the reason, is what the case needs
            fail(
                CONTROL_PLANE_INVARIANT,
                operation,
                res.decision,
                f"run {cp.run_id} is {status or 'not open'}, yet the control plane would "
                f"let the agent's withheld write through ({res.error or 'ok'})",
                changed,
            )


def _restraint_write(row: Row, step: Step, catalog: Catalog) -> bool:
    """A write the agent itself meant to make (not a probe) in a restraint row."""
    op = catalog.get(step.operation)
    return row.has(RESTRAINT_NO_CALL) and step.kind == CALL and op is not None and op.mutates


def class_for(row: Row, step: Step, grants: str) -> str:
    if step.gated and row.has(AUTHORIZATION_POLICY):
        return AUTHORIZATION_POLICY
    if step.operation in CONTROL_PLANE_NAMES and row.has(CONTROL_PLANE_INVARIANT):
        return CONTROL_PLANE_INVARIANT
    if step.kind == PROBE and row.has(COMBINED_MULTI_HOP):
        return COMBINED_MULTI_HOP
    return row.assertionClasses[0]


def resolve_args(
    args: dict[str, Any],
    cp: ControlPlane,
    memory: dict[str, Any],
    calls: list[tuple[Step, CallResult]],
    *,
    look: bool = True,
) -> dict[str, Any]:
    """A plan step's arguments with its placeholders (`$latest`, `$known`, ...) filled in.

    Plans are derived from rows alone, before a run has revisions or created
    ids; the run so far (state, remembered results) supplies them. Shared by
    the suite and the live matrix's scripted turns, so both send the same calls.
    """
    out = dict(args)
    if out.get("baseRevisionId") == "$latest" and not look:
        out["baseRevisionId"] = None  # a call expected to be refused: no point looking first
    if out.get("baseRevisionId") == "$latest":
        # The agent looks before it writes: a real list_documents call, recorded.
        listing = cp.call("list_documents", {"task": out["task"]})
        calls.append((Step(CALL, "list_documents", {"task": out["task"]}, "plan"), listing))
        data = listing.output.get("data") if listing.ok else None
        docs = data if isinstance(data, dict) else {}  # an untyped answer is checked, not used
        out["baseRevisionId"] = docs.get(f"{out['task']}/{out['key']}")
    if out.get("baseRevisionId") == "$known":
        out["baseRevisionId"] = cp.state["tasks"][out["task"]].get("agentKnownRevisionId")
    if out.get("approvalId") == "$last_action":
        out["approvalId"] = memory.get("action", "act-0001")
    if out.get("key") == "$last_key":
        out["key"] = memory.get("last_key", "missing-key")
    if out.get("idempotencyKey") == RETRY_KEY:
        out["idempotencyKey"] = memory.get("interaction_key", "missing-key")
    if out.get("blockerIds"):
        out["blockerIds"] = [
            memory.get("created", b) if b == "$created" else b for b in out["blockerIds"]
        ]
    return out


def remember_result(op: str, args: dict[str, Any], res: CallResult, memory: dict[str, Any]) -> None:
    """Keep what later placeholders refer to (created ids, idempotency keys)."""
    if "idempotencyKey" in args:
        memory["last_key"] = args["idempotencyKey"]
    if op == "create_task":
        memory["created"] = res.entity_id
    elif op == "call_gateway_tool":
        memory["action"] = res.entity_id
    elif op == "request_human_input":
        memory["interaction"] = res.entity_id
        memory["interaction_key"] = args["idempotencyKey"]


def invariant_class(row: Row) -> str:
    """The class a failure of an invariant every configuration shares is filed under.

    Control-plane operations must be absent for every row, but a failure must
    carry a class its row has: the row's own `control_plane_invariant`, else its
    `authorization_policy` (an operation exposed against its disposition), else
    the row's first class.
    """
    for cls in (CONTROL_PLANE_INVARIANT, AUTHORIZATION_POLICY):
        if row.has(cls):
            return cls
    return row.assertionClasses[0]


def _check_shared(
    row: Row,
    cp: ControlPlane,
    ctx: Any,
    catalog: Catalog,
    diff: list[Change],
    fail: Callable[..., None],
) -> None:
    shown = set(cp.surface())
    cls = invariant_class(row)
    for name in CONTROL_PLANE_NAMES:
        d = decide(name, ctx, catalog=catalog)
        if d.decision != ABSENT or name in shown:
            fail(cls, name, d, "a control-plane-owned operation is reachable by the agent", diff)
    for rec in cp.state["auditRecords"].values():
        if rec["actorId"] == AGENT and rec["operation"] in CONTROL_PLANE_NAMES:
            fail(
                cls,
                rec["operation"],
                ALLOWED,
                "the agent performed a control-plane action",
                diff,
            )


NONE = "none"  # the decision of a call that was never made
NOT_ATTEMPTED = "not_attempted"


def _not_attempted(operation: str) -> Decision:
    return Decision(operation, NONE, NOT_ATTEMPTED)


def _headline_call(calls: list[tuple[Step, CallResult]]) -> tuple[Step, CallResult] | None:
    """The call that stands for a configuration: the first its grant unlocks, else the
    first its evidence asked for (not a look the fake agent took on its own), else the
    first; None when it made no call."""
    for pick in (
        [c for c in calls if c[0].gated],
        [c for c in calls if c[0].source != "plan"],
        calls,
    ):
        if pick:
            return pick[0]
    return None


def _subject(calls: list[tuple[Step, CallResult]], plan: Plan) -> tuple[str, Decision]:
    """What a failure about the configuration as a whole is about: the headline call and
    its decision, or (no call made) the plan's first operation, not attempted."""
    head = _headline_call(calls)
    if head is not None:
        return head[0].operation, head[1].decision
    first = next((s.operation for s in plan.steps if s.kind in (CALL, PROBE, WITHHELD)), "")
    return first, _not_attempted(first)


def _asking_call(calls: list[tuple[Step, CallResult]], target: Any) -> Decision:
    """The decision of the request_human_input call a human event answers."""
    asks = [r for s, r in calls if s.operation == "request_human_input"]
    match = [r for r in asks if r.entity_id == target] or asks[-1:]
    return match[0].decision if match else _not_attempted("request_human_input")


def _grant_operation(row: Row, plan: Plan, catalog: Catalog) -> str:
    """The operation the row's grant is for: its plan's first gated step, else the first
    catalog operation the grant's claims unlock."""
    step = next((s for s in plan.steps if s.gated), None)
    if step is not None:
        return step.operation
    claims = claims_for_grants(row.requiredGrants)
    return next(
        (n for n, op in catalog.operations.items() if op.claims and set(op.claims) <= claims),
        "",
    )


def _check_classes(
    row: Row,
    grants: str,
    plan: Plan,
    calls: list[tuple[Step, CallResult]],
    diff: list[Change],
    cp: ControlPlane,
    actions: list[str],
    folded: dict[tuple[str, str | None, str], Folded],
    fail: Callable[..., None],
    catalog: Catalog = CATALOG,
) -> None:
    """The row's assertion classes over the whole configuration. Each failure names the
    operation it is about and that call's decision (with its reason), so "denied" in ask
    mode reads differently from a missing grant; a call never made is `none`."""
    executed = [(s, r) for s, r in calls if s.source != "plan" or s.operation != "list_documents"]
    subject = _subject(calls, plan)
    if row.has(AUTHORIZATION_POLICY):
        gated = [(s, r) for s, r in calls if s.gated]
        if gated:
            unlocked = next(
                ((s.operation, r.decision) for s, r in gated if s.kind == CALL),
                (gated[0][0].operation, gated[0][1].decision),
            )
        else:
            op_name = _grant_operation(row, plan, catalog)
            unlocked = (op_name, _not_attempted(op_name))
            fail(AUTHORIZATION_POLICY, *unlocked, "no call exercised the row's grant", diff)
        if grants == GRANTED:
            for s, r in gated:
                if s.kind == CALL and r.decision.decision != ALLOWED:
                    fail(
                        AUTHORIZATION_POLICY,
                        s.operation,
                        r.decision,
                        "granted but not allowed",
                        diff,
                    )
            if not diff:
                fail(
                    AUTHORIZATION_POLICY,
                    *unlocked,
                    "granted configuration did not mutate state",
                    diff,
                )
        elif grants == UNGRANTED and diff:
            fail(
                AUTHORIZATION_POLICY,
                *(_first_write(calls) or unlocked),
                "ungranted configuration changed state",
                diff,
            )
    if row.has(CONTROL_PLANE_INVARIANT):
        cp_records = [
            r for r in cp.state["auditRecords"].values() if r["actorId"] == CONTROL_PLANE_ACTOR
        ]
        done = {r["operation"] for r in cp_records}
        if "route_wake" not in done or not (
            {"checkout_task", "enforce_budget", "select_work"} & done
        ):
            fail(
                CONTROL_PLANE_INVARIANT,
                "checkout_task",
                decide("checkout_task", cp.ctx, catalog=catalog),
                f"the control plane did not open the run itself (did {sorted(done)})",
                diff,
            )
        for s, r in calls:
            if s.operation in CONTROL_PLANE_NAMES and r.decision.decision != ABSENT:
                fail(
                    CONTROL_PLANE_INVARIANT,
                    s.operation,
                    r.decision,
                    "control-plane operation not absent",
                    diff,
                )
    if row.has(RESTRAINT_NO_CALL):
        if diff:
            fail(
                RESTRAINT_NO_CALL,
                *(_first_write(calls) or subject),
                "restraint row changed state",
                diff,
            )
        # Restraint is not making the call: a write the control plane refused left the
        # state alone, but the agent still tried it, and that is what the case forbids.
        for s, r in calls:
            if _restraint_write(row, s, catalog) and not r.ok:
                fail(
                    RESTRAINT_NO_CALL,
                    s.operation,
                    r.decision,
                    f"restraint row attempted a write (not made: {r.error})",
                    [],
                )
    if row.has(COMBINED_MULTI_HOP) and grants != UNGRANTED:
        if len(executed) + sum(1 for s in plan.steps if s.kind == HUMAN) < 2 and not row.has(
            RESTRAINT_NO_CALL
        ):
            fail(COMBINED_MULTI_HOP, *subject, f"a multi-hop row ran {len(executed)} step(s)", diff)
        for exp, op_name, decision in folded.values():
            problem = check_expectation(exp, cp.state, diff)
            if problem:
                fail(COMBINED_MULTI_HOP, op_name, decision, f"cumulative state: {problem}", diff)
    if row.has(AGENT_TOOL_CONTRACT) and not any(r.decision.decision == ALLOWED for _, r in calls):
        fail(AGENT_TOOL_CONTRACT, *subject, "no agent tool call was allowed", diff)


def _first_write(calls: list[tuple[Step, CallResult]]) -> tuple[str, Decision] | None:
    for s, r in calls:
        if r.ok and r.output.get("revision") is not None:
            return s.operation, r.decision
    return None


BINDING_PARITY = "binding_parity"
CODEX_SAMPLE = "codex_sample"


@dataclass(frozen=True)
class SuiteCheck:
    """A whole-suite check (binding parity, the bounded Codex sample): it has no
    configuration of its own, but the suite's verdict and totals include it."""

    name: str
    passed: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"check": self.name, "passed": self.passed, "detail": self.detail}


@dataclass
class SuiteResult:
    results: list[ConfigResult]
    fake_agent_operations: list[str]
    codex_operations: list[str]
    codex_sample: list[dict[str, Any]]
    failures: list[Failure]
    suite_checks: list[SuiteCheck] = field(default_factory=list)
    codex_sample_skipped: list[str] = field(default_factory=list)  # sample groups with no rows
    uncounted_operations: frozenset[str] = frozenset()  # executions that are not coverage

    @property
    def configurations_passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def configurations_failed(self) -> int:
        return len(self.results) - self.configurations_passed

    @property
    def checks(self) -> int:
        """Every pass/fail unit: each configuration and each whole-suite check."""
        return len(self.results) + len(self.suite_checks)

    @property
    def passed(self) -> int:
        """Checks passed, suite-level ones included, so the totals agree with the verdict."""
        return self.configurations_passed + sum(c.passed for c in self.suite_checks)

    @property
    def failed(self) -> int:
        return self.checks - self.passed

    @property
    def ok(self) -> bool:
        """The suite's verdict: what the exit code says."""
        return not self.failures and self.failed == 0

    @property
    def parity(self) -> bool:
        return operation_names_json(self.fake_agent_operations) == operation_names_json(
            self.codex_operations
        )

    def _calls(self) -> Iterable[tuple[Step, CallResult]]:
        return (c for r in self.results for c in r.calls)

    def operation_counts(self) -> dict[str, int]:
        """Calls that executed (allowed) per operation, coverage only: a refused attempt
        exercised the policy, not the operation, and the escape hatch is never coverage."""
        counts = Counter(
            s.operation
            for s, r in self._calls()
            if r.decision.decision == ALLOWED and s.operation not in self.uncounted_operations
        )
        return {k: counts[k] for k in sorted(counts)}

    def uncounted_executions(self) -> dict[str, int]:
        """Allowed calls of operations that never count as coverage (the generic API)."""
        counts = Counter(
            s.operation
            for s, r in self._calls()
            if r.decision.decision == ALLOWED and s.operation in self.uncounted_operations
        )
        return {k: counts[k] for k in sorted(counts)}

    def refused_attempts(self) -> dict[str, dict[str, int]]:
        """Refused calls per operation and decision (absent or denied)."""
        counts = Counter(
            (s.operation, r.decision.decision)
            for s, r in self._calls()
            if r.decision.decision != ALLOWED
        )
        out: dict[str, dict[str, int]] = {}
        for (op, decision), n in sorted(counts.items()):
            out.setdefault(op, {})[decision] = n
        return out


def codex_sample(rows: Iterable[Row], codex_ops: list[str]) -> list[dict[str, Any]]:
    """One representative row per sampled group present in `rows`: its headline operation,
    and whether Codex has it. Groups with no rows are left out (see `sample_skipped`)."""
    rows = list(rows)
    sample = []
    for code in CODEX_SAMPLE_GROUPS:
        members = [r for r in rows if r.group == code]
        if not members:
            continue
        row, operation = representative(members)
        sample.append(
            {
                "caseId": row.id,
                "group": code,
                "operation": operation,
                "presentInCodex": operation in codex_ops,
                "expectedPresent": operation != "checkout_task",
            }
        )
    return sample


def sample_skipped(rows: Iterable[Row]) -> list[str]:
    """The sampled groups a run of `rows` has no row for (a subset run), in sample order."""
    present = {r.group for r in rows}
    return [g for g in CODEX_SAMPLE_GROUPS if g not in present]


def representative(rows: list[Row]) -> tuple[Row, str]:
    """The group's first row (by id) whose plan makes a surface write, preferring a write its
    grant unlocks; control-plane groups are represented by the operation they own."""
    if not rows:
        raise ValueError("representative() needs at least one row of the group")
    rows = sorted(rows, key=lambda r: r.id)
    if rows[0].primaryDisposition == "control_plane_owned":
        return rows[0], "checkout_task"
    for want_gated in (True, False):
        for row in rows:
            for step in derive_plan(row).steps:
                op = CATALOG.get(step.operation)
                if (
                    step.kind == CALL
                    and op is not None
                    and op.mutates
                    and (step.gated or not want_gated)
                ):
                    return row, step.operation
    # No row of the group makes a call: nothing for Codex to have, so the sample fails.
    return rows[0], next((s.operation for s in derive_plan(rows[0]).steps if s.kind == CALL), "")


def run_suite(
    rows: list[Row],
    *,
    catalog: Catalog = CATALOG,
    plans: dict[str, Plan] | None = None,
    progress: Callable[[ConfigResult], None] | None = None,
) -> SuiteResult:
    """Run every configuration of `rows` (all 106, or a subset) and the whole-suite checks.

    A subset samples only the Codex-sample groups it has rows for and lists
    the others in `codex_sample_skipped`.
    """
    results: list[ConfigResult] = []
    for row in rows:
        plan = (plans or {}).get(row.id)
        for grants in configurations(row):
            res = run_configuration(row, grants, catalog=catalog, plan=plan)
            results.append(res)
            if progress is not None:
                progress(res)
    fake = [t.operation_id for t in fake_agent_binding(catalog)]
    codex = [t["name"] for t in codex_binding(catalog)]
    failures = [f for r in results for f in r.failures]
    parity_check, parity_failures = _parity_check(fake, codex)
    sample = codex_sample(rows, codex)
    skipped = sample_skipped(rows)
    sample_check, sample_failures = _sample_check(sample, skipped)
    uncounted = frozenset(n for n, op in catalog.operations.items() if not op.counts_as_coverage)
    return SuiteResult(
        results,
        fake,
        codex,
        sample,
        [*failures, *parity_failures, *sample_failures],
        [parity_check, sample_check],
        skipped,
        uncounted,
    )


def _parity_check(fake: list[str], codex: list[str]) -> tuple[SuiteCheck, list[Failure]]:
    """18/18: the two bindings list the same operations, byte for byte, and 18 of them."""
    ok = operation_names_json(fake) == operation_names_json(codex) and len(fake) == SURFACE_SIZE
    detail = (
        f"fake agent {len(fake)} vs Codex {len(codex)} operations"
        f"{'' if operation_names_json(fake) == operation_names_json(codex) else ', different'}"
        f"; expected {SURFACE_SIZE} identical"
    )
    failures = [] if ok else [Failure("-", BINDING_PARITY, "", "", detail)]
    return SuiteCheck(BINDING_PARITY, ok, detail), failures


def _sample_check(
    sample: list[dict[str, Any]], skipped: list[str]
) -> tuple[SuiteCheck, list[Failure]]:
    """Each sampled operation present in the Codex surface exactly when it should be."""
    failures = [
        Failure(
            item["caseId"],
            CODEX_SAMPLE,
            item["operation"],
            # The Codex surface is a listing: the operation is exposed on it or absent.
            EXPOSED if item["presentInCodex"] else ABSENT,
            f"presentInCodex={item['presentInCodex']}, expected {item['expectedPresent']}",
        )
        for item in sample
        if item["presentInCodex"] != item["expectedPresent"]
    ]
    detail = f"{len(sample) - len(failures)}/{len(sample)} sampled groups as expected"
    if skipped:
        detail += f"; not sampled (no rows in this run): {', '.join(skipped)}"
    return SuiteCheck(CODEX_SAMPLE, not failures, detail), failures
