"""The pass rule and the provider check (docs/running.md#the-pass-rule), as pure functions.

Kept apart from the runner so the rule can be read and tested as a table:
every input that makes a repeat fail contributes one reason, and the
reasons become the row's `error`. Both checks fail closed: a budget with no
reported turn count, or a behavior requirement with no captured stream,
cannot pass, because a broken metrics path must not look like a good run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

# The exit code a timed-out child is recorded with (as coreutils' timeout(1) does).
TIMEOUT_EXIT_CODE = 124


class RequirementLike(Protocol):
    @property
    def metric(self) -> str: ...

    def holds(self, behaviors: Mapping[str, Any] | None) -> bool: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reasons: tuple[str, ...]

    @property
    def error(self) -> str | None:
        return "; ".join(self.reasons) or None


def effective_budget(case_max_turns: int | None, override: int | None) -> int | None:
    """`--max-turns` overrides the case's `maxTurns`."""
    return override if override is not None else case_max_turns


def is_over_budget(budget: int | None, turns_used: int | None) -> bool:
    """True when a budget applies and the turn count exceeds it or is missing."""
    if budget is None:
        return False
    return turns_used is None or turns_used > budget


# A model alias resolving to its dated snapshot (claude-sonnet-4-5 ->
# claude-sonnet-4-5-20250929) is the model that was asked for, not a fallback.
_SNAPSHOT_SUFFIX = re.compile(r"^-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


# Family aliases the CLIs resolve themselves, to whatever model of the family
# they currently ship (seen: Claude Code 2.1 `sonnet` -> claude-sonnet-5-5,
# `opusplan` -> claude-sonnet-5-5 headless, `default` -> claude-opus-5-5;
# Gemini CLI 0.61 `pro` -> gemini-3.1-pro-preview, `flash` -> gemini-3.8-flash,
# `auto` -> gemini-3.5-flash-lite). Any model of the named family is what was
# asked for; another family is a fallback. The patterns take the old naming
# too (claude-3-5-sonnet-20241022) and keep flash apart from flash-lite.
_CLAUDE = r"claude-(?:[\d.]+-)*{family}(?:-[\d.]+)*(?:-latest)?"
_GEMINI = r"gemini-[\d.]+-{family}(?:-(?:preview|exp|latest|[\d]+))*"
_FAMILY_ALIASES = {
    alias: re.compile(f"^(?:{pattern})$")
    for alias, pattern in {
        "sonnet": _CLAUDE.format(family="sonnet"),
        "opus": _CLAUDE.format(family="opus"),
        "haiku": _CLAUDE.format(family="haiku"),
        "opusplan": _CLAUDE.format(family="(?:opus|sonnet)"),
        "default": _CLAUDE.format(family="(?:opus|sonnet|haiku)"),
        "pro": _GEMINI.format(family="pro"),
        "flash": _GEMINI.format(family="flash"),
        "flash-lite": _GEMINI.format(family="flash-lite"),
        "auto": _GEMINI.format(family="(?:pro|flash|flash-lite)"),
    }.items()
}


def _same_model(requested: str, resolved: str, provider: str) -> bool:
    req, res = requested.casefold(), resolved.casefold()
    prefix = provider.casefold() + "/"
    if res.startswith(prefix) and not req.startswith(prefix):
        res = res[len(prefix) :]
    if res == req or bool(_SNAPSHOT_SUFFIX.match(res[len(req) :]) and res.startswith(req)):
        return True
    family = _FAMILY_ALIASES.get(req)
    return family is not None and family.match(res) is not None


def provider_mismatch(
    requested_provider: str,
    requested_model: str,
    resolved_provider: str | None,
    resolved_model: str | None,
) -> str | None:
    """An error naming both pairs when the agent ran something else; None when it matches.

    A side the agent did not report cannot be checked and is taken as requested.
    """
    prov_ok = (
        resolved_provider is None or resolved_provider.casefold() == requested_provider.casefold()
    )
    model_ok = resolved_model is None or _same_model(
        requested_model, resolved_model, requested_provider
    )
    if prov_ok and model_ok:
        return None
    got = f"{resolved_provider or requested_provider}:{resolved_model or requested_model}"
    return (
        f"provider/model mismatch: requested {requested_provider}:{requested_model}, "
        f"agent resolved {got} (pass --allow-provider-fallback to accept)"
    )


def decide(
    *,
    agent_exit_code: int | None,
    verify_exit_code: int | None,
    over_budget: bool,
    budget: int | None = None,
    turns_used: int | None = None,
    requirements: Sequence[RequirementLike] = (),
    behaviors: Mapping[str, Any] | None = None,
    provider_error: str | None = None,
    agent_error: str | None = None,
    agent_status: str | None = None,
) -> Verdict:
    """`passed` and the reasons it is false, in the order a reader would check them.

    "Agent exit 0" means the agent succeeded, and its own stream is the better
    witness (Claude's `result` line can say `error_max_turns` with exit 0): a
    status other than `done` fails the repeat whatever the exit code.
    """
    reasons: list[str] = []
    if provider_error:
        reasons.append(provider_error)
    if agent_exit_code != 0:
        what = "reported no exit code" if agent_exit_code is None else f"exited {agent_exit_code}"
        reasons.append(f"agent {what}" + (f": {agent_error}" if agent_error else ""))
    elif agent_status not in (None, "done"):
        what = f"exited 0 but reported status {agent_status}"
        reasons.append(f"agent {what}" + (f": {agent_error}" if agent_error else ""))
    if verify_exit_code is None:
        reasons.append("grader did not run")
    elif verify_exit_code == TIMEOUT_EXIT_CODE:
        reasons.append(f"grader timed out (exit {TIMEOUT_EXIT_CODE})")
    elif verify_exit_code != 0:
        reasons.append(f"grader exited {verify_exit_code}")
    if over_budget:
        if turns_used is None:
            reasons.append(f"turn budget {budget} applies but turnsUsed was not reported")
        else:
            reasons.append(f"over budget: {turns_used} turns > maxTurns {budget}")
    if requirements and behaviors is None:
        # Null behaviors have two causes; "not captured" alone misled when the
        # stream was read fine but held no model turn (no login, no network).
        reasons.append(
            "requireBehaviors set but no behaviors were captured (no stream, an unreadable "
            "one, or one without a model turn)"
        )
    elif requirements:
        for req in requirements:
            if not req.holds(behaviors):
                value = behaviors.get(req.metric) if behaviors else None
                reasons.append(
                    f"requireBehaviors: {req.describe()} does not hold ({req.metric}={value})"
                )
    return Verdict(passed=not reasons, reasons=tuple(reasons))
