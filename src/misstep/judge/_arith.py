"""Find wrong explicit calculations in reasoning steps, with exact rational arithmetic.

Trace text is untrusted, so nothing here evaluates it as code: a regex tokenizer turns a step
into tokens, runs of arithmetic tokens holding ``=`` or ``≈`` become chains ``a = b = c``, and a
small recursive-descent parser that knows numbers, + - × / ^, parentheses, ``\\frac`` and ``%``
computes each side as a :class:`fractions.Fraction`. Anything else (a variable, a function, an
unknown LaTeX command, an unbalanced side) makes that side unevaluable, and it is skipped.

Rules (each errs on the side of not flagging):

- A side touching a variable or word (``2x``, ``f(3)``, ``a_{1}``, ``5!``, ``3:4``), preceded by a
  single-letter word or an operator word (``times``, ``of``, ``log``...), or starting or ending
  with a binary operator is incomplete and skipped.
- Two bare numbers (``1 hour = 60``) are never compared: one side must hold an operation.
- A stated plain number with *d* digits after the point matches when it is within 10^-d of the
  exact value, so rounding and truncation to the stated precision pass (``10/3 = 3.33``,
  ``7/2 = 3``) while ``2 + 2 = 5`` and ``0.5 + 0.25 = 0.85`` do not.
- ``≈`` / ``\\approx`` allows a relative difference of 5%; an expression whose operands are
  decimals (maybe rounded themselves: ``7.5 + 3.333 = 10.83``) allows 0.5%.
- ``p%`` is p/100 as an operand (``20% of 50 = 10``, ``15% × 200 = 30``); a percentage added to
  or subtracted from a number (``50 - 20%``) is ambiguous and skipped; ``2/5 × 100 = 40%`` passes.
- A running computation ``3 + 4 = 7 × 2 = 14`` (the right side starts with the left's value and
  continues) is not flagged.
- Bounded work: sides over 160 tokens, numbers over 60 digits, exponents that are not integers
  or whose result would exceed 20,000 bits, and nesting deeper than 40 are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

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
# A unit after a number is not part of the arithmetic: 5 cm + 3 cm = 8 cm, 3 hours x 20.
_UNIT = re.compile(
    r"(?<=\d)(\s*)(?:\\(?:text|mathrm|mbox)\{\s*)?"
    r"(?:cm|mm|km|kg|mg|ml|lbs?|oz|ft|feet|inch(?:es)?|miles?|meters?|metres?|liters?|litres?"
    r"|grams?|kilograms?|hours?|hrs?|minutes?|mins?|seconds?|secs?|days?|weeks?|months?|years?"
    r"|dollars?|cents?|euros?|pounds?|units?|degrees?|mph|km/h)(?:\s*\})?(?![A-Za-z])"
)

_MATH = frozenset({"num", "eq", "approx", "pct", "op", "frac", "lp", "rp"})
_TRANSPARENT = frozenset({"sp", "delim", "ign"})
_OPERAND_END = frozenset({"num", "rp", "pct"})
# Words that make an adjacent number an operand of something the parser cannot see.
_OPERATOR_WORDS = frozenset(
    [
        "times",
        "plus",
        "minus",
        "by",
        "over",
        "half",
        "third",
        "thirds",
        "quarter",
        "quarters",
        "twice",
        "double",
        "triple",
        "mod",
        "divided",
        "multiplied",
        "squared",
        "cubed",
        "sqrt",
        "root",
        "log",
        "ln",
        "lg",
        "sin",
        "cos",
        "tan",
        "cot",
        "sec",
        "csc",
        "exp",
        "abs",
        "floor",
        "ceil",
        "choose",
        "power",
    ]
)
_OP_CANON = {
    "+": "+", "-": "-", "−": "-",
    "*": "*", "×": "*", "·": "*", "∗": "*", "⋅": "*", "\\times": "*", "\\cdot": "*",
    "\\ast": "*", "of": "*", "/": "/", "÷": "/", "\\div": "/", "^": "^", "**": "^",
}  # fmt: skip

_MAX_SIDE_TOKENS = 160
_WINDOW = 400  # characters kept on each side of a relation sign
_WIDEN = 40  # how far a window edge may move to reach a space
_MAX_DIGITS = 60
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


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "other"
        toks.append((_KIND.get(kind, kind), m.group(), m.start(), m.end()))
    return toks


class _Parser:
    """Recursive descent over one side: expr := term (+|- term)*; term := unary ((*|/)? unary)*;
    unary := -unary | power; power := postfix (^ unary)?; postfix := primary %?;
    primary := number | ( expr ) | \\frac{expr}{expr}. Values are (Fraction, is_percentage)."""

    __slots__ = ("depth", "pos", "toks")

    def __init__(self, toks: list[tuple[str, str]]) -> None:
        self.toks = toks
        self.pos = 0
        self.depth = 0

    def peek(self) -> tuple[str, str]:
        return self.toks[self.pos] if self.pos < len(self.toks) else ("end", "")

    def parse(self) -> Fraction:
        value, _ = self.expr()
        if self.pos != len(self.toks):
            raise _Unevaluable
        return value

    def expr(self) -> tuple[Fraction, bool]:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Unevaluable
        value, pct = self.term()
        while True:
            kind, text = self.peek()
            if kind != "op" or _OP_CANON[text] not in "+-":
                break
            self.pos += 1
            rhs, rpct = self.term()
            if pct or rpct:  # 50 - 20%: of 50, or 0.2? ambiguous
                raise _Unevaluable
            value = value + rhs if _OP_CANON[text] == "+" else value - rhs
        self.depth -= 1
        return value, pct

    def term(self) -> tuple[Fraction, bool]:
        value, pct = self.unary()
        while True:
            kind, text = self.peek()
            if kind == "op" and _OP_CANON[text] in "*/":
                self.pos += 1
                rhs, _ = self.unary()
                if _OP_CANON[text] == "*":
                    value *= rhs
                elif rhs == 0:
                    raise _Unevaluable
                else:
                    value /= rhs
            elif kind == "lp" or kind == "frac":
                # Implicit product 2(3+4); but 2\frac{1}{2} is a mixed number: skip it.
                if kind == "frac" and self.toks[self.pos - 1][0] == "num":
                    raise _Unevaluable
                rhs, _ = self.unary()
                value *= rhs
            else:
                return value, pct
            pct = False
            _check_size(value)

    def unary(self) -> tuple[Fraction, bool]:
        kind, text = self.peek()
        if kind == "op" and _OP_CANON[text] == "-":
            self.pos += 1
            self.depth += 1
            if self.depth > _MAX_DEPTH:
                raise _Unevaluable
            value, pct = self.unary()
            self.depth -= 1
            return -value, pct
        return self.power()

    def power(self) -> tuple[Fraction, bool]:
        base, pct = self.postfix()
        kind, text = self.peek()
        if kind == "op" and _OP_CANON[text] == "^":
            self.pos += 1
            self.depth += 1
            if self.depth > _MAX_DEPTH:
                raise _Unevaluable
            exponent, epct = self.unary()
            self.depth -= 1
            if epct or exponent.denominator != 1:
                raise _Unevaluable
            e = exponent.numerator
            size = max(base.numerator.bit_length(), base.denominator.bit_length())
            if abs(e) * size > _MAX_BITS or (base == 0 and e < 0):
                raise _Unevaluable
            return base**e, False
        return base, pct

    def postfix(self) -> tuple[Fraction, bool]:
        value = self.primary()
        if self.peek()[0] == "pct":
            self.pos += 1
            return value / 100, True
        return value, False

    def primary(self) -> Fraction:
        kind, text = self.peek()
        if kind == "num":
            self.pos += 1
            return _number(text)
        if kind == "lp":
            self.pos += 1
            value, _ = self.expr()
            if self.peek()[0] != "rp":
                raise _Unevaluable
            self.pos += 1
            return value
        if kind == "frac":
            self.pos += 1
            num = self.group()
            den = self.group()
            if den == 0:
                raise _Unevaluable
            return num / den
        raise _Unevaluable

    def group(self) -> Fraction:
        if self.peek() != ("lp", "{"):
            raise _Unevaluable
        self.pos += 1
        value, _ = self.expr()
        if self.peek() != ("rp", "}"):
            raise _Unevaluable
        self.pos += 1
        return value


def _check_size(value: Fraction) -> None:
    if value.numerator.bit_length() > _MAX_BITS or value.denominator.bit_length() > _MAX_BITS:
        raise _Unevaluable


def _number(text: str) -> Fraction:
    digits = text
    for separator in ("{,}", ",\\!", "\\,", ",", "\u2009", "\u202f"):
        digits = digits.replace(separator, "")
    if len(digits) > _MAX_DIGITS:
        raise _Unevaluable
    return Fraction(digits)


@dataclass
class _Side:
    toks: list[_Tok]
    value: Fraction | None = None
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
    if tok[0] != "word":
        return False
    words = tok[1].split()
    return _suspicious(words[-1] if last_word else words[0])


def _suspicious_before(toks: list[_Tok], i: int) -> bool:
    """Whether the text ending at token ``i`` makes what follows an operand of it."""
    while i >= 0 and toks[i][0] in _TRANSPARENT:
        i -= 1
    if i < 0:
        return False
    tok = toks[i]
    words = tok[1].split() if tok[0] == "word" else []
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
        if kind == "word" and first >= 0 and last_kind == "pct" and text.lower() == "of":
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


def _evaluate(side: _Side) -> None:
    toks = side.toks
    if len(toks) > _MAX_SIDE_TOKENS:
        return
    plain = [(k, t) for k, t, _, _ in toks if k not in _TRANSPARENT]
    kinds = [k for k, _ in plain]
    if kinds in (["num"], ["op", "num"], ["num", "pct"]) and (
        kinds[0] == "num" or _OP_CANON[plain[0][1]] == "-"
    ):
        number = plain[0][1] if kinds[0] == "num" else plain[1][1]
        side.literal_decimals = len(number.split(".")[1]) if "." in number else 0
        side.percent_literal = kinds == ["num", "pct"]
    else:
        side.has_op = any(k in ("op", "frac") for k in kinds) or "pct" in kinds
        side.rounded_operands = any(k == "num" and "." in t for k, t in plain)
    try:
        side.value = _Parser(plain).parse()
    except (_Unevaluable, ValueError, ZeroDivisionError, OverflowError):
        side.value = None


def _within(exact: Fraction, stated: Fraction, decimals: int) -> bool:
    return abs(exact - stated) < Fraction(1, 10**decimals)


def _agree(left: _Side, right: _Side, approx: bool) -> bool:
    lv, rv = left.value, right.value
    if lv is None or rv is None:
        return True
    if lv == rv:
        return True
    scale = max(abs(lv), abs(rv))
    if approx and abs(lv - rv) <= _APPROX_REL * scale:
        return True
    if (left.rounded_operands or right.rounded_operands) and abs(lv - rv) <= _ROUNDED_REL * scale:
        return True
    for stated, other in ((right, left), (left, right)):
        if stated.literal_decimals is None or stated.value is None or other.value is None:
            continue
        d = stated.literal_decimals
        if stated.percent_literal:
            # 40% may state 0.4 or (after × 100) 40
            if _within(other.value * 100, stated.value * 100, d) or _within(
                other.value, stated.value * 100, d
            ):
                return True
        elif _within(other.value, stated.value, d):
            return True
    return False


def _running(left: _Side, right: _Side) -> bool:
    """3 + 4 = 7 × 2: the right side restarts from the left's value and continues."""
    plain = [t for t in right.toks if t[0] not in _TRANSPARENT]
    if len(plain) < 2 or plain[0][0] != "num" or plain[1][0] != "op":
        return False
    try:
        return _number(plain[0][1]) == left.value
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
            (before is not None and before[0] in ("word", "other"))
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
            or _suspicious_word(_next_solid(toks, last + 1))
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


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group())


def _prepare(text: str) -> tuple[str, set[int]]:
    """The text to tokenise, the same length as ``text`` (so that evidence is cut from the
    original): units after numbers blanked, an ASCII x between numbers made a ×; and the end
    offsets of the numbers that had a unit."""
    unit_ends = {m.start() for m in _UNIT.finditer(text)}
    text = _UNIT.sub(_blank, text)
    return _ASCII_TIMES.sub(lambda m: m.group(1) + "×", text), unit_ends


def _check_window(text: str) -> tuple[str, str, str, str] | None:
    prepared, unit_ends = _prepare(text)
    toks = _tokenize(prepared)
    for first, last, doubtful in _runs(toks):
        if not any(toks[i][0] in ("eq", "approx") for i in range(first, last + 1)):
            continue
        sides, approx, bullet = _sides(toks, first, last)
        head = sides[0]
        if doubtful or (head is not None and len(head.toks) == 1 and head.end in unit_ends):
            # "400 degrees = 20 + 8": a quantity named, not a calculation checked
            sides[0] = None
        group_start: int | None = None
        group_has_op = False  # in 5 * 4 = 20 = 21 the bare 20 carries a computed value
        for i in range(len(approx)):
            left, right = sides[i], sides[i + 1]
            if left is None or right is None:
                group_start = None
                continue
            if group_start is None:
                group_start, group_has_op = left.start, False
                _evaluate(left)
            _evaluate(right)
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
                _evaluate(signed)
                if _agree(signed, right, approx[i]):
                    continue
            return (
                text[group_start : right.end],
                text[left.start : left.end],
                text[right.start : right.end],
                _format(left.value),
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
