"""Authorization decisions: whether an actor in a scenario may see or call an operation.

Pure. The decision is made once here and both the surface listing (bindings)
and the mock control plane's call path use it, so what an agent is shown and
what it may do can never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from capeval.core.paperclip.catalog import CATALOG, Catalog
from capeval.core.paperclip.policy import ALWAYS, CONTROL_PLANE, OPTIONAL

EXPOSED = "exposed"
ALLOWED = "allowed"
DENIED = "denied"
ABSENT = "absent"
DECISIONS: tuple[str, ...] = (EXPOSED, ALLOWED, DENIED, ABSENT)

TASK_SCOPED_ALWAYS_TOOL = "task_scoped_always_tool"
REQUIRED_CLAIMS_GRANTED = "required_claims_granted"
REQUIRED_CLAIM_MISSING = "required_claim_missing"
ACTOR_ROLE_NOT_AUTHORIZED = "actor_role_not_authorized"
OPERATION_NOT_AVAILABLE_IN_TASK_MODE = "operation_not_available_in_task_mode"
CONTROL_PLANE_OWNED_OPERATION = "control_plane_owned_operation"
UNKNOWN_OPERATION = "unknown_operation"
TASK_OUT_OF_SCOPE = "task_out_of_scope"
RUN_NOT_ACTIVE = "run_not_active"
EXECUTION_LOCK_NOT_HELD = "execution_lock_not_held"
REASONS: tuple[str, ...] = (
    TASK_SCOPED_ALWAYS_TOOL,
    REQUIRED_CLAIMS_GRANTED,
    REQUIRED_CLAIM_MISSING,
    ACTOR_ROLE_NOT_AUTHORIZED,
    OPERATION_NOT_AVAILABLE_IN_TASK_MODE,
    CONTROL_PLANE_OWNED_OPERATION,
    UNKNOWN_OPERATION,
    TASK_OUT_OF_SCOPE,
    RUN_NOT_ACTIVE,
    EXECUTION_LOCK_NOT_HELD,
)

RUNNING = "running"  # the only run status in which an agent may write


@dataclass(frozen=True)
class AuthContext:
    """Who is asking, in which task mode, for which run task, with which claims.

    `claims` is already the union of the actor's and the scenario's grants,
    expanded to claims (see `policy.claims_for_grants`).
    """

    role: str
    claims: frozenset[str]
    task_mode: str = "standard"
    run_task: str | None = None


@dataclass(frozen=True)
class Decision:
    operation: str
    decision: str
    reason: str
    missing_claims: tuple[str, ...] = ()

    @property
    def permitted(self) -> bool:
        return self.decision in (EXPOSED, ALLOWED)

    def to_json(self) -> dict[str, object]:
        return {
            "operation": self.operation,
            "decision": self.decision,
            "reason": self.reason,
            "missingClaims": list(self.missing_claims),
        }


def decide(
    operation: str,
    ctx: AuthContext,
    *,
    listing: bool = False,
    target_task: str | None = None,
    catalog: Catalog = CATALOG,
) -> Decision:
    """Decide one operation; `listing` asks whether it is shown, otherwise whether a call may run.

    Order matters: an operation that is not the agent's at all (unknown or
    control-plane-owned) is absent before any grant is looked at, so no grant
    can ever surface it.
    """
    op = catalog.get(operation)
    if op is None:
        return Decision(operation, ABSENT, UNKNOWN_OPERATION)
    if op.disposition == CONTROL_PLANE:
        return Decision(operation, ABSENT, CONTROL_PLANE_OWNED_OPERATION)
    granted = DENIED if not listing else ABSENT
    ok = EXPOSED if listing else ALLOWED
    if ctx.task_mode not in op.modes:
        return Decision(operation, granted, OPERATION_NOT_AVAILABLE_IN_TASK_MODE)
    if op.disposition == ALWAYS:
        if (
            not listing
            and op.mutates
            and target_task is not None
            and ctx.run_task is not None
            and target_task != ctx.run_task
        ):
            return Decision(operation, DENIED, TASK_OUT_OF_SCOPE)
        return Decision(operation, ok, TASK_SCOPED_ALWAYS_TOOL)
    if op.disposition != OPTIONAL:  # pragma: no cover - catalog invariant
        raise ValueError(f"operation {operation!r} has unknown disposition {op.disposition!r}")
    # Roles first: a role limit is not something a grant can lift.
    if op.roles is not None and ctx.role not in op.roles:
        return Decision(operation, granted, ACTOR_ROLE_NOT_AUTHORIZED)
    missing = tuple(sorted(c for c in op.claims if c not in ctx.claims))
    if missing:
        return Decision(operation, granted, REQUIRED_CLAIM_MISSING, missing)
    return Decision(operation, ok, REQUIRED_CLAIMS_GRANTED)


def decide_execution(
    operation: str,
    *,
    run_status: str | None,
    run_id: str,
    task_lock: str | None = None,
    targets_task: bool = False,
    catalog: Catalog = CATALOG,
) -> Decision | None:
    """Whether the run may make an allowed write now; None when it may.

    Authorization says what the actor may do at all; this says what this run
    may do at this moment. Checkout is an atomic execution lock, so a write
    is refused when the run is not running (a 409 conflict, a budget stop,
    an idle wake that checked nothing out) and, for a write on a task, when
    the task's execution lock (`task_lock`, its executionRunId) is not this
    run's. A delegation write on another task (`acts_on_other_tasks`) needs
    only that no other run holds that task. Reads are never refused here:
    looking is how an agent finds out it should stop.
    """
    op = catalog.get(operation)
    if op is None or not op.mutates:
        return None
    if run_status != RUNNING:
        return Decision(operation, DENIED, RUN_NOT_ACTIVE)
    if not targets_task or task_lock == run_id:
        return None
    if task_lock is None and op.acts_on_other_tasks:
        return None
    return Decision(operation, DENIED, EXECUTION_LOCK_NOT_HELD)


def surface(
    ctx: AuthContext, *, catalog: Catalog = CATALOG, names: Iterable[str] | None = None
) -> list[str]:
    """The operations shown to the agent, in catalog order."""
    pool = catalog.names() if names is None else list(names)
    return [n for n in pool if decide(n, ctx, listing=True, catalog=catalog).permitted]
