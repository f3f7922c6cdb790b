"""A command agent learns where its capture hook is: `CAPEVAL_HOOK` and `{hook}`."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from capeval.agents.base import AgentRequest, AgentResult
from capeval.agents.command import CommandAdapter
from capeval.config import config_from_table
from capeval.core.agentconfig import DEFAULT_HOOK, AgentConfig
from capeval.core.problems import ProblemsError

# A product that knows nothing of capeval's paths: it is told where the hook is.
PRODUCT = """\
#!/bin/sh
printf '%s\\n' "$CAPEVAL_HOOK" > "$OUT/env.txt"
printf '%s\\n' "$1" > "$OUT/arg.txt"
cd "$2"
echo '{"status": "done", "turns": [{"turnIndex": 0, "toolCalls": []}]}' | sh "$CAPEVAL_HOOK" postRun
"""


def run(tmp_path: Path, hook: str | None) -> tuple[AgentRequest, AgentResult, str, str]:
    product = tmp_path / "product.sh"
    product.write_text(PRODUCT)
    product.chmod(0o755)
    workdir = tmp_path / "work"
    workdir.mkdir()
    subprocess.run(["git", "init", "-q", str(workdir)], check=True)
    out = tmp_path / "out"
    out.mkdir()
    request = AgentRequest(
        workdir=workdir,
        prompt="go",
        provider="acme",
        model="m",
        case_dir=tmp_path,
        capture_dir=tmp_path / "capture",
        timeout_s=30,
        env={"OUT": str(out)},
    )
    config = AgentConfig(
        name="mine",
        type="command",
        command=f"{shlex.quote(str(product))} {{hook}} {{workdir}} {{prompt}}",
        hook=hook,
    )
    result = CommandAdapter(config).run(request)
    return request, result, (out / "env.txt").read_text(), (out / "arg.txt").read_text()


@pytest.mark.parametrize("hook", [None, "tools/capture.sh"])
def test_the_hook_path_reaches_the_agent_as_env_and_placeholder(
    tmp_path: Path, hook: str | None
) -> None:
    request, result, env, arg = run(tmp_path, hook)
    expected = request.workdir / (hook or DEFAULT_HOOK)
    assert env == arg == f"{expected}\n"
    assert expected.is_file()
    assert result.status == "done" and result.summary is not None
    assert result.turnsUsed == 1


def test_hook_is_a_known_placeholder_and_a_near_miss_is_named(tmp_path: Path) -> None:
    table = {"agents": {"mine": {"type": "command", "command": "x {hook} {prompt}"}}}
    assert config_from_table(table, root=tmp_path).agents["mine"].command == "x {hook} {prompt}"
    table["agents"]["mine"]["command"] = "x {hooks} {prompt}"
    with pytest.raises(
        ProblemsError, match=r'unknown placeholder \{hooks\} \(did you mean "\{hook\}"'
    ):
        config_from_table(table, root=tmp_path)
