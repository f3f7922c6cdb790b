"""Telling an outage from a failure, in what the agent CLIs themselves print.

A repeat whose provider answered 429, 529 or 500, refused the login, or
whose connection broke off measured nothing about the agent: its outcome is
`error` (docs/agents.md#outcomes), not `failed`. Each CLI says so its own
way, so each adapter's parser reads its CLI's own signal (Claude Code's
`result` event, Codex's `turn.failed`, opencode's `error` event, Gemini
CLI's `result` and stderr); what they share is here: an `InfraError`, and
the wording of HTTP statuses and network failures in free text, used only
where a CLI states its failure in prose (Codex's messages, Gemini CLI's
stderr). docs/agents.md#outcome-signals lists every signal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from capeval.core.outcome import status_kind


@dataclass(frozen=True)
class InfraError:
    """Why a run measured nothing: a `capeval.core.outcome.ERROR_KINDS` kind, and the
    provider's HTTP status when the CLI said it."""

    kind: str
    status: int | None = None


# An HTTP status as CLIs word it: "status 429", "last status: 429 Too Many
# Requests", "API Error: 529", "(429)", `"code":401`, "statusCode 500".
_STATUS = re.compile(
    r"(?:status(?:Code)?[\"']?\s*[:=]?\s*|API Error:?\s*|\"code\"\s*:\s*|\()"
    r"(?P<status>[1-5]\d\d)\b",
    re.IGNORECASE,
)
_NETWORK = re.compile(
    r"ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|socket hang up|fetch failed|"
    r"connection (?:refused|reset|closed|error)|error sending request|network error|"
    r"stream disconnected|stream closed before|terminated unexpectedly|"
    r"Model stream ended without a finish reason|Unable to connect",
    re.IGNORECASE,
)
_AUTH = re.compile(
    r"\bunauthori[sz]ed\b|authentication[ _](?:error|failed)|failed to authenticate|"
    r"invalid[ _](?:x-)?api[ _-]?key|please run /login|not logged in|login (?:has )?expired|"
    r"UNAUTHENTICATED|PERMISSION_DENIED",
    re.IGNORECASE,
)
_RATE = re.compile(r"rate[ _-]?limit|too many requests|RESOURCE_EXHAUSTED|quota", re.IGNORECASE)
_OVERLOADED = re.compile(r"overloaded|high demand|UNAVAILABLE", re.IGNORECASE)


def status_in(text: str) -> int | None:
    """The HTTP status `text` words as one: the last that means an outage (the final one
    is the one that stuck), else the last at all."""
    found = [int(m.group("status")) for m in _STATUS.finditer(text)]
    meaning = [s for s in found if status_kind(s) is not None]
    chosen = meaning or found
    return chosen[-1] if chosen else None


def from_status(status: int | None) -> InfraError | None:
    """The infrastructure error an HTTP status means, or None (no status, or a refusal
    of what the agent asked for, such as 400)."""
    kind = status_kind(status)
    return InfraError(kind, status) if kind is not None else None


def from_text(text: str | None) -> InfraError | None:
    """The infrastructure error a CLI's message states, or None when it states none.

    A status the message names decides; else its words (a rate limit, an
    overload, a refused login, a broken connection).
    """
    if not text:
        return None
    status = status_in(text)
    if status is not None:
        return from_status(status)
    for pattern, kind in (
        (_AUTH, "auth"),
        (_RATE, "rate_limit"),
        (_OVERLOADED, "overloaded"),
        (_NETWORK, "network"),
    ):
        if pattern.search(text):
            return InfraError(kind)
    return None
