"""run_repeat with stand-in adapters, for what the scripted agent never does.

The scripted agent always resolves the provider/model it was asked for and
never crashes, so these tests use small fake adapters (a real agent CLI
cannot run offline); the workdir, grader, HTTP fixture and row are real.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from capeval.agents.base import AgentRequest, AgentResult
from capeval.agents.registry import make_adapter
from capeval.agents.scripted import ScriptedAdapter
from capeval.core.agentconfig import AgentConfig
from capeval.core.matrix import Variant
from capeval.core.redact import REDACTED
from capeval.core.row import ROW_FIELDS
from capeval.core.turns import RunSummary, Turn
from capeval.runner.repeat import PREVIEW_CHARS, RepeatJob, RepeatSettings, run_repeat
from capeval.workspace import load_cases
from tests.runhelpers import write_case, write_done

SECRET = "sk-test-9f8e7d6c5b4aZQ31"


@dataclass
class FakeAdapter:
    """Writes done.txt and reports whatever provider/model it is told to."""

    provider: str | None = None
    model: str | None = None
    raise_error: bool = False
    config: AgentConfig = field(default_factory=lambda: AgentConfig(name="fake", type="fake"))
    seen: list[AgentRequest] = field(default_factory=list)

    def version(self) -> str | None:
        return "fake-1"

    def run(self, request: AgentRequest) -> AgentResult:
        self.seen.append(request)
        if self.raise_error:
            raise RuntimeError("adapter bug")
        (request.workdir / "done.txt").write_text("ok")
        return AgentResult(
            exitCode=0, status="done", provider=self.provider, model=self.model, turnsUsed=1
        )


def _job(tmp_path: Path, **case_fields: object) -> RepeatJob:
    write_case(tmp_path, "alpha", **case_fields)
    (case,) = load_cases(tmp_path)
    return RepeatJob(
        case, Variant("v", "anthropic", "claude-x"), 0, AgentConfig(name="fake", type="fake")
    )


def test_provider_mismatch_fails_naming_both(tmp_path: Path) -> None:
    row = run_repeat(_job(tmp_path), FakeAdapter("zen", "mini-free"), RepeatSettings(root=tmp_path))
    assert row["passed"] is False
    assert (
        "requested anthropic:claude-x" in row["error"] and "resolved zen:mini-free" in row["error"]
    )
    assert (row["provider"], row["model"]) == ("zen", "mini-free")
    assert (row["requestedProvider"], row["requestedModel"]) == ("anthropic", "claude-x")


def test_provider_fallback_flag_accepts_and_notes_it(tmp_path: Path) -> None:
    settings = RepeatSettings(root=tmp_path, allow_provider_fallback=True)
    row = run_repeat(_job(tmp_path), FakeAdapter("zen", "mini-free"), settings)
    assert row["passed"] is True and "accepted with --allow-provider-fallback" in row["error"]


def test_no_summary_means_null_behaviors_never_zeros(tmp_path: Path) -> None:
    row = run_repeat(_job(tmp_path), FakeAdapter(), RepeatSettings(root=tmp_path))
    assert row["behaviors"] is None and row["passed"] is True
    assert list(row)[: len(ROW_FIELDS)] == list(ROW_FIELDS)


def test_a_run_without_a_model_turn_has_null_behaviors_not_zeros(tmp_path: Path) -> None:
    # As real Claude Code without a login, or Codex without a network: a
    # session, no model turn. Zeros would drag the cell's medians down.
    from capeval.core.runsummary import summary_from_json

    class NoTurn(FakeAdapter):
        def run(self, request: AgentRequest) -> AgentResult:
            self.seen.append(request)
            return AgentResult(
                exitCode=1,
                status="failed",
                sessionId="s1",
                turnsUsed=0,
                summary=summary_from_json({"status": "failed", "turns": []}),
                error="claude-code error: Not logged in",
            )

    row = run_repeat(_job(tmp_path), NoTurn(), RepeatSettings(root=tmp_path))
    assert row["behaviors"] is None and row["turnsUsed"] == 0
    assert row["passed"] is False and "Not logged in" in row["error"]


def test_an_agent_whose_own_stream_reports_failure_fails_despite_exit_0(
    tmp_path: Path,
) -> None:
    # Claude Code's `result` line can say error_max_turns while the process
    # exits 0; the grader passing on a half-done workdir must not pass the repeat.
    class StreamSaysFailed(FakeAdapter):
        def run(self, request: AgentRequest) -> AgentResult:
            (request.workdir / "done.txt").write_text("ok")
            return AgentResult(
                exitCode=0, status="failed", turnsUsed=40, error="claude-code error_max_turns"
            )

    row = run_repeat(_job(tmp_path), StreamSaysFailed(), RepeatSettings(root=tmp_path))
    assert row["verifyExitCode"] == 0 and row["agentExitCode"] == 0
    assert row["passed"] is False and row["status"] == "failed"
    assert row["error"] == (
        "agent exited 0 but reported status failed: claude-code error_max_turns"
    )


def test_null_behaviors_fail_a_behavior_requirement(tmp_path: Path) -> None:
    job = _job(tmp_path, requireBehaviors=[{"metric": "webFetchToolCallCount", "min": 1}])
    row = run_repeat(job, FakeAdapter(), RepeatSettings(root=tmp_path))
    assert row["passed"] is False and "no behaviors were captured" in row["error"]


def test_budget_without_reported_turns_fails_closed(tmp_path: Path) -> None:
    class NoTurns(FakeAdapter):
        def run(self, request: AgentRequest) -> AgentResult:
            result = super().run(request)
            result.turnsUsed = None
            return result

    row = run_repeat(_job(tmp_path, maxTurns=5), NoTurns(), RepeatSettings(root=tmp_path))
    assert row["overBudget"] is True and row["passed"] is False


def test_adapter_crash_costs_one_repeat_and_stops_the_http_server(tmp_path: Path) -> None:
    adapter = FakeAdapter(raise_error=True)
    job = _job(tmp_path, httpFixture=True, prompt="see {{HTTP_URL}}")
    row = run_repeat(job, adapter, RepeatSettings(root=tmp_path, tmp_parent=tmp_path))
    assert row["passed"] is False and "adapter RuntimeError: adapter bug" in row["error"]
    request = adapter.seen[0]
    assert request.http_url and request.prompt == f"see {request.http_url}"
    assert "EVAL_HTTP_TOKEN" not in request.env  # the agent must find the token itself
    port = int(request.http_url.rsplit(":", 1)[1])
    with socket.socket() as s, pytest.raises(ConnectionRefusedError):
        s.connect(("127.0.0.1", port))
    # Temp dirs (workdir and capture) are gone.
    assert not request.workdir.exists() and not request.capture_dir.exists()
    assert request.capture_dir.parent == request.workdir.parent  # capture is outside the workdir


def test_unsafe_fixture_gives_a_failed_row_not_a_crash(tmp_path: Path) -> None:
    job = _job(tmp_path)
    (tmp_path / "evals/capability/fixtures/alpha/bad").symlink_to("/etc/passwd")
    adapter = FakeAdapter()
    row = run_repeat(job, adapter, RepeatSettings(root=tmp_path))
    assert row["passed"] is False and "symlink target '/etc/passwd' is absolute" in row["error"]
    assert adapter.seen == []


def test_a_workdir_failure_row_is_redacted_like_any_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The setup-failure row skipped redaction: its error quotes the fixture's
    # symlink target, here a secret's value.
    monkeypatch.setenv("DEPLOY_TOKEN", "tok-9f8e7d6c5b4a")
    job = _job(tmp_path)
    (tmp_path / "evals/capability/fixtures/alpha/bad").symlink_to("/srv/tok-9f8e7d6c5b4a")
    row = run_repeat(job, FakeAdapter(), RepeatSettings(root=tmp_path))
    assert "workdir not prepared" in row["error"]
    assert "tok-9f8e7d6c5b4a" not in json.dumps(row) and "[REDACTED]" in row["error"]


def test_a_rows_preview_cut_in_a_key_keeps_no_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAPEVAL_TEST_API_KEY", SECRET)
    # The scripted agent's preview keeps 300 characters: the key is cut at 10.
    write_case(tmp_path, "alpha", trajectories={"oracle": [write_done("x" * 290 + SECRET)]})
    (case,) = load_cases(tmp_path)
    agent = AgentConfig(name="scripted", type="scripted")
    job = RepeatJob(case, Variant("v", "scripted", "oracle"), 0, agent)
    row = run_repeat(job, ScriptedAdapter(agent), RepeatSettings(root=tmp_path))
    assert row["textPreview"].endswith(REDACTED), row["textPreview"][-30:]
    assert SECRET[:8] not in json.dumps(row)


def test_a_workdir_that_failed_under_a_budget_reports_over_budget(tmp_path: Path) -> None:
    # No turn count was reported, and a budget applies: overBudget fails closed
    # on every row, a setup failure's included.
    job = _job(tmp_path, maxTurns=5)
    (tmp_path / "evals/capability/fixtures/alpha/bad").symlink_to("/etc/passwd")
    row = run_repeat(job, FakeAdapter(), RepeatSettings(root=tmp_path))
    assert "workdir not prepared" in row["error"]
    assert (row["maxTurns"], row["turnsUsed"], row["overBudget"]) == (5, None, True)
    unbudgeted = run_repeat(
        _job(tmp_path / "b"), FakeAdapter(), RepeatSettings(root=tmp_path / "b")
    )
    assert unbudgeted["overBudget"] is False


def test_agent_and_grader_get_private_temp_dirs_deleted_with_the_repeat(tmp_path: Path) -> None:
    # A real command agent and a real grader, each leaving a file in $TMPDIR
    # and noting where, as opencode leaves its unpacked library there.
    seen = tmp_path / "seen"
    seen.mkdir()
    agent = AgentConfig(
        name="leaky",
        type="command",
        command=(
            f"bash -c 'f=$(mktemp) && echo \"$f\" >> {seen}/agent && echo ok > done.txt' {{prompt}}"
        ),
    )
    grader = (
        f'f=$(mktemp) && echo "$f" >> {seen}/grader\n'
        # The agent's temp files are not in the grader's temp dir.
        'test -z "$(ls -A "$TMPDIR" | grep -v "^$(basename "$f")$")"\n'
        'test "$(cat done.txt)" = ok\n'
    )
    write_case(tmp_path, "alpha", verify=grader)
    (case,) = load_cases(tmp_path)
    parent = tmp_path / "repeats"
    parent.mkdir()
    settings = RepeatSettings(root=tmp_path, tmp_parent=parent)
    rows = [
        run_repeat(
            RepeatJob(case, Variant("v", None, None), n, agent), make_adapter(agent), settings
        )
        for n in range(2)
    ]
    assert [r["passed"] for r in rows] == [True, True], [r["error"] for r in rows]
    agent_files = [Path(p) for p in (seen / "agent").read_text().split()]
    grader_files = [Path(p) for p in (seen / "grader").read_text().split()]
    for agent_file, grader_file in zip(agent_files, grader_files, strict=True):
        # Inside the repeat's own directory, one per process, gone with the repeat.
        assert agent_file.parent.name == "agent-tmp" and grader_file.parent.name == "verify-tmp"
        assert agent_file.parent.parent == grader_file.parent.parent
        assert agent_file.parent.parent.parent == parent
        assert not agent_file.exists() and not grader_file.exists()
    assert agent_files[0].parent != agent_files[1].parent  # repeats never share one
    assert list(parent.iterdir()) == []


def test_an_adapter_ignoring_its_timeout_is_stopped_and_the_grader_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The watchdog is the runner's guard against an adapter that does not
    # honour its own timeout: past timeout + margin it cancels the repeat's
    # processes, the row says "timeout", and the scope is reopened so the
    # grader still judges the workdir (a timed-out repeat must not pass).
    from capeval.proc.process import run_process
    from capeval.runner import repeat

    class IgnoresTimeout(FakeAdapter):
        def run(self, request: AgentRequest) -> AgentResult:
            (request.workdir / "done.txt").write_text("ok")
            proc = run_process(["sleep", "30"], cwd=request.workdir)  # no timeout passed on
            return AgentResult(exitCode=proc.exit_code, status="done", turnsUsed=1)

    monkeypatch.setattr(repeat, "WATCHDOG_MARGIN_S", 0.3)
    settings = RepeatSettings(root=tmp_path, agent_timeout_s=0.2)
    row = run_repeat(_job(tmp_path), IgnoresTimeout(), settings)
    assert row["status"] == "timeout" and row["passed"] is False
    assert "timed out" in row["error"] or "agent timeout" in row["error"]
    assert row["verifyExitCode"] == 0  # the grader ran after the cancel
    assert row["durationMs"] < 10_000


def test_a_secret_in_an_agent_reported_provider_or_model_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The agent's own account of its provider and model is agent text: a
    # secret in it must not reach the row (or the v3 export, or history).
    monkeypatch.setenv("PROVIDER_API_KEY", "sk-secret123abc")
    adapter = FakeAdapter("prov-sk-secret123abc", "m-sk-secret123abc")
    row = run_repeat(_job(tmp_path), adapter, RepeatSettings(root=tmp_path))
    assert "sk-secret123abc" not in json.dumps(row)
    assert row["provider"] == "prov-[REDACTED]" and row["model"] == "m-[REDACTED]"
    assert row["requestedProvider"] == "anthropic"  # capeval's own identity is kept


def test_a_reported_provider_equal_to_the_requested_one_is_kept_even_if_a_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # OPENAI_API_KEY=ollama is common: the row's identity must stay the cell's.
    monkeypatch.setenv("OPENAI_API_KEY", "anthropic")
    row = run_repeat(
        _job(tmp_path), FakeAdapter("anthropic", "claude-x"), RepeatSettings(root=tmp_path)
    )
    assert (row["provider"], row["model"]) == ("anthropic", "claude-x")
    assert row["passed"] is True


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
