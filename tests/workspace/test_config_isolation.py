"""The isolation keys of capeval.toml: read at the top and per agent, refused with the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from capeval.config import load_config
from capeval.core.problems import ProblemsError


def problems(root: Path, text: str) -> list[str]:
    (root / "capeval.toml").write_text(text, encoding="utf-8")
    with pytest.raises(ProblemsError) as info:
        load_config(root)
    return [str(p) for p in info.value.problems]


def test_the_top_level_and_an_agents_table_are_kept_as_written(tmp_path: Path) -> None:
    (tmp_path / "capeval.toml").write_text(
        'isolation = "bwrap"\nnetwork = "none"\nlimits = { memory = "4G", pids = 512 }\n'
        'env_pass = ["HTTPS_PROXY"]\n'
        '[agents.claude-code]\nisolation = "docker"\nimage = "agents:1"\n'
        'home_dirs = ["~/.claude"]\nlimits = { cpus = 2 }\n'
    )
    config = load_config(tmp_path)
    assert config.sandbox == {
        "isolation": "bwrap",
        "network": "none",
        "limits": {"memory": "4G", "pids": 512},
        "env_pass": ["HTTPS_PROXY"],
    }
    assert config.agents["claude-code"].sandbox == {
        "isolation": "docker",
        "image": "agents:1",
        "home_dirs": ["~/.claude"],
        "limits": {"cpus": 2},
    }
    assert config.agents["codex"].sandbox == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('isolation = "podman"\n', "capeval.toml: isolation: "),
        ('limits = { memory = "lots" }\n', "limits.memory: "),
        ("limits = { pids = 0 }\n", "limits.pids: "),
        ("limits = { swap = 1 }\n", "limits.swap: unknown field"),
        ('env_pass = ["A B"]\n', "env_pass[0]: "),
        ('[agents.x]\ntype = "codex"\nhome_dirs = ["/etc"]\n', "agents.x.home_dirs: "),
        ('[agents.x]\ntype = "codex"\nnetwork = "wide"\n', "agents.x.network: "),
        ('isolation = "bwrap"\nnetwork = "bridge"\n', 'network: "bridge" is Docker\'s'),
    ],
)
def test_a_bad_isolation_key_names_file_field_and_fix(
    tmp_path: Path, text: str, expected: str
) -> None:
    found = problems(tmp_path, text)
    assert any(expected in p for p in found), found


def test_a_case_may_name_its_own_image(tmp_path: Path) -> None:
    from capeval.workspace import load_cases
    from tests.runhelpers import write_case

    write_case(tmp_path, "alpha", image="node-tools:22")
    (case,) = load_cases(tmp_path)
    assert case.image == "node-tools:22"
    assert case.to_json()["image"] == "node-tools:22"
