"""The graded table: computed once per input, cached by content and settings."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from misstep.errors import InputError
from misstep.rollouts import (
    GRADED_COLUMNS,
    Trace,
    cache_entries,
    clear_cache,
    grade_traces,
    input_digest,
    load_graded,
)


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _rows() -> list[dict[str, object]]:
    return [
        {"problem_id": "p", "sample_idx": i, "response": f"\\boxed{{{a}}}", "gold_answer": "4"}
        for i, a in enumerate(["4", "4", "5", "2+2"])
    ]


def test_digest_is_the_content_sha256(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", _rows())
    assert input_digest(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(b"x")
    # sha256 of relative path, NUL, bytes
    assert input_digest(folder) == hashlib.sha256(b"a.jsonl\0x").hexdigest()


def test_second_load_reads_the_cache_and_equals_grading(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", _rows())
    first = load_graded(path, cache_dir=tmp_path / "c")
    second = load_graded(path, cache_dir=tmp_path / "c")
    assert (first.from_cache, second.from_cache) == (False, True)
    pd.testing.assert_frame_equal(first.table, second.table)
    assert list(second.table.columns) == list(GRADED_COLUMNS)
    assert second.table["outcome"].tolist() == ["correct", "correct", "wrong", "correct"]
    (entry,) = cache_entries(tmp_path / "c")
    assert entry.rows == 4 and entry.input_sha256 == first.input_sha256
    # Another setting is another entry; no cache means none is read or written.
    assert not load_graded(path, cache_dir=tmp_path / "c", regrade=True).from_cache
    assert not load_graded(path, cache_dir=tmp_path / "c", cache=False).from_cache
    assert len(cache_entries(tmp_path / "c")) == 2
    # Changed content: graded again.
    _write(path, _rows()[:3])
    assert len(load_graded(path, cache_dir=tmp_path / "c").table) == 3
    assert clear_cache(tmp_path / "c") == 6  # three entries, parquet + json each
    assert cache_entries(tmp_path / "c") == []


def test_damaged_entry_is_graded_again(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", _rows())
    load_graded(path, cache_dir=tmp_path / "c")
    for parquet in (tmp_path / "c" / "graded").glob("*.parquet"):
        parquet.write_bytes(b"not parquet")
    again = load_graded(path, cache_dir=tmp_path / "c")
    assert not again.from_cache and len(again.table) == 4


def test_empty_input_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(InputError, match="no traces"):
        load_graded(path, cache_dir=tmp_path / "c")


def test_class_split_by_grade_makes_maj1_equal_pass1() -> None:
    # The user graded the third "4" wrong although it equals the gold: its class is split.
    traces = [
        Trace(problem_id="p", sample_idx=i, response=f"\\boxed{{{a}}}", correct=c, gold_answer="4")
        for i, (a, c) in enumerate([("4", True), ("4", True), ("4", False), ("5", False)])
    ]
    graded = grade_traces(traces)
    classes = graded["answer_class"].tolist()
    assert classes[0] == classes[1] != classes[2] != classes[3]
    from misstep.metrics import vote_metrics

    (row,) = vote_metrics(graded, [1, 4])
    assert row.pass_at_k[1] == row.maj_at_k[1] == 0.5  # 2 of 4 samples right
    assert row.sc_gain_at_k[1] == 0.0
    # maj@4: classes {4 ok: 2, 4 wrong: 1, 5: 1}: the right class wins outright
    assert row.maj_at_k[4] == 1.0


def test_read_meter_reaches_the_input_size(tmp_path: Path) -> None:
    import gzip

    from misstep.rollouts import read_traces
    from misstep.rollouts._formats import READ_METER, ReadMeter

    plain = _write(tmp_path / "t.jsonl", _rows())
    packed = tmp_path / "t.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    for path in (plain, packed):
        meter = ReadMeter()
        token = READ_METER.set(meter)
        try:
            assert len(list(read_traces(path))) == 4
        finally:
            READ_METER.reset(token)
        # compressed bytes for gzip: the progress bar's total is the file's size
        assert meter.position() == path.stat().st_size
