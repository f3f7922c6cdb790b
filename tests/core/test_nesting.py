"""The one nesting limit every reader of a user's document applies."""

from __future__ import annotations

from typing import Any

import pytest

from capeval.core.nesting import MAX_DEPTH, too_deep


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


@pytest.mark.parametrize("depth", [0, 1, MAX_DEPTH - 1, MAX_DEPTH])
def test_up_to_the_limit_is_fine(depth: int) -> None:
    assert not too_deep(nested(depth))


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5000])
def test_past_the_limit_is_too_deep_without_recursing(depth: int) -> None:
    assert too_deep(nested(depth))


def test_scalars_and_wide_values_are_not_deep() -> None:
    assert not too_deep("text") and not too_deep(None)
    assert not too_deep({str(i): [i] * 100 for i in range(1000)})
