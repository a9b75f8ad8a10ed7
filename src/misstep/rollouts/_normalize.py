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
  forms (``(C)``, ``C)``, ``\\text{(C)}``, ``Choice_B``, ``Choice\\_B``, ``Option D``), alone or
  followed by its option's text (``Choice_A: y = 2x+1``, ``(A) 45``, ``D) They tend to reduce
  temperature ranges.``, ``B. Sb``), becomes the bare capital letter (``s:C``), as the
  Qwen2.5-Math harness's ``choice_answer_clean`` reads it; an answer naming two letters (``(A)
  and (C)``) is not one choice.

Normalisation writes ``∞`` as ``\\infty`` and ``{n \\choose k}`` as ``\\binom{n}{k}``, and
drops: surrounding ``$``, ``\\(...\\)``; ``\\$``; ``\\left``/``\\right``; LaTeX spacing
(``\\!``, ``\\,``, ``\\;``, ``\\quad``) and whitespace; ``\\text{..}`` wrappers (the text is
kept; ``\\text{ and }`` and ``\\text{ or }`` become commas, as math-verify reads them); a unit
written as text after a value, at the end or before a list's comma (``-16 \\text{ kg/year}``,
``1.5\\,\\text{g}``, ``5\\mathrm{~m}/\\mathrm{s}``, ``7\\text{ cm}^2``: any text there, as
math-verify's and the Qwen2.5-Math harness's unit rules read it, except ``\\mathrm{e}`` and
``\\mathrm{i}``, which are Euler's number and the imaginary unit; ``\\text{ percent}`` is
``%``); degree marks; a trailing period; braces around one character after ``^`` or ``_``; a
unit word after a number (``12 dollars``, ``3 hours``: common length, mass, time, money and
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
    "option_keys",
    "problem_options",
]

_MAX_RATIONAL_CHARS = 120
_LEFT_RIGHT = re.compile(r"\\(?:left|right)(?![A-Za-z])")
# "1 \text{ and } 2" is the list 1, 2 (math-verify's normalisation does the same)
_TEXT_CONJUNCTION = re.compile(r",?\\text\{(?:and|or)\}")
# LaTeX spacing and whitespace; a row break ``\\\\`` is matched first and kept, so that the space
# after it ("2 \\\\ -1" in a matrix) does not make ``\\ `` of its second backslash
_SPACING = re.compile(r"(\\\\)|\\q?quad(?![a-zA-Z])|\\[!,;: ]|~|\s+")
_TEXT_WRAP = re.compile(r"\\(?:text|textbf|textrm|mathrm|mathbf|mbox|operatorname)\{([^{}]*)\}")
_DEGREES = re.compile(r"(?:\^\{?\\circ\}?|°)$")
_SINGLE_BRACE = re.compile(r"([_^])\{([A-Za-z0-9])\}")
_FRAC_TWO_DIGITS = re.compile(r"\\frac(\d)(\d)")
_FRAC_DIGIT_BRACE = re.compile(r"\\frac(\d)\{")
_FRAC_BRACE_DIGIT = re.compile(r"\\frac\{([^{}]*)\}(\d)")
_CHOOSE = re.compile(r"\{([^{}]*)\\choose([^{}]*)\}")
_ASSIGN_LHS = re.compile(r"[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?")
_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+"
# Multiple-choice letters: "(C)", "C)", "\text{(C)}", "Choice_B", "Choice\_B", "Option D", and
# a letter followed by its option's text, "(A)45", "D)Theytend...", "D:128", "Choice_D(37)"
# (spaces are gone by then), unless the text names another letter the same way ("(A)and(C)").
_CHOICE = re.compile(
    r"(?:(?:choice|option)\\?_?\(?([A-Ja-j])\)?(?:[:(].*)?|\(([A-Ja-j])\)|([A-J])\)|([A-J]):.+"
    r"|\(([A-J])\)(?!.*\([A-J]\)).+|([A-J])\)(?!.*[A-J]\)).+)\.?",
    re.I | re.S,
)
# "A. 45", "B. Sb": a letter, a period and a space, then the option's text (read before the
# spaces go, as "A.45" is no choice).
_CHOICE_DOT = re.compile(r"([A-J])\.\s+(?!.*\b[A-J]\.\s).+", re.S)
# A unit written as text after a value: "-16 \\text{ kg/year}", "1.5\\,\\text{g}",
# "5\\mathrm{~m}/\\mathrm{s}", "7\\text{ cm}^2"; at the end, before a list's comma or semicolon,
# or before "\\text{ and }" (read before the spaces go, to count the unit's words).
_GAP = r"(?:\s|\\[,;:! ]|\\q?quad(?![A-Za-z])|~)*"
_UNIT_GROUP = r"\\(?:text|textrm|textnormal|textit|textbf|mathrm|mbox)\s*\{[^{}]*\}"
# (each match starts at a command, never in a run of spaces: linear in the answer's length)
_TEXT_UNIT = re.compile(
    rf"{_UNIT_GROUP}(?:(?:{_GAP}/)?{_GAP}{_UNIT_GROUP})*(?:\s*\^\s*\{{?\s*\d\s*\}}?)?"
    rf"(?={_GAP}(?:[,;]|$|\\text\s*\{{\s*(?:and|or)\s*\}}))"
)
# the spacing a unit may follow, longest first ("\\ " before " ")
_GAP_ENDS = ("\\qquad", "\\quad", "\\ ", "\\,", "\\;", "\\:", "\\!", " ", "\t", "\n", "~")
_BRACED = re.compile(r"\{([^{}]*)\}")
# What a value ends with, for a unit to follow it; e and i in \mathrm are Euler's number and the
# imaginary unit (math-verify drops them as units: 3 + 2\mathrm{i} would be 5).
_VALUE_ENDS = (*"0123456789)]}.%!", "\\pi", "\\infty", "\\circ", "°")
_NOT_UNITS = frozenset({"e", "i", "j"})
# A unit is a word or two ("kg/year", "(double root)", "square units"); longer text, or text that
# starts a clause, is a statement about the answer ("\\text{ is a perfect square}", "\\text{ is
# increasing}", "\\text{ and their squares}").
_MAX_UNIT_WORDS = 2
_CLAUSE_WORDS = frozenset(
    {"is", "are", "was", "were", "be", "for", "where", "when", "if", "and", "or", "such", "since"}
    | {"because", "which", "that", "with", "as"}
)
# An option's text that is a number and a unit word: "1.5 g", "133 W", "19,500 yards^2".
_OPTION_UNIT = re.compile(
    rf"\$?([+-]?(?:{_NUMBER}))\$?\s+[^\W\d_]+(?:/[^\W\d_]+)*(?:\^\{{?[23]\}}?|²|³)?\.?"
)
_PERCENT_WORD = re.compile(
    r"(?<=[\d.])\s*(?:\\text\s*\{\s*percent(?:age)?\s*\}|percent(?:age)?)(?=\s*(?:[,;]|$))"
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
        # environments: \begin{pmatrix} ... \end{pmatrix} is a matrix, not prose
        "pmatrix",
        "bmatrix",
        "vmatrix",
        "matrix",
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
    dotted = _CHOICE_DOT.fullmatch(text)
    if dotted:  # "A. 45": the letter
        return dotted.group(1)
    text = text.replace("\\$", "").replace("\\%", "%")
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    text = text.replace("{,}", ",").replace("∞", "\\infty")
    text = _LEFT_RIGHT.sub("", text)
    if "\\" in text or "percent" in text:
        text = _PERCENT_WORD.sub("%", text)
        text = _TEXT_UNIT.sub(_drop_unit, text)
    text = _SPACING.sub(_keep_row_break, text)
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


def _keep_row_break(match: re.Match[str]) -> str:
    return match.group(1) or ""


def _drop_unit(match: re.Match[str]) -> str:
    """The text unit ``match`` removed when it follows a value (``5\\text{cm}``; not
    ``n\\text{isodd}``, nor ``2\\mathrm{i}``), else kept."""
    head = match.string[: match.start()]
    while head.endswith(_GAP_ENDS):  # the spacing before the unit ("5 \\, \\text{cm}")
        head = head[: -len(next(g for g in _GAP_ENDS if head.endswith(g)))]
    words = [unit.replace("~", " ").split() for unit in _BRACED.findall(match.group())]
    if not head.endswith(_VALUE_ENDS) or any(
        len(unit) > _MAX_UNIT_WORDS
        or (len(unit) == 1 and unit[0] in _NOT_UNITS)
        or (unit and unit[0].lower() in _CLAUSE_WORDS)
        for unit in words
    ):
        return match.group()
    return ""


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


def option_keys(option: str) -> tuple[str, ...]:
    """The keys an option's text answers to: its canonical key and, for a number followed by
    a unit word (``1.5 g``, ``133 W``, ``19,500 yards^2``), the number's key, so that an answer
    written ``1.5\\,\\text{g}`` (whose unit goes) or ``1.5`` still names that option. Only an
    option's text is read this way: in an answer ``2 x`` is a product."""
    key = canonical_key(option)
    unit = _OPTION_UNIT.fullmatch(option.strip())
    if unit is None:
        return (key,)
    number = canonical_key(unit.group(1))
    return (key,) if number == key else (key, number)


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
