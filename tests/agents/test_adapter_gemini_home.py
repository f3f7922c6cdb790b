"""Gemini CLI runs (and every CLI's `--version` probe) keep out of the user's home.

Gemini CLI keeps settings, chat history and its project registry under
`$GEMINI_CLI_HOME/.gemini`; each repeat gets a scratch one in its capture
directory, seeded with the auth choice alone. A stand-in binary records the
environment it got; the real CLI is driven in tests/agents/test_real_cli_agents.py.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from capeval.agents.base import AgentRequest
from capeval.agents.gemini import GeminiAdapter, auth_type
from capeval.agents.registry import make_adapter
from capeval.core.agentconfig import AgentConfig

RECORDING_CLI = textwrap.dedent(
    f"""\
    #!{sys.executable}
    import json, os, sys
    with open(os.environ["FAKE_RECORD"], "w") as fh:
        json.dump({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}}, fh)
    if sys.argv[1:] == ["--version"]:
        print("0.61.0")
    """
)


@pytest.fixture
def cli(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "recording-cli"
    path.parent.mkdir()
    path.write_text(RECORDING_CLI)
    path.chmod(0o755)
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's home: a Gemini setup with an auth choice (in JSON with comments) and history."""
    home = tmp_path / "home"
    (home / ".gemini" / "history" / "proj").mkdir(parents=True)
    (home / ".gemini" / "history" / "proj" / "log").write_text("secret chat\n")
    (home / ".gemini" / "projects.json").write_text('{"projects": {"/x": "x"}}')
    (home / ".gemini" / "settings.json").write_text(
        '{\n  // chosen in the dialog\n  "security": {"auth": {"selectedType": "vertex-ai"}},\n'
        '  "mcpServers": {"mine": {"command": "my-server"}}\n}\n'
    )
    monkeypatch.setenv("HOME", str(home))
    for var in ("GEMINI_CLI_HOME", "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(var, raising=False)
    return home


def run(tmp_path: Path, cli: Path, env: dict[str, str] | None = None) -> dict:
    config = AgentConfig(name="g", type="gemini", command=str(cli), env=env or {})
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    request = AgentRequest(
        workdir=workdir,
        prompt="hi",
        provider="google",
        model="gemini-2.5-pro",
        case_dir=tmp_path,
        capture_dir=tmp_path / "capture",
        env={"FAKE_RECORD": str(tmp_path / "record.json")},
    )
    GeminiAdapter(config).run(request)
    return json.loads((tmp_path / "record.json").read_text())


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_run_gets_a_scratch_home_with_only_the_users_auth_choice(
    tmp_path: Path, cli: Path, home: Path
) -> None:
    before = tree(home)
    record = run(tmp_path, cli)
    scratch = tmp_path / "capture" / "gemini-home"
    assert record["env"]["GEMINI_CLI_HOME"] == str(scratch)
    settings = json.loads((scratch / ".gemini" / "settings.json").read_text())
    assert settings["security"] == {"auth": {"selectedType": "vertex-ai"}}
    assert "mcpServers" not in settings  # nothing else of the user's settings
    # Runs report no usage or telemetry from a user's machine.
    assert settings["telemetry"] == {"enabled": False}
    assert settings["privacy"] == {"usageStatisticsEnabled": False}
    assert sorted(tree(scratch)) == [".gemini/settings.json"]  # no history, no projects
    assert tree(home) == before


def test_the_agents_own_env_wins(tmp_path: Path, cli: Path, home: Path) -> None:
    # An API key in the agent's env selects API-key auth over the user's Vertex choice...
    run(tmp_path, cli, {"GEMINI_API_KEY": "k"})
    settings = tmp_path / "capture" / "gemini-home" / ".gemini" / "settings.json"
    assert json.loads(settings.read_text())["security"]["auth"]["selectedType"] == "gemini-api-key"
    # ...and a home named there is used as it is, with no scratch home beside it.
    other = tmp_path / "elsewhere"
    record = run(tmp_path / "capture", cli, {"GEMINI_CLI_HOME": str(other)})
    assert record["env"]["GEMINI_CLI_HOME"] == str(other)
    assert not (tmp_path / "capture" / "capture" / "gemini-home").exists()


def test_the_auth_choice_without_a_settings_file(tmp_path: Path) -> None:
    nothing = {"HOME": str(tmp_path)}
    assert auth_type({}, nothing) is None  # left to Gemini, which says what to set
    assert auth_type({}, {**nothing, "GEMINI_API_KEY": "k"}) == "gemini-api-key"
    assert auth_type({}, {**nothing, "GOOGLE_API_KEY": "k"}) == "vertex-ai"  # express mode
    vertex = {"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us-central1"}
    assert auth_type({}, {**nothing, **vertex}) == "vertex-ai"
    assert auth_type({}, {**nothing, "GOOGLE_GENAI_USE_GCA": "true"}) == "oauth-personal"
    # The user's settings choice beats a key merely present in the shell.
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text('{"selectedAuthType": "oauth-personal"}')
    assert auth_type({}, {**nothing, "GEMINI_API_KEY": "k"}) == "oauth-personal"
    # The user's own GEMINI_CLI_HOME is where their settings are.
    elsewhere = tmp_path / "g"
    (elsewhere / ".gemini").mkdir(parents=True)
    (elsewhere / ".gemini" / "settings.json").write_text(
        '{"security": {"auth": {"selectedType": "gemini-api-key"}}}'
    )
    assert auth_type({}, {**nothing, "GEMINI_CLI_HOME": str(elsewhere)}) == "gemini-api-key"


def test_an_env_that_asks_for_vertex_gets_vertex_even_beside_an_api_key(tmp_path: Path) -> None:
    # Gemini's own precedence: GOOGLE_GENAI_USE_VERTEXAI=true picks Vertex AI
    # over a GEMINI_API_KEY that is also set (a shell often has both).
    from capeval.agents.gemini import auth_type

    env = {"HOME": str(tmp_path), "GEMINI_API_KEY": "k", "GOOGLE_GENAI_USE_VERTEXAI": "true"}
    assert auth_type({}, env) == "vertex-ai"
    assert (
        auth_type({"GOOGLE_GENAI_USE_VERTEXAI": "true", "GEMINI_API_KEY": "k"}, {}) == "vertex-ai"
    )


@pytest.mark.parametrize(
    "kind, var",
    [
        ("gemini", "GEMINI_CLI_HOME"),
        ("codex", "CODEX_HOME"),
        ("claude-code", "CLAUDE_CONFIG_DIR"),
        ("opencode", "XDG_DATA_HOME"),
    ],
)
def test_the_version_probe_runs_in_a_runs_environment(
    tmp_path: Path, cli: Path, home: Path, monkeypatch: pytest.MonkeyPatch, kind: str, var: str
) -> None:
    """`--version` writes to the CLI's home too (Gemini registers the folder): isolate it."""
    record_path = tmp_path / "record.json"
    monkeypatch.chdir(tmp_path)
    before = tree(home)
    # The entry's env reaches the probe (capeval's own environment does not).
    config = AgentConfig(
        name="a", type=kind, command=str(cli), env={"FAKE_RECORD": str(record_path)}
    )
    assert make_adapter(config).version() == "0.61.0"
    record = json.loads(record_path.read_text())
    scratch = Path(record["env"][var])
    assert not str(scratch).startswith(str(home)) and not scratch.exists()  # thrown away
    assert record["cwd"] != str(tmp_path)
    assert tree(home) == before
