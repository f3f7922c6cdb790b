"""A document nested thousands deep is refused with exit 2 and the file named, never a traceback.

Python's parsers raise RecursionError past about a thousand levels; a
traceback exits 1, which the gate uses for "regressed".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clirun import capeval
from tests.runhelpers import write_case

DEEP = "[" * 5000 + "]" * 5000


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    write_case(tmp_path, "alpha")
    return tmp_path


def assert_refused(proc: object, name: str) -> None:
    out = proc.stdout + proc.stderr  # type: ignore[attr-defined]
    assert proc.returncode == 2, out  # type: ignore[attr-defined]
    assert "nested too deeply" in out and name in out
    assert "Traceback" not in out


def test_a_deep_trajectory(workspace: Path) -> None:
    oracle = workspace / "evals/capability/cases/alpha/trajectories/oracle.json"
    oracle.write_text(DEEP)
    assert_refused(capeval("validate", "--root", workspace), "oracle.json")


def test_a_deep_configuration(workspace: Path) -> None:
    (workspace / "capeval.toml").write_text(f"matrix = {DEEP}\n")
    assert_refused(capeval("validate", "--root", workspace), "capeval.toml")


def test_a_deep_run_summary(tmp_path: Path) -> None:
    summary = tmp_path / "summary.json"
    summary.write_text('{"turns": ' + DEEP + "}")
    assert_refused(capeval("behaviors", summary), "summary.json")


def test_a_deep_stream_line(tmp_path: Path) -> None:
    stream = tmp_path / "stream.jsonl"
    stream.write_text('{"type": "system", "x": ' + DEEP + "}\n")
    assert_refused(capeval("behaviors", "--stream", "claude-code", stream), "stream.jsonl")


def test_a_deep_paperclip_derivative(tmp_path: Path) -> None:
    derivative = tmp_path / "deep.yaml"
    derivative.write_text(f"rows: {DEEP}\n")
    assert_refused(capeval("paperclip", "validate", "--file", derivative), "deep.yaml")


def test_a_yaml_alias_bomb_is_refused_at_once_without_expanding(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    proc = capeval("paperclip", "validate", "--file", bomb, timeout=20)
    assert proc.returncode == 2, proc.stderr
    assert "line 2: YAML alias *a0" in proc.stdout + proc.stderr
    assert "lol" not in proc.stdout + proc.stderr  # no expanded value in the message
