"""The pass rule as a table, including the fail-closed budget and requirements."""

from __future__ import annotations

import pytest

from capeval.core.case import Requirement
from capeval.core.passrule import decide, effective_budget, is_over_budget, provider_mismatch

WEB = (Requirement("webFetchToolCallCount", min=1),)
GOOD = {"webFetchToolCallCount": 2}


@pytest.mark.parametrize(
    ("budget", "turns", "over"),
    [
        (None, None, False),  # no budget: nothing to check
        (None, 99, False),
        (5, 5, False),
        (5, 6, True),
        (5, None, True),  # fail closed: a budget with no reported turns
    ],
)
def test_over_budget(budget: int | None, turns: int | None, over: bool) -> None:
    assert is_over_budget(budget, turns) is over


def test_max_turns_flag_overrides_the_case() -> None:
    assert effective_budget(10, 3) == 3
    assert effective_budget(10, None) == 10
    assert effective_budget(None, None) is None


@pytest.mark.parametrize(
    ("kwargs", "passed", "reason"),
    [
        ({}, True, None),
        ({"agent_exit_code": 1}, False, "agent exited 1"),
        ({"agent_exit_code": None}, False, "agent reported no exit code"),
        ({"verify_exit_code": 1}, False, "grader exited 1"),
        ({"verify_exit_code": 124}, False, "grader timed out (exit 124)"),
        ({"verify_exit_code": None}, False, "grader did not run"),
        # A grader killed by a signal reports a negative code: not a pass.
        ({"verify_exit_code": -9}, False, "grader exited -9"),
        (
            {"over_budget": True, "budget": 3, "turns_used": 4},
            False,
            "over budget: 4 turns > maxTurns 3",
        ),
        (
            {"over_budget": True, "budget": 3, "turns_used": None},
            False,
            "turnsUsed was not reported",
        ),
        ({"requirements": WEB, "behaviors": GOOD}, True, None),
        (
            {"requirements": WEB, "behaviors": {"webFetchToolCallCount": 0}},
            False,
            "webFetchToolCallCount >= 1 does not hold",
        ),
        ({"requirements": WEB, "behaviors": None}, False, "no behaviors were captured"),
        (
            {"requirements": (), "behaviors": None},
            True,
            None,
        ),  # no requirement: null behaviors are fine
        ({"provider_error": "provider/model mismatch: x"}, False, "mismatch"),
        # The agent's own stream is judged, not only its exit code.
        (
            {"agent_status": "failed", "agent_error": "claude-code error_max_turns"},
            False,
            "agent exited 0 but reported status failed: claude-code error_max_turns",
        ),
        ({"agent_status": "cancelled"}, False, "reported status cancelled"),
        ({"agent_status": "done"}, True, None),
        # A non-zero exit says it once, not twice.
        ({"agent_exit_code": 1, "agent_status": "failed"}, False, "agent exited 1"),
    ],
)
def test_decide(kwargs: dict, passed: bool, reason: str | None) -> None:
    args = {"agent_exit_code": 0, "verify_exit_code": 0, "over_budget": False, **kwargs}
    verdict = decide(**args)
    assert verdict.passed is passed
    if reason is None:
        assert verdict.error is None
    else:
        assert reason in (verdict.error or "")


def test_every_failure_is_listed() -> None:
    v = decide(agent_exit_code=2, verify_exit_code=1, over_budget=True, budget=1, turns_used=9)
    assert len(v.reasons) == 3 and not v.passed


@pytest.mark.parametrize(
    ("requested", "resolved", "ok"),
    [
        # What Claude Code 2.1 and Gemini CLI 0.61 resolved these aliases to
        # (tests/agents/test_real_cli_agents.py asks the real CLIs).
        ("sonnet", "claude-sonnet-5-5", True),
        ("opus", "claude-opus-5-5", True),
        ("haiku", "claude-haiku-5-5", True),
        ("opusplan", "claude-sonnet-5-5", True),
        ("default", "claude-opus-5-5", True),
        ("pro", "gemini-3.1-pro-preview", True),
        ("flash", "gemini-3.8-flash", True),
        ("flash-lite", "gemini-3.5-flash-lite", True),
        ("auto", "gemini-3.5-flash-lite", True),
        # Older names and snapshots of the same families.
        ("sonnet", "claude-3-5-sonnet-20241022", True),
        ("sonnet", "claude-sonnet-4-5-20250929", True),
        ("pro", "gemini-2.5-pro-preview-06-05", True),
        # Another family is a fallback, however close the name.
        ("sonnet", "claude-opus-5-5", False),
        ("opus", "claude-sonnet-5-5", False),
        ("opusplan", "claude-haiku-5-5", False),
        ("flash", "gemini-3.5-flash-lite", False),
        ("flash-lite", "gemini-3.8-flash", False),
        ("pro", "gemini-3.8-flash", False),
        ("sonnet", "claude-sonnet-5-5-mini", False),
        ("auto", "gpt-5.5", False),
        ("default", "gemini-3.8-flash", False),
    ],
)
def test_family_aliases_match_their_family_only(requested: str, resolved: str, ok: bool) -> None:
    # `--model sonnet` is how Claude Code's docs ask for a model; the CLI
    # reports the concrete model it ran, which failed every repeat as a
    # provider/model mismatch.
    assert (provider_mismatch("anthropic", requested, None, resolved) is None) is ok


@pytest.mark.parametrize(
    ("requested", "resolved", "ok"),
    [
        ("claude-sonnet-4-5", "claude-sonnet-4-5-latest", True),
        # Same length, another model, then a date: not a snapshot of the request.
        ("claude-sonnet-4-5", "claude-sonnet-4-6-20250929", False),
        ("claude-sonnet-4-5", "claude-opus-4-5-x-20250929", False),
    ],
)
def test_a_snapshot_is_the_requested_model_plus_a_date_only(
    requested: str, resolved: str, ok: bool
) -> None:
    assert (provider_mismatch("anthropic", requested, None, resolved) is None) is ok


@pytest.mark.parametrize(
    ("resolved", "ok"),
    [
        ((None, None), True),  # the agent did not say: nothing to check
        (("scripted", "oracle"), True),
        (("Anthropic", "claude-sonnet-4-5-20250929"), True),  # alias -> dated snapshot
        (("anthropic", "anthropic/claude-sonnet-4-5"), True),
        (("anthropic", "Claude-Sonnet-4-5"), True),  # case is no fallback
        (("anthropic", "claude-haiku-4-5"), False),
        (("zen", "claude-sonnet-4-5"), False),
        (("anthropic", "claude-sonnet-4-5-mini"), False),
    ],
)
def test_provider_check(resolved: tuple[str | None, str | None], ok: bool) -> None:
    req = (
        ("anthropic", "claude-sonnet-4-5") if resolved[0] != "scripted" else ("scripted", "oracle")
    )
    err = provider_mismatch(*req, *resolved)
    assert (err is None) is ok
    if not ok:
        assert (
            "requested anthropic:claude-sonnet-4-5" in err
            and f"resolved {resolved[0]}:{resolved[1]}" in err
        )
