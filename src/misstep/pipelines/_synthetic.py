"""A **synthetic** RL run for demos and tests: no model wrote these traces, a seeded script did.

``make_synthetic_run(path)`` writes a JSONL file of rollouts in misstep's input shape: several
checkpoints (``global_step_100``, ``global_step_200``, ... with ``step``), two datasets
(``arith``: integer word problems; ``fractions``: answers that are fractions), 16 samples per
problem, gold answers, and responses of a few step-by-step lines with explicit calculations
(``12 × 5 = 60``) ending in ``\\boxed{...}``. Equivalent answers come in varied forms
(``\\frac{3}{2}``, ``\\dfrac{3}{2}``, ``3/2``, ``1.5``, ``\\dfrac32``), some responses are wrapped
in ``<think>...</think>``, and a few are cut at the length limit (``finish_reason: "length"``).

The planted cause, for the whole chain to find: pass@1 rises across checkpoints, but from
``planted_step`` on (default step 400) a share of problems acquires one consistent wrong answer,
produced by traces that contain an explicit arithmetic slip (a wrong calculation line such as
``17 × 3 = 41``, which a rules judge re-checking ``a op b = c`` flags); on those problems the
slip outnumbers the right answer, so maj@k falls below pass@1 (sc_gain@16 < 0) there. Other
wrong traces make no checkable arithmetic mistake: they misread a quantity and compute
correctly with the wrong number, and their answers scatter.
"""

from __future__ import annotations

import gzip
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import IO

from misstep.defaults import DEFAULT_SEED

__all__ = [
    "SYNTHETIC_PLANTED_ERROR_TYPE",
    "SYNTHETIC_PLANTED_STEP",
    "make_synthetic_run",
]

SYNTHETIC_PLANTED_STEP = 400
"""Default first training step at which the planted consistent wrong answers appear."""
SYNTHETIC_PLANTED_ERROR_TYPE = "arithmetic"
"""Taxonomy key of the error type that carries the planted wrong answers."""

_MODEL = "synthetic-policy-1.5b"
# Mean accuracy of unaffected problems per checkpoint, on a convex ramp over the run (progress
# ** 1.5): low early, fast late, so pass@1 keeps rising where the planted problems drag voting.
_ACCURACY_START, _ACCURACY_END, _RAMP = 0.26, 0.93, 2.0
# Sample mix of a planted problem from the planted step on: the slip wins the vote.
_PLANTED_SLIP, _PLANTED_CORRECT = 0.64, 0.34
_TRUNCATION_RATE = 0.04


@dataclass(frozen=True)
class _Problem:
    dataset: str
    problem_id: str
    text: str
    gold: Fraction
    # (numbers, slip) -> (reasoning lines, answer). ``slip`` adds to the first product.
    solve: Callable[[tuple[int, ...], int], tuple[list[str], Fraction]]
    numbers: tuple[int, ...]
    difficulty: float


def _fmt_int(value: Fraction) -> str:
    return str(value.numerator)


def _answer_forms(value: Fraction, rng: random.Random) -> str:
    """One of several equivalent LaTeX spellings of ``value``."""
    if value.denominator == 1:
        return rng.choice([_fmt_int(value)] * 4 + [f"{value.numerator}.0"])
    p, q = value.numerator, value.denominator
    forms = [rf"\frac{{{p}}}{{{q}}}", rf"\dfrac{{{p}}}{{{q}}}", f"{p}/{q}"]
    if 0 < p < 10 and q < 10:
        forms.append(rf"\dfrac{p}{q}")
    twos_fives = q
    for factor in (2, 5):
        while twos_fives % factor == 0:
            twos_fives //= factor
    if twos_fives == 1:
        forms.append(str(p / q))
    return rng.choice(forms)


def _frac_tex(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return rf"\frac{{{value.numerator}}}{{{value.denominator}}}"


def _pack(numbers: tuple[int, ...], slip: int) -> tuple[list[str], Fraction]:
    a, b, c = numbers
    total = a * b + slip
    rest = total - c
    return [
        f"The shop starts with {a} boxes of {b} pencils each.",
        f"Total pencils: {a} × {b} = {total}.",
        f"After selling {c} pencils: {total} - {c} = {rest}.",
    ], Fraction(rest)


def _read(numbers: tuple[int, ...], slip: int) -> tuple[list[str], Fraction]:
    a, b, c = numbers
    pages = b + c
    total = a * pages + slip
    return [
        f"Each student reads {b} pages on Monday and {c} pages on Tuesday.",
        f"Pages per student: {b} + {c} = {pages}.",
        f"All {a} students together: {a} × {pages} = {total}.",
    ], Fraction(total)


def _orchard(numbers: tuple[int, ...], slip: int) -> tuple[list[str], Fraction]:
    a, b, c = numbers
    trees = a * b + slip
    return [
        f"There are {a} rows with {b} trees in each row.",
        f"Trees in the rows: {a} × {b} = {trees}.",
        f"Adding the {c} new trees: {trees} + {c} = {trees + c}.",
    ], Fraction(trees + c)


def _recipe(numbers: tuple[int, ...], slip: int) -> tuple[list[str], Fraction]:
    a, b, c = numbers
    top = a * c + slip
    value = Fraction(top, b)
    lines = [
        rf"Each batch needs $\frac{{{a}}}{{{b}}}$ cup of sugar.",
        f"For {c} batches the numerator is {a} × {c} = {top}.",
    ]
    if value.denominator != b:
        lines.append(rf"So we need $\frac{{{top}}}{{{b}}} = {_frac_tex(value)}$ cups.")
    else:
        lines.append(rf"So we need ${_frac_tex(value)}$ cups.")
    return lines, value


def _runner(numbers: tuple[int, ...], slip: int) -> tuple[list[str], Fraction]:
    a, b, c, d = numbers
    run = a * c + slip
    top = run + d
    value = Fraction(top, b)
    return [
        rf"Running covers $\frac{{{a}}}{{{b}}}$ km per minute for {c} minutes.",
        f"Numerators: {a} × {c} = {run}, and the walk adds {d}: {run} + {d} = {top}.",
        rf"The distance is $\frac{{{top}}}{{{b}}}$ km, that is ${_frac_tex(value)}$ km.",
    ], value


def _make_problems(dataset: str, count: int, rng: random.Random) -> list[_Problem]:
    problems: list[_Problem] = []
    while len(problems) < count:
        index = len(problems)
        problem_id = f"{dataset}-{index:03d}"
        kind = index % 3 if dataset == "arith" else index % 2
        numbers: tuple[int, ...]
        solve: Callable[[tuple[int, ...], int], tuple[list[str], Fraction]]
        if dataset == "arith":
            a, b, c = rng.randint(3, 19), rng.randint(4, 24), rng.randint(2, 30)
            numbers = (a, b, c)
            if kind == 0:
                if a * b <= c:
                    continue
                solve = _pack
                text = (
                    f"A shop packs {a} boxes with {b} pencils in each box, then sells {c} "
                    "pencils. How many pencils are left?"
                )
            elif kind == 1:
                solve = _read
                text = (
                    f"{a} students each read {b} pages on Monday and {c} pages on Tuesday. "
                    "How many pages did they read altogether?"
                )
            else:
                solve = _orchard
                text = (
                    f"An orchard has {a} rows of {b} trees, and the farmer plants {c} more "
                    "trees. How many trees are there now?"
                )
        else:
            b = rng.choice([2, 3, 4, 5, 6, 8, 10])
            a = rng.randint(1, b - 1)
            c = rng.randint(2, 9)
            if kind == 0:
                numbers = (a, b, c)
                if (a * c) % b == 0:
                    continue
                solve = _recipe
                text = (
                    f"A recipe uses $\\frac{{{a}}}{{{b}}}$ cup of sugar per batch. How many "
                    f"cups of sugar are needed for {c} batches?"
                )
            else:
                d = rng.randint(1, b - 1)
                numbers = (a, b, c, d)
                if (a * c + d) % b == 0:
                    continue
                solve = _runner
                text = (
                    f"A runner covers $\\frac{{{a}}}{{{b}}}$ km every minute for {c} minutes, "
                    f"then walks $\\frac{{{d}}}{{{b}}}$ km. How far does she go in total, in km?"
                )
        _, gold = solve(numbers, 0)
        problems.append(
            _Problem(dataset, problem_id, text, gold, solve, numbers, rng.gauss(0.0, 1.1))
        )
    return problems


def _misread(numbers: tuple[int, ...], rng: random.Random) -> tuple[int, ...]:
    """The same problem with one quantity read wrong (never the fraction's denominator)."""
    changed = list(numbers)
    slot = rng.choice([i for i in range(len(numbers)) if len(numbers) == 3 or i != 1])
    if len(numbers) == 3 and slot == 1 and numbers[1] <= 10:
        slot = 2  # b is the denominator in the fraction templates: keep it.
    old = changed[slot]
    swapped = int(str(old)[::-1]) if old >= 10 and old % 10 else None
    while changed[slot] == old or changed[slot] <= 0:
        changed[slot] = swapped if swapped and rng.random() < 0.4 else old + rng.randint(-3, 3)
    return tuple(changed)


def _slip_size(problem: _Problem, rng: random.Random) -> int:
    # Upward slips only: a fraction's numerator must stay positive.
    return rng.choice([1, 2, 10, problem.numbers[0]])


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def _response(
    lines: list[str], answer: Fraction, rng: random.Random, *, truncated: bool
) -> tuple[str, list[str]]:
    steps = list(lines)
    if truncated:
        cut = steps[: rng.randint(1, len(steps))]
        last = cut[-1]
        cut[-1] = last[: max(8, len(last) // 2)]
        body = "\n\n".join(cut)
        return ("<think>\n" + body if rng.random() < 0.3 else body), cut
    final = rng.choice(
        [
            r"The answer is $\boxed{%s}$.",
            r"So the final answer is \boxed{%s}.",
            r"Therefore, the result is $\boxed{%s}$.",
        ]
    ) % _answer_forms(answer, rng)
    steps.append(final)
    if rng.random() < 0.3:
        return "<think>\n" + "\n\n".join(lines) + "\n</think>\n\n" + final, steps
    return "\n\n".join(steps), steps


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "wt", encoding="utf-8")
    return path.open("w", encoding="utf-8")


def make_synthetic_run(
    out_path: str | Path,
    *,
    seed: int = DEFAULT_SEED,
    n_checkpoints: int = 5,
    problems_per_dataset: int = 40,
    samples_per_problem: int = 16,
    planted_step: int | None = SYNTHETIC_PLANTED_STEP,
    planted_share: float = 0.65,
) -> Path:
    """Write a synthetic RL run (JSONL, ``.gz`` when the name ends so) and return its path.

    Checkpoints are ``global_step_{100 i}`` with ``step = 100 i`` for i = 1..n_checkpoints.
    ``planted_step=None`` writes a run with no planted cause (no consistent wrong answers).
    The same arguments always write the same file.
    """
    if n_checkpoints < 1 or problems_per_dataset < 1 or samples_per_problem < 1:
        raise ValueError("n_checkpoints, problems_per_dataset and samples_per_problem must be >= 1")
    if not 0.0 <= planted_share <= 1.0:
        raise ValueError(f"planted_share must be within [0, 1], got {planted_share}")
    rng = random.Random(seed)
    problems = [
        p
        for dataset in ("arith", "fractions")
        for p in _make_problems(dataset, problems_per_dataset, rng)
    ]
    # The planted cause hits the hardest problems: RL lifts their accuracy a little but also
    # teaches a shortcut with one wrong calculation, so the slip outvotes the right answer.
    by_difficulty = sorted(problems, key=lambda p: p.difficulty, reverse=True)
    planted = {p.problem_id for p in by_difficulty[: round(planted_share * len(problems))]}
    slips = {p.problem_id: _slip_size(p, rng) for p in problems}
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with _open(out) as handle:
        for i in range(n_checkpoints):
            step = 100 * (i + 1)
            progress = i / max(n_checkpoints - 1, 1)
            mean = _ACCURACY_START + (_ACCURACY_END - _ACCURACY_START) * progress**_RAMP
            harmful = planted_step is not None and step >= planted_step
            for problem in problems:
                accuracy = _sigmoid(_logit(mean) - problem.difficulty)
                for sample_idx in range(samples_per_problem):
                    row = _sample(
                        problem, accuracy, harmful and problem.problem_id in planted, slips, rng
                    )
                    row.update(
                        checkpoint=f"global_step_{step}",
                        step=step,
                        sample_idx=sample_idx,
                    )
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return out


def _sample(
    problem: _Problem,
    accuracy: float,
    planted: bool,
    slips: dict[str, int],
    rng: random.Random,
) -> dict[str, object]:
    truncated = rng.random() < _TRUNCATION_RATE
    draw = rng.random()
    numbers, slip = problem.numbers, 0
    if planted:
        if draw < _PLANTED_SLIP:
            slip = slips[problem.problem_id]  # the one consistent wrong answer
        elif draw >= _PLANTED_SLIP + _PLANTED_CORRECT:
            numbers = _misread(problem.numbers, rng)
    elif draw >= accuracy:
        if rng.random() < 0.75:
            numbers = _misread(problem.numbers, rng)
        else:
            # Scattered slips: a different wrong product each time, no consistent answer.
            slip = rng.randint(1, 12)
            if problem.dataset == "arith" and rng.random() < 0.5:
                slip = -slip
    lines, answer = problem.solve(numbers, slip)
    response, steps = _response(lines, answer, rng, truncated=truncated)
    return {
        "dataset": problem.dataset,
        "problem_id": problem.problem_id,
        "problem": problem.text,
        "gold_answer": _frac_tex(problem.gold),
        "response": response,
        "steps": steps,
        "finish_reason": "length" if truncated else "stop",
        "num_tokens": len(response) // 4 + 12,
        "model": _MODEL,
    }
