"""Synthetic rollouts for the grading benchmark (synthetic: no model wrote these).

``write_traces(path, n, seed)`` writes ``n`` JSONL traces: 8 checkpoints, 64 samples per problem
per checkpoint, step-by-step responses of about 1,500 to 2,500 characters ending in a boxed
answer written in one of several equivalent LaTeX forms (``\\frac{1}{2}``, ``0.5``, ``1/2``,
``\\dfrac12``; ``\\sqrt{2}/2`` vs ``\\frac{\\sqrt{2}}{2}``), three wrong answers per problem,
about 3% of responses cut at the length limit and 2% without a final answer.
"""

from __future__ import annotations

import random
from pathlib import Path

import orjson

CHECKPOINTS = 8
SAMPLES = 64

_SENTENCES = [
    "First, we rewrite the expression by collecting like terms on the left-hand side.",
    "Substituting the value we found into the second equation gives a linear relation.",
    "We check the boundary case separately, since the formula above assumes n > 1.",
    "Multiplying both sides by the common denominator removes the fractions.",
    "By the triangle inequality the remaining side must lie strictly between the others.",
    "Expanding the square and simplifying, the cross terms cancel in pairs.",
    "Hence the sum telescopes and only the first and the last terms remain.",
    "Taking the derivative and setting it to zero locates the only critical point.",
]


def _forms(kind: int, a: int, b: int) -> tuple[str, list[str]]:
    """The gold answer and several equivalent ways to write it."""
    if kind == 0:
        return str(a), [str(a), f"{a}.0", f"x = {a}"]
    if kind == 1:
        value = a / b
        forms = [f"\\frac{{{a}}}{{{b}}}", f"{a}/{b}", f"\\dfrac{{{a}}}{{{b}}}"]
        if len(repr(value)) < 8:
            forms.append(repr(value))
        return f"\\frac{{{a}}}{{{b}}}", forms
    return f"\\frac{{\\sqrt{{{a}}}}}{{{b}}}", [
        f"\\frac{{\\sqrt{{{a}}}}}{{{b}}}",
        f"\\sqrt{{{a}}}/{b}",
        f"\\dfrac{{\\sqrt{{{a}}}}}{{{b}}}",
    ]


def _problem(rng: random.Random) -> tuple[str, list[list[str]]]:
    kind = rng.choice((0, 0, 1, 2))
    primes = (2, 3, 5, 6, 7, 10, 11)
    a = rng.choice(primes) if kind == 2 else rng.randint(1, 999)
    b = rng.randint(2, 9)
    gold, right = _forms(kind, a, b)
    wrong = []
    for shift in (1, 2, 3):
        wrong.append(
            _forms(kind, a + shift if kind != 2 else primes[(primes.index(a) + shift) % 7], b)[1]
        )
    return gold, [right, *wrong]


def _body(rng: random.Random) -> str:
    parts = []
    size = rng.randint(1_500, 2_500)
    total = 0
    step = 1
    while total < size:
        text = f"Step {step}: {rng.choice(_SENTENCES)} We get {rng.randint(2, 999)}.\n"
        parts.append(text)
        total += len(text)
        step += 1
    return "".join(parts)


def write_traces(path: Path, n: int, seed: int = 0) -> int:
    """Write ``n`` synthetic traces to ``path`` (JSONL); returns the number of problems."""
    rng = random.Random(seed)
    per_problem = CHECKPOINTS * SAMPLES
    n_problems = max(1, -(-n // per_problem))
    problems = [_problem(rng) for _ in range(n_problems)]
    bodies = [_body(rng) for _ in range(256)]  # reused: generation is not what is timed
    written = 0
    with path.open("wb") as fh:
        for ck in range(CHECKPOINTS):
            accuracy = 0.3 + 0.05 * ck
            for p, (gold, classes) in enumerate(problems):
                for s in range(SAMPLES):
                    if written >= n:
                        return n_problems
                    roll = rng.random()
                    body = bodies[rng.randrange(256)]
                    finish = "stop"
                    if roll < 0.03:
                        response, finish = body[: rng.randint(800, 1_400)], "length"
                    elif roll < 0.05:
                        response = body + "I could not finish the computation."
                    else:
                        group = classes[0] if rng.random() < accuracy else rng.choice(classes[1:])
                        response = (
                            body
                            + f"Therefore the final answer is $\\boxed{{{rng.choice(group)}}}$."
                        )
                    row = {
                        "problem_id": f"p{p}",
                        "checkpoint": f"global_step_{(ck + 1) * 100}",
                        "step": (ck + 1) * 100,
                        "dataset": "synthetic",
                        "sample_idx": s,
                        "response": response,
                        "gold_answer": gold,
                        "finish_reason": finish,
                    }
                    fh.write(orjson.dumps(row) + b"\n")
                    written += 1
    return n_problems
