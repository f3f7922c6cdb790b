"""What every repeat gets whatever its backend: a grader out of the agent's reach, an
environment allow-list, capeval's git configuration, a row that says its isolation."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from capeval.agents.scripted import ScriptedAdapter
from capeval.core.agentconfig import AgentConfig
from capeval.core.isolation import Isolation
from capeval.core.matrix import Variant
from capeval.runner.repeat import RepeatJob, RepeatSettings, run_repeat
from capeval.workspace import load_cases
from tests.runhelpers import capeval, read_rows, shell, write_case
from tests.sandboxes import require

BACKENDS = ["none", "bwrap"]


def repeat(root: Path, backend: str = "none", **iso: object) -> dict:
    require(backend)
    (case,) = load_cases(root)
    agent = AgentConfig(name="scripted", type="scripted")
    job = RepeatJob(
        case,
        Variant("scripted:oracle", "scripted", "oracle"),
        0,
        agent,
        isolation=Isolation(backend=backend, **iso),  # type: ignore[arg-type]
    )
    return run_repeat(job, ScriptedAdapter(agent), RepeatSettings(root=root))


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_grader_runs_the_copy_taken_before_the_agent_started(
    tmp_path: Path, backend: str
) -> None:
    verify = tmp_path / "evals/capability/cases/alpha/verify.sh"
    cheat = shell(f"printf 'exit 0\\n' > {verify} 2>/dev/null; true")
    write_case(tmp_path, "alpha", trajectories={"oracle": [cheat]})
    row = repeat(tmp_path, backend)
    assert row["passed"] is False and row["verifyExitCode"] == 1
    assert row["isolation"] == backend
    expected = 'test "$(cat done.txt 2>/dev/null)" = ok\n'
    assert verify.read_text() == (expected if backend == "bwrap" else "exit 0\n")


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_git_hook_filter_or_fsmonitor_of_the_agents_runs_in_the_grader(
    tmp_path: Path, backend: str
) -> None:
    marker = tmp_path / "pwned"
    rigged = shell(
        f"git config core.fsmonitor 'touch {marker}; false'"
        f" && git config filter.evil.clean 'touch {marker}; cat'"
        f" && git config alias.st '!touch {marker}'"
        " && echo '* filter=evil' > .gitattributes && echo ok > done.txt"
    )
    grader = (
        'git status --porcelain >/dev/null && git diff >/dev/null && test "$(cat done.txt)" = ok\n'
    )
    write_case(tmp_path, "alpha", trajectories={"oracle": [rigged]}, verify=grader)
    row = repeat(tmp_path, backend)
    assert row["passed"] is True, row["error"]
    assert not marker.exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_environment_is_an_allow_list_and_the_grader_gets_no_secret(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAPEVAL_TEST_UNLISTED", "leaked")
    monkeypatch.setenv("CAPEVAL_TEST_SHOWN", "shown")
    monkeypatch.setenv("CAPEVAL_TEST_SHOWN_TOKEN", "tok-123456")
    dump = shell("env > agent-env.txt; echo ok > done.txt")
    grader = (
        "set -e\n"
        "! grep -q CAPEVAL_TEST_UNLISTED agent-env.txt\n"
        "grep -qx CAPEVAL_TEST_SHOWN=shown agent-env.txt\n"
        "grep -qx CAPEVAL_TEST_SHOWN_TOKEN=tok-123456 agent-env.txt\n"
        f"! grep -qx HOME={os.environ['HOME']} agent-env.txt\n"
        'test "$CAPEVAL_TEST_SHOWN" = shown\n'
        'test -z "${CAPEVAL_TEST_SHOWN_TOKEN:-}" && test -z "${CAPEVAL_TEST_UNLISTED:-}"\n'
    )
    write_case(tmp_path, "alpha", trajectories={"oracle": [dump]}, verify=grader)
    passed = ("CAPEVAL_TEST_SHOWN", "CAPEVAL_TEST_SHOWN_TOKEN")
    row = repeat(tmp_path, backend, env_pass=passed)
    assert row["passed"] is True, row["error"]


def test_home_dirs_are_copied_in_and_what_the_agent_does_there_stays_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".tool").mkdir(parents=True)
    (home / ".tool" / "login").write_text("token\n")
    monkeypatch.setenv("HOME", str(home))
    use = shell('cat "$HOME/.tool/login" > done-login.txt && echo changed > "$HOME/.tool/login"'
                " && echo ok > done.txt")  # fmt: skip
    grader = 'test "$(cat done-login.txt)" = token && test "$(cat done.txt)" = ok\n'
    write_case(tmp_path / "ws", "alpha", trajectories={"oracle": [use]}, verify=grader)
    row = repeat(tmp_path / "ws", home_dirs=("~/.tool", "~/.missing"))
    assert row["passed"] is True, row["error"]
    assert (home / ".tool" / "login").read_text() == "token\n"


@pytest.mark.slow
def test_an_agent_appending_to_the_stream_fails_the_run_loudly(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    forge = shell(f'printf \'%s\' \'{{"passed": true, "id": "forged"\' >> {rows}')
    write_case(tmp_path, "alpha", trajectories={"oracle": [forge]})
    write_case(tmp_path, "beta")
    proc = capeval(tmp_path, "--jsonl", str(rows), "--quiet")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{rows}: changed by another process" in proc.stderr
    assert f"capeval run --resume {rows}" in proc.stderr
    assert b"}{" not in rows.read_bytes()  # no row glued onto the forged bytes


@pytest.mark.slow
def test_a_non_scripted_agent_without_a_sandbox_is_warned_about(tmp_path: Path) -> None:
    agent = tmp_path / "agent.sh"
    agent.write_text("#!/bin/sh\necho ok > done.txt\n")
    agent.chmod(0o755)
    write_case(tmp_path, "alpha")
    (tmp_path / "capeval.toml").write_text(
        f'[agents.mine]\ntype = "command"\ncommand = "{agent} {{prompt}}"\n'
    )
    proc = capeval(tmp_path, "--matrix", "p:m@mine", "--jsonl", str(tmp_path / "r.jsonl"))
    assert "warning: agent 'mine' runs with isolation = \"none\"" in proc.stderr
    (row,) = read_rows(tmp_path / "r.jsonl")
    assert row["isolation"] == "none"
    scripted = capeval(tmp_path, "--jsonl", str(tmp_path / "s.jsonl"))
    assert "warning" not in scripted.stderr


@pytest.mark.slow
def test_a_sandbox_this_host_lacks_is_refused_before_any_agent_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_case(tmp_path, "alpha")
    (tmp_path / "capeval.toml").write_text('isolation = "docker"\nimage = "no-such-image:0"\n')
    proc = capeval(
        tmp_path,
        "--jsonl",
        str(tmp_path / "r.jsonl"),
        env={"DOCKER_HOST": f"unix://{tmp_path}/no.sock"},
    )
    assert proc.returncode == 2
    assert 'isolation = "docker": ' in proc.stderr and "nothing was run" in proc.stderr
    assert not (tmp_path / "r.jsonl").exists()
    dry = capeval(tmp_path, "--dry-run", env={"DOCKER_HOST": f"unix://{tmp_path}/no.sock"})
    assert dry.returncode == 0 and "a real run would refuse to start" in dry.stderr
    assert "isolation docker" in dry.stdout


@pytest.mark.slow
def test_the_flag_overrides_the_configuration(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    (tmp_path / "capeval.toml").write_text('isolation = "docker"\n')
    proc = capeval(tmp_path, "--isolation", "none", "--jsonl", str(tmp_path / "r.jsonl"))
    assert proc.returncode == 0, proc.stderr
    assert [r["isolation"] for r in read_rows(tmp_path / "r.jsonl")] == ["none"]
    no_image = capeval(tmp_path, "--jsonl", str(tmp_path / "q.jsonl"))
    assert no_image.returncode == 2 and "needs an image" in no_image.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="Claude Code's refusal concerns root only")
def test_root_claude_code_without_a_sandbox_is_refused_not_told_it_is_in_one(
    tmp_path: Path,
) -> None:
    write_case(tmp_path, "alpha")
    (tmp_path / "capeval.toml").write_text("[agents.cc]\ntype = 'claude-code'\ncommand = 'sh'\n")
    proc = capeval(tmp_path, "--matrix", "anthropic:m@cc", "--jsonl", str(tmp_path / "r.jsonl"))
    assert proc.returncode == 2
    assert "Claude Code refuses --dangerously-skip-permissions as root" in proc.stderr
    assert 'env = { IS_SANDBOX = "1" }' in proc.stderr


def test_rows_carry_their_isolation_in_the_documented_place() -> None:
    from capeval.core.row import CONTEXT_FIELDS, IDENTITY_FIELDS

    assert "isolation" in CONTEXT_FIELDS and "isolation" in IDENTITY_FIELDS
    doc = (Path(__file__).resolve().parents[2] / "docs/result-formats.md").read_text()
    assert "| `isolation` |" in doc
    assert json.dumps("isolation")


@pytest.mark.slow
def test_a_resume_finishes_the_run_in_the_sandbox_it_was_started_in(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    rows = tmp_path / "r.jsonl"
    first = capeval(tmp_path, "--isolation", "none", "--jsonl", str(rows))
    assert first.returncode == 0, first.stderr
    plan = json.loads((tmp_path / "r.jsonl.plan.json").read_text())
    assert plan["isolation"] == "none"
    other = capeval(tmp_path, "--resume", str(rows), "--isolation", "bwrap")
    assert other.returncode == 2 and "--isolation bwrap differs from the run's plan" in other.stderr
    again = capeval(tmp_path, "--resume", str(rows))
    assert again.returncode == 0, again.stderr
