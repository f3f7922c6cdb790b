"""Values in validation messages: paths whole, long free text cut inside its quotes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from capeval.core.case import show, validate_case_dict
from capeval.runner.validate import validate_workspace
from tests.casefactory import CASES, FIXTURES, case_fields, write_case


def test_a_fixture_path_naming_a_file_is_shown_whole(tmp_path: Path) -> None:
    path = f"{FIXTURES}/paginate/pager.py"
    (tmp_path / FIXTURES / "paginate").mkdir(parents=True)
    (tmp_path / path).write_text("print()\n")
    write_case(tmp_path, "paginate", text=json.dumps(case_fields("paginate", fixture=path)))
    assert [str(p) for p in validate_workspace(tmp_path).problems] == [
        f'{CASES}/paginate/case.json: fixture: "{path}" is not a directory; the fixture is a '
        "directory copied into each repeat's workdir"
    ]


def test_long_missing_and_absolute_fixture_paths_are_shown_whole(tmp_path: Path) -> None:
    deep = f"{FIXTURES}/" + "/".join(["a-rather-long-folder-name"] * 6)
    write_case(tmp_path, "deep", text=json.dumps(case_fields("deep", fixture=deep)))
    (missing,) = validate_workspace(tmp_path).problems
    assert missing.message.startswith(f'"{deep}" does not exist;')
    (absolute,) = validate_case_dict(
        case_fields("x", fixture="/" + deep), file="case.json", dirname="x"
    )
    assert absolute.message.startswith(f'"/{deep}" is absolute;')


def test_a_long_grader_name_is_shown_whole() -> None:
    verify = "checks/" + "the-grader-for-the-pagination-case-with-a-long-name.sh"
    (problem,) = validate_case_dict(case_fields("x", verify=verify), file="case.json", dirname="x")
    assert problem.field == "verify"
    assert f'"{verify}" is not allowed' in problem.message


def test_long_free_text_is_cut_inside_its_quotes() -> None:
    text = "three hundred and twenty turns, " * 10
    (problem,) = validate_case_dict(case_fields("x", maxTurns=text), file="case.json", dirname="x")
    shown = re.search(r'got string (".*")$', problem.message)
    assert shown is not None, problem.message
    assert json.loads(shown.group(1)).endswith("...")
    assert text.startswith(json.loads(shown.group(1))[:-3])
    assert len(shown.group(1)) <= 80


def test_show_keeps_short_values_and_escapes_what_cannot_be_printed() -> None:
    assert show("tiny") == '"tiny"'
    assert show({"a": 1}) == '{"a": 1}'
    assert show("a\ud800") == '"a\\ud800"'
