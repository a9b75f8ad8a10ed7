"""``LabelRun``, the one owner of a run directory: what it decides per trace (``todo``), what it
refuses (another input, another judge), and what it remembers of the records appended."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from misstep.errors import LabelStoreError
from misstep.labels import (
    Action,
    LabelRun,
    LabelStatus,
    RunFields,
    RunOptions,
    StoredLabel,
    read_labels,
    read_manifest,
    skipped_record,
)
from misstep.labels._store import LabelStore
from tests.pipelines.test_label import _mixed, _row, _write

JUDGE = "llm:test:00000000"


def _open(traces: Path, run_dir: Path, judge: str = JUDGE, **fields: typing.Any) -> typing.Any:
    digest = LabelRun.check_input(traces, run_dir)
    return LabelRun.open(
        traces, run_dir, judge_id=judge, digest=digest, options=RunOptions(**fields), seed=0
    )


def _ok(trace_id: str, judge: str = JUDGE) -> StoredLabel:
    return StoredLabel(
        trace_id=trace_id, judge=judge, status=LabelStatus.OK, error_type="arithmetic"
    )


def test_todo_on_a_fresh_directory(tmp_path: Path) -> None:
    # _mixed: t0-t5 wrong, t6-t7 correct, t8 truncated, t9 no answer
    with _open(_mixed(tmp_path), tmp_path / "run") as run:
        todo = {t.trace.trace_id: t for t in run.todo()}
    assert [i for i, t in todo.items() if t.action is Action.JUDGE] == [f"t{i}" for i in range(6)]
    skips = {i: t.reason for i, t in todo.items() if t.action is Action.SKIP}
    assert skips == {"t6": "correct", "t7": "correct", "t8": "truncated", "t9": "no_answer"}
    assert all(t.write for t in todo.values() if t.action is Action.SKIP)  # nothing stored yet
    assert all(t.inclusion_prob is None for t in todo.values())  # no budget


def test_todo_resumes_from_what_is_stored(tmp_path: Path) -> None:
    traces = _mixed(tmp_path)
    run_dir = tmp_path / "run"
    with LabelStore(run_dir) as store:
        store.append(_ok("t0"))  # ok under this judge: kept
        store.append(_ok("t1", judge="llm:other:11111111"))  # another judge's: judged again
        store.append(skipped_record(_trace(traces, 8), JUDGE, "truncated", 1))  # same skip
        store.append(skipped_record(_trace(traces, 9), JUDGE, "truncated", 1))  # stale reason
        store.append(_ok("t2"))
        store.append(StoredLabel(trace_id="t2", judge=JUDGE, status=LabelStatus.FAILED))
    with _open(traces, run_dir, include_correct=True, limit=9) as run:
        todo = {t.trace.trace_id: t for t in run.todo()}
        assert run.current("t2") is not None and run.current("t2").status == "failed"
    assert len(todo) == 9  # limit: t0-t8
    actions = {i: t.action.value for i, t in todo.items()}
    assert actions == {
        "t0": "keep", "t1": "judge", "t2": "judge",  # the last record of t2 is failed
        "t3": "judge", "t4": "judge", "t5": "judge",
        "t6": "judge", "t7": "judge",  # include_correct
        "t8": "skip",
    }  # fmt: skip
    assert todo["t8"].write is False  # the same skipped record is there already


def test_a_budget_leaves_traces_out_but_keeps_their_ok_labels(tmp_path: Path) -> None:
    traces = _mixed(tmp_path)  # 6 wrong: 3 in step_100 (t1, t3, t5), 3 in step_200
    run_dir = tmp_path / "run"
    with _open(traces, run_dir, per_checkpoint=1) as run:
        todo = list(run.todo())
        chosen = [t.trace.trace_id for t in todo if t.action is Action.JUDGE]
        assert len(chosen) == 2  # one per checkpoint
        assert {t.inclusion_prob for t in todo if t.action is Action.JUDGE} == {1 / 3}
        left_out = [t for t in todo if t.reason == "not sampled"]
        assert len(left_out) == 4 and all(t.action is Action.SKIP for t in left_out)
        run.append(_ok(left_out[0].trace.trace_id))  # say a larger run labelled it
    with _open(traces, run_dir, per_checkpoint=1) as run:
        again = {t.trace.trace_id: t.action for t in run.todo()}
    assert again[left_out[0].trace.trace_id] is Action.KEEP


def test_append_becomes_current_and_retry_state(tmp_path: Path) -> None:
    traces = _mixed(tmp_path)
    with _open(traces, tmp_path / "run") as run:
        cut = StoredLabel(
            trace_id="t0", judge=JUDGE, status=LabelStatus.TRUNCATED, raw_reply="{", tries=[]
        )
        run.append(cut)
        assert run.current("t0") == ("truncated", JUDGE, None)
        state = run.retry_of("t0")
        assert state is not None and state["raw_reply"] == "{"
        run.append(_ok("t0"))
        assert run.retry_of("t0") is None and run.is_ok("t0")
        assert run.written == 2
    assert read_labels(tmp_path / "run")["t0"].status is LabelStatus.OK


def test_another_input_and_another_judge_are_refused(tmp_path: Path) -> None:
    traces = _mixed(tmp_path)
    run_dir = tmp_path / "run"
    with _open(traces, run_dir) as run:
        from misstep.labels import RunManifest

        run.record_manifest(RunManifest(judge=JUDGE, input_sha256=run.digest))
    with pytest.raises(LabelStoreError, match="made by judge"), _open(traces, run_dir, "x:y"):
        pass
    with _open(traces, run_dir, "x:y", add_judge=True) as run:
        assert run.judge_id == "x:y"
    other = _write(tmp_path / "other.jsonl", [_row(0, response="something else")])
    with pytest.raises(LabelStoreError, match="holds labels of"):
        LabelRun.check_input(other, run_dir)
    manifest = read_manifest(run_dir)
    assert manifest is not None and manifest.history == []  # one manifest written


def test_run_fields_name_every_option() -> None:
    # The keyword arguments of the entry points are RunOptions' fields, one by one.
    fields = {f.name: f.type for f in dataclasses.fields(RunOptions)}
    assert set(typing.get_type_hints(RunFields)) == set(fields)


def _trace(traces: Path, i: int) -> typing.Any:
    from misstep.rollouts import read_traces

    return next(t for t in read_traces(traces) if t.trace_id == f"t{i}")
