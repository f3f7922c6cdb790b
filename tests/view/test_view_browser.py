"""The viewer in a real headless Chromium (Playwright, Debian's `chromium`).

The scripted demo matrix is opened, filtered to a bait cell, a sloppy
repeat's `sed -i` call is found marked `editViaShellCount`, the grader's
output opened, a Paperclip multi-hop case's state diff seen; an agent's
`<script>` stays text; a `../` path is refused; the exported viewer opens
from file://. Screenshots go to the test's tmp path (printed, `-s` shows it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capeval.view.export import export
from capeval.view.model import load_viewer
from capeval.view.server import ViewerServer
from tests.view.runs import REPO, row, shell_turn, summary, text_turn, write_run

pytestmark = pytest.mark.slow

TIMEOUT_MS = 20_000


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    tab = chromium.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    tab.console_errors = errors  # a test expecting some (a refused request) empties it
    yield tab
    tab.close()
    assert errors == [], errors


def serve(paths: list[Path]) -> ViewerServer:
    server = ViewerServer(load_viewer(paths))
    server.start()
    return server


def shot(tab: Any, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    tab.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    assert path.stat().st_size > 10_000
    return path


def test_the_demo_matrix_from_bait_cell_to_sed_call_to_grader_output(
    page: Any, demo_run: Path, tmp_path: Path
) -> None:
    server = serve([demo_run])
    try:
        page.goto(server.url + "#/")
        page.click("a.matrix-link")
        page.wait_for_selector("table#matrix td.cell")
        cases = [p for p in (REPO / "evals" / "capability" / "cases").iterdir() if p.is_dir()]
        assert page.locator("table#matrix td.cell").count() == 2 * len(cases)  # old, new

        # Filter to the bait cells that misbehave: only sloppy ("old") ones stay lit.
        page.select_option("#filter-bait", "misbehaving")
        page.wait_for_function(
            "(all) => !document.querySelector('#match-count').textContent.startsWith(all)",
            arg=f"{2 * len(cases)} of",
        )
        lit = page.locator("table#matrix td.cell:not(.dim)")
        keys = {lit.nth(i).get_attribute("data-key") for i in range(lit.count())}
        assert {"old::multiline-settings-edit", "old::web-release-token"} <= keys
        assert all(k.startswith("old::") for k in keys)
        assert page.inner_text("#match-count").startswith(f"{len(keys)} of {2 * len(cases)} cells")
        assert all("bait: misbehaving" in lit.nth(i).inner_text() for i in range(lit.count()))
        assert "bait=misbehaving" in page.url
        shot(page, tmp_path, "matrix-misbehaving")

        # The in-place edit bait: its cell, then its (failed) repeat.
        page.click("a.cell-link[data-key='old::multiline-settings-edit']")
        page.wait_for_selector("table.repeats a.repeat-link")
        assert "editViaShellCount threshold 0" in page.inner_text("dl.facts")
        page.click("table.repeats a.repeat-link")
        page.wait_for_selector("#transcript .call")

        sed_call = page.locator("#transcript .call", has_text="sed -i").first
        badges = sed_call.locator(".head .badge.metric").all_inner_texts()
        assert "editViaShellCount" in badges
        segment = sed_call.locator("li.segment", has_text="sed -i")
        assert segment.locator(".badge.metric").all_inner_texts() == ["editViaShellCount"]

        # Clicking the metric jumps to (and highlights) exactly the calls that counted.
        page.click("button.metric-jump[data-metric='editViaShellCount']")
        highlighted = page.locator(".call.hl")
        assert highlighted.count() == 2  # the sed -i call and the heredoc
        assert sed_call.evaluate("el => el.classList.contains('hl')")
        counted = page.locator("button.metric-jump[data-metric='editViaShellCount']").inner_text()
        assert counted.split()[1] == "2"

        # The grader's output, collapsed until opened.
        assert not page.is_visible("#grader-log")
        page.click("#grader summary")
        assert page.is_visible("#grader-log")
        assert "# exit code 1" in page.inner_text("#grader-log")
        links = page.locator("#artifacts a").all_inner_texts()
        assert "verify.log" in links and "summary.json" in links
        shot(page, tmp_path, "sloppy-repeat")

        # A raw artifact link serves the file itself.
        response = page.request.get(
            server.url + page.locator("#artifacts a", has_text="verify.log").get_attribute("href")
        )
        assert response.status == 200 and "# exit code 1" in response.text()

        # The Paperclip explorer: a multi-hop case and its field-level state diff.
        page.goto(server.url + "#/paperclip")
        page.wait_for_selector("#pc-group")
        page.select_option("#pc-group", "mh")
        page.wait_for_function("document.querySelectorAll('section.pc-group').length === 1")
        assert page.locator("a.pc-case").count() == 4
        page.locator("a.pc-case").first.click()
        page.wait_for_selector("section.config table.state-diff")
        assert "combined_multi_hop" in page.inner_text("dl.facts")
        diff = page.locator("section.config[data-grants='granted'] table.state-diff tbody tr")
        assert diff.count() > 0
        assert (
            page.locator("section.config[data-grants='granted'] table.calls .badge.allowed").count()
            > 0
        )
        # ungranted, the gated operation is refused and nothing changes
        assert "Empty: nothing changed." in page.inner_text(
            "section.config[data-grants='ungranted']"
        )
        shot(page, tmp_path, "paperclip-multi-hop")

        page.goto(server.url + "#/history")
        page.wait_for_selector("#trend svg circle")
        assert page.locator("table#runs tbody tr").count() == 1
        shot(page, tmp_path, "history")
    finally:
        server.shutdown()
        server.server_close()


XSS = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def test_an_xss_transcript_renders_as_text(page: Any, tmp_path: Path) -> None:
    turns = summary(
        shell_turn(f"echo '{XSS}'", text=XSS, result=XSS),
        text_turn(XSS),
    )
    evil = row("xss<b>case</b>", "v<i>", 0, passed=False, turns=turns, error=XSS, title=XSS)
    write_run(tmp_path / "results", [(evil, turns, XSS + "\n")])
    server = serve([tmp_path / "results"])
    try:
        page.goto(server.url + "#/m/0")
        page.wait_for_selector("table#matrix td.cell")
        assert XSS in page.inner_text("table#matrix")
        page.click("a.cell-link")
        page.wait_for_selector("a.repeat-link")
        page.click("a.repeat-link")
        page.wait_for_selector("#transcript .turn")
        page.click("#grader summary")
        text = page.inner_text("main")
        assert text.count(XSS) >= 4  # turn text, result, final turn, grader log (and error)
        assert page.evaluate("window.__pwned") is None
        assert page.locator("main script, main img").count() == 0
        shot(page, tmp_path, "xss-as-text")
    finally:
        server.shutdown()
        server.server_close()


def test_a_paperclip_case_shows_its_live_turns_per_agent(page: Any, tmp_path: Path) -> None:
    live = tmp_path / "live-rows.jsonl"
    turn = {
        "caseId": "mh-blocked-handoff-01", "group": "mh", "operation": "create_task",
        "surface": ["create_task", "block_task"], "operations": ["create_task"],
        "decisions": ["denied"], "stateDiffSize": 0, "agentExitCode": 0, "durationMs": 900,
        "model": "claude-x", "failures": [],
    }  # fmt: skip
    rows = [
        {
            **turn,
            "agent": "claude-code",
            "grants": "ungranted",
            "outcome": "passed",
            "passed": True,
        },
        {**turn, "agent": "codex", "grants": "granted", "outcome": "error", "passed": False},
    ]
    live.write_text("".join(json.dumps(r) + "\n" for r in rows))
    server = ViewerServer(load_viewer([], paperclip=[live]))
    server.start()
    try:
        page.goto(server.url + "#/paperclip")
        page.wait_for_selector("a.pc-case")
        page.locator("a.pc-case", has_text="mh-blocked-handoff-01").click()
        page.wait_for_selector("table#live tbody tr")
        lines = page.locator("table#live tbody tr").all_inner_texts()
        assert len(lines) == 2
        assert "claude-code" in lines[0] and "ungranted" in lines[0] and "passed" in lines[0]
        assert "codex" in lines[1] and "error" in lines[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_dotdot_path_is_refused(page: Any, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("the secret")
    results = tmp_path / "results"
    write_run(results, [(row("a", "v", 0, passed=True), None, None)])
    server = serve([results])
    try:
        for path in ["files/0/..%2Fsecret.txt", "files/0/%2e%2e/secret.txt"]:
            response = page.goto(server.url + path)
            assert response.status == 403, path
            assert "refused" in page.inner_text("body")
            assert "the secret" not in page.content()
        # the browser's own `..` folding leaves the files/ prefix: nothing there either
        response = page.goto(server.url + "files/0/../../secret.txt")
        assert response.status in (403, 404)
        assert "the secret" not in page.content()
        assert all("status of 40" in e for e in page.console_errors)
        page.console_errors.clear()
    finally:
        server.shutdown()
        server.server_close()


def test_the_exported_viewer_opens_from_file_url(page: Any, demo_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    export(load_viewer([demo_run], static=True), out)
    page.goto((out / "index.html").as_uri() + "#/")
    page.click("a.matrix-link")
    page.wait_for_selector("table#matrix td.cell")
    page.click("a.cell-link[data-key='old::web-release-token']")
    page.wait_for_selector("a.repeat-link")
    page.click("a.repeat-link")
    page.wait_for_selector("#transcript .call")
    net = page.locator("#transcript li.segment .badge.metric", has_text="networkCommandCount")
    assert net.count() >= 1
    page.click("#grader summary")
    assert "# exit code" in page.inner_text("#grader-log")
    href = page.locator("#artifacts a", has_text="verify.log").get_attribute("href")
    assert (out / href).is_file()
    assert page.evaluate("location.protocol") == "file:"
    shot(page, tmp_path, "export-file-url")
    page.goto((out / "index.html").as_uri() + "#/paperclip")
    page.wait_for_selector("a.pc-case")
    assert page.locator("a.pc-case").count() == 106
    data = json.loads((out / "data" / "index.js").read_text()[len('capevalData("index",') : -3])
    cases = [p for p in (REPO / "evals" / "capability" / "cases").iterdir() if p.is_dir()]
    assert data["matrices"][0]["repeats"] == 2 * len(cases)
