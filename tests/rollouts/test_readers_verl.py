"""verl validation dumps, hand-made from the documented format.

verl's ``RayPPOTrainer._dump_generations`` (with ``trainer.validation_data_dir`` set) writes
``{global_steps}.jsonl`` with one object per sample: ``input``, ``output``, ``gts``, ``score``,
``step`` and the reward function's extra infos (here ``acc`` and ``pred``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson
import pytest

from misstep.errors import InvalidRecordError
from misstep.rollouts import RejectSink, read_traces

PROMPT_A = "<|user|>What is 2 + 2?<|assistant|>"
PROMPT_B = "<|user|>What is 3 * 3?<|assistant|>"


def dump(directory: Path, step: int, rows: list[dict[str, Any]]) -> None:
    directory.mkdir(exist_ok=True)
    # verl joins the lines with "\n" and ends the file with one.
    text = "\n".join(orjson.dumps(r).decode() for r in rows) + "\n"
    (directory / f"{step}.jsonl").write_text(text, encoding="utf-8")


def verl_row(prompt: str, output: str, gts: Any, score: float, step: int) -> dict[str, Any]:
    return {"input": prompt, "output": output, "gts": gts, "score": score, "step": step}


def make_run(directory: Path) -> None:
    # val_kwargs.n = 2: each prompt repeated twice, interleaved per prompt.
    dump(
        directory,
        20,
        [
            {**verl_row(PROMPT_A, "4", "4", 1.0, 20), "acc": True, "pred": "4"},
            {**verl_row(PROMPT_A, "5", "4", 0.0, 20), "acc": False, "pred": "5"},
            {**verl_row(PROMPT_B, "9", 9, 1.0, 20), "acc": True, "pred": "9"},
            {**verl_row(PROMPT_B, "6", 9, -0.5, 20), "acc": False, "pred": "6"},
        ],
    )
    dump(directory, 100, [verl_row(PROMPT_A, "4", "4", 1.0, 100)])


def test_verl_rows_map_to_traces(tmp_path: Path) -> None:
    run = tmp_path / "val"
    make_run(run)
    traces = list(read_traces(run))  # inferred: a directory of <int>.jsonl files
    pid_a = hashlib.sha256(PROMPT_A.encode()).hexdigest()[:16]
    pid_b = hashlib.sha256(PROMPT_B.encode()).hexdigest()[:16]
    assert [(t.checkpoint, t.step, t.problem_id, t.sample_idx) for t in traces] == [
        ("global_step_20", 20, pid_a, 0),
        ("global_step_20", 20, pid_a, 1),
        ("global_step_20", 20, pid_b, 0),
        ("global_step_20", 20, pid_b, 1),
        ("global_step_100", 100, pid_a, 0),  # numbering restarts at each step
    ]
    # score > 0 is correct: 1.0 yes, 0.0 no, -0.5 no.
    assert [t.correct for t in traces] == [True, False, True, False, True]
    assert [t.response for t in traces] == ["4", "5", "9", "6", "4"]
    assert [t.gold_answer for t in traces] == ["4", "4", "9", "9", "4"]  # 9 (a number) -> "9"
    assert traces[0].problem == PROMPT_A
    assert traces[0].extra == {"acc": True, "pred": "4", "score": 1.0}
    assert traces[0].trace_id == f"global_step_20/default/{pid_a}/0"


def test_steps_ordered_numerically_not_by_name(tmp_path: Path) -> None:
    run = tmp_path / "val"
    for step in (100, 20, 3):
        dump(run, step, [verl_row(PROMPT_A, "x", "4", 0.0, step)])
    assert [t.step for t in read_traces(run, input_format="verl")] == [3, 20, 100]


def test_old_dumps_without_gts(tmp_path: Path) -> None:
    run = tmp_path / "val"
    dump(run, 5, [{"input": PROMPT_A, "output": "4", "score": 1.0, "step": 5}])
    (trace,) = read_traces(run)
    assert (trace.gold_answer, trace.correct) == (None, True)


def test_structured_gts_kept_in_extra(tmp_path: Path) -> None:
    run = tmp_path / "val"
    dump(run, 5, [verl_row(PROMPT_A, "4", ["4", "four"], 1.0, 5)])
    (trace,) = read_traces(run)
    assert trace.gold_answer is None
    assert trace.extra["gts"] == ["4", "four"]


def test_missing_output_names_the_verl_field(tmp_path: Path) -> None:
    run = tmp_path / "val"
    dump(run, 7, [verl_row(PROMPT_A, "4", "4", 1.0, 7), {"input": PROMPT_A, "score": 1.0}])
    with pytest.raises(InvalidRecordError) as info:
        list(read_traces(run))
    err = info.value
    assert (err.path, err.line, err.field) == (str(run / "7.jsonl"), 2, "output")


def test_bad_score_rejected_and_reading_goes_on(tmp_path: Path) -> None:
    run = tmp_path / "val"
    dump(
        run,
        7,
        [
            verl_row(PROMPT_A, "4", "4", 1.0, 7),
            {**verl_row(PROMPT_A, "4", "4", 1.0, 7), "score": "high"},
            verl_row(PROMPT_A, "5", "4", 0.0, 7),
        ],
    )
    with RejectSink(tmp_path / "rej.jsonl") as sink:
        traces = list(read_traces(run, rejects=sink))
    assert len(traces) == 2
    assert sink.count == 1
    (record,) = [orjson.loads(x) for x in (tmp_path / "rej.jsonl").read_bytes().splitlines()]
    assert (record["source"], record["line"], record["field"]) == (str(run / "7.jsonl"), 2, "score")
    # The rejected row still took its place: the third row is sample 2 of the prompt.
    assert [t.sample_idx for t in traces] == [0, 2]
