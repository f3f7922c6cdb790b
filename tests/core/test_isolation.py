"""The isolation a repeat runs with, as configured: sizes, precedence, what cannot run anywhere."""

from __future__ import annotations

import pytest

from capeval.core.isolation import (
    Isolation,
    Limits,
    home_dir_problem,
    isolation_problem,
    parse_size,
    resolve_isolation,
    show_size,
)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("4G", 4 << 30),
        ("512M", 512 << 20),
        ("512m", 512 << 20),
        ("2GiB", 2 << 30),
        ("1.5G", 3 << 29),
        ("100", 100),
        ("64K", 64 << 10),
        (1024, 1024),
    ],
)
def test_sizes_read_binary_units(text: str | int, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["lots", "-1G", "0", "4 X", "", True])
def test_a_size_that_is_none_says_how_to_write_one(text: str) -> None:
    with pytest.raises(ValueError, match='a size such as "4G"'):
        parse_size(text)


def test_sizes_show_in_the_largest_whole_unit() -> None:
    assert [show_size(s) for s in (4 << 30, 512 << 20, 1000)] == ["4G", "512M", "1000"]


def test_the_agents_keys_win_and_limits_merge_key_by_key() -> None:
    run = {"isolation": "bwrap", "network": "none", "limits": {"memory": "4G", "pids": 100},
           "env_pass": ["HTTPS_PROXY"], "image": "top"}  # fmt: skip
    agent = {"isolation": "docker", "limits": {"pids": 50}, "env_pass": ["NODE_EXTRA_CA_CERTS"],
             "home_dirs": ["~/.claude"]}  # fmt: skip
    iso = resolve_isolation(run, agent)
    assert iso.backend == "docker" and iso.network == "none" and iso.image == "top"
    assert iso.limits == Limits(memory=4 << 30, pids=50)
    assert iso.env_pass == ("HTTPS_PROXY", "NODE_EXTRA_CA_CERTS")
    assert iso.home_dirs == ("~/.claude",)


def test_the_flag_wins_over_both_and_the_case_image_over_the_agents() -> None:
    iso = resolve_isolation(
        {"isolation": "bwrap"}, {"isolation": "docker", "image": "a"}, backend="none"
    )
    assert iso.backend == "none"
    iso = resolve_isolation({"image": "top"}, {"image": "agent"}, case_image="case")
    assert iso.image == "case"


def test_nothing_configured_is_none_with_a_shared_network() -> None:
    assert resolve_isolation({}, {}) == Isolation()
    assert not Isolation().sandboxed and Isolation(backend="bwrap").sandboxed


@pytest.mark.parametrize(
    ("iso", "words"),
    [
        (Isolation(backend="docker"), 'isolation = "docker" needs an image'),
        (Isolation(backend="bwrap", network="bridge"), '"bridge" is Docker\'s'),
        (Isolation(limits=Limits(pids=5)), "limits (pids) need a sandbox"),
        (Isolation(backend="podman"), "isolation 'podman' is unknown"),
    ],
)
def test_what_cannot_run_anywhere_is_said_with_the_fix(iso: Isolation, words: str) -> None:
    problem = isolation_problem(iso)
    assert problem is not None and words in problem


def test_a_runnable_isolation_has_no_problem() -> None:
    assert isolation_problem(Isolation(backend="docker", image="i", network="bridge")) is None
    assert isolation_problem(Isolation(backend="bwrap", limits=Limits(memory=1))) is None


@pytest.mark.parametrize("entry", ["/etc/passwd", "~/../x", "~/", ".claude", "~user/.claude"])
def test_home_dirs_must_name_a_path_in_the_home(entry: str) -> None:
    problem = home_dir_problem(entry)
    assert problem is not None and "~/PATH" in problem


def test_limits_as_json_use_readable_sizes() -> None:
    assert Limits(memory=256 << 20, pids=128).to_json() == {"memory": "256M", "pids": 128}
