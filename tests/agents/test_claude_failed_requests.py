"""Claude Code requests that drew no response are no turns (one model response = one turn).

With every model request answered HTTP 400, the real Claude Code retries,
starts over and gives up; its session log holds six `api-request`s and no
response. The last request of each retry chain was counted as answered: the
row said turnsUsed 2 beside a summary with no turn, and a run under
`maxTurns 1` was failed as "over budget: 2 turns > maxTurns 1".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from capeval.agents import modelserver
from capeval.agents.base import AgentRequest
from capeval.agents.check import ENDPOINTS
from capeval.agents.claude_code import ClaudeCodeAdapter, session_responses
from capeval.core.agentconfig import AgentConfig
from tests.agent_clis import find_cli, missing_reason
from tests.agentrun import agent_table, capeval_run
from tests.casefactory import write_case
from tests.runhelpers import read_rows

ENDPOINT = ENDPOINTS["claude-code"]


def _refuse(self: Any) -> None:
    """Answer every model request 400, as an API that rejects the requests would."""
    length = int(self.headers.get("Content-Length") or 0)
    self.rfile.read(length)
    self.server.record(modelserver.RequestLog("POST", self.path))
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": "refused"}}
    self._send(400, json.dumps(body).encode())


@pytest.fixture
def claude(monkeypatch: pytest.MonkeyPatch) -> Path:
    binary = find_cli("claude-code")
    if binary is None:
        pytest.skip(missing_reason("claude-code"))
    monkeypatch.setattr(modelserver._Handler, "do_POST", _refuse)
    return binary


@pytest.mark.slow
@pytest.mark.realcli
def test_requests_answered_with_errors_are_no_turns(claude: Path, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    with modelserver.ModelServer(ENDPOINT.script) as server:
        config = ENDPOINT.configure(
            AgentConfig(name="cc", type="claude-code", command=str(claude)), server.url, tmp_path
        )
        result = ClaudeCodeAdapter(config).run(
            AgentRequest(
                workdir=workdir,
                prompt="Go.",
                provider=ENDPOINT.provider,
                model=ENDPOINT.model,
                case_dir=tmp_path,
                capture_dir=tmp_path / "capture",
                timeout_s=120,
                env={"TMPDIR": str(tmp_path)},
            )
        )
        refused = len(server.requests)
    assert refused >= 2  # it did retry
    assert result.status == "failed" and "400" in (result.error or "")
    assert result.turnsUsed == 0 and result.toolCallCount == 0
    assert result.summary is not None and result.summary.turns == ()
    logs = list((tmp_path / "capture" / "claude-config" / "projects").glob("*/*.jsonl"))
    assert len(logs) == 1
    assert session_responses(logs[0].read_text().splitlines()) == 0


@pytest.mark.slow
@pytest.mark.realcli
def test_a_refused_run_is_not_over_its_turn_budget(claude: Path, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_case(root, "c1", verify="true\n", fixture={"README.md": "x\n"}, maxTurns=1)
    rows = tmp_path / "rows.jsonl"
    with modelserver.ModelServer(ENDPOINT.script) as server:
        aimed = ENDPOINT.configure(AgentConfig(name="cc", type="claude-code"), server.url, tmp_path)
        (root / "capeval.toml").write_text(agent_table("cc", "claude-code", claude, env=aimed.env))
        matrix = f"{ENDPOINT.provider}:{ENDPOINT.model}@cc"
        capeval_run(root, matrix, rows, cwd=tmp_path, env={"TMPDIR": str(tmp_path)})
    (row,) = read_rows(rows)
    assert row["passed"] is False and row["agentExitCode"] == 1
    assert row["turnsUsed"] == 0 and row["overBudget"] is False
    assert "over budget" not in row["error"] and "400" in row["error"]


def log(*entries: dict[str, Any]) -> list[str]:
    """Claude Code session-log lines; `api-request`s of the main loop unless they say otherwise."""
    base = {"type": "api-request", "querySource": "sdk"}
    return [json.dumps({**base, **e} if "type" not in e else e) for e in entries]


def answer(model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    return {"type": "assistant", "message": {"id": "m", "model": model, "content": []}}


API_ERROR = {
    "type": "assistant",
    "isApiErrorMessage": True,
    "message": {"id": "e", "model": "<synthetic>", "content": [{"type": "text", "text": "400"}]},
}


def test_session_responses_of_chains_that_failed() -> None:
    # Two retry chains, both refused, the run ending in Claude's own error message.
    refused = log(
        {"id": "a1", "tail": ["x"]},
        {"id": "a2", "base": "a1", "tail": []},
        {"id": "a3", "base": "a2", "tail": []},
        {"id": "b1", "keep": 0, "tail": ["y"]},
        {"id": "b2", "base": "b1", "tail": []},
        API_ERROR,
    )
    assert session_responses(refused) == 0
    # A retry that got through: one response, then the final answer.
    recovered = log(
        {"id": "r1", "tail": ["x"]},
        {"id": "r2", "base": "r1", "tail": []},
        answer(),
        {"id": "r3", "base": "r2", "tail": ["result"]},
        answer(),
    )
    assert session_responses(recovered) == 2
    # Answered, then the next request failed for good.
    then_failed = log({"id": "r1", "tail": ["x"]}, answer(), {"id": "r2", "base": "r1"}, API_ERROR)
    assert session_responses(then_failed) == 1
