"""Render the judge's chat messages from the templates, the taxonomy and one trace.

The system message depends only on the templates and the taxonomy, so it is byte-identical for
every request and vLLM's prefix cache serves it; the trace comes last in the user message,
numbered and fenced as data between ``<trace>`` and ``</trace>``.

Everything untrusted is fenced: the problem, the reference answer and the final answer each in
their own block, the trace last; a fence tag or a line that looks like a step header or an
omission marker inside untrusted text is marked (``‹``) so it cannot close a block or forge the
numbering.

Token budget: tokens are estimated as characters / 4 (rounded up), a cheap estimate that is close
for English and LaTeX with common BPE tokenizers and needs no tokenizer. The problem takes at most
half of ``max_trace_tokens`` and each answer at most 256 tokens (longer ones keep both ends with a
marker in the middle); the steps get what is left. When the numbered steps exceed it, the first
steps and the last steps (those around the final answer)
are kept, with a marker line ``[... steps 5-17 omitted ...]`` between them; the kept steps keep
their original numbers, so ``first_error_step`` always indexes the original steps.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jinja2

from misstep.defaults import JudgeDefaults
from misstep.errors import InputFormatError
from misstep.prompts._fence import disarm_tags
from misstep.prompts._steps import split_steps
from misstep.rollouts import Trace
from misstep.taxonomy import Taxonomy

__all__ = [
    "TEMPLATE_NAMES",
    "RenderedPrompt",
    "estimate_tokens",
    "prompt_hash",
    "render_judge_prompt",
]

TEMPLATE_NAMES = ("judge_system.j2", "judge_user.j2")
"""The template files a template directory must hold."""

_MARKER_TOKENS = 16  # room kept for the omission marker line
# A fence tag written inside untrusted text would end the data block early: disarm it.
_FENCE_TAGS = ("trace", "problem", "reference_answer", "final_answer")
# A line of untrusted text that looks like a harness line (a step header or an omission
# marker) would let the trace forge its own numbering: such lines get a mark in front.
_FORGED_LINE = re.compile(r"^(\s*)(step\s+\d+\s*:|\[\.\.\.)", re.IGNORECASE | re.MULTILINE)
_CONTEXT_SHARE = 2  # the problem may take at most 1/2 of the budget
_ANSWER_TOKENS = 256  # a reference or final answer longer than this is cut in its middle


@dataclass(frozen=True)
class RenderedPrompt:
    """The chat messages for one trace and what the judge was shown."""

    messages: list[dict[str, str]]
    """``[{"role": "system", ...}, {"role": "user", ...}]``."""
    steps: list[str]
    """All the trace's steps, numbered from 0 (labels index these)."""
    trace_cut: bool
    """Some steps (or the middle of a step) were left out to fit the token budget."""
    prompt_hash: str
    """Hash of the template files' text."""
    shown_steps: tuple[int, ...] = ()
    """Indices of the steps shown to the judge."""
    context_cut: bool = False
    """The problem, the reference answer or the final answer was cut in its middle to fit."""


def estimate_tokens(text: str) -> int:
    """Cheap token estimate: characters / 4, rounded up."""
    return (len(text) + 3) // 4


def _template_texts(template_dir: Path | None) -> list[tuple[str, str]]:
    texts = []
    for name in TEMPLATE_NAMES:
        if template_dir is None:
            text = (resources.files("misstep.prompts") / "templates" / name).read_text("utf-8")
        else:
            path = Path(template_dir) / name
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise InputFormatError(
                    path=path,
                    reason=f"cannot read the judge template: {exc.strerror or exc}",
                    hint=f"a template directory must hold {' and '.join(TEMPLATE_NAMES)}",
                ) from None
        texts.append((name, text))
    return texts


@functools.lru_cache(maxsize=16)
def _environment(template_dir: Path | None) -> tuple[jinja2.Environment, str]:
    # Templates are read once per process and directory; the hash is of exactly that text.
    texts = _template_texts(template_dir)
    env = jinja2.Environment(
        loader=jinja2.DictLoader(dict(texts)),
        autoescape=False,  # plain text prompts, not HTML; untrusted text is fenced instead
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
    )
    digest = hashlib.sha256()
    for name, text in texts:
        digest.update(name.encode() + b"\0" + text.encode("utf-8") + b"\0")
    return env, digest.hexdigest()[:12]


def prompt_hash(template_dir: Path | None = None) -> str:
    """12 hex of sha256 over the judge templates' names and text."""
    return _environment(_norm(template_dir))[1]


def _norm(template_dir: Path | None) -> Path | None:
    return None if template_dir is None else Path(template_dir).resolve()


_SYSTEM_CACHE: dict[tuple[Path | None, str], str] = {}


def _system_message(template_dir: Path | None, taxonomy: Taxonomy) -> str:
    key = (template_dir, taxonomy.hash)
    text = _SYSTEM_CACHE.get(key)
    if text is None:
        env, _ = _environment(template_dir)
        text = env.get_template("judge_system.j2").render(taxonomy=taxonomy).strip() + "\n"
        if len(_SYSTEM_CACHE) > 64:
            _SYSTEM_CACHE.clear()
        _SYSTEM_CACHE[key] = text
    return text


def _disarm(text: str) -> str:
    return _FORGED_LINE.sub(r"\1‹\2", disarm_tags(text, _FENCE_TAGS))


def _fit(text: str | None, max_tokens: int, missing: str) -> tuple[str, bool, int]:
    """Untrusted context (problem, answers) disarmed and cut to ``max_tokens``: (text, cut,
    tokens used)."""
    if not text:
        return missing, False, estimate_tokens(missing)
    shown = text if estimate_tokens(text) <= max_tokens else _cut_middle(text, max_tokens)
    shown = _disarm(shown)
    return shown, shown is not text and len(shown) < len(text), estimate_tokens(shown)


def _cut_middle(text: str, max_tokens: int) -> str:
    """Keep the beginning and end of one over-long step, marking the characters left out."""
    keep = max(max_tokens * 4 // 2 - 24, 16)
    omitted = len(text) - 2 * keep
    if omitted <= 0:
        return text
    return f"{text[:keep]} [... {omitted} characters omitted ...] {text[-keep:]}"


def _block(index: int, text: str) -> str:
    return f"Step {index}:\n{_disarm(text)}"


def _select(costs: list[int], budget: int) -> tuple[int, int]:
    """Head steps ``[0, head)`` and tail steps ``[tail, n)`` to show within ``budget``."""
    n = len(costs)
    head, tail = 1, n - 1
    used = costs[0] + costs[-1]
    # Half the budget for the beginning, the rest for the end (the steps near the answer),
    # then whatever is left over goes to the beginning again.
    while head < tail and used + costs[head] <= budget // 2 + costs[-1]:
        used += costs[head]
        head += 1
    while tail > head and used + costs[tail - 1] <= budget:
        tail -= 1
        used += costs[tail]
    while head < tail and used + costs[head] <= budget:
        used += costs[head]
        head += 1
    return head, tail


def _number_steps(steps: list[str], max_trace_tokens: int) -> tuple[str, bool, tuple[int, ...]]:
    if not steps:
        return "(the solution is empty)", False, ()
    blocks = [_block(i, s) for i, s in enumerate(steps)]
    costs = [estimate_tokens(b) + 1 for b in blocks]  # +1: the blank line between steps
    if sum(costs) <= max_trace_tokens:
        return "\n\n".join(blocks), False, tuple(range(len(steps)))
    if len(steps) == 1:
        return _block(0, _cut_middle(steps[0], max_trace_tokens)), True, (0,)
    budget = max(max_trace_tokens - _MARKER_TOKENS, 2)
    # A first or last step alone larger than half the budget is cut in its middle.
    half = budget // 2
    for i in (0, len(steps) - 1):
        if costs[i] > half:
            blocks[i] = _block(i, _cut_middle(steps[i], half))
            costs[i] = estimate_tokens(blocks[i]) + 1
    head, tail = _select(costs, budget)
    shown = tuple(range(head)) + tuple(range(tail, len(steps)))
    parts = blocks[:head]
    if tail > head:
        span = f"step {head}" if tail - head == 1 else f"steps {head}-{tail - 1}"
        parts.append(f"[... {span} omitted ...]")
    parts += blocks[tail:]
    return "\n\n".join(parts), True, shown


def render_judge_prompt(
    taxonomy: Taxonomy,
    trace: Trace,
    final_answer: str | None,
    *,
    max_trace_tokens: int = JudgeDefaults.max_trace_tokens,
    template_dir: Path | None = None,
) -> RenderedPrompt:
    """The system and user messages asking the judge to label ``trace`` under ``taxonomy``."""
    directory = _norm(template_dir)
    env, digest = _environment(directory)
    steps = split_steps(trace)
    # The problem and both answers are untrusted too, and count against the same budget: the
    # problem may take half of it, each answer a little; the steps get the rest.
    problem, problem_cut, used = _fit(
        trace.problem, max_trace_tokens // _CONTEXT_SHARE, "(not given)"
    )
    gold, gold_cut, used_gold = _fit(trace.gold_answer, _ANSWER_TOKENS, "(not given)")
    answer, answer_cut, used_answer = _fit(final_answer, _ANSWER_TOKENS, "(none found)")
    remaining = max(max_trace_tokens - used - used_gold - used_answer, _MARKER_TOKENS * 4)
    numbered, cut, shown = _number_steps(steps, remaining)
    user = env.get_template("judge_user.j2").render(
        problem=problem,
        gold_answer=gold,
        final_answer=answer,
        numbered_steps=numbered,
    )
    messages = [
        {"role": "system", "content": _system_message(directory, taxonomy)},
        {"role": "user", "content": user.strip() + "\n"},
    ]
    return RenderedPrompt(
        messages=messages,
        steps=steps,
        trace_cut=cut,
        prompt_hash=digest,
        shown_steps=shown,
        context_cut=problem_cut or gold_cut or answer_cut,
    )
