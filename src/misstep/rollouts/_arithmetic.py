"""Values of arithmetic answers (``3+2``, ``2^3\\cdot 3^2``, ``\\frac{7}{2}-1``, ``2\\sqrt{3}``),
computed by a small recursive-descent parser over a closed grammar: never ``eval``.

Grammar (after ``normalize_answer``, which drops spaces and ``\\left``/``\\right``)::

    expr     := term (("+" | "-") term)*
    term     := implied (("*" | "/" | "\\cdot" | "\\times" | "\\div") implied)*
    implied  := unary atom*          a product written without a sign: 2\\sqrt{3}, 2(3+4)
    unary    := ("+" | "-") unary | postfix
    postfix  := power "!"?
    power    := atom ("^" ("-")? atom)?
    atom     := number | "(" expr ")" | "{" expr "}" | "\\frac{" expr "}{" expr "}"
              | "\\binom{" expr "}{" expr "}" | "\\sqrt" ("[" expr "]")? atom | "sqrt(" expr ")"
              | "\\pi" | variable | function ("(" expr ")" | term-without-functions)

The conventions are math-verify's (its LaTeX parser, latex2sympy2): a product without a sign
binds tighter than ``/`` (``27/2\\pi`` is 27/(2π)); a function without brackets takes the
product that follows, up to the next ``+``, ``-`` or function (``\\sin x/2`` is sin(x/2),
``\\tan 2023\\cdot\\pi`` is tan(2023π), ``\\log 7\\log 17`` a product of two logs); ``\\log``
is base 10; a single letter other than ``e`` (Euler's number) is a variable, ``i`` included. A
product continues with ``\\frac`` except after an integer or ``)``: ``3\\frac{1}{2}`` is a mixed
number there (7/2) and is left to math-verify.

``arithmetic_value`` gives the exact value (a ``Fraction``) of an answer without roots or π;
``numeric_value`` gives a 50-digit value of one with them; ``numeric_values`` also evaluates
an answer with variables at two more points (a negative and a complex one), so that two
expressions are compared as functions. Anything else (other letters, commas, sets) gives None
and the answer is left to math-verify. Work is bounded: powers up to ``_MAX_BITS`` bits in
exact mode and ``1e300`` in numeric mode, factorials up to 100!.
"""

from __future__ import annotations

import math
import re
import zlib
from fractions import Fraction
from typing import Any

__all__ = ["arithmetic_value", "numeric_value", "numeric_values", "variables"]

_MAX_CHARS = 200
_MAX_EXPONENT = 4096
_MAX_BITS = 256
_MAX_FACTORIAL = 100
_MAX_LOG10 = 100_000  # numeric mode: values up to 10^100000 (mpmath's exponent is unbounded)
_FUNCTIONS = {
    "sin": "sin", "cos": "cos", "tan": "tan", "cot": "cot", "sec": "sec", "csc": "csc",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "ln": "ln",
    "tan^{-1}": "atan", "sin^{-1}": "asin", "cos^{-1}": "acos", "log": "log10",
}  # fmt: skip
_GREEK = ("alpha", "beta", "gamma", "theta", "phi", "lambda", "mu", "sigma", "omega", "rho", "tau")
_TOKEN = re.compile(
    r"\d+(?:\.\d+)?|\.\d+|\\(?:d|t)?frac|\\binom|\\sqrt|sqrt|√|π|\\?pi(?![A-Za-z])|\\cdot|\\times|\\div"
    # Longer commands that start like a function (\sinh; spaces are gone, so "\sin h" too):
    # a token outside the grammar, so the answer is left to math-verify.
    r"|\\(?:sinh|cosh|tanh|coth|sech|csch|lnot|lneq|lnsim|lnapprox)"
    # \log_{10}, \log_2 (a subscript without braces is one character, as in LaTeX)
    r"|\\log_(?:(?=\{)|[0-9A-Za-z])"
    r"|\\(?:(?:sin|cos|tan)\^\{-1\}|arcsin|arccos|arctan|sin|cos|tan|cot|sec|csc|ln|log)"
    r"|(?:(?:sin|cos|tan)\^\{-1\}|arcsin|arccos|arctan|sin|cos|tan|cot|sec|csc|ln)"
    r"(?=[({]|\\(?:" + "|".join(_GREEK) + r")(?![A-Za-z]))"
    r"|\\(?:" + "|".join(_GREEK) + r")(?![A-Za-z])"
    r"|[A-DF-HJ-Za-z]|[-+*/^(){}\[\]!]"
)
_LOG_BASE = "\\log_"
_IRRATIONAL = ("\\sqrt", "sqrt", "√", "\\pi", "pi", "π", "e")
_STARTS_IMPLIED = frozenset({"(", "\\sqrt", "sqrt", "√", "\\pi", "pi", "π", "e", "\\binom"})


def _is_variable(token: str) -> bool:
    # e is Euler's number and i a plain variable, as math-verify reads them; E and I are left
    # out (a symbol and the imaginary unit there)
    return (len(token) == 1 and token.isalpha() and token != "e") or token[1:] in _GREEK


def _is_function(token: str) -> bool:
    return token.lstrip("\\") in _FUNCTIONS or token.startswith(_LOG_BASE)


def _point(name: str) -> float:
    """The value a free symbol takes in a fingerprint: the same as ``_equivalence``'s, so that
    values computed here and from math-verify's parse can be compared."""
    return 0.5 + (zlib.crc32(name.encode()) % 997) / 1709


POINTS = 3
"""Points at which ``numeric_values`` evaluates an answer with variables."""


def _point_at(name: str, index: int, mp: Any) -> Any:
    """The value of a variable at point ``index``: 0 is ``_point`` (positive, shared with
    math-verify's fingerprints), 1 a negative number and 2 a complex one, so that expressions
    that agree only on the positive reals (``\\sqrt{x^2}`` and ``x``) are told apart."""
    if index == 0:
        return mp.mpf(_point(name))
    salt = zlib.crc32((name + "'" * index).encode())
    if index == 1:
        return -mp.mpf(0.5 + (salt % 997) / 1709)
    return mp.mpc(0.3 + (salt % 997) / 1709, 0.4 + (salt % 991) / 1997)


def _integral(value: Any, mp: Any) -> bool:
    return bool(mp.im(value) == 0 and mp.re(value) == mp.floor(mp.re(value)))


class _Fail(Exception):
    pass


class _Parser:
    __slots__ = ("exact", "max_bits", "mp", "point", "pos", "symbols", "tokens")

    def __init__(
        self, tokens: list[str], exact: bool, point: int, max_bits: int = _MAX_BITS
    ) -> None:
        self.tokens = tokens
        self.max_bits = max_bits
        self.pos = 0
        self.exact = exact
        self.point = point
        self.symbols = False
        self.mp: Any = None
        if not exact:
            import mpmath  # type: ignore[import-untyped]

            self.mp = mpmath

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise _Fail
        self.pos += 1
        return token

    def number(self, value: Fraction) -> Any:
        return value if self.exact else self.mp.mpf(value.numerator) / value.denominator

    def expr(self) -> Any:
        value = self.term()
        while self.peek() in ("+", "-"):
            value = value + self.term() if self.take() == "+" else value - self.term()
        return value

    def term(self, nofunc: bool = False) -> Any:
        value = self.implied(nofunc)
        while True:
            token = self.peek()
            if token in ("*", "\\cdot", "\\times"):
                self.take()
                value = value * self.implied(nofunc)
            elif token in ("/", "\\div"):
                self.take()
                divisor = self.implied(nofunc)
                if divisor == 0:
                    raise _Fail
                value = value / divisor
            else:
                return value

    def implied(self, nofunc: bool = False) -> Any:
        value = self.unary()
        while True:
            token = self.peek()
            if token is None:
                return value
            if _is_function(token):
                if nofunc:  # a function's argument without brackets ends at the next one
                    return value
            elif token in ("\\frac", "\\dfrac", "\\tfrac"):
                before = self.tokens[self.pos - 1]
                if before.isdigit() or before == ")":
                    return value  # 3\frac{1}{2}: a mixed number to math-verify (parse fails)
            elif not (token in _STARTS_IMPLIED or _is_variable(token)):
                return value
            value = value * self.postfix()

    def unary(self) -> Any:
        token = self.peek()
        if token == "-":
            self.take()
            return -self.unary()
        if token == "+":
            self.take()
            return self.unary()
        return self.postfix()

    def postfix(self) -> Any:
        value = self.power()
        if self.peek() == "!":
            self.take()
            if not self.exact and not _integral(value, self.mp):
                # (d-1)! at a variable's point: Γ(d), as sympy evaluates factorial(d - 1)
                if abs(value) > _MAX_FACTORIAL:
                    raise _Fail
                return self.mp.gamma(value + 1)
            n = self.integer(value)
            if not 0 <= n <= _MAX_FACTORIAL:
                raise _Fail
            return self.number(Fraction(math.factorial(n)))
        return value

    def integer(self, value: Any) -> int:
        if self.exact:
            if value.denominator != 1:
                raise _Fail
            return int(value.numerator)
        if value != int(value):
            raise _Fail
        return int(value)

    def power(self) -> Any:
        base = self.atom()
        if self.peek() != "^":
            return base
        self.take()
        if self.peek() == "-":
            self.take()
            exponent = -self.atom()
        else:
            exponent = self.atom()
        if self.exact:
            if exponent.denominator != 1 or abs(exponent) > _MAX_EXPONENT:
                raise _Fail
            e = int(exponent)
            if base == 0 and e < 0:
                raise _Fail
            size = max(base.numerator.bit_length(), base.denominator.bit_length())
            if size * abs(e) > self.max_bits:
                raise _Fail
            return base**e
        if abs(exponent) > _MAX_EXPONENT or (base == 0 and exponent <= 0):
            raise _Fail
        if base != 0 and abs(exponent) * self.mp.log(abs(base), 10) > _MAX_LOG10:
            raise _Fail
        return self.mp.power(base, exponent)

    def braced(self) -> Any:
        self.take("{")
        value = self.expr()
        self.take("}")
        return value

    def atom(self) -> Any:
        token = self.take()
        if token[0].isdigit() or token[0] == ".":
            return self.number(Fraction(token))
        closing = {"(": ")", "{": "}"}.get(token)
        if closing is not None:
            value = self.expr()
            self.take(closing)
            return value
        if token in ("\\frac", "\\dfrac", "\\tfrac"):
            num = self.braced()
            den = self.braced()
            if den == 0:
                raise _Fail
            return num / den
        if token == "\\binom":
            n, k = self.integer(self.braced()), self.integer(self.braced())
            if not 0 <= n <= 1000:
                raise _Fail
            return self.number(Fraction(math.comb(n, k) if k >= 0 else 0))
        if self.exact:
            raise _Fail
        if token in ("\\pi", "pi", "π"):
            return +self.mp.pi
        if token == "e":
            return +self.mp.e
        if token == "√":
            return self.mp.sqrt(self.atom())
        if token == "\\sqrt":
            degree = self.mp.mpf(2)
            if self.peek() == "[":
                self.take()
                degree = self.expr()
                self.take("]")
                if degree == 0:
                    raise _Fail
            radicand = self.atom()
            if degree == 2:
                return self.mp.sqrt(radicand)
            return self.mp.root(radicand, self.integer(degree))
        if token == "sqrt":
            self.take("(")
            value = self.expr()
            self.take(")")
            return self.mp.sqrt(value)
        if token.startswith(_LOG_BASE):
            # \log_{b} x is log(x, b), math-verify's reading
            base = token[len(_LOG_BASE) :]
            if not base:
                base_value = self.braced()
            elif base.isdigit():
                base_value = self.number(Fraction(base))
            elif base == "e":
                base_value = +self.mp.e
            elif _is_variable(base):
                self.symbols = True
                base_value = _point_at(base, self.point, self.mp)
            else:
                raise _Fail
            argument = self.atom() if self.peek() == "(" else self.term(nofunc=True)
            return self.mp.log(argument) / self.mp.log(base_value)
        if _is_function(token):
            # \cos(x); without brackets the product that follows: \cos 2\theta, \sin x/2
            argument = self.atom() if self.peek() == "(" else self.term(nofunc=True)
            return getattr(self.mp, _FUNCTIONS[token.lstrip("\\")])(argument)
        if _is_variable(token):
            self.symbols = True
            return _point_at(token.lstrip("\\"), self.point, self.mp)
        raise _Fail


def _tokens(text: str, max_chars: int = _MAX_CHARS) -> list[str] | None:
    if not text or len(text) > max_chars:
        return None
    tokens = _TOKEN.findall(text)
    if "".join(tokens) != text:
        return None  # something outside the grammar (a letter, a comma)
    return tokens


def _run(
    tokens: list[str], exact: bool, point: int = 0, max_bits: int = _MAX_BITS
) -> tuple[Any, bool]:
    parser = _Parser(tokens, exact, point, max_bits)
    try:
        value = parser.expr()
    except (_Fail, ZeroDivisionError, OverflowError, ValueError, TypeError):
        # TypeError: an integer asked of a complex value (a factorial at the complex point)
        return None, False
    return (value if parser.pos == len(tokens) else None), parser.symbols


def arithmetic_value(
    text: str, *, max_chars: int = _MAX_CHARS, max_bits: int = _MAX_BITS
) -> Fraction | None:
    """The exact value of ``text`` when it is arithmetic without roots or π, else None.

    ``max_chars`` and ``max_bits`` bound the work (the text's length, a power's size in bits);
    grading uses the defaults. The rules judge reads calculations with this same function (one
    reading of ``6/2(1+2)`` for answers and steps) and passes larger bounds, since a step's
    ``3^{2021}`` is worth checking where an answer of that size is left to math-verify."""
    tokens = _tokens(text, max_chars)
    if tokens is None or any(
        t in _IRRATIONAL or _is_variable(t) or _is_function(t) for t in tokens
    ):
        return None
    value, _ = _run(tokens, exact=True, max_bits=max_bits)
    return value if isinstance(value, Fraction) else None


def _evaluate(tokens: list[str], point: int) -> tuple[complex | None, bool] | None:
    """The value at one point as a complex number (infinite when finite but beyond the float
    range), and whether the answer has a variable; None outside the grammar or for NaN."""
    value, symbols = _run(tokens, exact=False, point=point)
    if value is None:
        return None
    result = complex(value)
    if result != result:
        return None
    if math.isinf(abs(result)):
        import mpmath

        # finite in mpmath (whose exponent is unbounded), beyond the float range
        return (None if mpmath.isinf(value) else complex(math.inf)), symbols
    return result, symbols


def numeric_value(text: str) -> tuple[complex, bool] | None:
    """The value of ``text`` computed with 50 digits (roots, π, trigonometric functions and
    single-letter variables allowed; a variable takes a fixed value derived from its name),
    and whether it holds a variable; None when it is outside the grammar or beyond the float
    range."""
    got = numeric_values(text, points=1)
    if got is None or math.isinf(abs(got[0][0])):
        return None
    return got[0][0], got[1]


def numeric_values(text: str, points: int = POINTS) -> tuple[tuple[complex, ...], bool] | None:
    """``numeric_value`` at each of ``points`` points: one value for an answer without
    variables, else ``points`` (None when it has no value at one of them). A finite value
    beyond the float range (``2022^{2023}``) is given as an infinity."""
    tokens = _tokens(text)
    if tokens is None:
        return None
    import mpmath

    values: list[complex] = []
    # 50 digits: a cancellation such as (x + 10^{30}) - 10^{30} still leaves 20
    with mpmath.workdps(50):
        for point in range(points):
            got = _evaluate(tokens, point)
            if got is None or got[0] is None:
                return None
            values.append(got[0])
            if not got[1]:
                return (got[0],), False
    return tuple(values), True


def variables(text: str) -> frozenset[str] | None:
    """The variables ``text`` uses (``x``, ``\\theta``), or None when it is outside the
    grammar's tokens."""
    tokens = _tokens(text)
    if tokens is None:
        return None
    return frozenset(t.lstrip("\\") for t in tokens if _is_variable(t))
