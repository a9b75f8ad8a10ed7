"""Cheap canonical forms of final answers, computed without math-verify.

``canonical_key`` maps an answer to a string key such that equal keys mean equivalent answers:

- ``q:<p>/<q>`` (or ``q:<p>`` for integers): the answer is an exact rational. Integers,
  decimals (``0.5``), thousands separators (``1,000`` and LaTeX's ``1{,}000``), ``a/b``,
  ``\\frac{a}{b}``, ``\\frac12``, ``\\dfrac``/``\\tfrac`` and a leading sign are understood, so
  ``\\frac12``, ``1/2`` and ``0.5`` all give ``q:1/2``. Two different ``q:`` keys are different
  answers: no further check is needed.
- ``s:<text>``: anything else, as a normalised string: surrounding ``$``, ``\\(...\\)``,
  ``\\left``/``\\right``, LaTeX spacing (``\\!``, ``\\,``, ``\\;``), whitespace, ``\\text{..}``
  wrappers (the text is kept), degree marks and a trailing period are dropped, and ``x = 5``
  becomes ``5`` when the left side is a single variable. Equal ``s:`` keys are equivalent;
  different ones may still be (``\\sqrt{2}/2`` vs ``\\frac{\\sqrt{2}}{2}``): math-verify decides.

Percentages are left alone (``50\\%`` is an ``s:`` key): whether it means 50 or 0.5 depends on
the problem, so math-verify decides. Nothing here evaluates the text; the rational parser is a
handful of anchored regular expressions over at most ``_MAX_RATIONAL_CHARS`` characters.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["canonical_key", "exact_rational", "normalize_answer"]

_MAX_RATIONAL_CHARS = 120
_LEFT_RIGHT = re.compile(r"\\(?:left|right)(?![A-Za-z])")
_SPACING = re.compile(r"\\[!,;: ]|~|\s+")
_TEXT_WRAP = re.compile(r"\\(?:text|textbf|textrm|mathrm|mathbf|mbox|operatorname)\{([^{}]*)\}")
_DEGREES = re.compile(r"(?:\^\{?\\circ\}?|°)$")
_FRAC_TWO_DIGITS = re.compile(r"\\frac(\d)(\d)")
_FRAC_DIGIT_BRACE = re.compile(r"\\frac(\d)\{")
_FRAC_BRACE_DIGIT = re.compile(r"\\frac\{([^{}]*)\}(\d)")
_ASSIGN_LHS = re.compile(r"[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?")
_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+"
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
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    text = text.replace("{,}", ",")
    text = _LEFT_RIGHT.sub("", text)
    text = _SPACING.sub("", text)
    # Unwrap \text{...} repeatedly: nested wrappers are rare and each pass removes one level.
    for _ in range(3):
        unwrapped = _TEXT_WRAP.sub(r"\1", text)
        if unwrapped == text:
            break
        text = unwrapped
    text = _DEGREES.sub("", text)
    text = _FRAC_TWO_DIGITS.sub(r"\\frac{\1}{\2}", text)
    text = _FRAC_DIGIT_BRACE.sub(r"\\frac{\1}{", text)
    text = _FRAC_BRACE_DIGIT.sub(r"\\frac{\1}{\2}", text)
    if text.count("=") == 1:
        lhs, rhs = text.split("=")
        if rhs and _ASSIGN_LHS.fullmatch(lhs):
            text = rhs
    while len(text) >= 2 and text[0] == "{" and text[-1] == "}" and _balanced(text[1:-1]):
        text = text[1:-1]
    return text.rstrip(".")


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
    """``q:<rational>`` for exact rationals, else ``s:<normalised text>``."""
    text = normalize_answer(answer)
    value = _rational_of_normalized(text)
    if value is not None:
        return f"q:{value}"
    return f"s:{text}"
