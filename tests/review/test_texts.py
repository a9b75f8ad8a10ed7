"""The text index: each table row opens its own trace, whatever the input looks like."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from misstep.review import open_trace_texts
from misstep.review._texts import _cache_file
from misstep.rollouts import RejectSink, load_graded


def _row(i: int, **kw: object) -> dict[str, object]:
    row: dict[str, object] = {
        "problem_id": f"p{i % 3}",
        "response": f"step {i}\\n\\nSo the answer is \\\\boxed{{{i}}}.",
        "gold_answer": "1",
        "checkpoint": "c",
        "sample_idx": i,
    }
    row.update(kw)
    return row


def _check(path: Path, *, skip_invalid: bool = False) -> int:
    sink = RejectSink(path.with_name("rejects.jsonl"), source=path) if skip_invalid else None
    run = load_graded(path, rejects=sink, cache=False)
    if sink is not None:
        sink.close()
    ids = run.table["trace_id"].astype(str).tolist()
    texts = open_trace_texts(path, ids, input_sha256=run.input_sha256)
    try:
        for i, trace_id in enumerate(ids):
            trace = texts.trace(i, trace_id)
            assert trace is not None and trace.trace_id == trace_id
        # Built once: the second open reads the cached offsets.
        again = open_trace_texts(path, ids, input_sha256=run.input_sha256)
        assert (again.offsets == texts.offsets).all()
        again.close()
    finally:
        texts.close()
    return len(ids)


def test_plain_jsonl_with_bom_blank_lines_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = [orjson.dumps(_row(i)) for i in range(20)]
    body = b"\xef\xbb\xbf" + lines[0] + b"\r\n\r\n  \n" + b"\r\n".join(lines[1:]) + b"\n\n"
    path.write_bytes(body)
    assert _check(path) == 20


def test_rejected_rows_fall_back_to_parsing_each_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    rows = [orjson.dumps(_row(i)) for i in range(10)]
    rows.insert(4, b'{"broken": ')  # rejected: line 5 holds no row of the table
    rows.insert(7, orjson.dumps({"response": "no problem id"}))
    path.write_bytes(b"\n".join(rows) + b"\n")
    assert _check(path, skip_invalid=True) == 10


@pytest.mark.parametrize("broken", [False, True])
def test_derived_ids_that_repeat(tmp_path: Path, broken: bool) -> None:
    # No trace_id and no sample_idx: the id is derived from the response; two equal responses
    # of one problem get "#2", as the reader numbers them.
    path = tmp_path / "t.jsonl"
    rows = [_row(i, sample_idx=None) for i in range(6)]
    rows.append(dict(rows[0]))
    if broken:
        rows.insert(2, {"broken": True})  # forces the line-by-line path
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    assert _check(path, skip_invalid=broken) == 7


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".csv"])
def test_other_formats_are_copied_once(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"t{suffix}"
    rows = [_row(i) for i in range(12)]
    if suffix == ".csv":
        header = list(rows[0])
        text = (
            ",".join(header)
            + "\n"
            + "".join(
                ",".join(
                    orjson.dumps(r[k]).decode() if k == "response" else str(r[k]) for k in header
                )
                + "\n"
                for r in rows
            )
        )
        path.write_text(text)
    else:
        path.write_bytes(gzip.compress(b"".join(orjson.dumps(r) + b"\n" for r in rows)))
    assert _check(path) == 12
    run = load_graded(path, cache=False)
    fmt = "csv" if suffix == ".csv" else "jsonl"
    assert _cache_file(run.input_sha256, fmt, ".jsonl").exists()


def test_cache_clear_removes_the_text_cache(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from misstep.cli import app

    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(gzip.compress(b"".join(orjson.dumps(_row(i)) + b"\n" for i in range(6))))
    assert _check(path) == 6
    run = load_graded(path, cache=False)
    copy = _cache_file(run.input_sha256, "jsonl", ".jsonl")
    index = _cache_file(run.input_sha256, "jsonl", ".offsets.npy")
    assert copy.exists() and index.exists()
    cleared = CliRunner().invoke(app, ["cache", "clear"])
    assert cleared.exit_code == 0, cleared.output
    # the copy and the index; no graded table was cached (cache=False)
    assert "removed 2 file(s)" in cleared.stderr
    assert not copy.exists() and not index.exists()
