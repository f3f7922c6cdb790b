"""What capeval reads as an input file, and what it refuses before opening.

Device nodes here are made by the tests in their own temp folders (mknod, as
root), never the machine's own.
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path

import pytest

from capeval.results.errors import ResultFileError
from capeval.results.inputs import InputRefused, open_input, read_input
from capeval.results.load import read_rows
from tests.rowfactory import result_row


@pytest.fixture
def zero_device(tmp_path: Path) -> Path:
    """A character device that never ends, as /dev/zero."""
    node = tmp_path / "zero.jsonl"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("creating a device node needs root (CAP_MKNOD)")
    return node


def test_a_device_is_refused_before_a_byte_is_read(zero_device: Path) -> None:
    # /dev/zero as a result file read until memory ran out (6.8 GB).
    with pytest.raises(InputRefused, match="is a device, not a file"):
        read_input(zero_device)
    with pytest.raises(ResultFileError, match=r"zero\.jsonl: is a device, not a file"):
        read_rows(zero_device)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputRefused, match="is a directory"):
        open_input(tmp_path)


def test_a_fifo_nobody_writes_into_is_refused_after_the_wait(tmp_path: Path) -> None:
    fifo = tmp_path / "rows.jsonl"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(InputRefused, match=r"is a pipe nothing wrote into for 0\.3 s"):
        read_input(fifo, wait_s=0.3)
    assert time.monotonic() - started < 5


def test_a_pipe_with_a_writer_is_read_once_whole(tmp_path: Path) -> None:
    # `--candidate <(zcat run.jsonl.gz)` hands capeval a pipe.
    fifo = tmp_path / "rows.jsonl"
    os.mkfifo(fifo)
    text = "".join(json.dumps(result_row("alpha", repeat)) + "\n" for repeat in range(3))

    def write() -> None:
        with open(fifo, "wb") as handle:
            time.sleep(0.2)  # the reader waits for the first byte
            handle.write(text.encode())

    writer = threading.Thread(target=write)
    writer.start()
    rows = read_rows(fifo)
    writer.join()
    assert [r["repeat"] for r in rows] == [0, 1, 2]
