"""Split a trace into the steps the judge sees numbered (and that labels index)."""

from __future__ import annotations

import re

from misstep.rollouts import Trace

__all__ = ["split_steps"]

_BLANK_LINES = re.compile(r"\n[ \t\r\f\v]*\n\s*")
_HAS_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n")


def split_steps(trace: Trace | str) -> list[str]:
    """The steps of a trace, numbered from 0 by position in the returned list.

    - ``trace.steps`` when the source gives them: used exactly as given (no piece dropped), so
      that indices agree with the source's human labels.
    - Otherwise the response is split on blank lines; when it holds no blank line, on line
      breaks. Pieces are stripped of surrounding whitespace and empty pieces dropped.
    - A response with no text at all gives no steps.
    """
    if isinstance(trace, Trace):
        if trace.steps:
            return list(trace.steps)
        text = trace.response
    else:
        text = trace
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    pieces = _BLANK_LINES.split(text) if _HAS_BLANK_LINE.search(text) else text.split("\n")
    return [p.strip() for p in pieces if p.strip()]
