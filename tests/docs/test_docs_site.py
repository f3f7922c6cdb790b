"""The documentation site builds strictly, documents every command and option,
and the README stays a short entry point that links into it."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from capeval.cli import main

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"
README_MAX_LINES = 200

_HEADING = re.compile(r'<h[1-6] id="([^"]+)"')
_TAG = re.compile(r"<[^>]+>")
# [text](target), not images; the target ends at white space or ")".
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


@dataclass(frozen=True)
class Build:
    returncode: int
    log: str
    site: Path


@pytest.fixture(scope="module")
def site_build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    """One strict build of the site into a temporary folder, shared by the tests below."""
    pytest.importorskip(
        "mkdocs", reason="mkdocs is not installed: install the dev extra (pip install -e '.[dev]')"
    )
    site = tmp_path_factory.mktemp("site")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(REPO / "mkdocs.yml"),
            "--site-dir",
            str(site),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        # Material prints a banner about MkDocs 2.0 on every build; it is no warning.
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    return Build(out.returncode, out.stdout + out.stderr, site)


@pytest.mark.slow
def test_site_builds_strictly(site_build: Build) -> None:
    # Strict with anchor validation: a broken link, a link to a missing heading
    # or a page left out of the nav fails the build.
    assert site_build.returncode == 0, site_build.log
    assert (site_build.site / "index.html").is_file()


def _commands(
    command: click.Command, ctx: click.Context, words: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command under `command` (itself included) with the words that invoke it."""
    yield words, command
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, f"{' '.join(words)} lists {name!r} but cannot load it"
            if not sub.hidden:
                yield from _commands(
                    sub, click.Context(sub, info_name=name, parent=ctx), (*words, name)
                )


def _long_flags(command: click.Command) -> list[str]:
    flags: list[str] = []
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            flags += [f for f in (*param.opts, *param.secondary_opts) if f.startswith("--")]
    return flags


def _sections(page: str) -> dict[str, str]:
    """Heading id -> the text under that heading, up to the next heading."""
    parts = _HEADING.split(page)
    # parts: [before, id1, body1, id2, body2, ...]
    return {
        parts[i]: html.unescape(_TAG.sub("", parts[i + 1])) for i in range(1, len(parts) - 1, 2)
    }


COMMANDS = list(_commands(main, click.Context(main, info_name="capeval"), ("capeval",)))


def test_the_walk_finds_nested_commands() -> None:
    # Guards the walk itself: the lazily loaded subcommands and nested groups.
    paths = {" ".join(words) for words, _ in COMMANDS}
    assert {"capeval gate", "capeval agents check", "capeval paperclip live"} <= paths


@pytest.mark.slow
@pytest.mark.parametrize(
    ("words", "command"), COMMANDS, ids=[" ".join(words) for words, _ in COMMANDS]
)
def test_cli_reference_documents_command_and_options(
    site_build: Build, words: tuple[str, ...], command: click.Command
) -> None:
    assert site_build.returncode == 0, site_build.log
    sections = _sections((site_build.site / "cli" / "index.html").read_text(encoding="utf-8"))
    anchor = "-".join(words).lower()
    name = " ".join(words)
    assert anchor in sections, f"{name} has no section in the CLI reference (docs/cli.md)"
    text = sections[anchor]
    assert "Usage:" in text and name in text, f"{name}: no usage line in its section"
    missing = [
        flag
        for flag in _long_flags(command)
        if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text)
    ]
    assert not missing, f"{name}: options missing from the CLI reference: {', '.join(missing)}"


def _readme_lines() -> list[str]:
    return README.read_text(encoding="utf-8").splitlines()


def test_readme_is_short() -> None:
    lines = _readme_lines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move reference "
        "material into docs/"
    )


def test_readme_quick_start_is_make_run_and_make_test() -> None:
    text = "\n".join(_readme_lines())
    match = re.search(r"^## Quick start\s*$(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, "README.md has no '## Quick start' section"
    assert "make run" in match.group(1) and "make test" in match.group(1)


def test_readme_relative_links_resolve() -> None:
    targets = _LINK.findall(README.read_text(encoding="utf-8"))
    assert targets, "README.md links to nothing: it should point into docs/"
    broken = []
    for target in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL or an anchor of the README itself
        path = target.split("#", 1)[0]
        if not (REPO / path).exists():
            broken.append(target)
    assert not broken, f"README.md links to files that do not exist: {broken}"


DOC_PAGES = sorted(DOCS.rglob("*.md"))


def test_docs_pages_are_found() -> None:
    assert {"index.md", "cli.md", "result-formats.md"} <= {p.name for p in DOC_PAGES}


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_docs_stand_on_their_own(page: Path) -> None:
    # The docs state the contracts themselves: no citations of a specification
    # that is not in the repository, and no paths into the shared data folder.
    text = page.read_text(encoding="utf-8")
    assert "spec section" not in text.lower(), f"{page.name} cites a spec section"
    assert "../shared" not in text, f"{page.name} refers to ../shared"


# `capeval.x.y` or `capeval.x.y.name` in backticks: a module, or a name in one.
FILE_SUFFIXES = {"toml", "json", "jsonl", "py", "md", "sql"}
_DOTTED = re.compile(r"`(capeval(?:\.[A-Za-z_]\w*)+)")


def _resolves(dotted: str) -> bool:
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(target, name):
                return False
            target = getattr(target, name)
        return True
    return False


def test_every_python_name_the_docs_cite_exists() -> None:
    # Modules move; a page that names one must move with it.
    cited = {
        name
        for page in [README, *DOC_PAGES]
        for name in _DOTTED.findall(page.read_text(encoding="utf-8"))
        if name.rpartition(".")[2] not in FILE_SUFFIXES  # capeval.toml is a file
    }
    assert cited, "the docs name no Python API at all"
    missing = sorted(name for name in cited if not _resolves(name))
    assert missing == [], f"the docs name Python objects that do not exist: {missing}"


_CITED_PAGE = re.compile(r"docs/([\w-]+\.md)(?:#([\w-]+))?")


def _anchors(page: Path) -> set[str]:
    """Heading ids of a page: explicit `{ #id }` ones and the slugs of the others."""
    out: set[str] = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            continue
        explicit = re.search(r"\{\s*#([\w-]+)\s*\}", line)
        if explicit:
            out.add(explicit.group(1))
            continue
        title = line.lstrip("#").strip()
        slug = re.sub(r"[^\w\s-]", "", title.lower()).strip()
        out.add(re.sub(r"[\s]+", "-", slug))
    return out


def _code_files() -> list[Path]:
    files = [*(REPO / "capeval").rglob("*.py"), *(REPO / "analysis").rglob("*")]
    files += [REPO / "capeval.toml", REPO / "pyproject.toml", REPO / ".gitignore"]
    return [f for f in files if f.is_file() and "__pycache__" not in f.parts]


def test_code_cites_docs_pages_that_exist() -> None:
    # The code cites the docs for its contracts; a renamed page or heading
    # must not leave a citation pointing nowhere.
    broken = []
    for file in _code_files():
        for page, anchor in _CITED_PAGE.findall(file.read_text(encoding="utf-8")):
            target = DOCS / page
            if not target.is_file() or (anchor and anchor not in _anchors(target)):
                broken.append(f"{file.relative_to(REPO)}: docs/{page}#{anchor}")
    assert broken == []


def test_code_cites_no_specification_outside_the_repository() -> None:
    # The tests too: a newcomer reading a test must find the rule it pins in docs/.
    wording = re.compile(r"spec sections?\b|\bsections? \d+\b", re.I)
    tests = [f for f in (REPO / "tests").rglob("*.py") if f.name != Path(__file__).name]
    found = [
        f"{file.relative_to(REPO)}: {match.group(0)}"
        for file in [*_code_files(), *tests]
        for match in wording.finditer(file.read_text(encoding="utf-8"))
    ]
    assert found == []
