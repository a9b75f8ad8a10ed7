"""Find wrong explicit calculations in reasoning steps, with exact rational arithmetic.

Trace text is untrusted, so nothing here evaluates it as code: a regex tokenizer turns a step
into tokens, runs of arithmetic tokens holding ``=`` or ``≈`` become chains ``a = b = c``, and
each side is computed as a :class:`fractions.Fraction` by the grader's evaluator
(``rollouts._arithmetic.arithmetic_value``, a recursive-descent parser over a closed grammar).
So a step is read as grading reads an answer (math-verify's conventions), with one exception: a
product without a sign after a division (``2/3(249)``, ``6/2(1+2)``) is read both ways, as
math-verify reads it (the product first: 2/747, 1) and left to right ((2/3)·249 = 166, 9), and
a calculation is flagged only when no reading holds: ``2/3(249) - 83 = 83`` means (2/3)·249.
Anything else (a variable, a function, an unknown LaTeX command, an unbalanced side) makes that
side unevaluable, and it is skipped.

Rules (each errs on the side of not flagging):

- A side touching a variable or word (``2x``, ``f(3)``, ``a_{1}``, ``5!``, ``3:4``), preceded by a
  single-letter word or an operator word (``times``, ``of``, ``log``...), or starting or ending
  with a binary operator is incomplete and skipped. A LaTeX text group of words
  (``\\text{ of }``, ``\\text{ Å}``) is read as those words.
- Two bare numbers (``1 hour = 60``) are never compared: one side must hold an operation.
- A stated plain number with *d* digits after the point matches when it is within 10^-d of the
  exact value, so rounding and truncation to the stated precision pass (``10/3 = 3.33``,
  ``7/2 = 3``) while ``2 + 2 = 5`` and ``0.5 + 0.25 = 0.85`` do not.
- ``≈`` / ``\\approx`` allows a relative difference of 5%; an expression whose operands are
  decimals (maybe rounded themselves: ``7.5 + 3.333 = 10.83``) allows 0.5%.
- ``p%`` is p/100 as an operand (``20% of 50 = 10``, ``50\\% \\text{ of } 400 = 0.50 \\times 400``,
  ``15% × 200 = 30``); a percentage added to or subtracted from a number (``50 - 20%``) is
  ambiguous and skipped; ``2/5 × 100 = 40%`` and ``-1600/4800 × 100 = -33%`` pass.
- A running computation ``3 + 4 = 7 × 2 = 14`` (the right side starts with the left's value and
  continues) is not flagged.
- Units after numbers (and ``$`` before them) are read: a chain in one unit per dimension is
  checked as written (``5 cm + 3 cm = 8 cm``, ``8 hours × 5 = 40 hours``); a sum or difference
  of quantities in two units of one dimension is checked in the unit of its last number
  (``3 hours + 30 minutes = 210 minutes``, ``$5 + 50 cents = 5.50 dollars``, ``2 km + 300
  meters = 2300 meters``); any other mix (``3 hours × 20 = 60 minutes``, or a unit without a
  fixed size: months, years, pounds) is left alone.
- Bounded work: sides over 160 tokens, numbers over 60 digits, exponents that are not integers
  or whose result would exceed 20,000 bits, and nesting deeper than 40 are skipped; only
  windows of 400 characters around relation signs are tokenised.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

from misstep.rollouts import arithmetic_value

__all__ = ["WrongCalculation", "check_step", "find_arithmetic_error"]

_TOKEN = re.compile(
    # Most of a step is prose: spaces and phrases of words come first and are one token each.
    r"(?P<sp>\s+|\\[,;:!> ]|\\q?quad(?![A-Za-z])|~|&|\\\\)"
    r"|(?P<word>[^\W\d_]+(?:[ \t]+[^\W\d_]+)*)"
    r"|(?P<num>\d{1,3}(?:(?:,|\{,\}|,\\!|\\,|\u2009|\u202f)\d{3})+(?:\.\d+)?(?!\d)|\d+(?:\.\d+)?|\.\d+)"
    r"|(?P<delim>\\\$|\$|\\\(|\\\)|\\\[|\\\])"
    r"|(?P<text>\\(?:text|mathrm|textbf|textit|mbox|mathit|textrm)\s*\{[^{}]*\})"
    r"|(?P<eq>==?)"
    r"|(?P<approx>≈|\\approx(?![A-Za-z]))"
    r"|(?P<pct>\\?%)"
    r"|(?P<op>\*\*|[-+*/^×·÷−∗⋅]|\\(?:times|cdot|div|ast)(?![A-Za-z]))"
    r"|(?P<frac>\\[dt]?frac(?![A-Za-z]))"
    r"|(?P<lp>\\(?:left|bigg|Bigg|big|Big)l?\s*[(\[])"
    r"|(?P<rp>\\(?:right|bigg|Bigg|big|Big)r?\s*[)\]])"
    r"|(?P<ign>\\(?:left|right|bigg|Bigg|big|Big)[lr]?(?![A-Za-z])"
    r"|\\(?:displaystyle|boxed)(?![A-Za-z]))"
    r"|(?P<lp2>[(\[{])"
    r"|(?P<rp2>[)\]}])"
    r"|(?P<other2>\.{2,}|…)"  # an ellipsis continues the number before it
    r"|(?P<punct>[.,;?])"
    r"|(?P<other>\\[A-Za-z]+|.)",
    re.DOTALL,
)
_HAS_RELATION = re.compile(r"=|≈|\\approx")
# ASCII x or X between two numbers is a multiplication sign (250 x 2, 12X3); 2x = 10 is not.
_ASCII_TIMES = re.compile(r"(?<=[\d)])(\s*)[xX](?=\s*[\d(])")
# A unit after a number is not part of the arithmetic: 5 cm + 3 cm = 8 cm, 3 hours x 20. It is
# blanked before tokenising and kept (by the number's end) to read calculations that mix units.
_UNIT = re.compile(
    r"(?<=\d)(\s*)(?:\\(?:text|mathrm|mbox)\{\s*)?"
    r"(?P<unit>cm|mm|km|kg|mg|ml|lbs?|oz|ft|feet|foot|inch(?:es)?|yards?|yds?|miles?"
    r"|(?:kilo|centi|milli)?(?:meters?|metres?)|(?:milli)?(?:liters?|litres?)|gallons?"
    r"|(?:kilo)?grams?|hours?|hrs?|minutes?|mins?|seconds?|secs?|days?|weeks?|months?|years?"
    r"|dollars?|cents?|euros?|pounds?|units?|degrees?|mph|km/h)(?:\s*\})?(?![A-Za-z])"
)
# A dollar sign written before a number (\$5, $5) makes it dollars, for reading mixed units only.
_DOLLAR_BEFORE = re.compile(r"\\?\$(?=\d)")


def _unit_table() -> dict[str, tuple[str, Fraction | None]]:
    """Each unit's spelling -> (dimension, size in the dimension's base unit; None where it has
    no fixed size, such as a month, or is ambiguous, such as pounds of weight or money)."""
    table: dict[str, tuple[str, Fraction | None]] = {}
    sizes: list[tuple[str, str, str]] = [
        ("time", "1", "s sec secs second seconds"),
        ("time", "60", "min mins minute minutes"),
        ("time", "3600", "hr hrs hour hours"),
        ("time", "86400", "day days"),
        ("time", "604800", "week weeks"),
        ("time", "", "month months year years"),
        ("length", "0.001", "mm millimeter millimeters millimetre millimetres"),
        ("length", "0.01", "cm centimeter centimeters centimetre centimetres"),
        ("length", "1", "meter meters metre metres"),
        ("length", "1000", "km kilometer kilometers kilometre kilometres"),
        ("length", "0.0254", "inch inches"),
        ("length", "0.3048", "ft foot feet"),
        ("length", "0.9144", "yd yds yard yards"),
        ("length", "1609.344", "mile miles"),
        ("mass", "0.001", "mg"),
        ("mass", "1", "gram grams"),
        ("mass", "1000", "kg kilogram kilograms"),
        ("mass", "28.349523125", "oz"),
        ("mass", "453.59237", "lb lbs"),
        ("volume", "1", "ml milliliter milliliters millilitre millilitres"),
        ("volume", "1000", "liter liters litre litres"),
        ("volume", "3785.411784", "gallon gallons"),
        ("money", "1", "cent cents"),
        ("money", "100", "$ dollar dollars"),
    ]
    for dimension, size, spellings in sizes:
        for spelling in spellings.split():
            table[spelling] = (dimension, Fraction(size) if size else None)
    return table


_UNITS = _unit_table()

_MATH = frozenset({"num", "eq", "approx", "pct", "op", "frac", "lp", "rp"})
_WORDS = frozenset({"word", "textword"})
_TRANSPARENT = frozenset({"sp", "delim", "ign"})
_OPERAND_END = frozenset({"num", "rp", "pct"})
# Words that make an adjacent number an operand of something the parser cannot see.
_OPERATOR_WORDS = frozenset([
    "times", "plus", "minus", "by", "over", "half", "third", "thirds", "quarter", "quarters",
    "twice", "double", "triple", "mod", "divided", "multiplied", "squared", "cubed", "power",
    "choose",
    # functions: the number is their argument, not an operand of the chain
    "sqrt", "root", "log", "ln", "lg", "sin", "cos", "tan", "cot", "sec", "csc", "exp", "abs",
    "floor", "ceil",
])  # fmt: skip
_OP_CANON = {
    "+": "+", "-": "-", "−": "-",
    "*": "*", "×": "*", "·": "*", "∗": "*", "⋅": "*", "\\times": "*", "\\cdot": "*",
    "\\ast": "*", "of": "*", "/": "/", "÷": "/", "\\div": "/", "^": "^", "**": "^",
}  # fmt: skip

_MAX_SIDE_TOKENS = 160
_WINDOW = 400  # characters kept on each side of a relation sign
_WIDEN = 40  # how far a window edge may move to reach a space
_MAX_DIGITS = 60
_MAX_CHARS = 16_000  # never binding: a side is at most _MAX_SIDE_TOKENS tokens
_MAX_BITS = 20_000
_MAX_DEPTH = 40
_APPROX_REL = Fraction(5, 100)
_ROUNDED_REL = Fraction(5, 1000)


class _Unevaluable(Exception):
    """The side is not plain arithmetic (or too big to be worth it)."""


@dataclass(frozen=True)
class WrongCalculation:
    """The first wrong calculation found in a list of steps."""

    step: int
    """Index of the step holding it."""
    evidence: str
    """The calculation exactly as written in the step."""
    expression: str
    """The side that was computed, as written."""
    stated: str
    """The side that states a wrong result, as written."""
    correct: str
    """The exact value of ``expression``."""


# A token: (kind, text, start, end). Kinds are the regex group names above.
_Tok = tuple[str, str, int, int]


_KIND = {"lp2": "lp", "rp2": "rp", "other2": "other"}  # a regex cannot name two groups alike


# The words of a LaTeX text group (``\\text{ of }``, ``\\text{ Å}``): a ``textword`` token, read
# as the words it holds where they bear on the chain: "of" after a percentage, and a word before
# the first side. After the last side such a group is a unit (``= 2 \\times 10^{-5} \\text{ N}``)
# unless a number follows it (``58\\;\\mathrm{R}\\;5``, a remainder).
_TEXT_WORDS = re.compile(r"[^{]*\{\s*([^\W\d_]+(?:\s+[^\W\d_]+)*)\s*\}")


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "other"
        if kind == "text":
            # "50\% \text{ of } 400" is "50% of 400": a text group of words is those words
            words = _TEXT_WORDS.fullmatch(m.group())
            if words is not None:
                toks.append(("textword", words.group(1), m.start(), m.end()))
                continue
        toks.append((_KIND.get(kind, kind), m.group(), m.start(), m.end()))
    return toks


_OP_TEXT = {"+": "+", "-": "-", "*": "*", "/": "/", "^": "^"}  # canonical op -> grader's text


def _digits(text: str) -> str:
    """A number token without its thousands separators (``1{,}250`` -> ``1250``)."""
    for separator in ("{,}", ",\\!", "\\,", ",", "\u2009", "\u202f"):
        text = text.replace(separator, "")
    if len(text) > _MAX_DIGITS:
        raise _Unevaluable
    return text


def _number(text: str) -> Fraction:
    return Fraction(_digits(text))


def _expression(plain: list[tuple[str, str]], *, explicit: bool = False) -> str:
    """One side as text in the grader's grammar (``rollouts._arithmetic``), so that the judge
    reads it as grading reads an answer: ``×``/``·``/``\\cdot`` are ``*``, ``÷`` is ``/``,
    ``**`` is ``^``, brackets are parentheses, ``p%`` is ``(p/100)``. With ``explicit`` a
    product written without a sign before a bracket gets its sign (``2/3(249)`` becomes
    ``2/3*(249)``, read left to right). Raises ``_Unevaluable`` for what that grammar would
    read differently from the text: a percentage beside ``+`` or ``-`` (``50 - 20%``: of 50,
    or 0.2?), a ``%`` after anything but a number, nesting deeper than ``_MAX_DEPTH``."""
    out: list[str] = []
    depth = 0
    last = len(plain) - 1
    for i, (kind, text) in enumerate(plain):
        if kind == "num":
            digits = _digits(text)
            if i < last and plain[i + 1][0] == "pct":
                before = plain[i - 1] if i > 0 else None
                after = plain[i + 2] if i + 2 <= last else None
                binary_before = (
                    before is not None
                    and before[0] == "op"
                    and _OP_CANON[before[1]] in "+-"
                    and i >= 2
                    and plain[i - 2][0] in _OPERAND_END
                )
                if binary_before or (
                    after is not None and after[0] == "op" and _OP_CANON[after[1]] in "+-"
                ):
                    raise _Unevaluable
                out.append(f"({digits}/100)")
            else:
                out.append(digits)
        elif kind == "pct":
            if i == 0 or plain[i - 1][0] != "num":
                raise _Unevaluable
        elif kind == "scaled":  # a number converted to another unit, already in the grammar
            out.append(text)
        elif kind == "op":
            out.append(_OP_TEXT[_OP_CANON[text]])
        elif kind == "frac":
            out.append("\\frac")
        elif kind == "lp":
            depth += 1
            if depth > _MAX_DEPTH:
                raise _Unevaluable
            if explicit and i > 0 and plain[i - 1][0] in ("num", "rp", "scaled"):
                out.append("*")
            out.append("{" if text == "{" else "(")
        elif kind == "rp":
            depth -= 1
            out.append("}" if text == "}" else ")")
        else:
            raise _Unevaluable
    return "".join(out)


def _values(plain: list[tuple[str, str]]) -> tuple[Fraction, ...]:
    """The exact values of one side, computed by the grader's evaluator: none when it is not
    plain arithmetic; two when a product without a sign follows a division and the two
    readings differ (``6/2(1+2)``: 1 as math-verify and grading read it, 9 read left to right,
    as ``2/3(249)`` = 166 is meant)."""
    try:
        text = _expression(plain)
    except _Unevaluable:
        return ()
    value = arithmetic_value(text, max_chars=_MAX_CHARS, max_bits=_MAX_BITS)
    if value is None:
        return ()
    if "/" in text and any(
        kind == "lp" and plain[i - 1][0] in ("num", "rp", "scaled")
        for i, (kind, _) in enumerate(plain)
        if i
    ):
        explicit = _expression(plain, explicit=True)
        if explicit != text:
            other = arithmetic_value(explicit, max_chars=_MAX_CHARS, max_bits=_MAX_BITS)
            if other is not None and other != value:
                return value, other
    return (value,)


@dataclass
class _Side:
    toks: list[_Tok]
    value: Fraction | None = None
    readings: tuple[Fraction, ...] = ()  # value first; a second reading of a/b(c), if any
    literal_decimals: int | None = None  # d for a plain stated number (or percentage)
    percent_literal: bool = False
    has_op: bool = False
    rounded_operands: bool = False  # an expression with decimal operands: maybe rounded

    @property
    def start(self) -> int:
        return self.toks[0][2]

    @property
    def end(self) -> int:
        return self.toks[-1][3]


def _prev_solid(toks: list[_Tok], i: int) -> _Tok | None:
    while i >= 0 and toks[i][0] in _TRANSPARENT:
        i -= 1
    return toks[i] if i >= 0 else None


def _next_solid(toks: list[_Tok], i: int) -> _Tok | None:
    while i < len(toks) and toks[i][0] in _TRANSPARENT:
        i += 1
    return toks[i] if i < len(toks) else None


def _suspicious(word: str) -> bool:
    return len(word) == 1 or word.lower() in _OPERATOR_WORDS


def _suspicious_word(tok: _Tok | None, *, last_word: bool = False) -> bool:
    """A word or LaTeX command (\\pi, \\cos) suggesting the number beside it belongs to
    something unseen. Word tokens are phrases: the word that touches the number counts."""
    if tok is None:
        return False
    if tok[0] == "other":
        return tok[1].startswith("\\")
    if tok[0] not in ("word", "textword"):
        return False
    words = tok[1].split()
    return _suspicious(words[-1] if last_word else words[0])


def _suspicious_after(toks: list[_Tok], i: int) -> bool:
    """Whether the text starting at token ``i`` makes what precedes it an operand: a word
    (``3 x``), or a LaTeX text group with a number after it (``58\\;\\mathrm{R}\\;5``); a text
    group alone after a result is its unit (``2 \\times 10^{-5} \\text{ N}``)."""
    while i < len(toks) and toks[i][0] in _TRANSPARENT:
        i += 1
    if i < len(toks) and toks[i][0] == "textword":
        following = _next_solid(toks, i + 1)
        return following is not None and following[0] == "num"
    return _suspicious_word(toks[i] if i < len(toks) else None)


def _suspicious_before(toks: list[_Tok], i: int) -> bool:
    """Whether the text ending at token ``i`` makes what follows an operand of it."""
    while i >= 0 and toks[i][0] in _TRANSPARENT:
        i -= 1
    if i < 0:
        return False
    tok = toks[i]
    words = tok[1].split() if tok[0] in ("word", "textword") else []
    if words and words[-1].lower() == "of":
        # "a total of 3 + 4" is prose; "1/3 of 18 + 2" and "half of 10 + 2" are not
        if len(words) > 1:
            return _suspicious(words[-2])
        before = _prev_solid(toks, i - 1)
        return before is not None and (
            before[0] in _MATH or _suspicious_word(before, last_word=True)
        )
    return _suspicious_word(tok, last_word=True)


def _runs(toks: list[_Tok]) -> list[tuple[int, int, bool]]:
    """Maximal runs [first, last] of arithmetic tokens (spacing inside allowed), and whether
    the run follows another operand directly (``\\log_2 2^5``), which makes its start doubtful."""
    runs: list[tuple[int, int, bool]] = []
    first = last = -1
    doubtful = False
    split = False
    last_kind = ""
    for i, (kind, text, _, _) in enumerate(toks):
        if kind in _WORDS and first >= 0 and last_kind == "pct" and text.lower() == "of":
            toks[i] = ("op", "of", toks[i][2], toks[i][3])  # 20% of 50: a product
            last, last_kind = i, "op"
            continue
        if kind in _MATH:
            if first >= 0 and kind == "num" and last_kind in _OPERAND_END and last < i - 1:
                # "5 3 + 4": two operands apart are two separate things
                runs.append((first, last, doubtful))
                first, split = -1, True
            elif (
                first >= 0
                and last < i - 1
                and kind not in ("eq", "approx")
                and last_kind not in ("eq", "approx")
                and any("\n" in t[1] or t[1] in ("\\)", "\\]") for t in toks[last + 1 : i])
            ):
                # a new line or a closed formula starts a new chain unless = continues it
                runs.append((first, last, doubtful))
                first = -1
            if first < 0:
                first, doubtful, split = i, split, False
            last, last_kind = i, kind
        elif kind in _TRANSPARENT:
            continue
        elif first >= 0:
            runs.append((first, last, doubtful))
            first = -1
    if first >= 0:
        runs.append((first, last, doubtful))
    return runs


def _balance(side: list[_Tok], *, first: bool, last: bool) -> list[_Tok]:
    """Drop parentheses that belong to the surrounding text: "(so 3 + 4 = 7)". Only the first
    side may open before the chain and only the last may close after it; any other unmatched
    parenthesis means the side starts or ends inside a group, so it is incomplete."""
    depth = 0
    for i, tok in enumerate(side):
        if tok[0] == "lp":
            depth += 1
        elif tok[0] == "rp":
            depth -= 1
            if depth < 0:
                rest = side[i:]
                if not last or any(t[0] != "rp" for t in rest):
                    return []
                side = side[:i]
                depth = 0
                break
    if depth > 0:
        if not first:
            return []
        lead = 0
        while lead < len(side) and side[lead][0] == "lp":
            lead += 1
        if lead < depth:
            return []
        side = side[depth:]
    return side


def _is_markdown_star(tok: _Tok, neighbour: _Tok | None) -> bool:
    """``**3 + 4 = 7**``: a star touching the chain on its inner side only is markdown."""
    if tok[0] != "op" or tok[1] not in ("*", "**") or neighbour is None:
        return False
    return tok[3] == neighbour[2] or neighbour[3] == tok[2]


def _evaluate(side: _Side, scale: dict[int, Fraction] | None = None) -> None:
    """The side's value (each number times its factor in ``scale``, by start offset, when the
    chain converts units) and what kind of side it is."""
    toks = side.toks
    if len(toks) > _MAX_SIDE_TOKENS:
        return
    plain = [(k, t) for k, t, _, _ in toks if k not in _TRANSPARENT]
    kinds = [k for k, _ in plain]
    if kinds in (["num"], ["op", "num"], ["num", "pct"], ["op", "num", "pct"]) and (
        kinds[0] == "num" or _OP_CANON[plain[0][1]] == "-"
    ):
        number = plain[0][1] if kinds[0] == "num" else plain[1][1]
        side.literal_decimals = len(number.split(".")[1]) if "." in number else 0
        side.percent_literal = kinds[-1] == "pct"  # 40%, -33%
    else:
        side.has_op = any(k in ("op", "frac") for k in kinds) or "pct" in kinds
        side.rounded_operands = any(k == "num" and "." in t for k, t in plain)
    if scale:
        try:
            plain = [
                ("scaled", f"({_digits(t)}*{scale[start].numerator}/{scale[start].denominator})")
                if k == "num" and start in scale
                else (k, t)
                for k, t, start, _ in toks
                if k not in _TRANSPARENT
            ]
        except _Unevaluable:
            return
    side.readings = _values(plain)
    side.value = side.readings[0] if side.readings else None


def _within(exact: Fraction, stated: Fraction, decimals: int) -> bool:
    return abs(exact - stated) < Fraction(1, 10**decimals)


def _agree(left: _Side, right: _Side, approx: bool) -> bool:
    """Whether the two sides agree under some reading of each (``_values``)."""
    if left.value is None or right.value is None:
        return True
    if len(left.readings) == 1 and len(right.readings) == 1:
        return _agree_values(left, left.value, right, right.value, approx)
    return any(
        _agree_values(left, lv, right, rv, approx) for lv in left.readings for rv in right.readings
    )


def _agree_values(left: _Side, lv: Fraction, right: _Side, rv: Fraction, approx: bool) -> bool:
    if lv == rv:
        return True
    scale = max(abs(lv), abs(rv))
    if approx and abs(lv - rv) <= _APPROX_REL * scale:
        return True
    if (left.rounded_operands or right.rounded_operands) and abs(lv - rv) <= _ROUNDED_REL * scale:
        return True
    for stated, sv, ov in ((right, rv, lv), (left, lv, rv)):
        if stated.literal_decimals is None:
            continue
        d = stated.literal_decimals
        if stated.percent_literal:
            # 40% may state 0.4 or (after × 100) 40
            if _within(ov * 100, sv * 100, d) or _within(ov, sv * 100, d):
                return True
        elif _within(ov, sv, d):
            return True
    return False


def _running(left: _Side, right: _Side) -> bool:
    """3 + 4 = 7 × 2: the right side restarts from the left's value and continues."""
    plain = [t for t in right.toks if t[0] not in _TRANSPARENT]
    if len(plain) < 2 or plain[0][0] != "num" or plain[1][0] != "op":
        return False
    try:
        return _number(plain[0][1]) in left.readings
    except (_Unevaluable, ValueError):
        return False


def _sides(
    toks: list[_Tok], first: int, last: int
) -> tuple[list[_Side | None], list[bool], _Tok | None]:
    """Split a run on = / ≈ into sides (None where incomplete), whether each link is ≈, and
    the dash dropped from the first side as a list bullet (None when there was none)."""
    sides: list[_Side | None] = []
    approx: list[bool] = []
    current: list[_Tok] = []
    for tok in toks[first : last + 1]:
        if tok[0] in ("eq", "approx"):
            sides.append(_Side(current) if current else None)
            approx.append(tok[0] == "approx")
            current = []
        elif tok[0] not in _TRANSPARENT:
            current.append(tok)
    sides.append(_Side(current) if current else None)

    # The first side must not continue a word or variable on its left.
    head = sides[0]
    bullet: _Tok | None = None
    if head is not None:
        before = toks[first - 1] if first > 0 else None
        htoks = head.toks
        while len(htoks) > 1 and _is_markdown_star(htoks[0], htoks[1]):
            htoks = htoks[1:]
        if htoks and htoks[0][0] == "op" and _OP_CANON[htoks[0][1]] == "-":
            line_start = _prev_solid(toks, first - 1) is None or "\n" in (
                before[1] if before else "\n"
            )
            if htoks[0][3] < (htoks[1][2] if len(htoks) > 1 else htoks[0][3] + 1):
                # "- 3 + 4": a dash with a space after it is a bullet at a line start
                bullet = htoks[0] if line_start else None
                htoks = htoks[1:] if line_start else []
        if (
            (before is not None and before[0] in ("word", "textword", "other"))
            or _suspicious_before(toks, first - 1)
            or (htoks and htoks[0][0] == "op" and _OP_CANON[htoks[0][1]] != "-")
        ):
            htoks = []
        sides[0] = _Side(htoks) if htoks else None

    tail = sides[-1]
    if tail is not None:
        after = toks[last + 1] if last + 1 < len(toks) else None
        ttoks = tail.toks
        while len(ttoks) > 1 and _is_markdown_star(ttoks[-1], ttoks[-2]):
            ttoks = ttoks[:-1]
        if (
            (after is not None and after[0] in ("word", "other"))
            or _suspicious_after(toks, last + 1)
            or (ttoks and ttoks[-1][0] == "op")
        ):
            ttoks = []
        sides[-1] = _Side(ttoks) if ttoks else None

    for i, side in enumerate(sides):
        if side is not None:
            balanced = _balance(side.toks, first=i == 0, last=i == len(sides) - 1)
            sides[i] = _Side(balanced) if balanced else None
    return sides, approx, bullet


def _windows(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` around each relation sign (``_WINDOW`` characters each side, widened
    to a nearby space so a number is not cut), merged where they overlap. Only these are
    tokenised: time and memory per step grow with the calculations, not with the prose."""
    spans: list[tuple[int, int]] = []
    n = len(text)
    for m in _HAS_RELATION.finditer(text):
        start = max(0, m.start() - _WINDOW)
        end = min(n, m.end() + _WINDOW)
        if start > 0:
            space = text.rfind(" ", max(0, start - _WIDEN), start)
            start = space + 1 if space >= 0 else start
        if end < n:
            space = text.find(" ", end, min(n, end + _WIDEN))
            end = space if space >= 0 else end
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], end))
        else:
            spans.append((start, end))
    return spans


def check_step(text: str) -> tuple[str, str, str, str] | None:
    """The first wrong calculation in one step's text, as (evidence, expression, stated,
    correct value), or None."""
    for start, end in _windows(text):
        found = _check_window(text[start:end])
        if found is not None:
            return found
    return None


def _prepare(text: str) -> tuple[str, dict[int, str]]:
    """The text to tokenise, the same length as ``text`` (so that evidence is cut from the
    original): units after numbers blanked, an ASCII x between numbers made a ×; and the unit
    of each number that has one, by the number's end offset (a ``$`` before a number is
    dollars, by the number's start offset, negated and less one so the keys never collide)."""
    units: dict[int, str] = {}
    if "$" in text:
        for m in _DOLLAR_BEFORE.finditer(text):
            units[-1 - m.end()] = "$"

    def blank(match: re.Match[str]) -> str:
        units[match.start()] = match.group("unit").lower()
        return " " * len(match.group())

    text = _UNIT.sub(blank, text)
    return _ASCII_TIMES.sub(lambda m: m.group(1) + "×", text), units


def _unit_of(tok: _Tok, units: dict[int, str]) -> str | None:
    return units.get(tok[3]) or units.get(-1 - tok[2])


def _conversion(toks: list[_Tok], units: dict[int, str]) -> tuple[dict[int, Fraction], str] | None:
    """How to read the units of a chain's compared sides (``toks``): ``{}`` when they do not mix
    two units of one dimension (read as written, units aside: 5 cm + 3 cm = 8 cm); the factor
    turning each number into the unit of the last number when they are a sum or difference of
    quantities in units of one dimension with fixed sizes (3 hours + 30 minutes = 210 minutes:
    3 × 60 + 30); None when they mix units any other way (3 hours × 20 = 60 minutes): left
    alone. With the factors comes the unit the values are then in ("" when none)."""
    if not units:
        return {}, ""
    nums = [t for t in toks if t[0] == "num"]
    found = {t[2]: _unit_of(t, units) for t in nums}
    sizes = {u: _UNITS.get(u, (u, None)) for u in found.values() if u is not None}
    dimensions = Counter(dimension for dimension, _ in sizes.values())
    if all(count < 2 for count in dimensions.values()):
        return {}, ""
    target = found[nums[-1][2]]
    if (
        len(dimensions) != 1
        or target is None
        or any(u is None for u in found.values())
        or any(size is None for _, size in sizes.values())
        or any(
            t[0] in ("pct", "frac") or (t[0] == "op" and _OP_CANON[t[1]] not in "+-") for t in toks
        )
    ):
        return None
    base = sizes[target][1]
    scale: dict[int, Fraction] = {}
    for start, unit in found.items():
        size = sizes[unit or ""][1]
        if unit != target and size is not None and base is not None:
            scale[start] = size / base
    return scale, "dollars" if target == "$" else target or ""


def _check_window(text: str) -> tuple[str, str, str, str] | None:
    prepared, units = _prepare(text)
    toks = _tokenize(prepared)
    for first, last, doubtful in _runs(toks):
        if not any(toks[i][0] in ("eq", "approx") for i in range(first, last + 1)):
            continue
        sides, approx, bullet = _sides(toks, first, last)
        head = sides[0]
        if doubtful or (head is not None and len(head.toks) == 1 and head.end in units):
            # "400 degrees = 20 + 8": a quantity named, not a calculation checked
            sides[0] = None
        # the units of what is compared ("2.5 hours = 2.5 × 60 = 150 minutes" compares minutes)
        conversion = _conversion([t for side in sides if side for t in side.toks], units)
        if conversion is None:
            continue  # units mixed in a way that is not read: left alone
        scale, unit = conversion
        group_start: int | None = None
        group_has_op = False  # in 5 * 4 = 20 = 21 the bare 20 carries a computed value
        for i in range(len(approx)):
            left, right = sides[i], sides[i + 1]
            if left is None or right is None:
                group_start = None
                continue
            if group_start is None:
                group_start, group_has_op = left.start, False
                _evaluate(left, scale)
            _evaluate(right, scale)
            if left.value is None or right.value is None:
                group_start = None
                continue
            group_has_op = group_has_op or left.has_op or right.has_op
            if not group_has_op:
                continue
            if _agree(left, right, approx[i]) or _running(left, right):
                continue
            if i == 0 and bullet is not None:
                # "- 3 + 4 = 1": a bullet, or -3 + 4? Flag only if both readings are wrong.
                signed = _Side([bullet, *left.toks])
                _evaluate(signed, scale)
                if _agree(signed, right, approx[i]):
                    continue
            correct = " or ".join(_format(v) for v in left.readings)
            return (
                text[group_start : right.end],
                text[left.start : left.end],
                text[right.start : right.end],
                f"{correct} {unit}" if scale else correct,
            )
    return None


def _format(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    den, twos, fives = value.denominator, 0, 0
    while den % 2 == 0:
        den, twos = den // 2, twos + 1
    while den % 5 == 0:
        den, fives = den // 5, fives + 1
    places = max(twos, fives)
    if den == 1 and places <= 12:
        # a terminating decimal: write it exactly
        scaled = abs(value.numerator) * 10**places // value.denominator
        sign = "-" if value < 0 else ""
        whole, frac = divmod(scaled, 10**places)
        return f"{sign}{whole}.{frac:0{places}d}"
    return f"{value.numerator}/{value.denominator} (≈ {float(value):.6g})"


def find_arithmetic_error(steps: list[str]) -> WrongCalculation | None:
    """The first step holding a wrong explicit calculation, or None when none is found."""
    for index, step in enumerate(steps):
        found = check_step(step)
        if found is not None:
            evidence, expression, stated, correct = found
            return WrongCalculation(index, evidence, expression, stated, correct)
    return None
