"""Canonical keys: equivalent simple forms share one key, different ones do not."""

from __future__ import annotations

from fractions import Fraction

import pytest

from misstep.rollouts import canonical_key
from misstep.rollouts._normalize import exact_rational, normalize_answer


@pytest.mark.parametrize(
    "forms",
    [
        ["\\frac12", "\\frac{1}{2}", "1/2", "0.5", "\\dfrac12", "\\tfrac{1}{2}", "$0.50$", ".5"],
        ["7", "7.0", "x = 7", "\\left{7\\right}", "{7}", "7."],
        ["1000", "1,000", "1{,}000", "1000.00"],
        ["-\\frac{3}{4}", "-3/4", "-0.75", "\\frac{-3}{4}"],
        ["30", "30^\\circ", "30^{\\circ}"],
        ["\\sqrt{2}", "\\sqrt{2} ", "$\\sqrt{2}$", "\\!\\sqrt{2}"],
        ["5\\text{ cm}", "5cm"],
    ],
)
def test_equivalent_forms_share_a_key(forms: list[str]) -> None:
    assert len({canonical_key(f) for f in forms}) == 1


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("1/2", "1/3"),
        ("0.333333", "1/3"),  # exact rationals: 333333/1000000 != 1/3
        ("1,2", "12"),  # not a thousands separator: a pair
        ("\\sqrt{2}/2", "\\frac{\\sqrt{2}}{2}"),  # left to math-verify
        ("50\\%", "50"),  # percent is left to math-verify
    ],
)
def test_different_forms_get_different_keys(a: str, b: str) -> None:
    assert canonical_key(a) != canonical_key(b)


def test_key_shapes() -> None:
    assert canonical_key("0.5") == "q:1/2"
    assert canonical_key("-6/4") == "q:-3/2"  # 6/4 = 3/2
    assert canonical_key("\\pi") == "s:\\pi"
    assert exact_rational("1/0") is None
    assert exact_rational("2.25") == Fraction(9, 4)  # 225/100 = 9/4
    assert normalize_answer("y_1 = 3 + x") == "3+x"


def test_never_evaluates_text() -> None:
    # looks like code: it stays a text key
    assert canonical_key("__import__('os')") == "w:__import__('os')"  # text, as it was
