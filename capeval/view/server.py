"""Serving the viewer on loopback with the standard library (`http.server`).

Three kinds of address, nothing else:

- `/` (or `/index.html`): the page;
- `/data/<key>.js`: one page's data, built on first request;
- `/files/<root>/<path>`: a raw file under one of the results folders given
  (`capeval.view.files.Roots.resolve` refuses `..`, absolute paths and
  symlinks out with 403), always sent as plain text in a sandbox, so a file
  an agent wrote never runs as a page of the viewer.

The server binds 127.0.0.1 only and answers only requests addressed to it by
that name or `localhost` (a page elsewhere cannot reach it through DNS
rebinding). It only reads.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit

from capeval.view.files import FILES_PREFIX, Refused
from capeval.view.model import KEY, Viewer
from capeval.view.page import data_script, html

LOOPBACK = "127.0.0.1"
_COMMON_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Resource-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}
RAW_FILE_POLICY = "sandbox; default-src 'none'"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: ViewerServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.log is not None:
            self.server.log(format % args)

    def _send(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in {**_COMMON_HEADERS, **headers}.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _text(self, status: int, message: str) -> None:
        self._send(status, (message + "\n").encode(), "text/plain; charset=utf-8")

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        host = (self.headers.get("Host") or "").lower()
        if host not in self.server.hosts:
            self._text(403, "refused: this server answers only 127.0.0.1 and localhost")
            return
        path = urlsplit(self.path).path
        try:
            self._route(path)
        except Refused as exc:
            self._text(403, f"refused: {exc}")
        except FileNotFoundError:
            self._text(404, "not found")

    def _route(self, path: str) -> None:
        if path in ("/", "/index.html"):
            self._send(200, html().encode(), "text/html; charset=utf-8")
            return
        if path.startswith("/data/") and path.endswith(".js"):
            key = unquote(path[len("/data/") : -len(".js")])
            data = self.server.viewer.page(key) if KEY.match(key) else None
            if data is None:
                raise FileNotFoundError(path)
            body = data_script(key, data).encode()
            self._send(200, body, "text/javascript; charset=utf-8")
            return
        if path.startswith(f"/{FILES_PREFIX}/"):
            file = self.server.viewer.roots.resolve(path[1:])
            self._send(
                200,
                file.read_bytes(),
                "text/plain; charset=utf-8",
                Content_Security_Policy=RAW_FILE_POLICY,
                Content_Disposition="inline",
            )
            return
        raise FileNotFoundError(path)

    def _refuse_other_methods(self) -> None:
        self._text(405, "the viewer only reads")

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse_other_methods


class ViewerServer(http.server.ThreadingHTTPServer):
    """The viewer's HTTP server on 127.0.0.1 (port 0: one the system picks)."""

    daemon_threads = True

    def __init__(
        self, viewer: Viewer, port: int = 0, *, log: Callable[[str], None] | None = None
    ) -> None:
        super().__init__((LOOPBACK, port), _Handler)
        self.viewer = viewer
        self.log = log
        self.port = self.server_address[1]
        self.hosts = {f"{LOOPBACK}:{self.port}", f"localhost:{self.port}"}

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/"

    def start(self) -> threading.Thread:
        """Serve in a background thread (tests, notebooks); `shutdown()` stops it."""
        thread = threading.Thread(target=self.serve_forever, name="capeval-view", daemon=True)
        thread.start()
        return thread
