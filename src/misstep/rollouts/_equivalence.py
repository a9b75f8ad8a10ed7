"""Answer equivalence: cheap canonical keys first, math-verify in a process pool for the rest.

Cheap paths decide without math-verify: equal canonical keys are equivalent, and two different
exact rationals are not. Every other pair goes to math-verify (``parse`` + ``verify``), run in a
``ProcessPoolExecutor`` (fork start, ``os.cpu_count()`` workers by default). Each comparison
runs under a ``SIGALRM`` interval timer set by the worker itself (tasks run in the worker's main
thread, where signals work); math-verify's own timeouts are disabled. A comparison over the
timeout counts as *not equivalent* and is counted in ``stats.timeouts``. A worker stuck in C
code ignores the signal: when no task finishes for ``2 * timeout_s + stall_grace_s`` the pool is
killed and replaced, the tasks that were running are retried once in the new pool, and a task
that stalls twice gets "not equivalent" for all its comparisons (counted as timeouts).

Results are cached per distinct (gold key, answer key) pair for the life of the checker.
The unit of work is a ``ProblemTask``: a gold answer and the distinct answers of one problem.
The worker parses each distinct string once, compares each answer with the gold and, when asked,
groups the answers into equivalence classes (each answer against each class representative,
at most ``max_cluster_pairs`` math-verify comparisons per problem; past the cap an answer opens
its own class, so a class can only be split, never wrongly merged).
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
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
from typing import Any

from misstep.rollouts._normalize import canonical_key

__all__ = [
    "EquivalenceChecker",
    "EquivalenceStats",
    "ProblemResult",
    "ProblemTask",
    "answers_equivalent",
    "is_rational_key",
    "math_verify_equal",
]

DEFAULT_MAX_CLUSTER_PAIRS = 200
_CHUNK_TASKS = 8  # problems per pool task: amortises pickling without starving a worker


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


def _init_worker(parent: int) -> None:
    _die_with_parent(parent)
    # Ctrl-C reaches the whole process group: the parent handles it and ends the pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, _on_alarm)
    # math-verify logs a warning on every call made with its own timeout disabled.
    logging.getLogger("math_verify").setLevel(logging.ERROR)


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
    """Comparisons that hit the timeout (counted as not equivalent)."""


def _fallback(task: ProblemTask) -> ProblemResult:
    n = len(task.answers)
    gold_equal: list[bool | None] = [None if task.gold is None else False] * n
    return ProblemResult(gold_equal, list(range(n)), 0, n)


class _MathVerify:
    """Parses each distinct string once per task, and skips ``verify`` when both sides have a
    numeric fingerprint and the two differ: the value of a plain number, or of an expression
    at a fixed point (each free symbol set to a value derived from its name). Expressions that
    differ at a point are not identical, so math-verify would not call them equal either.
    Exact rationals take their value from the canonical key and are parsed only when needed."""

    def __init__(self) -> None:
        from math_verify import parse, verify

        self._parse = parse
        self._verify = verify
        self._parsed: dict[str, list[Any]] = {}
        self._values: dict[str, tuple[complex | None, bool]] = {}

    def _get(self, text: str) -> list[Any]:
        hit = self._parsed.get(text)
        if hit is None:
            # Cache the failure first: a string that timed out once would time out again.
            self._parsed[text] = []
            hit = list(self._parse(_as_latex(text), parsing_timeout=None))
            self._parsed[text] = hit
        return hit

    def _value(self, text: str, key: str) -> tuple[complex | None, bool]:
        if text in self._values:
            return self._values[text]
        self._values[text] = (None, False)
        if is_rational_key(key):
            value: tuple[complex | None, bool] = (complex(float(Fraction(key[2:]))), False)
        elif "%" in text:
            value = (None, False)  # math-verify reads "9%" as 9 or 0.09 as suits the other side
        else:
            value = _fingerprint(self._get(text))
        self._values[text] = value
        return value

    def __call__(self, a: str, a_key: str, b: str, b_key: str) -> bool:
        va, a_eq = self._value(a, a_key)
        vb, b_eq = self._value(b, b_key)
        # Two equations are compared as equations by math-verify: no shortcut for them.
        if va is not None and vb is not None and not (a_eq and b_eq) and not _close(va, vb):
            return False
        pa, pb = self._get(a), self._get(b)
        if not pa or not pb:
            return False
        return bool(self._verify(pa, pb, timeout_seconds=None))


def _fingerprint(parsed: list[Any]) -> tuple[complex | None, bool]:
    """The value of a parsed expression with free symbols set from their names, and whether it
    is an equation (then the value is its last right-hand side, which math-verify compares
    with a non-equation). None when the answer is not a plain expression or equation (sets,
    tuples, strings, inequalities) or will not evaluate."""
    import sympy  # type: ignore[import-untyped]

    if not parsed:
        return None, False
    expr = parsed[0]
    is_eq = isinstance(expr, sympy.Eq)
    if is_eq:
        expr = expr.rhs
    if not isinstance(expr, sympy.Expr):
        return None, is_eq
    try:
        point = {s: 0.5 + (zlib.crc32(str(s).encode()) % 997) / 1709 for s in expr.free_symbols}
        value = complex(expr.evalf(20, subs=point))
    except Exception:  # sympy raises many kinds on odd input; no fingerprint then
        return None, is_eq
    if value != value or abs(value) == float("inf"):
        return None, is_eq
    return value, is_eq


def _close(a: complex, b: complex) -> bool:
    # Far looser than math-verify's 6-digit rounding, so a pair it could call equal is
    # never skipped here.
    return abs(a - b) <= 1e-4 * max(1.0, abs(a), abs(b))


def _solve(
    task: ProblemTask, timeout_s: float, max_cluster_pairs: int, comparator: Comparator
) -> ProblemResult:
    calls = 0
    timeouts = 0

    def compare(a: str, a_key: str, b: str, b_key: str) -> bool:
        nonlocal calls, timeouts
        calls += 1
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
        try:
            return comparator(a, a_key, b, b_key)
        except _ComparisonTimeout:
            timeouts += 1
            return False
        except Exception:
            return False  # math-verify failing on odd input means "not shown equivalent"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    gold_rational = task.gold_key is not None and is_rational_key(task.gold_key)
    gold_equal: list[bool | None] = []
    for answer, key in zip(task.answers, task.keys, strict=True):
        if task.gold is None:
            gold_equal.append(None)
        elif gold_rational and is_rational_key(key):
            gold_equal.append(False)  # two different exact rationals
        else:
            gold_equal.append(compare(task.gold, task.gold_key or "", answer, key))
    representative: list[int] = []
    reps: list[int] = []
    budget = max_cluster_pairs
    for i, key in enumerate(task.keys):
        if gold_equal[i]:
            representative.append(-1)
            continue
        found = i
        if task.cluster:
            for r in reps:
                if is_rational_key(key) and is_rational_key(task.keys[r]):
                    continue
                if budget <= 0:
                    break
                budget -= 1
                if compare(task.answers[r], task.keys[r], task.answers[i], key):
                    found = r
                    break
        if found == i:
            reps.append(i)
        representative.append(found)
    return ProblemResult(gold_equal, representative, calls, timeouts)


def _solve_chunk(
    tasks: Sequence[ProblemTask],
    timeout_s: float,
    max_cluster_pairs: int,
    comparator: Comparator | None,
) -> list[ProblemResult]:
    if comparator is not None:
        return [_solve(t, timeout_s, max_cluster_pairs, comparator) for t in tasks]
    backend = _MathVerify()  # one parse cache per chunk of problems
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

    def __enter__(self) -> EquivalenceChecker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the pool's processes."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    # -- pool management -------------------------------------------------------------------
    def _n_workers(self) -> int:
        return max(1, self.workers if self.workers is not None else (os.cpu_count() or 1))

    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            if self.comparator is None:
                import math_verify  # noqa: F401  loaded once here so forked workers start warm
            self._pool = ProcessPoolExecutor(
                max_workers=self._n_workers(),
                mp_context=multiprocessing.get_context("fork"),
                initializer=_init_worker,
                initargs=(os.getpid(),),
            )
        return self._pool

    def _kill_pool(self) -> None:
        pool = self._pool
        self._pool = None
        if pool is None:
            return
        processes: dict[int, Any] = dict(getattr(pool, "_processes", None) or {})
        for process in processes.values():
            process.kill()
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes.values():
            process.join(timeout=5)
        self.stats.pool_restarts += 1

    # -- work ------------------------------------------------------------------------------
    def solve(self, tasks: Sequence[ProblemTask]) -> list[ProblemResult]:
        """Run the tasks in the pool; results in task order (see the module docstring)."""
        if not tasks:
            return []
        started = time.perf_counter()
        chunks = [list(tasks[i : i + _CHUNK_TASKS]) for i in range(0, len(tasks), _CHUNK_TASKS)]
        results: list[list[ProblemResult] | None] = [None] * len(chunks)
        attempts = [0] * len(chunks)
        stall_limit = 2 * self.timeout_s + self.stall_grace_s
        # Chunks that stalled once are retried one task per chunk, so one hung comparison
        # costs only its own problem.
        queue: list[tuple[int, list[ProblemTask]]] = list(enumerate(chunks))
        single: dict[int, list[ProblemResult | None]] = {}
        pending: dict[Future[list[ProblemResult]], tuple[int, int | None]] = {}

        def submit(index: int, part: list[ProblemTask], sub: int | None) -> None:
            pool = self._ensure_pool()
            future = pool.submit(
                _solve_chunk, part, self.timeout_s, self.max_cluster_pairs, self.comparator
            )
            pending[future] = (index, sub)

        for index, part in queue:
            submit(index, part, None)
        while pending:
            done, _ = wait(pending, timeout=stall_limit, return_when=FIRST_COMPLETED)
            if not done:
                stuck = [(f, pending[f]) for f in pending if f.running()]
                waiting = [(f, pending[f]) for f in pending if not f.running()]
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
            if gk == ak:
                self.stats.cheap += 1
                out[(gold, answer)] = True
            elif is_rational_key(gk) and is_rational_key(ak):
                self.stats.cheap += 1
                out[(gold, answer)] = False
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
