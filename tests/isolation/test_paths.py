"""Which masked paths a bwrap sandbox shows again, read-only, and which never."""

from __future__ import annotations

from pathlib import Path

from capeval.isolation.paths import exposure, exposures, install_tree, outermost

ROOT = Path("/home/me/proj")
MASKS = [Path("/home/me"), Path("/tmp")]
PROTECTED = [ROOT / "evals/capability/cases", ROOT / "evals/capability/results", Path("/tmp/run")]


def test_a_venv_in_the_workspace_is_shown_but_not_the_workspace() -> None:
    assert exposure(ROOT / ".venv/bin", MASKS, PROTECTED) == ROOT / ".venv"


def test_a_tool_in_the_home_is_shown_as_its_top_folder() -> None:
    assert exposure(Path("/home/me/.nvm/versions/node/bin"), MASKS, PROTECTED) == Path(
        "/home/me/.nvm"
    )


def test_nothing_inside_a_protected_path_is_ever_shown() -> None:
    assert exposure(ROOT / "evals/capability/cases/a/tools", MASKS, PROTECTED) is None
    assert exposure(Path("/tmp/run/capeval-x/work"), MASKS, PROTECTED) is None


def test_a_folder_holding_a_protected_path_is_never_shown_whole() -> None:
    # evals/ holds the cases: a tool in evals/bin is shown as evals/bin alone.
    assert exposure(ROOT / "evals/bin/tool", MASKS, PROTECTED) == ROOT / "evals/bin"


def test_an_unmasked_path_needs_no_exposure() -> None:
    assert exposure(Path("/usr/bin"), MASKS, PROTECTED) is None


def test_exposures_keep_the_outermost_only(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    found = exposures([tmp_path / "a" / "b", tmp_path / "a"], [tmp_path], [])
    assert found == [tmp_path / "a"]
    assert outermost([Path("/x/y"), Path("/x"), Path("/z")]) == [Path("/x"), Path("/z")]


def test_an_npm_binary_needs_its_whole_package_tree(tmp_path: Path) -> None:
    pkg = tmp_path / "claude-code-2" / "node_modules" / "@anthropic-ai" / "claude-code"
    pkg.mkdir(parents=True)
    (pkg / "cli.js").write_text("")
    bin_dir = tmp_path / "claude-code-2" / "node_modules" / ".bin"
    bin_dir.mkdir()
    (bin_dir / "claude").symlink_to(pkg / "cli.js")
    assert install_tree(bin_dir / "claude") == tmp_path / "claude-code-2"
    plain = tmp_path / "bin" / "agent"
    plain.parent.mkdir()
    plain.write_text("")
    assert install_tree(plain) == tmp_path / "bin"
