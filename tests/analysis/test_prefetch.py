"""The gate's scan begun by the launcher (`capeval.analysis.prefetch`).

A guess at what the command will read, made before click parses anything:
it must be taken only when it is exactly the scan asked for, of files that
did not change, and must never wait on a FIFO or outlive a command that
did not take it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from capeval.analysis import engine, fastload, prefetch
from capeval.analysis.native_reader import native_reader
from capeval.core.metrics import METRIC_NAMES
from tests.rowfactory import result_row


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    if native_reader() is None:
        if os.environ.get("CAPEVAL_REQUIRE_NATIVE") == "1":
            pytest.fail("the native reader was not built")
        pytest.skip("the native reader is not built here (no C++ compiler)")
    monkeypatch.setattr(prefetch, "_pending", None)
    monkeypatch.setattr(engine, "_started", None)
    monkeypatch.setattr(engine, "_ready", [])


def _files(tmp_path: Path, n: int = 3) -> tuple[Path, Path]:
    base, cand = tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    for path, passed in ((base, True), (cand, False)):
        rows = [{**result_row("a", r), "passed": passed} for r in range(n)]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return base, cand


def _ask(base: Path, cand: Path, **options: Any) -> list[dict[str, Any]] | None:
    return prefetch.take(
        prefetch.ScanRequest(
            [[str(base)], [str(cand)]],
            list(METRIC_NAMES),
            options.get("with_values", False),
            options.get("headline", False),
            options.get("threads", prefetch.threads()),
        )
    )


def _direct(base: Path, cand: Path) -> list[dict[str, Any]]:
    return native_reader().scan(  # type: ignore[union-attr]
        [[str(base)], [str(cand)]], METRIC_NAMES, "taskToolCallCount", threads=2
    )


@pytest.mark.parametrize(
    "argv, sides, with_values",
    [
        (["gate", "--baseline", "b.jsonl", "--candidate", "c.jsonl"], [["b.jsonl"], ["c.jsonl"]], False),
        (["gate", "--baseline=./b.jsonl", "--candidate=c.jsonl", "--candidate", "d.jsonl"],
         [["b.jsonl"], ["c.jsonl", "d.jsonl"]], False),
        (["gate", "--json", "--bait", "a=networkCommandCount:0", "--root", "r", "--seed", "3",
          "--allow-provider-fallback", "--baseline", "b.jsonl", "--candidate", "c.jsonl"],
         [["b.jsonl"], ["c.jsonl"]], False),
        (["gate", "--advisory", "--baseline", "b.jsonl", "--candidate", "c.jsonl"],
         [["b.jsonl"], ["c.jsonl"]], True),
        (["compare", "--baseline", "b.jsonl", "--candidate", "c.jsonl"], [["b.jsonl"], ["c.jsonl"]], True),
        (["compare", "--no-advisory", "--baseline", "b.jsonl", "--candidate", "c.jsonl"],
         [["b.jsonl"], ["c.jsonl"]], False),
    ],
)  # fmt: skip
def test_a_plain_command_line_tells_the_scan(
    argv: list[str], sides: list[list[str]], with_values: bool
) -> None:
    request = prefetch.request_of(argv)
    assert request is not None
    assert request[0] == sides and request[1] == list(METRIC_NAMES)
    assert request[2] is with_values and request[3] is False


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "--baseline", "b.jsonl", "--candidate", "c.jsonl"],
        ["gate", "--candidate", "c.jsonl"],  # the baseline is the configuration's
        ["gate", "--baseline", "b.jsonl", "--candidate", "c.jsonl", "--help"],
        ["gate", "--baseline", "b.jsonl", "--candidate", "c.jsonl", "--format", "md"],
        ["gate", "--baseline", "b.jsonl", "--candidate", "c.jsonl", "extra"],
        ["gate", "--baseline", "b.json", "--candidate", "c.jsonl"],  # v3 is DuckDB's
        ["gate", "--baseline", "b.jsonl", "--candidate"],
        [],
    ],
)
def test_anything_else_is_not_guessed_at(argv: list[str]) -> None:
    assert prefetch.request_of(argv) is None
    assert prefetch.start(argv) is False and prefetch._pending is None


def test_the_scan_asked_for_is_handed_over(tmp_path: Path) -> None:
    base, cand = _files(tmp_path)
    assert prefetch.start(["gate", "--baseline", str(base), "--candidate", str(cand)])
    records = _ask(base, cand)
    assert records == _direct(base, cand)
    assert prefetch._pending is None  # taken once
    assert _ask(base, cand) is None


def test_another_scan_is_not_handed_over_and_the_guess_is_stopped(tmp_path: Path) -> None:
    base, cand = _files(tmp_path)
    assert prefetch.start(["gate", "--baseline", str(base), "--candidate", str(cand)])
    scan = prefetch._pending
    assert scan is not None
    assert _ask(base, cand, with_values=True) is None
    assert not scan.thread.is_alive()
    assert prefetch.start(["gate", "--baseline", str(base), "--candidate", str(cand)])
    assert _ask(cand, base) is None  # the sides swapped


def test_a_file_changed_after_the_guess_is_read_again(tmp_path: Path) -> None:
    base, cand = _files(tmp_path)
    assert prefetch.start(["gate", "--baseline", str(base), "--candidate", str(cand)])
    prefetch._pending.thread.join()  # type: ignore[union-attr]
    with cand.open("a") as handle:
        handle.write(json.dumps({**result_row("a", 9), "passed": True}) + "\n")
    assert _ask(base, cand) is None
    # Rewritten to the same size after the guess read it: the reader reads it again.
    assert prefetch.start(["gate", "--baseline", str(base), "--candidate", str(cand)])
    prefetch._pending.thread.join()  # type: ignore[union-attr]
    text = cand.read_text()
    cand.write_text(text.replace('"passed": false', '"passed": true ', 1))
    later = cand.stat().st_mtime_ns + 10**9  # whatever the file system's clock resolution
    os.utime(cand, ns=(later, later))
    (_, cells), _ = fastload.load_sides([[base], [cand]], headline=False)
    assert cells["v::a"].repeats == 4 and cells["v::a"].passCount == 2


def test_a_fifo_is_never_opened(tmp_path: Path) -> None:
    base, _ = _files(tmp_path)
    fifo = tmp_path / "c.jsonl"
    fifo.unlink()
    os.mkfifo(fifo)
    assert prefetch.start(["gate", "--baseline", str(base), "--candidate", str(fifo)]) is False


def test_what_the_scan_refused_is_raised_where_the_scan_is_asked_for(tmp_path: Path) -> None:
    base, cand = _files(tmp_path)
    with cand.open("a") as handle:
        handle.write("{not json\n")
    assert prefetch.start(["gate", "--baseline", str(base), "--candidate", str(cand)])
    native = native_reader()
    with pytest.raises(native.Unavailable):  # type: ignore[union-attr]
        _ask(base, cand)
    # The DuckDB reader takes such files next: its engine was started meanwhile.
    assert engine._started is not None
    engine.connect().close()


def test_a_cancel_stops_a_scan_holding_an_earlier_token(tmp_path: Path) -> None:
    base, _ = _files(tmp_path)
    native = native_reader()
    token = native.token()  # type: ignore[union-attr]
    native.cancel()  # type: ignore[union-attr]
    with pytest.raises(native.Unavailable, match="cancelled"):  # type: ignore[union-attr]
        native.scan([[str(base)]], METRIC_NAMES, "taskToolCallCount", token=token)  # type: ignore[union-attr]
    assert native.scan([[str(base)]], METRIC_NAMES, "taskToolCallCount")  # type: ignore[union-attr]


@pytest.mark.slow
def test_the_gate_process_says_what_it_says_without_the_guess(tmp_path: Path) -> None:
    base, cand = _files(tmp_path, n=50)
    argv = [sys.executable, "-m", "capeval", "gate", "--json",
            "--baseline", str(base), "--candidate", str(cand)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "CAPEVAL_NATIVE"}
    guessed = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path
    )
    plain = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "CAPEVAL_NATIVE": "0"},
        cwd=tmp_path,
    )
    assert guessed.returncode == plain.returncode == 1, guessed.stderr
    assert json.loads(guessed.stdout) == json.loads(plain.stdout)


def test_ctrl_c_while_waiting_for_the_guess_stops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, cand = _files(tmp_path)
    assert prefetch.start(["gate", "--baseline", str(base), "--candidate", str(cand)])
    scan = prefetch._pending
    assert scan is not None
    scan.thread.join()
    native = native_reader()
    token = native.token()  # type: ignore[union-attr]

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(scan.thread, "join", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _ask(base, cand)
    assert native.token() != token  # type: ignore[union-attr]  # cancelled


def test_the_guess_and_the_reader_count_cores_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    assert prefetch.threads() == len(os.sched_getaffinity(0))
    monkeypatch.delattr(os, "sched_getaffinity")  # macOS has no affinity call
    assert prefetch.threads() == (os.cpu_count() or 1)
    assert prefetch.request_of(["gate", "--baseline", "b.jsonl", "--candidate", "c.jsonl"])


def test_a_cancelled_guess_does_not_warm_duckdb(tmp_path: Path) -> None:
    """Only a refusal means the DuckDB reader comes next; a cancel may come at exit."""
    import threading

    base, cand = _files(tmp_path)
    request = prefetch.request_of(["gate", "--baseline", str(base), "--candidate", str(cand)])
    native = native_reader()
    assert request is not None
    scan = prefetch._Scan(native, request, prefetch._identities(request.sides) or [])
    native.cancel()  # type: ignore[union-attr]
    thread = threading.Thread(target=scan._run)  # it blocks SIGINT in its thread
    thread.start()
    thread.join()
    assert isinstance(scan.error, native.Unavailable)  # type: ignore[union-attr]
    assert engine._started is None
