"""A stream with an event cut short: behaviors null and the row says why, never wrong metrics.

The real CLIs run against the scripted model server behind a wrapper that
cuts their first tool-call line short, as a crash or a kill mid-write would.
That lost the call: Claude Code, Gemini CLI and opencode rows passed with
toolCallCount 0 and shellCommandCount 0 though the agent ran a shell
command, and only a log line on stderr said anything. Codex rebuilds its
turns from its own session log, so its row keeps every call.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from capeval.agents.check import ENDPOINTS
from capeval.agents.claude_code import ClaudeCodeAdapter, parse_claude_stream
from capeval.agents.gemini import parse_gemini_stream
from capeval.agents.modelserver import ModelServer
from capeval.agents.opencode import parse_opencode_stream
from capeval.agents.streams import ParsedStream, unparsed_error
from capeval.core.agentconfig import AgentConfig
from tests.agent_clis import find_cli, missing_reason
from tests.agentrun import agent_table, capeval_run
from tests.agents.test_adapter_cli import FAKE_CLI, request
from tests.casefactory import write_case
from tests.runhelpers import read_rows

DATA = Path(__file__).parents[1] / "data" / "streams"
# The first line naming a tool call, in each CLI's stream, printed cut to 40 characters.
CUT_FIRST_CALL = (
    'awk \'/command_execution|"tool_use"|run_shell_command/ && !done '
    "{print substr($0,1,40); done=1; next} {print}'"
)


def cutting_wrapper(binary: Path, path: Path) -> Path:
    path.write_text(
        "#!/bin/sh\n"
        f'[ "$1" = --version ] && exec "{binary}" "$@"\n'
        f'"{binary}" "$@" | {CUT_FIRST_CALL}\n'
    )
    path.chmod(0o755)
    return path


def run_row(name: str, binary: Path, tmp_path: Path) -> dict:
    """One `capeval run` repeat of a case the scripted check script passes; its row."""
    endpoint = ENDPOINTS[name]
    root = tmp_path / "ws"
    write_case(root, "c1", verify="set -eu\ntest -f check.txt\n", fixture={"README.md": "x\n"})
    rows = tmp_path / "rows.jsonl"
    with ModelServer(endpoint.script) as server:
        aimed = endpoint.configure(AgentConfig(name=name, type=name), server.url, tmp_path)
        (root / "capeval.toml").write_text(
            agent_table(name, name, binary, args=aimed.args, env=aimed.env)
        )
        matrix = f"{endpoint.provider}:{endpoint.model}@{name}"
        proc = capeval_run(root, matrix, rows, cwd=tmp_path, env={"TMPDIR": str(tmp_path)})
    assert rows.exists(), proc.stdout + proc.stderr
    (row,) = read_rows(rows)
    return row


@pytest.mark.slow
@pytest.mark.realcli
@pytest.mark.parametrize("name", ["claude-code", "gemini", "opencode"])
def test_a_call_line_cut_short_gives_null_behaviors_and_says_why(name: str, tmp_path: Path) -> None:
    binary = find_cli(name)
    if binary is None:
        pytest.skip(missing_reason(name))
    row = run_row(name, cutting_wrapper(binary, tmp_path / "cut-cli"), tmp_path)
    assert row["agentExitCode"] == 0 and row["verifyExitCode"] == 0  # the agent did its work
    assert row["behaviors"] is None
    assert row["toolCallCount"] is None and row["turnsUsed"] is None
    assert "cut short" in (row["error"] or "") and "not fully parsed" in row["error"]


@pytest.mark.slow
@pytest.mark.realcli
def test_codex_rebuilds_a_stream_cut_short_from_its_session_log(tmp_path: Path) -> None:
    binary = find_cli("codex")
    if binary is None:
        pytest.skip(missing_reason("codex"))
    row = run_row("codex", cutting_wrapper(binary, tmp_path / "cut-cli"), tmp_path)
    assert row["passed"] is True and row["error"] is None
    assert row["toolCallCount"] == 1 and row["turnsUsed"] == 2
    assert row["behaviors"]["shellCommandCount"] == 1


@pytest.mark.parametrize(
    ("parse", "stream"),
    [
        (parse_claude_stream, Path("claude-stream.jsonl")),
        (parse_gemini_stream, DATA / "gemini-stream.jsonl"),
        (parse_opencode_stream, DATA / "opencode-stream.jsonl"),
    ],
)
def test_a_line_cut_short_is_noted_a_stray_line_is_not(
    parse: Callable[[list[str]], ParsedStream], stream: Path, agent_streams: Path
) -> None:
    path = stream if stream.is_absolute() else agent_streams / stream
    body = path.read_text().splitlines()
    whole = parse(["warning: a stray line on stdout", *body])
    assert whole.unparsed == () and unparsed_error(whole) is None
    cut = parse([*body[:2], body[2][:40], *body[3:]])
    assert cut.unparsed == (3,)
    assert "stream line 3 cut short" in (unparsed_error(cut) or "")


@pytest.mark.slow
def test_a_last_line_torn_by_the_timeout_is_not_measured(
    tmp_path: Path, agent_streams: Path
) -> None:
    # Killed mid-write at the timeout: the last event is lost with the rest
    # of the run, so the turns before it are not the run's either.
    fake = tmp_path / "bin" / "fake-cli"
    fake.parent.mkdir()
    fake.write_text(FAKE_CLI)
    fake.chmod(0o755)
    body = (agent_streams / "claude-stream.jsonl").read_text().splitlines()
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join(body[:-2]) + "\n" + body[-2][:50])
    cfg = AgentConfig(name="cc", type="claude-code", command=str(fake))
    result = ClaudeCodeAdapter(cfg).run(
        request(tmp_path, torn, env={"FAKE_HANG": "30"}, timeout_s=3.0)
    )
    assert result.status == "timeout"
    assert result.summary is None and result.turnsUsed is None
    error = result.error or ""
    assert "timed out" in error and f"stream line {len(body) - 1} cut short" in error
