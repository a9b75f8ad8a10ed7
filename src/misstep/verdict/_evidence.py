"""Checks that a judge's quote really occurs in the trace."""

from __future__ import annotations

import re

__all__ = ["evidence_in_text", "normalize_ws"]

_WS = re.compile(r"\s+")


def normalize_ws(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return _WS.sub(" ", text).strip()


def evidence_in_text(evidence: str | None, *texts: str | None) -> bool:
    """True when the (non-empty) quote occurs in one of ``texts`` after whitespace
    normalisation. A quote of only whitespace verifies nothing."""
    quote = normalize_ws(evidence or "")
    if not quote:
        return False
    return any(quote in normalize_ws(t) for t in texts if t)
