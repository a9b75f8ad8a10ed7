"""Bounded retries with exponential backoff and full jitter for transient judge errors."""

from __future__ import annotations

import random

__all__ = ["backoff_delay"]

# Jitter only spreads retries in time; it never touches labels, so an unseeded RNG is fine.
_jitter = random.Random()


def backoff_delay(retry: int, *, base_s: float = 0.5, cap_s: float = 10.0) -> float:
    """Seconds to wait before retry number ``retry`` (1-based): uniform in [d/2, d] with
    d = min(cap, base * 2**(retry-1)). Half of the wait is jitter so that many concurrent
    requests that failed together do not come back together."""
    delay = min(cap_s, base_s * (2 ** max(0, retry - 1)))
    return float(delay * (0.5 + 0.5 * _jitter.random()))
