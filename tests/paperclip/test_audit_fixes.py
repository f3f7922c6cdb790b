"""Drift the loader used to accept and CLI outputs that used to lose data or read as success."""

from __future__ import annotations

import copy
import csv
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from capeval.paperclip.corpus import CORPUS_FACTS
from capeval.paperclip.derivative import check_derivative
from capeval.paperclip.live import CodexNotFound, LiveSkipped, find_codex
from capeval.paperclip.policy import CORPUS_CASE_IDS
from tests.clirun import capeval


@pytest.fixture(scope="module")
def doc(paperclip_derivative: Path) -> dict[str, Any]:
    return yaml.safe_load(paperclip_derivative.read_text(encoding="utf-8"))


def _row(obj: dict[str, Any], case_id: str) -> tuple[int, dict[str, Any]]:
    return next((i, r) for i, r in enumerate(obj["rows"]) if r["id"] == case_id)


def _write(tmp_path: Path, obj: Any, name: str = "d.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(obj, sort_keys=False), encoding="utf-8")
    return path


def _messages(obj: Any) -> list[str]:
    return [str(p) for p in check_derivative(obj, file="d.yaml")]


# -- corpus facts ---------------------------------------------------------------------------


def test_the_packaged_corpus_facts_are_the_corpus(shared_dir: Path) -> None:
    with (shared_dir / "paperclip" / "corpus-rows.tsv").open(encoding="utf-8") as fh:
        corpus = {r["id"]: r for r in csv.DictReader(fh, delimiter="\t")}
    assert sorted(CORPUS_FACTS) == sorted(corpus) == list(CORPUS_CASE_IDS)
    for case_id, facts in CORPUS_FACTS.items():
        assert facts.fixture == corpus[case_id]["fixture"]
        assert list(facts.expected_semantics) == [
            s.strip() for s in corpus[case_id]["expectedSemantics"].split(" ; ")
        ]


def test_a_drifted_evidence_entry_is_refused_by_validate_naming_the_corpus_entry(
    doc: dict[str, Any], tmp_path: Path
) -> None:
    # The auditor's repro: validate said ok and `run` then failed with "no agent
    # tool call was allowed", which points at the control plane, not the file.
    bad = copy.deepcopy(doc)
    i, row = _row(bad, "cm-multiline-01")
    corpus = row["expectedSemantics"][0]
    row["expectedSemantics"][0] = "GET /api/health"
    path = _write(tmp_path, bad)
    proc = capeval("paperclip", "validate", "--file", path)
    assert proc.returncode == 2, proc.stdout
    assert (
        f"{path}: rows[{i}] (cm-multiline-01).expectedSemantics[0]: found `GET /api/health`, "
        f"but corpus case cm-multiline-01 has `{corpus}` here; restore the corpus entry"
    ) in proc.stderr
    assert "1 problem(s)" in proc.stderr
    run = capeval("paperclip", "run", "--file", path)
    assert run.returncode == 2 and "no agent tool call was allowed" not in run.stdout


def test_a_drifted_fixture_is_refused_naming_the_corpus_fixture(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    i, row = _row(bad, "ap-approval-deny-01")
    row["fixture"] = "baseline"
    assert _messages(bad) == [
        f"d.yaml: rows[{i}] (ap-approval-deny-01).fixture: corpus case ap-approval-deny-01 "
        'runs on fixture "approval-denied", found "baseline"; write fixture: approval-denied'
    ]


def test_a_dropped_or_added_evidence_entry_is_refused_listing_the_corpus_entries(
    doc: dict[str, Any],
) -> None:
    bad = copy.deepcopy(doc)
    i, row = _row(bad, "st-done-comment-01")
    want = list(row["expectedSemantics"])
    row["expectedSemantics"].pop()
    _, other = _row(bad, "hb-context-01")
    other["expectedSemantics"].append("GET /api/health")
    text = "\n".join(_messages(bad))
    assert (
        f"rows[{i}] (st-done-comment-01).expectedSemantics: corpus case st-done-comment-01 "
        f"has {len(want)} evidence entries, found {len(want) - 1}; write the corpus's, in "
        "this order: " + " ; ".join(f"`{e}`" for e in want)
    ) in text
    assert "(hb-context-01).expectedSemantics: corpus case hb-context-01 has" in text


def test_an_unknown_fixture_or_bad_entry_is_reported_once_not_again_as_drift(
    doc: dict[str, Any],
) -> None:
    bad = copy.deepcopy(doc)
    _, row = _row(bad, "cm-multiline-01")
    row["fixture"] = "nofix"
    row["expectedSemantics"][0] = "FETCH /x"
    out = _messages(bad)
    assert len(out) == 2, out
    assert "unknown fixture 'nofix'" in out[0] or "unknown fixture 'nofix'" in out[1]


# -- schemaVersion and value spellings -------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"), [(2.0, "2.0"), (True, "true"), ("2", '"2"'), (None, "null")]
)
def test_schema_version_must_be_the_whole_number_2(
    doc: dict[str, Any], value: Any, shown: str
) -> None:
    bad = {**doc, "schemaVersion": value}
    assert _messages(bad) == [
        f"d.yaml: schemaVersion: must be 2, found {shown}; write schemaVersion: 2 "
        "(a whole number, not quoted), and regenerate the derivative if it was written "
        "for another schema version"
    ]


def test_a_missing_schema_version_is_reported_once(doc: dict[str, Any]) -> None:
    bad = {k: v for k, v in doc.items() if k != "schemaVersion"}
    assert _messages(bad) == [
        "d.yaml: schemaVersion: missing; write schemaVersion: 2 (a whole number, not quoted)"
    ]


def test_values_are_spelled_as_in_yaml_not_python(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    bad["rows"][0] = None
    bad["rows"][1]["primaryDisposition"] = None
    bad["rows"][2]["title"] = True
    text = "\n".join(_messages(bad))
    assert "rows[0]: null is not of type 'object'" in text
    assert "primaryDisposition: null is not one of" in text
    assert "found null" in text and "title: true is not of type 'string'" in text
    for python in ("None", "True", "False"):
        assert python not in text, text
    assert "rows: {\"a\": 1} is not of type 'array'" in "\n".join(
        _messages({**doc, "rows": {"a": 1}})
    )


# -- outputs ---------------------------------------------------------------------------------


def test_run_refuses_to_write_its_rows_over_its_own_derivative(
    paperclip_derivative: Path, tmp_path: Path
) -> None:
    copy_path = tmp_path / "copy.yaml"
    original = paperclip_derivative.read_bytes()
    copy_path.write_bytes(original)
    link = tmp_path / "link.yaml"
    link.symlink_to(copy_path)
    for target in (copy_path, tmp_path / "." / "copy.yaml", link):
        proc = capeval(
            "paperclip", "run", "--file", copy_path, "--jsonl", target, "--force", cwd=tmp_path
        )
        assert proc.returncode == 2, proc.stdout
        assert "is the derivative being run" in proc.stderr
        assert copy_path.read_bytes() == original


@pytest.fixture
def fake_codex(tmp_path: Path) -> Path:
    """An executable named codex that is found but exits at once (no turn passes)."""
    exe = tmp_path / "bin" / "codex"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return exe


def test_a_named_codex_that_is_not_an_executable_is_bad_input(
    paperclip_derivative: Path, tmp_path: Path
) -> None:
    for named, why in (
        (tmp_path / "nope" / "codex", "does not exist"),
        (tmp_path, "is a directory"),
        ("no-such-codex-here", "is not on PATH"),
    ):
        proc = capeval("paperclip", "live", "--file", paperclip_derivative, "--codex", named)
        assert proc.returncode == 2, proc.stderr
        assert why in proc.stderr and "live matrix skipped" not in proc.stderr + proc.stdout
        with pytest.raises(CodexNotFound, match=why):
            find_codex(str(named))
    plain = tmp_path / "plain"
    plain.write_text("")
    with pytest.raises(CodexNotFound, match="is not executable"):
        find_codex(str(plain))


def test_no_codex_on_path_and_none_named_is_still_a_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paperclip_derivative: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LiveSkipped, match="not on PATH"):
        find_codex()
    proc = capeval("paperclip", "live", "--file", paperclip_derivative)
    assert proc.returncode == 0 and "live matrix skipped" in proc.stderr


def test_live_keeps_an_earlier_matrix_unless_forced(
    paperclip_derivative: Path, tmp_path: Path, fake_codex: Path
) -> None:
    out = tmp_path / "live"
    out.mkdir()
    rows = out / "live-rows.jsonl"
    earlier = "".join(json.dumps({"group": g, "passed": True}) + "\n" for g in ("ap", "ar", "bl"))
    rows.write_text(earlier)
    argv = ["paperclip", "live", "--file", paperclip_derivative, "--scripted"]
    argv += ["--codex", fake_codex, "--group", "hb", "--out", out, "--timeout", "60"]
    proc = capeval(*argv)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "holds an earlier matrix's rows; pass --force" in proc.stderr
    assert rows.read_text() == earlier
    as_json = capeval(*argv, "--json")
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["exitCode"] == 2
    assert rows.read_text() == earlier
    forced = capeval(*argv, "--force", timeout=180)
    assert forced.returncode == 1, forced.stderr  # the fake Codex never calls a tool
    assert [json.loads(line)["group"] for line in rows.read_text().splitlines()] == ["hb"]


def test_an_empty_rows_file_is_not_an_earlier_matrix(
    paperclip_derivative: Path, tmp_path: Path, fake_codex: Path
) -> None:
    # The output check itself leaves an empty file when a matrix is stopped before its
    # first turn: refusing over it would make every retry need --force.
    out = tmp_path / "live"
    out.mkdir()
    (out / "live-rows.jsonl").write_text("")
    proc = capeval(
        "paperclip", "live", "--file", paperclip_derivative, "--scripted", "--codex",
        fake_codex, "--group", "hb", "--out", out, "--timeout", "60", timeout=180,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    assert "earlier matrix" not in proc.stderr
    assert os.path.getsize(out / "live-rows.jsonl") > 0
