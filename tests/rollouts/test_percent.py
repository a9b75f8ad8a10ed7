"""Percentages follow the Qwen2.5-Math / ToRA harnesses' ``math_equal``, checked pair by pair.

``_harness_equal`` restates that rule independently (QwenLM/Qwen2.5-Math evaluation/grader.py,
``parse_digits`` and ``is_numerical_equal``): a prediction ending in ``%`` (or ``\\%``) is its
number over 100; it equals a reference ``r`` when it is within a relative 1e-4 of ``r / 100``,
``r`` or ``100 r``, the reference read the same way. misstep takes the two factors that a
percentage stands for (``p%`` is ``p`` or ``p / 100``) and not the third (``0.005`` is not ``50``
for misstep, nor ``0.05`` for a gold ``5``), so the answers below avoid factor-100 coincidences
between two plain numbers; every pair with a percentage on one side must agree with the harness.
"""

from __future__ import annotations

import itertools
import math

import pytest

from misstep.rollouts import answers_equivalent, canonical_key
from misstep.rollouts._equivalence import _fp_verdict, cheap_fingerprint

_ANSWERS = [
    "50", "50.0\\%", "50\\%", "0.5", "50.0%", "12.5\\%", "0.125", "12.5", "12\\%", "12",
    "33.33\\%", "0.3333", "0.333333", "7", "7.0\\%", "0.07", "150\\%", "1.5", "150",
]  # fmt: skip


def _digits(text: str) -> float | None:
    text = text.replace(",", "")
    try:
        return float(text)
    except ValueError:
        pass
    if text.endswith("%"):
        text = text[:-1].removesuffix("\\")
        try:
            return float(text) / 100
        except ValueError:
            return None
    return None


def _harness_equal(prediction: str, reference: str) -> bool | None:
    """The harness's numeric verdict, or None where its numeric rule does not apply."""
    pred, ref = _digits(prediction), _digits(reference)
    if pred is None or ref is None:
        return None
    return any(math.isclose(pred, r, rel_tol=1e-4) for r in (ref / 100, ref, ref * 100))


# pairs of two plain numbers follow the decimal rule, not this one
_PAIRS = [(g, a) for g, a in itertools.permutations(_ANSWERS, 2) if "%" in g + a]


def test_percentages_match_math_equal() -> None:
    # decided from the keys and fingerprints alone: no math-verify call is needed for these
    for gold, answer in _PAIRS:
        expected = _harness_equal(answer, gold)
        assert expected is not None, (gold, answer)
        ka, kb = canonical_key(gold), canonical_key(answer)
        fa, fb = cheap_fingerprint(ka), cheap_fingerprint(kb)
        assert fa is not None and fb is not None, (gold, answer)
        assert (ka == kb or _fp_verdict(fa, fb)) == expected, (gold, answer)


@pytest.mark.parametrize(
    ("gold", "answer", "equal"),
    [
        # the source's failures of issue 27: \boxed{50.0\%} against gold 50 (hand: 50.0 = 50)
        ("50", "50.0\\%", True),
        ("50", "0.5", False),  # no percentage: the harness's 100x leniency is not taken
        ("5", "0.05", False),
        ("50\\%", "5000", False),  # 5000 is neither 50 nor 0.5
        ("x", "50\\%", False),
    ],
)
def test_percentage_edges(gold: str, answer: str, equal: bool) -> None:
    assert answers_equivalent(gold, answer) is equal
