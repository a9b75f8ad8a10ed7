"""Synthetic rollouts for the grading benchmark, with the answer diversity of a real RL run
(synthetic: no model wrote these).

``write_traces(path, n, seed)`` writes ``n`` JSONL traces: 8 checkpoints, 64 samples per problem
per checkpoint (512 per problem), step-by-step responses of about 1,500 to 2,500 characters
ending in a boxed answer; about 3% of responses are cut at the length limit and 3% end without
a final answer. What the answers look like was measured on the shared Reasoning Gym run
(7,000 traces, 70 problems; ``DIVERSITY`` below):

- 40.7 distinct answers per 100 samples of a problem, 73% of them written once: here each
  sample is, with probability ``P_FRESH``, a freshly drawn answer (mostly seen once), else the
  correct answer (in one of its equivalent LaTeX forms) or one of the problem's popular wrong
  answers (Zipf-weighted);
- the kinds of distinct answers: integers 66.5%, other arithmetic with a rational value
  (``3+4``, ``2^3\\cdot 5``) 10.5%, fractions 9.8%, decimals 5.1%, radicals 4.1%, forms that only
  math-verify can read (equations with variables, sets, intervals, percentages, functions
  without brackets) 2.4%, words 1.2%, pi and trigonometry 0.5%.
"""

from __future__ import annotations

import random
from pathlib import Path

import orjson

CHECKPOINTS = 8
SAMPLES = 64
P_FRESH = 0.31
"""Share of samples that write a fresh answer (gives about 41 distinct answers per 100)."""
DIVERSITY = {
    "integer": 0.665,
    "arithmetic": 0.105,
    "fraction": 0.098,
    "decimal": 0.051,
    "radical": 0.041,
    "math_verify_only": 0.024,
    "words": 0.012,
    "pi_trig": 0.005,
}
"""Kinds of distinct answers and their shares on the shared Reasoning Gym run."""

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
_WORDS = ["no solution", "infinite", "undefined", "none", "all real numbers", "impossible"]


def _answer(rng: random.Random, kind: str) -> str:
    """One answer of the given kind, with fresh numbers."""
    a, b, c = rng.randint(1, 999), rng.randint(2, 60), rng.randint(1, 99)
    if kind == "integer":
        return str(rng.choice((a, c, a * b, -c)))
    if kind == "arithmetic":
        return rng.choice(
            (f"{a} + {c}", f"{c}^2 + {b}", f"2^{{{b % 12}}} \\cdot {c}", f"{a} - {b} = {a - b}")
        )
    if kind == "fraction":
        return rng.choice((f"\\frac{{{a}}}{{{b}}}", f"{a}/{b}", f"\\dfrac{{{c}}}{{{b}}}"))
    if kind == "decimal":
        return f"{a / b:.{rng.choice((1, 2, 3, 4))}f}"
    if kind == "radical":
        return rng.choice(
            (
                f"{c}\\sqrt{{{b}}}",
                f"\\frac{{{c}\\sqrt{{{b}}}}}{{{rng.randint(2, 9)}}}",
                f"\\sqrt{{{a}}}",
            )
        )
    if kind == "math_verify_only":
        return rng.choice(
            (
                f"{c} \\tan {b} \\cdot \\pi",
                f"\\{{{c}, {b}\\}}",
                f"[{c}, {a})",
                f"{c}\\%",
                f"x^2 + {b}x = {c}",
                f"\\log_{{2}} {a}",
            )
        )
    if kind == "words":
        return rng.choice((rng.choice(_WORDS), f"{c} hours and {b} minutes"))
    return rng.choice((f"{c}\\pi", f"\\frac{{{c}\\pi}}{{{b}}}", f"{c}\\cos({b})"))


def _kind(rng: random.Random) -> str:
    return rng.choices(list(DIVERSITY), weights=list(DIVERSITY.values()))[0]


def _forms(value: tuple[int, int]) -> list[str]:
    """Equivalent ways to write a rational gold answer p/q."""
    p, q = value
    if q == 1:
        return [str(p), f"{p}.0", f"x = {p}", f"\\text{{{p}}}", f"{p}"]
    return [f"\\frac{{{p}}}{{{q}}}", f"{p}/{q}", f"\\dfrac{{{p}}}{{{q}}}", f"\\frac{{{p}}}{{{q}}}"]


class _Problem:
    def __init__(self, rng: random.Random) -> None:
        p = rng.randint(1, 999)
        q = 1 if rng.random() < 0.8 else rng.randint(2, 9)
        self.gold = str(p) if q == 1 else f"\\frac{{{p}}}{{{q}}}"
        self.right = _forms((p, q))
        self.accuracy = rng.uniform(0.02, 0.6)
        self.popular = [_answer(rng, _kind(rng)) for _ in range(rng.randint(4, 12))]
        self.weights = [1 / (i + 1) for i in range(len(self.popular))]

    def sample(self, rng: random.Random, shift: float) -> str:
        roll = rng.random()
        if roll < min(0.95, self.accuracy + shift):
            return rng.choice(self.right)
        if rng.random() < P_FRESH / (1 - self.accuracy):
            return _answer(rng, _kind(rng))
        return rng.choices(self.popular, weights=self.weights)[0]


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
    problems = [_Problem(rng) for _ in range(n_problems)]
    bodies = [_body(rng) for _ in range(256)]  # reused: generation is not what is timed
    written = 0
    with path.open("wb") as fh:
        for ck in range(CHECKPOINTS):
            shift = 0.02 * ck
            for p, problem in enumerate(problems):
                for s in range(SAMPLES):
                    if written >= n:
                        return n_problems
                    roll = rng.random()
                    body = bodies[rng.randrange(256)]
                    finish = "stop"
                    if roll < 0.03:
                        response, finish = body[: rng.randint(800, 1_400)], "length"
                    elif roll < 0.06:
                        response = body + "I could not finish the computation."
                    else:
                        answer = problem.sample(rng, shift)
                        response = body + f"Therefore the final answer is $\\boxed{{{answer}}}$."
                    row = {
                        "problem_id": f"p{p}",
                        "checkpoint": f"global_step_{(ck + 1) * 100}",
                        "step": (ck + 1) * 100,
                        "dataset": "synthetic",
                        "sample_idx": s,
                        "response": response,
                        "gold_answer": problem.gold,
                        "finish_reason": finish,
                    }
                    fh.write(orjson.dumps(row) + b"\n")
                    written += 1
    return n_problems
