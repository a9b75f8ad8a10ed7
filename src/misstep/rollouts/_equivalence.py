"""Answer equivalence in O(distinct answers): canonical keys, numeric fingerprints, then
math-verify only for the pairs that are left, in a process pool.

Decided from the canonical keys alone (``keys_decide``), without math-verify:

- equal keys are equivalent;
- two exact rationals are equal when their values are, or, when either is a non-integer
  decimal (``0.6666666667``, ``2.5``), when they agree within a relative tolerance of
  ``DECIMAL_REL_TOL`` = 1e-4 (the rule of the ``math_equal`` used by the ToRA, DeepSeek-Math
  and Qwen2.5-Math harnesses, which also apply it to integers; here ``10000`` != ``10001``);
- two word answers (``w:`` keys, compared without case) differ when their keys do.

Every other distinct answer gets a *fingerprint* once per problem: its value at a fixed point
(each free symbol set from its name). Answers in the grammar of misstep's own parser
(``_arithmetic``: arithmetic, roots, π, e, trigonometry, logarithms, single-letter variables,
equations of such sides) get it without math-verify (``cheap_fingerprint``), with values at a
negative and a complex point as well when they have variables; the others are parsed once by
math-verify (a series, integral, limit or derivative gets no value: ``verify`` decides its
pairs). Two answers whose fingerprints are far apart are not equal; a non-integer decimal
and a value within the tolerance are; two answers of misstep's grammar are equal when their
values agree at all three points (``_points_verdict``); an answer that does not parse equals
nothing. Only the rest reach ``verify``. Grouping answers
into classes compares each answer, most frequent first, with the class representatives whose
value is near its own (a sorted index), plus those without a value (sets, strings, percentages):
the work grows with the number of distinct answers, not its square. ``max_cluster_pairs``
bounds the ``verify`` calls per problem; answers it leaves in a class of their own are counted
in ``stats.ungrouped`` (a class can be split by it, never wrongly merged).

math-verify runs in a ``ProcessPoolExecutor`` (fork start). The pool starts with one worker
(started by the first answer that needs math-verify, which ``prefetch`` sends while the caller
reads on; a run whose answers misstep's rules decide starts none) and gets ``os.cpu_count()``
workers (by default) once parse work queues up or a solve has more than a few problems.
Each parse and comparison runs under a ``SIGALRM`` interval timer set by the worker
itself (tasks run in the worker's main thread, where signals work); math-verify's own timeouts
are disabled. Over the timeout counts as *not equivalent* and is counted in
``stats.timeouts``. A worker stuck in C code ignores the signal: when no task finishes for
``2 * timeout_s + stall_grace_s`` the pool is killed and replaced, the tasks that were running
are retried once in the new pool, and a task that stalls twice gets "not equivalent" for all its
comparisons (counted as timeouts). Results are cached per distinct (gold key, answer key) pair
for the life of the checker; a problem's answers come from all its checkpoints at once.
"""

from __future__ import annotations

import bisect
import ctypes
import functools
import logging
import math
import multiprocessing
import os
import re
import signal
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from fractions import Fraction
from types import FrameType
from typing import Any, Protocol

from misstep.rollouts._arithmetic import POINTS, numeric_value, numeric_values, variables
from misstep.rollouts._normalize import canonical_key, exact_rational
from misstep.rollouts._structure import Interval, parse_structure, parse_union

__all__ = [
    "DECIMAL_REL_TOL",
    "EquivalenceChecker",
    "EquivalenceStats",
    "ProblemResult",
    "ProblemTask",
    "answer_needs_math_verify",
    "answers_equivalent",
    "cheap_fingerprint",
    "is_rational_key",
    "is_word_key",
    "keys_decide",
    "math_verify_equal",
    "solve_here",
]

DEFAULT_MAX_CLUSTER_PAIRS = 100_000
"""math-verify comparisons allowed per problem for grouping answers into classes. Answers are
compared only with class representatives whose numeric value is near their own, so real
problems stay far below it; answers it leaves ungrouped are counted (``EquivalenceStats``)."""
_PREFETCH_BATCH = 8  # answers per prefetch task
_CHUNK_TASKS = 8  # problems per pool task: amortises pickling without starving a worker
# Prefetch batches waiting on a one-worker pool before it gets every worker. A worker costs
# about a second of CPU to load math-verify, a parse 5-30 ms: a second worker pays only for
# some 64 answers (8 batches) or more. With 3, a run with a few dozen odd answers (the
# few-samples case: 20) started a second worker while the first was still loading, on a
# 2-core machine a second of CPU taken from the reader.
_GROW_BACKLOG = 8
_GROW_TASKS = 8  # problems for the pool above which it gets every worker


def is_rational_key(key: str) -> bool:
    """Whether a canonical key is an exact rational (``q:...``)."""
    return key.startswith("q:")


class _ComparisonTimeout(BaseException):
    """Raised by the worker's alarm; a BaseException so that math-verify does not swallow it."""


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise _ComparisonTimeout


def _die_with_parent(parent: int) -> None:
    """Make this worker end when the process that made the pool ends, however it ends (kill -9
    included): otherwise a worker blocked on the pool's pipe lives on for minutes."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)

    def watch() -> None:  # the portable fallback: poll the parent
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="misstep-parent-watch", daemon=True).start()


def _init_worker(parent: int, warm: bool = False) -> None:
    _die_with_parent(parent)
    # Ctrl-C reaches the whole process group: the parent handles it and ends the pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, _on_alarm)
    # math-verify logs a warning on every call made with its own timeout disabled.
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    if warm:
        _warm_up()


def _as_latex(answer: str) -> str:
    return answer if "$" in answer or "\\boxed" in answer else "\\boxed{" + answer + "}"


def math_verify_equal(gold: str, answer: str) -> bool:
    """math-verify's verdict on two answer strings, with its own timeouts disabled.

    Call it only under a timeout of your own (the pool's workers set one).
    """
    from math_verify import parse, verify

    g = parse(_as_latex(gold), parsing_timeout=None)
    a = parse(_as_latex(answer), parsing_timeout=None)
    if not g or not a:
        return False
    return bool(verify(g, a, timeout_seconds=None))


# (text_a, key_a, text_b, key_b) -> equivalent
Comparator = Callable[[str, str, str, str], bool]


@dataclass(frozen=True, slots=True)
class _Fp:
    """What one parse tells about an answer, for skipping ``verify``."""

    value: complex | None = None
    """Its value (free symbols set from their names), or None when it has none."""
    equation: bool = False
    """Whether it is an equation (``value`` is then its right-hand side)."""
    decimal: bool = False
    """Whether it is a non-integer decimal number (the tolerance rule applies)."""
    exact: bool = False
    """Whether ``value`` is the answer's own value: no free symbols, not an equation."""
    parsed: bool = True
    """Whether it parsed at all: an answer that does not parse equals nothing."""
    text: str | None = None
    """The string math-verify parsed it to when that is all it got (compared as a string)."""
    alt: complex | None = None
    """A second value math-verify may give it: 100 times ``value`` for a percentage."""
    structured: bool = False
    """A tuple, interval, inequality, truth value or set of several elements: never equal to
    an answer with a numeric value."""
    huge: bool = False
    """A number without free symbols beyond the float range (``2022^{2023}``): never equal to
    an answer with a (finite) value."""
    points: tuple[complex, ...] | None = None
    """Its values at each of ``_arithmetic.POINTS`` points (the first is ``value``), when misstep's
    own parser computed them: two such answers are equal when all their values are."""
    struct: _Struct | None = None
    """Its skeleton and its atoms' keys and fingerprints, when it is made of elements that
    misstep's own parser values (``_structure``; then ``structured`` is set too)."""
    intervals: tuple[_Span, ...] | None = None
    """The set it stands for as disjoint intervals in increasing order, when it is a union of
    intervals (or one interval) with endpoints that are numbers or infinities."""
    cup: bool = False
    """Whether it is written as a union (``\\cup``): then math-verify compares it as a set."""
    defines: str | None = None
    """For a definition ``f(x) = ...`` (``f`` absent from the right side): its left side's
    text; ``rhs`` then holds the right side's values."""
    rhs: tuple[complex, ...] | None = None
    """The right side's values at each of ``_arithmetic.POINTS`` points (see ``defines``)."""


@dataclass(frozen=True, slots=True)
class _Span:
    """One interval of a set of reals: endpoints (infinities included) and their closedness."""

    low: float
    high: float
    low_closed: bool
    high_closed: bool


@dataclass(frozen=True, slots=True)
class _Struct:
    """An answer made of elements (``_structure.Structure``) with its atoms valued."""

    skeleton: str
    """The answer with each atom replaced by ``#``."""
    keys: tuple[str, ...]
    """Each atom's canonical key."""
    fps: tuple[_Fp, ...]
    """Each atom's fingerprint (``cheap_fingerprint``)."""
    flat: bool
    """A list or set of atoms, compared as a set."""


_UNKNOWN = _Fp()
_UNPARSED = _Fp(parsed=False)


@dataclass(frozen=True, slots=True)
class ProblemTask:
    """The distinct answers of one problem to compare with its gold (and to group)."""

    gold: str | None
    """Gold answer text, or None."""
    gold_key: str | None
    """Canonical key of the gold answer."""
    answers: tuple[str, ...]
    """Representative text of each distinct answer key, most frequent first."""
    keys: tuple[str, ...]
    """Canonical key of each answer (none equal to ``gold_key``)."""
    cluster: bool = True
    """Whether to group the answers into equivalence classes."""
    known: tuple[tuple[str, _Fp], ...] = ()
    """Fingerprints already computed (``EquivalenceChecker.prefetch``), by canonical key."""


@dataclass(slots=True)
class ProblemResult:
    """What the pool found for one ``ProblemTask``."""

    gold_equal: list[bool | None]
    """Per answer: equivalent to the gold (None when there is no gold)."""
    representative: list[int]
    """Per answer: -1 for the gold's class, else the index of its class representative."""
    calls: int = 0
    """math-verify comparisons made."""
    timeouts: int = 0
    """Parses or comparisons that hit the timeout (counted as not equivalent)."""
    ungrouped: int = 0
    """Answers left in a class of their own because the problem's comparison budget ran out."""


def _fallback(task: ProblemTask) -> ProblemResult:
    n = len(task.answers)
    gold_equal: list[bool | None] = [None if task.gold is None else False] * n
    return ProblemResult(gold_equal, list(range(n)), 0, n, 0)


DECIMAL_REL_TOL = 1e-4
"""Relative tolerance between a number written as a decimal and another value (the
``isclose(..., rel_tol=1e-4)`` of the ``math_equal`` used by ToRA, DeepSeek-Math and
Qwen2.5-Math's evaluation), applied only when one side is a non-integer decimal."""
# Far looser than math-verify's 6-digit rounding: a pair it could call equal is never
# skipped on the strength of this bound.
_LOOSE_REL = 1e-4
_EXACT_REL = 1e-12


def _rational(key: str) -> Fraction:
    return Fraction(key[2:])


def _is_decimal(value: Fraction) -> bool:
    """A non-integer whose exact value a finite decimal writes (denominator 2^a 5^b)."""
    den = value.denominator
    if den == 1:
        return False
    for p in (2, 5):
        while den % p == 0:
            den //= p
    return den == 1


def _close(a: complex, b: complex, rel: float = _LOOSE_REL) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def _near(a: complex, b: complex) -> bool:
    """Within ``DECIMAL_REL_TOL`` of the values themselves, as ``math_equal``'s ``isclose``:
    ``0.00001`` is not ``0.0001`` (``_close`` is absolute below 1)."""
    return abs(a - b) <= DECIMAL_REL_TOL * max(abs(a), abs(b))


def rationals_equal(a_key: str, b_key: str) -> bool:
    """Two exact-rational keys: equal values, or, when either is a non-integer decimal, values
    within ``DECIMAL_REL_TOL`` (``0.6666666667`` = ``2/3``; ``0.67`` != ``2/3``;
    ``3`` != ``4``)."""
    if a_key == b_key:
        return True
    a, b = _rational(a_key), _rational(b_key)
    if not (_is_decimal(a) or _is_decimal(b)):
        return False
    # relative to the values themselves, as math_equal's isclose: 0.00001 != 0.0001 (within
    # 1e-4 of each other, but a tenth apart)
    return abs(a - b) <= Fraction(str(DECIMAL_REL_TOL)) * max(abs(a), abs(b))


def is_word_key(key: str) -> bool:
    """Whether a canonical key is a word answer (``w:...``), compared by its key alone."""
    return key.startswith("w:")


def _key_only(key: str) -> bool:
    return is_rational_key(key) or is_word_key(key)


def keys_decide(a_key: str, b_key: str) -> bool | None:
    """The verdict the two canonical keys give without math-verify, or None: equal keys are
    equal; two rationals follow ``rationals_equal``; two word answers with different keys
    differ."""
    if a_key == b_key:
        return True
    if is_rational_key(a_key) and is_rational_key(b_key):
        return rationals_equal(a_key, b_key)
    if is_word_key(a_key) and is_word_key(b_key):
        return False
    return None


def _rational_fp(key: str) -> _Fp:
    value = _rational(key)
    number = complex(float(value))
    return _Fp(number, decimal=_is_decimal(value), exact=True, points=(number,) * POINTS)


_INFINITIES = {"\\infty": "oo", "+\\infty": "oo", "-\\infty": "-oo"}
# An unfinished sum ("1 + 2 + ... + 99"): math-verify drops the dots and gets a wrong value.
_ELLIPSES = ("...", "\\ldots", "\\cdots", "\\dots", "…")


@functools.lru_cache(maxsize=1 << 16)
def cheap_fingerprint(key: str) -> _Fp | None:
    """The fingerprint of an answer computed without math-verify, from its canonical key, or
    None when only math-verify can give one. Rationals and words by their keys; infinities as
    math-verify prints them; an unfinished sum (with ``...``) equal only to the same text;
    expressions in ``_arithmetic``'s grammar by their values (at ``POINTS`` points when they
    have variables); an equation or a chain of such sides by its last side, as math-verify
    compares it with a value (two equations are left to ``verify``)."""
    if is_rational_key(key):
        return _rational_fp(key)
    if is_word_key(key):
        return _Fp(text=key)  # words equal only words, by key
    if not key.startswith("s:"):
        return None
    body = key[2:]
    infinity = _INFINITIES.get(body)
    if infinity is not None:
        return _Fp(text=infinity)
    if any(dots in body for dots in _ELLIPSES):
        return _Fp(text=key)
    if body.endswith("%"):
        percent = exact_rational(body[:-1])
        if percent is None:
            return None
        # as math-verify reads "8%": 0.08, or 8 where that suits the other side
        return _Fp(complex(float(percent) / 100), alt=complex(float(percent)))
    if "\\cup" in body:
        return _cheap_union(body)
    struct = _cheap_struct(body)
    if struct is not None:
        return struct if struct.struct is not None else None
    if "=" in body:
        sides = [numeric_value(side) for side in body.split("=")]
        if any(side is None for side in sides):
            return None
        last = sides[-1]
        assert last is not None
        # math-verify compares a value with an equation's (or a chain's) last right side
        return _Fp(last[0], equation=True, **_definition(body))
    got = numeric_values(body)
    if got is None:
        return None
    values, symbols = got
    if any(math.isinf(abs(v)) for v in values):
        return _Fp(huge=True) if not symbols else None
    # 2\sqrt{3}, 27/2\pi, z^2+40: valued without a parse
    return _Fp(values[0], exact=not symbols, points=values if symbols else values * POINTS)


# f(x), g(m, n): a function of single-letter variables (y = ... is keyed by its right side)
_DEFINED = re.compile(r"([A-DF-HJ-Za-z])\(([a-z](?:,[a-z])*)\)")


def _definition(body: str) -> dict[str, Any]:
    """``defines`` and ``rhs`` for a definition ``f(x) = expr`` whose right side does not use
    the name ``f``: two such definitions with the same left side are the same when their right
    sides are the same function, as math-verify finds (``lhs - rhs`` simplified; neither
    flipping the sides nor solving can match two different right sides then)."""
    left, eq, right = body.partition("=")
    match = _DEFINED.fullmatch(left)
    if not eq or "=" in right or match is None:
        return {}
    used = variables(right)
    if used is None or match.group(1) in used:
        return {}
    got = numeric_values(right)
    if got is None:
        return {}
    values, symbols = got
    return {"defines": left, "rhs": values if symbols else values * POINTS}


def _cheap_struct(body: str) -> _Fp | None:
    """For an answer made of elements: its fingerprint when every atom has one of misstep's
    own (a number, an expression, an infinity), ``_UNKNOWN`` when one has not (math-verify
    reads it then), None when it is not made of elements."""
    structure = parse_structure(body)
    if structure is None:
        return None
    keys = tuple(canonical_key(atom) for atom in structure.atoms)
    fps: list[_Fp] = []
    for key in keys:
        fp = None if is_word_key(key) or "," in key else cheap_fingerprint(key)
        if fp is None or fp.struct is not None or fp.equation or fp.huge:
            return _UNKNOWN
        if fp.text is not None and fp.text not in ("oo", "-oo"):
            return _UNKNOWN  # an atom with dots: math-verify's reading
        fps.append(fp)
    values = [fp.value for fp in fps if fp.exact and fp.value is not None]
    tuple_of_three = len(fps) >= 3 and structure.skeleton == "(" + ",".join("#" * len(fps)) + ")"
    if (
        not tuple_of_three
        and len(values) == len(fps)
        and all(_close(v, values[0], _EXACT_REL) for v in values)
    ):
        # 1,1 and [1,1] are the set {1}, which math-verify compares with 1; (1,1,1) is a tuple
        return _UNKNOWN
    struct = _Struct(structure.skeleton, keys, tuple(fps), structure.flat)
    intervals = None
    if structure.skeleton in _INTERVAL_SKELETONS:
        skeleton = structure.skeleton
        low, high = (_endpoint(fp) for fp in fps)
        intervals = _spans([(low, high, skeleton[0] == "[", skeleton[-1] == "]")])
    return _Fp(structured=True, struct=struct, intervals=intervals)


_INTERVAL_SKELETONS = ("(#,#)", "[#,#]", "(#,#]", "[#,#)")


def _endpoint(fp: _Fp | None) -> float | None:
    """An endpoint's real value (an infinity included) from its fingerprint, or None when it
    is not a number of misstep's grammar."""
    if fp is None:
        return None
    if fp.text in ("oo", "-oo"):
        return math.inf if fp.text == "oo" else -math.inf
    if not fp.exact or fp.value is None or abs(fp.value.imag) > _TINY:
        return None
    return fp.value.real


def _same_point(a: float, b: float) -> bool | None:
    """Whether two endpoints are the same number: None when they are too near to tell."""
    if a == b:
        return True
    if math.isinf(a) or math.isinf(b):
        return False
    if _close(complex(a), complex(b), _EXACT_REL):
        return True
    return None if _close(complex(a), complex(b)) else False


_Ends = tuple[float | None, float | None, bool, bool]  # low, high, low closed, high closed


def _spans(intervals: list[_Ends]) -> tuple[_Span, ...] | None:
    """The union of the intervals as disjoint spans in increasing order (touching spans joined
    where one side is closed, as sympy's sets are), or None when an endpoint is not a number,
    an interval is empty or a point, or two endpoints are too near to tell."""
    spans: list[_Span] = []
    for low, high, low_closed, high_closed in intervals:
        if low is None or high is None or _same_point(low, high) is not False or low > high:
            return None
        # an infinite endpoint is open, whatever its bracket (sympy's Interval)
        spans.append(
            _Span(
                low,
                high,
                low_closed and not math.isinf(low),
                high_closed and not math.isinf(high),
            )
        )
    spans.sort(key=lambda span: (span.low, not span.low_closed))
    merged = [spans[0]]
    for span in spans[1:]:
        last = merged[-1]
        touch = _same_point(span.low, last.high)
        if touch is None:
            return None
        if not (span.low < last.high or (touch and (last.high_closed or span.low_closed))):
            merged.append(span)
            continue
        end = _same_point(span.high, last.high)
        if end is None:
            return None
        if end:
            high, closed = last.high, last.high_closed or span.high_closed
        elif span.high > last.high:
            high, closed = span.high, span.high_closed
        else:
            high, closed = last.high, last.high_closed
        merged[-1] = _Span(last.low, high, last.low_closed, closed)
    return tuple(merged)


def _ends(interval: Interval) -> _Ends:
    return (
        _endpoint(cheap_fingerprint(canonical_key(interval.low))),
        _endpoint(cheap_fingerprint(canonical_key(interval.high))),
        interval.low_closed,
        interval.high_closed,
    )


def _cheap_union(body: str) -> _Fp | None:
    """A union of intervals with numeric endpoints as the set it stands for, or None (then
    math-verify parses it)."""
    intervals = parse_union(body)
    if intervals is None:
        return None
    spans = _spans([_ends(interval) for interval in intervals])
    if spans is None:
        return None
    return _Fp(structured=True, intervals=spans, cup=True)


def _union_verdict(a: tuple[_Span, ...], b: tuple[_Span, ...]) -> bool | None:
    """Two sets of reals, one of them written as a union: equal when they are the same set
    (math-verify's sympy sets are compared as sets), else different; None when two
    endpoints are too near to tell."""
    if len(a) != len(b):
        return False
    undecided = False
    for x, y in zip(a, b, strict=True):
        if x.low_closed != y.low_closed or x.high_closed != y.high_closed:
            return False
        for p, q in ((x.low, y.low), (x.high, y.high)):
            same = _same_point(p, q)
            if same is False:
                return False
            undecided = undecided or same is None
    return None if undecided else True


def _atom_verdict(a_key: str, a: _Fp, b_key: str, b: _Fp) -> bool | None:
    verdict = keys_decide(a_key, b_key)
    return verdict if verdict is not None else _fp_verdict(a, b)


def _struct_verdict(a: _Struct, b: _Struct) -> bool | None:
    """Two answers made of elements, without math-verify, or None (then ``verify``):

    - different when a number (an atom without variables) of one has no number within
      ``_LOOSE_REL`` among the other's atoms: math-verify matches elements by value, and no
      reading of brackets (tuple, interval, set) pairs a number with an element far from it;
    - equal when the skeletons are the same and the atoms are equal in order, or when both
      are lists or sets of atoms and every atom of each equals an atom of the other (sets:
      math-verify compares ``1, 2`` and ``\\{2, 1\\}`` as sets).
    """
    numbers_a = [fp.value for fp in a.fps if fp.exact and fp.value is not None]
    numbers_b = [fp.value for fp in b.fps if fp.exact and fp.value is not None]
    for mine, theirs in ((numbers_a, numbers_b), (numbers_b, numbers_a)):
        for value in mine:
            if not any(_close(value, other) for other in theirs):
                return False
    # The same for an atom with variables, by its values at every point: math-verify's element
    # comparison needs the two to be the same function (sympy simplifies their difference).
    for mine_fps, their_fps in ((a.fps, b.fps), (b.fps, a.fps)):
        if "=" in a.skeleton or "=" in b.skeleton:
            break  # x=1, y=2: the names are not elements (math-verify reads it as 1, 2)
        if any(fp.points is None for fp in their_fps):
            continue  # an atom without values (an infinity, a percentage) could be its partner
        for fp in mine_fps:
            if fp.exact or fp.points is None:
                continue
            if not any(_points_near(fp.points, other.points) for other in their_fps):
                return False
    if a.skeleton == b.skeleton and all(
        _atom_verdict(ka, fa, kb, fb)
        for ka, fa, kb, fb in zip(a.keys, a.fps, b.keys, b.fps, strict=True)
    ):
        return True
    if a.flat and b.flat:
        atoms_a = list(zip(a.keys, a.fps, strict=True))
        atoms_b = list(zip(b.keys, b.fps, strict=True))
        if all(
            any(_atom_verdict(ka, fa, kb, fb) for kb, fb in atoms_b) for ka, fa in atoms_a
        ) and all(any(_atom_verdict(kb, fb, ka, fa) for ka, fa in atoms_a) for kb, fb in atoms_b):
            return True
    return None


class _CustomBackend:
    """A user comparator (tests): no fingerprints, every undecided pair goes to it."""

    def __init__(self, comparator: Comparator) -> None:
        self._comparator = comparator

    def fingerprint(self, text: str, key: str) -> _Fp:
        return _UNKNOWN

    def equal(self, a: str, a_key: str, b: str, b_key: str) -> bool:
        return self._comparator(a, a_key, b, b_key)


_WORKER_PARSES: dict[str, list[Any]] = {}
_WORKER_PARSES_MAX = 20_000


class _MathVerify:
    """math-verify with each distinct string parsed once: ``fingerprint`` parses and evaluates
    an answer at a fixed point (each free symbol set to a value derived from its name);
    ``equal`` runs ``verify`` on the cached parses."""

    def __init__(self) -> None:
        from math_verify import parse, verify

        self._parse = parse
        self._verify = verify
        # Shared by the worker's tasks: an answer parsed by a prefetch batch is not parsed
        # again by the problem's solve task (bounded: emptied when full).
        self._parsed = _WORKER_PARSES
        if len(self._parsed) > _WORKER_PARSES_MAX:
            self._parsed.clear()

    def _get(self, text: str) -> list[Any]:
        hit = self._parsed.get(text)
        if hit is None:
            # Cache the failure first: a string that timed out once would time out again.
            self._parsed[text] = []
            hit = list(self._parse(_as_latex(text), parsing_timeout=None))
            self._parsed[text] = hit
        return hit

    def fingerprint(self, text: str, key: str) -> _Fp:
        parsed = self._get(text)
        if not parsed:
            return _UNPARSED
        if all(isinstance(p, str) for p in parsed):
            return _Fp(text=str(parsed[0]).strip())
        if _is_infinity(parsed[0]):
            return _Fp(text=str(parsed[0]))  # oo, -oo, zoo: equal only to the same infinity
        if _is_structured(parsed[0]):
            return _Fp(structured=True)
        try:
            value, equation, exact = _fingerprint(parsed)
        except _Huge:
            return _Fp(huge=True)
        if "%" in text and value is not None:
            # math-verify reads "9%" as 9 or as 0.09, as suits the other side.
            return _Fp(value, equation=equation, alt=value * 100)
        return _Fp(value, equation=equation, exact=exact)

    def equal(self, a: str, a_key: str, b: str, b_key: str) -> bool:
        pa, pb = self._get(a), self._get(b)
        if not pa or not pb:
            return False
        return bool(self._verify(pa, pb, timeout_seconds=None))


def _equation_chain(expr: Any) -> list[Any] | None:
    """The equations of a chain ``a = b = c`` as math-verify parses it (its own ``And``, which
    keeps their order), or None."""
    import sympy  # type: ignore[import-untyped]

    args = getattr(expr, "_unsorted_args", None)
    if isinstance(expr, sympy.And) and args and all(isinstance(a, sympy.Eq) for a in args):
        return list(args)
    return None


def _is_structured(expr: Any) -> bool:
    import sympy

    if _equation_chain(expr) is not None:
        return False  # an equation: math-verify compares a value with its last right side
    if isinstance(expr, sympy.FiniteSet):
        return len(expr) != 1  # math-verify compares {5} with 5
    return isinstance(
        expr,
        (sympy.Tuple, sympy.Interval, sympy.Union, sympy.MatrixBase, sympy.logic.boolalg.Boolean),
    ) and not isinstance(expr, sympy.Eq)


def _is_infinity(expr: Any) -> bool:
    import sympy

    return expr in (sympy.oo, -sympy.oo, sympy.zoo)


class _Huge(Exception):
    """A parsed number is finite but beyond the float range."""


_UNEVALUATED_NAMES = ("Sum", "Product", "Integral", "Limit", "Derivative")


@functools.cache
def _unevaluated() -> tuple[type, ...]:
    import sympy

    return tuple(getattr(sympy, name) for name in _UNEVALUATED_NAMES)


def _fingerprint(parsed: list[Any]) -> tuple[complex | None, bool, bool]:
    """The value of a parsed expression with free symbols set from their names, whether it
    is an equation (then the value is its last right-hand side, which math-verify compares
    with a non-equation), and whether the value is exact (no free symbols, no equation). The
    value is None when the answer is not a plain expression or equation (sets, tuples,
    strings, inequalities) or will not evaluate."""
    import sympy

    expr = parsed[0]
    if isinstance(expr, sympy.FiniteSet) and len(expr) == 1:
        expr = next(iter(expr))
    chain = _equation_chain(expr)
    if chain is not None:
        expr = chain[-1]
    is_eq = isinstance(expr, sympy.Eq)
    if is_eq:
        expr = expr.rhs
    if not isinstance(expr, sympy.Expr):
        return None, is_eq, False
    if expr.has(*_unevaluated()):
        # Series, integrals, limits and derivatives: ``doit`` tries to solve them (seconds,
        # often the whole timeout, on a power series with symbols), so no value is sought;
        # ``verify`` decides their pairs.
        return None, is_eq, False
    try:
        symbols = expr.free_symbols
        point = {s: 0.5 + (zlib.crc32(str(s).encode()) % 997) / 1709 for s in symbols}
        evaluated = expr.doit().evalf(30, subs=point)  # doit: unevaluated products
        value = complex(evaluated)
    except Exception:  # sympy raises many kinds on odd input; no fingerprint then
        return None, is_eq, False
    if value != value or abs(value) == float("inf"):
        if not symbols and not is_eq and evaluated.is_finite:
            raise _Huge  # a finite number beyond the float range
        return None, is_eq, False  # nan, or an infinity under some substitution
    return value, is_eq, not symbols and not is_eq


def _fp_verdict(a: _Fp, b: _Fp) -> bool | None:
    """What the two fingerprints decide without ``verify``, or None."""
    if not a.parsed or not b.parsed:
        return False
    if a.text is not None or b.text is not None:
        return a.text == b.text  # math-verify compares a bare string only with a string
    if (a.structured and b.value is not None) or (b.structured and a.value is not None):
        return False
    if (a.huge and b.value is not None) or (b.huge and a.value is not None):
        return False
    if (a.cup or b.cup) and a.intervals is not None and b.intervals is not None:
        return _union_verdict(a.intervals, b.intervals)
    if a.struct is not None and b.struct is not None:
        return _struct_verdict(a.struct, b.struct)
    if a.value is None or b.value is None:
        return None
    if a.equation and b.equation:
        if a.defines is not None and a.defines == b.defines and a.rhs and b.rhs:
            return _points_verdict(a.rhs, b.rhs)
        return None  # two equations are compared as equations by math-verify
    if a.alt is not None or b.alt is not None:
        return _percent_verdict(a, b)
    if (a.decimal or b.decimal) and a.exact and b.exact:
        return _near(a.value, b.value)
    if a.exact and b.exact:
        # Two numbers without free symbols, evaluated to 30 digits: equal values or not.
        # (math-verify rounds to 6 decimals, so it calls 1/2023^2 and 0 equal; not here.)
        return _close(a.value, b.value, _EXACT_REL)
    if not _close(a.value, b.value):
        return False
    if a.points is not None and b.points is not None:
        return _points_verdict(a.points, b.points)
    return None


def _percent_verdict(a: _Fp, b: _Fp) -> bool | None:
    """A percentage (``alt`` set) against a number, as the Qwen2.5-Math, ToRA and DeepSeek-Math
    harnesses' ``math_equal`` reads it: ``p%`` equals ``p/100`` and ``p`` (``50.0\\%`` = ``50``
    = ``0.5``, to ``DECIMAL_REL_TOL``); two percentages by their values. A side with variables
    or an equation near either value is left to ``verify``."""
    assert a.value is not None and b.value is not None
    if a.alt is not None and b.alt is not None:
        return _near(a.value, b.value)
    percent, other = (a, b) if a.alt is not None else (b, a)
    assert other.value is not None
    near = any(_near(x, other.value) for x in _values(percent))
    if other.exact and not other.equation:
        return near
    return None if near else False


_POINT_REL = 1e-10
_TINY = 1e-12


def _points_verdict(a: tuple[complex, ...], b: tuple[complex, ...]) -> bool | None:
    """Two answers in misstep's grammar, by their values at a positive, a negative and a
    complex point (50 digits): different when they differ at one point, equal when they
    agree to ``_POINT_REL`` at all (two different expressions of the grammar agree at all
    three only by a coincidence of that order), and None (``verify``) when both are tiny at
    some point (``a^{1000}`` and ``a^{1001}``, where a's points are below 1 in modulus), where
    agreement says nothing."""
    undecided = False
    for x, y in zip(a, b, strict=True):
        scale = max(abs(x), abs(y))
        if scale < _TINY:
            undecided = True
        elif abs(x - y) > _POINT_REL * scale:
            return False
    return None if undecided else True


def _points_near(a: tuple[complex, ...], b: tuple[complex, ...] | None) -> bool:
    """Whether two atoms' values are within ``_LOOSE_REL`` at every point."""
    return b is None or all(_close(x, y) for x, y in zip(a, b, strict=True))


def _values(fp: _Fp) -> tuple[complex, ...]:
    if fp.value is None:
        return ()
    return (fp.value,) if fp.alt is None else (fp.value, fp.alt)


class _NumericIndex:
    """Class representatives with a numeric fingerprint (equations aside), sorted by real
    part, so that an answer is compared only with the representatives whose value is near its
    own."""

    def __init__(self) -> None:
        self._reals: list[float] = []
        self._reps: list[int] = []

    def add(self, value: complex, rep: int) -> None:
        at = bisect.bisect_left(self._reals, value.real)
        self._reals.insert(at, value.real)
        self._reps.insert(at, rep)

    def near(self, value: complex) -> list[int]:
        width = max(_LOOSE_REL, DECIMAL_REL_TOL) * max(1.0, abs(value))
        lo = bisect.bisect_left(self._reals, value.real - width)
        hi = bisect.bisect_right(self._reals, value.real + width)
        return sorted(self._reps[lo:hi])


class _Backend(Protocol):
    def fingerprint(self, text: str, key: str) -> _Fp: ...

    def equal(self, a: str, a_key: str, b: str, b_key: str) -> bool: ...


def _source(text: str, key: str) -> str:
    # The key kept only the last side of "3+2 = 5" or "x = 2+3 = 5": so does math-verify.
    return text.rsplit("=", 1)[-1] if "=" in text and "=" not in key else text


def _fingerprint_of(
    text: str, key: str, backend: _Backend, timed: Callable[[Callable[[], Any], Any], Any]
) -> _Fp:
    cheap = cheap_fingerprint(key)
    if cheap is not None:
        return cheap  # math-verify parses it only if a pair of near values needs ``verify``
    return timed(lambda: backend.fingerprint(_source(text, key), key), _UNPARSED)  # type: ignore[no-any-return]


def _timer(timeout_s: float) -> tuple[Callable[[Callable[[], Any], Any], Any], list[int]]:
    """A runner of one step under the worker's alarm (none when ``timeout_s`` is 0: in the
    calling process, whose steps never parse), and its count of timeouts."""
    timeouts = [0]

    def timed(fn: Callable[[], Any], default: Any) -> Any:
        if timeout_s <= 0:
            return fn()
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
        try:
            return fn()
        except _ComparisonTimeout:
            timeouts[0] += 1
            return default
        except Exception:
            return default  # math-verify failing on odd input means "not shown equivalent"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    return timed, timeouts


def _fingerprint_batch(items: list[tuple[str, str]], timeout_s: float) -> list[_Fp]:
    """Worker side of ``EquivalenceChecker.prefetch``: parse and value each answer."""
    backend = _MathVerify()
    timed, _ = _timer(timeout_s)
    return [_fingerprint_of(text, key, backend, timed) for text, key in items]


def _solve(
    task: ProblemTask, timeout_s: float, max_cluster_pairs: int, backend: _Backend
) -> ProblemResult:
    calls = 0
    timed, timeouts = _timer(timeout_s)
    fps: dict[str, _Fp] = dict(task.known)

    def fp(text: str, key: str) -> _Fp:
        hit = fps.get(key)
        if hit is None:
            hit = _fingerprint_of(text, key, backend, timed)
            fps[key] = hit
        return hit

    def free_verdict(a: str, a_key: str, b: str, b_key: str) -> bool | None:
        verdict = keys_decide(a_key, b_key)
        if verdict is not None:
            return verdict
        return _fp_verdict(fp(a, a_key), fp(b, b_key))

    def equal(a: str, a_key: str, b: str, b_key: str) -> bool:
        nonlocal calls
        verdict = free_verdict(a, a_key, b, b_key)
        if verdict is not None:
            return verdict
        calls += 1
        a, b = _source(a, a_key), _source(b, b_key)
        return bool(timed(lambda: backend.equal(a, a_key, b, b_key), False))

    gold_equal: list[bool | None] = []
    for answer, key in zip(task.answers, task.keys, strict=True):
        if task.gold is None or task.gold_key is None:
            gold_equal.append(None)
        else:
            gold_equal.append(equal(task.gold, task.gold_key, answer, key))
    representative: list[int] = []
    index = _NumericIndex()
    loose: list[int] = []  # representatives without a numeric fingerprint
    reps: list[int] = []
    budget = max_cluster_pairs
    ungrouped = 0
    for i, key in enumerate(task.keys):
        if gold_equal[i]:
            representative.append(-1)
            continue
        found = i
        if task.cluster:
            mine = fp(task.answers[i], key)
            if not mine.parsed and not _key_only(key):
                candidates: list[int] = []  # equal to nothing
            elif mine.value is not None and not mine.equation:
                near = {r for v in _values(mine) for r in index.near(v)}
                candidates = sorted(near.union(loose))
            else:
                # math-verify compares two equations as equations: x+y = 3 is 2x+2y = 6,
                # whatever their right sides' values
                candidates = reps
            for r in candidates:
                if (
                    budget <= 0
                    and free_verdict(task.answers[r], task.keys[r], task.answers[i], key) is None
                ):
                    ungrouped += 1  # the rest would need verify: counted, never silent
                    break
                before = calls
                same = equal(task.answers[r], task.keys[r], task.answers[i], key)
                budget -= calls - before
                if same:
                    found = r
                    break
        if found == i:
            reps.append(i)
            mine = fp(task.answers[i], key)
            if mine.value is not None and not mine.equation:
                for v in _values(mine):
                    index.add(v, i)
            else:
                loose.append(i)
        representative.append(found)
    return ProblemResult(gold_equal, representative, calls, timeouts[0], ungrouped)


class _NeedsPool(BaseException):
    """Raised in this process when a task needs math-verify after all (a BaseException, so that
    the step runner's ``except Exception`` lets it through)."""


class _InProcess:
    """The backend of ``solve_here``: no math-verify in this process; a pair that needs it
    sends the whole task to the pool."""

    def fingerprint(self, text: str, key: str) -> _Fp:
        raise _NeedsPool

    def equal(self, a: str, a_key: str, b: str, b_key: str) -> bool:
        raise _NeedsPool


def answer_needs_math_verify(key: str) -> bool:
    """Whether an answer with this canonical key needs a math-verify parse: it has no
    fingerprint of misstep's own (``cheap_fingerprint``)."""
    return cheap_fingerprint(key) is None


def _cost(task: ProblemTask) -> int:
    return sum(1 for k in task.keys if answer_needs_math_verify(k))


def solve_here(task: ProblemTask, max_cluster_pairs: int) -> ProblemResult | None:
    """Solve a task in this process when its keys and known fingerprints decide every pair
    (most tasks, once ``EquivalenceChecker.prefetch`` has run); None when some pair needs
    math-verify, and then the task goes to the pool."""
    try:
        return _solve(task, 0.0, max_cluster_pairs, _InProcess())
    except _NeedsPool:
        return None


_WARM = False


def _warm_up() -> None:
    """Import math-verify and run its first parse and verify (about 0.3 s of lazy set-up)
    in this process, before the pool forks, instead of once in every worker."""
    global _WARM
    if _WARM:
        return
    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    for text in ("$x+1$", "$\\frac{1}{2}$", "$\\sqrt{2}$", "$\\cos(x)$", "$\\{1,2\\}$"):
        verify(
            parse(text, parsing_timeout=None),
            parse(text, parsing_timeout=None),
            timeout_seconds=None,
        )
    _WARM = True


def _solve_chunk(
    tasks: Sequence[ProblemTask],
    timeout_s: float,
    max_cluster_pairs: int,
    comparator: Comparator | None,
) -> list[ProblemResult]:
    # one parse cache per chunk of problems
    backend: _Backend = _CustomBackend(comparator) if comparator is not None else _MathVerify()
    return [_solve(t, timeout_s, max_cluster_pairs, backend) for t in tasks]


@dataclass(slots=True)
class EquivalenceStats:
    """Counters of one checker's work."""

    cheap: int = 0
    """Pairs decided by canonical keys alone."""
    cached: int = 0
    """Pairs answered from the cache."""
    calls: int = 0
    """math-verify comparisons made in the pool."""
    timeouts: int = 0
    """Comparisons over the timeout (counted as not equivalent)."""
    ungrouped: int = 0
    """Answers left in a class of their own by the per-problem comparison budget."""
    pool_restarts: int = 0
    """Times a stuck or broken pool was replaced."""
    seconds: float = 0.0
    """Wall time spent waiting on the pool."""


@dataclass
class EquivalenceChecker:
    """Decides answer equivalence with cheap paths, a cache and a math-verify process pool.

    Use it as a context manager (or call ``close``) so that the pool's processes end.
    """

    workers: int | None = None
    timeout_s: float = 5.0
    max_cluster_pairs: int = DEFAULT_MAX_CLUSTER_PAIRS
    stall_grace_s: float = 5.0
    comparator: Comparator | None = None
    stats: EquivalenceStats = field(default_factory=EquivalenceStats)
    _cache: dict[tuple[str, str], bool] = field(default_factory=dict, repr=False)
    _pool: ProcessPoolExecutor | None = field(default=None, repr=False)
    _batch: list[tuple[str, str]] = field(default_factory=list, repr=False)
    _asked: set[str] = field(default_factory=set, repr=False)
    _prefetched: list[tuple[list[tuple[str, str]], Future[list[_Fp]]]] = field(
        default_factory=list, repr=False
    )
    _pool_workers: int = field(default=0, repr=False)
    _retired: list[ProcessPoolExecutor] = field(default_factory=list, repr=False)
    _submitted: int = field(default=0, repr=False)

    def __enter__(self) -> EquivalenceChecker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the pool's processes."""
        if self._pool is not None and self._submitted == 0:
            # Started early but never needed: do not wait for it to load math-verify.
            self._kill_pool(count=False)
        for pool in [*self._retired, *([self._pool] if self._pool is not None else [])]:
            pool.shutdown(wait=True, cancel_futures=True)
        self._retired.clear()
        self._pool = None

    # -- pool management -------------------------------------------------------------------
    def _n_workers(self) -> int:
        return max(1, self.workers if self.workers is not None else (os.cpu_count() or 1))

    def _ensure_pool(self, workers: int = 1) -> ProcessPoolExecutor:
        """The pool, started with ``workers`` processes if there is none. It starts small
        (each worker spends about a second of CPU loading math-verify, and most runs leave
        math-verify a few answers) and ``_grow`` gives it every worker once work queues up."""
        if self._pool is None:
            workers = min(workers, self._n_workers())
            self._pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=multiprocessing.get_context("fork"),
                initializer=_init_worker,
                # Each worker loads math-verify itself, in parallel with the caller's work.
                initargs=(os.getpid(), self.comparator is None),
            )
            self._pool_workers = workers
        return self._pool

    def _grow(self) -> None:
        """Replace a pool smaller than ``workers`` by a full one; the old one finishes the
        work it was given (its futures stay valid) and then ends."""
        if self._pool is None or self._pool_workers >= self._n_workers():
            return
        old = self._pool
        self._pool = None
        old.shutdown(wait=False)
        self._retired.append(old)
        self._ensure_pool(self._n_workers())

    def _submit(self, fn: Callable[..., Any], *args: Any, workers: int = 1) -> Future[Any]:
        self._submitted += 1
        return self._ensure_pool(workers).submit(fn, *args)

    def prefetch(self, text: str, key: str) -> None:
        """Have the workers parse and value this answer now, while the caller reads on, so
        that ``solve`` finds its fingerprint ready (``fingerprints``). Only answers that need
        math-verify are sent; each key once."""
        if self.comparator is not None or key in self._asked or not answer_needs_math_verify(key):
            return
        self._asked.add(key)
        self._batch.append((text, key))
        # Batches amortise the submissions; a pool with nothing to do gets the answer now.
        if len(self._batch) >= _PREFETCH_BATCH or all(f.done() for _, f in self._prefetched):
            self._flush()

    def _flush(self) -> None:
        if self._batch:
            batch, self._batch = self._batch, []
            future = self._submit(_fingerprint_batch, batch, self.timeout_s)
            self._prefetched.append((batch, future))
            backlog = sum(1 for _, f in self._prefetched[-_GROW_BACKLOG:] if not f.done())
            if backlog >= _GROW_BACKLOG:
                self._grow()

    def fingerprints(self) -> dict[str, _Fp]:
        """The prefetched fingerprints, by key. A batch that fails or stalls is left out: its
        answers are parsed again in ``solve``, under its own timeouts and stall handling."""
        self._flush()
        out: dict[str, _Fp] = {}
        stall_limit = 2 * self.timeout_s + self.stall_grace_s
        for batch, future in self._prefetched:
            try:
                values = future.result(timeout=stall_limit * len(batch))
            except Exception:  # a broken or stuck pool: solve() deals with it
                self._kill_pool()
                break
            out.update((key, fp) for (_, key), fp in zip(batch, values, strict=True))
        self._prefetched.clear()
        return out

    def start(self) -> None:
        """Start one worker now (it loads math-verify, about a second of CPU), so that it is
        ready when the first answer needs it; the caller goes on meanwhile. ``close`` ends it
        without waiting when nothing was asked of it."""
        # A fork pool starts its processes at the first submission.
        self._ensure_pool(1).submit(int)

    def _kill_pool(self, count: bool = True) -> None:
        pools = [*self._retired, *([self._pool] if self._pool is not None else [])]
        self._pool = None
        self._retired.clear()
        if not pools:
            return
        processes: list[Any] = []
        for pool in pools:
            processes.extend((getattr(pool, "_processes", None) or {}).values())
        for process in processes:
            process.kill()
        for pool in pools:
            pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.join(timeout=5)
        if count:
            self.stats.pool_restarts += 1

    # -- work ------------------------------------------------------------------------------
    def solve(self, tasks: Sequence[ProblemTask]) -> list[ProblemResult]:
        """Run the tasks in the pool; results in task order (see the module docstring)."""
        if not tasks:
            return []
        # Costliest first (answers that need a parse), so that no worker is left with a
        # large problem at the end while the others idle.
        order = sorted(range(len(tasks)), key=lambda i: -_cost(tasks[i]))
        results = self._solve_in_order([tasks[i] for i in order])
        out: list[ProblemResult | None] = [None] * len(tasks)
        for i, result in zip(order, results, strict=True):
            out[i] = result
        return [r for r in out if r is not None]

    def _solve_in_order(self, tasks: Sequence[ProblemTask]) -> list[ProblemResult]:
        started = time.perf_counter()
        # Small chunks when there are few tasks, so that every worker gets a share.
        size = max(1, min(_CHUNK_TASKS, len(tasks) // (16 * self._n_workers())))
        chunks = [list(tasks[i : i + size]) for i in range(0, len(tasks), size)]
        results: list[list[ProblemResult] | None] = [None] * len(chunks)
        attempts = [0] * len(chunks)
        stall_limit = 2 * self.timeout_s + self.stall_grace_s
        # Chunks that stalled once are retried one task per chunk, so one hung comparison
        # costs only its own problem.
        queue: list[tuple[int, list[ProblemTask]]] = list(enumerate(chunks))
        single: dict[int, list[ProblemResult | None]] = {}
        pending: dict[Future[list[ProblemResult]], tuple[int, int | None]] = {}

        if len(tasks) > _GROW_TASKS:
            self._grow()

        def submit(index: int, part: list[ProblemTask], sub: int | None) -> None:
            future = self._submit(
                _solve_chunk,
                part,
                self.timeout_s,
                self.max_cluster_pairs,
                self.comparator,
                workers=self._n_workers() if len(tasks) > _GROW_TASKS else 1,
            )
            pending[future] = (index, sub)

        for index, part in queue:
            submit(index, part, None)
        while pending:
            done, _ = wait(pending, timeout=stall_limit, return_when=FIRST_COMPLETED)
            if not done:
                # A pool marks a task running once it is queued to a worker, one ahead per
                # worker: only the earliest running ones (in submission order) are stuck.
                running = [f for f in pending if f.running()][: self._pool_workers]
                stuck = [(f, pending[f]) for f in running]
                waiting = [(f, pending[f]) for f in pending if f not in running]
                pending.clear()
                self._kill_pool()
                for _, (index, sub) in stuck:
                    self._retry_or_fail(index, sub, chunks, attempts, single, results, submit)
                for _, (index, sub) in waiting:
                    submit(index, chunks[index] if sub is None else [chunks[index][sub]], sub)
                continue
            broken = False
            for future in done:
                index, sub = pending.pop(future)
                try:
                    value = future.result()
                except BrokenProcessPool:
                    broken = True
                    self._retry_or_fail(index, sub, chunks, attempts, single, results, submit)
                    continue
                if sub is None:
                    results[index] = value
                else:
                    single[index][sub] = value[0]
            if broken:
                rest = list(pending.values())
                pending.clear()
                self._kill_pool()
                for index, sub in rest:
                    self._retry_or_fail(index, sub, chunks, attempts, single, results, submit)
        for index, parts in single.items():
            results[index] = [p for p in parts if p is not None]
        out: list[ProblemResult] = []
        for chunk_result in results:
            if chunk_result is None:  # pragma: no cover - every path above fills it
                raise RuntimeError("equivalence pool lost a task")
            out.extend(chunk_result)
        for result in out:
            self.stats.calls += result.calls
            self.stats.timeouts += result.timeouts
            self.stats.ungrouped += result.ungrouped
        self.stats.seconds += time.perf_counter() - started
        return out

    def _retry_or_fail(
        self,
        index: int,
        sub: int | None,
        chunks: list[list[ProblemTask]],
        attempts: list[int],
        single: dict[int, list[ProblemResult | None]],
        results: list[list[ProblemResult] | None],
        submit: Callable[[int, list[ProblemTask], int | None], None],
    ) -> None:
        if sub is None:
            attempts[index] += 1
            single[index] = [None] * len(chunks[index])
            for j, task in enumerate(chunks[index]):
                submit(index, [task], j)
            return
        # A single task that stalled or broke the pool a second time: not equivalent.
        single[index][sub] = _fallback(chunks[index][sub])

    def compare_pairs(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], bool]:
        """Equivalence of each (gold, answer) pair of strings, keyed by the input pair."""
        out: dict[tuple[str, str], bool] = {}
        todo: dict[tuple[str, str], list[tuple[str, str]]] = {}
        texts: dict[tuple[str, str], tuple[str, str]] = {}
        for gold, answer in pairs:
            if (gold, answer) in out:
                continue
            gk, ak = canonical_key(gold), canonical_key(answer)
            verdict = keys_decide(gk, ak)
            if verdict is not None:
                self.stats.cheap += 1
                out[(gold, answer)] = verdict
            elif (gk, ak) in self._cache:
                self.stats.cached += 1
                out[(gold, answer)] = self._cache[(gk, ak)]
            else:
                todo.setdefault((gk, ak), []).append((gold, answer))
                texts.setdefault((gk, ak), (gold, answer))
        if todo:
            order = list(todo)
            tasks = [
                ProblemTask(texts[k][0], k[0], (texts[k][1],), (k[1],), cluster=False)
                for k in order
            ]
            for k, result in zip(order, self.solve(tasks), strict=True):
                equal = bool(result.gold_equal[0])
                self._cache[k] = equal
                for pair in todo[k]:
                    out[pair] = equal
        return out

    def remember(self, gold_key: str, answer_key: str, equal: bool) -> None:
        """Store a pool result in the cache."""
        self._cache[(gold_key, answer_key)] = equal

    def cached(self, gold_key: str, answer_key: str) -> bool | None:
        """The cached verdict for a key pair, or None."""
        return self._cache.get((gold_key, answer_key))


def answers_equivalent(gold: str, answer: str, *, timeout_s: float = 5.0) -> bool:
    """Whether ``answer`` is equivalent to ``gold``: cheap keys first, then math-verify in a
    one-worker pool under ``timeout_s`` (over it counts as not equivalent)."""
    with EquivalenceChecker(workers=1, timeout_s=timeout_s) as checker:
        return checker.compare_pairs([(gold, answer)])[(gold, answer)]
