"""`capeval compare` takes the configured baseline as `gate` and `report` do."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from capeval.cli import main
from tests.rowfactory import gate_row as row


def workspace(tmp_path: Path, baseline: str | None) -> Path:
    (tmp_path / "evals/capability/cases").mkdir(parents=True)
    if baseline is not None:
        (tmp_path / "capeval.toml").write_text(f'baseline = "{baseline}"\n')
    for name, passed in (("base.jsonl", False), ("cand.jsonl", True)):
        (tmp_path / name).write_text(json.dumps(row("a", passed)) + "\n")
    return tmp_path


def test_compare_without_baseline_uses_the_configured_one(tmp_path: Path) -> None:
    root = workspace(tmp_path, "base.jsonl")
    args = ["--root", str(root), "--candidate", str(root / "cand.jsonl")]
    for command in ("compare", "gate"):
        result = CliRunner().invoke(main, [command, *args])
        assert result.exit_code == 0, result.output
        assert "1 improved" in result.output and "v1::a" in result.output


def test_compare_without_any_baseline_names_the_setting_to_add(tmp_path: Path) -> None:
    root = workspace(tmp_path, None)
    result = CliRunner().invoke(
        main, ["compare", "--root", str(root), "--candidate", str(root / "cand.jsonl")]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("capeval compare: no --baseline given and the configuration")
    assert 'baseline = "evals/capability/results/baseline.json"' in result.stderr
