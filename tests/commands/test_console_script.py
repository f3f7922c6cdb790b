"""The console script (`capeval.cli:entry`, and `python -m capeval`): start-up and Ctrl-C."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.rowfactory import result_row


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_console_script_loads_no_analysis_stack_before_it_knows_the_command() -> None:
    out = run_python(
        """
        import sys
        import capeval.cli
        print(sorted(m for m in sys.modules if m.split('.')[0] in
                     ('duckdb', '_duckdb', 'polars', 'scipy', 'matplotlib')))
        """
    )
    assert out.stdout.strip() == "[]", out.stderr


def test_python_m_capeval_is_the_console_script(tmp_path: Path) -> None:
    rows = [result_row("a", r) for r in range(2)]
    base = tmp_path / "b.jsonl"
    write_jsonl(base, rows)
    (tmp_path / "evals" / "capability" / "cases").mkdir(parents=True)
    ok = subprocess.run(
        [sys.executable, "-m", "capeval", "gate", "--root", str(tmp_path),
         "--baseline", str(base), "--candidate", str(base)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "capeval", "gate", "--no-such-option"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and "No such option" in bad.stderr
    assert "Traceback" not in bad.stderr


def _interrupted_import(module: str) -> str:
    """Code making an import of `module` raise as a SIGINT landing there would.

    Both ways in: the import statement, and importlib.import_module (how
    click's group loads a command).
    """
    return textwrap.dedent(f"""
        import builtins, importlib
        real, real_module = builtins.__import__, importlib.import_module
        def interrupted(name, *args, **kwargs):
            if name == {module!r}:
                raise KeyboardInterrupt
            return real(name, *args, **kwargs)
        def interrupted_module(name, *args, **kwargs):
            if name == {module!r}:
                raise KeyboardInterrupt
            return real_module(name, *args, **kwargs)
        builtins.__import__, importlib.import_module = interrupted, interrupted_module
        """)


@pytest.mark.parametrize("module", ["click", "capeval.commands", "capeval.commands.validate"])
def test_ctrl_c_while_capeval_starts_exits_130_without_a_traceback(module: str) -> None:
    # SIGINT landing while click and the commands import (the first ~0.1 s:
    # click as the console script imports `capeval.cli`, capeval.commands in
    # its entry before click runs, a command's module inside click) is made
    # deterministic by an import that raises as SIGINT would.
    out = run_python(
        _interrupted_import(module)
        + textwrap.dedent("""
        import sys
        sys.argv = ["capeval", "validate"]
        from capeval.cli import entry
        entry()
        """)
    )
    assert out.returncode == 130, out.stderr
    assert "interrupted by SIGINT" in out.stderr
    assert "Traceback" not in out.stderr
