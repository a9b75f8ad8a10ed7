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


# The characters the rule looks at; everything between them is skipped by the regex engine, so
# the Python loop runs once per special character, not once per character. Matched left to
# right without overlap, exactly as a character loop would consume them: an escape takes two
# characters (\\$, \\{, \\( ...), ``$$`` two, the rest one; a sentence end is ``.!?`` before a
# space or a tab.
_SPECIAL = re.compile(r"\\[\s\S]|\$\$?|[{}\n]|[.!?](?=[ \t])")
_ABBREVIATION_CHARS = max(len(a) for a in _ABBREVIATIONS)
_JOIN_CHARS = max(len(j) for j in _JOINS)


def _sentences(text: str) -> list[str]:
    """Lines and sentences of one paragraph, never cutting a formula (rule 3). Linear in the
    paragraph: each special character is looked at once, and each cut test looks only at the
    few characters around it (never copies the text before or after it)."""
    cuts: list[int] = []
    dollars = 0  # inside $...$ (1) or $$...$$ (2)
    depth = 0  # braces, \( \), \[ \]
    for match in _SPECIAL.finditer(text):
        token = match.group()
        ch = token[0]
        if ch == "\\":
            nxt = token[1]
            if nxt in "([":
                depth += 1
            elif nxt in ")]":
                depth = max(0, depth - 1)
            # an escaped character (\$, \{, \%) changes nothing else
        elif ch == "$":
            double = len(token) == 2
            if dollars == 0:
                dollars = 2 if double else 1
            elif dollars == (2 if double else 1):
                dollars = 0
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif dollars == 0 and depth == 0:
            i = match.start()
            if not (_joined(text, i) if ch == "\n" else _abbreviation(text, i)):
                cuts.append(i + 1)
    pieces: list[str] = []
    start = 0
    for cut in [*cuts, len(text)]:
        piece = text[start:cut].strip()
        start = cut
        if piece:
            pieces.append(piece)
    return pieces


def _abbreviation(text: str, dot: int) -> bool:
    """Whether the ``.`` at ``dot`` ends an abbreviation or a number's letter (``e.g.``).
    Looks back a bounded number of characters (and over the spaces before an enumerator)."""
    start = dot
    # the word before the dot: longer than any abbreviation means it is none
    while (
        start > 0
        and dot - start <= _ABBREVIATION_CHARS
        and (text[start - 1].isalpha() or text[start - 1] == ".")
    ):
        start -= 1
    if dot - start <= _ABBREVIATION_CHARS and text[start:dot].lower() in _ABBREVIATIONS:
        return True
    digits = dot
    while digits > 0 and dot - digits <= 2 and text[digits - 1].isdigit():
        digits -= 1
    if 0 < dot - digits <= 2:
        # "2. Then": an enumerator at a sentence start, not the end of "is 14. Next"
        before = _skip_back(text, digits)
        return before == 0 or text[before - 1] in ".!?:\n"
    return False


def _skip_back(text: str, end: int) -> int:
    """The index after the last character before ``end`` that is not a space or a tab."""
    while end > 0 and text[end - 1] in " \t":
        end -= 1
    return end


def _joined(text: str, newline: int) -> bool:
    """Whether a line break sits inside a calculation: the line before ends with a relation or
    an operator, or the next starts with one (compared in place, without copying a line)."""
    before = _skip_back(text, newline)
    if text.endswith(_JOINS, max(0, before - _JOIN_CHARS), before):
        return True
    after = newline + 1
    n = len(text)
    while after < n and text[after] in " \t":
        after += 1
    return text.startswith(_JOINS, after)
