"""A label budget: which traces to judge when not all of them.

Strata are (checkpoint, dataset) among the traces that would be judged (outcome ``wrong``,
and ``correct`` with ``include_correct``). ``per_stratum`` N judges N traces drawn at random
from each stratum (all of a stratum smaller than N); ``total`` M spreads M traces as evenly as
the strata allow (every stratum gets the same number, or all it has; the remainder goes to
strata drawn at random), a pilot that sees every checkpoint instead of the first rows. Each
judged trace's inclusion probability is ``n_h / N_h`` of its stratum, stored with its label.
The draw is a pure function of the seed, the stratum and the table, so a resumed run draws the
same traces.
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

from misstep.defaults import DEFAULT_SEED

__all__ = ["label_sample"]


def _allocate(sizes: list[int], total: int, rng: np.random.Generator) -> list[int]:
    """Equal allocation of ``total`` over strata of ``sizes`` (water filling, capped)."""
    alloc = [0] * len(sizes)
    left = min(total, sum(sizes))
    open_ = [i for i, size in enumerate(sizes) if size > 0]
    while left > 0 and open_:
        share = left // len(open_)
        if share == 0:
            for i in rng.permutation(open_)[:left]:
                alloc[int(i)] += 1
            break
        for i in list(open_):
            take = min(share, sizes[i] - alloc[i])
            alloc[i] += take
            left -= take
        open_ = [i for i in open_ if alloc[i] < sizes[i]]
    return alloc


def label_sample(
    table: pd.DataFrame,
    *,
    per_stratum: int | None = None,
    total: int | None = None,
    include_correct: bool = False,
    seed: int = DEFAULT_SEED,
) -> dict[str, float] | None:
    """``trace_id -> inclusion probability`` of the traces to judge, or None without a budget
    (judge them all). Traces that would be judged but are not in the mapping are left out."""
    if per_stratum is None and total is None:
        return None
    outcomes = ["wrong", "correct"] if include_correct else ["wrong"]
    rows = table.loc[table["outcome"].isin(outcomes), ["trace_id", "checkpoint", "dataset"]]
    groups = [
        (str(ck), str(ds), g["trace_id"].astype(str).tolist())
        for (ck, ds), g in rows.groupby(["checkpoint", "dataset"], sort=True)
    ]
    sizes = [len(ids) for _, _, ids in groups]
    if per_stratum is not None:
        alloc = [min(per_stratum, size) for size in sizes]
    else:
        alloc = _allocate(sizes, int(total or 0), np.random.default_rng([seed, 0x5EED]))
    out: dict[str, float] = {}
    for (checkpoint, dataset, ids), n in zip(groups, alloc, strict=True):
        if n == 0:
            continue
        key = zlib.crc32(f"{checkpoint}\x1f{dataset}".encode())
        chosen = np.random.default_rng([seed, key]).choice(len(ids), size=n, replace=False)
        prob = n / len(ids)
        for i in chosen:
            out[ids[int(i)]] = prob
    return out
