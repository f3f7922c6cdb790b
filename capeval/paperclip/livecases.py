"""The live matrix's cases, prompts and scripted turns.

Pure: no process is started here. One row per group is sampled (the same pick
as the bounded Codex sample); an optional-tool row is sampled in both grant
configurations, as the offline suite runs it: granted (the optional tool is
listed, allowed and mutates) and ungranted (it is absent from the listing, or
a call to it is denied and changes nothing).

A scripted turn (`scripted_calls`) is what the scripted model server makes a
real CLI do for a case: the fake agent's plan, replayed through the CLI's own
tool loop, so the wiring and the judge are tested offline. Each CLI adapter
renders the calls in its own vocabulary (`capeval.paperclip.liveagents`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from capeval.core.paperclip.policy import RESTRAINT_NO_CALL
from capeval.paperclip.controlplane import ControlPlane
from capeval.paperclip.derivative import Row
from capeval.paperclip.fakeagent import (
    CALL,
    PROBE,
    Plan,
    Step,
    auth_context,
    derive_plan,
    plan_fixture,
)
from capeval.paperclip.suite import (
    CONTROL_PLANE_NAMES,
    UNGRANTED,
    configurations,
    remember_result,
    representative,
    resolve_args,
)

# How an ungranted turn's control plane shows the optional tool: not at all (the
# mock's own listing), or listed while every call is decided without the grant, so a
# call reaches the control plane and its refusal is measured through the CLI.
ABSENT_TOOLS = "absent"
LISTED_TOOLS = "listed"
UNGRANTED_TOOLS: tuple[str, ...] = (ABSENT_TOOLS, LISTED_TOOLS)


@dataclass(frozen=True)
class LiveCase:
    """One configuration of a group's sampled row, and the operation its turn is about."""

    row: Row
    operation: str
    grants: str  # granted | ungranted | single, as the suite names configurations

    @property
    def group(self) -> str:
        return self.row.group

    @property
    def config_id(self) -> str:
        """The configuration as a case id of its own: `<caseId>:<grants>`."""
        return f"{self.row.id}:{self.grants}"

    @property
    def granted(self) -> bool:
        return self.grants != UNGRANTED

    @cached_property
    def plan(self) -> Plan:
        return derive_plan(self.row)

    @property
    def gated(self) -> str | None:
        """The operation the row's grant unlocks (its plan's first gated call), if any."""
        return next((s.operation for s in self.plan.steps if s.gated and s.kind == CALL), None)


def live_cases(rows: Iterable[Row], groups: Sequence[str] = ()) -> list[LiveCase]:
    """Every configuration of one row per group (all groups, or those named), by group."""
    by_group: dict[str, list[Row]] = {}
    for row in rows:
        by_group.setdefault(row.group, []).append(row)
    unknown = sorted(set(groups) - by_group.keys())
    if unknown:
        raise ValueError(
            f"unknown group(s): {', '.join(unknown)}; known: {', '.join(sorted(by_group))}"
        )
    out = []
    for group in sorted(set(groups) or by_group):
        row, operation = representative(by_group[group])
        out += [LiveCase(row, operation, grants) for grants in configurations(row)]
    return out


def prompt(case: LiveCase) -> str:
    """The task the agent is given: the row's scenario, in the control plane's terms."""
    row = case.row
    return (
        "You are an agent working inside the Paperclip control plane. Act only through the "
        "tools of the `paperclip` MCP server (if your tools are deferred, find them with tool "
        "search); do not run shell commands or edit files. The control plane has already "
        "opened your run and checked out your task, if you have one.\n\n"
        f"Case {row.id}: {row.title}\n"
        f"Scenario: {row.scenario}\n"
        f"Expected outcome: {row.expectedOutcome}\n"
    )


def scripted_calls(case: LiveCase) -> list[dict[str, Any]]:
    """The calls a correct scripted turn makes, in order: `{"operation", "arguments"}`.

    Granted (or single): the plan's calls, and its probes (the calls the case
    forbids, which the control plane or the CLI must refuse) except in a
    restraint row and for a control-plane-owned operation, where trying is
    itself the failure. Ungranted: only the
    calls the grant would unlock, as the suite's ungranted configuration
    makes them. Arguments are resolved on a control plane opened exactly as
    the MCP server opens it (fixtures are deterministic, so ids and revisions
    agree), including the looks `resolve_args` takes (a `list_documents`
    before a document write).
    """
    row, plan = case.row, case.plan
    cp = ControlPlane(plan_fixture(plan), auth_context(row, plan.run_task, granted=case.granted))
    cp.open_run()
    memory: dict[str, Any] = {}
    calls: list[tuple[Step, Any]] = []
    out: list[dict[str, Any]] = []
    for step in plan.steps:
        if step.kind not in (CALL, PROBE):
            continue
        if not case.granted and not step.gated:
            continue
        if step.kind == PROBE and (
            row.has(RESTRAINT_NO_CALL) or step.operation in CONTROL_PLANE_NAMES
        ):
            continue
        seen = len(calls)
        args = resolve_args(step.args, cp, memory, calls, look=step.kind == CALL)
        for look, _ in calls[seen:]:
            out.append({"operation": look.operation, "arguments": dict(look.args)})
        out.append({"operation": step.operation, "arguments": dict(args)})
        res = cp.call(step.operation, args)
        calls.append((step, res))
        if res.ok:
            remember_result(step.operation, args, res, memory)
    return out
