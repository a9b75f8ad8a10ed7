"""A sample's design as misstep reads it back when people's labels come in: the sampling
weight of a trace (``sampling_weight``, the one check of a weight wherever one is read: task
files, their sidecars, people's labels)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson

from misstep.errors import InputFormatError, InvalidRecordError

__all__ = ["sampling_weight", "task_rows"]


def sampling_weight(value: object, *, path: str | Path, line: int, field: str = "weight") -> float:
    """``value`` as a sampling weight (an inverse inclusion probability): a finite number
    above 0; None or an empty cell (not given) is 1. Anything else raises
    :class:`InvalidRecordError` naming ``path``, ``line`` and ``field``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return 1.0
    weight: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        weight = float(value)
    elif isinstance(value, str):
        try:
            weight = float(value)
        except ValueError:
            weight = None
    if weight is None or not math.isfinite(weight) or weight <= 0:
        raise InvalidRecordError(
            path=path,
            line=line,
            field=field,
            value=value,
            reason="must be a finite number above 0 (the trace's inverse inclusion probability)",
            hint="use the weights `misstep sample` wrote (its sidecar), or leave the field out "
            "for weight 1",
        )
    return weight


def task_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The rows of a ``misstep sample`` task file as (line, row): JSONL (the file's line),
    CSV (the file's line, the header being line 1) or a Label Studio JSON import or export
    (each task's ``data``; the task's number as the line). InputFormatError when the file is
    none of these."""
    from misstep.labels._human import _csv_rows, _jsonl_rows

    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".csv"):
        return _csv_rows(path)
    if not name.endswith(".json"):
        return list(_jsonl_rows(path))
    try:
        tasks = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise InputFormatError(path=path, reason=f"not a Label Studio task file: {exc}") from None
    if not isinstance(tasks, list):
        raise InputFormatError(path=path, reason="a Label Studio task file is a JSON list of tasks")
    rows: list[tuple[int, dict[str, Any]]] = []
    for number, task in enumerate(tasks, start=1):
        data = task.get("data") if isinstance(task, dict) else None
        if not isinstance(data, dict):
            raise InvalidRecordError(
                path=path, line=number, field="data", reason="a task without its data object"
            )
        rows.append((number, data))
    return rows
