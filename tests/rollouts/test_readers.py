"""read_traces on every format: the same rows come back from JSONL, gzip, Parquet, CSV and hf."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from misstep.errors import InputFormatError
from misstep.rollouts import INPUT_FORMATS, Trace, read_traces

# Three rows that exercise every known field, gaps, and an unknown field ("temperature").
ROWS: list[dict[str, Any]] = [
    {
        "problem_id": "p1",
        "response": "We add: 1 + 1 = 2.\n\nSo the answer is \\boxed{2}.",
        "checkpoint": "global_step_100",
        "step": 100,
        "dataset": "gsm8k",
        "sample_idx": 0,
        "trace_id": "t-1",
        "problem": "What is 1 + 1?",
        "gold_answer": "2",
        "pred_answer": "2",
        "correct": True,
        "finish_reason": "stop",
        "num_tokens": 17,
        "steps": ["We add: 1 + 1 = 2.", "So the answer is \\boxed{2}."],
        "model": "m",
        "temperature": 0.6,
    },
    {
        "problem_id": "p1",
        "response": '1 + 1 = 3, "so" 3, with a comma',
        "checkpoint": "global_step_100",
        "step": 100,
        "dataset": "gsm8k",
        "sample_idx": 1,
        "trace_id": "t-2",
        "problem": "What is 1 + 1?",
        "gold_answer": "2",
        "pred_answer": None,
        "correct": False,
        "finish_reason": "length",
        "num_tokens": 9,
        "steps": None,
        "model": "m",
        "temperature": 0.6,
    },
    {
        "problem_id": "p2",
        "response": "ünïcode ∑ and a newline\ninside",
        "checkpoint": "global_step_200",
        "step": 200,
        "dataset": "math",
        "sample_idx": 0,
        "trace_id": "t-3",
        "problem": None,
        "gold_answer": None,
        "pred_answer": None,
        "correct": None,
        "finish_reason": None,
        "num_tokens": None,
        "steps": [],
        "model": None,
        "temperature": 1.0,
    },
]


def expected() -> list[Trace]:
    out = []
    for row in ROWS:
        known = {k: v for k, v in row.items() if k != "temperature"}
        out.append(Trace(**known, extra={"temperature": row["temperature"]}))
    return out


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def test_jsonl_reads_every_field(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", ROWS)
    assert list(read_traces(path)) == expected()


@pytest.mark.parametrize("name", ["t.jsonl.gz", "t.json.gz"])
def test_gzip_jsonl(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(gzip.compress(b"".join(orjson.dumps(r) + b"\n" for r in ROWS)))
    assert list(read_traces(path)) == expected()


def test_gzip_detected_by_content_not_name(tmp_path: Path) -> None:
    # A gzip file named .jsonl still reads: the magic bytes decide, not the suffix.
    path = tmp_path / "t.jsonl"
    path.write_bytes(gzip.compress(b"".join(orjson.dumps(r) + b"\n" for r in ROWS)))
    assert list(read_traces(path)) == expected()


def test_parquet_via_pandas(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pd.DataFrame(ROWS).to_parquet(path)
    assert list(read_traces(path)) == expected()


def test_parquet_streams_in_batches(tmp_path: Path) -> None:
    # 5,000 rows in row groups of 700: more than one read batch; row order must hold.
    rows = [{"problem_id": f"p{i}", "response": f"r{i}", "sample_idx": i} for i in range(5000)]
    path = tmp_path / "big.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=700)
    got = list(read_traces(path))
    assert [t.sample_idx for t in got] == list(range(5000))


def test_csv_via_pandas(tmp_path: Path) -> None:
    frame = pd.DataFrame(ROWS)
    # CSV holds text: the steps list goes in as JSON, as the reader documents.
    frame["steps"] = [None if s is None else orjson.dumps(s).decode() for s in frame["steps"]]
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    got = list(read_traces(path))
    # Unknown CSV columns stay text: 0.6 comes back as "0.6".
    want = expected()
    for trace, row in zip(want, ROWS, strict=True):
        trace.extra = {"temperature": str(row["temperature"])}
    assert got == want


def test_csv_booleans_and_gaps(tmp_path: Path) -> None:
    path = tmp_path / "b.csv"
    path.write_text(
        "problem_id,response,correct,step,extra\n"
        "a,r1,yes,400.0,\n"  # pandas writes an int column with gaps as 400.0
        'b,r2,No,,"{""k"": 1}"\n'
        "c,r3,1,,not json\n"
        "d,r4,,7,\n",
        encoding="utf-8",
    )
    got = list(read_traces(path))
    assert [t.correct for t in got] == [True, False, True, None]
    assert [t.step for t in got] == [400, None, None, 7]
    assert [t.extra for t in got] == [{}, {"k": 1}, {"extra": "not json"}, {}]


def test_hf_save_to_disk(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    path = tmp_path / "ds"
    datasets.Dataset.from_list(ROWS).save_to_disk(str(path))
    assert list(read_traces(path)) == expected()


def test_hf_dataset_dict_reads_every_split(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    path = tmp_path / "dd"
    dd = datasets.DatasetDict(
        {
            "a": datasets.Dataset.from_list(ROWS[:2]),
            "b": datasets.Dataset.from_list(ROWS[2:]),
        }
    )
    dd.save_to_disk(str(path))
    assert list(read_traces(path, input_format="hf")) == expected()


def test_trace_id_derived_when_absent(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [
            {"problem_id": "p", "response": "x", "checkpoint": "c", "sample_idx": 3},
            {"problem_id": 7, "response": "y", "trace_id": None},
        ],
    )
    first, second = read_traces(path)
    assert first.trace_id == "c/default/p/3"
    assert second.problem_id == "7"
    assert second.trace_id.startswith("default/default/7/h")


def test_unknown_fields_pass_through_and_merge_with_extra(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [{"problem_id": "p", "response": "x", "source": "s", "extra": {"a": 1, "source": "old"}}],
    )
    (trace,) = read_traces(path)
    # The top-level field wins over the row's own extra of the same name.
    assert trace.extra == {"a": 1, "source": "s"}


def test_nulls_for_defaulted_fields_and_numbers_as_text(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [{"problem_id": "p", "response": "x", "checkpoint": None, "gold_answer": 33}],
    )
    (trace,) = read_traces(path)
    assert (trace.checkpoint, trace.gold_answer) == ("default", "33")


def test_blank_lines_skipped(tmp_path: Path) -> None:
    body = b"\n" + orjson.dumps(ROWS[0]) + b"\n  \n\r\n" + orjson.dumps(ROWS[1]) + b"\n\n"
    (tmp_path / "t.jsonl").write_bytes(body)
    assert len(list(read_traces(tmp_path / "t.jsonl"))) == 2


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("a.jsonl", "jsonl"),
        ("a.JSONL", "jsonl"),
        ("a.json", "jsonl"),
        ("a.ndjson", "jsonl"),
        ("a.jsonl.gz", "jsonl"),
        ("a.json.gz", "jsonl"),
        ("a.parquet", "parquet"),
        ("a.pq", "parquet"),
        ("a.csv", "csv"),
        ("a.csv.gz", "csv"),
    ],
)
def test_format_inferred_from_suffix(tmp_path: Path, name: str, fmt: str) -> None:
    from misstep.rollouts import resolve_format

    path = tmp_path / name
    path.write_bytes(b"")
    assert resolve_format(path, None) == fmt


def test_directories_inferred(tmp_path: Path) -> None:
    from misstep.rollouts import resolve_format

    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "state.json").write_text("{}")
    verl = tmp_path / "verl"
    verl.mkdir()
    (verl / "100.jsonl").write_text("")
    assert resolve_format(hf, None) == "hf"
    assert resolve_format(verl, None) == "verl"


def test_unknown_suffix_names_allowed_formats(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("x")
    with pytest.raises(InputFormatError) as info:
        read_traces(path)
    for fmt in INPUT_FORMATS:
        assert fmt in str(info.value)


def test_unknown_explicit_format(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", ROWS)
    with pytest.raises(InputFormatError, match="unknown input format 'xml'") as info:
        read_traces(path, input_format="xml")
    assert "jsonl, parquet, csv, hf, verl" in str(info.value)


def test_directory_without_data_files_is_not_a_format(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "metrics.json").write_text("{}")  # .json beside a run is not searched
    with pytest.raises(InputFormatError, match="neither"):
        read_traces(tmp_path)


def test_directory_of_files_reads_each(tmp_path: Path) -> None:
    # One file per checkpoint in sub-folders, found at any depth, in natural order.
    for i, row in enumerate(ROWS):
        write_jsonl(tmp_path / f"run{i}" / "t.jsonl", [row])
    (tmp_path / "run0" / "metrics.json").write_text("{}")
    assert list(read_traces(tmp_path)) == expected()
    assert list(read_traces(tmp_path, input_format="jsonl")) == expected()


def test_format_that_does_not_fit_the_path(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", ROWS)
    with pytest.raises(InputFormatError, match="reads a directory"):
        read_traces(path, input_format="verl")
    with pytest.raises(InputFormatError, match="no file that input format 'csv' reads"):
        read_traces(tmp_path, input_format="csv")


def test_missing_path_raises_at_once(tmp_path: Path) -> None:
    with pytest.raises(InputFormatError, match="no such file"):
        read_traces(tmp_path / "nope.jsonl")


def test_not_a_parquet_file(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    path.write_text("not parquet")
    with pytest.raises(InputFormatError, match="Parquet"):
        read_traces(path)


def test_explicit_format_overrides_suffix(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "rows.txt", ROWS)
    assert list(read_traces(path, input_format="jsonl")) == expected()


def test_stopping_early_closes_the_file(tmp_path: Path) -> None:
    # Warnings are errors in this suite: an unclosed file would fail the test.
    path = write_jsonl(tmp_path / "t.jsonl", ROWS)
    traces = read_traces(path)
    assert next(traces).problem_id == "p1"
    del traces
    import gc

    gc.collect()
