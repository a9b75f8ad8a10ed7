"""Stratified samples, annotation tasks (JSONL, CSV, Label Studio) and reading answers back."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from misstep.agreement import (
    allocate,
    labelstudio_config,
    stratified_sample,
    write_task,
)
from misstep.errors import InvalidRecordError, OptionError
from misstep.labels import LabelStatus, StoredLabel, read_human_labels, read_task_design
from misstep.prompts import split_steps
from misstep.rollouts import Trace, extract_answer

KEYS = ["arithmetic", "misread", "theorem_misuse", "broken_derivation", "other"]


def _data() -> tuple[list[Trace], dict[str, StoredLabel]]:
    traces: list[Trace] = []
    labels: dict[str, StoredLabel] = {}
    # step_1: 30 arithmetic + 10 other; step_2: 20 misread; plus 5 skipped that never count.
    plan = [("step_1", "arithmetic", 30), ("step_1", "other", 10), ("step_2", "misread", 20)]
    for checkpoint, error_type, count in plan:
        for i in range(count):
            t = Trace(
                problem_id=f"p{i}",
                response=f"First 2+2=4.\n\nThen 4*3=13.\n\nSo \\boxed{{{i}}}",
                checkpoint=checkpoint,
                sample_idx=KEYS.index(error_type),
                problem="What?",
            )
            traces.append(t)
            labels[t.trace_id] = StoredLabel(
                trace_id=t.trace_id,
                judge="rules-abc",
                status=LabelStatus.OK,
                error_type=error_type,
                first_error_step=1,
            )
    for i in range(5):
        t = Trace(problem_id=f"s{i}", response="...", checkpoint="step_1")
        traces.append(t)
        labels[t.trace_id] = StoredLabel(
            trace_id=t.trace_id, judge="rules-abc", status=LabelStatus.SKIPPED
        )
    return traces, labels


def test_allocation_by_hand() -> None:
    # proportional, sizes 30/10/20, n 12: exact 6, 2, 4
    assert allocate([30, 10, 20], 12, "proportional") == [6, 2, 4]
    # n 10: exact 5, 1.667, 3.333 -> floors 5, 1, 3 (9); largest remainder .667 -> 5, 2, 3
    assert allocate([30, 10, 20], 10, "proportional") == [5, 2, 3]
    # equal, n 12 over 3 strata: 4 each
    assert allocate([30, 10, 20], 12, "equal") == [4, 4, 4]
    # equal, a small stratum (2) gives its leftover to the others: 2, then 5 and 5
    assert allocate([30, 2, 20], 12, "equal") == [5, 2, 5]
    assert allocate([3, 2], 10, "equal") == [3, 2]  # fewer than asked: everything


def test_stratified_sample_weights_and_determinism() -> None:
    traces, labels = _data()
    rows = stratified_sample(traces, labels, n=12, seed=4)
    counts = Counter(r.judge_stratum for r in rows)
    assert counts == {
        "checkpoint=step_1|error_type=arithmetic": 6,
        "checkpoint=step_1|error_type=other": 2,
        "checkpoint=step_2|error_type=misread": 4,
    }
    weights = {r.judge_stratum: r.weight for r in rows}
    # N_h / n_h: 30/6 = 5, 10/2 = 5, 20/4 = 5 under proportional allocation
    assert set(weights.values()) == {5.0}
    # The weights add up to the population of ok-labelled traces (60).
    assert sum(r.weight for r in rows) == pytest.approx(60)
    again = stratified_sample(list(reversed(traces)), labels, n=12, seed=4)
    assert [r.trace_id for r in again] == [r.trace_id for r in rows]
    other = stratified_sample(traces, labels, n=12, seed=5)
    assert [r.trace_id for r in other] != [r.trace_id for r in rows]
    equal = stratified_sample(traces, labels, n=12, allocation="equal", stratify=["checkpoint"])
    # 2 strata, 6 each: weights 40/6 and 20/6
    assert {r.stratum: r.weight for r in equal} == pytest.approx(
        {"checkpoint=step_1": 40 / 6, "checkpoint=step_2": 20 / 6}
    )
    row = rows[0]
    assert row.steps.splitlines()[1] == "[1] Then 4*3=13."
    assert row.final_answer.isdigit()
    with pytest.raises(OptionError, match="stratify='model'") as info:
        stratified_sample(traces, labels, n=3, stratify=["model"])
    assert info.value.option == "stratify"  # a field; the CLI says --stratify


def _fill(path: Path, rows: list[dict[str, object]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


def test_jsonl_task_is_blind_and_reads_back(tmp_path: Path) -> None:
    traces, labels = _data()
    rows = stratified_sample(traces, labels, n=6, seed=0)
    out = tmp_path / "task.jsonl"
    written = write_task(rows, out, fmt="jsonl", categories=KEYS)
    assert written == [out, tmp_path / "task.jsonl.judge.jsonl"]
    task = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(task) == 6
    # Nothing of the judge, its strata or the weights in the task (issue 34, item 3).
    assert set(task[0]) == TASK_COLUMNS
    assert task[0]["error_type"] == "" and task[0]["annotator"] == ""
    # The sidecar keeps them, in the sample's order, as TaskDesign lines.
    side = [json.loads(line) for line in written[1].read_text().splitlines()]
    assert [x["trace_id"] for x in side] == [r.trace_id for r in rows]
    first = side[0]
    # n 6 over 30/10/20 traces: 3, 1, 2 drawn, so every weight is 30/3 = 10/1 = 20/2 = 10
    assert first["version"] == 1 and first["weight"] == rows[0].weight == 10.0
    assert (
        first["stratum"]
        == rows[0].judge_stratum
        == (f"checkpoint={rows[0].checkpoint}|error_type={first['error_type']}")
    )
    assert (first["judge"], first["allocation"]) == ("rules-abc", "proportional")
    assert read_task_design(written[1])[rows[0].trace_id].weight == 10.0
    # A person fills in three rows (one "no error") and leaves the rest.
    task[0].update(error_type="arithmetic", first_error_step=1, annotator="ann")
    task[1].update(error_type="no_error", annotator="ann")
    task[2].update(error_type="misread", first_error_step="0", annotator="ann")
    _fill(out, task)
    got = read_human_labels(out, keys=KEYS)
    assert [g.trace_id for g in got] == [t["trace_id"] for t in task[:3]]
    assert (got[0].error_type, got[0].first_error_step, got[0].has_error) == ("arithmetic", 1, True)
    assert (got[1].error_type, got[1].has_error) == (None, False)
    assert got[2].first_error_step == 0
    # The weight comes back from the sidecar beside the task.
    weight = {r.trace_id: r.weight for r in rows}
    assert [g.weight for g in got] == [weight[g.trace_id] for g in got]
    # Renamed away from its sidecar: weight 1, unless the sidecar is named.
    moved = tmp_path / "filled.jsonl"
    out.rename(moved)
    assert {g.weight for g in read_human_labels(moved)} == {1.0}
    assert [g.weight for g in read_human_labels(moved, sidecar=written[1])] == [
        weight[g.trace_id] for g in got
    ]


TASK_COLUMNS = {
    "trace_id",
    "checkpoint",
    "dataset",
    "problem_id",
    "problem",
    "steps",
    "final_answer",
    "error_type",
    "first_error_step",
    "annotator",
}


def _by_trace_alone(trace: Trace) -> dict[str, object]:
    """A task row computed from the trace alone, without any judge label."""
    answer = trace.pred_answer or extract_answer(trace.response).answer or ""
    steps = "\n".join(f"[{i}] {x}" for i, x in enumerate(split_steps(trace)))
    return {
        "trace_id": trace.trace_id,
        "checkpoint": trace.checkpoint,
        "dataset": trace.dataset,
        "problem_id": trace.problem_id,
        "problem": trace.problem or "",
        "steps": steps,
        "final_answer": answer,
        "error_type": "",
        "first_error_step": "",
        "annotator": "",
    }


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "labelstudio"])
def test_no_task_column_depends_on_the_judge(tmp_path: Path, fmt: str) -> None:
    """Issue 34, item 3: the task had a weight column whose value named the judge's stratum
    (equal allocation: 30 arithmetic and 10 other at step_1 give weights 30/4 and 10/4) and
    rows sorted by stratum. Now every cell of every row is what the trace alone gives."""
    traces, labels = _data()
    by_id = {t.trace_id: t for t in traces}
    rows = stratified_sample(traces, labels, n=12, seed=3, allocation="equal")
    assert len({r.weight for r in rows if r.checkpoint == "step_1"}) == 2  # they differ
    out = tmp_path / {"jsonl": "t.jsonl", "csv": "t.csv", "labelstudio": "t.json"}[fmt]
    write_task(rows, out, fmt=fmt, categories=KEYS)  # type: ignore[arg-type]
    if fmt == "jsonl":
        task = [json.loads(line) for line in out.read_text().splitlines()]
    elif fmt == "csv":
        with out.open(encoding="utf-8", newline="") as fh:
            task = list(csv.DictReader(fh))
    else:
        task = [t["data"] for t in json.loads(out.read_text())]
        for row in task:
            row.update(error_type="", first_error_step="", annotator="")
    assert len(task) == 12
    for row in task:
        assert {k: str(v) for k, v in row.items()} == {
            k: str(v) for k, v in _by_trace_alone(by_id[str(row["trace_id"])]).items()
        }


def test_task_rows_are_in_a_fresh_random_order_and_the_sample_is_reproducible(
    tmp_path: Path,
) -> None:
    traces, labels = _data()
    rows = stratified_sample(traces, labels, n=12, seed=4)
    kind = {r.trace_id: r.judge_error_type for r in rows}
    out = tmp_path / "t.jsonl"
    orders = []
    first_arithmetic = 0
    for _ in range(300):
        write_task(rows, out, fmt="jsonl", categories=KEYS)
        order = [json.loads(line)["trace_id"] for line in out.read_text().splitlines()]
        orders.append(order)
        first_arithmetic += kind[order[0]] == "arithmetic"
    # Never the sample's order (sorted by stratum), and not one order twice in 300 (12! ways).
    assert all(o != [r.trace_id for r in rows] for o in orders)
    assert len({tuple(o) for o in orders}) == 300
    # 6 of the 12 are arithmetic: the first row is one half the time (binomial sd 0.029).
    assert 0.4 < first_arithmetic / 300 < 0.6
    # Membership and the sidecar follow --seed alone.
    again = stratified_sample(list(reversed(traces)), labels, n=12, seed=4)
    other = tmp_path / "u.jsonl"
    write_task(again, other, fmt="jsonl", categories=KEYS)
    assert sorted(json.loads(x)["trace_id"] for x in other.read_text().splitlines()) == sorted(
        orders[0]
    )
    side, side_again = tmp_path / "t.jsonl.judge.jsonl", tmp_path / "u.jsonl.judge.jsonl"
    assert side.read_bytes() == side_again.read_bytes()


def test_old_tasks_with_a_weight_column_still_read(tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    _fill(
        old,
        [
            {
                "trace_id": "t1",
                "stratum": "checkpoint=a",
                "weight": 17.0,
                "error_type": "other",
                "annotator": "ann",
            },
            {
                "trace_id": "t2",
                "stratum": "checkpoint=a",
                "weight": 17.36,
                "error_type": "",
                "annotator": "",
            },
        ],
    )
    (got,) = read_human_labels(old, keys=KEYS)
    assert (got.trace_id, got.weight) == ("t1", 17.0)
    # a sidecar written before the weights moved there (no weight): the column still counts
    (tmp_path / "old.jsonl.judge.jsonl").write_text(
        '{"trace_id": "t1", "judge": "j", "error_type": "arithmetic", "first_error_step": 0,'
        ' "stratum": "checkpoint=a|error_type=arithmetic"}\n'
        '{"trace_id": "t2", "judge": "j", "error_type": "other", "first_error_step": 0,'
        ' "stratum": "checkpoint=a|error_type=other"}\n',
        encoding="utf-8",
    )
    (got,) = read_human_labels(old, keys=KEYS)
    assert got.weight == 17.0
    assert read_task_design(tmp_path / "old.jsonl.judge.jsonl")["t1"].version == 0


@pytest.mark.parametrize(
    ("side", "line", "field"),
    [
        ('{"trace_id": "t1", "weight": 2}\n{"trace_id": "t2", "weight": -3}\n', 2, "weight"),
        ('{"trace_id": "t1", "weight": "NaN"}\n', 1, "weight"),
        ('{"trace_id": "t1", "weight": 0}\n', 1, "weight"),
        ('{"trace_id": "t1", "weight": 2}\n{"trace_id": "t1", "weight": 2}\n', 2, "trace_id"),
        ('{"weight": 2}\n', 1, "trace_id"),
    ],
)
def test_bad_sidecars_name_file_line_and_field(
    tmp_path: Path, side: str, line: int, field: str
) -> None:
    task = tmp_path / "task.jsonl"
    _fill(task, [{"trace_id": "t1", "error_type": "other", "annotator": "ann"}])
    sidecar = tmp_path / "task.jsonl.judge.jsonl"
    sidecar.write_text(side, encoding="utf-8")
    with pytest.raises(InvalidRecordError) as info:
        read_human_labels(task, keys=KEYS)
    assert (info.value.path, info.value.line, info.value.field) == (str(sidecar), line, field)


def test_a_label_outside_the_sidecar_is_an_error(tmp_path: Path) -> None:
    task = tmp_path / "task.jsonl"
    _fill(task, [{"trace_id": "t9", "error_type": "other", "annotator": "ann"}])
    (tmp_path / "task.jsonl.judge.jsonl").write_text('{"trace_id": "t1", "weight": 2}\n')
    with pytest.raises(InvalidRecordError, match="sidecar") as info:
        read_human_labels(task, keys=KEYS)
    assert (info.value.line, info.value.field) == (1, "trace_id")


def test_bad_rows_name_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    _fill(
        path,
        [
            {"trace_id": "t1", "annotator": "a", "error_type": "arithmetic"},
            {"trace_id": "t2", "annotator": "a", "error_type": "typo"},
        ],
    )
    with pytest.raises(InvalidRecordError) as info:
        read_human_labels(path, keys=KEYS)
    assert (info.value.line, info.value.field) == (2, "error_type")
    _fill(path, [{"trace_id": "t1", "annotator": "", "error_type": "arithmetic"}])
    with pytest.raises(InvalidRecordError, match="annotator"):
        read_human_labels(path, keys=KEYS)
    _fill(path, [{"trace_id": "t1", "annotator": "a", "first_error_step": -1}])
    with pytest.raises(InvalidRecordError, match="first_error_step"):
        read_human_labels(path)


def test_csv_task_round_trip(tmp_path: Path) -> None:
    traces, labels = _data()
    rows = stratified_sample(traces, labels, n=4, seed=1)
    out = tmp_path / "task.csv"
    write_task(rows, out, fmt="csv", categories=KEYS)
    with out.open(encoding="utf-8", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == 4 and table[0]["error_type"] == ""
    table[3].update(error_type="other", annotator="bob", first_error_step="2")
    with out.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    (got,) = read_human_labels(out, keys=KEYS)
    assert (got.trace_id, got.annotator, got.error_type, got.first_error_step) == (
        table[3]["trace_id"],
        "bob",
        "other",
        2,
    )


def test_labelstudio_task_config_and_export(tmp_path: Path) -> None:
    traces, labels = _data()
    rows = stratified_sample(traces, labels, n=3, seed=2)
    out = tmp_path / "ls.json"
    written = write_task(rows, out, fmt="labelstudio", categories=KEYS)
    assert written[1] == tmp_path / "ls.json.labelstudio.xml"
    tasks = json.loads(out.read_text())
    assert set(tasks[0]) == {"data"} and "judge_error_type" not in tasks[0]["data"]
    config = written[1].read_text()
    for key in [*KEYS, "no_error"]:
        assert f'<Choice value="{key}"/>' in config
    assert '<Number name="first_error_step"' in config and "$steps" in config
    assert config == labelstudio_config(KEYS)
    # A Label Studio JSON export: two annotators on task 0, one cancelled, task 1 unlabelled.
    export = [
        {
            "id": 1,
            "data": tasks[0]["data"],
            "annotations": [
                {
                    "completed_by": 7,
                    "result": [
                        {
                            "from_name": "error_type",
                            "type": "choices",
                            "value": {"choices": ["arithmetic"]},
                        },
                        {"from_name": "first_error_step", "type": "number", "value": {"number": 1}},
                    ],
                },
                {
                    "completed_by": {"id": 9, "email": "x@y.org"},
                    "result": [
                        {
                            "from_name": "error_type",
                            "type": "choices",
                            "value": {"choices": ["no_error"]},
                        }
                    ],
                },
                {"completed_by": 3, "was_cancelled": True, "result": []},
            ],
        },
        {"id": 2, "data": tasks[1]["data"], "annotations": []},
    ]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    got = read_human_labels(path, keys=KEYS)
    assert [(g.annotator, g.error_type, g.first_error_step, g.has_error) for g in got] == [
        ("labelstudio:7", "arithmetic", 1, True),
        ("labelstudio:x@y.org", None, None, False),
    ]
    assert got[0].trace_id == tasks[0]["data"]["trace_id"]
    export[0]["annotations"][0]["result"][0]["value"] = {"choices": ["nope"]}
    path.write_text(json.dumps(export))
    with pytest.raises(InvalidRecordError) as info:
        read_human_labels(path, keys=KEYS)
    assert info.value.line == 1 and info.value.field == "error_type"


def test_planned_take_per_stratum_leaves_held_traces_out() -> None:
    traces, labels = _data()
    held = {t.trace_id for t in traces[:5]}
    rows = stratified_sample(
        traces,
        labels,
        n=1,
        stratify=["checkpoint"],
        take={"checkpoint=step_1": 7, "checkpoint=step_2": 3},
        exclude=held,
    )
    counts = Counter(r.stratum for r in rows)
    assert counts == {"checkpoint=step_1": 7, "checkpoint=step_2": 3}
    assert not held & {r.trace_id for r in rows}
