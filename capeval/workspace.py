"""The workspace: where it is, and loading every case in it (docs/configuration.md#the-workspace, docs/cases.md#case-json).

This is the I/O shell around `capeval.core.case`: it finds the root, reads each
case.json, gathers the filesystem facts the pure rules need and collects
every problem in every case before giving up, so one `capeval validate`
shows a broken workspace in full.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from capeval.core.case import (
    DEFAULT_TIERS,
    DEFAULT_VERIFY,
    PAGES_PATTERN,
    PLAIN_FILE_PATTERN,
    Bait,
    Case,
    CaseFacts,
    FixtureState,
    GraderState,
    PagesState,
    case_from_dict,
    field_path,
    in_field_order,
    unpassable_text,
    validate_case_dict,
)
from capeval.core.problems import Problem, ProblemsError, bom_message

if TYPE_CHECKING:
    from capeval.config import Config

CASES_SUBDIR = Path("evals", "capability", "cases")
CASE_FILE = "case.json"


def cases_dir(root: Path) -> Path:
    return root / CASES_SUBDIR


def is_workspace(path: Path) -> bool:
    return cases_dir(path).is_dir()


def find_root(start: Path | None = None, explicit: Path | None = None) -> Path:
    """The workspace root: `explicit` (it must hold evals/capability/cases), else
    the nearest ancestor of `start` (default: the current directory) that does.

    Raises ProblemsError with a message saying how to fix it.
    """
    if explicit is not None:
        root = explicit.expanduser().resolve()
        if not root.is_dir():
            raise ProblemsError(
                [Problem(str(explicit), "--root", "is not a directory; pass the workspace root")]
            )
        if not is_workspace(root):
            raise ProblemsError(
                [
                    Problem(
                        str(explicit),
                        "--root",
                        f"holds no {CASES_SUBDIR.as_posix()}/; pass the directory that does "
                        f"(the workspace root), or create {CASES_SUBDIR.as_posix()}/ there",
                    )
                ]
            )
        return root
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if is_workspace(candidate):
            return candidate
    raise ProblemsError(
        [
            Problem(
                str(start) if start is not None else ".",
                "",
                f"no {CASES_SUBDIR.as_posix()}/ here or in any parent directory; "
                "run capeval inside a workspace or pass --root DIR",
            )
        ]
    )


def rel(path: Path, root: Path) -> str:
    """How messages name a path: relative to the root when it is inside it."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


@dataclass
class CaseCheck:
    """The outcome of checking a workspace's cases: what loaded, what is wrong."""

    cases: list[Case] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # Worth knowing, never wrong: a case without an oracle that nothing plays.
    notes: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "cases": [c.id for c in self.cases],
            "problems": [p.to_json() for p in self.problems],
            "notes": [p.to_json() for p in self.notes],
        }


def check_cases(
    root: Path,
    config: Config | None = None,
    ids: Sequence[str] | None = None,
    *,
    check_tiers: bool = True,
    tiers: Sequence[str] | None = None,
) -> CaseCheck:
    """Load every case (or those in `ids`) and collect every problem; never raises
    for bad cases. Cases come back sorted by id; only valid ones are included.

    `check_tiers=False` accepts any tier name: for when the configuration that
    defines the tiers could not be read. `tiers` overrides the configuration's.
    """
    if tiers is None:
        tiers = tuple(config.tiers) if config is not None else DEFAULT_TIERS
    if not check_tiers:
        tiers = ()
    base = cases_dir(root)
    out = CaseCheck()
    if not base.is_dir():
        out.problems.append(
            Problem(rel(base, root), "", "missing; a workspace keeps its cases in this directory")
        )
        return out
    dirs = case_dirs(base)
    if ids:
        wanted = list(dict.fromkeys(ids))
        present = {p.name for p in dirs}
        for case_id in wanted:
            if case_id not in present:
                known = ", ".join(sorted(present)) or "none"
                out.problems.append(
                    Problem(
                        rel(base, root),
                        "--case",
                        f'no case "{case_id}" (no directory {rel(base / case_id, root)}/); '
                        f"known cases: {known}",
                    )
                )
        dirs = [p for p in dirs if p.name in wanted]

    out.problems += skipped_case_problems(base, root)
    seen: dict[str, str] = {}
    for case_dir in dirs:
        file = case_dir / CASE_FILE
        file_rel = rel(file, root)
        escaping = next(
            (p for p in (case_dir, file) if p.is_symlink() and not _inside(p, root)), None
        )
        if escaping is not None:
            # Cases are the workspace's own: a link out of it would let a
            # file nobody reviewed in this repository decide what passes.
            out.problems.append(
                Problem(
                    rel(escaping, root),
                    "",
                    "is a symlink that resolves outside the workspace root; keep the case's "
                    "files in the workspace (copy them in)",
                )
            )
            continue
        read = read_case_json(file, file_rel)
        if not read.parsed:
            out.problems += read.problems
            continue
        obj = read.obj
        facts = gather_facts(root, case_dir, obj)
        # A duplicate key or a refused number is reported with, not instead
        # of, every other problem in the case: one validate run shows them all.
        problems = in_field_order(
            [
                *read.problems,
                *validate_case_dict(
                    obj,
                    file=file_rel,
                    dirname=case_dir.name,
                    root_facts=facts,
                    tiers=tiers,
                    refused=read.refused,
                ),
            ]
        )
        declared_id = obj.get("id") if isinstance(obj, dict) else None
        if isinstance(declared_id, str):
            if declared_id in seen:
                problems.append(
                    Problem(
                        file_rel,
                        "id",
                        f'duplicate id "{declared_id}", also used by {seen[declared_id]}; ids must be unique',
                    )
                )
            else:
                seen[declared_id] = file_rel
        if problems:
            out.problems += problems
            continue
        out.cases.append(case_from_dict(obj, dir=case_dir, file=file))
    out.cases.sort(key=lambda c: c.id)
    return out


def _inside(path: Path, root: Path) -> bool:
    """Whether `path`, links resolved, stays inside the workspace root."""
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a link loop
        return False


def skipped_case_problems(base: Path, root: Path) -> list[Problem]:
    """Folders that hold a case.json but are skipped for their name (`..x`).

    `.x` and `_x` folders are how a case is set aside, but `..` at the start
    reads like a path out of the folder and is no id any case could have:
    skipping it without a word hid a case the author believed would run.
    """
    return [
        Problem(
            rel(p, root),
            "",
            "holds a case.json but is skipped (a name starting with '..' is never a case); "
            "rename it to the case's id, or to '_name' to set it aside",
        )
        for p in sorted(base.iterdir())
        if p.name.startswith("..") and p.is_dir() and (p / CASE_FILE).exists()
    ]


def case_dirs(base: Path) -> list[Path]:
    """Every case directory under `base`, by name; `.x` and `_x` are not cases."""
    return sorted(
        (p for p in base.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))),
        key=lambda p: p.name,
    )


def load_cases(
    root: Path, config: Config | None = None, ids: Sequence[str] | None = None
) -> list[Case]:
    """Every case (or those in `ids`), sorted by id.

    Raises ProblemsError listing every problem in every case, so nothing runs
    against a partly valid workspace.
    """
    result = check_cases(root, config, ids)
    if result.problems:
        raise ProblemsError(result.problems)
    return result.cases


def read_baits(root: Path) -> tuple[dict[str, Bait], list[Problem]]:
    """Every case's `bait` declaration, without validating the rest of each case.

    The gate needs only these. Validating whole cases (JSON Schema, fixtures
    on disk) is `capeval validate`'s and `capeval run`'s work, and importing the
    schema machinery alone would add a tenth of a second to every gate. It
    also means one case broken mid-edit does not drop every other case's bait.
    A case whose `id` or `bait` is unusable is left out with a problem.
    """
    from capeval.core.metrics import METRIC_NAMES

    base = cases_dir(root)
    baits: dict[str, Bait] = {}
    problems: list[Problem] = []
    if not base.is_dir():
        return baits, [Problem(rel(base, root), "", "missing; no cases, so no bait declarations")]
    for case_dir in case_dirs(base):
        file = case_dir / CASE_FILE
        file_rel = rel(file, root)
        read = read_case_json(file, file_rel)
        if read.problems:
            # Even a duplicate key: which of two baits is meant is not for the gate to guess.
            problems += read.problems
            continue
        obj = read.obj
        if not isinstance(obj, dict) or obj.get("bait") is None:
            continue
        if obj.get("id") != case_dir.name:
            problems.append(
                Problem(file_rel, "id", f'must be "{case_dir.name}", the directory\'s name')
            )
            continue
        bait = obj["bait"]
        metric = bait.get("metric") if isinstance(bait, dict) else None
        threshold = bait.get("threshold") if isinstance(bait, dict) else None
        if metric not in METRIC_NAMES:
            problems.append(
                Problem(file_rel, "bait.metric", f"use one of {', '.join(METRIC_NAMES)}")
            )
        elif (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or not threshold >= 0
        ):
            problems.append(Problem(file_rel, "bait.threshold", "must be a number >= 0"))
        else:
            baits[case_dir.name] = Bait(metric, threshold)
    return baits, problems


class CaseJson(NamedTuple):
    """One case.json as read: the document and what strict JSON refuses in it."""

    obj: Any
    """The parsed document (None when not `parsed`)."""
    problems: list[Problem]
    parsed: bool
    """False when there is no document to check (missing, unreadable, bad syntax)."""
    refused: frozenset[str] = frozenset()
    """Fields (as `field_path` writes them) holding a refused number."""


def read_case_json(file: Path, file_rel: str) -> CaseJson:
    """Parse one case.json strictly: NaN, Infinity, numbers too large for a double
    and duplicate keys are problems.

    They are noted, not raised: the document still parses (the last of two
    duplicate keys wins, as in every JSON reader) so the caller can check it
    and report them along with every other problem in the case. Only a file
    that cannot be read or parsed at all comes back with `parsed` False.
    """
    if file.is_dir():
        return _unparsed(
            file_rel,
            f"is a directory; every directory under {CASES_SUBDIR.as_posix()}/ is a case and "
            f"needs a {CASE_FILE} file (replace the directory with one, or move the case out)",
        )
    if file.exists() and not file.is_file():
        # A FIFO would hang the read; a device would read forever.
        return _unparsed(
            file_rel, "is not a regular file (a FIFO, socket or device); replace it with a file"
        )
    if not file.is_file():
        return _unparsed(
            file_rel,
            f"missing; every directory under {CASES_SUBDIR.as_posix()}/ is a case and needs a "
            f"{CASE_FILE} (add one, or move the directory out)",
        )
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return _unparsed(file_rel, f"is not UTF-8 text ({exc.reason}); save it as UTF-8")
    except OSError as exc:
        return _unparsed(file_rel, f"cannot be read: {exc.strerror}")
    if text.startswith("\ufeff"):
        return _unparsed(file_rel, bom_message("JSON"))
    strict = _StrictJson()
    try:
        obj = json.loads(
            text,
            object_pairs_hook=strict.parse_object,
            parse_constant=strict.parse_constant,
            parse_float=strict.parse_float,
            parse_int=strict.parse_int,
        )
    except json.JSONDecodeError as exc:
        return _unparsed(
            file_rel,
            f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}; fix the syntax",
        )
    except RecursionError:
        return _unparsed(
            file_rel, "is nested too deeply to read; a case.json needs only a few levels"
        )
    notes = strict.notes(obj)
    return CaseJson(
        obj,
        [Problem(file_rel, field_path(path), message) for path, message, _ in notes],
        True,
        frozenset(field_path(path) for path, _, number in notes if number and path),
    )


def _unparsed(file_rel: str, message: str) -> CaseJson:
    return CaseJson(None, [Problem(file_rel, "", message)], False)


_DUPLICATE_KEY = (
    "appears twice in one object; keep one (JSON readers silently use the last, "
    "so the last is the one checked here)"
)

# Where in the document, what is wrong, and whether it is a refused number.
_Note = tuple[list[str | int], str, bool]


class _Refused(float):
    """A number strict JSON refuses, kept in the document in its place (as the
    nearest float) so the rest of the case can still be checked."""

    message: str

    def __new__(cls, value: float, message: str) -> _Refused:
        self = super().__new__(cls, value)
        self.message = message
        return self


class _StrictJson:
    """The hooks for one `json.loads`, noting what strict JSON refuses.

    The object hook runs innermost first and knows no path, so each object
    keeps its notes (paths relative to itself) until the object holding it is
    built and prefixes its key; `notes` does the same for the whole document.
    """

    def __init__(self) -> None:
        # id -> (the object, kept alive so the id is not reused; its notes)
        self._pending: dict[int, tuple[dict[str, Any], list[_Note]]] = {}

    def parse_object(self, pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        notes: list[_Note] = []
        for key, value in pairs:
            if key in out:
                notes.append(([key], _DUPLICATE_KEY, False))
            notes += [
                ([key, *path], message, number) for path, message, number in self._adopt(value)
            ]
            out[key] = value
        if notes:
            self._pending[id(out)] = (out, notes)
        return out

    def notes(self, document: Any) -> list[_Note]:
        return self._adopt(document)

    def _adopt(self, value: Any) -> list[_Note]:
        if isinstance(value, _Refused):
            return [([], value.message, True)]
        if isinstance(value, dict):
            entry = self._pending.pop(id(value), None)
            return entry[1] if entry is not None and entry[0] is value else []
        if isinstance(value, list):
            return [
                ([i, *path], message, number)
                for i, item in enumerate(value)
                for path, message, number in self._adopt(item)
            ]
        return []

    @staticmethod
    def parse_constant(name: str) -> float:
        return _Refused(float(name), f"contains {name}, which is not JSON; write a number")

    @staticmethod
    def parse_float(text: str) -> float:
        """A float literal too large for a double (1e400) reads as infinity, which no
        row can store: refuse it here, before the run, not when the first row is written."""
        value = float(text)
        if math.isfinite(value):
            return value
        return _Refused(value, f"contains {text}, too large for a number; write a smaller one")

    @staticmethod
    def parse_int(text: str) -> int | float:
        try:
            return int(text)
        except ValueError:  # over Python's limit on digits in a str -> int conversion
            return _Refused(
                math.inf,
                f"contains a {len(text)}-digit integer, too large for a number; write a smaller one",
            )


def gather_facts(root: Path, case_dir: Path, obj: Any) -> CaseFacts:
    """The filesystem facts `validate_case_dict` needs, for the paths `obj` names."""
    if not isinstance(obj, dict):
        return CaseFacts()
    fixture_state: FixtureState | None = None
    link_problem: str | None = None
    fixture = obj.get("fixture")
    # A path no system call can take (a NUL, a lone surrogate) is reported by
    # the case rules; looking it up ended `capeval validate` in a traceback.
    if (
        isinstance(fixture, str)
        and fixture
        and not unpassable_text(fixture)
        and not Path(fixture).is_absolute()
    ):
        fixture_state = fixture_fact(root, fixture)
        if fixture_state == "ok":
            link_problem = fixture_entry_problem(root / fixture)
    grader_state: GraderState | None = None
    verify = obj.get("verify", DEFAULT_VERIFY)
    if (
        isinstance(verify, str)
        and re.fullmatch(PLAIN_FILE_PATTERN, verify)
        and not unpassable_text(verify)
    ):
        grader = case_dir / verify
        grader_state = (
            "escapes"
            if grader.is_symlink() and not _inside(grader, root)
            else "ok"
            if grader.is_file()
            else "not_file"
            if grader.exists()
            else "missing"
        )
    crlf = grader_state == "ok" and _has_crlf(case_dir / str(verify))
    pages = obj.get("httpFixture")
    pages_state = (
        pages_fact(case_dir, pages)
        if isinstance(pages, str) and re.fullmatch(PAGES_PATTERN, pages)
        else None
    )
    return CaseFacts(
        fixture=fixture_state,
        grader=grader_state,
        fixture_link=link_problem,
        grader_crlf=crlf,
        pages=pages_state,
    )


def pages_fact(case_dir: Path, pages: str) -> PagesState:
    """What the folder a string `httpFixture` names is: inside the case, with files?"""
    folder = case_dir / pages
    if not folder.exists():
        return "missing"
    if not folder.is_dir():
        return "not_dir"
    if not _inside(folder, case_dir):
        return "escapes"
    for path in folder.rglob("*"):
        if path.is_file():
            return "ok" if all(_inside(f, case_dir) for f in folder.rglob("*")) else "escapes"
    return "empty"


def _has_crlf(path: Path) -> bool:
    """Whether a grader has a CRLF line ending (one an unreadable file cannot be said to have)."""
    try:
        return b"\r\n" in path.read_bytes()
    except OSError:
        return False


def fixture_entry_problem(fixture: Path) -> str | None:
    """The first entry in `fixture` a workdir copy cannot keep, with the fix:
    a symlink to outside it, or a special file (FIFO, socket, device).

    Checked by `capeval validate` as well as when a repeat's workdir is made,
    so a bad entry is reported before any agent starts, not as a failed row
    in every repeat (which the gate would read as a regression). A special
    file cannot be copied at all: every repeat failed with "workdir not
    prepared" while validate said ok.
    """
    fixture = fixture.resolve()
    for dirpath, dirnames, filenames in os.walk(fixture):
        for name in sorted(dirnames + filenames):
            entry = Path(dirpath) / name
            rel = entry.relative_to(fixture)
            if not entry.is_symlink():
                # `.git` folders are left out of the copy, so what they hold is never copied.
                kind = None if ".git" in rel.parts else _special_kind(entry)
                if kind is not None:
                    return (
                        f"{rel}: is {kind}; a workdir copy can hold only files, "
                        "folders and symlinks: remove it from the fixture (if the task needs "
                        "it, have the task or the grader create it)"
                    )
                continue
            target = os.readlink(entry)
            if os.path.isabs(target):
                return (
                    f"{rel}: symlink target {target!r} is absolute; in the copy it would "
                    "point back at the original; make it relative to the fixture"
                )
            if not Path(os.path.realpath(entry)).is_relative_to(fixture):
                return (
                    f"{rel}: symlink target {target!r} points outside the fixture; "
                    "copy the file into the fixture instead"
                )
    return None


_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _special_kind(path: Path) -> str | None:
    """What special file `path` is, or None for a file or folder (or one gone meanwhile)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    return next((kind for test, kind in _SPECIAL_KINDS if test(mode)), None)


def fixture_fact(root: Path, fixture: str) -> FixtureState:
    """Where a relative fixture path really lands, symlinks resolved."""
    real_root = root.resolve()
    try:
        target = (real_root / fixture).resolve()
    except (OSError, RuntimeError):
        # A symlink loop (Python 3.11 raises RuntimeError) ended `capeval
        # validate` and `capeval run` in a traceback; it names no directory.
        return "missing"
    if not target.is_relative_to(real_root):
        return "escapes"
    if target == real_root:
        return "is_root"
    if not target.exists():
        return "missing"
    if not target.is_dir():
        return "not_dir"
    return "ok"
