"""The environment allow-list: what an agent and a grader inherit from capeval's environment."""

from __future__ import annotations

from capeval.isolation.environment import agent_environment, grader_environment

SOURCE = {
    "PATH": "/usr/bin",
    "LANG": "C.UTF-8",
    "TERM": "xterm",
    "HOME": "/home/me",
    "AWS_SECRET_ACCESS_KEY": "aws",
    "GITHUB_TOKEN": "gh",
    "ANTHROPIC_API_KEY": "sk-ant",
    "HTTPS_PROXY": "http://proxy:3128",
    "CI": "true",
}


def test_an_agent_gets_the_base_its_needs_its_env_pass_and_its_own_home() -> None:
    env = agent_environment(
        needs=("ANTHROPIC_API_KEY",), env_pass=("HTTPS_PROXY",), home="/sandbox/home", source=SOURCE
    )
    assert env == {
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "TERM": "xterm",
        "HOME": "/sandbox/home",
        "ANTHROPIC_API_KEY": "sk-ant",
        "HTTPS_PROXY": "http://proxy:3128",
    }


def test_a_grader_gets_no_credential_of_the_agent_and_no_secret_named_variable() -> None:
    env = grader_environment(
        env_pass=("HTTPS_PROXY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "CI"),
        credentials=("ANTHROPIC_API_KEY",),
        home="/sandbox/verify-home",
        source=SOURCE,
    )
    assert env == {
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "TERM": "xterm",
        "HOME": "/sandbox/verify-home",
        "HTTPS_PROXY": "http://proxy:3128",
        "CI": "true",
    }


def test_a_missing_path_gets_a_default_one() -> None:
    env = agent_environment(needs=(), env_pass=(), home="/h", source={})
    assert env == {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/h"}
