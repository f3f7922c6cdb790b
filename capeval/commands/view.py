"""`capeval view [RUN_OR_FOLDER...] [--baseline B] [--port N] [--no-open] [--export DIR]`.

A thin wrapper over `capeval.view` (docs/viewer.md): build the viewer of the
result files or folders given (default: the workspace's results folder),
then serve it on 127.0.0.1 until Ctrl-C, or write it as static files.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from capeval.commands.common import fail, problems_text, root_option, shown_path

if TYPE_CHECKING:
    from capeval.view.model import Viewer


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path, exists=True))
@click.option(
    "--baseline",
    "baseline",
    multiple=True,
    type=click.Path(path_type=Path, exists=True),
    help="Baseline result file or folder (repeatable): adds a baseline-vs-candidate matrix "
    "judged as `capeval compare` judges it.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port on 127.0.0.1 (0: one the system picks).",
)
@click.option("--no-open", is_flag=True, help="Do not open a browser; only print the address.")
@click.option(
    "--export",
    "export_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write the viewer as static files into DIR (index.html, data/, files/) instead of "
    "serving it; it opens from file://.",
)
@click.option(
    "--derivative",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Paperclip derivative for the scenario explorer "
    "(default: evals/paperclip/eval-traceability.yaml here or above).",
)
@click.option(
    "--paperclip",
    "paperclip_rows",
    multiple=True,
    type=click.Path(path_type=Path, exists=True),
    help="Rows of `capeval paperclip run --jsonl`, `report` or `live`, or a folder of them "
    "(repeatable; default: the workspace's .capeval/evidence/paperclip/).",
)
@root_option
def view(
    paths: tuple[Path, ...],
    baseline: tuple[Path, ...],
    port: int,
    no_open: bool,
    export_dir: Path | None,
    derivative: Path | None,
    paperclip_rows: tuple[Path, ...],
    root: Path | None,
) -> None:
    """See what the agent did: runs, cells, transcripts and the Paperclip explorer in a browser."""
    from capeval.analysis.history import default_paths
    from capeval.core.problems import ProblemsError
    from capeval.results.errors import ResultFileError
    from capeval.view.model import load_viewer

    try:
        sources = list(paths) if paths else default_paths(root)
    except (ProblemsError, click.ClickException, ValueError) as exc:
        problems = getattr(exc, "problems", None)
        message = problems_text(problems) if problems else str(exc)
        fail("view", f"{message}\n(pass result files or folders)")
    sources = [p for p in sources if p.exists()]
    try:
        viewer = load_viewer(
            sources,
            baseline=list(baseline),
            root=root,
            derivative=derivative,
            paperclip=list(paperclip_rows),
            static=export_dir is not None,
        )
    except (ResultFileError, ProblemsError) as exc:
        problems = getattr(exc, "problems", None)
        fail("view", problems_text(problems) if problems else str(exc))
    for warning in viewer.warnings:
        click.echo(f"warning: {warning}", err=True)
    if export_dir is not None:
        _export(viewer, export_dir)
        return
    _serve(viewer, port, open_browser=not no_open)


def _export(viewer: Viewer, out: Path) -> None:
    from capeval.view.export import ExportRefused, export

    try:
        report = export(viewer, out, progress=lambda m: click.echo(m, err=True))
    except ExportRefused as exc:
        fail("view", str(exc))
    except OSError as exc:
        from capeval.commands.common import cannot_write

        fail("view", cannot_write(out, exc))
    click.echo(
        f"wrote {shown_path(out / 'index.html')} with {report.pages} data files and "
        f"{report.files} artifacts ({report.bytes / 1e6:.1f} MB); open it in a browser"
    )


def _serve(viewer: Viewer, port: int, *, open_browser: bool) -> None:
    from capeval.view.server import ViewerServer

    try:
        server = ViewerServer(viewer, port)
    except OSError as exc:
        fail("view", f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}")
    click.echo(f"capeval view: serving {server.url} (Ctrl-C stops)", err=True)
    click.echo(server.url)
    if open_browser:
        import webbrowser

        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        # Ctrl-C is how a viewer ends: no interrupted command, no exit 130.
        click.echo("capeval view: stopped", err=True)
    finally:
        server.server_close()
