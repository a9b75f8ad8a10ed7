"""The per-trace bounds of the one exchange: the step range and the free-text bounds that fit
the token budget (hand-worked values)."""

from __future__ import annotations

from typing import Any

from misstep.judge import bounded_schema, label_json_schema
from misstep.judge._exchange import FIXED_REPLY_TOKENS, MIN_STRING_CHARS
from misstep.taxonomy import load_taxonomy

SCHEMA = label_json_schema(load_taxonomy(None))


def _lengths(schema: dict[str, Any]) -> tuple[int, int]:
    props = schema["properties"]
    return props["evidence"]["maxLength"], props["explanation"]["maxLength"]


def test_the_bounds_stay_when_the_budget_holds_them() -> None:
    assert _lengths(SCHEMA) == (300, 400)
    # 300 + 400 + 64 = 764 tokens: a budget of 764 or more leaves them as they are
    assert _lengths(bounded_schema(SCHEMA, 5, max_tokens=764)) == (300, 400)
    assert _lengths(bounded_schema(SCHEMA, 5, max_tokens=1024)) == (300, 400)
    assert _lengths(bounded_schema(SCHEMA, 5)) == (300, 400)


def test_a_small_budget_shrinks_them_in_proportion() -> None:
    assert FIXED_REPLY_TOKENS == 64 and MIN_STRING_CHARS == 20
    # 256 tokens: 192 for the strings, split 300:400 -> 82 and 109 characters (rounded down)
    assert _lengths(bounded_schema(SCHEMA, 5, max_tokens=256)) == (82, 109)
    # 512: 448 -> 192 and 256
    assert _lengths(bounded_schema(SCHEMA, 5, max_tokens=512)) == (192, 256)
    # 763: 699 -> 299 and 399
    assert _lengths(bounded_schema(SCHEMA, 5, max_tokens=763)) == (299, 399)
    # a budget too small for anything keeps the floor
    assert _lengths(bounded_schema(SCHEMA, 5, max_tokens=50)) == (20, 20)


def test_the_step_range_and_the_base_schema_untouched() -> None:
    bounded = bounded_schema(SCHEMA, 4, max_tokens=256)
    step = bounded["properties"]["first_error_step"]
    assert (step["minimum"], step["maximum"]) == (0, 3)
    assert _lengths(SCHEMA) == (300, 400)  # a copy was bounded, not the schema itself
    assert "maximum" not in SCHEMA["properties"]["first_error_step"]
