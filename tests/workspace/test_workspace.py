"""Workspace discovery and the case loader, on real temporary directories."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from capeval.config import Config
from capeval.core.problems import ProblemsError
from capeval.workspace import (
    cases_dir,
    check_cases,
    find_root,
    fixture_fact,
    load_cases,
    read_baits,
)
from tests.casefactory import CASES, write_case
from tests.casefactory import case_fields as case_obj


def add_case(
    root: Path, name: str, obj: Any = None, *, grader: bool = True, raw: str | None = None
) -> Path:
    """A case directory with a fixture and grader, valid unless told otherwise."""
    if raw is None and obj is not None:
        raw = json.dumps(obj)
    return write_case(
        root, name, verify="exit 0\n" if grader else None, text=raw, title=name.title()
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / CASES).mkdir(parents=True)
    return tmp_path


def problems_of(root: Path, **kw: Any) -> list[str]:
    with pytest.raises(ProblemsError) as info:
        load_cases(root, **kw)
    return [str(p) for p in info.value.problems]


# --- find_root -----------------------------------------------------------------------


def test_find_root_walks_up_to_the_nearest_workspace(root: Path) -> None:
    deep = root / "src" / "pkg"
    deep.mkdir(parents=True)
    assert find_root(start=deep) == root.resolve()


def test_find_root_prefers_the_nearest_of_nested_workspaces(root: Path) -> None:
    inner = root / "sub"
    (inner / CASES).mkdir(parents=True)
    assert find_root(start=inner / CASES) == inner.resolve()


def test_find_root_uses_the_current_directory_by_default(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "docs").mkdir()
    monkeypatch.chdir(root / "docs")
    assert find_root() == root.resolve()


def test_find_root_without_workspace_says_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(ProblemsError) as info:
        find_root(start=tmp_path)
    text = str(info.value)
    assert "no evals/capability/cases/ here or in any parent directory" in text
    assert "--root DIR" in text


def test_explicit_root_is_used_as_given(
    root: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    assert find_root(start=elsewhere, explicit=root) == root.resolve()


def test_explicit_root_must_hold_the_cases_directory(tmp_path: Path) -> None:
    with pytest.raises(ProblemsError) as info:
        find_root(explicit=tmp_path)
    (problem,) = info.value.problems
    assert problem.field == "--root"
    assert "holds no evals/capability/cases/" in problem.message


def test_explicit_root_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ProblemsError, match="is not a directory"):
        find_root(explicit=tmp_path / "missing")


# --- loading -------------------------------------------------------------------------


def test_cases_load_sorted_by_id_with_absolute_dirs(root: Path) -> None:
    for name in ("zeta", "alpha", "mid"):
        add_case(root, name)
    cases = load_cases(root)
    assert [c.id for c in cases] == ["alpha", "mid", "zeta"]
    assert cases[0].dir == cases_dir(root) / "alpha"
    assert cases[0].file == cases_dir(root) / "alpha" / "case.json"


def test_empty_workspace_loads_no_cases(root: Path) -> None:
    assert load_cases(root) == []


def test_hidden_directories_and_loose_files_are_not_cases(root: Path) -> None:
    add_case(root, "alpha")
    (root / CASES / ".cache").mkdir()
    (root / CASES / "README.md").write_text("cases live here")
    assert [c.id for c in load_cases(root)] == ["alpha"]


def test_underscore_directories_are_not_cases(tmp_path: Path) -> None:
    # A shared helper folder (`_lib`) is no case and needs no case.json.
    (tmp_path / CASES).mkdir(parents=True)
    write_case(tmp_path, "alpha", verify="exit 0\n")
    (tmp_path / CASES / "_lib").mkdir()
    result = check_cases(tmp_path)
    assert result.problems == []
    assert [c.id for c in result.cases] == ["alpha"]


def test_selected_ids_load_only_those(root: Path) -> None:
    for name in ("a", "b", "c"):
        add_case(root, name)
    add_case(root, "broken", case_obj("broken", tier="nope"))
    assert [c.id for c in load_cases(root, ids=["c", "a"])] == ["a", "c"]


def test_unknown_selected_id_is_a_problem_listing_known_ids(root: Path) -> None:
    add_case(root, "a")
    (text,) = problems_of(root, ids=["zz"])
    assert text.startswith('evals/capability/cases: --case: no case "zz"')
    assert "known cases: a" in text


def test_configured_tiers_reach_the_rules(root: Path) -> None:
    add_case(root, "n", case_obj("n", tier="nightly"))
    config = Config(results_dir=root / "results", tiers=("nightly",))
    assert [c.tier for c in load_cases(root, config)] == ["nightly"]
    assert "unknown tier" in problems_of(root)[0]


def test_case_directory_without_case_json(root: Path) -> None:
    (root / CASES / "empty").mkdir()
    (text,) = problems_of(root)
    assert text.startswith("evals/capability/cases/empty/case.json: missing; ")
    assert "needs a case.json" in text


def test_case_json_that_is_a_directory_is_not_called_missing(root: Path) -> None:
    (root / CASES / "odd" / "case.json").mkdir(parents=True)
    (text,) = problems_of(root)
    assert text.startswith("evals/capability/cases/odd/case.json: is a directory; ")
    assert "needs a case.json file" in text


def test_invalid_json_reports_line_and_column(root: Path) -> None:
    add_case(root, "bad", raw='{\n  "id": "bad",\n  "tier": \n}')
    (text,) = problems_of(root)
    assert text.startswith(
        "evals/capability/cases/bad/case.json: invalid JSON at line 4, column 1:"
    )


def valid_text(case_id: str, **changes: Any) -> str:
    """A valid case.json's text, to splice a literal json.dumps cannot write into."""
    return json.dumps(case_obj(case_id, **changes))


def test_duplicate_keys_are_an_error_not_a_silent_overwrite(root: Path) -> None:
    add_case(root, "dup", raw=valid_text("dup").replace('"tier"', '"tier": "bait", "tier"'))
    (text,) = problems_of(root)
    assert text.startswith("evals/capability/cases/dup/case.json: tier: appears twice")
    assert "the last is the one checked" in text


def test_nan_is_not_json(root: Path) -> None:
    raw = valid_text("nan", bait={"metric": "networkCommandCount", "threshold": 0})
    add_case(root, "nan", raw=raw.replace('"threshold": 0', '"threshold": NaN'))
    # Named by its field, and not also as "must be >= 0, got nan".
    assert problems_of(root) == [
        "evals/capability/cases/nan/case.json: bait.threshold: contains NaN, which is not JSON; "
        "write a number"
    ]


def test_a_duplicate_key_hides_no_other_problem_in_its_case(root: Path) -> None:
    # Each was hidden behind "title: appears twice" until that was fixed.
    add_case(
        root,
        "dup",
        raw='{"id": "dup", "tier": "nope", "title": "t", "title": "u", '
        '"fixture": "missing/dir", "prompt": "p {{HTTP_URL}}", "extra": 1}',
    )
    fields = [text.split(": ")[1] for text in problems_of(root)]
    assert fields == ["tier", "title", "fixture", "prompt", "extra"]


def test_a_refused_number_hides_no_other_problem_in_its_case(root: Path) -> None:
    raw = valid_text("nan", tier="nope", maxTurns=5, colour="red")
    add_case(root, "nan", raw=raw.replace('"maxTurns": 5', '"maxTurns": -Infinity'))
    problems = problems_of(root)
    file = "evals/capability/cases/nan/case.json"
    assert f"{file}: maxTurns: contains -Infinity, which is not JSON; write a number" in problems
    assert any(text.startswith(f"{file}: tier: unknown tier") for text in problems)
    assert any(text.startswith(f"{file}: colour: unknown field") for text in problems)


def test_nested_duplicates_and_refused_numbers_are_named_by_their_path(root: Path) -> None:
    raw = valid_text("deep", requireBehaviors=[{"metric": "shellCommandCount", "min": 0}])
    raw = raw.replace('"min": 0', '"max": 1, "max": 2, "min": 1e400')
    add_case(root, "deep", raw=raw)
    file = "evals/capability/cases/deep/case.json"
    assert problems_of(root) == [
        f"{file}: requireBehaviors[0].max: appears twice in one object; keep one (JSON readers "
        "silently use the last, so the last is the one checked here)",
        f"{file}: requireBehaviors[0].min: contains 1e400, too large for a number; "
        "write a smaller one",
    ]


def test_an_integer_too_long_to_convert_is_a_problem_not_a_crash(root: Path) -> None:
    # Python refuses str -> int past 4300 digits: a ValueError ended the whole check.
    raw = valid_text("long", maxTurns=5).replace('"maxTurns": 5', '"maxTurns": ' + "9" * 5000)
    add_case(root, "long", raw=raw)
    add_case(root, "other", case_obj("other", tier="nope"))
    problems = problems_of(root)
    assert (
        "evals/capability/cases/long/case.json: maxTurns: contains a 5000-digit integer, "
        "too large for a number; write a smaller one"
    ) in problems
    assert any(
        text.startswith("evals/capability/cases/other/case.json: tier:") for text in problems
    )


def _case_problems(root: Path, case_id: str, old: str, new: str, **fields: object) -> list[str]:
    (root / CASES).mkdir(parents=True, exist_ok=True)
    write_case(root, case_id, **fields)
    case_json = root / CASES / case_id / "case.json"
    text = case_json.read_text()
    assert old in text
    case_json.write_text(text.replace(old, new))
    return [str(p) for p in check_cases(root).problems]


def test_a_negative_number_too_large_is_named_once(tmp_path: Path) -> None:
    # -1e400 reads as -inf: refused as too large, and not also "must be >= 0, got -inf".
    texts = _case_problems(
        tmp_path,
        "deep",
        '"threshold": 0',
        '"threshold": -1e400',
        bait={"metric": "networkCommandCount", "threshold": 0},
    )
    assert texts == [
        "evals/capability/cases/deep/case.json: bait.threshold: contains -1e400, too large "
        "for a number; write a smaller one"
    ]


def test_a_refused_number_in_a_later_list_entry_is_named(tmp_path: Path) -> None:
    # A NaN bound passes every comparison: unreported, the requirement checked nothing.
    reqs = [
        {"metric": "editViaShellCount", "min": 1},
        {"metric": "networkCommandCount", "max": 0},
    ]
    texts = _case_problems(tmp_path, "req", '"max": 0', '"max": NaN', requireBehaviors=reqs)
    assert texts == [
        "evals/capability/cases/req/case.json: requireBehaviors[1].max: contains NaN, which "
        "is not JSON; write a number"
    ]


def test_a_grader_that_is_a_directory_is_named_on_disk(tmp_path: Path) -> None:
    # `bash verify.sh` on a directory fails every repeat as if the agent had.
    (tmp_path / CASES).mkdir(parents=True)
    case_dir = write_case(tmp_path, "g", verify=None)
    (case_dir / "verify.sh").mkdir()
    texts = [str(p) for p in check_cases(tmp_path).problems]
    assert texts == [
        "evals/capability/cases/g/case.json: verify: evals/capability/cases/g/verify.sh is "
        "not a regular file; the grader must be a file run with bash"
    ]


def test_json_nested_too_deeply_is_a_problem_not_a_crash(root: Path) -> None:
    add_case(root, "deep", raw="[" * 100_000)
    add_case(root, "other", case_obj("other", tier="nope"))
    problems = problems_of(root)
    assert problems[0] == (
        "evals/capability/cases/deep/case.json: is nested too deeply to read; "
        "a case.json needs only a few levels"
    )
    assert problems[1].startswith("evals/capability/cases/other/case.json: tier:")


def test_a_syntax_error_in_one_case_hides_no_problem_of_another(root: Path) -> None:
    add_case(root, "bad", raw='{"id": "bad",')
    add_case(
        root, "dup", raw=valid_text("dup", tier="nope").replace('"title"', '"title": 1, "title"')
    )
    problems = problems_of(root)
    assert [text.split(": ")[:2] for text in problems] == [
        ["evals/capability/cases/bad/case.json", "invalid JSON at line 1, column 14"],
        ["evals/capability/cases/dup/case.json", "tier"],
        ["evals/capability/cases/dup/case.json", "title"],
    ]


def test_non_utf8_case_file(root: Path) -> None:
    case_dir = add_case(root, "latin")
    (case_dir / "case.json").write_bytes(b'{"title": "caf\xe9"}')
    (text,) = problems_of(root)
    assert "is not UTF-8 text" in text


def test_a_case_file_saved_with_a_byte_order_mark_says_so(root: Path) -> None:
    # Some editors save UTF-8 with a BOM; the file looks fine, and the message
    # was Python's "Unexpected UTF-8 BOM (decode using utf-8-sig)".
    case_dir = add_case(root, "bom")
    text = (case_dir / "case.json").read_bytes()
    (case_dir / "case.json").write_bytes(b"\xef\xbb\xbf" + text)
    (problem,) = problems_of(root)
    assert problem == (
        "evals/capability/cases/bom/case.json: starts with a byte order mark (BOM), which "
        "JSON does not allow; save the file as UTF-8 without BOM"
    )


def test_missing_grader_is_found_on_disk(root: Path) -> None:
    add_case(root, "nograder", grader=False)
    (text,) = problems_of(root)
    assert text == (
        "evals/capability/cases/nograder/case.json: verify: grader verify.sh not found in "
        'evals/capability/cases/nograder/; add evals/capability/cases/nograder/verify.sh or set "verify" '
        "to the grader's file name"
    )


def test_custom_grader_name_is_looked_up(root: Path) -> None:
    case_dir = add_case(root, "custom", case_obj("custom", verify="check.sh"), grader=False)
    assert "grader check.sh not found" in problems_of(root)[0]
    (case_dir / "check.sh").write_text("exit 0\n")
    assert load_cases(root)[0].verify_path == case_dir / "check.sh"


def test_missing_fixture_is_found_on_disk(root: Path) -> None:
    add_case(root, "nofix", case_obj("nofix", fixture="evals/capability/fixtures/ghost"))
    (text,) = problems_of(root)
    assert 'fixture: "evals/capability/fixtures/ghost" does not exist' in text


def test_fixture_that_is_a_symlink_loop_is_a_problem_not_a_crash(root: Path) -> None:
    # Path.resolve raised RuntimeError("Symlink loop"): `capeval validate` and
    # `capeval run` ended in a traceback.
    (root / "evals/capability/fixtures").mkdir(parents=True)
    os.symlink("loop", root / "evals/capability/fixtures/loop")
    add_case(root, "lp", case_obj("lp", fixture="evals/capability/fixtures/loop"))
    (text,) = problems_of(root)
    assert 'fixture: "evals/capability/fixtures/loop" does not exist' in text


def test_fixture_that_is_a_file(root: Path) -> None:
    (root / "file.txt").write_text("x")
    add_case(root, "f", case_obj("f", fixture="file.txt"))
    assert "is not a directory" in problems_of(root)[0]


def test_fixture_escaping_with_dotdot(root: Path) -> None:
    outside = root.parent / f"{root.name}-outside"
    outside.mkdir()
    add_case(root, "esc", case_obj("esc", fixture=f"../{outside.name}"))
    assert "resolves outside the workspace root" in problems_of(root)[0]


def test_fixture_escaping_through_a_symlink(
    root: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (root / "evals/capability/fixtures").mkdir(parents=True)
    os.symlink(outside, root / "evals/capability/fixtures/link")
    add_case(root, "sym", case_obj("sym", fixture="evals/capability/fixtures/link"))
    assert "resolves outside the workspace root" in problems_of(root)[0]


@pytest.mark.parametrize(
    ("target", "why"), [("/etc/hostname", "is absolute"), ("../../..", "points outside")]
)
def test_a_link_inside_the_fixture_that_the_workdir_would_refuse(
    root: Path, target: str, why: str
) -> None:
    # Reported before any agent starts, not as a failed row in every repeat.
    add_case(root, "linky")
    os.symlink(target, root / "evals/capability/fixtures/linky/host")
    (text,) = problems_of(root)
    assert (
        f'fixture: "evals/capability/fixtures/linky": host: symlink target {target!r} {why}' in text
    )


def test_fixture_symlink_inside_the_root_is_fine(root: Path) -> None:
    add_case(root, "real")
    os.symlink(root / "evals/capability/fixtures/real", root / "alias")
    add_case(root, "viaalias", case_obj("viaalias", fixture="alias"))
    assert [c.id for c in load_cases(root)] == ["real", "viaalias"]


def test_root_reached_through_a_symlink_still_contains_its_fixtures(
    root: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    add_case(root, "a")
    link = tmp_path_factory.mktemp("links") / "ws"
    os.symlink(root, link)
    assert [c.id for c in load_cases(link)] == ["a"]


def test_fixture_fact_flags_the_root_itself(root: Path) -> None:
    assert fixture_fact(root, ".") == "is_root"
    assert fixture_fact(root, "evals/..") == "is_root"


def test_duplicate_ids_are_reported(root: Path) -> None:
    add_case(root, "one")
    add_case(root, "two", case_obj("one", fixture="evals/capability/fixtures/one"))
    texts = problems_of(root)
    assert any('two/case.json: id: "one" does not equal its directory name' in t for t in texts)
    assert any(
        t.startswith(
            'evals/capability/cases/two/case.json: id: duplicate id "one", also used by '
            "evals/capability/cases/one/case.json"
        )
        for t in texts
    )


def test_every_problem_in_every_case_comes_back_in_one_run(root: Path) -> None:
    add_case(root, "good")
    add_case(
        root, "alpha", case_obj("alpha", tier="hard", bait={"metric": "netCount", "threshold": 1})
    )
    add_case(root, "beta", case_obj("beta", prompt="{{HTTP_URL}}", maxTurns="ten"), grader=False)
    add_case(root, "gamma", raw="{ not json")
    (root / CASES / "delta").mkdir()
    result = check_cases(root)
    assert [c.id for c in result.cases] == ["good"]
    assert [(p.file.split("/")[-2], p.field) for p in result.problems] == [
        ("alpha", "tier"),
        ("alpha", "bait.metric"),
        ("beta", "prompt"),
        ("beta", "maxTurns"),
        ("beta", "verify"),
        ("delta", ""),
        ("gamma", ""),
    ]
    with pytest.raises(ProblemsError) as info:
        load_cases(root)
    assert info.value.problems == result.problems


def test_messages_name_paths_relative_to_the_root(root: Path) -> None:
    add_case(root, "x", case_obj("x", fixture="evals/capability/fixtures/none"), grader=False)
    result = check_cases(root)
    assert len(result.problems) == 2
    for problem in result.problems:
        assert str(root) not in str(problem)
        assert problem.file == "evals/capability/cases/x/case.json"


def test_check_cases_json_shape(root: Path) -> None:
    add_case(root, "a")
    add_case(root, "b", case_obj("b", tier="hard"))
    out = check_cases(root).to_json()
    assert out["ok"] is False
    assert out["cases"] == ["a"]
    assert out["problems"][0]["file"] == "evals/capability/cases/b/case.json"
    assert out["problems"][0]["field"] == "tier"


# -- read_baits: the gate's light read of bait declarations ---------------------


def test_read_baits_agrees_with_load_cases_on_the_demo_workspace(repo_root: Path) -> None:
    baits, problems = read_baits(repo_root)
    assert problems == []
    loaded = {c.id: c.bait for c in load_cases(repo_root) if c.bait is not None}
    assert baits == loaded and len(baits) == 5


def test_read_baits_keeps_a_bait_whose_case_is_broken_elsewhere(tmp_path: Path) -> None:
    write_case(tmp_path, "web", bait={"metric": "networkCommandCount", "threshold": 0})
    write_case(
        tmp_path, "half-done", prompt=None, bait={"metric": "editViaShellCount", "threshold": 1}
    )
    write_case(tmp_path, "plain")
    with pytest.raises(ProblemsError):
        load_cases(tmp_path)  # the run refuses the workspace...
    baits, problems = read_baits(tmp_path)  # ...while the gate still takes every declaration
    assert problems == []
    assert {k: (b.metric, b.threshold) for k, b in baits.items()} == {
        "web": ("networkCommandCount", 0),
        "half-done": ("editViaShellCount", 1),
    }


@pytest.mark.parametrize(
    ("bait", "field"),
    [
        ({"metric": "noSuchMetric", "threshold": 0}, "bait.metric"),
        ({"metric": "networkCommandCount", "threshold": -1}, "bait.threshold"),
        ({"metric": "networkCommandCount", "threshold": True}, "bait.threshold"),
        ({"metric": "networkCommandCount"}, "bait.threshold"),
        ("networkCommandCount", "bait.metric"),
    ],
)
def test_read_baits_names_file_and_field_of_an_unusable_bait(
    tmp_path: Path, bait: Any, field: str
) -> None:
    write_case(tmp_path, "bad", bait=bait)
    write_case(tmp_path, "good", bait={"metric": "repeatedSearchCount", "threshold": 0})
    baits, problems = read_baits(tmp_path)
    assert list(baits) == ["good"]
    assert [(p.file, p.field) for p in problems] == [(f"{CASES}/bad/case.json", field)]


def test_the_gate_takes_no_bait_from_a_case_with_a_duplicate_key(tmp_path: Path) -> None:
    # Which of two bait declarations is meant is not for the gate to guess.
    write_case(tmp_path, "web", bait={"metric": "networkCommandCount", "threshold": 0})
    case_json = tmp_path / CASES / "web" / "case.json"
    text = case_json.read_text()
    case_json.write_text(
        text.replace('"bait":', '"bait": {"metric": "toolCallCount", "threshold": 9}, "bait":')
    )
    baits, problems = read_baits(tmp_path)
    assert baits == {}
    assert [(p.file, p.field) for p in problems] == [
        ("evals/capability/cases/web/case.json", "bait")
    ]


def test_read_baits_reports_unreadable_json_and_a_mismatched_id(tmp_path: Path) -> None:
    write_case(tmp_path, "torn", text='{"id": "torn", "bait": ')
    write_case(
        tmp_path, "moved", id="elsewhere", bait={"metric": "chainSegmentCount", "threshold": 2}
    )
    baits, problems = read_baits(tmp_path)
    assert baits == {}
    assert sorted((p.file, p.field) for p in problems) == [
        (f"{CASES}/moved/case.json", "id"),
        (f"{CASES}/torn/case.json", ""),
    ]


# --- files that are not what they seem -------------------------------------------------


def test_a_case_json_that_is_a_fifo_is_named_as_such_never_opened(root: Path) -> None:
    case = add_case(root, "alpha")
    (case / "case.json").unlink()
    os.mkfifo(case / "case.json")
    (message,) = problems_of(root)
    assert "alpha/case.json: is not a regular file (a FIFO, socket or device)" in message


def test_a_grader_linked_out_of_the_workspace_is_refused(root: Path, tmp_path_factory: Any) -> None:
    outside = tmp_path_factory.mktemp("elsewhere") / "verify.sh"
    outside.write_text("exit 0\n")
    case = add_case(root, "alpha")
    (case / "verify.sh").unlink()
    (case / "verify.sh").symlink_to(outside)
    (message,) = problems_of(root)
    assert "verify.sh is a symlink that resolves outside the workspace root" in message


def test_a_grader_linked_inside_the_workspace_is_fine(root: Path) -> None:
    shared = root / "shared-verify.sh"
    shared.write_text("exit 0\n")
    case = add_case(root, "alpha")
    (case / "verify.sh").unlink()
    (case / "verify.sh").symlink_to(shared)
    assert [c.id for c in load_cases(root)] == ["alpha"]


@pytest.mark.parametrize("what", ["case.json", "the case folder"])
def test_a_case_linked_out_of_the_workspace_is_refused(
    root: Path, tmp_path_factory: Any, what: str
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    source = add_case(elsewhere, "alpha")
    case = add_case(root, "alpha")
    if what == "case.json":
        (case / "case.json").unlink()
        (case / "case.json").symlink_to(source / "case.json")
    else:
        shutil.rmtree(case)
        case.symlink_to(source, target_is_directory=True)
    messages = problems_of(root)
    assert any("is a symlink that resolves outside the workspace root" in m for m in messages)


def test_a_case_folder_starting_with_two_dots_is_not_skipped_silently(root: Path) -> None:
    add_case(root, "alpha")
    hidden = add_case(root, "beta")
    os.rename(hidden, hidden.with_name("..beta"))
    (message,) = problems_of(root)
    assert "..beta: holds a case.json but is skipped" in message
    os.rename(hidden.with_name("..beta"), hidden.with_name("_beta"))  # set aside: fine
    assert [c.id for c in load_cases(root)] == ["alpha"]
