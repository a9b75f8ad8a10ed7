"""The interval of a share observed at 0 or 1, where resampling gives a zero-width interval."""

from __future__ import annotations

from misstep.metrics._bootstrap import LEVEL

__all__ = ["boundary_interval"]


def boundary_interval(share: float, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Exact Clopper-Pearson interval of a share seen in none (``share`` 0) or all (``share``
    1) of ``n`` independent units: ``(0, 1 - (alpha/2)^(1/n))`` or its mirror. Every resample
    of 0 of ``n`` is 0 again, so a bootstrap says [0, 0]; this says how large the share can
    be and still make 0 of ``n`` likely. ``n`` is the number of independent units (problems,
    when traces of one problem go together); ``n`` 0 gives (0, 1)."""
    if n <= 0:
        return (0.0, 1.0)
    edge = ((1.0 - level) / 2.0) ** (1.0 / n)
    return (0.0, 1.0 - edge) if share <= 0.5 else (edge, 1.0)
