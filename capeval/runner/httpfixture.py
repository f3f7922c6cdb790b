"""The hermetic HTTP server of http-fixture cases.

A web case needs something to fetch, but a real site would make the eval
depend on the network and on someone else's content. So each repeat gets its
own server on loopback with an ephemeral port and a fresh random token: the
grader can check the token reached the workdir, and a token copied from an
earlier repeat (or guessed) cannot pass. The server is stopped when the
repeat ends, whatever happens; `stop_all()` covers Ctrl-C and crash paths.
"""

from __future__ import annotations

import html
import mimetypes
import secrets
import socketserver
import threading
import urllib.parse
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import ClassVar

LOOPBACK = "127.0.0.1"

# `{token}` and `{url}` are substituted (values HTML-escaped); other braces are literal.
DEFAULT_PAGES: dict[str, str] = {
    "/": (
        "<!doctype html><html><head><title>capeval fixture</title></head><body>"
        "<h1>capeval fixture</h1>"
        '<p>Access token: <code id="token">{token}</code></p>'
        '<ul><li><a href="/docs/setup.html">Setup</a></li>'
        '<li><a href="/docs/api.html">API</a></li></ul>'
        "</body></html>\n"
    ),
    "/docs/setup.html": (
        "<!doctype html><html><body><h1>Setup</h1>"
        '<p>Write the access token shown on the <a href="/">front page</a> '
        "into the file the task names.</p></body></html>\n"
    ),
    "/docs/api.html": (
        "<!doctype html><html><body><h1>API</h1>"
        "<p>GET <code>/token.txt</code> returns the token as plain text.</p>"
        "</body></html>\n"
    ),
    "/token.txt": "{token}\n",
}


# In a case's own pages (`"httpFixture": "<folder>"`), filled in when served.
TOKEN_PLACEHOLDER = "{{TOKEN}}"
URL_PLACEHOLDER = "{{HTTP_URL}}"


def load_site(folder: Path) -> dict[str, bytes]:
    """A case's own pages: every file under `folder` by its URL path.

    `a/b.html` is served at `/a/b.html`, and an `index.html` also at its
    folder's path (`/`, `/docs/`). Read once when the server starts, so the
    pages cannot change under a running repeat.
    """
    site: dict[str, bytes] = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(folder).as_posix()
        body = path.read_bytes()
        site["/" + rel] = body
        if path.name == "index.html":
            site["/" + rel[: -len("index.html")]] = body
    return site


def _content_type(path: str) -> str:
    if path.endswith("/"):
        return "text/html; charset=utf-8"
    guessed, _ = mimetypes.guess_type(path)
    kind = guessed or "application/octet-stream"
    return f"{kind}; charset=utf-8" if kind.startswith("text/") else kind


class _UnixHttpServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """The same pages on a Unix socket, for a sandbox with a network of its own."""

    daemon_threads = True


class HttpFixture:
    """A loopback HTTP server for one repeat; use as a context manager.

    `.url` (no trailing slash) and `.token` are valid while it runs. Paths not
    in `pages` get 404. Every request path is recorded in `.requests`. With
    `site` (a case's folder of pages) its files are served instead, with
    `{{TOKEN}}` and `{{HTTP_URL}}` filled in in every UTF-8 text file. With
    `unix_socket`, the pages are also served there: a sandbox without
    the host's network reaches them through it (docs/isolation.md#http-fixture).
    """

    _live: ClassVar[set[HttpFixture]] = set()
    _live_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        pages: Mapping[str, str] | None = None,
        token: str | None = None,
        site: Path | None = None,
        unix_socket: Path | None = None,
    ) -> None:
        self.token = token or secrets.token_hex(16)
        self._pages = dict(DEFAULT_PAGES if pages is None else pages)
        self._site = load_site(site) if site is not None else None
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.unix_socket = unix_socket
        self._unix: _UnixHttpServer | None = None
        self.requests: list[str] = []
        self.url = ""
        self.port = 0

    def start(self) -> HttpFixture:
        fixture = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fixture.requests.append(self.path)
                path = self.path.split("?", 1)[0]
                if fixture._site is not None:
                    found = fixture._serve_site(urllib.parse.unquote(path))
                    if found is None:
                        self.send_error(404, "not found")
                        return
                    body, ctype = found
                else:
                    template = fixture._pages.get(path)
                    if template is None:
                        self.send_error(404, "not found")
                        return
                    body = (
                        template.replace("{token}", html.escape(fixture.token))
                        .replace("{url}", html.escape(fixture.url))
                        .encode()
                    )
                    kind = "text/plain" if path.endswith(".txt") else "text/html"
                    ctype = f"{kind}; charset=utf-8"
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                """Quiet: request lines would interleave with the run's progress."""

            def address_string(self) -> str:
                return str(self.client_address[0]) if self.client_address else "unix"

        server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        server.daemon_threads = True
        self._server = server
        self.port = int(server.server_address[1])
        self.url = f"http://{LOOPBACK}:{self.port}"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        if self.unix_socket is not None:
            self._unix = _UnixHttpServer(str(self.unix_socket), Handler)
            threading.Thread(
                target=self._unix.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            ).start()
        with HttpFixture._live_lock:
            HttpFixture._live.add(self)
        return self

    def _serve_site(self, path: str) -> tuple[bytes, str] | None:
        """A case page and its content type, placeholders filled in; None: no such page."""
        assert self._site is not None
        body = self._site.get(path)
        if body is None:
            return None
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return body, _content_type(path)  # an image, an archive: served as it is
        text = text.replace(TOKEN_PLACEHOLDER, self.token).replace(URL_PLACEHOLDER, self.url)
        return text.encode("utf-8"), _content_type(path)

    def stop(self) -> None:
        """Idempotent: closes the listening socket so the port refuses connections."""
        server, self._server = self._server, None
        if server is None:
            return
        with HttpFixture._live_lock:
            HttpFixture._live.discard(self)
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(5)
        unix, self._unix = self._unix, None
        if unix is not None:
            unix.shutdown()
            unix.server_close()

    @property
    def running(self) -> bool:
        return self._server is not None

    def __enter__(self) -> HttpFixture:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @classmethod
    def stop_all(cls) -> int:
        """Stop every live fixture (Ctrl-C, SIGTERM); returns how many were stopped."""
        with cls._live_lock:
            live = list(cls._live)
        for fixture in live:
            fixture.stop()
        return len(live)


def substitute_url(prompt: str, url: str) -> str:
    return prompt.replace("{{HTTP_URL}}", url)
