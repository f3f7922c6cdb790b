"""docs/tutorial.md is executed as written, so it never drifts from capeval.

The page is read top to bottom, in an empty folder:

- a fenced block whose info string is `console` is a shell session: each line
  starting with `$ ` is a command, run with bash in the current folder (a
  `cd` carries over to the next command), and the lines after it, up to the
  next command, are its expected output (stdout and stderr as a terminal
  shows them). A command must exit 0; one that shows another exit code says
  so itself (`...; echo "exit $?"`). `...` matches any text within a line,
  and a line of just `...` any number of lines;
- a fenced block with `title="PATH"` in its info string is a file: it is
  written to PATH (relative to the current folder) as shown;
- a block right after the line `<!-- tutorial: skip -->` is not run (the
  install step: the tests run the checkout's capeval).

`capeval` on the PATH is this interpreter's `python -m capeval`, the code
under test. No dependency beyond pytest: a runner of a dozen lines keeps the
page the only source of the commands, where pytest-console-scripts would
need them copied into Python.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial.md"
SKIP = "<!-- tutorial: skip -->"
_FENCE = re.compile(r"^```(\S*)(.*)$")
_TITLE = re.compile(r'title="([^"]+)"')


@dataclass
class Step:
    """A command with its expected output, or a file to write."""

    line: int
    command: str | None = None
    expected: list[str] = field(default_factory=list)
    path: str | None = None
    content: str = ""


def steps(text: str) -> list[Step]:
    out: list[Step] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        start = i
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        body = lines[i + 1 : end]
        skipped = start > 0 and lines[start - 1].strip() == SKIP
        title = _TITLE.search(fence.group(2))
        if skipped:
            pass
        elif title:
            out.append(Step(start + 1, path=title.group(1), content="\n".join(body) + "\n"))
        elif fence.group(1) == "console":
            for n, line in enumerate(body, start + 2):
                if line.startswith("$ "):
                    out.append(Step(n, command=line[2:]))
                elif out and out[-1].command is not None:
                    out[-1].expected.append(line)
        i = end + 1
    return out


def _line_pattern(expected: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in expected.rstrip().split("...")))


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether `actual` lines fit `expected`, `...` matching any text (or lines)."""
    actual = [line.rstrip() for line in actual]
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head.strip() == "...":
        return any(matches(rest, actual[k:]) for k in range(len(actual) + 1))
    return (
        bool(actual)
        and bool(_line_pattern(head).fullmatch(actual[0]))
        and matches(rest, actual[1:])
    )


def test_the_matcher_takes_ellipses_within_and_across_lines() -> None:
    assert matches(["run ...: 1 of 1", "...", "done"], ["run 2026-x: 1 of 1", "a", "b", "done"])
    assert matches(["a...c"], ["abbbc  "])
    assert not matches(["a", "b"], ["a"]) and not matches(["a"], ["a", "b"])
    assert not matches(["x (1)"], ["x 1"])  # the rest is literal, not a regex


def test_the_page_parses_into_commands_and_files() -> None:
    found = steps(TUTORIAL.read_text(encoding="utf-8"))
    commands = [s.command for s in found if s.command]
    assert "capeval init evals-demo" in commands
    assert not any("pip install" in c for c in commands)  # skipped
    assert {s.path for s in found if s.path} >= {"agent/build-a.sh", "capeval.toml"}


@pytest.mark.slow
def test_the_tutorial_runs_as_written(tmp_path: Path) -> None:
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "capeval").write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m capeval "$@"\n'
    )
    (shims / "capeval").chmod(0o755)
    env = {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("CAPEVAL_CLI_CACHE", None)
    cwd = tmp_path / "work"
    cwd.mkdir()
    where = tmp_path / "cwd.txt"
    for step in steps(TUTORIAL.read_text(encoding="utf-8")):
        at = f"docs/tutorial.md:{step.line}"
        if step.path is not None:
            target = cwd / step.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step.content, encoding="utf-8")
            continue
        assert step.command is not None
        script = f"{step.command}\n__rc=$?\npwd > {shlex.quote(str(where))}\nexit $__rc\n"
        proc = subprocess.run(
            ["bash", "-c", script],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, (
            f"{at}: $ {step.command}\nexit {proc.returncode}\n{proc.stdout}"
        )
        cwd = Path(where.read_text().strip())
        if step.expected:
            got = proc.stdout.splitlines()
            assert matches(step.expected, got), (
                f"{at}: $ {step.command}\n--- expected\n" + "\n".join(step.expected)
                + "\n--- got\n" + proc.stdout
            )  # fmt: skip
