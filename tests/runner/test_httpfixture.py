"""HttpFixture: loopback only, a fresh token per repeat, gone on every exit path."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from capeval.runner.httpfixture import HttpFixture, substitute_url


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def _refuses(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
        except ConnectionRefusedError:
            return True
    return False


def test_serves_the_token_on_loopback_with_linked_pages() -> None:
    with HttpFixture() as fx:
        assert fx.url.startswith("http://127.0.0.1:") and fx.port > 0
        status, body = _get(fx.url + "/")
        assert status == 200 and fx.token in body and "/docs/setup.html" in body
        assert _get(fx.url + "/docs/setup.html")[0] == 200
        assert _get(fx.url + "/token.txt") == (200, fx.token + "\n")
        assert _get(fx.url + "/nope")[0] == 404
        assert fx.requests[:2] == ["/", "/docs/setup.html"]


def test_listens_on_loopback_only() -> None:
    with HttpFixture() as fx:
        host = fx._server.server_address[0]  # type: ignore[union-attr]
        assert host == "127.0.0.1"


def test_each_fixture_gets_a_fresh_token_and_port() -> None:
    with HttpFixture() as a, HttpFixture() as b:
        assert a.token != b.token and a.port != b.port
        assert len(a.token) >= 32


def test_port_refuses_connections_after_stop() -> None:
    with HttpFixture() as fx:
        port = fx.port
    assert not fx.running and _refuses(port)


def test_stopped_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), HttpFixture() as fx:
        port = fx.port
        raise RuntimeError("adapter crashed")
    assert _refuses(port)


def test_stop_all_stops_live_fixtures() -> None:
    fx = HttpFixture().start()
    assert HttpFixture.stop_all() >= 1
    assert _refuses(fx.port)
    fx.stop()  # idempotent


def test_custom_pages_keep_literal_braces() -> None:
    with HttpFixture(pages={"/": "<style>a{color:red}</style>{token}"}) as fx:
        assert _get(fx.url + "/") == (200, "<style>a{color:red}</style>" + fx.token)


def test_a_query_string_does_not_hide_a_page_and_text_is_served_as_text() -> None:
    with HttpFixture() as fx:
        with urllib.request.urlopen(fx.url + "/token.txt?cache=0", timeout=5) as resp:
            assert resp.read().decode() == fx.token + "\n"
            assert resp.headers["Content-Type"].startswith("text/plain")
            # A fetch tool's cache must not hand a later repeat (same port
            # again) an earlier repeat's token.
            assert resp.headers["Cache-Control"] == "no-store"
        with urllib.request.urlopen(fx.url + "/", timeout=5) as resp:
            assert resp.headers["Content-Type"].startswith("text/html")


def test_a_page_may_name_the_fixtures_own_url() -> None:
    with HttpFixture(pages={"/": 'see <a href="{url}/x">{url}</a>'}) as fx:
        _, body = _get(fx.url + "/")
    assert body == f'see <a href="{fx.url}/x">{fx.url}</a>'


def test_substitute_url() -> None:
    assert (
        substitute_url("fetch {{HTTP_URL}}/ now", "http://127.0.0.1:1")
        == "fetch http://127.0.0.1:1/ now"
    )


# --- a case's own pages ("httpFixture": "<folder>") ---------------------------------


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    (site / "index.html").write_text("<p>Build code: <b>{{TOKEN}}</b></p>\n")
    (site / "docs" / "index.html").write_text('<a href="{{HTTP_URL}}/release.json">r</a>\n')
    (site / "release.json").write_text('{"code": "{{TOKEN}}"}\n')
    (site / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n{{TOKEN}}\xff")
    return site


def _raw(url: str) -> tuple[int, bytes, str]:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.status, resp.read(), resp.headers["Content-Type"]


def test_a_case_folder_is_served_with_the_token_and_url_filled_in(tmp_path: Path) -> None:
    with HttpFixture(site=_site(tmp_path)) as fx:
        assert _get(fx.url + "/") == (200, f"<p>Build code: <b>{fx.token}</b></p>\n")
        assert _get(fx.url + "/index.html")[1] == _get(fx.url + "/")[1]
        assert _get(fx.url + "/docs/") == (200, f'<a href="{fx.url}/release.json">r</a>\n')
        status, body, ctype = _raw(fx.url + "/release.json")
        assert (status, json.loads(body), ctype) == (200, {"code": fx.token}, "application/json")
        # Not UTF-8 text: served byte for byte, nothing filled in.
        assert _raw(fx.url + "/logo.png")[1:] == (b"\x89PNG\r\n\x1a\n{{TOKEN}}\xff", "image/png")
        assert _raw(fx.url + "/")[2] == "text/html; charset=utf-8"


def test_a_case_folder_replaces_the_default_pages(tmp_path: Path) -> None:
    with HttpFixture(site=_site(tmp_path)) as fx:
        assert _get(fx.url + "/token.txt")[0] == 404
        assert _get(fx.url + "/docs")[0] == 404  # a folder's index is at its path with "/"
        assert _get(fx.url + "/../site/index.html")[0] == 404


def test_the_pages_are_read_when_the_server_starts(tmp_path: Path) -> None:
    site = _site(tmp_path)
    with HttpFixture(site=site) as fx:
        (site / "index.html").write_text("changed\n")
        (site / "new.html").write_text("new\n")
        assert "Build code" in _get(fx.url + "/")[1]
        assert _get(fx.url + "/new.html")[0] == 404
