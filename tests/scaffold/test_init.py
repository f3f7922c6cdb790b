"""`capeval init` and `capeval new case`: a working workspace, and cases, in one command."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from capeval.cli import main
from capeval.config import config_from_table
from capeval.scaffold import init_workspace
from tests.clirun import capeval

CASE = "evals/capability/cases/fix-greeting"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_init_writes_a_workspace_that_validates_with_graders(tmp_path: Path) -> None:
    target = tmp_path / "evals-demo"
    result = invoke("init", str(target))
    assert result.exit_code == 0, result.output
    files = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert files == [
        ".gitignore",
        "capeval.toml",
        f"{CASE}/case.json",
        f"{CASE}/solution/solve.sh",
        f"{CASE}/verify.sh",
        "evals/capability/fixtures/greeting/greet.py",
    ]
    assert result.output.splitlines()[-1] == (
        f"next: cd {target} && capeval validate --graders && capeval run"
    )
    checked = invoke("validate", "--graders", "--root", str(target))
    assert (checked.exit_code, checked.output) == (0, "ok: 1 cases (fix-greeting)\n")


@pytest.mark.slow
def test_capeval_run_passes_right_after_init(tmp_path: Path) -> None:
    assert capeval("init", cwd=tmp_path).returncode == 0
    proc = capeval("run", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["rows"]
    assert (row["id"], row["variantId"], row["passed"]) == ("fix-greeting", "scripted:oracle", True)


def test_init_refuses_a_workspace_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "capeval.toml").write_text("repeats = 2\n")
    result = invoke("init", str(tmp_path))
    assert result.exit_code == 2
    assert "is already a capeval workspace" in result.stderr
    assert "capeval new case ID" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["capeval.toml"]


def test_init_names_every_file_it_would_overwrite(tmp_path: Path) -> None:
    verify = tmp_path / CASE / "verify.sh"
    verify.parent.mkdir(parents=True)
    verify.write_text("mine\n")
    (tmp_path / "evals/capability/cases").rename(tmp_path / "elsewhere")  # not a workspace yet
    (tmp_path / "evals/capability/fixtures/greeting").mkdir(parents=True)
    (tmp_path / "evals/capability/fixtures/greeting/greet.py").write_text("mine\n")
    result = invoke("init", str(tmp_path))
    assert result.exit_code == 2
    assert "evals/capability/fixtures/greeting/greet.py: exists; nothing was written" in (
        result.stderr
    )
    assert not (tmp_path / "capeval.toml").exists()


def test_init_adds_only_the_gitignore_lines_a_project_lacks(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("node_modules/\n.capeval/")  # no final newline
    done = init_workspace(tmp_path)
    assert (done.gitignore_created, done.gitignore_lines) == (False, 2)
    assert (tmp_path / ".gitignore").read_text() == (
        "node_modules/\n.capeval/\n\n"
        "# capeval: results stay local, except the frozen baseline\n"
        "evals/capability/results/*\n"
        "!evals/capability/results/baseline.json\n"
    )


def test_every_commented_agent_entry_is_valid_configuration(tmp_path: Path) -> None:
    # Uncommenting a block must never give a configuration error.
    init_workspace(tmp_path)
    text = (tmp_path / "capeval.toml").read_text()
    blocks = re.findall(r"^# (\[agents\.[^\]]+\]\n(?:# \S.*\n)+)", text, flags=re.M)
    names = [b.split("]", 1)[0].removeprefix("[agents.") for b in blocks]
    assert names == ["claude-code", "codex", "gemini", "opencode", "corbits", "mine"]
    settings = re.findall(r"^# ((?:baseline|bait) = .*)$", text, flags=re.M)
    uncommented = "\n".join([text, *settings, *(b.replace("# ", "") for b in blocks)])
    table = tomllib.loads(uncommented)
    config = config_from_table(table, root=tmp_path)
    assert config.agents["mine"].type == "command"
    assert config.bait_policy == "report"


def test_new_case_adds_a_case_that_passes_validate_with_graders(tmp_path: Path) -> None:
    init_workspace(tmp_path)
    result = invoke("new", "case", "build-code", "--tier", "complex", "--root", str(tmp_path))
    assert result.exit_code == 0, result.output
    case = json.loads((tmp_path / "evals/capability/cases/build-code/case.json").read_text())
    assert (case["id"], case["tier"], case["fixture"]) == (
        "build-code",
        "complex",
        "evals/capability/fixtures/build-code",
    )
    assert (tmp_path / "evals/capability/fixtures/build-code/STATUS.md").is_file()
    assert "capeval validate --graders --case build-code" in result.output
    checked = invoke("validate", "--graders", "--root", str(tmp_path))
    assert (checked.exit_code, checked.output) == (0, "ok: 2 cases (build-code, fix-greeting)\n")


def test_new_case_refuses_a_bad_id_an_unknown_tier_and_an_existing_case(tmp_path: Path) -> None:
    init_workspace(tmp_path)
    bad = invoke("new", "case", "Build Code", "--root", str(tmp_path))
    assert bad.exit_code == 2
    assert "only lower-case letters, digits and '-', e.g. 'build-code'" in bad.stderr
    tier = invoke("new", "case", "x", "--tier", "hard", "--root", str(tmp_path))
    assert tier.exit_code == 2 and "--tier 'hard' is not a configured tier" in tier.stderr
    again = invoke("new", "case", "fix-greeting", "--root", str(tmp_path))
    assert again.exit_code == 2
    assert f"{CASE}/case.json: exists; nothing was written" in again.stderr


def test_new_case_outside_a_workspace_says_how_to_make_one(tmp_path: Path) -> None:
    result = invoke("new", "case", "x", "--root", str(tmp_path))
    assert result.exit_code == 2
    assert "holds no evals/capability/cases/" in result.stderr
