"""The real Claude Code and Codex CLIs against a provider having a bad hour.

The scripted model server answers the first agent run's model requests with
a 429, a 529, a 500, an authentication error or a stream cut mid-way
(`modelserver.Fault`): the attempt's row would be `error` with the
provider's status, and `capeval run` retries it; the server has recovered
by then, so the repeat passes on its second attempt. A server that never
recovers leaves an `error` row, and the gate refuses to judge it (exit 2).
Claude Code retries 429/529/5xx itself unless the response carries
`x-should-retry: false`: with it allowed, one failed request is no error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from capeval.agents import modelserver
from capeval.agents.check import ENDPOINTS
from capeval.core.agentconfig import AgentConfig
from tests.agent_clis import find_cli, missing_reason
from tests.agentrun import REPO, agent_table
from tests.casefactory import write_case
from tests.clirun import capeval
from tests.runhelpers import read_rows

pytestmark = [pytest.mark.slow, pytest.mark.realcli]


def _binary(name: str) -> Path:
    binary = find_cli(name)
    if binary is None:
        pytest.skip(missing_reason(name))
    return binary


def _run(
    name: str, fault: modelserver.Fault, tmp_path: Path, *args: str
) -> tuple[list[dict], Path, subprocess.CompletedProcess[str]]:
    binary = _binary(name)
    endpoint = ENDPOINTS[name]
    root = tmp_path / "ws"
    write_case(root, "c1", verify="true\n", fixture={"README.md": "x\n"})
    rows = tmp_path / "rows.jsonl"
    with modelserver.ModelServer(endpoint.script, fault=fault) as server:
        aimed = endpoint.configure(AgentConfig(name="a", type=name), server.url, tmp_path)
        (root / "capeval.toml").write_text(
            agent_table("a", name, binary, args=aimed.args, env=aimed.env)
        )
        done = subprocess.run(
            [sys.executable, "-m", "capeval", "run", "--root", str(root), "--matrix",
             f"{endpoint.provider}:{endpoint.model}@a", "--jsonl", str(rows), "--retry-wait",
             "0", *args],
            capture_output=True, text=True, timeout=300, cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path)},
        )  # fmt: skip
    return read_rows(rows), rows, done


CLAUDE_FAULTS = {
    "429": (modelserver.Fault(429, retry=False), "rate_limit", 429),
    "529": (modelserver.Fault(529, retry=False), "overloaded", 529),
    "500": (modelserver.Fault(500, retry=False), "server", 500),
    "401": (modelserver.Fault(401, retry=False), "auth", 401),
    "cut": (modelserver.Fault(None), "network", None),
}
CODEX_FAULTS = {
    "429": (modelserver.Fault(429, retry=False), "rate_limit", 429),
    "401": (modelserver.Fault(401, retry=False), "auth", 401),
    "cut": (modelserver.Fault(None), "network", None),
}
CASES = [("claude-code", k, *v) for k, v in CLAUDE_FAULTS.items()] + [
    ("codex", k, *v) for k, v in CODEX_FAULTS.items()
]


@pytest.mark.parametrize(("cli", "name", "fault", "kind", "status"), CASES)
def test_an_outage_is_retried_and_the_repeat_passes_once_it_recovers(
    cli: str, name: str, fault: modelserver.Fault, kind: str, status: int | None, tmp_path: Path
) -> None:
    (row,), _, done = _run(cli, fault, tmp_path, "--retries", "1")
    assert row["outcome"] == "passed" and row["attempts"] == 2, (row, done.stderr)
    attempts = json.loads((tmp_path / row["artifacts"] / "attempts.json").read_text())
    first = attempts[0]
    assert first["outcome"] == "error" and first["errorKind"] == kind
    assert first["providerStatus"] == status


@pytest.mark.parametrize("cli", ["claude-code", "codex"])
def test_a_provider_that_never_recovers_leaves_error_rows_the_gate_refuses(
    cli: str, tmp_path: Path
) -> None:
    fault = modelserver.Fault(429, retry=False, sessions=None)
    (row,), rows, done = _run(cli, fault, tmp_path, "--retries", "1")
    assert row["outcome"] == "error" and row["passed"] is False, done.stderr
    assert row["errorKind"] == "rate_limit" and row["providerStatus"] == 429
    assert row["attempts"] == 2
    assert "capeval run --resume rows.jsonl --retry-errors" in done.stderr
    base = tmp_path / "base.jsonl"
    base.write_text(json.dumps({**row, "outcome": "passed", "passed": True}) + "\n")
    gated = capeval("gate", "--baseline", base, "--candidate", rows, cwd=tmp_path)
    assert gated.returncode == 2, gated.stdout
    assert "not judged" in gated.stderr and "--retry-errors" in gated.stderr


def test_claude_code_rides_out_a_429_it_may_retry(tmp_path: Path) -> None:
    # No `x-should-retry: false`: Claude Code retries the one refused request itself.
    fault = modelserver.Fault(429, sessions=1, requests=1)
    (row,), _, done = _run("claude-code", fault, tmp_path, "--retries", "0")
    assert row["outcome"] == "passed" and row["attempts"] == 1, (row, done.stderr)
