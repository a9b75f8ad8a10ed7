"""Cheap canonical forms of final answers, computed without math-verify.

``canonical_key`` maps an answer to a string key such that equal keys mean equivalent answers:

- ``q:<p>/<q>`` (or ``q:<p>`` for integers): the answer has an exact rational value. Integers,
  decimals (``0.5``), thousands separators (``1,000``, ``1{,}000``, ``5,\\!000``), ``a/b``,
  ``\\frac{a}{b}``, ``\\frac12``, ``\\dfrac``/``\\tfrac``, a leading sign, and arithmetic
  without letters or roots (``3+2``, ``2^3\\cdot 5``, ``5!``, ``\\binom{8}{4}``; see
  ``_arithmetic``) are understood, so ``\\frac12``, ``1/2``, ``0.5`` all give ``q:1/2``.
- ``w:<lowercased text>``: prose, an answer holding a word of three or more letters that is not
  a LaTeX command or function name (``Purple``, ``\\text{no solution}``, ``3 hours and 36
  minutes``): compared as text without case, never by math-verify.
- ``s:<text>``: anything else, as a normalised string. A multiple-choice letter in any of its
  forms (``(C)``, ``C)``, ``Choice_B``, ``Choice\\_B``, ``Option D``, ``Choice_A: y = 2x+1``)
  becomes the bare capital letter (``s:C``).

Normalisation writes ``∞`` as ``\\infty`` and ``{n \\choose k}`` as ``\\binom{n}{k}``, and
drops: surrounding ``$``, ``\\(...\\)``; ``\\$``; ``\\left``/``\\right``; LaTeX spacing
(``\\!``, ``\\,``, ``\\;``, ``\\quad``) and whitespace; ``\\text{..}`` wrappers (the text is
kept; ``\\text{ and }`` and ``\\text{ or }`` become commas, as math-verify reads them); degree
marks; a trailing period; braces around one character after ``^`` or ``_``; a unit after a
number (``5\\text{ cm}``, ``12 dollars``, ``3 hours``: common length, mass, time, money and
count words); and the left sides of an equation when each is a single variable or a computation
without letters (``x = 5``, ``12+65+3 = 80`` and ``x = 3+2 = 5`` all answer 5; ``x^2+y^2 = 1``
stays an equation). ``\\%`` becomes ``%`` and is left to math-verify, which reads ``50%`` as 50
or 0.5 as the gold suits.

Nothing here evaluates the text: the parsers are anchored regular expressions and a bounded
recursive-descent parser over a closed grammar.
"""

from __future__ import annotations

import re
from fractions import Fraction

from misstep.rollouts._arithmetic import arithmetic_value, numeric_value

__all__ = [
    "canonical_key",
    "exact_rational",
    "is_choice_key",
    "normalize_answer",
    "problem_options",
]

_MAX_RATIONAL_CHARS = 120
_LEFT_RIGHT = re.compile(r"\\(?:left|right)(?![A-Za-z])")
# "1 \text{ and } 2" is the list 1, 2 (math-verify's normalisation does the same)
_TEXT_CONJUNCTION = re.compile(r",?\\text\{(?:and|or)\}")
_SPACING = re.compile(r"\\q?quad(?![a-zA-Z])|\\[!,;: ]|~|\s+")
_TEXT_WRAP = re.compile(r"\\(?:text|textbf|textrm|mathrm|mathbf|mbox|operatorname)\{([^{}]*)\}")
_DEGREES = re.compile(r"(?:\^\{?\\circ\}?|°)$")
_SINGLE_BRACE = re.compile(r"([_^])\{([A-Za-z0-9])\}")
_FRAC_TWO_DIGITS = re.compile(r"\\frac(\d)(\d)")
_FRAC_DIGIT_BRACE = re.compile(r"\\frac(\d)\{")
_FRAC_BRACE_DIGIT = re.compile(r"\\frac\{([^{}]*)\}(\d)")
_CHOOSE = re.compile(r"\{([^{}]*)\\choose([^{}]*)\}")
_ASSIGN_LHS = re.compile(r"[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?")
_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+"
# Multiple-choice letters: "(C)", "C)", "\text{(C)}", "Choice_B", "Choice\_B", "Option D".
_CHOICE = re.compile(
    r"(?:(?:choice|option)\\?_?\(?([A-Ja-j])\)?(?::.*)?|\(([A-Ja-j])\)|([A-J])\)|([A-J]):.+)\.?",
    re.I | re.S,
)
# Options listed in a problem: "A: 4", "(B) 8", "C. 16", "D) 2sqrt(2)", one per line or inline.
_OPTION = re.compile(r"(?:^|\n|\s)\(?([A-J])(?:\)|:|\.)\s+(.+?)(?=\s+\(?[A-J](?:\)|:|\.)\s|\n|$)")
# Unit words after a number ("5cm", "18dollars", "3hours"): dropped, the number kept.
_UNITS = (
    "cm|mm|km|kg|mg|ml|sec|seconds?|min|minutes?|hours?|hrs?|days?|weeks?|years?|"
    "dollars?|cents?|units?|degrees?|inches|inch|feet|foot|ft|miles?|meters?|metres?|"
    "centimeters?|kilometers?|grams?|kilograms?|liters?|litres?|mph|sq(?:uare)?units?|"
    "people|students|apples|marbles|pages|books|cookies|points|times|ways"
)
_NUMBER_UNIT = re.compile(
    rf"([+-]?(?:{_NUMBER}))(?:\^?\{{?\\circ\}}?)?(?:{_UNITS})(?:\^?\{{?[23]\}}?)?", re.I
)
# A word of three or more letters that is not a LaTeX command or a function name: the answer is
# prose ("3 hours and 36 minutes", "Purple", "no solution") and is compared as text.
_FUNCTIONS = frozenset(
    [
        "sin",
        "cos",
        "tan",
        "cot",
        "sec",
        "csc",
        "arcsin",
        "arccos",
        "arctan",
        "sinh",
        "cosh",
        "tanh",
        "log",
        "ln",
        "exp",
        "sqrt",
        "max",
        "min",
        "gcd",
        "lcm",
        "mod",
        "det",
        "deg",
        "dim",
        "ker",
        "lim",
        "sup",
        "inf",
        "frac",
        "dfrac",
        "tfrac",
        "cdot",
        "times",
        "div",
        "infty",
        "text",
        "mathrm",
        "binom",
        "choose",
        "pmod",
        "bmod",
        "circ",
        "angle",
        "triangle",
        "overline",
    ]
)
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
# "0 or 2", "2 and 3" (spaces are gone by then: "0or2"): several answers in words
_CONNECTIVE = re.compile(r"(?<![\\A-Za-z])(?:or|and)(?![A-Za-z])")
# An equation's left side without letters (LaTeX commands aside): arithmetic, whose result is
# the answer ("12+65+3=80" answers 80).
_ARITHMETIC = re.compile(r"(?:[\d.,+\-*/()^{}\[\]]|\\(?:frac|cdot|times|div|sqrt)|\\[()])+")
_PLAIN = re.compile(rf"([+-]?)({_NUMBER})")
_SLASH = re.compile(rf"([+-]?)({_NUMBER})/({_NUMBER})")
_FRAC = re.compile(rf"([+-]?)\\frac\{{([+-]?)({_NUMBER})\}}\{{({_NUMBER})\}}")


def _strip_delimiters(text: str) -> str:
    text = text.strip()
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if len(text) >= len(left) + len(right) and text.startswith(left) and text.endswith(right):
            text = text[len(left) : len(text) - len(right)].strip()
    return text


def normalize_answer(answer: str) -> str:
    """The answer as a normalised string (see the module docstring); never evaluates it."""
    text = _strip_delimiters(answer)
    text = text.replace("\\$", "").replace("\\%", "%")
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    text = text.replace("{,}", ",").replace("∞", "\\infty")
    text = _LEFT_RIGHT.sub("", text)
    text = _SPACING.sub("", text)
    text = _CHOOSE.sub(r"\\binom{\1}{\2}", text)  # {n \choose k}
    text = _TEXT_CONJUNCTION.sub(",", text)
    # Unwrap \text{...} repeatedly: nested wrappers are rare and each pass removes one level.
    for _ in range(3):
        unwrapped = _TEXT_WRAP.sub(r"\1", text)
        if unwrapped == text:
            break
        text = unwrapped
    text = _DEGREES.sub("", text)
    text = _SINGLE_BRACE.sub(r"\1\2", text)  # x^{2} is x^2
    text = _FRAC_TWO_DIGITS.sub(r"\\frac{\1}{\2}", text)
    text = _FRAC_DIGIT_BRACE.sub(r"\\frac{\1}{", text)
    text = _FRAC_BRACE_DIGIT.sub(r"\\frac{\1}{\2}", text)
    choice = _CHOICE.fullmatch(text)
    if choice:  # "(C)", "Choice_B", "Choice_A: y = 2x+1", "D: f(log c)": the letter
        return next(g for g in choice.groups() if g).upper()
    if "=" in text:
        text = _right_side(text)
    while len(text) >= 2 and text[0] == "{" and text[-1] == "}" and _balanced(text[1:-1]):
        text = text[1:-1]
    text = text.rstrip(".")
    unit = _NUMBER_UNIT.fullmatch(text)
    if unit:
        return unit.group(1)
    return text


def _right_side(text: str) -> str:
    """``x = 5`` and ``3+2 = 5`` (chains too: ``x = 3+2 = 5``) answer 5: the last side is kept
    when every side before it is a single variable or arithmetic without letters. Other
    equations (``x^2+y^2 = 1``) stay whole."""
    sides = text.split("=")
    if len(sides) < 2 or not sides[-1] or any("<" in p or ">" in p for p in sides):
        return text
    for side in sides[:-1]:
        if not (_ASSIGN_LHS.fullmatch(side) or _ARITHMETIC.fullmatch(side) or _valued(side)):
            return text
    return sides[-1]


def is_choice_key(key: str) -> bool:
    """Whether a canonical key is a multiple-choice letter (``s:A`` to ``s:J``)."""
    return len(key) == 3 and key.startswith("s:") and "A" <= key[2] <= "J"


def problem_options(problem: str | None) -> dict[str, str]:
    """The options a multiple-choice problem lists, letter -> the option's text; empty unless
    the letters found start with A and B."""
    if not problem:
        return {}
    found: dict[str, str] = {}
    for letter, text in _OPTION.findall(problem[-4000:]):
        found.setdefault(letter, text.strip())
    letters = sorted(found)
    if len(letters) < 2 or letters[0] != "A" or letters[1] != "B":
        return {}
    return found


def _valued(side: str) -> bool:
    """A side with a value and no variable (``2\\cdot\\binom{8}{4}``, ``4-\\pi``)."""
    value = numeric_value(side)
    return value is not None and not value[1]


def is_prose(text: str) -> bool:
    """Whether a normalised answer holds a word of three or more letters that is not a LaTeX
    command or function name (then it is compared as text, without case)."""
    if _CONNECTIVE.search(text):
        return True
    return any(w.lower() not in _FUNCTIONS for w in _WORD.findall(text))


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _number(text: str) -> Fraction:
    return Fraction(text.replace(",", ""))


def _rational_of_normalized(text: str) -> Fraction | None:
    if not text or len(text) > _MAX_RATIONAL_CHARS:
        return None
    match = _PLAIN.fullmatch(text)
    if match:
        value = _number(match.group(2))
        return -value if match.group(1) == "-" else value
    match = _SLASH.fullmatch(text)
    if match:
        num, den = _number(match.group(2)), _number(match.group(3))
        if den == 0:
            return None
        value = num / den
        return -value if match.group(1) == "-" else value
    match = _FRAC.fullmatch(text)
    if match:
        num, den = _number(match.group(3)), _number(match.group(4))
        if den == 0:
            return None
        value = num / den
        negative = (match.group(1) == "-") != (match.group(2) == "-")
        return -value if negative else value
    return None


def exact_rational(answer: str) -> Fraction | None:
    """The answer's exact value when it is a plain rational number, else None."""
    return _rational_of_normalized(normalize_answer(answer))


def canonical_key(answer: str) -> str:
    """``q:<rational>`` for exact rationals, ``w:<lowercased text>`` for prose, else
    ``s:<normalised text>``."""
    text = normalize_answer(answer)
    value = _rational_of_normalized(text)
    if value is None and len(text) > 1 and any(op in text for op in "+-*/^\\!("):
        value = arithmetic_value(text)
    if value is not None:
        return f"q:{value}"
    if is_prose(text):
        return "w:" + text.lower().replace("$", "")
    return f"s:{text}"
