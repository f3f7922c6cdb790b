"""A hostile agent per backend: every escape the probe tries, and the run's verdicts.

The probe (capeval.runner.probe) runs through the real runner beside a decoy
repeat, writing only to its own throwaway workspace and folders. In a bwrap
or Docker sandbox every escape must be blocked and both verdicts must stay
failed; without a sandbox the same attempts succeed (that is what `none`
means), except that the row stream's writer still refuses to glue rows onto
the forged bytes and stops the run.
"""

from __future__ import annotations

import pytest

from capeval.core.isolation import Limits
from capeval.isolation.limits import limits_problem
from capeval.runner.probe import PROBE_LIMITS, ProbeReport, run_probe
from tests.sandboxes import docker_image, require

pytestmark = pytest.mark.slow

ESCAPES = [
    "grader via /proc/PPID/cwd",
    "baseline",
    "row stream",
    "sibling workdir",
    "secret in the environment",
    "signal capeval or its watchman",
    "setsid env -i daemon",
    "write outside the sandbox",
    "host network",
    "fork past the pids limit",
    "memory past the limit",
    "verdicts",
]


def every_escape_blocked(report: ProbeReport) -> None:
    found = {e.name: e for e in report.escapes}
    assert list(found) == ESCAPES
    open_ = {n: e.detail for n, e in found.items() if e.blocked is not True}
    assert open_ == {}, report.to_json()
    assert report.error is None and report.ok


def test_a_hostile_agent_in_bwrap_is_blocked_everywhere() -> None:
    require("bwrap")
    why = limits_problem(PROBE_LIMITS)
    if why is not None:
        pytest.skip(f"the fork and memory escapes need limits this host refuses: {why}")
    every_escape_blocked(run_probe("bwrap", network="none"))


def test_a_hostile_agent_in_docker_is_blocked_everywhere() -> None:
    every_escape_blocked(run_probe("docker", image=docker_image(), network="none"))


def test_without_a_sandbox_the_same_agent_gets_through_but_no_row_is_glued() -> None:
    report = run_probe("none", network="shared", limits=Limits())
    found = {e.name: e for e in report.escapes}
    for name in ("grader via /proc/PPID/cwd", "baseline", "row stream", "sibling workdir",
                 "secret in the environment", "setsid env -i daemon",
                 "write outside the sandbox"):  # fmt: skip
        assert found[name].blocked is False, (name, found[name].detail)
    assert "found via /proc/" in found["grader via /proc/PPID/cwd"].detail
    assert report.error is not None and "changed by another process" in report.error
    assert "capeval run --resume" in report.error
