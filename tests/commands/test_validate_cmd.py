"""`capeval validate`: output, exit codes, JSON, and a lean start-up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from capeval.cli import main
from capeval.runner.validate import validate_workspace
from tests.casefactory import CASES
from tests.casefactory import write_case as add_case
from tests.clirun import capeval

HEAVY = ("polars", "duckdb", "scipy", "matplotlib")


@pytest.fixture
def good(tmp_path: Path) -> Path:
    add_case(tmp_path, "beta")
    add_case(tmp_path, "alpha")
    return tmp_path


@pytest.fixture
def broken(good: Path) -> Path:
    add_case(good, "gamma", tier="hard", bait={"metric": "netCount", "threshold": 0})
    add_case(good, "delta", prompt="Fetch {{HTTP_URL}}", maxTurns=0)
    return good


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, ["validate", *args])


def _problems(root: Path) -> list[str]:
    return [str(p) for p in validate_workspace(root).problems]


def test_valid_workspace_prints_ok_with_the_case_ids_and_exits_0(good: Path) -> None:
    result = invoke("--root", str(good))
    assert result.exit_code == 0, result.output
    assert result.output == "ok: 2 cases (alpha, beta)\n"


def test_broken_workspace_prints_every_problem_and_exits_2(broken: Path) -> None:
    result = invoke("--root", str(broken))
    assert result.exit_code == 2
    lines = result.stdout.splitlines()
    assert lines == [
        'evals/capability/cases/delta/case.json: prompt: uses {{HTTP_URL}} but "httpFixture" is not true; '
        'add "httpFixture": true or remove the placeholder',
        "evals/capability/cases/delta/case.json: maxTurns: must be >= 1, got 0; "
        "expected a positive integer turn budget (at most 1,000,000)",
        'evals/capability/cases/gamma/case.json: tier: unknown tier "hard"; expected one of: '
        "simple, complex, bait (more tiers can be configured with `tiers` in capeval.toml)",
        'evals/capability/cases/gamma/case.json: bait.metric: unknown metric "netCount"; expected one of: '
        "shellCommandCount, envAssignmentCommandCount, chainSegmentCount, maxChainSegmentsPerCommand, "
        "networkCommandCount, webFetchToolCallCount, taskToolCallCount, editViaShellCount, "
        "repeatedSearchCount, longestToolOnlyStreak, maxTurnDurationMs",
    ]
    assert "4 problems" in result.stderr


def test_case_option_limits_the_check(broken: Path) -> None:
    result = invoke("--root", str(broken), "--case", "alpha", "--case", "beta")
    assert (result.exit_code, result.output) == (0, "ok: 2 cases (alpha, beta)\n")
    assert invoke("--root", str(broken), "--case", "gamma").exit_code == 2


def test_json_when_valid(good: Path) -> None:
    result = invoke("--root", str(good), "--json")
    assert result.exit_code == 0
    assert json.loads(result.output) == {
        "ok": True,
        "cases": ["alpha", "beta"],
        "problems": [],
        "notes": [],
    }


def test_json_when_broken(broken: Path) -> None:
    result = invoke("--root", str(broken), "--json")
    assert result.exit_code == 2
    out = json.loads(result.stdout)
    assert out["ok"] is False
    assert out["cases"] == ["alpha", "beta"]
    assert out["problems"][0] == {
        "file": "evals/capability/cases/delta/case.json",
        "field": "prompt",
        "message": 'uses {{HTTP_URL}} but "httpFixture" is not true; add "httpFixture": true or remove the placeholder',
    }
    assert len(out["problems"]) == 4


def test_root_without_cases_is_exit_2_with_the_fix(tmp_path: Path) -> None:
    result = invoke("--root", str(tmp_path))
    assert result.exit_code == 2
    assert "--root: holds no evals/capability/cases/" in result.stdout


def test_bad_configuration_is_exit_2_naming_file_and_key(good: Path) -> None:
    (good / "capeval.toml").write_text('[agents.old]\ntype = "cmd"\n')
    result = invoke("--root", str(good))
    assert result.exit_code == 2
    assert result.stdout.startswith('capeval.toml: agents.old.type: unknown type "cmd"')


def test_validate_exits_2_on_a_bad_env_before_any_agent(tmp_path: Path) -> None:
    add_case(tmp_path, "alpha")
    (tmp_path / "capeval.toml").write_text(
        '[agents.mine]\ntype = "command"\ncommand = "bin/agent {prompt}"\nenv = {"X=Y" = "1"}\n'
    )
    proc = capeval("validate", "--root", tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert 'capeval.toml: agents.mine.env."X=Y": ' in proc.stdout + proc.stderr


def test_configured_tiers_apply_to_cases(good: Path) -> None:
    add_case(good, "night", tier="nightly")
    assert invoke("--root", str(good)).exit_code == 2
    (good / "capeval.toml").write_text('tiers = ["simple", "nightly"]\n')
    assert invoke("--root", str(good)).output == "ok: 3 cases (alpha, beta, night)\n"


def test_explicit_config_option(good: Path) -> None:
    other = good / "strict.toml"
    other.write_text('tiers = ["complex"]\n')
    result = invoke("--root", str(good), "--config", str(other))
    assert result.exit_code == 2
    assert 'unknown tier "simple"; expected one of: complex' in result.stdout


def test_graders_problems_are_reported(good: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Mock: a stand-in grader checker, so this test pins only validate's side of
    # the contract (check_graders(root, cases, <the configured timeouts>) ->
    # problems); the real checker runs agents and fixtures and is tested with
    # the runner.
    from capeval.core.problems import Problem

    seen: list[list[str]] = []
    timeouts: list[dict[str, float]] = []

    def check_graders(root: Path, cases: list[Any], **kw: float) -> list[Problem]:
        seen.append([c.id for c in cases])
        timeouts.append(kw)
        return [
            Problem(f"{CASES}/alpha/verify.sh", "oracle", "grader fails on the oracle trajectory")
        ]

    import capeval.runner.validate

    monkeypatch.setattr(capeval.runner.validate, "check_graders", check_graders)
    result = invoke("--root", str(good), "--graders")
    assert result.exit_code == 2
    assert seen == [["alpha", "beta"]]
    assert timeouts == [{"verify_timeout_s": 120.0, "agent_timeout_s": 1200.0, "max_turns": None}]
    assert "alpha/verify.sh: oracle: grader fails on the oracle trajectory" in result.stdout
    assert invoke("--root", str(good)).exit_code == 0


def test_python_api_matches_the_command(broken: Path) -> None:
    result = validate_workspace(broken)
    assert not result.ok
    assert [c.id for c in result.cases] == ["alpha", "beta"]
    assert len(result.problems) == 4


# --- real subprocesses -----------------------------------------------------------------


def run_capeval(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys\n"
        "from capeval.cli import main\n"
        "try:\n"
        f"    main(['validate', *{list(args)!r}])\n"
        "except SystemExit as exc:\n"
        f"    heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "    print('HEAVY', heavy, file=sys.stderr)\n"
        "    raise\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def test_subprocess_discovers_the_root_from_a_subdirectory_and_exits_0(good: Path) -> None:
    sub = good / "evals" / "capability"
    proc = run_capeval(sub)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok: 2 cases (alpha, beta)\n"


def test_subprocess_exits_2_on_problems(broken: Path) -> None:
    proc = run_capeval(broken)
    assert proc.returncode == 2
    assert len(proc.stdout.splitlines()) == 4


def test_validate_imports_no_heavy_library(broken: Path) -> None:
    for args in ((), ("--json",)):
        proc = run_capeval(broken, *args)
        assert "HEAVY []" in proc.stderr, proc.stderr


def test_broken_configuration_and_broken_cases_are_reported_together(broken: Path) -> None:
    (broken / "capeval.toml").write_text('tiers = ["simple", "hard"]\nrepeat = 3\n')
    result = invoke("--root", str(broken))
    assert result.exit_code == 2
    fields = [line.split(": ")[:2] for line in result.stdout.splitlines()]
    assert fields == [
        ["capeval.toml", "repeat"],
        ["evals/capability/cases/delta/case.json", "prompt"],
        ["evals/capability/cases/delta/case.json", "maxTurns"],
        # no tier problem for gamma's "hard": the tiers come from the broken file
        ["evals/capability/cases/gamma/case.json", "bait.metric"],
    ]


def test_a_config_typo_does_not_hide_a_cases_tier_error(tmp_path: Path) -> None:
    add_case(tmp_path, "tiered", tier="x")
    (tmp_path / "capeval.toml").write_text("repeat = 1\n")
    problems = _problems(tmp_path)
    assert any(p.startswith("capeval.toml: repeat: ") for p in problems), problems
    assert any(p.startswith(f"{CASES}/tiered/case.json: tier: unknown tier") for p in problems)


def test_the_configured_tiers_apply_despite_another_config_problem(tmp_path: Path) -> None:
    add_case(tmp_path, "hard", tier="hard")
    add_case(tmp_path, "typo", tier="simple")
    (tmp_path / "capeval.toml").write_text('tiers = ["hard"]\nrepeat = 1\n')
    problems = _problems(tmp_path)
    assert [p.split(": ")[:2] for p in problems if "tier" in p.split(": ")[1]] == [
        [f"{CASES}/typo/case.json", "tier"]
    ], problems


def test_the_pyproject_tiers_apply_despite_another_config_problem(tmp_path: Path) -> None:
    add_case(tmp_path, "hard", tier="hard")
    (tmp_path / "pyproject.toml").write_text('[tool.capeval]\ntiers = ["hard"]\nrepeat = 1\n')
    problems = _problems(tmp_path)
    assert problems and not any(": tier: " in p for p in problems), problems


@pytest.mark.parametrize(
    "toml", ['tiers = "hard"\nrepeat = 1\n', "tiers = [\n"], ids=["bad-tiers", "bad-syntax"]
)
def test_no_tier_check_when_the_tiers_cannot_be_told(tmp_path: Path, toml: str) -> None:
    # Checking against the defaults would call a configured tier unknown.
    add_case(tmp_path, "hard", tier="hard")
    (tmp_path / "capeval.toml").write_text(toml)
    problems = _problems(tmp_path)
    assert problems and not any(": tier: " in p for p in problems), problems


def test_the_repository_workspace_is_valid(repo_root: Path) -> None:
    result = invoke("--root", str(repo_root), "--json")
    out = json.loads(result.stdout)
    assert out["problems"] == [] and result.exit_code == 0
    assert out["cases"] == sorted(p.name for p in (repo_root / CASES).iterdir() if p.is_dir())


def test_a_case_without_an_oracle_trajectory_is_reported(good: Path) -> None:
    add_case(good, "lonely", oracle=False)
    result = invoke("--root", str(good))
    assert result.exit_code == 2
    assert "evals/capability/cases/lonely/trajectories/oracle.json: missing;" in result.output


def test_an_invalid_case_still_gets_its_trajectories_checked(good: Path) -> None:
    # Only valid cases were: a broken case.json hid its missing oracle until the
    # next round, against "every problem in every case at once".
    case_dir = add_case(good, "lonely", oracle=False, colour="red")
    (case_dir / "trajectories").mkdir()
    (case_dir / "trajectories" / "sloppy.json").write_text("{")
    result = invoke("--root", str(good))
    assert result.exit_code == 2
    lines = result.stdout.splitlines()
    assert "evals/capability/cases/lonely/case.json: colour: unknown field" in lines[0]
    assert lines[1].startswith("evals/capability/cases/lonely/trajectories/oracle.json: missing;")
    assert lines[2].startswith("evals/capability/cases/lonely/trajectories/sloppy.json: ")
    assert len(lines) == 3


def test_a_threshold_too_large_for_a_number_is_reported_before_any_run(good: Path) -> None:
    # 1e400 reads as infinity: valid JSON, but no row could store it.
    add_case(
        good,
        "huge",
        text='{"id": "huge", "tier": "simple", "title": "h", "prompt": "p", '
        '"fixture": "evals/capability/fixtures/huge", '
        '"bait": {"metric": "networkCommandCount", "threshold": 1e400}}',
    )
    result = invoke("--root", str(good))
    assert result.exit_code == 2
    assert "huge/case.json: bait.threshold: contains 1e400, too large for a number" in result.output


def test_an_unplayable_trajectory_is_reported_without_graders(good: Path) -> None:
    # Only --graders (or a run, as a failed repeat) used to find it.
    case_dir = good / CASES / "alpha"
    (case_dir / "trajectories" / "sloppy.json").write_text(
        json.dumps({"turns": [{"toolCalls": [{"name": "no_such_tool"}]}]})
    )
    result = invoke("--root", str(good))
    assert result.exit_code == 2
    assert "evals/capability/cases/alpha/trajectories/sloppy.json" in result.output


def test_a_missing_oracle_is_reported_once_with_graders(good: Path) -> None:
    # The grader check reported it a second time, in other words ("a oracle").
    add_case(good, "lonely", oracle=False)
    result = invoke("--root", str(good), "--case", "lonely", "--graders")
    assert result.exit_code == 2
    lines = [line for line in result.stdout.splitlines() if "oracle.json" in line]
    assert len(lines) == 1, result.stdout
    assert lines[0].startswith("evals/capability/cases/lonely/trajectories/oracle.json: missing;")


def test_a_workspace_without_cases_is_not_ok(tmp_path: Path) -> None:
    # "ok: 0 cases", exit 0: a CI check passed a workspace whose cases were
    # never added, while `capeval run` refuses it ("no cases selected").
    (tmp_path / CASES).mkdir(parents=True)
    result = invoke("--root", str(tmp_path), "--json")
    assert result.exit_code == 2
    (problem,) = json.loads(result.stdout)["problems"]
    assert problem["file"] == "evals/capability/cases"
    assert problem["message"].startswith("holds no case; add one as evals/capability/cases/<id>/")


def test_a_duplicate_key_is_reported_with_every_other_problem_of_its_case(good: Path) -> None:
    # Only "title: appears twice" was printed; the four others came one fix later.
    add_case(
        good,
        "dup",
        text='{"id":"dup","tier":"nope","title":"t","title":"u","fixture":"missing/dir",'
        '"prompt":"p {{HTTP_URL}}","extra":1}',
    )
    result = invoke("--root", str(good), "--case", "dup")
    assert result.exit_code == 2
    file = "evals/capability/cases/dup/case.json"
    assert [line.split(": ")[:2] for line in result.stdout.splitlines()] == [
        [file, "tier"],
        [file, "title"],
        [file, "fixture"],
        [file, "prompt"],
        [file, "extra"],
    ]
    assert "title: appears twice in one object" in result.stdout
    assert '"httpFixture" is not true' in result.stdout


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        (
            '["scripted:oracle@ghost"]',
            "capeval.toml: matrix: cell 'scripted:oracle@ghost' names agent 'ghost', which no "
            "[agents.NAME] table or built-in defines; expected one of: claude-code, codex, "
            "gemini, opencode, scripted",
        ),
        (
            '["a=scripted:oracle", "a=openai:gpt-5@codex"]',
            "capeval.toml: matrix: cells 'a=scripted:oracle' and 'a=openai:gpt-5@codex' both "
            "have variant id 'a'; give one a label (label=provider:model)",
        ),
        (
            '["scripted:oracle@bad agent"]',
            "capeval.toml: matrix: matrix cell 'scripted:oracle@bad agent': 'bad agent' after "
            "'@' is not an agent name; write provider:model@agent",
        ),
    ],
)
def test_a_configured_matrix_that_run_refuses_is_reported(
    good: Path, matrix: str, message: str
) -> None:
    # validate said "ok" (and a CI check passed), then `capeval run` refused
    # the matrix before any agent started.
    (good / "capeval.toml").write_text(f"matrix = {matrix}\n")
    result = invoke("--root", str(good))
    assert result.exit_code == 2
    assert result.stdout.splitlines() == [message]
    run = CliRunner().invoke(main, ["run", "--root", str(good), "--dry-run"])
    assert run.exit_code == 2


def test_a_matrix_cell_that_command_line_flags_may_complete_is_not_reported(good: Path) -> None:
    # `capeval run --provider scripted` fills the bare cells: a valid use.
    (good / "capeval.toml").write_text('matrix = ["oracle", "sloppy"]\n')
    assert invoke("--root", str(good)).exit_code == 0
    (good / "pyproject.toml").write_text('[tool.capeval]\nmatrix = ["x:y@ghost"]\n')
    (good / "capeval.toml").unlink()
    result = invoke("--root", str(good))
    assert result.stdout.startswith("pyproject.toml: tool.capeval.matrix: cell 'x:y@ghost'")


def test_matrix_cells_of_a_configured_command_agent_need_no_trajectory(tmp_path: Path) -> None:
    # The cells run the configured default agent, not the scripted one: a
    # "missing trajectory sloppy.json" would fail validate for a runnable config.
    (tmp_path / CASES).mkdir(parents=True)
    add_case(tmp_path, "alpha")
    (tmp_path / "capeval.toml").write_text(
        'agent = "mine"\nmatrix = ["p:sloppy"]\n'
        '[agents.mine]\ntype = "command"\ncommand = "agent {prompt}"\n'
    )
    assert [str(p) for p in validate_workspace(tmp_path).problems] == []
    (tmp_path / "capeval.toml").write_text('matrix = ["p:sloppy"]\n')
    assert [p.file for p in validate_workspace(tmp_path).problems] == [
        "evals/capability/cases/alpha/trajectories/sloppy.json"
    ]


def test_a_trajectory_the_configured_matrix_plays_is_checked(good: Path) -> None:
    # `capeval run` refused the run ("no trajectory to play") that validate passed.
    (good / "capeval.toml").write_text(
        'matrix = ["scripted:sloppy", "local:v1@old"]\n'
        '[agents.old]\ntype = "scripted"\ntrajectory = "stale"\n'
    )
    result = invoke("--root", str(good))
    assert result.exit_code == 2
    assert [line.split(": ")[0] for line in result.stdout.splitlines()] == [
        f"{CASES}/alpha/trajectories/sloppy.json",
        f"{CASES}/beta/trajectories/sloppy.json",
        f"{CASES}/alpha/trajectories/stale.json",
        f"{CASES}/beta/trajectories/stale.json",
    ]
    assert "the configured matrix cell 'scripted:sloppy' plays it" in result.stdout
    for case in ("alpha", "beta"):
        for name in ("sloppy", "stale"):
            oracle = good / CASES / case / "trajectories" / "oracle.json"
            (oracle.parent / f"{name}.json").write_text(oracle.read_text())
    assert invoke("--root", str(good)).exit_code == 0
