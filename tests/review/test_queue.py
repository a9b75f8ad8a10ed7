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


def test_each_person_sees_the_traces_the_task_gives_them(tmp_path: Path) -> None:
    """A task from ``sample --annotators ann1,ann2 --overlap 0.5``: through the real server,
    each person's queue holds their traces (a doubled trace once in each of two queues), and
    a nameless request sees all of them."""
    from typer.testing import CliRunner

    from misstep.cli.app import app
    from tests.review.review_fixture import make_run, review_data, serving
    from tests.review.test_api import Client

    fx = make_run(tmp_path / "data")
    out = tmp_path / "task.jsonl"
    args = ["sample", str(fx.traces), "--labels", str(fx.run_dir), "--out", str(out)]
    result = CliRunner().invoke(
        app, [*args, "--n", "8", "--annotators", "ann1,ann2", "--overlap", "0.5"]
    )
    assert result.exit_code == 0, result.output
    rows = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    given: dict[str, set[str]] = {}
    for r in rows:
        given.setdefault(r["annotator"], set()).add(r["trace_id"])
    # 8 traces, 4 of them to both: 12 rows, 6 each
    assert len(rows) == 12 and {k: len(v) for k, v in given.items()} == {"ann1": 6, "ann2": 6}
    with serving(review_data(fx, task=out)) as server:
        c = Client(server)
        for who, mine in given.items():
            queue = c.get(f"/api/queue?annotator={who}")[2]
            assert queue["total"] == 6 and {i["trace_id"] for i in queue["items"]} == mine
        assert c.get("/api/queue")[2]["total"] == 8
