"""`editViaShellCount` against the real sed, perl and gawk.

The classifier reads switch clusters (`perl -0pi`, `sed -ni.bak`) and long
options (`--in-place`, `--include`) by hand; the only ground truth for such
spellings is the tool itself. Each spelling here runs the installed tool on
a scratch file with a harmless program (a -> b) and checks that the metric
counts the command exactly when the tool edited the file in place.

The spec's rule is lexical ("any word starting `-i`"), so some commands count
although the tool edits nothing (a stray `-i` after `--`, a compile-only
run): those are listed apart, with the reason, and checked against both the
tool and the spec's literal rule.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from capeval.core.behaviors import derive_behaviors
from capeval.core.runsummary import summary_from_json
from tests.system_tools import find_gawk

ORIGINAL = "a\n"
SED = "s/a/b/"
PERL = "s/a/b/"
AWK = '{ sub(/a/, "b") } 1'


def counted(argv: list[str]) -> bool:
    """Whether `editViaShellCount` counts the command, through the public metric."""
    call = {"name": "run_shell", "arguments": {"command": shlex.join(argv)}}
    result = derive_behaviors(summary_from_json({"turns": [{"toolCalls": [call]}]}))
    count = result["editViaShellCount"]
    assert count in (0, 1)
    return count == 1


def _awk_is_gawk(path: str) -> bool:
    done = subprocess.run(
        [path, "--version"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=5
    )
    return done.returncode == 0 and done.stdout.startswith("GNU Awk")


def executable(name: str) -> str:
    """The installed tool that a spelling's command word names, or a skip saying why not."""
    if name in ("gawk", "awk"):
        awk = shutil.which("awk")
        if name == "awk" and awk and _awk_is_gawk(awk):
            return awk
        gawk = find_gawk()
        if gawk is None:
            pytest.skip(
                "gawk is not installed: `-i inplace` and `--include` are gawk features "
                "(`python3 tests/system_tools.py install` unpacks one into .cache/tools)"
            )
        return gawk
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed")
    return path


def run_tool(argv: list[str], tmp_path: Path) -> dict[str, Any]:
    """Run the real tool on `f` (holding "a") in a scratch directory; what happened to `f`."""
    (tmp_path / "f").write_text(ORIGINAL)
    (tmp_path / "prog.pl").write_text(PERL + "\n")
    before = set(os.listdir(tmp_path))
    env = {k: v for k, v in os.environ.items() if k not in ("PERL5OPT", "POSIXLY_CORRECT")}
    done = subprocess.run(
        [executable(argv[0]), *argv[1:]],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,  # a spelling that swallows the file name reads stdin
        capture_output=True,
        text=True,
        timeout=10,
        env={**env, "LC_ALL": "C"},
    )
    return {
        "edited": (tmp_path / "f").read_text() != ORIGINAL,
        "new files": sorted(set(os.listdir(tmp_path)) - before),
        "exit": done.returncode,
        "stderr": done.stderr[-300:],
    }


# (argv, does the real tool edit `f` in place?) -- the expectation is only a
# guard on the table itself: the test compares the metric with the run.
SPELLINGS: list[tuple[list[str], bool]] = [
    # GNU sed
    (["sed", "-i", SED, "f"], True),
    (["sed", "-i.bak", SED, "f"], True),
    (["sed", "-ni", SED + "p", "f"], True),
    (["sed", "-ni.orig", SED + "p", "f"], True),
    (["sed", "-ei", "f"], False),  # -e takes the script `i`
    (["sed", "-e", SED, "-i", "f"], True),
    (["sed", SED, "f", "-i"], True),  # GNU getopt permutes: a late -i is read
    (["sed", "--in-place", SED, "f"], True),
    (["sed", "--in-place=.bak", SED, "f"], True),
    (["sed", "--in-pl", SED, "f"], True),  # getopt_long takes any unique prefix
    (["sed", "--in", SED, "f"], True),
    (["sed", "--i=.bak", SED, "f"], True),
    (["sed", "-E", "-i", SED, "f"], True),
    (["sed", "-Ei", SED, "f"], True),
    (["sed", "-iE", SED, "f"], True),  # suffix E, still in place
    (["sed", "-ie", SED, "f"], True),  # suffix e: the script is the next word
    (["sed", "-s", "-i", SED, "f"], True),
    (["sed", "-si", SED, "f"], True),
    (["sed", "-z", "-i", SED, "f"], True),
    (["sed", "-nEi", SED + "p", "f"], True),
    (["sed", "-l5i", SED, "f"], False),  # -l takes `5i`
    (["sed", "-fi", "f"], False),  # -f takes the script file `i`
    (["sed", "--expression=" + SED, "--in-place", "f"], True),
    (["sed", "--expression=" + SED, "f"], False),
    (["sed", "-n", "-e", "p", "f"], False),
    (["sed", "-n", "/-i/p", "f"], False),
    # perl
    (["perl", "-pi", "-e", PERL, "f"], True),
    (["perl", "-pi.bak", "-e", PERL, "f"], True),
    (["perl", "-i", "-pe", PERL, "f"], True),
    (["perl", "-i.bak", "-pe", PERL, "f"], True),
    (["perl", "-p", "-i", "-e", PERL, "f"], True),
    (["perl", "-pe", PERL, "-i", "f"], True),  # switches go on after -e's code
    (["perl", "-pie", "prog.pl", "f"], True),  # -i takes `e` as its backup suffix
    (["perl", "-0pi", "-e", PERL, "f"], True),
    (["perl", "-00pi", "-e", PERL, "f"], True),
    (["perl", "-0777pi", "-e", PERL, "f"], True),
    (["perl", "-07777pi", "-e", PERL, "f"], False),  # -0 reads 3 digits: `-7pi` is no switch
    (["perl", "-0x0api", "-e", PERL, "f"], False),  # not all hex: -0 then -x, whose dir is `0api`
    (["perl", "-0x1Fpi", "-e", PERL, "f"], False),
    (["perl", "-0xpi", "-e", PERL, "f"], False),
    (["perl", "-0x0a", "-pi", "-e", PERL, "f"], True),
    (["perl", "-0x1F", "-pi", "-e", PERL, "f"], True),
    (["perl", "-0X1Fpi", "-e", PERL, "f"], False),  # -0, -X, then `1` is no switch
    (["perl", "-lpi", "-e", PERL, "f"], True),
    (["perl", "-l0pi", "-e", PERL, "f"], True),
    (["perl", "-l012pi", "-e", PERL, "f"], True),
    (["perl", "-l0123pi", "-e", PERL, "f"], True),  # a leading 0 allows a 4th digit
    (["perl", "-l1234pi", "-e", PERL, "f"], False),  # else 3: `-4pi` is no switch
    (["perl", "-Xpi", "-e", PERL, "f"], True),
    (["perl", "-wpi", "-e", PERL, "f"], True),
    (["perl", "-Wpi", "-e", PERL, "f"], True),
    (["perl", "-api", "-e", PERL, "f"], True),
    (["perl", "-spi", "-e", PERL, "f"], True),
    (["perl", "-dpi", "-e", PERL, "f"], True),  # -d takes a rest only after `:` or `=`
    (["perl", "-Dpi", "-e", PERL, "f"], False),  # -D eats the word's letters
    (["perl", "-CSpi", "-e", PERL, "f"], False),  # -C rejects the letter p
    (["perl", "-F,pi", "-ae", PERL, "f"], False),  # -F takes `,pi`
    (["perl", "-Ilib", "-pe", PERL, "f"], False),
    (["perl", "-Ilib", "-pi", "-e", PERL, "f"], True),
    (["perl", "-Mstrict", "-pe", PERL, "f"], False),
    (["perl", "-Mstrict", "-pi", "-e", PERL, "f"], True),
    (["perl", "-MO=Deparse,-p", "-pe", PERL, "f"], False),
    (["perl", "-ne", "print", "f"], False),
    (["perl", "-ne", "print if /-i/", "f"], False),  # -i inside the code
    # gawk (and awk, where awk is gawk)
    (["gawk", "-i", "inplace", AWK, "f"], True),
    (["gawk", "-iinplace", AWK, "f"], True),
    (["gawk", "--include", "inplace", AWK, "f"], True),
    (["gawk", "--include=inplace", AWK, "f"], True),
    (["gawk", "--inc", "inplace", AWK, "f"], True),
    (["gawk", "-bi", "inplace", AWK, "f"], True),  # -b then -i: a cluster
    (["gawk", "-F:", "-i", "inplace", AWK, "f"], True),
    (["gawk", "-e", AWK, "-i", "inplace", "f"], True),
    (["gawk", "-v", "inplace::suffix=.bak", "-i", "inplace", AWK, "f"], True),
    (["gawk", "-l", "inplace", AWK, "f"], False),  # the library alone edits nothing
    (["gawk", "-F", "i", AWK, "f"], False),
    (["gawk", AWK, "f"], False),
    (["awk", "-i", "inplace", AWK, "f"], True),
]


@pytest.mark.parametrize(
    ("argv", "edits"), SPELLINGS, ids=[shlex.join(argv) for argv, _ in SPELLINGS]
)
def test_the_metric_counts_what_the_real_tool_edits_in_place(
    argv: list[str], edits: bool, tmp_path: Path
) -> None:
    seen = run_tool(argv, tmp_path)
    assert seen["edited"] == edits, f"the table is wrong about the real tool: {seen}"
    assert counted(argv) == seen["edited"], seen


def test_perl_pie_takes_e_as_the_backup_suffix(tmp_path: Path) -> None:
    """`-pie` is `-p -i` with suffix `e`: perl edits in place and keeps `fe`.

    Written `perl -pie 's/a/b/' f`, the code becomes the script's file name
    and perl fails; the metric still counts that spelling (below), since the
    switch it sets is the in-place one.
    """
    seen = run_tool(["perl", "-pie", "prog.pl", "f"], tmp_path)
    assert seen["edited"] and seen["new files"] == ["fe"], seen


# (argv, the same switches written apart, as the spec's "any word starting
# `-i`" reads them; why the real tool edits nothing nonetheless)
SPEC_COUNTS_ANYWAY: list[tuple[list[str], list[str], str]] = [
    (
        ["perl", "-pie", PERL, "f"],
        ["perl", "-p", "-ie", PERL, "f"],
        "the code became the script name",
    ),
    (
        ["perl", "-cpi", "-e", PERL, "f"],
        ["perl", "-c", "-p", "-i", "-e", PERL, "f"],
        "compile only",
    ),
    (
        ["perl", "-MO=Deparse", "-pi", "-e", PERL, "f"],
        ["perl", "-MO=Deparse", "-p", "-i", "-e", PERL, "f"],
        "compile only",
    ),
    (
        ["perl", "-pe", PERL, "f", "-i"],
        ["perl", "-pe", PERL, "f", "-i"],
        "-i after the file is a file",
    ),
    (["sed", "--", SED, "-i", "f"], ["sed", "--", SED, "-i", "f"], "-i after -- is a file"),
    (["sed", "-e", "-i", "f"], ["sed", "-e", "-i", "f"], "-e takes -i as its script"),
    (
        ["gawk", "--", "-i", "inplace", AWK, "f"],
        ["gawk", "--", "-i", "inplace", AWK, "f"],
        "after --",
    ),
    (["gawk", "-i", "assert", AWK, "f"], ["gawk", "-i", "assert", AWK, "f"], "another include"),
]


@pytest.mark.parametrize(
    ("argv", "apart", "why"), SPEC_COUNTS_ANYWAY, ids=[w for _, _, w in SPEC_COUNTS_ANYWAY]
)
def test_the_spec_counts_a_lexical_in_place_switch_the_tool_does_not_act_on(
    argv: list[str], apart: list[str], why: str, tmp_path: Path
) -> None:
    assert any(word.startswith("-i") for word in apart[1:])  # the spec's literal rule
    seen = run_tool(argv, tmp_path)
    assert not seen["edited"], f"{why}? the real tool edited: {seen}"
    assert counted(apart)
    assert counted(argv)


def test_awk_i_counts_even_where_awk_is_not_gawk(tmp_path: Path) -> None:
    """The spec names `awk` with `-i`: on most machines awk is gawk. mawk has no -i."""
    awk = shutil.which("awk")
    if awk is None:
        pytest.skip("awk is not installed")
    if _awk_is_gawk(awk):
        pytest.skip("awk here is gawk: the spelling table runs `awk -i inplace` on it")
    argv = ["awk", "-i", "inplace", AWK, "f"]
    (tmp_path / "f").write_text(ORIGINAL)
    done = subprocess.run(
        [awk, *argv[1:]], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, timeout=10
    )
    assert done.returncode != 0 and (tmp_path / "f").read_text() == ORIGINAL
    assert counted(argv)


# What GNU Awk 5.2.1 did with each spelling when the table above ran on it;
# kept so that the gawk rules stay guarded where gawk is not installed.
GAWK_OBSERVED = [
    (["gawk", "--include", "inplace", AWK, "f"], True),
    (["gawk", "--include=inplace", AWK, "f"], True),
    (["gawk", "--inc", "inplace", AWK, "f"], True),
    (["gawk", "--i", "inplace", AWK, "f"], True),
    (["gawk", "-bi", "inplace", AWK, "f"], True),
    (["gawk", "-ni", "inplace", AWK, "f"], True),
    (["gawk", "-Fi", AWK, "f"], False),
    (["gawk", "-l", "inplace", AWK, "f"], False),
]


@pytest.mark.parametrize(
    ("argv", "edits"), GAWK_OBSERVED, ids=[shlex.join(argv) for argv, _ in GAWK_OBSERVED]
)
def test_gawk_spellings_as_observed(argv: list[str], edits: bool) -> None:
    assert counted(argv) == edits
