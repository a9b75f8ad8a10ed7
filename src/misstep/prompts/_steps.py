"""Split a trace into the steps the judge sees numbered (and that labels index).

The rule, in order:

1. ``trace.steps`` when the source gives them: used exactly as given (no piece dropped), so
   that indices agree with the source's human labels.
2. Otherwise the response is cut at ``<think>`` and ``</think>`` into parts (the reasoning, and
   what follows it), and each part into paragraphs at blank lines.
3. A part that is one paragraph, and any paragraph longer than ``LONG_PARAGRAPH`` characters,
   is split further into lines and sentences, so that a step is something one can point at:
   most RL responses are one long paragraph of reasoning. A cut is made at a line break, or
   after ``.``, ``!`` or ``?`` followed by a space, and never inside a formula: not inside
   ``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]`` or braces, not after a common
   abbreviation (``e.g.``, ``i.e.``, ``etc.``, ``vs.``, ``Fig.``), and not at a line break
   before or after a relation or an operator (``3 + 4`` / ``= 7`` stays one step), and not
   after an enumerator that starts a sentence (``2. Then``).
4. Pieces are stripped of surrounding whitespace and empty pieces dropped; a response with no
   text gives no steps.
"""

from __future__ import annotations

import re

from misstep.rollouts import Trace

__all__ = ["LONG_PARAGRAPH", "split_steps"]

LONG_PARAGRAPH = 400
"""A paragraph longer than this many characters is split into lines and sentences."""

_BLANK_LINES = re.compile(r"\n[ \t\r\f\v]*\n\s*")
_THINK_TAG = re.compile(r"</?think>")
_ABBREVIATIONS = ("e.g", "i.e", "etc", "vs", "cf", "fig", "eq", "approx", "resp", "mr", "dr", "no")
_JOINS = ("=", "+", "-", "*", "/", "\\times", "\\cdot", "\\div", "\\approx", "≈", "<", ">", "\\le")


def split_steps(trace: Trace | str) -> list[str]:
    """The steps of a trace, numbered from 0 by position in the returned list (the rule is in
    the module docstring)."""
    if isinstance(trace, Trace):
        if trace.steps:
            return list(trace.steps)
        text = trace.response
    else:
        text = trace
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    steps: list[str] = []
    for part in _THINK_TAG.split(text):  # the reasoning, and what follows it, each on its own
        paragraphs = [p for p in _BLANK_LINES.split(part) if p.strip()]
        for paragraph in paragraphs:
            if len(paragraphs) == 1 or len(paragraph) > LONG_PARAGRAPH:
                steps.extend(_sentences(paragraph))
            else:
                steps.append(paragraph.strip())
    return [s for s in steps if s]


def _sentences(text: str) -> list[str]:
    """Lines and sentences of one paragraph, never cutting a formula (rule 3)."""
    cuts: list[int] = []
    dollars = 0  # inside $...$ (1) or $$...$$ (2)
    depth = 0  # braces, \( \), \[ \]
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            nxt = text[i + 1]
            if nxt in "([":
                depth += 1
            elif nxt in ")]":
                depth = max(0, depth - 1)
            i += 2  # an escaped character (\$, \{, \%) changes nothing else
            continue
        if ch == "$":
            double = text.startswith("$$", i)
            if dollars == 0:
                dollars = 2 if double else 1
            elif dollars == (2 if double else 1):
                dollars = 0
            i += 2 if double else 1
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif dollars == 0 and depth == 0:
            line_end = ch == "\n" and not _joined(text, i)
            sentence_end = ch in ".!?" and i + 1 < n and text[i + 1] in " \t"
            if line_end or (sentence_end and not _abbreviation(text, i)):
                cuts.append(i + 1)
        i += 1
    pieces: list[str] = []
    start = 0
    for cut in [*cuts, n]:
        piece = text[start:cut].strip()
        start = cut
        if piece:
            pieces.append(piece)
    return pieces


def _abbreviation(text: str, dot: int) -> bool:
    """Whether the ``.`` at ``dot`` ends an abbreviation or a number's letter (``e.g.``)."""
    start = dot
    while start > 0 and (text[start - 1].isalpha() or text[start - 1] == "."):
        start -= 1
    word = text[start:dot].lower()
    if word in _ABBREVIATIONS:
        return True
    digits = dot
    while digits > 0 and text[digits - 1].isdigit():
        digits -= 1
    if 0 < dot - digits <= 2:
        # "2. Then": an enumerator at a sentence start, not the end of "is 14. Next"
        before = text[:digits].rstrip(" \t")
        return not before or before[-1] in ".!?:\n"
    return False


def _joined(text: str, newline: int) -> bool:
    """Whether a line break sits inside a calculation: the line before ends with a relation or
    an operator, or the next starts with one."""
    before = text[:newline].rstrip(" \t")
    after = text[newline + 1 :].lstrip(" \t")
    return before.endswith(_JOINS) or after.startswith(_JOINS)
