"""`capeval validate` and a case's oracle: required only where something plays it.

The original harness's cases ship no oracle; in a workspace whose matrix plays
a `command` agent they validate, with a note saying what an oracle is for.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from capeval.cli import main
from tests.casefactory import CASES
from tests.casefactory import write_case as add_case

COMMAND_AGENT = (
    'matrix = ["local:v1@mine"]\n'
    '[agents.mine]\ntype = "command"\ncommand = "bin/mine {workdir} {prompt}"\n'
)
HONEST = '[ "$(cat done.txt 2>/dev/null)" = done ]\n'


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["validate", *args])


def test_a_case_without_an_oracle_validates_with_a_note_when_a_command_agent_plays(
    tmp_path: Path,
) -> None:
    add_case(tmp_path, "ported", oracle=False)
    (tmp_path / "capeval.toml").write_text(COMMAND_AGENT)
    result = invoke("--root", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert result.stdout == "ok: 1 cases (ported)\n"
    (note,) = result.stderr.splitlines()
    assert note.startswith(f"note: {CASES}/ported: no oracle (trajectories/oracle.json or ")
    assert "validate --graders plays it to prove the grader" in note


def test_the_json_output_carries_the_notes(tmp_path: Path) -> None:
    add_case(tmp_path, "ported", oracle=False)
    (tmp_path / "capeval.toml").write_text(COMMAND_AGENT)
    result = invoke("--root", str(tmp_path), "--json")
    out = json.loads(result.stdout)
    assert out["ok"] is True and out["problems"] == []
    (note,) = out["notes"]
    assert note["file"] == f"{CASES}/ported" and "no oracle" in note["message"]


def test_graders_require_the_oracle_and_say_what_it_is_for(tmp_path: Path) -> None:
    add_case(tmp_path, "ported", oracle=False)
    (tmp_path / "capeval.toml").write_text(COMMAND_AGENT)
    result = invoke("--root", str(tmp_path), "--graders")
    assert result.exit_code == 2
    (line,) = result.stdout.splitlines()
    assert line.startswith(
        f"{CASES}/ported/trajectories/oracle.json: missing; capeval validate --graders plays it"
    )
    assert "solution/solve.sh" in line and "reference solution" in line


def test_the_default_run_plays_the_oracle_so_it_is_required(tmp_path: Path) -> None:
    add_case(tmp_path, "ported", oracle=False)
    result = invoke("--root", str(tmp_path))
    assert result.exit_code == 2
    assert "missing; capeval run's default cell 'scripted:oracle' plays it" in result.stdout


def test_a_scripted_cell_of_the_matrix_requires_it(tmp_path: Path) -> None:
    add_case(tmp_path, "ported", oracle=False)
    (tmp_path / "capeval.toml").write_text(
        'matrix = ["mine=local:v1@mine", "scripted:oracle"]\n'
        '[agents.mine]\ntype = "command"\ncommand = "x {prompt}"\n'
    )
    result = invoke("--root", str(tmp_path))
    assert "the configured matrix cell 'scripted:oracle' plays it" in result.stdout


def test_a_shell_oracle_is_an_oracle_and_graders_run_it(tmp_path: Path) -> None:
    case_dir = add_case(tmp_path, "shell", oracle=False, verify=HONEST)
    (case_dir / "solution").mkdir()
    (case_dir / "solution" / "solve.sh").write_text("echo done > done.txt\n")
    result = invoke("--root", str(tmp_path), "--graders")
    assert (result.exit_code, result.stdout) == (0, "ok: 1 cases (shell)\n")
    (case_dir / "solution" / "solve.sh").write_text("echo undone > done.txt\n")
    result = invoke("--root", str(tmp_path), "--graders")
    assert result.exit_code == 2
    assert (
        f"{CASES}/shell/case.json: verify: verify.sh fails (exit 1) after the oracle script "
        f"solved the task; fix the grader or {CASES}/shell/solution/solve.sh"
    ) in result.stdout


def test_graders_check_each_oracle_a_case_ships(tmp_path: Path) -> None:
    # oracle.json solves it; the solve.sh beside it does not, and is named.
    case_dir = add_case(tmp_path, "both", oracle=False, verify=HONEST)
    (case_dir / "trajectories").mkdir()
    write = {"name": "write_file", "arguments": {"path": "done.txt", "content": "done"}}
    (case_dir / "trajectories" / "oracle.json").write_text(
        json.dumps({"turns": [{"toolCalls": [write]}]})
    )
    (case_dir / "solution").mkdir()
    (case_dir / "solution" / "solve.sh").write_text("exit 4\n")
    result = invoke("--root", str(tmp_path), "--graders")
    assert result.exit_code == 2
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"{CASES}/both/solution/solve.sh: the oracle run did not succeed")
    assert "(exit code 4)" in line


def test_an_unplayable_shell_oracle_is_reported_without_graders(tmp_path: Path) -> None:
    case_dir = add_case(tmp_path, "crlf")
    (case_dir / "solution").mkdir()
    (case_dir / "solution" / "solve.sh").write_bytes(b"echo hi\r\n")
    result = invoke("--root", str(tmp_path))
    assert result.exit_code == 2
    assert f"{CASES}/crlf/solution/solve.sh: has CRLF" in result.stdout
