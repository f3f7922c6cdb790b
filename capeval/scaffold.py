"""New workspaces and cases from the templates the package ships (`capeval init`, `capeval new case`).

The templates live in `capeval/templates/`: `init/` (the configuration and
the .gitignore lines), `example/` (the working case `init` adds) and `case/`
(the case `new case` adds). A file named `*.tmpl` is written without that
suffix (a `.py` fixture file must not be a module of the package), and
`{{ID}}` and `{{TIER}}` are filled in. Nothing that exists is overwritten:
every file that would be is named in one error, before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from capeval.config import CONFIG_FILE
from capeval.core.case import ID_PATTERN, MAX_ID_LENGTH
from capeval.core.problems import Problem, ProblemsError
from capeval.workspace import CASES_SUBDIR, is_workspace

FIXTURES_SUBDIR = Path("evals", "capability", "fixtures")
EXAMPLE_CASE = "fix-greeting"
EXAMPLE_FIXTURE = "greeting"
GITIGNORE = ".gitignore"


@dataclass
class Scaffolded:
    """What was written: files created, and lines added to an existing .gitignore."""

    created: list[Path] = field(default_factory=list)
    gitignore_lines: int = 0
    gitignore_created: bool = False


def _templates(name: str) -> Traversable:
    return files("capeval").joinpath("templates", name)


def _walk(folder: Traversable, prefix: Path = Path()) -> Iterator[tuple[Path, Traversable]]:
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            yield from _walk(entry, prefix / entry.name)
        else:
            name = entry.name.removesuffix(".tmpl")
            yield prefix / name, entry


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text


def _plan_case(
    root: Path, template: str, case_id: str, fixture: str, values: dict[str, str]
) -> dict[Path, str]:
    """Every file of a case from `template`: the case folder's and its fixture's."""
    out: dict[Path, str] = {}
    for rel, entry in _walk(_templates(template)):
        text = _fill(entry.read_text(encoding="utf-8"), values)
        if rel.parts[0] == "fixture":
            out[root / FIXTURES_SUBDIR / fixture / Path(*rel.parts[1:])] = text
        else:
            out[root / CASES_SUBDIR / case_id / rel] = text
    return out


def _write(plan: dict[Path, str], root: Path) -> list[Path]:
    taken = [path for path in plan if path.exists() or path.is_symlink()]
    fix = "move it away, or pick another name"
    if taken:
        raise ProblemsError(
            [
                Problem(_shown(path, root), "", f"exists; nothing was written ({fix})")
                for path in taken
            ]
        )
    for path, text in plan.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(plan)


def _shown(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def case_id_problem(case_id: str) -> str | None:
    """Why `case_id` cannot name a case, with the fix; None when it can."""
    if not re.fullmatch(ID_PATTERN, case_id):
        fixed = re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", case_id.lower())).strip("-")
        return f"case id {case_id!r} may hold only lower-case letters, digits and '-'" + (
            f", e.g. {fixed!r}" if fixed else ""
        )
    if len(case_id) > MAX_ID_LENGTH:
        return f"case id {case_id!r} is longer than {MAX_ID_LENGTH} characters; shorten it"
    return None


def init_workspace(target: Path) -> Scaffolded:
    """A working workspace in `target` (created when missing): capeval.toml with
    commented agent entries, the example case with its fixture, grader and
    shell oracle, and .gitignore lines for the results.

    Raises ProblemsError when `target` is already a workspace or a file would
    be overwritten.
    """
    target.mkdir(parents=True, exist_ok=True)
    if (target / CONFIG_FILE).exists() or is_workspace(target):
        raise ProblemsError(
            [
                Problem(
                    str(target),
                    "",
                    f"is already a capeval workspace ({CONFIG_FILE} or "
                    f"{CASES_SUBDIR.as_posix()}/ exists); add a case with "
                    "`capeval new case ID` instead",
                )
            ]
        )
    plan = {target / CONFIG_FILE: _templates("init").joinpath("capeval.toml").read_text("utf-8")}
    plan |= _plan_case(target, "example", EXAMPLE_CASE, EXAMPLE_FIXTURE, {})
    done = Scaffolded(created=_write(plan, target))
    lines = _templates("init").joinpath("gitignore").read_text("utf-8").splitlines()
    done.gitignore_created, done.gitignore_lines = _add_gitignore(target / GITIGNORE, lines)
    if done.gitignore_created:
        done.created.append(target / GITIGNORE)
    return done


def _add_gitignore(path: Path, lines: list[str]) -> tuple[bool, int]:
    """Append the rules `path` lacks, under their comment; (created the file, rules added)."""
    created = not path.exists()
    current = "" if created else path.read_text(encoding="utf-8")
    existing = current.splitlines()
    missing = [line for line in lines if line and not line.startswith("#") and line not in existing]
    if not missing:
        return False, 0
    comment = [line for line in lines if line.startswith("#")]
    text = "\n".join([*comment, *missing]) + "\n"
    if current:
        text = ("\n" if current.endswith("\n") else "\n\n") + text
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)
    return created, len(missing)


def new_case(root: Path, case_id: str, *, tier: str = "simple") -> list[Path]:
    """A new case `case_id` in the workspace at `root`, with its own fixture
    folder: a small task that passes `capeval validate --graders` as written,
    for its author to replace. Raises ProblemsError on a bad id or a file
    that exists."""
    problem = case_id_problem(case_id)
    if problem:
        raise ProblemsError([Problem(case_id, "ID", problem)])
    plan = _plan_case(root, "case", case_id, case_id, {"ID": case_id, "TIER": tier})
    return _write(plan, root)
