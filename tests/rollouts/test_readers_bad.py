"""Bad input: each case raises with path, line and field, or goes to a RejectSink."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest

from misstep.errors import InputFormatError, InvalidRecordError
from misstep.rollouts import RejectSink, default_rejects_path, read_traces

GOOD = b'{"problem_id": "p", "response": "r"}'

# (bad line, field named in the error or None for a line that is not a row at all)
BAD_LINES: list[tuple[bytes, str | None]] = [
    (b'{"problem_id": "p", "response": ', None),  # malformed JSON
    (b'["p", "r"]', None),  # not an object
    (b"42", None),
    (b'{"response": "r"}', "problem_id"),  # missing required
    (b'{"problem_id": "p"}', "response"),
    (b'{"problem_id": "", "response": "r"}', "problem_id"),  # empty required
    (b'{"problem_id": "p", "response": "  "}', "response"),
    (b'{"problem_id": null, "response": "r"}', "problem_id"),
    (b'{"problem_id": ["p"], "response": "r"}', "problem_id"),
    (b'{"problem_id": "p", "response": "r", "step": "abc"}', "step"),  # wrong types
    (b'{"problem_id": "p", "response": "r", "step": 1.5}', "step"),
    (b'{"problem_id": "p", "response": "r", "correct": "maybe"}', "correct"),
    (b'{"problem_id": "p", "response": "r", "steps": "one step"}', "steps"),
    (b'{"problem_id": "p", "response": "r", "steps": ["a", 2]}', "steps"),
    (b'{"problem_id": "p", "response": "r", "sample_idx": {"i": 1}}', "sample_idx"),
    (b'{"problem_id": "p", "response": "r", "num_tokens": "many"}', "num_tokens"),
]


def write(path: Path, lines: list[bytes], *, final_newline: bool = True) -> Path:
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    return path


@pytest.mark.parametrize(("bad", "field"), BAD_LINES)
def test_bad_line_raises_with_path_line_field(
    tmp_path: Path, bad: bytes, field: str | None
) -> None:
    # Good, blank, good, bad: the bad row is physical line 4.
    path = write(tmp_path / "t.jsonl", [GOOD, b"", GOOD, bad, GOOD])
    traces = read_traces(path)
    with pytest.raises(InvalidRecordError) as info:
        list(traces)
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), 4, field)
    assert str(path) in str(err) and "line 4" in str(err)
    assert err.exit_code == 2


@pytest.mark.parametrize(("bad", "field"), BAD_LINES)
def test_bad_line_goes_to_rejects(tmp_path: Path, bad: bytes, field: str | None) -> None:
    path = write(tmp_path / "t.jsonl", [GOOD, b"", GOOD, bad, GOOD])
    rejects = tmp_path / "out" / "t.rejects.jsonl"
    with RejectSink(rejects) as sink:
        traces = list(read_traces(path, rejects=sink))
    assert len(traces) == 3  # 4 rows, 1 rejected
    assert sink.count == 1
    (record,) = [orjson.loads(x) for x in rejects.read_bytes().splitlines()]
    assert record["source"] == str(path)
    assert record["line"] == 4
    assert record["field"] == field
    assert record["raw"] == bad.decode()
    assert record["reason"]


def test_truncated_final_line_is_malformed(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.jsonl", [GOOD, GOOD, b'{"problem_id": "p", "resp'], final_newline=False
    )
    with pytest.raises(InvalidRecordError, match="malformed JSON") as info:
        list(read_traces(path))
    assert (info.value.line, info.value.field) == (3, None)
    with RejectSink(tmp_path / "r.jsonl") as sink:
        assert len(list(read_traces(path, rejects=sink))) == 2
    assert sink.count == 1


def test_many_rejects_counted_in_order(tmp_path: Path) -> None:
    lines = [GOOD, b"{", GOOD, b'{"problem_id": "p"}', b"not json", GOOD]
    path = write(tmp_path / "t.jsonl", lines)
    with RejectSink(tmp_path / "r.jsonl") as sink:
        assert len(list(read_traces(path, rejects=sink))) == 3
    records = [orjson.loads(x) for x in (tmp_path / "r.jsonl").read_bytes().splitlines()]
    assert [(r["line"], r["field"]) for r in records] == [(2, None), (4, "response"), (5, None)]
    assert sink.count == 3


def test_rejects_file_only_created_on_first_reject(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", [GOOD, GOOD])
    rejects = tmp_path / "r.jsonl"
    with RejectSink(rejects) as sink:
        assert len(list(read_traces(path, rejects=sink))) == 2
    assert sink.count == 0
    assert not rejects.exists()


def test_invalid_utf8_line_is_malformed(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", [GOOD, b'{"problem_id": "p", "response": "\xff"}'])
    with pytest.raises(InvalidRecordError) as info:
        list(read_traces(path))
    assert (info.value.line, info.value.field) == (2, None)


def test_truncated_gzip_stream(tmp_path: Path) -> None:
    blob = gzip.compress(b"\n".join([GOOD] * 2000) + b"\n")
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(blob[: len(blob) // 2])
    with pytest.raises(InputFormatError, match="cannot read past line"):
        list(read_traces(path))


def test_gzip_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(gzip.compress(b"\n".join([GOOD, GOOD, b"{oops"]) + b"\n"))
    with pytest.raises(InvalidRecordError) as info:
        list(read_traces(path))
    assert info.value.line == 3


def test_csv_bad_rows_name_physical_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "problem_id,response,correct,steps\n"  # line 1: header
        'p,"a response\nover two lines",true,\n'  # lines 2-3
        "p,r,maybe,\n"  # line 4: bad boolean
        'p,r,false,"[1, 2"\n'  # line 5: steps is not JSON
        ",r,true,\n"  # line 6: empty problem_id = missing
        "p,r\n"  # line 7: too few cells
        'q,"bad row\nover two lines",maybe,\n'  # lines 8-9: named by its first line
        "p,r,0,[]\n",  # line 10: fine
        encoding="utf-8",
    )
    with pytest.raises(InvalidRecordError) as info:
        list(read_traces(path))
    assert (info.value.line, info.value.field) == (4, "correct")
    with RejectSink(tmp_path / "r.jsonl") as sink:
        traces = list(read_traces(path, rejects=sink))
    assert [t.response for t in traces] == ["a response\nover two lines", "r"]
    records = [orjson.loads(x) for x in (tmp_path / "r.jsonl").read_bytes().splitlines()]
    assert [(r["line"], r["field"]) for r in records] == [
        (4, "correct"),
        (5, "steps"),
        (6, "problem_id"),
        (7, None),
        (8, "correct"),
    ]
    # The raw of a CSV reject is its cells by column name.
    assert records[0]["raw"] == {
        "problem_id": "p",
        "response": "r",
        "correct": "maybe",
        "steps": "",
    }


def test_parquet_bad_row_names_row_number(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = [
        {"problem_id": "a", "response": "r", "step": 1},
        {"problem_id": "b", "response": None, "step": 2},
        {"problem_id": "c", "response": "r", "step": None},
    ]
    path = tmp_path / "t.parquet"
    pd.DataFrame(rows).to_parquet(path)
    with pytest.raises(InvalidRecordError) as info:
        list(read_traces(path))
    assert (info.value.line, info.value.field) == (2, "response")
    with RejectSink(tmp_path / "r.jsonl") as sink:
        assert [t.problem_id for t in read_traces(path, rejects=sink)] == ["a", "c"]
    assert sink.count == 1


def test_hf_bad_row_names_row_number(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    rows = [{"problem_id": "a", "response": "r"}, {"problem_id": "", "response": "r"}]
    path = tmp_path / "ds"
    datasets.Dataset.from_list(rows).save_to_disk(str(path))
    with pytest.raises(InvalidRecordError) as info:
        list(read_traces(path))
    assert (info.value.line, info.value.field) == (2, "problem_id")


def test_reject_sink_unwritable_path(tmp_path: Path) -> None:
    from misstep.errors import InputError

    blocker = tmp_path / "file"
    blocker.write_text("")
    sink = RejectSink(blocker / "r.jsonl")  # a file stands where the directory should be
    with pytest.raises(InputError, match="cannot write the rejects file"):
        sink.write(1, "bad", "raw")


@pytest.mark.parametrize(
    ("given", "name"),
    [
        ("data/traces.jsonl", "traces.rejects.jsonl"),
        ("data/llama_rl_ckpts.jsonl.gz", "llama_rl_ckpts.rejects.jsonl"),
        ("x.parquet", "x.rejects.jsonl"),
        ("/runs/val_dumps", "val_dumps.rejects.jsonl"),
        ("a.b.csv", "a.b.rejects.jsonl"),
    ],
)
def test_default_rejects_path(tmp_path: Path, given: str, name: str) -> None:
    assert default_rejects_path(given, tmp_path) == tmp_path / name
    assert default_rejects_path(given) == Path.cwd() / name


def test_csv_invalid_utf8_names_its_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(b"problem_id,response\np1,fine\np2,caf\xe9 au lait\n")
    with pytest.raises(InvalidRecordError) as info:
        list(read_traces(path))
    assert (info.value.line, info.value.field) == (3, "response")
    assert "not valid UTF-8" in str(info.value)


def test_duplicate_trace_ids_name_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    row = b'{"trace_id": "a", "problem_id": "p", "response": "r"}'
    path.write_bytes(b"\n".join([row, GOOD, row]) + b"\n")
    with pytest.raises(InvalidRecordError) as info:
        list(read_traces(path))
    assert (info.value.line, info.value.field) == (3, "trace_id")
    assert "line 1" in str(info.value)
    sink = RejectSink(tmp_path / "rejects.jsonl")
    kept = list(read_traces(path, rejects=sink))
    sink.close()
    assert kept[0].trace_id == "a" and len(kept) == 2  # the later one is rejected
    assert sink.count == 1


def test_identical_rows_without_ids_are_numbered_not_merged(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join([GOOD, GOOD, GOOD]) + b"\n")
    ids = [t.trace_id for t in read_traces(path)]
    assert len(set(ids)) == 3 and ids[1] == ids[0] + "#2" and ids[2] == ids[0] + "#3"
    assert ids == [t.trace_id for t in read_traces(path)]  # stable
