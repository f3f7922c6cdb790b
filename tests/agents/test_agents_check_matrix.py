"""A bare `capeval agents check` checks every agent the configured matrix plays.

With `matrix = ["g=p:m@good", "f=p:m@fail"]` and no `agent` key it checked
only the built-in `scripted` agent and said "ok", though `capeval run` would
never play `scripted` and `fail` could not even start.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

from capeval.cli import main

STAND_IN = f"#!{sys.executable}\nprint('9.8.7 (stand-in)')\n"


def workspace(tmp_path: Path) -> Path:
    stand_in = tmp_path / "stand-in"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    (tmp_path / "evals" / "capability" / "cases").mkdir(parents=True)
    (tmp_path / "capeval.toml").write_text(
        'matrix = ["g=p:m@good", "f=p:m@fail", "g2=p:n@good"]\n'
        f'[agents.good]\ntype = "command"\ncommand = "{stand_in} {{prompt}}"\n'
        '[agents.fail]\ntype = "command"\ncommand = "/nonexistent/fail {prompt}"\n'
    )
    return tmp_path


def test_a_bare_check_checks_every_agent_the_matrix_plays(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    out = CliRunner().invoke(main, ["agents", "check", "--root", str(root)])
    assert out.exit_code == 1, out.output
    assert out.output.startswith("good (command)")
    assert "\n\nfail (command)" in out.output and "[agents.fail]" in out.output
    assert out.output.count("(command)") == 2  # each once, in matrix order
    assert "scripted (scripted)" not in out.output
    as_json = CliRunner().invoke(main, ["agents", "check", "--root", str(root), "--json"])
    assert as_json.exit_code == 1
    doc = json.loads(as_json.output)
    assert doc["ok"] is False
    assert [(r["agent"], r["ok"]) for r in doc["agents"]] == [("good", True), ("fail", False)]


def test_naming_one_agent_checks_only_that_one(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    out = CliRunner().invoke(main, ["agents", "check", "good", "--root", str(root), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["agent"] == "good"


def test_a_matrix_agent_without_a_table_is_a_usage_error(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    toml = root / "capeval.toml"
    toml.write_text(toml.read_text().replace('"f=p:m@fail"', '"f=p:m@nope"'))
    out = CliRunner().invoke(main, ["agents", "check", "--root", str(root)])
    assert out.exit_code == 2
    assert "unknown agent 'nope'" in out.output
