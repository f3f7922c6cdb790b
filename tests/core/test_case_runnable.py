"""Cases no repeat could run are validation problems, not a failure in every repeat.

Strings no process can receive (a NUL, a lone surrogate), a prompt longer
than one argument may be, an id too long for the runner's folder names, a
grader with CRLF line endings, a turn budget past the bound. Each of these
once passed `capeval validate`, and then every repeat failed in the adapter
("embedded null byte", UnicodeEncodeError) or in bash.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from capeval.cli import main
from capeval.core.case import MAX_ID_LENGTH, MAX_PROMPT_BYTES, MAX_TURNS, validate_case_dict
from capeval.runner.validate import validate_workspace
from tests.casefactory import CASES, FIXTURES, case_fields, write_case


def _write(root: Path, case_id: str, **changes: object) -> None:
    # Written with json.dumps' default ASCII escapes, as an author would write them.
    write_case(root, case_id, text=json.dumps(case_fields(case_id, **changes)))


def _validate(root: Path) -> tuple[int, list[str]]:
    result = CliRunner().invoke(main, ["validate", "--root", str(root)])
    return result.exit_code, result.output.splitlines()


def _problems(root: Path) -> list[str]:
    return [str(p) for p in validate_workspace(root).problems]


@pytest.mark.parametrize(
    ("prompt", "what"),
    [
        ("a\u0000b", "contains a NUL character (\\u0000) at character 2"),
        ("\ud800 fix it", "contains a lone surrogate \\ud800 at character 1"),
    ],
)
def test_a_prompt_no_agent_can_receive_fails_validate_with_exit_2(
    tmp_path: Path, prompt: str, what: str
) -> None:
    _write(tmp_path, "bad", prompt=prompt)
    proc = subprocess.run(
        [sys.executable, "-m", "capeval", "validate", "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    line = f"{CASES}/bad/case.json: prompt: {what}"
    assert line in proc.stdout
    assert "remove it" in proc.stdout


@pytest.mark.parametrize("fixture", [f"{FIXTURES}/a\u0000b", f"{FIXTURES}/a\ud800b"])
def test_a_fixture_path_no_system_call_takes_is_a_problem_not_a_traceback(
    tmp_path: Path, fixture: str
) -> None:
    _write(tmp_path, "bad", fixture=fixture)
    problems = validate_workspace(tmp_path).problems
    assert [(p.field, p.message.split(" at ")[0]) for p in problems] == [
        (
            "fixture",
            "contains a NUL character (\\u0000)"
            if "\0" in fixture
            else "contains a lone surrogate \\ud800",
        )
    ]


def test_a_grader_name_with_a_nul_is_a_problem(tmp_path: Path) -> None:
    _write(tmp_path, "bad", verify="verify\u0000.sh")
    problems = validate_workspace(tmp_path).problems
    assert [p.field for p in problems] == ["verify"]
    assert "NUL" in problems[0].message


def test_a_title_with_a_lone_surrogate_cannot_be_written_to_rows(tmp_path: Path) -> None:
    _write(tmp_path, "bad", title="x\udc00")
    problems = validate_workspace(tmp_path).problems
    assert [p.field for p in problems] == ["title"]
    assert "lone surrogate \\udc00" in problems[0].message
    # The message itself can be printed.
    str(problems[0]).encode("utf-8")


def test_a_nul_in_a_title_is_fine_rows_escape_it() -> None:
    obj = case_fields("ok", title="a\u0000b")
    assert validate_case_dict(obj, file="case.json", dirname="ok") == []


def test_ordinary_unicode_and_a_surrogate_pair_escape_pass() -> None:
    # json.loads joins a "\ud83d\ude00" pair into one character: that is text.
    prompt = json.loads('"Fix the \\ud83d\\ude00 bug, caf\\u00e9"')
    obj = case_fields("ok", prompt=prompt)
    assert validate_case_dict(obj, file="case.json", dirname="ok") == []


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
