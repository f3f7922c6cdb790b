"""`capeval view --export DIR`: the same viewer as static files, for a CI artifact.

    DIR/index.html          the page (self-contained: style and script inlined)
    DIR/data/<key>.js       every page's data, as the server would send it
    DIR/files/<n>/<path>    the raw artifacts the repeat pages link to

It opens from file://, with no server and nothing remote. A file whose
suffix is not one of `capeval.view.files.SAFE_SUFFIXES` is copied with
`.txt` appended, so what an agent wrote opens as text. DIR must be new,
empty, or an earlier export (told by its `.capeval-view` marker), which is
replaced.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from capeval.results.output import write_output
from capeval.view.model import Viewer
from capeval.view.page import data_script, html

MARKER = ".capeval-view"
_OURS = ("index.html", "data", "files", MARKER)


class ExportRefused(Exception):
    """DIR holds something that is not an earlier export: nothing is written."""


@dataclass
class ExportReport:
    pages: int = 0
    files: int = 0
    bytes: int = 0


def check_target(out: Path) -> None:
    """Refuse a DIR that is a file, or a folder holding anything but an earlier export."""
    if out.exists() and not out.is_dir():
        raise ExportRefused(f"{out} is a file, not a folder")
    if out.is_dir():
        entries = [p.name for p in out.iterdir()]
        if entries and MARKER not in entries:
            raise ExportRefused(
                f"{out} is not empty and holds no earlier export; choose a new or empty folder"
            )
        strangers = [e for e in entries if e not in _OURS]
        if entries and strangers:
            raise ExportRefused(
                f"{out} holds files an export did not write ({', '.join(sorted(strangers)[:3])}); "
                "choose a new or empty folder"
            )


def export(
    viewer: Viewer, out: Path, *, progress: Callable[[str], None] | None = None
) -> ExportReport:
    """Write the viewer of `viewer` (built with `static=True`) into `out`."""
    check_target(out)
    for name in ("data", "files"):
        if (out / name).is_dir():
            shutil.rmtree(out / name)
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    # The two names an earlier export may hold go through the one output writer
    # (never renamed over a device or through a link out); data/ and files/
    # were just made anew.
    write_output(out / MARKER, "written by capeval view --export\n", fsync=False)
    report = ExportReport()
    for key in viewer.page_keys():
        page = viewer.build(key)
        if page is None:
            continue
        text = data_script(key, page)
        (data / f"{key}.js").write_text(text, encoding="utf-8")
        report.pages += 1
        report.bytes += len(text)
        if key.startswith("repeat-"):
            for item in page.get("files", []):
                _copy(viewer, page, item, out, report)
        if progress is not None and report.pages % 1000 == 0:
            progress(f"{report.pages} pages written")
    write_output(out / "index.html", html())
    return report


def _copy(viewer: Viewer, page: dict, item: dict, out: Path, report: ExportReport) -> None:
    """Copy one artifact a repeat page links to, to where its link points."""
    url = item.get("url")
    if not isinstance(url, str) or not url.startswith("files/"):
        return
    side, number = page["key"].split("-")[1:]
    folder = viewer.artifact_folder(viewer.sets[side].rows[int(number)])
    if folder is None:
        return
    source = folder / item["name"]
    if viewer.roots.locate(source) is None:
        return
    target = out.joinpath(*(unquote(part) for part in url.split("/")))
    if not target.resolve().is_relative_to((out / "files").resolve()):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    report.files += 1
    report.bytes += target.stat().st_size
