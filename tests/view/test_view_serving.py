"""Serving and exporting the viewer: loopback only, no path out of the results folders, escaped data."""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from capeval.cli import main
from capeval.view.export import MARKER, ExportRefused, export
from capeval.view.files import Refused, Roots, export_name
from capeval.view.model import Viewer, load_viewer
from capeval.view.page import data_script, html
from capeval.view.server import ViewerServer
from tests.view.runs import small_run


@pytest.fixture
def results(tmp_path: Path) -> Path:
    small_run(tmp_path / "results")
    return tmp_path / "results"


@pytest.fixture
def server(results: Path) -> Iterator[ViewerServer]:
    srv = ViewerServer(load_viewer([results]))
    srv.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def get(
    srv: ViewerServer, path: str, *, host: str | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    """A raw request: the path is sent exactly as given (no client-side `..` folding)."""
    con = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    try:
        con.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        con.putheader("Host", host or f"127.0.0.1:{srv.port}")
        con.endheaders()
        resp = con.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        con.close()


def test_the_server_binds_loopback_on_a_port_the_system_picks(server: ViewerServer) -> None:
    assert server.server_address[0] == "127.0.0.1"
    assert server.port > 0
    assert server.url == f"http://127.0.0.1:{server.port}/"


def test_the_page_is_one_self_contained_file_with_a_strict_policy(server: ViewerServer) -> None:
    status, headers, body = get(server, "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    page = body.decode()
    assert page == html()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy and "default-src 'none'" in policy.group(1)
    # nothing remote: no URL of another host anywhere in the page
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    assert "http://www.w3.org/2000/svg" in page  # the SVG namespace, a name, not a fetch
    assert headers["x-content-type-options"] == "nosniff"


def test_data_is_served_as_scripts_and_unknown_keys_are_404(server: ViewerServer) -> None:
    status, headers, body = get(server, "/data/index.js")
    assert status == 200 and headers["content-type"].startswith("text/javascript")
    assert body.startswith(b'capevalData("index",')
    for path in ["/data/nothing.js", "/data/matrix-99.js", "/data/..%2Findex.js", "/other"]:
        assert get(server, path)[0] == 404, path


@pytest.mark.parametrize(
    "path",
    [
        "/files/0/../run.jsonl",
        "/files/0/..%2F..%2Fetc%2Fpasswd",
        "/files/0/%2e%2e/%2e%2e/etc/passwd",
        "/files/0//etc/passwd",
        "/files/0/%2Fetc%2Fpasswd",
        "/files/0/run.artifacts/..%5C..%5Cx",
        "/files/0/a%00b",
        "/files/7/run.jsonl",
        "/files/x/run.jsonl",
    ],
)
def test_a_path_out_of_the_results_folder_is_refused(server: ViewerServer, path: str) -> None:
    status, _, body = get(server, path)
    assert status == 403, (path, status, body)
    assert body.startswith(b"refused:")


def test_a_symlink_out_of_the_results_folder_is_refused(
    server: ViewerServer, results: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("nope")
    (results / "link.txt").symlink_to(secret)
    status, _, body = get(server, "/files/0/link.txt")
    assert status == 403 and b"nope" not in body


def test_a_raw_file_is_plain_text_in_a_sandbox(server: ViewerServer, results: Path) -> None:
    (results / "page.html").write_text("<script>alert(1)</script>")
    status, headers, body = get(server, "/files/0/page.html")
    assert status == 200 and body == b"<script>alert(1)</script>"
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert headers["content-security-policy"].startswith("sandbox")
    assert get(server, "/files/0/run.jsonl")[0] == 200
    assert get(server, "/files/0/missing.log")[0] == 404


def test_only_requests_addressed_to_loopback_are_answered(server: ViewerServer) -> None:
    # A page on another site reaching this port through DNS rebinding names its own host.
    assert get(server, "/", host="evil.example:80")[0] == 403
    assert get(server, "/", host=f"localhost:{server.port}")[0] == 200


def test_the_server_only_reads(server: ViewerServer) -> None:
    for method in ("POST", "PUT", "DELETE"):
        assert get(server, "/", method=method)[0] == 405


def test_roots_resolve_only_plain_names_inside(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.log").write_text("x")
    roots = Roots([tmp_path])
    assert roots.resolve("files/0/a/f.log") == (tmp_path / "a" / "f.log").resolve()
    assert roots.url(tmp_path / "a" / "f.log") == "files/0/a/f.log"
    assert roots.url(tmp_path.parent / "x") is None
    for bad in ["files/0/a/../a/f.log", "files/0/./a/f.log", "files/0/%ff", "other/0/a", "files/0"]:
        with pytest.raises(Refused):
            roots.resolve(bad)
    assert export_name("a/page.html") == "a/page.html.txt"
    assert export_name("a/verify.log") == "a/verify.log"


def test_data_scripts_cannot_close_their_element_or_open_markup() -> None:
    text = data_script("repeat-c-0", {"x": "</script><script>alert(1)</script>", "y": "a & b"})
    assert "</script" not in text and "<" not in text.split(",", 1)[1]
    payload = text[len('capevalData("repeat-c-0",') : -len(");\n")]
    assert json.loads(payload) == {"x": "</script><script>alert(1)</script>", "y": "a & b"}
    assert data_script("k", {"n": float("nan")}).endswith('{"n":null});\n')


@pytest.mark.slow
def test_the_export_writes_every_page_and_the_artifacts_they_link(
    results: Path, tmp_path: Path
) -> None:
    viewer = load_viewer([results], static=True)
    out = tmp_path / "site"
    report = export(viewer, out)
    assert (out / "index.html").read_text() == html()
    written = sorted(p.stem for p in (out / "data").glob("*.js"))
    assert written == sorted(viewer.page_keys())
    assert report.pages == len(written)
    repeat = (out / "data" / "repeat-c-0.js").read_text()
    links = re.findall(r'"url":"(files/[^"]+)"', repeat)
    assert links and all((out / link).is_file() for link in links)
    assert report.files == sum(1 for _ in (out / "files").rglob("*") if _.is_file())
    # again over the earlier export: replaced
    export(load_viewer([results], static=True), out)
    assert (out / MARKER).is_file()


def test_the_export_copies_other_files_as_text(results: Path, tmp_path: Path) -> None:
    folder = results / "run.artifacts" / "sloppy" / "edit" / "0"
    (folder / "page.html").write_text("<script>alert(1)</script>")
    viewer = load_viewer([results], static=True)
    out = tmp_path / "site"
    export(viewer, out)
    copies = [p.name for p in (out / "files").rglob("page.html*")]
    assert copies == ["page.html.txt"]


def test_the_export_never_writes_into_a_folder_of_other_files(
    results: Path, tmp_path: Path
) -> None:
    out = tmp_path / "busy"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ExportRefused):
        export(load_viewer([results], static=True), out)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


@pytest.mark.slow
def test_cli_export(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    result = CliRunner().invoke(main, ["view", str(results), "--export", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output and (out / "index.html").is_file()
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("")
    refused = CliRunner().invoke(main, ["view", str(results), "--export", str(busy)])
    assert refused.exit_code == 2
    assert "capeval view:" in refused.output


def test_cli_serves_until_ctrl_c(results: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    served: list[Viewer] = []

    def stop(self: ViewerServer) -> None:
        served.append(self.viewer)
        raise KeyboardInterrupt

    monkeypatch.setattr(ViewerServer, "serve_forever", stop)
    result = CliRunner().invoke(main, ["view", str(results), "--no-open"])
    assert result.exit_code == 0, result.output
    assert re.search(r"^http://127\.0\.0\.1:\d+/$", result.stdout, re.M)
    assert "stopped" in result.output and served


def test_cli_a_path_that_does_not_exist_is_bad_usage(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["view", str(tmp_path / "nope")])
    assert result.exit_code == 2
