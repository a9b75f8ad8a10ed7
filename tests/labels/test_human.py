"""read_human_labels on JSONL and CSV, its errors, and the shared files."""

from __future__ import annotations

from pathlib import Path

import pytest

from misstep.errors import InputFormatError, InvalidRecordError
from misstep.labels import HumanLabel, read_human_labels

JSONL = (
    '{"trace_id": "t1", "annotator": "a", "error_type": "arithmetic", "first_error_step": 2,'
    ' "has_error": true, "weight": 2.5}\n'
    "\n"
    '{"trace_id": "t2", "annotator": "b", "error_type": "", "first_error_step": null,'
    ' "has_error": false, "raw_label": 3, "mapping_method": "m"}\n'
)

WANT = [
    HumanLabel(
        trace_id="t1",
        annotator="a",
        error_type="arithmetic",
        first_error_step=2,
        has_error=True,
        weight=2.5,
    ),
    HumanLabel(
        trace_id="t2",
        annotator="b",
        error_type=None,  # "" means no type
        first_error_step=None,
        has_error=False,
        raw_label="3",  # a number label is kept as its text
        mapping_method="m",
    ),
]


def test_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(JSONL, encoding="utf-8")
    assert read_human_labels(path) == WANT


def test_csv(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text(
        "trace_id,annotator,error_type,first_error_step,has_error,weight,raw_label,mapping_method\n"
        "t1,a,arithmetic,2,true,2.5,,\n"
        "t2,b,,,no,,3,m\n",
        encoding="utf-8",
    )
    assert read_human_labels(path) == WANT


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ('{"annotator": "a"}', "trace_id"),
        ('{"trace_id": "t", "annotator": "", "has_error": false}', "annotator"),
        ('{"trace_id": "t", "annotator": "a", "first_error_step": "two"}', "first_error_step"),
        ('{"trace_id": "t", "annotator": "a", "first_error_step": -1}', "first_error_step"),
        ('{"trace_id": "t", "annotator": "a", "has_error": "perhaps"}', "has_error"),
        ('{"trace_id": "t", "annotator": "a", "has_error": true, "weight": 0}', "weight"),
        ('{"trace_id": "t", "annotator": "a", "has_error": true, "weight": "heavy"}', "weight"),
        ('{"trace_id": "t", "annotator": "a", "has_error": true, "weight": -3}', "weight"),
        ('{"trace_id": "t", "annotator": "a", "has_error": true, "weight": "NaN"}', "weight"),
        ('{"trace_id": "t", "annotator": "a", "has_error": true, "weight": "-inf"}', "weight"),
        ('{"trace_id": "t", "annotator": "a", "has_error": true, "weight": true}', "weight"),
        ('{"trace_id": "t", "annotator": "a", "error_type": 5}', "error_type"),
        ('{"trace_id": "t", "annotator"', None),
    ],
)
def test_bad_rows_name_file_line_field(tmp_path: Path, row: str, field: str | None) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"trace_id": "ok", "annotator": "a"}\n' + row + "\n", encoding="utf-8")
    with pytest.raises(InvalidRecordError) as info:
        read_human_labels(path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 2, field)


def test_csv_bad_boolean(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("trace_id,annotator,has_error\nt,a,true\nt,a,maybe\n", encoding="utf-8")
    with pytest.raises(InvalidRecordError) as info:
        read_human_labels(path)
    assert (info.value.line, info.value.field) == (3, "has_error")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputFormatError):
        read_human_labels(tmp_path / "none.jsonl")


@pytest.mark.parametrize(("folder", "count"), [("processbench", 3400), ("mrben", 2277)])
def test_shared_human_labels(shared_data: Path, folder: str, count: int) -> None:
    path = shared_data / folder / "human_labels.jsonl"
    labels = read_human_labels(path)
    # wc -l of the shared files: 3,400 and 2,277 lines, one label each.
    assert len(labels) == count
    assert all(lab.weight == 1.0 for lab in labels)
    # error_type is null both for "no error" and for untyped sources; has_error tells them apart.
    typed = [lab for lab in labels if lab.error_type is not None]
    assert all(lab.has_error for lab in typed)


def test_a_label_made_in_code_has_a_positive_finite_weight() -> None:
    from pydantic import ValidationError

    for bad in (0.0, -3.0, float("nan"), float("inf")):
        with pytest.raises(ValidationError):
            HumanLabel(trace_id="t", annotator="a", weight=bad)
    assert HumanLabel(trace_id="t", annotator="a", weight=0.5).weight == 0.5
