"""HttpFixture: loopback only, a fresh token per repeat, gone on every exit path."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

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


def test_substitute_url() -> None:
    assert (
        substitute_url("fetch {{HTTP_URL}}/ now", "http://127.0.0.1:1")
        == "fetch http://127.0.0.1:1/ now"
    )
