"""`capeval report -o FILE` takes its format from FILE's extension, as `plot -o` does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from capeval.cli import main
from tests.rowfactory import gate_row as row


def report(tmp_path: Path, *args: str) -> Result:
    for name in ("base.jsonl", "cand.jsonl"):
        (tmp_path / name).write_text(json.dumps(row("a")) + "\n")
    return CliRunner().invoke(
        main,
        ["report", "--baseline", str(tmp_path / "base.jsonl"),
         "--candidate", str(tmp_path / "cand.jsonl"), "--no-advisory", *args],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "fmt", "starts"),
    [
        ("r.html", "html", "<!doctype html>"),
        ("r.HTM", "html", "<!doctype html>"),
        ("r.json", "json", "{"),
        ("gate.xml", "junit", "<?xml"),
        ("r.md", "md", "# capeval gate report"),
        ("step_summary_1a2b", "md", "# capeval gate report"),  # no extension: Markdown
    ],
)
def test_the_extension_picks_the_format(tmp_path: Path, name: str, fmt: str, starts: str) -> None:
    result = report(tmp_path, "-o", str(tmp_path / name))
    assert result.exit_code == 0, result.output
    assert (tmp_path / name).read_text().startswith(starts)
    assert f"({fmt}); gate verdict exit 0" in result.stderr


def test_an_explicit_format_wins_with_a_warning(tmp_path: Path) -> None:
    result = report(tmp_path, "--format", "md", "-o", str(tmp_path / "r.html"))
    assert result.exit_code == 0
    assert (tmp_path / "r.html").read_text().startswith("# capeval gate report")
    assert "warning: writing md into" in result.stderr and "write html" in result.stderr


def test_standard_output_is_markdown(tmp_path: Path) -> None:
    result = report(tmp_path)
    assert result.stdout.startswith("# capeval gate report")
