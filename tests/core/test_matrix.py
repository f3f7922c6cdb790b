"""Matrix cells by the rules of docs/running.md#the-matrix, and clear errors for incomplete cells."""

from __future__ import annotations

import pytest

from capeval.core.matrix import Variant, parse_matrix


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("scripted:oracle", [Variant("scripted:oracle", "scripted", "oracle")]),
        ("anthropic/claude-x", [Variant("anthropic:claude-x", "anthropic", "claude-x")]),
        (
            "xai/thegreataxios:grok-4.5",
            [Variant("xai/thegreataxios:grok-4.5", "xai/thegreataxios", "grok-4.5")],
        ),
        ("ollama:llama3:8b", [Variant("ollama:llama3:8b", "ollama", "llama3:8b")]),
        (
            "openrouter/meta/llama-3",
            [Variant("openrouter:meta/llama-3", "openrouter", "meta/llama-3")],
        ),
        ("old=scripted:oracle", [Variant("old", "scripted", "oracle")]),
        ("new=scripted:oracle@newbuild", [Variant("new", "scripted", "oracle", "newbuild")]),
        (
            "scripted:oracle@claude-code",
            [Variant("scripted:oracle", "scripted", "oracle", "claude-code")],
        ),
        (
            " oracle=scripted:oracle , sloppy=scripted:sloppy ,",
            [Variant("oracle", "scripted", "oracle"), Variant("sloppy", "scripted", "sloppy")],
        ),
        (
            ["a=p:m1", "b=p:m2,c=p:m3"],
            [Variant("a", "p", "m1"), Variant("b", "p", "m2"), Variant("c", "p", "m3")],
        ),
    ],
)
def test_cells(spec: str | list[str], expected: list[Variant]) -> None:
    assert parse_matrix(spec) == expected


def test_default_agent_applies_unless_the_cell_names_one() -> None:
    got = parse_matrix("p:m,q:n@other", default_agent="main")
    assert [v.agent for v in got] == ["main", "other"]


def test_provider_and_model_flags_fill_a_missing_side() -> None:
    assert parse_matrix("oracle,sloppy", provider="scripted") == [
        Variant("scripted:oracle", "scripted", "oracle"),
        Variant("scripted:sloppy", "scripted", "sloppy"),
    ]
    assert parse_matrix("openai,azure", model="gpt-x")[1] == Variant(
        "azure:gpt-x", "azure", "gpt-x"
    )
    assert parse_matrix("scripted:", model="oracle")[0].model == "oracle"
    assert parse_matrix(":oracle", provider="scripted")[0].provider == "scripted"
    assert parse_matrix("", provider="p", model="m") == [Variant("p:m", "p", "m")]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("oracle", "matrix cell 'oracle' has no provider: write provider:model"),
        ("scripted:", "matrix cell 'scripted:' has no model"),
        (":oracle", "has no provider"),
        ("=p:m", "empty label"),
        ("p:m@", "is not an agent name"),
        ("p:m,p:m", "both have variant id 'p:m'; give one a label"),
        ("", "empty matrix"),
    ],
)
def test_errors(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        parse_matrix(spec)


def test_variant_json_is_the_v3_variants_entry() -> None:
    assert Variant("old", "p", "m", "a").to_json() == {"id": "old", "provider": "p", "model": "m"}


def test_an_equals_sign_after_the_provider_is_part_of_the_model_not_a_label() -> None:
    from capeval.core.matrix import parse_cell

    v = parse_cell("openai:gpt=5")
    assert (v.id, v.provider, v.model) == ("openai:gpt=5", "openai", "gpt=5")


def test_only_the_last_at_sign_names_the_agent() -> None:
    from capeval.core.matrix import parse_cell

    v = parse_cell("vertex:claude@2025@claude-code")
    assert (v.provider, v.model, v.agent) == ("vertex", "claude@2025", "claude-code")


def test_an_empty_matrix_with_one_side_given_is_refused() -> None:
    from capeval.core.matrix import parse_matrix

    with pytest.raises(ValueError, match="empty matrix"):
        parse_matrix(None, provider="anthropic")
    with pytest.raises(ValueError, match="empty matrix"):
        parse_matrix((), model="claude-x")
