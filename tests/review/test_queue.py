"""The review queue from a task file: its sidecar's weights and strata, an old task's own
weight column, and errors naming file, line and field."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from misstep.errors import InvalidRecordError
from misstep.review._queue import task_queue

KNOWN = {"t1": 0, "t2": 1, "t3": 2}


def _lines(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def test_weights_and_strata_from_the_sidecar(tmp_path: Path) -> None:
    task = _lines(tmp_path / "task.jsonl", [{"trace_id": "t2"}, {"trace_id": "t1"}])
    _lines(
        tmp_path / "task.jsonl.judge.jsonl",
        [
            {"trace_id": "t1", "weight": 17.0, "stratum": "checkpoint=a|error_type=arithmetic"},
            {"trace_id": "t2", "weight": 17.36, "stratum": "checkpoint=a|error_type=other"},
        ],
    )
    got = [(q.trace_id, q.weight, q.stratum) for q in task_queue(task, KNOWN)]
    assert got == [
        ("t2", 17.36, "checkpoint=a|error_type=other"),
        ("t1", 17.0, "checkpoint=a|error_type=arithmetic"),
    ]
    _lines(tmp_path / "task.jsonl.judge.jsonl", [{"trace_id": "t1", "weight": 2.0}])
    with pytest.raises(InvalidRecordError, match="sidecar") as info:
        task_queue(task, KNOWN)
    assert (info.value.line, info.value.field) == (1, "trace_id")


def test_an_old_task_gives_its_own_weights(tmp_path: Path) -> None:
    task = tmp_path / "old.jsonl"
    task.write_bytes(
        b'{"trace_id": "t1", "weight": 4, "stratum": "checkpoint=a"}\n\n'
        b'{"trace_id": "t3"}\n{"trace_id": "t2", "weight": -3}\n'
    )
    with pytest.raises(InvalidRecordError) as info:
        task_queue(task, KNOWN)
    # the file's own line: a blank line counts
    assert (info.value.path, info.value.line, info.value.field) == (str(task), 4, "weight")
    task.write_bytes(
        b'{"trace_id": "t1", "weight": 4, "stratum": "checkpoint=a"}\n{"trace_id": "t3"}\n'
    )
    assert [(q.weight, q.stratum) for q in task_queue(task, KNOWN)] == [
        (4.0, "checkpoint=a"),
        (1.0, "task"),
    ]
