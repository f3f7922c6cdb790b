"""Row identity: the result key and the (variant, case, repeat) triple every reader keys on."""

from __future__ import annotations

from capeval.core.row import result_key, triple
from tests.rowfactory import result_row


def test_result_key_and_repeat_identity() -> None:
    # `resultKey` is `variantId::caseId` (docs/result-formats.md#repeat-fields); a row that names
    # no repeat is repeat 0, the first (repeats are 0-based).
    assert result_key("default:default", "simple-health") == "default:default::simple-health"
    row = result_row("a", variant="v2")
    del row["repeat"]
    assert triple(row) == ("v2", "a", 0)
    assert triple(result_row("a", 3, variant="v2")) == ("v2", "a", 3)
