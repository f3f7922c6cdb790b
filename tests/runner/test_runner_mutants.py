"""run_repeat rules that no other test would notice breaking (found by mutation).

Real workdir, grader and row; a stand-in adapter, as in test_run_repeat.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from capeval.agents.base import AgentRequest, AgentResult
from capeval.core.turns import RunSummary, Turn
from capeval.runner.repeat import PREVIEW_CHARS, RepeatSettings, run_repeat
from tests.runner.test_run_repeat import FakeAdapter, _job


def test_the_agent_is_told_the_budget_that_max_turns_overrides(tmp_path: Path) -> None:
    adapter = FakeAdapter()
    settings = RepeatSettings(root=tmp_path, max_turns=3)
    row = run_repeat(_job(tmp_path, maxTurns=10), adapter, settings)
    assert [r.max_turns for r in adapter.seen] == [3]
    assert row["maxTurns"] == 3


def test_the_row_records_its_own_0_based_repeat(tmp_path: Path) -> None:
    job = replace(_job(tmp_path), repeat=2)
    row = run_repeat(job, FakeAdapter(), RepeatSettings(root=tmp_path))
    assert row["repeat"] == 2 and row["resultKey"] == "v::alpha"


def test_a_long_text_preview_is_cut(tmp_path: Path) -> None:
    class Chatty(FakeAdapter):
        def run(self, request: AgentRequest) -> AgentResult:
            result = super().run(request)
            result.textPreview = "word " * 1000
            return result

    row = run_repeat(_job(tmp_path), Chatty(), RepeatSettings(root=tmp_path))
    assert 0 < len(row["textPreview"]) <= PREVIEW_CHARS


def test_a_metrics_bug_gives_null_behaviors_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import capeval.core.behaviors

    def broken(_summary: RunSummary) -> dict[str, object]:
        raise KeyError("metric")

    monkeypatch.setattr(capeval.core.behaviors, "derive_behaviors", broken)

    class WithTurn(FakeAdapter):
        def run(self, request: AgentRequest) -> AgentResult:
            result = super().run(request)
            result.summary = RunSummary(turns=(Turn(0),))
            return result

    row = run_repeat(_job(tmp_path), WithTurn(), RepeatSettings(root=tmp_path))
    assert row["behaviors"] is None
    assert "behaviors not derived: KeyError" in (row["error"] or "")


def test_an_adapter_diagnosis_on_a_clean_exit_reaches_the_row(tmp_path: Path) -> None:
    class Unreadable(FakeAdapter):
        def run(self, request: AgentRequest) -> AgentResult:
            result = super().run(request)
            result.error = "stream unreadable: truncated JSON"
            return result

    row = run_repeat(_job(tmp_path), Unreadable(), RepeatSettings(root=tmp_path))
    assert "agent: stream unreadable: truncated JSON" in (row["error"] or "")


def test_an_equals_sign_after_the_provider_is_part_of_the_model_not_a_label() -> None:
    from capeval.core.matrix import parse_cell

    v = parse_cell("openai:gpt=5")
    assert (v.id, v.provider, v.model) == ("openai:gpt=5", "openai", "gpt=5")


def test_only_the_last_at_sign_names_the_agent() -> None:
    from capeval.core.matrix import parse_cell

    v = parse_cell("vertex:claude@2025@claude-code")
    assert (v.provider, v.model, v.agent) == ("vertex", "claude@2025", "claude-code")


def test_an_empty_matrix_with_one_side_given_is_refused() -> None:
    from capeval.core.matrix import parse_matrix

    with pytest.raises(ValueError, match="empty matrix"):
        parse_matrix(None, provider="anthropic")
    with pytest.raises(ValueError, match="empty matrix"):
        parse_matrix((), model="claude-x")


def test_secrets_are_gathered_from_every_environment_given() -> None:
    from capeval.core.redact import secret_values

    found = secret_values({"HOME": "/home/u"}, {"AGENT_API_KEY": "sk-agent-1"}, {"T_TOKEN": "tk-9"})
    assert set(found) == {"sk-agent-1", "tk-9"}


def test_ask_permissions_reaches_the_agent_and_the_row(tmp_path: Path) -> None:
    adapter = FakeAdapter()
    row = run_repeat(_job(tmp_path), adapter, RepeatSettings(root=tmp_path, skip_permissions=False))
    assert [r.skip_permissions for r in adapter.seen] == [False]
    assert row["skipPermissions"] is False


def test_the_grader_sees_the_workdirs_repository_even_under_git_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # capeval run from a git hook inherits GIT_DIR; the grader's git must
    # still find the workdir's own repository.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("GIT_DIR", str(elsewhere / ".git"))
    verify = 'test "$(git log --format=%s)" = "capeval fixture"\n'
    row = run_repeat(_job(tmp_path, verify=verify), FakeAdapter(), RepeatSettings(root=tmp_path))
    assert row["verifyExitCode"] == 0, row["error"]


def test_a_cap_one_byte_into_a_secret_keeps_none_of_it() -> None:
    from capeval.runner.artifacts import capped

    data = b"abcd" + b"sk-secret-9" + b"tail"
    kept = capped(data, len(data), ["sk-secret-9"], 5)
    assert kept.startswith(b"abcd\n[capeval: truncated, kept the first 4 ")
