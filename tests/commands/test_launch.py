"""The console script's launcher and DuckDB's early start (`capeval.analysis.engine`)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from capeval import launch
from capeval.analysis import engine, fastload
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


@pytest.fixture
def fresh_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's engine state as a new process has it."""
    monkeypatch.setattr(engine, "_started", None)
    monkeypatch.setattr(engine, "_ready", [])


def test_the_launcher_imports_neither_click_nor_duckdb_before_it_knows_the_command() -> None:
    out = run_python(
        """
        import sys
        import capeval.launch
        print(sorted(m for m in sys.modules if m.split('.')[0] in
                     ('click', 'duckdb', '_duckdb', 'polars', 'capeval.cli')))
        """
    )
    assert out.stdout.strip() == "[]", out.stderr


@pytest.mark.parametrize("command, early", [("gate", True), ("compare", True), ("report", True),
                                            ("run", False), ("validate", False), ("--help", False)])  # fmt: skip
def test_duckdb_starts_early_only_for_commands_that_scan_with_it(
    command: str, early: bool, fresh_engine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import capeval.cli

    ran: list[bool] = []
    monkeypatch.setattr(capeval.cli, "entry", lambda: ran.append(True))
    monkeypatch.setattr(sys, "argv", ["capeval", command])
    launch.entry()
    assert ran == [True]
    assert (engine._started is not None) is early
    if early:
        engine.connect().close()


def test_a_plain_gate_on_jsonl_files_begins_its_scan_instead(
    tmp_path: Path, fresh_engine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from capeval.analysis import prefetch
    from capeval.analysis.native_reader import native_reader

    if native_reader() is None:
        pytest.skip("the native reader is not built here (no C++ compiler)")
    import capeval.cli

    base = tmp_path / "b.jsonl"
    write_jsonl(base, [result_row("a", r) for r in range(2)])
    monkeypatch.setattr(prefetch, "_pending", None)
    monkeypatch.setattr(capeval.cli, "entry", lambda: None)
    monkeypatch.setattr(
        sys, "argv", ["capeval", "gate", "--baseline", str(base), "--candidate", str(base)]
    )
    launch.entry()
    assert prefetch._pending is not None and engine._started is None  # no DuckDB to warm
    request = prefetch.ScanRequest(
        [[str(base)], [str(base)]], list(fastload.METRIC_NAMES), False, False, prefetch.threads()
    )
    assert prefetch.take(request)


def test_the_early_connection_is_handed_out_once(fresh_engine: None) -> None:
    engine.start()
    engine.start()  # a second start opens nothing more
    assert engine._started is not None
    engine._started.join()
    assert len(engine._ready) == 1
    early = engine._ready[0]
    first = engine.connect()
    assert first is early and engine._ready == []
    second = engine.connect()
    assert second is not first
    assert first.execute("SELECT 41 + 1").fetchall() == [(42,)]
    assert second.execute("SELECT 42").fetchall() == [(42,)]
    first.close()
    second.close()


def test_a_failed_early_start_leaves_connect_to_try_again(
    fresh_engine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = engine.engine
    calls: list[int] = []

    def flaky() -> object:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("no memory for the catalog")  # the thread's attempt
        return real()

    monkeypatch.setattr(engine, "engine", flaky)
    engine.start()
    con = engine.connect()
    assert len(calls) == 2 and engine._ready == []
    assert con.execute("SELECT 1").fetchall() == [(1,)]
    con.close()


def test_the_gate_scans_on_the_early_connection(
    tmp_path: Path, fresh_engine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAPEVAL_NATIVE", "0")  # the DuckDB reader (JSONL is the native one's)
    rows = [result_row("a", r) for r in range(3)]
    base, cand = tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    write_jsonl(base, rows)
    write_jsonl(cand, rows)
    engine.start()
    assert engine._started is not None
    engine._started.join()
    assert len(engine._ready) == 1
    (bcells, ccells), _warnings = fastload.load_sides([[base], [cand]])
    assert engine._ready == []  # taken by the scan
    assert bcells.keys() == ccells.keys() and next(iter(bcells.values())).passCount == 3


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
    # A usage error ends the process while DuckDB may still be starting: the
    # exit code must still be the usage error's, not a crash at shutdown.
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


@pytest.mark.parametrize("module", ["capeval.cli", "capeval.commands"])
def test_ctrl_c_while_capeval_starts_exits_130_without_a_traceback(module: str) -> None:
    # SIGINT landing while click and the commands import (the first ~0.1 s;
    # capeval.commands is imported by the CLI's entry, before click runs) is
    # made deterministic by an import that raises as SIGINT would.
    out = run_python(
        _interrupted_import(module)
        + textwrap.dedent("""
        import sys
        from capeval.launch import entry
        sys.argv = ["capeval", "gate"]
        entry()
        """)
    )
    assert out.returncode == 130, out.stderr
    assert "capeval: interrupted by SIGINT" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("module", ["capeval.commands", "capeval.commands.validate"])
def test_ctrl_c_never_waits_on_a_stuck_background_start(module: str) -> None:
    """A Ctrl-C inside an import can leave an import lock held, and a background
    start importing the same module then never ends: exiting must not join it.

    Made deterministic: a start that never ends, registered as `engine.start`
    registers its own, and an import that raises as SIGINT would, before click
    runs (capeval.commands) or inside it (the command's own module).
    """
    out = subprocess.run(
        [sys.executable, "-c", _interrupted_import(module) + textwrap.dedent(
            """
            import atexit, sys, threading
            from capeval.analysis import engine
            stuck = threading.Thread(target=threading.Event().wait, daemon=True)
            stuck.start()
            engine._started = stuck
            atexit.register(stuck.join)
            from capeval.launch import entry
            sys.argv = ["capeval", "validate"]
            entry()
            """
        )],
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert out.returncode == 130, out.stderr
    assert "interrupted by SIGINT" in out.stderr and "Traceback" not in out.stderr
