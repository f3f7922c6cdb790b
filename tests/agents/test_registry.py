"""The agent registry: built-in agents exist unconfigured, adapters load lazily."""

from __future__ import annotations

import subprocess
import sys

import pytest

from capeval.agents.registry import UnknownAgentError, make_adapter
from capeval.core.agentconfig import AgentConfig, builtin_agents


def test_builtin_agents_include_scripted_and_the_real_clis() -> None:
    agents = builtin_agents()
    assert agents["scripted"] == AgentConfig(name="scripted", type="scripted")
    assert {"claude-code", "codex", "gemini", "opencode"} <= set(agents)


def test_unknown_type_names_the_known_ones() -> None:
    with pytest.raises(UnknownAgentError, match=r"'nope' has no adapter \(known types: .*scripted"):
        make_adapter(AgentConfig(name="x", type="nope"))


def test_importing_the_registry_imports_no_adapter() -> None:
    code = (
        "import sys, capeval.agents.registry\n"
        "print([m for m in sys.modules if m.startswith('capeval.agents.') and m not in "
        "('capeval.agents.registry', 'capeval.agents.base')])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
