"""Case strings no process can receive (a NUL, a lone surrogate) are validation problems.

Before, validate said ok and every repeat failed in the adapter ("embedded
null byte", UnicodeEncodeError).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from capeval.core.case import validate_case_dict
from capeval.runner.validate import validate_workspace
from tests.casefactory import CASES, FIXTURES, case_fields, write_case


def _write(root: Path, case_id: str, **changes: object) -> None:
    # Written with json.dumps' default ASCII escapes, as an author would write them.
    write_case(root, case_id, text=json.dumps(case_fields(case_id, **changes)))


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
