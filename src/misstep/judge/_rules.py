"""The ``rules`` judge: no model, re-checks every explicit calculation with exact arithmetic."""

from __future__ import annotations

import asyncio
import time

from misstep.errors import OptionError
from misstep.judge._arith import find_arithmetic_error
from misstep.judge._config import JudgeConfig
from misstep.judge._protocol import Judge, JudgeRequest, JudgeResult
from misstep.judge._schema import EVIDENCE_MAX_CHARS
from misstep.judge._spec import JudgeSpec
from misstep.rollouts import Trace
from misstep.taxonomy import Taxonomy
from misstep.verdict import LabelStatus

__all__ = ["MAX_TRACE_CHARS", "RULES_JUDGE_CAPABILITIES", "RulesJudge", "create_rules_judge"]

RULES_JUDGE_CAPABILITIES = (
    "rules judge (no model): re-checks every explicit calculation written as a chain "
    "'a op b = c (= d ...)' with + - × * · / ÷ ^ (and an ASCII x or X between numbers), "
    "parentheses, \\frac/\\dfrac, decimals, thousands separators (1,000, 1{,}000, 5,\\!000, "
    "thin spaces), \\$ and units after numbers, percentages, inside $...$, \\(...\\) and "
    "\\[...\\] and across a line break, in exact rational arithmetic read as grading reads an "
    "answer (6/2(1+2): 1 or 9), and reports the first wrong one as 'arithmetic' with its step and "
    "the verbatim calculation. A stated decimal may be rounded or truncated to its own "
    "precision; '≈' allows 5%. A sum of quantities in two units of one dimension (3 hours + 30 "
    "minutes = 210 minutes) is checked in the unit of its result; other unit mixes are left "
    "alone. Traces over 2,000,000 characters are skipped. It cannot detect misread "
    "problems, misused theorems or formulas, broken derivations, algebra with variables, or "
    "calculations written in words; a trace where it finds nothing gets 'other' with "
    "confidence 0, which means undetermined, not error-free."
)
"""What the rules judge detects and what it cannot; shown by the CLI and the README."""

NO_ERROR_EXPLANATION = (
    "rules judge: no checkable arithmetic error found; cannot detect misreads, theorem misuse "
    "or broken derivations"
)
_FALLBACK_KEYS = ("other", "undetermined")
MAX_TRACE_CHARS = 2_000_000
"""A trace longer than this (2 MB of text) is skipped with a reason, not checked: bounded time
and memory per trace whatever the input holds. The label pipeline asks :meth:`RulesJudge.too_long`
before it splits or renders the trace, so the limit applies before any per-character work."""
_OFF_LOOP_CHARS = 20_000  # longer traces are checked in a thread, so others keep flowing


class RulesJudge(Judge):
    """A judge that only finds wrong explicit calculations; fast, deterministic, model-free."""

    def __init__(self, config: JudgeConfig, taxonomy: Taxonomy) -> None:
        if config.model is not None:
            # its id would name a model it never asks (and its labels a judge they are not)
            raise OptionError(
                option="model",
                value=config.model,
                allowed="none with the rules judge: it asks no model",
                hint="leave the model out, or ask a model judge, e.g. `backend=openai`",
            )
        keys = taxonomy.keys
        if "arithmetic" not in keys:
            raise OptionError(
                option="backend",
                value="rules",
                allowed="the rules judge needs a taxonomy with an 'arithmetic' category "
                f"(taxonomy {taxonomy.id} has {', '.join(keys)})",
            )
        fallback = next((k for k in _FALLBACK_KEYS if k in keys), None)
        if fallback is None:
            raise OptionError(
                option="backend",
                value="rules",
                allowed="the rules judge needs an 'other' (or 'undetermined') category for "
                f"traces it cannot decide (taxonomy {taxonomy.id} has {', '.join(keys)})",
            )
        self._fallback = fallback
        spec = JudgeSpec(config, taxonomy)
        self.spec = spec
        """The run's one specification (the id)."""
        self._label = spec.label_type
        self._id = spec.judge_id

    @property
    def judge_id(self) -> str:
        """Short id of this configuration (the spec's)."""
        return self._id

    max_trace_chars = MAX_TRACE_CHARS
    """The size limit, in characters (see ``MAX_TRACE_CHARS``)."""

    def too_long(self, trace: Trace) -> JudgeResult | None:
        """The ``skipped`` result of a trace over the size limit, else None. O(number of given
        steps): it reads lengths only, so callers ask it before splitting the trace."""
        size = sum(len(s) for s in trace.steps) if trace.steps else len(trace.response)
        return _too_long(size, self.max_trace_chars) if size > self.max_trace_chars else None

    def label_steps(self, steps: list[str]) -> JudgeResult:
        """Label a trace given its steps (synchronous core of :meth:`judge`)."""
        start = time.perf_counter()
        size = sum(len(s) for s in steps)
        if size > self.max_trace_chars:
            return _too_long(size, self.max_trace_chars)
        found = find_arithmetic_error(steps)
        if found is None:
            label = self._label(
                error_type=self._fallback,
                first_error_step=0,
                evidence="",
                explanation=NO_ERROR_EXPLANATION,
                confidence=0.0,
            )
        else:
            label = self._label(
                error_type="arithmetic",
                first_error_step=found.step,
                evidence=found.evidence[:EVIDENCE_MAX_CHARS],
                explanation=(
                    f"rules judge: in step {found.step}, {found.evidence[:120]!s} is wrong: "
                    f"{found.expression} is {found.correct}, not {found.stated}"
                ),
                confidence=0.9,
            )
        return JudgeResult(
            status=LabelStatus.OK,
            label=label,
            attempts=1,
            latency_ms=(time.perf_counter() - start) * 1000.0,
        )

    async def judge(self, request: JudgeRequest) -> JudgeResult:
        """Label one trace from the steps it was shown. Never raises for trace content."""
        early = self.too_long(request.trace)
        if early is not None:
            return early
        if sum(len(s) for s in request.steps) > _OFF_LOOP_CHARS:
            return await asyncio.to_thread(self.label_steps, request.steps)
        return self.label_steps(request.steps)

    async def aclose(self) -> None:
        """Nothing to release."""


def _too_long(size: int, limit: int) -> JudgeResult:
    return JudgeResult(
        status=LabelStatus.SKIPPED,
        reason=f"too long for the rules judge: {size:,} characters (limit {limit:,})",
        attempts=1,
    )


def create_rules_judge(config: JudgeConfig, taxonomy: Taxonomy) -> RulesJudge:
    """Registry factory of the ``rules`` backend."""
    return RulesJudge(config, taxonomy)
