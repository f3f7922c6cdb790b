"""`capeval plot compare` takes its files as `capeval compare` does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from capeval.cli import main
from tests.rowfactory import gate_row as row


def plot(*args: str) -> Result:
    return CliRunner().invoke(main, ["plot", "compare", *args])


def files(tmp_path: Path) -> Path:
    (tmp_path / "evals/capability/cases").mkdir(parents=True)
    for name, rows in {
        "a1.jsonl": [row("a", False)],
        "a2.jsonl": [row("a", True, repeat=1)],
        "b.jsonl": [row("a", True)],
    }.items():
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


@pytest.mark.slow
def test_baselines_pool_like_compare(tmp_path: Path) -> None:
    root = files(tmp_path)
    result = plot("--baseline", str(root / "a1.jsonl"), "--baseline", str(root / "a2.jsonl"),
                  "--candidate", str(root / "b.jsonl"), "-o", str(root / "c.png"), "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    baseline = next(r for r in json.loads(result.stdout) if r["side"] == "baseline")
    assert (baseline["passCount"], baseline["repeats"]) == (1, 2)


def test_the_configured_baseline_is_the_default(tmp_path: Path) -> None:
    root = files(tmp_path)
    (root / "capeval.toml").write_text('baseline = "a1.jsonl"\n')
    args = ["--root", str(root), "--candidate", str(root / "b.jsonl"), "-o", str(root / "c.png")]
    assert plot(*args).exit_code == 0
    (root / "capeval.toml").unlink()
    refused = plot(*args)
    assert refused.exit_code == 2
    assert refused.stderr.startswith("capeval plot compare: no --baseline given")


def test_positional_files_are_refused_with_the_flags_to_use(tmp_path: Path) -> None:
    root = files(tmp_path)
    result = plot(str(root / "a1.jsonl"), str(root / "b.jsonl"), "-o", str(root / "c.png"))
    assert result.exit_code == 2
    assert "--candidate" in result.output
