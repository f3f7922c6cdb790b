"""Limits: capeval's cgroups found from /proc, the refusals, the prlimit prefix."""

from __future__ import annotations

from pathlib import Path

from capeval.core.isolation import Limits
from capeval.isolation.limits import (
    Cgroup,
    Hierarchy,
    find_hierarchies,
    limits_problem,
    rlimit_argv,
)

V1_MOUNTINFO = """\
30 25 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
34 30 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
35 30 0:31 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
36 30 0:32 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
"""
V1_SELF = "5:pids:/\n4:memory:/ci/job-7\n3:cpu,cpuacct:/\n0::/\n"
V2_MOUNTINFO = "30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
V2_SELF = "0::/user.slice/capeval.scope\n"


def test_v1_finds_capevals_own_cgroup_per_controller(tmp_path: Path) -> None:
    found = find_hierarchies(V1_MOUNTINFO, V1_SELF, str(tmp_path))
    root = tmp_path / "sys/fs/cgroup"
    assert found == {
        "memory": Hierarchy(1, root / "memory/ci/job-7"),
        "pids": Hierarchy(1, root / "pids"),
        "cpu": Hierarchy(1, root / "cpu,cpuacct"),
    }


def test_v2_offers_what_capevals_cgroup_lists(tmp_path: Path) -> None:
    own = tmp_path / "sys/fs/cgroup/user.slice/capeval.scope"
    own.mkdir(parents=True)
    (own / "cgroup.controllers").write_text("cpu memory\n")
    found = find_hierarchies(V2_MOUNTINFO, V2_SELF, str(tmp_path))
    assert found == {"memory": Hierarchy(2, own), "cpu": Hierarchy(2, own)}


def test_a_limit_without_its_controller_is_refused_with_the_fix() -> None:
    problem = limits_problem(Limits(pids=10), found={})
    assert problem is not None
    assert "limits.pids needs the cgroup pids controller" in problem
    assert 'isolation = "docker"' in problem


def test_a_cgroup_capeval_cannot_write_is_refused(tmp_path: Path) -> None:
    own = tmp_path / "own"
    own.mkdir(mode=0o555)
    problem = limits_problem(Limits(memory=1 << 20), found={"memory": Hierarchy(1, own)})
    import os

    if os.geteuid() == 0:  # root writes anywhere: nothing to refuse
        assert problem is None
    else:
        assert problem is not None and "cannot make cgroups" in problem


def test_v2_with_processes_and_the_controller_off_is_refused(tmp_path: Path) -> None:
    own = tmp_path / "own"
    own.mkdir()
    (own / "cgroup.subtree_control").write_text("cpu\n")
    (own / "cgroup.procs").write_text("123\n")
    problem = limits_problem(Limits(memory=1 << 20), found={"memory": Hierarchy(2, own)})
    assert problem is not None and "Delegate=yes" in problem


def test_rlimits_go_through_prlimit() -> None:
    assert rlimit_argv(Limits()) == []
    assert rlimit_argv(Limits(cpu_seconds=60, disk=1 << 30)) == [
        "prlimit",
        "--cpu=60:61",
        f"--fsize={1 << 30}:{1 << 30}",
        "--",
    ]


def test_the_sandbox_joins_its_cgroups_before_it_starts(tmp_path: Path) -> None:
    group = Cgroup([tmp_path / "a b", tmp_path / "c"])
    argv = group.join_argv()
    assert argv[:2] == ["/bin/sh", "-c"]
    assert f"echo $$ > '{tmp_path}/a b/cgroup.procs'" in argv[2]
    assert argv[2].endswith('exec "$@"')
    assert Cgroup().join_argv() == []
