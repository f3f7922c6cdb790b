"""`"httpFixture": "<folder>"`: a case serves its own pages, checked before any agent starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from capeval.cli import main
from capeval.workspace import load_cases
from tests.casefactory import CASES
from tests.casefactory import write_case as add_case
from tests.clirun import capeval

# The original harness's web case: the agent must report the build code the page shows.
PROMPT = "Open {{HTTP_URL}} and write the build code it shows into code.txt."
GRADER = '[ "$(cat code.txt)" = "$EVAL_HTTP_TOKEN" ] || { echo "wrong code"; exit 1; }\n'
ORACLE = {
    "turns": [
        {"toolCalls": [{"id": "page", "name": "web_fetch", "arguments": {"url": "{{HTTP_URL}}/"}}]},
        {
            "toolCalls": [
                {
                    "name": "write_file",
                    "arguments": {
                        "path": "code.txt",
                        "content": "{{result:page|re:Build code: <b>([0-9a-f]+)</b>}}",
                    },
                }
            ]
        },
    ]
}


def web_case(root: Path, pages: object = "site") -> Path:
    case_dir = add_case(
        root, "build-code", prompt=PROMPT, httpFixture=pages, verify=GRADER, oracle=False
    )
    (case_dir / "trajectories").mkdir()
    (case_dir / "trajectories" / "oracle.json").write_text(json.dumps(ORACLE))
    (case_dir / "site").mkdir()
    (case_dir / "site" / "index.html").write_text("<p>Build code: <b>{{TOKEN}}</b></p>\n")
    return case_dir


def validate(root: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["validate", "--root", str(root), *args])


def test_a_case_with_its_own_pages_loads_and_passes_the_grader_check(tmp_path: Path) -> None:
    case_dir = web_case(tmp_path)
    (case,) = load_cases(tmp_path)
    assert (case.httpFixture, case.httpPages, case.pages_path) == (True, "site", case_dir / "site")
    assert case.to_json()["httpFixture"] == "site"
    result = validate(tmp_path, "--graders")
    assert (result.exit_code, result.output) == (0, "ok: 1 cases (build-code)\n")


def test_the_default_pages_do_not_show_a_build_code(tmp_path: Path) -> None:
    # The grader check proves the case needs its own page.
    web_case(tmp_path, pages=True)
    result = validate(tmp_path, "--graders")
    assert result.exit_code == 2
    assert "after the oracle trajectory solved the task" in result.output
    assert "wrong code" in result.output


@pytest.mark.parametrize(
    ("pages", "setup", "says"),
    [
        ("pages", None, f"{CASES}/build-code/pages does not exist; create the folder"),
        ("verify.sh", None, f"{CASES}/build-code/verify.sh is not a folder"),
        ("empty", "mkdir", f"{CASES}/build-code/empty holds no file to serve"),
        ("out", "link", f"{CASES}/build-code/out resolves outside the case folder"),
    ],
)
def test_a_pages_folder_that_cannot_serve_is_named_with_the_fix(
    tmp_path: Path, pages: str, setup: str | None, says: str
) -> None:
    case_dir = web_case(tmp_path, pages=pages)
    if setup == "mkdir":
        (case_dir / pages).mkdir()
    elif setup == "link":
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "elsewhere" / "index.html").write_text("x")
        (case_dir / pages).symlink_to(tmp_path / "elsewhere")
    result = validate(tmp_path)
    assert result.exit_code == 2
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"{CASES}/build-code/case.json: httpFixture: {says}"), line


@pytest.mark.parametrize("pages", ["../x", "/abs/site", "a/../b", "", "a\\b"])
def test_a_pages_path_that_leaves_the_case_is_refused(tmp_path: Path, pages: str) -> None:
    web_case(tmp_path, pages=pages)
    result = validate(tmp_path)
    assert result.exit_code == 2
    assert f"{CASES}/build-code/case.json: httpFixture: " in result.output
    assert "a folder of the case" in result.output


@pytest.mark.slow
def test_a_run_serves_the_case_pages_to_the_agent(tmp_path: Path) -> None:
    web_case(tmp_path)
    proc = capeval("run", "--root", tmp_path, "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["rows"]
    assert row["passed"] is True and row["behaviors"]["webFetchToolCallCount"] == 1
