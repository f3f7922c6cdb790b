"""`capeval behaviors` refuses what it cannot read, naming the file and where.

A saved stream with an event cut short measured the rest as if it were the
whole run (all zeros for a cut tool call) and exited 0; a tool call whose
name is a number was reported as having no name.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.clirun import capeval


def test_a_stream_with_an_event_cut_short_is_refused(tmp_path: Path, agent_streams: Path) -> None:
    body = (agent_streams / "claude-stream.jsonl").read_text().splitlines()
    number = next(i for i, line in enumerate(body, 1) if '"tool_use"' in line)
    cut = tmp_path / "cut.jsonl"
    cut.write_text(
        "\n".join(line[:40] if i == number else line for i, line in enumerate(body, 1)) + "\n"
    )
    out = capeval("behaviors", "--stream", "claude-code", "--json", cut)
    assert out.returncode == 2 and out.stdout == ""
    assert f"capeval behaviors: error: {cut}:{number}: (stream): not valid JSON" in out.stderr
    # A stray non-JSON line (a CLI's warning on stdout) is no lost event.
    noisy = tmp_path / "noisy.jsonl"
    noisy.write_text("warning: printed on stdout\n" + "\n".join(body) + "\n")
    ok = capeval("behaviors", "--stream", "claude-code", "--json", noisy)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["shellCommandCount"] == 1


def test_a_tool_name_of_the_wrong_type_says_so(tmp_path: Path) -> None:
    summary = tmp_path / "s.json"
    summary.write_text(
        json.dumps(
            {"turns": [{"turnIndex": 0, "toolCalls": [{"id": "a", "name": 5, "arguments": {}}]}]}
        )
    )
    out = capeval("behaviors", summary)
    assert out.returncode == 2 and out.stdout == ""
    assert f"{summary}: turns[0].toolCalls[0].name: expected a string, got a number" in out.stderr
