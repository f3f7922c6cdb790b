"""`capeval agents`: a script without its execute bit is named as such, and
`list` stars the agents the configured matrix plays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from capeval.cli import main
from capeval.runner.options import RunOptions
from capeval.runner.plan import RunError, plan_run
from tests.casefactory import write_case

SCRIPT = "#!/bin/sh\necho 'mine 1.0.0'\n"


def agents(root: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["agents", *args, "--root", str(root)])


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    write_case(tmp_path, "alpha")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "mine").write_text(SCRIPT)  # no execute bit
    (tmp_path / "capeval.toml").write_text(
        'matrix = ["local:v1@mine"]\n'
        '[agents.mine]\ntype = "command"\ncommand = "bin/mine {workdir} {prompt}"\n'
    )
    return tmp_path


def test_check_says_not_executable_with_the_fix(workspace: Path) -> None:
    result = agents(workspace, "check", "mine")
    assert result.exit_code == 1
    script = workspace / "bin" / "mine"
    assert f"FAIL binary: '{script}' exists but is not executable: run chmod +x {script}" in (
        result.output
    )
    assert "not found" not in result.output
    script.chmod(0o755)
    assert agents(workspace, "check", "mine").exit_code == 0


def test_list_and_run_say_not_executable_too(workspace: Path) -> None:
    result = agents(workspace, "list")
    assert "* mine             command      NOT EXECUTABLE" in result.output
    with pytest.raises(RunError, match=r"\(agent 'mine'\) exists but is not executable: run chmod"):
        plan_run(RunOptions(root=workspace, jsonl=workspace / "r.jsonl"))


def test_a_name_on_path_without_execute_bit_is_named_where_it_is(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(workspace / "bin"))
    (workspace / "capeval.toml").write_text(
        '[agents.mine]\ntype = "command"\ncommand = "mine {prompt}"\n'
    )
    result = agents(workspace, "check", "mine")
    assert f"exists on PATH at {workspace / 'bin' / 'mine'} but is not executable" in result.output


def test_list_stars_what_the_matrix_plays_not_the_unused_default(workspace: Path) -> None:
    text = agents(workspace, "list").output.splitlines()
    assert [line.split()[1] for line in text if line.startswith("*")] == ["mine"]
    assert "  scripted         scripted     built in" in text
    assert text[-1] == "(* played by capeval run: mine)"
    data = json.loads(agents(workspace, "list", "--json").output)
    assert (data["default"], data["played"]) == ("scripted", ["mine"])


def test_list_stars_the_default_agent_when_no_matrix_names_one(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    text = agents(tmp_path, "list").output.splitlines()
    assert [line.split()[1] for line in text if line.startswith("*")] == ["scripted"]
