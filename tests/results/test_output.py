"""Every output a command writes goes through one helper that never replaces a device.

The devices used here are nodes these tests create themselves (a null device
made with mknod in a temp folder, a FIFO), never the machine's own.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from capeval.results.errors import ResultFileError
from capeval.results.jsonl import JsonlWriter
from capeval.results.output import (
    OutputRefused,
    move_output,
    output_file,
    write_output,
    write_output_with,
)


@pytest.fixture
def null_device(tmp_path: Path) -> Path:
    """A character device node of our own that discards writes, as /dev/null does."""
    node = tmp_path / "null"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs root (CAP_MKNOD)")
    return node


def test_a_new_file_is_written_readable_as_any_user_file(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "report.md"
    write_output(target, "hello\n")
    assert target.read_text() == "hello\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in target.parent.iterdir()] == ["report.md"]


def test_an_existing_file_is_replaced_whole(tmp_path: Path) -> None:
    target = tmp_path / "report.md"
    target.write_text("old")
    inode = target.stat().st_ino
    write_output(target, "new")
    assert target.read_text() == "new"
    assert target.stat().st_ino != inode  # renamed over, never truncated in place


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "report.md"
    target.write_text("old")
    with pytest.raises(RuntimeError), output_file(target) as handle:
        handle.write(b"half")
        raise RuntimeError("the renderer failed")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_a_character_device_is_written_in_place_never_replaced(null_device: Path) -> None:
    write_output(null_device, "discarded")
    assert stat.S_ISCHR(null_device.stat().st_mode)
    assert [p.name for p in null_device.parent.iterdir()] == ["null"]


def test_a_fifo_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_output(fifo, "through the pipe")
    reader.join(timeout=10)
    assert got == [b"through the pipe"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_directory_is_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(OutputRefused, match="is a directory; pass a path to a regular file"):
        write_output(tmp_path, "x")


def test_a_symlink_inside_its_folder_writes_its_target_and_stays_a_link(tmp_path: Path) -> None:
    target = tmp_path / "run-1.json"
    target.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to("run-1.json")
    write_output(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


def test_a_symlink_out_of_its_folder_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim"
    victim.write_text("keep me")
    results = tmp_path / "results"
    results.mkdir()
    link = results / "report.md"
    link.symlink_to(victim)
    with pytest.raises(OutputRefused, match="outside the folder the link is in"):
        write_output(link, "overwritten")
    assert victim.read_text() == "keep me" and link.is_symlink()


def test_a_writer_callback_fills_the_file(tmp_path: Path) -> None:
    target = tmp_path / "plot.bin"
    write_output_with(target, lambda handle: handle.write(b"\x00\x01"))
    assert target.read_bytes() == b"\x00\x01"


def test_move_output_renames_a_finished_file_over_the_target(tmp_path: Path) -> None:
    fresh = tmp_path / "baseline.json.new"
    fresh.write_text("fresh")
    target = tmp_path / "baseline.json"
    target.write_text("stale")
    move_output(fresh, target)
    assert target.read_text() == "fresh" and not fresh.exists()


def test_move_output_copies_into_a_device_and_removes_the_source(
    tmp_path: Path, null_device: Path
) -> None:
    fresh = tmp_path / "fresh"
    fresh.write_text("x")
    move_output(fresh, null_device)
    assert stat.S_ISCHR(null_device.stat().st_mode) and not fresh.exists()


def test_the_row_stream_refuses_a_device(null_device: Path) -> None:
    with pytest.raises(ResultFileError, match="the row stream must be one"):
        JsonlWriter(null_device)
