"""The real Claude Code and Codex CLIs in bwrap and Docker sandboxes, end to end, offline.

The same scripted model server and tool calls as tests/agents/test_real_cli_agents.py
(chained shell commands, a `sed -i`, the CLI's own edit tool, a fetch of the
HTTP fixture), but through `capeval run` with `isolation = "bwrap"` or
`"docker"`: the CLI runs confined, its home and config are the repeat's, its
install tree is shown read-only, and the rows, verdicts and behaviors are the
same as unconfined. The network is shared (the model server listens on the
host's loopback). Skipped, with the reason, where a CLI or a sandbox cannot run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capeval.agents.modelserver import INPUT_TOKENS, OUTPUT_TOKENS, ModelServer, Script
from tests.agentrun import capeval_run
from tests.agents.test_real_cli_agents import (
    MODELS,
    SCRIPTS,
    TURNS,
    assert_behaviors,
    cli_path,
    make_workspace,
)
from tests.runhelpers import read_rows
from tests.sandboxes import docker_image, require

pytestmark = [pytest.mark.slow, pytest.mark.realcli]

SANDBOXED = ["claude-code", "codex"]


def sandboxed_run(name: str, tmp_path: Path, isolation: str) -> dict:
    binary = cli_path(name)
    provider, model = MODELS[name]
    root = tmp_path / "ws"
    rows_path = tmp_path / "rows.jsonl"
    with ModelServer(Script.from_json(SCRIPTS[name])) as server:
        make_workspace(root, name, server.url, binary)
        config = root / "capeval.toml"
        # The isolation keys go at the top, before the agent's table.
        config.write_text(isolation + config.read_text())
        proc = capeval_run(root, f"{provider}:{model}@{name}", rows_path, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning" not in proc.stderr
    (row,) = read_rows(rows_path)
    return row


def assert_same_as_unconfined(row: dict, name: str) -> None:
    assert row["passed"] is True, row.get("error")
    assert row["status"] == "done" and row["agentExitCode"] == 0 and row["verifyExitCode"] == 0
    assert row["turnsUsed"] == TURNS[name] and row["sessionId"]
    assert row["tokenUsage"]["input"] == INPUT_TOKENS * TURNS[name]
    assert row["tokenUsage"]["output"] == OUTPUT_TOKENS * TURNS[name]
    assert_behaviors(row["behaviors"], name)


@pytest.mark.parametrize("name", SANDBOXED)
def test_the_real_cli_passes_in_bwrap(name: str, tmp_path: Path) -> None:
    require("bwrap")
    row = sandboxed_run(name, tmp_path, 'isolation = "bwrap"\n')
    assert row["isolation"] == "bwrap"
    assert_same_as_unconfined(row, name)


@pytest.mark.parametrize("name", SANDBOXED)
def test_the_real_cli_passes_in_docker(name: str, tmp_path: Path) -> None:
    image = docker_image()
    row = sandboxed_run(name, tmp_path, f'isolation = "docker"\nimage = {json.dumps(image)}\n')
    assert row["isolation"] == "docker"
    assert_same_as_unconfined(row, name)
