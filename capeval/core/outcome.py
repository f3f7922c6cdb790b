"""What a repeat's result means: passed, failed, or no measurement at all (docs/agents.md#outcomes).

`passed` and `failed` say the agent ran and the grader or the budget judged
it. `error` says the measurement did not happen: the agent CLI could not
start, the provider refused it (authentication, a rate limit, an overload, a
5xx) or the connection broke before the agent finished, or capeval itself
failed. An error repeat says nothing about the agent, so the gate leaves it
out of pass rates and behavior medians, and `capeval run --retries` runs it
again. A timeout and a turn budget overrun are `failed`: the agent ran.

Pure: the rule for rows written before `outcome` existed lives here once,
and its SQL rendering (`capeval.results.columns.outcome_sql`) is held to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

Outcome = Literal["passed", "failed", "error"]
OUTCOMES: tuple[Outcome, ...] = ("passed", "failed", "error")
PASSED, FAILED, ERROR = OUTCOMES

# Why an `error` repeat measured nothing (the row's `errorKind`).
ERROR_KINDS: dict[str, str] = {
    "rate_limit": "the provider refused the request: rate limit or quota (HTTP 429)",
    "overloaded": "the provider is overloaded (HTTP 529, 503)",
    "server": "the provider failed (HTTP 5xx)",
    "auth": "authentication failed (HTTP 401, 403, an expired or missing login)",
    "network": "the connection failed or broke off before the agent finished",
    "stream": "the agent's event stream broke off or was cut short",
    "start": "the agent CLI could not start",
    "capeval": "capeval itself failed (the workdir, a sandbox, an adapter)",
}
# A run summary or a row states its status with one of these.
LEGACY_ERROR_STATUS = "cancelled"


def status_kind(status: int | None) -> str | None:
    """The error kind an HTTP status from the provider means, or None when it is no outage.

    Another 4xx (400 a request too long, 404 an unknown model) is a refusal of
    what the agent or its configuration asked for: the repeat failed.
    """
    if status is None:
        return None
    if status == 429:
        return "rate_limit"
    if status in (529, 503):
        return "overloaded"
    if 500 <= status <= 599:
        return "server"
    if status in (401, 403, 407):
        return "auth"
    if status == 408:
        return "network"
    return None


def derive_outcome(passed: Any, status: Any) -> Outcome:
    """The outcome of a row written before rows carried one.

    A passed repeat passed; one the original harness recorded as `cancelled`
    was never measured; every other failed.
    """
    if passed is True:
        return PASSED
    if status == LEGACY_ERROR_STATUS:
        return ERROR
    return FAILED


def row_outcome(row: Mapping[str, Any]) -> Outcome:
    """A row's outcome: its own `outcome`, else derived from `passed` and `status`.

    Readers check the stated value first (`capeval.results.rowcheck`); this
    takes a well-formed row.
    """
    stated = row.get("outcome")
    for outcome in OUTCOMES:
        if stated == outcome:
            return outcome
    return derive_outcome(row.get("passed"), row.get("status"))


def outcome_problem(outcome: Any, passed: Any) -> str | None:
    """Why a stated `outcome` cannot stand beside `passed`, or None (absent is fine)."""
    if outcome is None:
        return None
    if outcome not in OUTCOMES:
        return f"field 'outcome' must be one of {', '.join(OUTCOMES)} or absent"
    if (outcome == PASSED) != (passed is True):
        return (
            f"field 'outcome' is {outcome!r} but 'passed' is {str(passed).lower()}: they must agree"
        )
    return None
