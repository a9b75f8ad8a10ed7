"""Answers made of elements (tuples, intervals, sets, lists) compared without math-verify."""

from __future__ import annotations

import logging
import math

import pytest

from misstep.rollouts import canonical_key
from misstep.rollouts._equivalence import (
    ProblemTask,
    _fp_verdict,
    answer_needs_math_verify,
    cheap_fingerprint,
    solve_here,
)
from misstep.rollouts._structure import parse_structure, parse_union


def _verdict(a: str, b: str) -> bool | None:
    """misstep's verdict without math-verify, or None (then math-verify is asked)."""
    ka, kb = canonical_key(a), canonical_key(b)
    if ka == kb:
        return True
    fa, fb = cheap_fingerprint(ka), cheap_fingerprint(kb)
    if fa is None or fb is None:
        return None
    return _fp_verdict(fa, fb)


@pytest.mark.parametrize(
    ("body", "skeleton", "atoms", "flat"),
    [
        ("(1,2)", "(#,#)", ("1", "2"), False),
        ("[0,3)", "[#,#)", ("0", "3"), False),
        ("\\{1,2\\}", "\\{#,#\\}", ("1", "2"), True),
        ("1,2;5", "#,#,#", ("1", "2", "5"), True),
        ("(1,1),(3,3)", "(#,#),(#,#)", ("1", "1", "3", "3"), False),
        ("a=\\frac{2}{5},b=10", "#=#,#=#", ("a", "\\frac{2}{5}", "b", "10"), False),
        # a bracket without a comma inside is part of an atom
        ("(4,\\log_{10}(2))", "(#,#)", ("4", "\\log_{10}(2)"), False),
    ],
)
def test_parse_structure(body: str, skeleton: str, atoms: tuple[str, ...], flat: bool) -> None:
    got = parse_structure(body)
    assert got is not None
    assert (got.skeleton, got.atoms, got.flat) == (skeleton, atoms, flat)


@pytest.mark.parametrize(
    "body",
    ["5", "(5)", "\\{5\\}", "(1,2)\\cup(3,4)", "\\pm1,\\pm7", "1\\leqx<3", "(1,2", "1,,2", "8%"],
)
def test_parse_structure_leaves_other_forms_to_math_verify(body: str) -> None:
    # one element, {5} (math-verify's 5), unions, ±, inequalities, unbalanced, empty element
    assert parse_structure(body) is None


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("(1, 2)", "\\left(1, 2\\right)", True),  # the same key
        ("(\\frac{1}{3}, -2, 5)", "(1/3, -2, 5)", True),  # same skeleton, atoms equal
        ("1, 2", "\\{2, 1\\}", True),  # lists and sets compare as sets
        ("\\frac{1}{2}, 3", "0.5, 3", True),
        ("(5, \\infty)", "(5, 6)", False),  # 6 has no partner
        ("1, 3", "1, 4", False),
        ("(1,2),(3,4)", "(1,2),(3,5)", False),
        ("0.333, 1", "\\frac{1}{3}, 1", False),  # 0.333 is 1e-3 from 1/3: beyond 1e-4
        ("(1, 2)", "(2, 1)", None),  # same numbers, other order: math-verify decides
        ("(1, 2)", "[1, 2]", None),
        ("(1, 2)", "\\{1, 2\\}", None),
        ("x=1, y=2", "(1, 2)", None),  # variables are not numbers
        ("(1, 2)", "3", False),  # several elements never equal one number
    ],
)
def test_struct_verdicts(a: str, b: str, expected: bool | None) -> None:
    assert _verdict(a, b) is expected
    assert _verdict(b, a) is expected


def test_the_verdicts_match_math_verify() -> None:
    """Every verdict the structure rules give is math-verify's (an independent method)."""
    answers = [
        "(1, 2)", "(2, 1)", "[1, 2]", "1, 2", "\\{2, 1\\}", "(1, 2, 3)", "1, 2, 2",
        "(\\frac{1}{2}, 3)", "(0.5, 3)", "(0.5, 3]", "(5, \\infty)", "[5, \\infty)",
        "(\\sqrt{2}, 1)", "(1.41421356, 1)", "(1,1),(3,3)", "(3,3),(1,1)", "x=1, y=2",
        "a = 2, b = 1", "(-1, 0)", "-1, 0, 1", "\\{-1, 1, 0\\}", "(2\\pi, \\pi)",
        "(1,2),(1,2)", "1", "2", "(1,1),(3,3)", "(1,1)",
    ]  # fmt: skip
    assert _decided_as_math_verify_does(answers) > len(answers) ** 2 // 2


def _decided_as_math_verify_does(answers: list[str]) -> int:
    """How many ordered pairs of ``answers`` misstep decides without math-verify, each
    asserted to be math-verify's verdict (gold first, as the grader asks)."""
    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    # the reference's own 5 s parsing timeout cut a parse short on a loaded machine (an empty
    # parse verifies nothing): the reference gets all the time it needs
    parsed = {a: parse(f"${a}$", parsing_timeout=None) for a in answers}
    decided = 0
    for a in answers:
        for b in answers:
            mine = _verdict(a, b)
            if mine is None:
                continue
            decided += 1
            assert mine == bool(verify(parsed[a], parsed[b], timeout_seconds=None)), (a, b)
    return decided


def test_structured_answers_need_no_math_verify() -> None:
    assert not answer_needs_math_verify(canonical_key("(\\frac{1}{3}, -2, 5)"))
    assert not answer_needs_math_verify(canonical_key("17.5\\%"))
    assert answer_needs_math_verify(canonical_key("\\pm 1, \\pm 7"))
    # one number written twice is the set of that number, which math-verify compares with it
    assert answer_needs_math_verify(canonical_key("1, 1"))
    assert answer_needs_math_verify(canonical_key("[2, 2]"))
    # gold (1, 2): answers (1,2) in another form, (2,1) and a number; only (2,1) needs verify
    task = ProblemTask(
        gold="(1, 2)",
        gold_key=canonical_key("(1, 2)"),
        answers=("(1.0, 2)", "3"),
        keys=(canonical_key("(1.0, 2)"), canonical_key("3")),
    )
    result = solve_here(task, 100)
    assert result is not None
    assert result.gold_equal == [True, False]
    undecided = ProblemTask(
        gold="(1, 2)",
        gold_key=canonical_key("(1, 2)"),
        answers=("(2, 1)",),
        keys=(canonical_key("(2, 1)"),),
    )
    assert solve_here(undecided, 100) is None  # sent to the pool


# Forms valued by misstep's own rules since GRADER_VERSION 7, each family compared pair by pair
# with math-verify (asked as the grader asks it: gold first).
_FORMS = {
    "unions": [
        "(-\\infty, 5) \\cup (5, \\infty)", "(5, \\infty) \\cup (-\\infty, 5)", "(5, \\infty)",
        "(-\\infty, 5] \\cup (5, \\infty)", "(-\\infty, \\infty)", "[0,1]\\cup(1,2)", "[0,2)",
        "(0,1)\\cup(1,2)", "(0,2)", "(1,2)\\cup(3,4)", "(1,2),(3,4)", "(0,3)\\cup(1,2)",
        "(-\\sqrt{11}, -1) \\cup (\\sqrt{11}, 9)", "(-3.3166, -1) \\cup (3.3166, 9)", "1,2",
    ],
    "logs and variables": [
        "\\frac{\\pi}{6} + k\\pi, \\frac{\\pi}{3} + k\\pi",
        "k\\pi + \\frac{\\pi}{3}, k\\pi + \\frac{\\pi}{6}",
        "\\frac{\\pi}{6} + k\\pi, \\frac{2\\pi}{3} + k\\pi", "(x, 2x)", "(2x, x)", "x+1, x-1",
        "(4, \\log_{10}(2))", "(4, \\frac{\\ln 2}{\\ln 10})", "(\\log_{10}(2), 4)", "\\log_2 8",
        "3", "\\log_a b", "\\frac{\\ln b}{\\ln a}", "2\\log_{3}9",
    ],
    "equations": [
        "f(x) = x + 1", "f(x)=1", "f(x) = x", "f(x) = \\frac{1}{x}", "f(x) = 2 - \\frac{2}{x}",
        "f(x) = x^2 + 2x + 1", "f(x) = (x+1)^2", "g(x) = x^2", "f(n) = n + 1",
        "f(x,y) = x - y", "f(x, y) = -y + x", "F(n) = n", "x + 1",
    ],
    "factorials": [
        "\\frac{(d-1)!}{(d-k)!}", "\\frac{d!}{2 (d-k)! k}", "\\frac{d!}{d(d-k)!}", "(n+1)!",
        "(n+1) n!", "n!", "5!", "120", "\\frac{1}{2}!", "x!",
    ],
    "tuples and spacing": [
        "4^{\\frac{1}{3}}, \\quad 4^{\\frac{2}{3}}", "4^{\\frac{2}{3}}, 4^{\\frac{1}{3}}",
        "(-1, -1, -1, -1)", "(-1, -1, -1)", "(1, 1, 1)", "1, 1, 1", "[1, 1]", "1",
        "0.01 \\text{ and } 100", "0.01, 100", "100 \\text{ or } 0.01", "0.01",
    ],
}  # fmt: skip


@pytest.mark.parametrize("family", sorted(_FORMS))
def test_new_forms_match_math_verify(family: str) -> None:
    answers = _FORMS[family]
    # a large share of the pairs is decided without math-verify now (43% of the equations)
    assert _decided_as_math_verify_does(answers) > 0.4 * len(answers) ** 2


@pytest.mark.parametrize(
    ("body", "count"),
    [
        ("(-\\infty,5)\\cup(5,\\infty)", 2),
        ("[0,1]\\cup(1,2)\\cup[3,4]", 3),
    ],
)
def test_parse_union(body: str, count: int) -> None:
    got = parse_union(body)
    assert got is not None and len(got) == count
    assert (got[0].low_closed, got[-1].high_closed) == (body[0] == "[", body[-1] == "]")


@pytest.mark.parametrize(
    "body",
    ["(1,2)", "\\{1\\}\\cup(2,3)", "(1,2,3)\\cup(4,5)", "(1,2)\\cupx", "x\\in(1,2)\\cup(3,4)"],
)
def test_parse_union_leaves_other_forms(body: str) -> None:
    assert parse_union(body) is None


def test_unions_merge_as_sets() -> None:
    # touching intervals join where one side is closed; an infinite endpoint is open
    a = cheap_fingerprint(canonical_key("[0,1]\\cup(1,2)\\cup[5,\\infty]"))
    assert a is not None and a.intervals is not None
    assert [(s.low, s.high, s.low_closed, s.high_closed) for s in a.intervals] == [
        (0.0, 2.0, True, False),
        (5.0, math.inf, True, False),
    ]
    # endpoints too near to tell (1e-6 apart) are left to math-verify
    assert _verdict("(0,1)\\cup(2,3)", "(0,1)\\cup(2,3.000001)") is None
