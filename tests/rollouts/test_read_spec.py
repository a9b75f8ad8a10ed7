"""ReadSpec: the path-fields template, the column map (``--map``), its stored text, and the
error a file in an unknown shape gets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from misstep.errors import InputFormatError, InvalidRecordError
from misstep.rollouts import INPUT_FORMATS, ReadSpec, parse_column_map, read_traces
from misstep.rollouts._source import MISSING, PathTemplate, lookup


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("template", "path", "fields"),
    [
        (
            "{checkpoint}/math_eval/{dataset}/*",
            "/runs/qwen-7b/math_eval/gsm8k/test_cot.jsonl",
            {"checkpoint": "qwen-7b", "dataset": "gsm8k"},
        ),
        # the template matches the last segments only; {step} takes the trailing digits
        ("global_step_{step}/*", "/a/b/global_step_400/x.jsonl", {"step": 400}),
        ("ckpt-{step}/{dataset}.jsonl", "/r/ckpt-12/aime.jsonl", {"step": 12, "dataset": "aime"}),
        # text around a field in one segment; other names go to extra
        ("samples_{dataset}_*.jsonl", "/m/samples_gsm8k_2025-01-01.jsonl", {"dataset": "gsm8k"}),
        ("{checkpoint}/{seed}/*", "/x/m1/s7/out.jsonl", {"checkpoint": "m1", "seed": "s7"}),
    ],
)
def test_template_matches_the_last_segments(
    template: str, path: str, fields: dict[str, Any]
) -> None:
    assert PathTemplate(template).match(Path(path)) == fields


@pytest.mark.parametrize(
    ("template", "path"),
    [
        ("{checkpoint}/math_eval/{dataset}/*", "/runs/qwen-7b/eval/gsm8k/t.jsonl"),
        ("{checkpoint}/{dataset}/*", "t.jsonl"),  # fewer segments than the template
        ("step_{step}/*", "/r/step_final/t.jsonl"),  # {step} must end in digits
    ],
)
def test_template_that_does_not_match(template: str, path: str) -> None:
    assert PathTemplate(template).match(Path(path)) is None


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{checkpoint}/**/x", "'\\*\\*' is not allowed"),
        ("{response}/*", "a trace's content"),
        ("{dataset}/{dataset}/*", "appears twice"),
        ("{data set}/*", "not a field name"),
        ("{dataset/*", "unbalanced"),
        ("a//b", "segments"),
    ],
)
def test_bad_templates_are_refused(template: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ReadSpec(path_fields=template)


def test_column_map_text() -> None:
    assert parse_column_map("problem_id=idx, response=output,gold_answer=doc.answer") == {
        "problem_id": "idx",
        "response": "output",
        "gold_answer": "doc.answer",
    }
    assert parse_column_map(None) == {} and parse_column_map(" ") == {}
    for bad in ("problem_id", "=idx", "a=b,a=c"):
        with pytest.raises(ValueError):
            parse_column_map(bad)
    with pytest.raises(ValidationError, match="not a field misstep reads"):
        ReadSpec(columns={"answer": "x"})


def test_lookup_reaches_into_objects_and_lists() -> None:
    row = {"doc": {"answer": "7", "choices": ["a", "b"]}, "a.b": 1}
    assert lookup(row, "doc.answer") == "7"
    assert lookup(row, "doc.choices.1") == "b"
    assert lookup(row, "a.b") == 1  # a key with a dot is found first
    assert lookup(row, "doc.missing") is MISSING and lookup(row, "doc.choices.5") is MISSING


def test_spec_text_round_trips_and_stays_a_name_when_it_can() -> None:
    assert ReadSpec().text() is None
    assert ReadSpec(format="jsonl").text() == "jsonl"  # what runs recorded before
    spec = ReadSpec(
        format="qwen-math-eval",
        path_fields="{checkpoint}/math_eval/{dataset}/*",
        columns={"response": "reasoning"},
    )
    text = spec.text()
    assert text is not None and text.startswith("{")
    assert ReadSpec.of(text) == spec and ReadSpec.of("jsonl") == ReadSpec(format="jsonl")
    assert ReadSpec.of(spec.model_dump()) == spec


def test_map_reads_another_tools_columns(tmp_path: Path) -> None:
    rows = [
        {"id": 3, "output": "so \\boxed{4}", "doc": {"answer": "4"}, "score": 1.0, "t": 0.7},
        {"id": 3, "output": "so \\boxed{5}", "doc": {"answer": "4"}, "score": 0.0, "t": 0.7},
    ]
    path = _write(tmp_path / "evals.jsonl", rows)
    spec = ReadSpec(
        columns={
            "problem_id": "id",
            "response": "output",
            "gold_answer": "doc.answer",
            "correct": "score",
        }
    )
    traces = list(read_traces(path, input_format=spec))
    assert [(t.problem_id, t.gold_answer, t.correct) for t in traces] == [
        ("3", "4", True),
        ("3", "4", False),
    ]
    # a mapped top-level column is read under its new name, not kept twice in extra
    assert traces[0].extra == {"doc": {"answer": "4"}, "t": 0.7}


def test_map_errors_name_the_files_column(tmp_path: Path) -> None:
    path = _write(tmp_path / "e.jsonl", [{"id": 1, "output": "a"}, {"id": 2, "output": ""}])
    spec = ReadSpec(columns={"problem_id": "id", "response": "output"})
    with pytest.raises(InvalidRecordError) as info:
        list(read_traces(path, input_format=spec))
    assert (info.value.line, info.value.field) == (2, "output")


def test_unreadable_file_names_formats_keys_and_the_map_to_try(tmp_path: Path) -> None:
    rows = [{"question_id": 1, "question": "1+1?", "model_output": "2", "answer": "2"}]
    path = _write(tmp_path / "mine.jsonl", rows)
    with pytest.raises(InputFormatError) as info:
        list(read_traces(path, rejects=None))
    text = str(info.value)
    assert "first row has no problem_id and no response" in text
    assert "its keys: question_id, question, model_output, answer" in text
    assert (
        "--map problem_id=question_id,response=model_output,gold_answer=answer,problem=question"
        in text
    )
    for name in INPUT_FORMATS:
        assert name in text
    # and that map reads it
    spec = ReadSpec(
        columns={
            "problem_id": "question_id",
            "response": "model_output",
            "gold_answer": "answer",
            "problem": "question",
        }
    )
    assert [t.problem_id for t in read_traces(path, input_format=spec)] == ["1"]


def test_unreadable_file_without_an_id_column_takes_the_problem_text(tmp_path: Path) -> None:
    path = _write(tmp_path / "q.jsonl", [{"prompt": "1+1?", "completion": "2"}])
    with pytest.raises(InputFormatError, match="--map response=completion,problem=prompt,"
                       "problem_id=prompt"):  # fmt: skip
        list(read_traces(path))
    path = _write(tmp_path / "r.jsonl", [{"a": 1, "b": 2}])
    with pytest.raises(InputFormatError, match="no column looks like problem_id or response"):
        list(read_traces(path))


def test_path_fields_win_and_a_file_that_does_not_match_is_named(tmp_path: Path) -> None:
    row = {"problem_id": "p", "response": "r", "checkpoint": "in-row", "gold_answer": "1"}
    _write(tmp_path / "step_100" / "aime" / "t.jsonl", [row])
    _write(tmp_path / "step_200" / "aime" / "t.jsonl", [row])
    spec = ReadSpec(path_fields="step_{step}/{dataset}/*")
    got = [(t.step, t.dataset, t.checkpoint) for t in read_traces(tmp_path, input_format=spec)]
    assert got == [(100, "aime", "in-row"), (200, "aime", "in-row")]
    _write(tmp_path / "final" / "aime" / "t.jsonl", [row])
    with pytest.raises(InputFormatError, match="does not match --path-fields") as info:
        read_traces(tmp_path, input_format=spec)
    assert "final/aime/t.jsonl" in str(info.value)


def test_verl_dumps_take_no_map(tmp_path: Path) -> None:
    _write(tmp_path / "10.jsonl", [{"input": "q", "output": "a", "score": 1.0}])
    with pytest.raises(InputFormatError, match="leave out --map"):
        read_traces(tmp_path, input_format=ReadSpec(columns={"response": "output"}))


def test_a_first_row_that_only_lacks_a_field_is_a_bad_row(tmp_path: Path) -> None:
    # no column looks like a response: one bad row (rejected with --skip-invalid), not a file
    # in another shape
    path = _write(tmp_path / "t.jsonl", [{"problem_id": "p"}, {"problem_id": "q", "response": "r"}])
    with pytest.raises(InvalidRecordError) as info:
        list(read_traces(path))
    assert (info.value.line, info.value.field) == (1, "response")
    path = _write(tmp_path / "u.jsonl", [{"problem_id": "p", "output": "r"}])
    with pytest.raises(InputFormatError, match="--map response=output"):
        list(read_traces(path))
