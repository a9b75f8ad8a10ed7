"""A planted set with known truth: judge-style error explanations in which one category
(unit and scale mix-ups) is present in about 10% of texts, rises across checkpoints, and is
written in phrasings that share no content word. Used by the tests and the benchmark.

Two disjoint phrasing pools per category (``split="dev"`` and ``split="held_out"``): the
clustering was chosen on ``dev``; the tests check it on ``held_out``, a set it has never seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from misstep.defaults import DEFAULT_SEED

__all__ = ["PLANTED_KEY", "PlantedSet", "planted_set"]

PLANTED_KEY = "units"
"""The planted category's key in ``PlantedSet.truth``."""

_THINGS = ("apples", "tiles", "marbles", "books", "eggs", "pencils", "cookies", "bottles")

# Each category: (dev phrasings, held-out phrasings). Within the planted category no content
# word is shared between phrasings (checked by a test), so bag-of-words cannot join them.
_PHRASES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    PLANTED_KEY: (
        (
            "Converted {a} minutes to hours incorrectly.",
            "Botched the scale change from centimetres to metres.",
            "Mixed up grams with kilograms for the {t}.",
            "Wrong factor between feet and inches.",
        ),
        (
            "Turned {a} seconds into days with a bad multiplier.",
            "Confused litres and millilitres.",
            "Translated miles to kilometres improperly.",
            "Expressed the ounces in pounds the mistaken way.",
        ),
    ),
    "arithmetic": (
        (
            "Computed {a} times {b} as {c}, which is false.",
            "Added {a} and {b} and got {c}.",
            "The subtraction {a} minus {b} does not give {c}.",
        ),
        (
            "Multiplication slip: {a} by {b} is not {c}.",
            "The sum of {a} plus {b} was stated as {c}.",
            "Dividing {a} by {b} cannot yield {c}.",
        ),
    ),
    "misread": (
        (
            "Used {a} {t} but the problem states {b}.",
            "Answered the total when the question asked for the difference.",
            "Ignored the condition that each box holds {b} {t}.",
        ),
        (
            "Copied {b} {t} from the statement, yet it says {a}.",
            "Gave the amount spent while the question asked what remains.",
            "Dropped the constraint that every child gets {b} {t}.",
        ),
    ),
    "formula": (
        (
            "Applied the area of a circle as two pi r.",
            "Used the perimeter formula where the area was needed.",
            "Used simple interest where compound interest applies.",
        ),
        (
            "Took the volume of a cone without the one third factor.",
            "Applied the Pythagorean theorem to a triangle with no right angle.",
            "Used the sum of an arithmetic series with the wrong number of terms.",
        ),
    ),
    "logic": (
        (
            "Concluded the claim without any justification from the earlier steps.",
            "Assumed the two cases are identical and skipped one.",
            "The step does not follow from what came before.",
        ),
        (
            "Jumped to the result with an unsupported leap.",
            "Silently discarded the negative case of the equation.",
            "Reasoned in a circle, using the conclusion to prove itself.",
        ),
    ),
    "incomplete": (
        (
            "Stopped before computing the final answer.",
            "Left the result as an unsimplified expression.",
            "Never answered the question that was asked.",
        ),
        (
            "The solution ends midway without a conclusion.",
            "Gave no final number at the end.",
            "Abandoned the work after setting up the equation.",
        ),
    ),
}


@dataclass(frozen=True)
class PlantedSet:
    """Texts with their true category and checkpoint."""

    ids: list[str]
    texts: list[str]
    truth: list[str]
    checkpoints: list[str]
    phrasings: list[int]
    """Index of the phrasing each text was written from, within its category's pool."""


def planted_set(
    n: int,
    *,
    seed: int = DEFAULT_SEED,
    split: Literal["dev", "held_out"] = "dev",
    checkpoints: int = 4,
    share: tuple[float, float] = (0.04, 0.16),
) -> PlantedSet:
    """``n`` texts over ``checkpoints`` checkpoints; the planted category's share rises
    linearly from ``share[0]`` to ``share[1]`` (mean 10% with the defaults); the other
    categories split the rest evenly."""
    rng = np.random.default_rng(seed)
    pool = 0 if split == "dev" else 1
    others = [k for k in _PHRASES if k != PLANTED_KEY]
    shares = np.linspace(share[0], share[1], checkpoints)
    ids: list[str] = []
    texts: list[str] = []
    truth: list[str] = []
    cks: list[str] = []
    phrasings: list[int] = []
    for i in range(n):
        ck = int(rng.integers(checkpoints))
        key = PLANTED_KEY if rng.random() < shares[ck] else others[int(rng.integers(len(others)))]
        phrases = _PHRASES[key][pool]
        which = int(rng.integers(len(phrases)))
        template = phrases[which]
        a, b = int(rng.integers(2, 90)), int(rng.integers(2, 90))
        c = a * b + int(rng.integers(1, 9))
        t = _THINGS[int(rng.integers(len(_THINGS)))]
        ids.append(f"t{i}")
        texts.append(template.format(a=a, b=b, c=c, t=t))
        truth.append(key)
        cks.append(f"step{(ck + 1) * 100}")
        phrasings.append(which)
    return PlantedSet(ids=ids, texts=texts, truth=truth, checkpoints=cks, phrasings=phrasings)
