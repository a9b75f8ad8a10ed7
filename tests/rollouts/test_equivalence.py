"""Equivalence: cheap paths, math-verify in the pool, timeouts that do not hang the run."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time

import pytest

from misstep.rollouts import EquivalenceChecker, answers_equivalent, canonical_key
from misstep.rollouts._equivalence import ProblemTask


@pytest.mark.parametrize(
    ("gold", "answer", "expected"),
    [
        ("0.5", "\\frac12", True),  # cheap: both q:1/2
        ("3", "4", False),  # cheap: two different rationals
        ("\\frac{\\sqrt{2}}{2}", "\\sqrt{2}/2", True),  # math-verify
        ("2\\sqrt{3}", "\\sqrt{12}", True),  # math-verify: sqrt(12) = 2 sqrt(3)
        ("\\sqrt{2}", "\\sqrt{3}", False),
        ("7", "3+4", True),  # 3 + 4 = 7
    ],
)
def test_answers_equivalent(gold: str, answer: str, expected: bool) -> None:
    assert answers_equivalent(gold, answer) is expected


def test_cheap_paths_do_not_use_the_pool() -> None:
    with EquivalenceChecker(workers=1) as checker:
        out = checker.compare_pairs([("1/2", "0.5"), ("2", "3"), ("x+1", "x + 1")])
        assert out == {("1/2", "0.5"): True, ("2", "3"): False, ("x+1", "x + 1"): True}
        assert checker.stats.cheap == 3
        assert checker.stats.calls == 0
        assert checker._pool is None


def test_results_are_cached_per_key_pair() -> None:
    with EquivalenceChecker(workers=1) as checker:
        checker.compare_pairs([("\\sqrt{2}/2", "\\frac{\\sqrt{2}}{2}")])
        calls = checker.stats.calls
        # same keys after normalisation (spaces, $): answered from the cache
        out = checker.compare_pairs([("$\\sqrt{2}/2$", "\\frac{\\sqrt{2}}{2} ")])
        assert list(out.values()) == [True]
        assert checker.stats.calls == calls
        assert checker.stats.cached == 1


def _slow_comparator(a: str, a_key: str, b: str, b_key: str) -> bool:
    time.sleep(30)  # interrupted by the worker's alarm
    return True


def _stuck_comparator(a: str, a_key: str, b: str, b_key: str) -> bool:
    if "hang" in b:
        # blocks the alarm, like a comparison stuck in C code that never checks signals
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        time.sleep(60)
    return a == b


def test_timeout_counts_as_not_equivalent() -> None:
    started = time.perf_counter()
    with EquivalenceChecker(workers=1, timeout_s=0.2, comparator=_slow_comparator) as checker:
        # sets: no value of their own, so the comparator is asked
        out = checker.compare_pairs([("\\{x\\}", "\\{y\\}"), ("\\{u\\}", "\\{v\\}")])
    assert out == {("\\{x\\}", "\\{y\\}"): False, ("\\{u\\}", "\\{v\\}"): False}
    assert checker.stats.timeouts == 2
    assert time.perf_counter() - started < 20


@pytest.mark.slow
def test_stuck_worker_is_replaced_and_the_run_finishes() -> None:
    tasks = [
        # sets: no value of their own, so the comparator is asked
        ProblemTask("\\{a\\}", "s:\\{a\\}", ("\\{a\\}",), ("s:\\{a\\}",), cluster=False),
        ProblemTask("\\{b\\}", "s:\\{b\\}", ("\\{hang\\}",), ("s:\\{hang\\}",), cluster=False),
        ProblemTask("\\{c\\}", "s:\\{c\\}", ("\\{c\\}",), ("s:\\{c\\}",), cluster=False),
    ]
    started = time.perf_counter()
    with EquivalenceChecker(
        workers=2, timeout_s=0.1, stall_grace_s=0.5, comparator=_stuck_comparator
    ) as checker:
        results = checker.solve(tasks)
    assert [r.gold_equal for r in results] == [[True], [False], [True]]
    assert checker.stats.pool_restarts >= 1
    assert checker.stats.timeouts >= 1
    assert time.perf_counter() - started < 30


def test_clustering_groups_equivalent_answers() -> None:
    # gold 1/2; answers: sqrt(2)/2 twice in two forms, 0.5 is the gold's class via the key
    task = ProblemTask(
        gold="1/2",
        gold_key="q:1/2",
        answers=("\\sqrt{2}/2", "\\frac{\\sqrt{2}}{2}", "3", "\\frac{2}{4}+0"),
        keys=("s:\\sqrt{2}/2", "s:\\frac{\\sqrt{2}}{2}", "q:3", "s:\\frac{2}{4}+0"),
    )
    with EquivalenceChecker(workers=1) as checker:
        (result,) = checker.solve([task])
    assert result.gold_equal == [False, False, False, True]  # 2/4 + 0 = 1/2
    assert result.representative == [0, 0, 2, -1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/status") as status:
            return not any(
                line.startswith("State:") and "Z" in line.split(":", 1)[1][:3] for line in status
            )
    except FileNotFoundError:
        return False


def test_an_early_worker_nobody_needed_is_ended_without_waiting() -> None:
    checker = EquivalenceChecker(workers=2)
    checker.start()
    assert checker._pool is not None and checker._pool_workers == 1
    pids = list(checker._pool._processes)  # type: ignore[attr-defined]
    assert len(pids) == 1
    checker.close()  # killed, not left to finish loading math-verify
    time.sleep(0.2)
    assert not any(_alive(pid) for pid in pids)
    assert checker.stats.pool_restarts == 0


# Set by the test that holds the pool's first worker busy; a fork pool's worker inherits it.
_GATE = multiprocessing.get_context("fork").Event()


def _held_until_the_gate_opens() -> None:
    _GATE.wait(timeout=120)


def test_the_pool_grows_when_parse_work_queues_up() -> None:
    # unions of sets have no value of their own: each needs a math-verify parse. The one
    # worker is held busy until every answer is sent, so the work queues up whatever the
    # machine's speed (a worker that kept up with the sends would leave no backlog, and a
    # loaded machine decides which goes faster); generous limits keep slow parses parsed.
    answers = [f"\\{{{k}, {k + 1}\\}} \\cup \\{{{k + 3}\\}}" for k in range(200)]
    _GATE.clear()
    with EquivalenceChecker(workers=2, timeout_s=60.0, stall_grace_s=600.0) as checker:
        checker.start()
        held = checker._submit(_held_until_the_gate_opens)
        assert checker._pool_workers == 1
        try:
            for text in answers:
                checker.prefetch(text, canonical_key(text))
            assert checker._pool_workers == 2  # grown while the first worker was held
        finally:
            _GATE.set()
        held.result(timeout=120)
        fingerprints = checker.fingerprints()
        assert checker.stats.pool_restarts == 0
        assert len(fingerprints) == 200
        assert all(fp.structured for fp in fingerprints.values())
        # a later solve uses the grown pool and still gives the right verdicts
        a, b, c = "\\{1, 2\\} \\cup \\{4\\}", "\\{4, 2, 1\\}", "\\{1, 3\\} \\cup \\{4\\}"
        out = checker.compare_pairs([(a, b), (a, c)])
    assert out == {(a, b): True, (a, c): False}


def test_series_get_no_value_and_match_math_verify() -> None:
    """A series, integral, limit or derivative is not valued at a point (sympy's ``doit``
    spent seconds, up to the whole timeout, on a power series, and a valuation that timed out
    made the answer equal to nothing): ``verify`` decides, so misstep agrees with math-verify
    on each pair (both asked here; 1 + 2 + ... + 10 = 55 by hand, sum of 1/n^2 = pi^2/6)."""
    import sympy
    from math_verify import parse

    from misstep.rollouts._equivalence import _as_latex, _fingerprint, math_verify_equal

    series = "\\sum_{n=1}^{\\infty} \\frac{1}{n^2}"
    power = "-\\sum_{n=2}^{\\infty} \\frac{x^n}{(n-1)n}"
    value, _, exact = _fingerprint(parse(_as_latex(power), parsing_timeout=None))
    assert value is None and not exact
    assert isinstance(parse(_as_latex(series), parsing_timeout=None)[0], sympy.Expr)
    pairs = [
        (series, "\\frac{\\pi^2}{6}"),  # equal
        ("\\sum_{k=1}^{10} k", "55"),  # equal
        ("\\sum_{k=1}^{10} k", "56"),  # not equal
        (power, "C+\\sum_{n=0}^{\\infty}\\frac{-1}{(n+1)(n+2)}x^{n+2}"),  # differ by C
    ]
    for gold, answer in pairs:
        assert answers_equivalent(gold, answer) == math_verify_equal(gold, answer), (gold, answer)
    assert answers_equivalent(series, "\\frac{\\pi^2}{6}")
    assert not answers_equivalent("\\sum_{k=1}^{10} k", "56")
