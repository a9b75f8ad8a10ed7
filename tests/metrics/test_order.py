from __future__ import annotations

import pandas as pd

from misstep.metrics import order_checkpoints


def _table(names: list[str], steps: list[int | None]) -> pd.DataFrame:
    return pd.DataFrame({"checkpoint": names, "step": pd.array(steps, dtype="Int64")})


def test_natural_sort_without_steps() -> None:
    names = ["global_step_1000", "global_step_100", "global_step_200", "global_step_20"]
    got = order_checkpoints(_table(names, [None] * 4))
    assert got == ["global_step_20", "global_step_100", "global_step_200", "global_step_1000"]


def test_step_beats_the_name() -> None:
    # Names that sort the other way round: the step decides.
    got = order_checkpoints(_table(["zeta", "alpha", "mid"], [300, 500, 400]))
    assert got == ["zeta", "mid", "alpha"]


def test_checkpoints_without_step_come_last_and_rows_repeat() -> None:
    table = _table(["b", "a", "a", "final", "base"], [20, 10, 10, None, None])
    assert order_checkpoints(table) == ["a", "b", "base", "final"]


def test_no_step_column_and_empty_table() -> None:
    assert order_checkpoints(pd.DataFrame({"checkpoint": ["s10", "s9"]})) == ["s9", "s10"]
    assert order_checkpoints(pd.DataFrame({"checkpoint": []})) == []
