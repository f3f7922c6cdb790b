"""Which files the viewer may hand out: only those under the results folders it was given.

A raw artifact's address is `files/<root>/<path inside the root>`. A request
is refused unless every part of the path is a plain name (no `..`, `.`,
empty part, backslash or NUL, nothing absolute) and the file it resolves to,
symlinks followed, still lies inside that root and is a regular file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote, unquote

FILES_PREFIX = "files"
# Kept as they are in an export; any other name gets `.txt` appended, so a
# copied file an agent wrote (`page.html`) opens from file:// as text.
SAFE_SUFFIXES = frozenset({".log", ".txt", ".json", ".jsonl"})


class Refused(Exception):
    """A request for a file the viewer does not serve; the message says why."""


def folders_of(paths: Iterable[str | Path]) -> list[Path]:
    """The results folders of the paths a user gave: a folder itself, a file's folder."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        folder = path if path.is_dir() else path.parent
        real = Path(os.path.realpath(folder))
        if real not in out:
            out.append(real)
    return out


class Roots:
    """The folders files may be served from, numbered in the order given."""

    def __init__(self, folders: Iterable[Path]) -> None:
        self.folders: list[Path] = []
        for folder in folders:
            real = Path(os.path.realpath(folder))
            if real not in self.folders:
                self.folders.append(real)

    def locate(self, path: str | Path) -> tuple[int, str] | None:
        """(root number, relative path) of a file inside a root, or None when outside all.

        The file's real path is used (symlinks followed): a link inside a
        root to a file outside it is outside.
        """
        real = Path(os.path.realpath(path))
        for index, folder in enumerate(self.folders):
            if real != folder and real.is_relative_to(folder):
                return index, real.relative_to(folder).as_posix()
        return None

    def url(self, path: str | Path, *, static: bool = False) -> str | None:
        """The page's link to a file (`files/<root>/<quoted path>`), None when outside the roots."""
        found = self.locate(path)
        if found is None:
            return None
        index, relative = found
        return f"{FILES_PREFIX}/{index}/{quote(export_name(relative) if static else relative)}"

    def resolve(self, request_path: str) -> Path:
        """The file a `files/...` request path (still percent-encoded) names; `Refused` otherwise."""
        parts = request_path.split("/")
        if len(parts) < 3 or parts[0] != FILES_PREFIX:
            raise Refused("not a files/<root>/<path> request")
        number = parts[1]
        if not number.isdigit() or int(number) >= len(self.folders):
            raise Refused(f"no results folder number {number!r}")
        folder = self.folders[int(number)]
        try:
            names = [unquote(p, errors="strict") for p in parts[2:]]
        except UnicodeDecodeError:
            raise Refused("the path is not UTF-8") from None
        for name in names:
            if name in ("", ".", "..") or "/" in name or "\\" in name or "\x00" in name:
                raise Refused("the path must be plain names inside the results folder")
        target = folder.joinpath(*names)
        real = Path(os.path.realpath(target))
        if not real.is_relative_to(folder) or real == folder:
            raise Refused("the path leads outside the results folder")
        if not real.is_file():
            raise FileNotFoundError(request_path)
        return real


def export_name(relative: str) -> str:
    """A file's name in an export: as it is when its suffix is one of `SAFE_SUFFIXES`, else + `.txt`."""
    return relative if Path(relative).suffix.lower() in SAFE_SUFFIXES else relative + ".txt"
