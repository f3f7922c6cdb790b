"""A case's oracle as a shell script, `solution/solve.sh`: the scripted agent
plays it as one `run_shell` turn, and its exit code decides the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capeval.agents.base import AgentRequest, AgentResult
from capeval.agents.scripted import ScriptedAdapter
from capeval.agents.trajectory import TrajectoryError, load_played, oracle_files, played_file
from capeval.core.agentconfig import AgentConfig


def case_with(tmp_path: Path, solve: str | None, oracle_json: bool = False) -> Path:
    case_dir = tmp_path / "case"
    (case_dir / "solution").mkdir(parents=True)
    if solve is not None:
        (case_dir / "solution" / "solve.sh").write_text(solve)
    if oracle_json:
        (case_dir / "trajectories").mkdir()
        turn = {
            "toolCalls": [{"name": "write_file", "arguments": {"path": "via", "content": "json"}}]
        }
        (case_dir / "trajectories" / "oracle.json").write_text(json.dumps({"turns": [turn]}))
    return case_dir


def play(tmp_path: Path, case_dir: Path, model: str = "oracle") -> tuple[Path, AgentResult]:
    workdir = tmp_path / "work"
    workdir.mkdir()
    request = AgentRequest(
        workdir=workdir,
        prompt="solve it",
        provider="scripted",
        model=model,
        case_dir=case_dir,
        capture_dir=tmp_path / "capture",
        timeout_s=60,
    )
    return workdir, ScriptedAdapter(AgentConfig(name="scripted", type="scripted")).run(request)


def test_solve_sh_is_played_as_one_run_shell_turn_in_the_workdir(tmp_path: Path) -> None:
    # $0 is the script's path in the case, so data can sit beside it.
    case_dir = case_with(tmp_path, 'cp "$(dirname "$0")/answer.txt" out.txt\necho solved\n')
    (case_dir / "solution" / "answer.txt").write_text("42\n")
    workdir, result = play(tmp_path, case_dir)
    assert (workdir / "out.txt").read_text() == "42\n"
    assert result.status == "done" and result.exitCode == 0
    summary = result.summary
    assert summary is not None
    assert summary.turnsUsed == 1 and summary.toolCallCount == 1
    (call,) = summary.turns[0].toolCalls
    assert call.name == "run_shell"
    assert call.arguments["command"].startswith("bash ")
    assert call.arguments["command"].endswith("solution/solve.sh")
    assert call.result == "solved\n"


def test_a_failing_solve_sh_fails_the_run_with_its_output(tmp_path: Path) -> None:
    case_dir = case_with(tmp_path, "echo 'no such file: x' >&2\nexit 3\n")
    _, result = play(tmp_path, case_dir)
    assert result.status == "failed" and result.exitCode == 1
    error = result.error or ""
    assert "solution/solve.sh failed: no such file: x" in error
    assert "(exit code 3)" in error


def test_oracle_json_is_played_when_a_case_ships_both(tmp_path: Path) -> None:
    case_dir = case_with(tmp_path, "echo shell > via\n", oracle_json=True)
    assert played_file(case_dir, "oracle").name == "oracle.json"
    assert [p.name for p in oracle_files(case_dir)] == ["oracle.json", "solve.sh"]
    workdir, _ = play(tmp_path, case_dir)
    assert (workdir / "via").read_text() == "json"


def test_solve_sh_stands_in_for_the_oracle_only(tmp_path: Path) -> None:
    case_dir = case_with(tmp_path, "true\n")
    assert played_file(case_dir, "oracle") == case_dir / "solution" / "solve.sh"
    assert played_file(case_dir, "sloppy") == case_dir / "trajectories" / "sloppy.json"
    _, result = play(tmp_path, case_dir, model="sloppy")
    assert result.status == "failed"
    assert "sloppy" in (result.error or "")


def test_a_crlf_solve_sh_is_refused_naming_the_fix(tmp_path: Path) -> None:
    case_dir = case_with(tmp_path, "set -e\r\necho hi\r\n")
    with pytest.raises(TrajectoryError, match=r"CRLF .*sed -i"):
        load_played(case_dir / "solution" / "solve.sh", name="oracle", file="solve.sh")
