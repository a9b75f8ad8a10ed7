"""Grading: each trace's outcome, correctness and answer class.

Rules, in order, for one trace:

1. ``finish_reason == "length"``: outcome ``truncated``, not correct, no answer (even when the
   user's grade says otherwise: a cut response never votes and is never correct).
2. The answer is ``pred_answer`` when given (no extraction), else ``extract_answer(response)``.
3. A row carrying ``correct`` (verl's ``score`` is mapped to it by the reader) is graded by that
   value unless ``regrade``, even when no answer can be extracted: ``correct`` when True, else
   ``wrong`` with an answer and ``no_answer`` without. With ``regrade`` a row that has no gold
   answer keeps the user's grade (there is nothing to regrade against).
4. Otherwise: no answer gives ``no_answer``; an answer is compared with ``gold_answer``
   (``misstep.rollouts._equivalence``) and is ``correct`` or ``wrong``.
5. A row with an answer but neither a grade nor a gold answer cannot be graded:
   ``grade_traces`` raises :class:`~misstep.errors.InputError` saying how many rows lack both.

The row's own grade and its harness's extracted answer are kept beside, whatever was used:
``harness_correct`` (the ``correct`` the row carried: a harness's grade, verl's score) and
``harness_answer``; with ``regrade`` they are what misstep's grade is compared with.

``answer_class``: the answers of one (dataset, problem_id), across all checkpoints, are grouped
by equivalence (``misstep.rollouts._equivalence``: canonical keys, numeric fingerprints, and
math-verify only for what they leave open; each distinct answer parsed once, while the input
is still being read). Answers equivalent to the gold join the gold's class (keyed by the gold's
canonical key); the others are grouped most frequent first. ``max_cluster_pairs`` bounds the
math-verify calls per problem; an answer it leaves in a class of its own is counted in
``GradeStats.equivalence.ungrouped`` (votes can be split by it, never wrongly merged). A row
graded correct without an answer gets the gold's class, or ``<correct>`` when there is no gold,
so that it votes for the right class. Rows without an answer (``truncated``, ``no_answer``)
have no class.

Multiple choice: when a problem lists its options (``A: 4``, ``(B) 8``, one per line or inline)
and the gold is a letter, an answer that writes an option's text counts as that option's
letter; when the gold is an option's text, a letter answer counts as that option's text. The
``answer`` column keeps what the model wrote.

Last, a class holding both correct and wrong rows (the grade in use and the equivalence
disagree) is split by grade, so that every class is uniformly correct or wrong: the correct
answer class is defined by the grade in use, and maj@1 equals pass@1 exactly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from misstep.errors import InputError
from misstep.rollouts._equivalence import (
    DEFAULT_MAX_CLUSTER_PAIRS,
    EquivalenceChecker,
    EquivalenceStats,
    ProblemResult,
    ProblemTask,
    solve_here,
)
from misstep.rollouts._extract import extract_answer
from misstep.rollouts._normalize import (
    canonical_key,
    is_choice_key,
    option_keys,
    problem_options,
)
from misstep.rollouts._trace import GRADED_COLUMNS, Outcome, Trace

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CLASS_SPLIT_WRONG",
    "CORRECT_WITHOUT_ANSWER",
    "REPETITION_WORDS",
    "GradeStats",
    "grade_traces",
    "repetition_score",
]

CORRECT_WITHOUT_ANSWER = "<correct>"
CLASS_SPLIT_WRONG = "\x1f<graded wrong>"
"""Suffix of the answer-class key of rows graded wrong in a class whose other rows are correct."""
_PROGRESS_EVERY = 10_000
_KEY_MEMO_MAX = 1_000_000
_HINT_NO_GOLD = "give those rows a gold_answer or a correct field"


@dataclass(slots=True)
class GradeStats:
    """What one grading run did (for benchmarks and progress messages)."""

    traces: int = 0
    """Traces read."""
    problems: int = 0
    """Distinct (dataset, problem_id)."""
    pool_tasks: int = 0
    """Problems sent to math-verify."""
    equivalence: EquivalenceStats = field(default_factory=EquivalenceStats)
    """The checker's counters (cheap decisions, calls, timeouts, pool restarts)."""


def _answer_of(trace: Trace) -> str | None:
    if trace.pred_answer is not None:
        text = trace.pred_answer.strip()
        return text or None
    return extract_answer(trace.response).answer


def _user_grade(trace: Trace, regrade: bool) -> bool | None:
    """The grade to keep from the row, or None when the row must be graded against gold."""
    if trace.correct is None:
        return None
    if regrade and trace.gold_answer is not None:
        return None
    return trace.correct


def _no_gold_error(count: int, total: int, example: str) -> InputError:
    return InputError(
        f"{count} of {total} rows have an answer but neither gold_answer nor correct, "
        f"so they cannot be graded (first: trace {example!r})",
        hint=_HINT_NO_GOLD,
    )


class _Problem:
    __slots__ = ("counts", "gold", "gold_key", "letters", "options", "texts")

    def __init__(self) -> None:
        self.gold: str | None = None
        self.gold_key: str | None = None
        self.counts: Counter[str] = Counter()
        self.texts: dict[str, str] = {}
        # letter -> (key, text) of a multiple-choice problem's options; None: not read yet
        self.options: dict[str, tuple[str, str]] | None = None
        # key -> the letters of the options answering to it (``option_keys``)
        self.letters: dict[str, list[str]] = {}

    def read_options(self, problem: str | None) -> None:
        if self.options is None and problem is not None:
            self.options = {}
            for letter, text in problem_options(problem).items():
                keys = option_keys(text)
                self.options[letter] = (keys[0], text)
                for option_key in keys:
                    self.letters.setdefault(option_key, []).append(letter)

    def as_choice(self, key: str, answer: str) -> tuple[str, str]:
        """A letter answer when the gold is option text becomes that option's text; an
        option's text when the gold is a letter becomes its letter (the one option whose text
        has that key, or whose number it is when the options carry units: ``1.5 g``)."""
        if not self.options or self.gold_key is None:
            return key, answer
        if is_choice_key(self.gold_key):
            if not is_choice_key(key):
                letters = self.letters.get(key, [])
                exact = [x for x in letters if self.options[x][0] == key]
                if len(exact) == 1 or len(letters) == 1:
                    letter = exact[0] if exact else letters[0]
                    return "s:" + letter, letter
            return key, answer
        if is_choice_key(key) and key[2] in self.options:
            return self.options[key[2]]
        return key, answer


def grade_traces(
    traces: Iterable[Trace],
    *,
    regrade: bool = False,
    workers: int | None = None,
    timeout_s: float = 5.0,
    max_cluster_pairs: int = DEFAULT_MAX_CLUSTER_PAIRS,
    on_progress: Callable[[int], None] | None = None,
    stats: GradeStats | None = None,
) -> pd.DataFrame:
    """Grade every trace (rules in the module docstring); one row per trace, the columns of
    ``GRADED_COLUMNS`` in that order. Consumes ``traces`` once and keeps no responses.

    ``on_progress(n)`` is called with the number of traces read every 10,000 traces.
    ``stats``, when given, is filled with counters of the run.
    """
    stats = stats if stats is not None else GradeStats()
    checker = EquivalenceChecker(
        workers=workers, timeout_s=timeout_s, max_cluster_pairs=max_cluster_pairs
    )
    # No worker is started here: the first answer that needs math-verify starts one
    # (``prefetch``), which loads it on a spare core while this one reads on. In a run whose
    # answers misstep's own rules decide (most one-sample evaluations) no process spends its
    # second of CPU importing math-verify for nothing.
    try:
        return _grade(traces, regrade, checker, on_progress, stats)
    finally:
        checker.close()


@dataclass(slots=True)
class _Rows:
    """The graded table's columns, filled row by row while the traces stream past."""

    trace_ids: list[str] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    steps: list[int | None] = field(default_factory=list)
    datasets: list[str] = field(default_factory=list)
    problem_ids: list[str] = field(default_factory=list)
    sample_idxs: list[int | None] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    repeats: list[float] = field(default_factory=list)
    answers: list[str | None] = field(default_factory=list)
    keys: list[str | None] = field(default_factory=list)
    problem_of: list[int] = field(default_factory=list)
    outcomes: list[Outcome | None] = field(default_factory=list)  # None: grade against gold
    harness_answers: list[str | None] = field(default_factory=list)
    harness_grades: list[bool | None] = field(default_factory=list)
    interned: dict[str, str] = field(default_factory=dict)

    def add(self, trace: Trace, problem: int) -> None:
        """The row's identity and response measures (answer, key and outcome come after)."""
        intern = self.interned.setdefault
        self.trace_ids.append(trace.trace_id)
        self.checkpoints.append(intern(trace.checkpoint, trace.checkpoint))
        self.steps.append(trace.step)
        self.datasets.append(intern(trace.dataset, trace.dataset))
        self.problem_ids.append(intern(trace.problem_id, trace.problem_id))
        self.sample_idxs.append(trace.sample_idx)
        self.lengths.append(len(trace.response))
        self.repeats.append(repetition_score(trace.response))
        self.problem_of.append(problem)
        self.harness_answers.append(trace.harness_answer)
        self.harness_grades.append(trace.correct)

    def frame(self, classes: list[str | None], correct: list[bool]) -> pd.DataFrame:
        import pandas as pd

        string = pd.StringDtype("pyarrow")
        outcomes = [o.value if o else None for o in self.outcomes]
        return pd.DataFrame(
            {
                "trace_id": pd.array(self.trace_ids, dtype=string),
                "checkpoint": pd.array(self.checkpoints, dtype=string),
                "step": pd.array(self.steps, dtype="Int64"),
                "dataset": pd.array(self.datasets, dtype=string),
                "problem_id": pd.array(self.problem_ids, dtype=string),
                "sample_idx": pd.array(self.sample_idxs, dtype="Int64"),
                "answer": pd.array(self.answers, dtype=string),
                "answer_class": pd.array(classes, dtype=string),
                "outcome": pd.array(outcomes, dtype=string),
                "correct": pd.array(correct, dtype=bool),
                "response_chars": pd.array(self.lengths, dtype="int64"),
                "repetition": pd.array(self.repeats, dtype="float32"),
                "harness_answer": pd.array(self.harness_answers, dtype=string),
                "harness_correct": pd.array(self.harness_grades, dtype="boolean"),
            }
        )


def _grade(
    traces: Iterable[Trace],
    regrade: bool,
    checker: EquivalenceChecker,
    on_progress: Callable[[int], None] | None,
    stats: GradeStats,
) -> pd.DataFrame:
    rows = _Rows()
    row_gold_key: dict[int, tuple[str, str]] = {}  # rows whose gold differs from the problem's
    problems: dict[tuple[str, str], int] = {}
    state: list[_Problem] = []
    key_memo: dict[str, str] = {}
    ungradable = 0
    first_ungradable = ""
    for n, trace in enumerate(traces, 1):
        pkey = (trace.dataset, trace.problem_id)
        p = problems.get(pkey)
        if p is None:
            p = problems[pkey] = len(state)
            state.append(_Problem())
        prob = state[p]
        rows.add(trace, p)
        gold = trace.gold_answer
        prob.read_options(trace.problem)
        if gold is not None and prob.gold is None:
            prob.gold, prob.gold_key = gold, canonical_key(gold)
        if trace.finish_reason == "length":
            rows.answers.append(None)
            rows.keys.append(None)
            rows.outcomes.append(Outcome.TRUNCATED)
            continue
        answer = _answer_of(trace)
        key = None
        if answer is not None:
            # Answers repeat heavily within a run: memoise their keys (bounded).
            key = key_memo.get(answer)
            if key is None:
                key = canonical_key(answer)
                if len(key_memo) < _KEY_MEMO_MAX:
                    key_memo[answer] = key
        text = answer
        if key is not None and answer is not None and prob.options:
            key, text = prob.as_choice(key, answer)
        rows.answers.append(answer)
        rows.keys.append(key)
        if key is not None and text is not None:
            prob.counts[key] += 1
            if key not in prob.texts:
                prob.texts[key] = text
                # workers parse it now, while the stream goes on
                checker.prefetch(text, key)
                if key != prob.gold_key and prob.gold is not None and prob.gold_key is not None:
                    # The gold only once an answer differs from it: a one-sample evaluation
                    # whose answer matches its gold's key needs no parse of that gold.
                    checker.prefetch(prob.gold, prob.gold_key)
        grade = _user_grade(trace, regrade)
        if grade is not None:
            rows.outcomes.append(
                Outcome.CORRECT if grade else Outcome.WRONG if key else Outcome.NO_ANSWER
            )
        elif key is None:
            rows.outcomes.append(Outcome.NO_ANSWER)
        elif gold is None:
            ungradable += 1
            first_ungradable = first_ungradable or trace.trace_id
            rows.outcomes.append(Outcome.WRONG)
        else:
            rows.outcomes.append(None)
            if gold != prob.gold:
                row_gold_key[len(rows.outcomes) - 1] = (gold, canonical_key(gold))
        if on_progress is not None and n % _PROGRESS_EVERY == 0:
            on_progress(n)
    total = len(rows.trace_ids)
    if ungradable:
        raise _no_gold_error(ungradable, total, first_ungradable)
    if on_progress is not None:
        on_progress(total)
    stats.traces = total
    stats.problems = len(state)
    frame = _resolve(rows, state, row_gold_key, checker, stats)
    _split_classes_by_grade(frame)
    return frame[list(GRADED_COLUMNS)]


def _resolve(
    rows: _Rows,
    state: list[_Problem],
    row_gold_key: dict[int, tuple[str, str]],
    checker: EquivalenceChecker,
    stats: GradeStats,
) -> pd.DataFrame:
    """Answer classes per problem, then every row's outcome, correctness and class."""
    class_of, gold_equal = _classes(state, checker, stats)
    answers, keys, outcomes = rows.answers, rows.keys, rows.outcomes
    odd = {
        i: (gold, answers[i])
        for i, (gold, _) in row_gold_key.items()
        if answers[i] is not None and outcomes[i] is None
    }
    odd_equal = checker.compare_pairs(
        (gold, answer) for gold, answer in odd.values() if answer is not None
    )
    stats.equivalence = checker.stats
    correct: list[bool] = []
    classes: list[str | None] = []
    for i, p in enumerate(rows.problem_of):
        key = keys[i]
        outcome = outcomes[i]
        if outcome is None:
            if i in odd:
                gold, answer = odd[i]
                ok = odd_equal[(gold, answer or "")]
            else:
                ok = key == state[p].gold_key or gold_equal[p].get(key or "", False)
            outcome = Outcome.CORRECT if ok else Outcome.WRONG
            outcomes[i] = outcome
        correct.append(outcome is Outcome.CORRECT)
        if outcome is Outcome.TRUNCATED or (outcome is Outcome.NO_ANSWER):
            classes.append(None)
        elif key is None:  # graded correct by the user without an extractable answer
            classes.append(state[p].gold_key or CORRECT_WITHOUT_ANSWER)
        else:
            classes.append(class_of[p].get(key, key))
    return rows.frame(classes, correct)


REPETITION_WORDS = 64
"""The repetition score looks at a response's last this many words (where loops show)."""


def repetition_score(response: str) -> float:
    """How much of a response repeats itself: the share of its word 4-grams (among the last
    ``REPETITION_WORDS`` words) that already occurred earlier in that window. 0 for varied
    text or fewer than 8 words; near 1 for a loop (``the answer is 2. the answer is 2. ...``).
    Bounded work per trace: a window of the text, never the whole of a huge response."""
    # A short window keeps this cheap (about 20 us a trace): a loop shows at the end.
    words = response[-REPETITION_WORDS * 10 :].split()[-REPETITION_WORDS:]
    n = len(words) - 3
    if n < 5:
        return 0.0
    return 1.0 - len(set(zip(words, words[1:], words[2:], words[3:], strict=False))) / n


def _split_classes_by_grade(frame: pd.DataFrame) -> None:
    """Make every answer class uniformly correct or wrong, in place.

    The grade in use (the row's own, or the regrade) and the equivalence classes can disagree:
    a user may grade ``9-5 = 4`` wrong while math-verify finds it equal to the gold ``4``. Such
    a class is split in two by grade (the wrong rows get the key suffixed with
    ``CLASS_SPLIT_WRONG``), so that a class is correct exactly when its rows are, and maj@1
    equals pass@1."""
    import numpy as np
    import pandas as pd

    answered = frame["answer_class"].notna().to_numpy()
    if not answered.any():
        return
    keys = frame.loc[answered, ["dataset", "problem_id", "answer_class"]].astype(str)
    correct = frame.loc[answered, "correct"].to_numpy(bool)
    group = keys.groupby(["dataset", "problem_id", "answer_class"], sort=False).ngroup().to_numpy()
    n_groups = int(group.max()) + 1
    n_correct = np.bincount(group, weights=correct, minlength=n_groups)
    n_rows = np.bincount(group, minlength=n_groups)
    mixed = (n_correct > 0) & (n_correct < n_rows)
    move = mixed[group] & ~correct
    if not move.any():
        return
    rows = np.flatnonzero(answered)[move]
    classes = frame["answer_class"].astype(object).to_numpy(copy=True)
    classes[rows] = [f"{key}{CLASS_SPLIT_WRONG}" for key in classes[rows]]
    frame["answer_class"] = pd.array(classes, dtype=pd.StringDtype("pyarrow"))


def _classes(
    state: list[_Problem], checker: EquivalenceChecker, stats: GradeStats
) -> tuple[list[dict[str, str]], list[dict[str, bool]]]:
    """Per problem: answer key -> class key, and answer key -> equivalent to the gold."""
    class_of: list[dict[str, str]] = [{} for _ in state]
    gold_equal: list[dict[str, bool]] = [{} for _ in state]
    tasks: list[ProblemTask] = []
    owners: list[list[int]] = []
    results: list[ProblemResult | None] = []
    # pandas (about 0.4 s of imports) loads only now, for the table: while a math-verify
    # worker, started by the first answer that needed it, loads math-verify on the other core
    # and parses, instead of before the first line is read.
    import pandas  # noqa: F401

    known = checker.fingerprints()
    seen: dict[tuple[str | None, tuple[str, ...]], int] = {}
    for p, prob in enumerate(state):
        ordered = [k for k, _ in prob.counts.most_common() if k != prob.gold_key]
        if prob.gold_key is not None and prob.gold_key in prob.counts:
            class_of[p][prob.gold_key] = prob.gold_key
        if not ordered:
            continue
        signature = (prob.gold_key, tuple(ordered))
        if signature in seen:  # same gold and answers as an earlier problem: reuse its result
            owners[seen[signature]].append(p)
            continue
        seen[signature] = len(tasks)
        owners.append([p])
        task = ProblemTask(
            gold=prob.gold,
            gold_key=prob.gold_key,
            answers=tuple(prob.texts[k] for k in ordered),
            keys=tuple(ordered),
            known=tuple(
                (k, known[k]) for k in (prob.gold_key, *ordered) if k is not None and k in known
            ),
        )
        tasks.append(task)
        # Decided here when keys and prefetched fingerprints settle every pair.
        results.append(solve_here(task, checker.max_cluster_pairs))
    pooled = [t for t, r in zip(tasks, results, strict=True) if r is None]
    stats.pool_tasks = len(pooled)
    solved = iter(checker.solve(pooled))
    for task, result, ps in zip(tasks, results, owners, strict=True):
        if result is None:
            result = next(solved)
        else:
            checker.stats.ungrouped += result.ungrouped
        for p in ps:
            gold_key = state[p].gold_key
            for key, equal, rep in zip(
                task.keys, result.gold_equal, result.representative, strict=True
            ):
                if equal and gold_key is not None:
                    gold_equal[p][key] = True
                    class_of[p][key] = gold_key
                else:
                    class_of[p][key] = task.keys[rep] if rep >= 0 else key
                if gold_key is not None and equal is not None:
                    checker.remember(gold_key, key, bool(equal))
    return class_of, gold_equal
