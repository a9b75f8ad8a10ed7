"""Answer forms that real evaluations write and the Qwen2.5-Math harness grades (issue 33): units
inside ``\\text{}``, a choice letter followed by its option's text, an ``<answer>`` tag left open.

Every pair names the reference that agrees with misstep's verdict:

- ``math-verify``: ``verify(parse(gold), parse(answer))``, asserted here (math-verify is a
  dependency);
- ``math_equal``: the Qwen2.5-Math evaluation harness (QwenLM/Qwen2.5-Math,
  ``evaluation/parser.py`` ``strip_string`` on both sides, then ``evaluation/grader.py``
  ``math_equal``), run outside this project on each pair (its code is not part of misstep, so
  the verdict is written down here, not recomputed);
- ``both``: the two agree with misstep (math-verify's half asserted);
- a sentence: neither reference agrees, and why misstep's reading is the right one (a documented
  rule, ``docs/grading.md``).
"""

from __future__ import annotations

import logging

import pytest

from misstep.rollouts import Trace, answers_equivalent, canonical_key, extract_answer, grade_traces
from misstep.rollouts._normalize import option_keys

MV = "math-verify"
ME = "math_equal"
BOTH = "both"

UNIT_PAIRS = [
    # (gold, answer, misstep's verdict, the reference that agrees)
    ("-16", "-16 \\text{ kg/year}", True, BOTH),  # the case
    ("5", "5 \\text{ years}", True, BOTH),
    ("1.5", "1.5 \\, \\text{g}", True, BOTH),
    ("133", "133 \\text{ W}", True, BOTH),
    ("24.6", "24.6 \\, \\text{eV}", True, BOTH),
    ("45", "45 \\text{ km/h}", True, BOTH),
    ("130", "130 \\text{ m}", True, BOTH),
    ("12", "12 \\mbox{ cm}", True, BOTH),
    ("30", "30^{\\circ}\\text{C}", True, BOTH),
    ("\\frac{1}{2}", "\\frac{1}{2} \\text{ hour}", True, BOTH),
    ("-\\frac{1}{16\\pi}", "-\\frac{1}{16\\pi} \\text{ cm/sec}", True, BOTH),
    ("\\frac{5\\sqrt{10}}{2}", "\\frac{5\\sqrt{10}}{2} \\text{ m/sec}", True, BOTH),
    ("2.08 \\times 10^{-6}", "2.08 \\times 10^{-6} \\, \\text{m}", True, BOTH),
    ("10^{-4}", "10^{-4} \\text{ eV}", True, BOTH),
    ("50", "50 \\text{ percent}", True, BOTH),  # a percentage, as 50\%
    ("3", "3 \\text{ (double root)}", True, BOTH),  # a short note, as a unit
    ("\\infty", "\\infty \\text{ (diverges)}", True, BOTH),
    # the harness keeps a unit with a power or a compound unit in \mathrm
    ("19500", "19,500 \\text{ yards}^2", True, MV),
    ("100", "100 \\text{ m}^2", True, MV),
    ("166", "166 \\, \\text{cm}^2", True, MV),
    ("288", "288 \\mathrm{~cm}^3", True, MV),
    ("5", "5\\mathrm{~m}/\\mathrm{s}", True, MV),
    ("2450\\pi", "2450\\pi\\mathrm{N}", True, MV),
    ("5", "5 \\textbf{ cm}", True, MV),
    # math-verify misses a unit on each element of a tuple
    ("(5, 3)", "(5 \\text{ cm}, 3 \\text{ cm})", True, ME),
    # \mathrm{i} and \mathrm{e} are the imaginary unit and Euler's number, never units: both
    # references drop them (3 + 2i would be 5)
    ("3+2i", "3 + 2\\mathrm{i}", True, "neither: i is the imaginary unit, not a unit"),
    ("5", "3 + 2\\mathrm{i}", False, ME),
    ("2e", "2\\mathrm{e}", True, "neither: e is Euler's number, not a unit"),
    # both references drop everything after the first unit, with the numbers in it
    ("56, 76", "56 \\text{ km/hr} \\text{ and } 76 \\text{ km/hr}", True,
     "neither: each element keeps its number (the references read 56)"),
    ("12", "12 \\text{ inches by } 10 \\text{ inches}", False,
     "neither: two numbers, not 12 (the references drop '10 inches')"),
    # a statement about a variable is not a unit (more than two words, or after a letter)
    ("n", "n \\text{ is odd}", False, "neither: a statement, compared as text"),
]  # fmt: skip

CHOICE_PAIRS = [
    # (gold, answer, misstep's verdict, the reference that agrees): math-verify reads "(A) 45"
    # as the product a·45, so it is never the reference for a letter with its option's text
    ("A", "(A) 45", True, ME),  # the case
    ("A", "\\text{(A)} 45", True, ME),
    ("A", "\\textbf{(A) }45", True, ME),
    ("A", "A. 45", True, ME),
    ("A", "A) 45", True, ME),
    ("D", "D) They tend to reduce temperature ranges.", True, ME),
    ("B", "(B) ~ 33.5", True, ME),
    ("D", "(D) 70 and 55 seconds", True, ME),
    ("B", "(B) False, False", True, ME),
    ("B", "B. Sb", True, ME),
    ("D", "\\mathrm{(D)}\\ 1,008,016", True, ME),  # the harness's own test of choice_answer_clean
    ("A", "(B) 45", False, BOTH),
    ("A", "(A) and (C)", False, BOTH),  # two letters: no single choice
    ("A", "(a) 5, (b) 7", False, BOTH),  # parts of a question, not choices
    # the harness takes the last capital letter standing alone: here B, of "B = HCl"
    ("A", "(A) A = NaHSO3, B = HCl", True, "neither: the letter the answer starts with"),
    ("C", "(A) and (C)", False, "neither: two letters (the harness takes the last)"),
]

# Matrices, as RealCritic's MATH rows write them (misstep read "pmatrix" as a word, so a matrix
# was prose compared as text, and took the space after a row break "\\\\ " for spacing)
MATRIX_PAIRS = [
    (
        "\\begin{pmatrix}2\\\\-1\\\\-5\\end{pmatrix}",
        "\\begin{pmatrix} 2 \\\\ -1 \\\\ -5 \\end{pmatrix}",
        True,
        BOTH,
    ),
    (
        "\\begin{pmatrix}0&1\\\\1&0\\end{pmatrix}",
        "\\begin{pmatrix} 0 & 1 \\\\ 1 & 0 \\end{pmatrix}",
        True,
        BOTH,
    ),
    (
        "\\begin{pmatrix}-4/9\\\\1/9\\\\8/9\\end{pmatrix}",
        "\\begin{pmatrix} -\\frac{4}{9} \\\\ \\frac{1}{9} \\\\ \\frac{8}{9} \\end{pmatrix}",
        True,
        BOTH,
    ),
    (
        "\\begin{pmatrix}1\\\\2\\end{pmatrix}",
        "\\begin{pmatrix} 1 \\\\ 3 \\end{pmatrix}",
        False,
        BOTH,
    ),
]

# The decimal rule is relative to the values, as math_equal's isclose (rel_tol=1e-4): misstep's
# tolerance was absolute below 1, so 1/1023 and 1/1024 (a terminating decimal) were one class in
# the Reasoning Gym run and 0.0112 equalled 0.0113
DECIMAL_PAIRS = [
    ("\\frac{1}{1024}", "\\frac{1}{1023}", False, BOTH),
    ("0.00001", "0.0001", False, BOTH),
    ("0", "0.00001", False, BOTH),
    ("0.0112", "0.0113", False, BOTH),
    ("0.0112", "0.01120001", True, BOTH),  # 9e-7 apart: within 1e-4 of 0.0112
    ("\\frac{\\pi}{100000}", "0.0000314", False, ME),  # 5e-4 apart; math-verify rounds
]


def _math_verify(gold: str, answer: str) -> bool:
    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    # no timeout: the reference's own 5 s cut parses short on a loaded machine
    pg = parse(f"${gold}$", parsing_timeout=None)
    pa = parse(f"${answer}$", parsing_timeout=None)
    return bool(pg and pa and verify(pg, pa, timeout_seconds=None))


@pytest.mark.parametrize(
    ("gold", "answer", "expected", "reference"),
    UNIT_PAIRS + CHOICE_PAIRS + MATRIX_PAIRS + DECIMAL_PAIRS,
)
def test_forms_as_the_references_grade_them(
    gold: str, answer: str, expected: bool, reference: str
) -> None:
    assert answers_equivalent(gold, answer) is expected
    if reference in (MV, BOTH):
        assert _math_verify(gold, answer) is expected
    elif reference == ME:  # math-verify disagrees there: that is why the harness is named
        assert _math_verify(gold, answer) is not expected


def test_a_unit_is_a_word_or_two_after_a_value() -> None:
    # a longer text is a statement and stays; so does one after a letter
    assert canonical_key("S = 1 \\text{ and their squares}") != canonical_key("S = 1")
    assert canonical_key("f(x) \\text{ is increasing}") != canonical_key("f(x)")
    assert canonical_key("x \\text{ cm}") != canonical_key("x")
    # a word answer in \text is kept whole
    assert canonical_key("\\text{None}") == "w:none"


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        # vLLM leaves a stop string ("</answer>") out of its text
        ("<think>so 40 + 2</think>\n<answer> 42", "42"),  # the case
        ("<think>halve it</think><answer>\\frac{1}{2}\n", "\\frac{1}{2}"),  # not the last number
        ("<think>x</think><answer>$2\\sqrt{3}$", "2\\sqrt{3}"),
        ("<think>still open, <answer> 7", "7"),  # an open <think> still counts a tag
        ("so <answer>3</answer> then <answer>", "3"),  # an empty open tag: the closed one
    ],
)
def test_an_answer_tag_left_open_at_the_end(response: str, answer: str) -> None:
    found = extract_answer(response)
    assert (found.answer, found.method) == (answer, "answer_tag")


def test_an_open_tag_holding_prose_is_no_answer() -> None:
    # a loop that never closed the tag: 300 characters at most, as a closed tag
    found = extract_answer("<think>a</think><answer> " + "so I keep thinking " * 30)
    assert (found.answer, found.method) == (None, "none")


@pytest.mark.parametrize(
    ("response", "answer", "method"),
    [
        # Llama 3.1's multiple-choice ending (RealCritic's ARC-Challenge rows)
        ("The best answer is (A).", "(A)", "answer_phrase"),
        ("...\nThe best answer is B.", "B", "answer_phrase"),
        # a letter named by "is (X)" on the last line (RealCritic's MMLU-STEM rows)
        ("Therefore, the correct statement is (B).", "B", "choice"),
        ("The symbol for antimony is (B) Sb.", "B", "choice"),
        ("so the ratio of 3 dogs to 5 dogs is (D) 3 over 5.", "D", "choice"),
        ("the value is (3)", "3", "last_number"),  # a number in brackets is no choice
    ],
)
def test_choice_endings(response: str, answer: str, method: str) -> None:
    found = extract_answer(response)
    assert (found.answer, found.method) == (answer, method)


def test_option_keys_read_a_unit_word() -> None:
    assert option_keys("1.5 g") == ("s:1.5g", "q:3/2")
    assert option_keys("19,500 yards^2") == ("w:19,500yards^2", "q:19500")
    assert option_keys("5 years") == ("q:5",)  # a unit the answer rules know already
    assert option_keys("2x") == ("s:2x",)  # a product, not a unit
    assert option_keys("More information is needed") == ("w:moreinformationisneeded",)


def _mc(i: int, response: str, gold: str, problem: str) -> Trace:
    return Trace(
        trace_id=f"t{i}", problem_id="p", response=response, gold_answer=gold, problem=problem
    )


def test_options_with_units_meet_answers_with_or_without_them() -> None:
    # RealCritic's ARC-Challenge 55: the options carry a unit word, the answer a \text unit
    problem = "How much? Answer Choices: (A) 1.0 g (B) 1.5 g (C) 148.5 g (D) 298.5 g"
    graded = grade_traces(
        [
            _mc(0, "so \\boxed{1.5 \\, \\text{g}}", "B", problem),
            _mc(1, "so \\boxed{1.5}", "B", problem),
            _mc(2, "so \\boxed{(B) 1.5 g}", "B", problem),
            _mc(3, "so \\boxed{148.5 \\text{ g}}", "B", problem),
        ],
        regrade=True,
    )
    assert graded["correct"].tolist() == [True, True, True, False]
    # a number two options share names neither
    same = "Which? (A) 2 s (B) 2 m (C) 4 s"
    graded = grade_traces([_mc(0, "so \\boxed{2}", "A", same)], regrade=True)
    assert graded["correct"].tolist() == [False]
