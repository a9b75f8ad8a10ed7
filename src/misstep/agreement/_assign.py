"""Who labels which sampled trace: ``misstep sample --annotators alice,bob,carol --overlap R``.

Every trace goes to one person, and a share ``R`` of the traces (round(R n) of n, chosen at
random) to two, so that ``agree`` measures people's agreement on real overlap (Cohen's kappa
per pair, Krippendorff's alpha over all, with bootstrap intervals) while the corrected
estimates use each trace once, as its human consensus (``misstep.labels.human_consensus``).
The traces are taken in a random order; each goes to the people with the fewest traces so far
(ties broken at random), so the loads differ by at most one and the pairs of an overlap vary.

The draw uses a fresh random key, not ``--seed``, and never looks at the judge: whether a trace
is doubled, and to whom it goes, says nothing about its stratum.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from misstep.errors import OptionError

__all__ = ["assign_annotators"]


def assign_annotators(
    trace_ids: Sequence[str],
    annotators: Sequence[str],
    *,
    overlap: float = 0.0,
    rng: random.Random | None = None,
) -> dict[str, list[str]]:
    """trace_id -> the people who label it (one, or two for a share ``overlap`` of the
    traces), by the rule of the module docstring. ``rng``: the randomness (default a fresh
    ``SystemRandom``; tests pass a seeded one). OptionError for an empty or repeated name list,
    an overlap outside [0, 1], or an overlap with one person."""
    if not annotators:
        raise OptionError(option="--annotators", value="", allowed="one name or more")
    if len(set(annotators)) != len(annotators):
        raise OptionError(
            option="--annotators", value=",".join(annotators), allowed="distinct names"
        )
    if not 0.0 <= overlap <= 1.0 or math.isnan(overlap):
        raise OptionError(option="--overlap", value=overlap, allowed="a share in [0, 1]")
    if overlap > 0 and len(annotators) < 2:
        raise OptionError(
            option="--overlap",
            value=overlap,
            allowed="with two annotators or more",
            hint="name the people who share the traces: --annotators alice,bob",
        )
    draw = rng or random.SystemRandom()
    order = list(trace_ids)
    draw.shuffle(order)
    doubled = set(order[: math.floor(overlap * len(order) + 0.5)])
    load = dict.fromkeys(annotators, 0)
    out: dict[str, list[str]] = {}
    for trace_id in order:
        k = 2 if trace_id in doubled else 1
        tie = {a: draw.random() for a in annotators}
        chosen = sorted(annotators, key=lambda a: (load[a], tie[a]))[:k]
        for a in chosen:
            load[a] += 1
        out[trace_id] = chosen
    return {t: out[t] for t in trace_ids}
