"""Untrusted text fenced as data in a prompt: one rule for every prompt misstep writes (the
judge's, ``misstep select``'s candidates, ``misstep discover``'s texts)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

__all__ = ["disarm_tags", "fence"]


@functools.cache
def _tags(names: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(name) for name in names)
    return re.compile(rf"<(\s*/?\s*(?:{alternatives})\b)", re.IGNORECASE)


def disarm_tags(text: str, names: Sequence[str]) -> str:
    """``text`` with every tag of ``names`` in it, opening or closing, whatever its case and
    spacing, marked (``‹`` for its ``<``): it can neither end the data block it is in nor open
    a forged one."""
    return _tags(tuple(names)).sub(r"‹\1", text)


def fence(
    tag: str,
    text: str,
    *,
    attrs: str = "",
    others: Sequence[str] = (),
    keep_last: int | None = None,
) -> str:
    """``text`` as data between ``<tag attrs>`` and ``</tag>`` on lines of their own: cut to
    its last ``keep_last`` characters (``[...] `` in front: the end holds a final answer), and
    its tags of ``tag`` and of the prompt's ``others`` disarmed (``disarm_tags``)."""
    if keep_last is not None and len(text) > keep_last:
        text = "[...] " + text[-keep_last:]
    return f"<{tag}{attrs}>\n{disarm_tags(text, (tag, *others))}\n</{tag}>"
