"""Checkpoint order: by training ``step`` when known, else by natural sort of the names.

Rules, in this order:

1. A checkpoint's step is the smallest non-null ``step`` among its rows.
2. Checkpoints with a step come first, ordered by step; checkpoints without one follow.
3. Ties (same step, or no step) are broken by natural sort of the name, so
   ``global_step_100`` < ``global_step_200`` < ``global_step_1000``; then by the raw name.
"""

from __future__ import annotations

import re

import pandas as pd

__all__ = ["natural_key", "order_checkpoints"]

_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[tuple[int, int, str], ...]:
    """Sort key treating runs of digits as numbers: ``step_9`` < ``step_10``."""
    parts = _DIGITS.split(name)
    # (kind, number, text): numbers and text never compare with each other directly.
    return tuple(
        (0, int(part), "") if i % 2 else (1, 0, part.lower())
        for i, part in enumerate(parts)
        if part
    )


def order_checkpoints(graded: pd.DataFrame) -> list[str]:
    """The distinct checkpoints of a graded table, in training order (see module docstring)."""
    if graded.empty:
        return []
    names = graded["checkpoint"].astype(str)
    if "step" in graded.columns:
        steps = pd.to_numeric(graded["step"], errors="coerce")
        first_step = steps.groupby(names, sort=False).min()
    else:
        first_step = pd.Series(float("nan"), index=pd.unique(names))

    def key(name: str) -> tuple[int, float, tuple[tuple[int, int, str], ...], str]:
        step = first_step.get(name)
        if step is None or pd.isna(step):
            return (1, 0.0, natural_key(name), name)
        return (0, float(step), natural_key(name), name)

    return sorted((str(n) for n in first_step.index), key=key)
