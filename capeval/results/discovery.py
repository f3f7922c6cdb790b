"""Which files under a folder or a pattern are result files.

`capeval history`, `load_frame` and the notebooks search a results folder the
same way: recursively, leaving out tooling folders, the per-repeat evidence
the runner keeps beside a stream (`<stem>.artifacts/`) and its plans
(`<stream>.plan.json`), which are no results however they are named.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from capeval.results.errors import ResultFileError, warn_passed_over
from capeval.results.formats import PLAN, RESULT_SUFFIXES, result_format
from capeval.results.inputs import is_regular

# Files the runner writes beside a row stream that are not results.
SIDECAR_SUFFIXES = PLAN.suffixes
SKIP_DIRS = frozenset({".git", ".ipynb_checkpoints", "__pycache__", ".venv"})
# Per-repeat evidence the runner keeps beside a stream (agent streams, run summaries).
SKIP_DIR_SUFFIXES = (".artifacts",)


def passed_over_dir(name: str) -> bool:
    """A folder a results search does not enter: tooling, or a run's evidence."""
    return name in SKIP_DIRS or name.endswith(SKIP_DIR_SUFFIXES)


def discover(paths: str | Path | Iterable[str | Path]) -> list[Path]:
    """Result-file candidates under `paths` (files as given, folders recursively), sorted.

    One path may be given bare, as `load_frame` and `gate_files` take it: a
    str iterated was one "file" per character.
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    found: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if is_regular(path):
            found.add(path.resolve())
        elif path.is_dir():
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames[:] = [d for d in dirnames if not passed_over_dir(d)]
                for name in filenames:
                    file = Path(dirpath) / name
                    # A FIFO or device in a results folder is no result file,
                    # and opening one could block or never end.
                    if (
                        name.endswith(RESULT_SUFFIXES)
                        and not name.endswith(SIDECAR_SUFFIXES)
                        and is_regular(file)
                    ):
                        found.add(file.resolve())
        elif path.exists():
            # History reads its files in place, and again on the next ingest.
            raise ResultFileError(
                path, "is not a regular file; history reads result files in place"
            )
        else:
            raise ResultFileError(path, "no such file or folder")
    return sorted(found)


def expand_paths(
    paths: str | Path | Iterable[str | Path], *, on_warning: Callable[[str], None] | None = None
) -> list[str | Path]:
    """Result files named by `paths`: files as given, folders and glob patterns expanded.

    A folder is searched as `discover` searches one, and a file in it that is
    no result file (a report, a plan) is skipped with a warning. A pattern
    (`results/*.jsonl`, `results/**/*.json`) is expanded only when no file
    has that very name, and its matches are searched as a folder's files
    are; one that matches no result file is an error.
    """
    given = [paths] if isinstance(paths, str | Path) else list(paths)
    out: list[str | Path] = []
    for path in given:
        text = str(path)
        if os.path.isdir(text):
            root = Path(text)
            for found in discover([root]):
                if result_format(found) is None:
                    (on_warning or _default_warn)(f"skipped {found}: not a result file")
                    continue
                try:
                    out.append(root / found.relative_to(root.resolve()))
                except ValueError:  # reached through a link out of the folder
                    out.append(found)
        elif not os.path.lexists(text) and glob.has_magic(text):
            matches = sorted(glob.glob(text, recursive=True))
            if not matches:
                raise ResultFileError(path, "no file matches this pattern")
            found_any = False
            # `results/**` matches the folder, its subfolders and their files:
            # what a matched folder's search reaches is that pattern's own
            # overlap, not a file named twice (`distinct_files` warns about those).
            folders = {
                os.path.realpath(m)
                for m in matches
                if os.path.isdir(m) and not _left_out_of_search(m, text)
            }
            reached: set[str] = set()
            for match in matches:
                if _left_out_of_search(match, text) or _inside(match, folders):
                    continue
                if not os.path.isdir(match) and result_format(match) is None:
                    (on_warning or _default_warn)(f"skipped {match}: not a result file")
                    continue
                found_any = True
                for file in expand_paths([match], on_warning=on_warning):
                    if (real := os.path.realpath(file)) not in reached:
                        reached.add(real)
                        out.append(file)
            if not found_any:
                raise ResultFileError(path, "no result file matches this pattern")
        else:
            out.append(path)
    return out


def _inside(match: str, folders: set[str]) -> bool:
    """Whether `match` lies within one of `folders` (real paths), below its top."""
    return any(str(parent) in folders for parent in Path(os.path.realpath(match)).parents)


def _left_out_of_search(match: str, pattern: str) -> bool:
    """Whether a folder search passes this match by: what the runner writes beside rows.

    `results/*.json` matches every run's `<stream>.plan.json`, and
    `results/**/*.json` every repeat's evidence under `<stem>.artifacts/`;
    neither is a result file, and both made loading a results folder by
    pattern fail. Folders the pattern names literally are the user's choice.
    """
    fixed = 0
    for part in Path(pattern).parts:
        if glob.has_magic(part):
            break
        fixed += 1
    parts = Path(match).parts
    if parts[-1].endswith(SIDECAR_SUFFIXES):
        return True
    return any(passed_over_dir(p) for p in parts[fixed:])


def _default_warn(message: str) -> None:
    warn_passed_over(message, stacklevel=3)
