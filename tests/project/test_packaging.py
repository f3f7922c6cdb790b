"""What an installed capeval (a wheel, no checkout) carries and finds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
         "-q", "-w", str(out)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    (found,) = out.glob("capeval-*.whl")
    return found


def test_the_wheel_carries_the_named_queries(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for sql in sorted((ROOT / "analysis").glob("*.sql")):
        assert f"capeval/builtin_queries/{sql.name}" in names


def test_the_wheel_carries_the_viewer_page(wheel: Path, tmp_path: Path) -> None:
    # `capeval view` inlines these into its one HTML file; a wheel without
    # them would serve nothing.
    names = set(zipfile.ZipFile(wheel).namelist())
    for asset in sorted((ROOT / "capeval" / "view" / "assets").iterdir()):
        assert f"capeval/view/assets/{asset.name}" in names
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    code = "from capeval.view.page import html; print(len(html()))"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(proc.stdout) > 10_000


def test_the_wheel_carries_the_workspace_templates(wheel: Path) -> None:
    # `capeval init` and `capeval new case` read them from the installed package.
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = ROOT / "capeval" / "templates"
    for path in sorted(p for p in templates.rglob("*") if p.is_file()):
        assert f"capeval/templates/{path.relative_to(templates).as_posix()}" in names


def test_an_installed_capeval_inits_a_workspace_outside_any_checkout(
    wheel: Path, tmp_path: Path
) -> None:
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    proc = subprocess.run(
        [sys.executable, "-m", "capeval", "init", "ws"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ws" / "evals/capability/cases/fix-greeting/solution/solve.sh").is_file()


def test_an_installed_capeval_lists_its_queries_outside_any_workspace(
    wheel: Path, tmp_path: Path
) -> None:
    # Found beside the sources before; an installed package has no analysis/ there.
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    code = (
        "import json, capeval; from capeval.analysis.queries import list_queries; "
        "print(json.dumps([capeval.__file__, [q.name for q in list_queries()]]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
        check=True,
    )
    where, names = json.loads(proc.stdout)
    assert Path(where).is_relative_to(target)  # the wheel's copy, not the checkout
    assert names == sorted(p.stem for p in (ROOT / "analysis").glob("*.sql"))


def test_the_wheel_carries_the_native_reader_when_it_was_built(wheel: Path) -> None:
    from capeval.analysis.native_reader import native_reader

    if native_reader() is None and os.environ.get("CAPEVAL_REQUIRE_NATIVE") != "1":
        pytest.skip("the native reader is not built here (no C++ compiler)")
    names = zipfile.ZipFile(wheel).namelist()
    assert [n for n in names if n.startswith("capeval/analysis/_jsonl_cells.")], names
    assert "-none-any" not in wheel.name  # a platform wheel: it holds compiled code


def test_a_machine_without_a_compiler_gets_a_reason_not_a_failed_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The hook turns this exception into a warning and builds a pure-Python
    # wheel; the gate then reads through DuckDB (tests/analysis/test_native_reader.py).
    import sysconfig

    sys.path.insert(0, str(ROOT))
    try:
        import hatch_build
    finally:
        sys.path.remove(str(ROOT))
    config = sysconfig.get_config_vars()
    monkeypatch.setitem(config, "CC", str(tmp_path / "no-cc"))
    monkeypatch.setitem(config, "CXX", str(tmp_path / "no-cxx"))
    target = ROOT / f"{hatch_build.MODULE}{config['EXT_SUFFIX']}"
    before = target.stat().st_mtime_ns if target.exists() else None
    with pytest.raises(hatch_build.NativeUnavailable, match="no-c"):
        hatch_build.build(ROOT)
    assert (target.stat().st_mtime_ns if target.exists() else None) == before  # left alone
