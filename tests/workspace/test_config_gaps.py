"""Configuration that `capeval validate` passed and every repeat then failed on.

Spec section 2 / README: validate reports every configuration problem before
any agent starts (`file: field: fix`, exit 2).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capeval.agents.base import AgentRequest
from capeval.agents.command import CommandTemplateError, hook_path
from capeval.agents.scripted import ScriptedAdapter
from capeval.config import load_config
from capeval.core.agentconfig import AgentConfig, hook_problem
from capeval.core.problems import ProblemsError
from tests.casefactory import write_case
from tests.clirun import capeval

AGENT = '[agents.mine]\ntype = "command"\ncommand = "bin/agent {prompt}"\n'


def problems(root: Path, text: str) -> list[str]:
    (root / "capeval.toml").write_text(text, encoding="utf-8")
    with pytest.raises(ProblemsError) as info:
        load_config(root)
    return [str(p) for p in info.value.problems]


def loads(root: Path, text: str) -> None:
    (root / "capeval.toml").write_text(text, encoding="utf-8")
    load_config(root)


# --- env -------------------------------------------------------------------------------


def test_env_names_no_environment_can_hold_are_refused(tmp_path: Path) -> None:
    texts = problems(tmp_path, AGENT + 'env = {"A B" = "1", "" = "x", "X=Y" = "z", "1A" = "2"}\n')
    assert [t.split(": ")[1] for t in texts] == [
        'agents.mine.env."A B"',
        'agents.mine.env.""',
        'agents.mine.env."X=Y"',
        "agents.mine.env.1A",
    ]
    assert all("is no environment variable name; use letters, digits and '_'" in t for t in texts)


def test_a_nul_byte_in_an_env_value_is_refused(tmp_path: Path) -> None:
    # subprocess raised "embedded null byte" in every repeat.
    (text,) = problems(tmp_path, '[agents.claude-code]\nenv = {A = "x\\u0000y"}\n')
    assert text.startswith("capeval.toml: agents.claude-code.env.A: the value holds a NUL byte")


def test_ordinary_env_names_and_values_pass(tmp_path: Path) -> None:
    loads(tmp_path, AGENT + 'env = {CORBITS_LOG = "debug", _x1 = "", path_ = "a b=c"}\n')


def test_validate_exits_2_on_a_bad_env_before_any_agent(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    (tmp_path / "capeval.toml").write_text(AGENT + 'env = {"X=Y" = "1"}\n')
    proc = capeval("validate", "--root", tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert 'capeval.toml: agents.mine.env."X=Y": ' in proc.stdout + proc.stderr


# --- bounds ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("max_turns = 9223372036854775807", "max_turns"),
        ("max_turns = 1000001", "max_turns"),
        ("repeats = 9223372036854775807", "repeats"),
        ("repeats = 1000001", "repeats"),
    ],
)
def test_turn_budgets_and_repeats_past_the_bound_are_refused(
    tmp_path: Path, line: str, field: str
) -> None:
    (text,) = problems(tmp_path, line + "\n")
    assert text.startswith(f"capeval.toml: {field}: must be <= 1000000"), text
    assert "at most 1,000,000" in text


def test_the_bounds_themselves_pass(tmp_path: Path) -> None:
    loads(tmp_path, "max_turns = 1000000\nrepeats = 1000000\n")


# --- hook ------------------------------------------------------------------------------


@pytest.mark.parametrize("hook", ["/tmp/x.sh", "../../../x.sh", "a/../../x.sh", ".", "./"])
def test_a_hook_outside_the_workdir_is_refused_by_validate_as_by_the_run(
    tmp_path: Path, hook: str
) -> None:
    (text,) = problems(tmp_path, AGENT + f"hook = {json.dumps(hook)}\n")
    rule = hook_problem(hook)
    assert rule is not None
    assert text == f"capeval.toml: agents.mine.hook: {rule}"
    with pytest.raises(CommandTemplateError, match="must be relative to the workdir"):
        hook_path(tmp_path, hook)


def test_a_hook_inside_the_workdir_passes(tmp_path: Path) -> None:
    loads(tmp_path, AGENT + 'hook = "hooks/capture.sh"\n')
    assert hook_path(tmp_path, "hooks/capture.sh") == tmp_path / "hooks" / "capture.sh"


# --- {prompt} --------------------------------------------------------------------------


def test_a_command_template_without_prompt_is_refused(tmp_path: Path) -> None:
    (text,) = problems(
        tmp_path,
        '[agents.mine]\ntype = "command"\ncommand = "bin/agent --cwd {workdir}"\n'
        'args = ["--model", "{model}"]\n',
    )
    assert text.startswith(
        "capeval.toml: agents.mine.command: has no {prompt} placeholder, nor do its args"
    )
    assert "{prompt} is the only placeholder that carries it" in text


@pytest.mark.parametrize(
    "table",
    [
        'command = "bin/agent --prompt={prompt}"',
        'command = "bin/agent --cwd {workdir}"\nargs = ["--", "{prompt}"]',
    ],
)
def test_prompt_in_a_word_or_in_args_passes(tmp_path: Path, table: str) -> None:
    loads(tmp_path, f'[agents.mine]\ntype = "command"\n{table}\n')


def test_a_misspelt_prompt_is_reported_once_as_the_near_miss(tmp_path: Path) -> None:
    (text,) = problems(tmp_path, '[agents.mine]\ntype = "command"\ncommand = "agent {Prompt}"\n')
    assert 'unknown placeholder {Prompt} (did you mean "{prompt}"?)' in text


# --- scripted trajectory ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["../../x", "sub/oracle", "..", "a\\\\b"])
def test_a_trajectory_name_with_a_path_is_refused(tmp_path: Path, name: str) -> None:
    (text,) = problems(tmp_path, f'[agents.s]\ntype = "scripted"\ntrajectory = "{name}"\n')
    assert text.startswith("capeval.toml: agents.s.trajectory: trajectory name "), text
    assert "no '/', '\\' or '..'" in text


def test_the_scripted_agent_plays_nothing_outside_trajectories(tmp_path: Path) -> None:
    # `../../x` played `cases/x.json`, a file the case never shipped as a trajectory.
    case_dir = write_case(tmp_path, "alpha")
    outside = case_dir.parent / "x.json"
    call = {"name": "write_file", "arguments": {"path": "played.txt", "content": "x"}}
    outside.write_text(json.dumps({"turns": [{"toolCalls": [call]}]}))
    work = tmp_path / "work"
    work.mkdir()
    request = AgentRequest(
        workdir=work,
        prompt="p",
        provider="scripted",
        model="oracle",
        case_dir=case_dir,
        capture_dir=tmp_path / "capture",
        timeout_s=30.0,
    )
    config = AgentConfig(name="s", type="scripted", trajectory="../../x")
    result = ScriptedAdapter(config).run(request)
    assert result.status == "failed"
    assert "trajectory name '../../x' must be a file name" in (result.error or "")
    assert not (work / "played.txt").exists()
