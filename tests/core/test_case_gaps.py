"""Invalid cases that passed `capeval validate` and then failed every repeat,
and a fixture whose own .gitignore hid files from the workdir's baseline."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from capeval.agents.trajectory import validate_trajectory
from capeval.cli import main
from capeval.core.case import MAX_ID_LENGTH, MAX_PROMPT_BYTES, MAX_TURNS
from capeval.runner.validate import validate_workspace
from capeval.runner.workdir import prepare_workdir
from tests.casefactory import CASES, FIXTURES, write_case


def _validate(root: Path) -> tuple[int, list[str]]:
    result = CliRunner().invoke(main, ["validate", "--root", str(root)])
    return result.exit_code, result.output.splitlines()


def _problems(root: Path) -> list[str]:
    return [str(p) for p in validate_workspace(root).problems]


# --- 1. the fixture's own .gitignore -------------------------------------------


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def test_files_the_fixtures_own_gitignore_names_are_in_the_baseline_commit(
    tmp_path: Path,
) -> None:
    write_case(tmp_path, "wordfreq", fixture={".gitignore": "*.py\n", "wordfreq.py": "print(1)\n"})

    class _Case:
        id = "wordfreq"
        fixture = f"{FIXTURES}/wordfreq"

    wd = prepare_workdir(tmp_path, _Case(), dest=tmp_path / "w")
    assert "wordfreq.py" in _git(wd, "ls-files").split()
    (wd / "wordfreq.py").write_text("print(2)\n")
    assert "wordfreq.py" in _git(wd, "status", "--porcelain")
    assert "+print(2)" in _git(wd, "diff")


# --- 2. maxTurns ---------------------------------------------------------------


@pytest.mark.parametrize("turns", [2**63, MAX_TURNS + 1])
def test_a_turn_budget_over_the_bound_is_refused(tmp_path: Path, turns: int) -> None:
    write_case(tmp_path, "big", maxTurns=turns)
    code, lines = _validate(tmp_path)
    assert code == 2
    assert any(
        line.startswith(f"{CASES}/big/case.json: maxTurns: must be <= {MAX_TURNS}")
        for line in lines
    ), lines


def test_the_largest_allowed_turn_budget_is_valid(tmp_path: Path) -> None:
    write_case(tmp_path, "big", maxTurns=MAX_TURNS)
    assert _problems(tmp_path) == []


# --- 3. a CRLF grader ------------------------------------------------------------


def test_a_crlf_grader_is_a_problem_naming_the_file_and_the_fix(tmp_path: Path) -> None:
    write_case(tmp_path, "crlf", verify="#!/usr/bin/env bash\r\nset -euo pipefail\r\nexit 0\r\n")
    code, lines = _validate(tmp_path)
    assert code == 2
    hit = [line for line in lines if line.startswith(f"{CASES}/crlf/case.json: verify: ")]
    assert len(hit) == 1, lines
    assert f"{CASES}/crlf/verify.sh has CRLF" in hit[0]
    assert "convert it to LF line endings" in hit[0]


def test_a_crlf_grader_really_fails_under_bash(tmp_path: Path) -> None:
    # What the rule guards against, shown with the real shell.
    grader = tmp_path / "verify.sh"
    grader.write_bytes(b"set -euo pipefail\r\nexit 0\r\n")
    proc = subprocess.run(["bash", str(grader)], capture_output=True, text=True)
    assert proc.returncode != 0 and "pipefail" in proc.stderr


def test_an_lf_grader_with_a_carriage_return_inside_a_string_is_fine(tmp_path: Path) -> None:
    write_case(tmp_path, "cr", verify="printf 'a\\rb' >/dev/null\nexit 0\n")
    assert _problems(tmp_path) == []


# --- 4. a prompt too long for one argument -------------------------------------


def test_a_prompt_over_the_argument_limit_is_refused_naming_the_limit(tmp_path: Path) -> None:
    write_case(tmp_path, "long", prompt="x" * (MAX_PROMPT_BYTES + 1))
    code, lines = _validate(tmp_path)
    assert code == 2
    hit = [line for line in lines if line.startswith(f"{CASES}/long/case.json: prompt: ")]
    assert len(hit) == 1, lines
    assert f"{MAX_PROMPT_BYTES:,} bytes" in hit[0]


def test_the_prompt_is_measured_in_utf8_bytes_with_the_url_filled_in(tmp_path: Path) -> None:
    # 3 bytes per character: under the limit in characters, over it in bytes.
    write_case(tmp_path, "wide", prompt="€" * (MAX_PROMPT_BYTES // 3 + 1))
    # Exactly at the limit as written; the URL is longer than its placeholder.
    at_limit = "x" * (MAX_PROMPT_BYTES - len("{{HTTP_URL}}")) + "{{HTTP_URL}}"
    write_case(tmp_path, "url", prompt=at_limit, httpFixture=True)
    write_case(tmp_path, "fits", prompt="x" * MAX_PROMPT_BYTES)
    problems = _problems(tmp_path)
    assert [p.split(": ")[0] for p in problems] == [
        f"{CASES}/url/case.json",
        f"{CASES}/wide/case.json",
    ], problems


def test_the_prompt_limit_leaves_room_under_linux_max_arg_strlen() -> None:
    # One argument holds 131072 bytes with its NUL; `--prompt=` must still fit.
    assert MAX_PROMPT_BYTES + len("--prompt=") + 1 <= 131072


# --- 5. ids too long for the runner's file names -------------------------------


def test_an_id_too_long_for_the_temp_folder_name_is_refused(tmp_path: Path) -> None:
    long_id = "a" * (MAX_ID_LENGTH + 1)
    write_case(tmp_path, long_id)
    code, lines = _validate(tmp_path)
    assert code == 2
    hit = [line for line in lines if line.startswith(f"{CASES}/{long_id}/case.json: id: ")]
    assert len(hit) == 1, lines
    assert f"at most {MAX_ID_LENGTH}" in hit[0]


def test_the_longest_allowed_id_makes_a_real_temp_folder(tmp_path: Path) -> None:
    import tempfile

    longest = "a" * MAX_ID_LENGTH
    write_case(tmp_path, longest)
    assert _problems(tmp_path) == []
    # The name the runner gives each repeat's folder fits a file name.
    made = Path(tempfile.mkdtemp(prefix=f"capeval-{longest}-", dir=tmp_path))
    assert made.is_dir()
    with pytest.raises(OSError):
        tempfile.mkdtemp(prefix=f"capeval-{longest}a-", dir=tmp_path)


# --- 6. a configuration problem hid every tier error ---------------------------


def test_a_config_typo_does_not_hide_a_cases_tier_error(tmp_path: Path) -> None:
    write_case(tmp_path, "tiered", tier="x")
    (tmp_path / "capeval.toml").write_text("repeat = 1\n")
    problems = _problems(tmp_path)
    assert any(p.startswith("capeval.toml: repeat: ") for p in problems), problems
    assert any(p.startswith(f"{CASES}/tiered/case.json: tier: unknown tier") for p in problems)


def test_the_configured_tiers_apply_despite_another_config_problem(tmp_path: Path) -> None:
    write_case(tmp_path, "hard", tier="hard")
    write_case(tmp_path, "typo", tier="simple")
    (tmp_path / "capeval.toml").write_text('tiers = ["hard"]\nrepeat = 1\n')
    problems = _problems(tmp_path)
    assert [p.split(": ")[:2] for p in problems if "tier" in p.split(": ")[1]] == [
        [f"{CASES}/typo/case.json", "tier"]
    ], problems


def test_the_pyproject_tiers_apply_despite_another_config_problem(tmp_path: Path) -> None:
    write_case(tmp_path, "hard", tier="hard")
    (tmp_path / "pyproject.toml").write_text('[tool.capeval]\ntiers = ["hard"]\nrepeat = 1\n')
    problems = _problems(tmp_path)
    assert problems and not any(": tier: " in p for p in problems), problems


@pytest.mark.parametrize(
    "toml", ['tiers = "hard"\nrepeat = 1\n', "tiers = [\n"], ids=["bad-tiers", "bad-syntax"]
)
def test_no_tier_check_when_the_tiers_cannot_be_told(tmp_path: Path, toml: str) -> None:
    # Checking against the defaults would call a configured tier unknown.
    write_case(tmp_path, "hard", tier="hard")
    (tmp_path / "capeval.toml").write_text(toml)
    problems = _problems(tmp_path)
    assert problems and not any(": tier: " in p for p in problems), problems


# --- 7. an empty list of a required field --------------------------------------


def test_empty_turns_does_not_offer_dropping_the_required_field() -> None:
    problems = validate_trajectory({"turns": []}, file="t.json")
    assert len(problems) == 1
    text = str(problems[0])
    assert text.startswith("t.json: turns: must not be empty")
    assert "drop the field" not in text
    # The fix it does offer is true: one turn is valid.
    assert validate_trajectory({"turns": [{"text": "done"}]}, file="t.json") == []
    assert "missing" in str(validate_trajectory({}, file="t.json")[0])


def test_empty_optional_list_still_offers_dropping_it() -> None:
    from capeval.core.case import schema_problems
    from capeval.core.jsonschemas import strict_validator

    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"xs": {"type": "array", "minItems": 1, "description": "a list"}},
    }
    errors = list(strict_validator(schema).iter_errors({"xs": []}))
    (problem,) = schema_problems(errors, file="f", schema=schema)
    assert str(problem).endswith("with at least one entry, or drop the field")
    (problem,) = schema_problems(errors, file="f")
    assert str(problem).endswith("with at least one entry")
