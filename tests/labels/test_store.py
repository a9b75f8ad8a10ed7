"""The label store: append-only, tolerant of a cut last line, strict about corruption."""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest

from misstep.errors import LabelStoreError
from misstep.labels import (
    LabelStatus,
    LabelStore,
    RunManifest,
    StoredLabel,
    read_labels,
    read_manifest,
    read_status_index,
    write_manifest,
)


def _label(trace_id: str, status: LabelStatus = LabelStatus.OK, **kw: object) -> StoredLabel:
    return StoredLabel(trace_id=trace_id, judge="j1", status=status, **kw)  # type: ignore[arg-type]


def test_append_and_read_back_last_record_wins(tmp_path: Path) -> None:
    with LabelStore(tmp_path) as store:
        store.append(_label("a", LabelStatus.FAILED, reason="HTTP 500"))
        store.append(_label("b", error_type="arithmetic"))
        store.append(_label("a", error_type="misread"))
    lines = (tmp_path / "labels.jsonl").read_bytes().splitlines()
    assert len(lines) == 3  # append-only: the failed record of "a" is still there
    labels = read_labels(tmp_path)
    assert sorted(labels) == ["a", "b"]
    assert labels["a"].status is LabelStatus.OK
    assert labels["a"].error_type == "misread"
    assert read_status_index(tmp_path) == {"a": ("ok", "j1"), "b": ("ok", "j1")}


def test_partial_last_line_is_skipped_and_counted(tmp_path: Path) -> None:
    with LabelStore(tmp_path) as store:
        store.append(_label("a"))
    path = tmp_path / "labels.jsonl"
    with open(path, "ab") as fh:  # what kill -9 in the middle of a write leaves
        fh.write(b'{"trace_id": "b", "judge": "j1", "sta')
    skipped: list[int] = []
    assert list(read_labels(path, skipped=skipped)) == ["a"]
    assert skipped == [2]


def test_reopening_drops_a_fragment_so_appends_never_glue(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    first = orjson.dumps(_label("a").model_dump(mode="json")) + b"\n"
    path.write_bytes(first + b'{"trace_id": "b"')  # kill -9 in the middle of a record
    with LabelStore(tmp_path) as store:
        assert store.dropped_bytes == len(b'{"trace_id": "b"')
        store.append(_label("c"))
    lines = path.read_bytes().splitlines()
    assert len(lines) == 2
    assert [orjson.loads(line)["trace_id"] for line in lines] == ["a", "c"]
    assert sorted(read_labels(tmp_path)) == ["a", "c"]  # no corrupt line left in the middle


def test_reopening_keeps_a_complete_record_that_lost_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_bytes(orjson.dumps(_label("a").model_dump(mode="json")))  # no final newline
    with LabelStore(tmp_path) as store:
        assert store.dropped_bytes == 0
        store.append(_label("b"))
    assert sorted(read_labels(tmp_path)) == ["a", "b"]
    assert len(path.read_bytes().splitlines()) == 2


def test_corrupt_middle_line_raises_with_path_and_line(tmp_path: Path) -> None:
    good = orjson.dumps(_label("a").model_dump(mode="json"))
    path = tmp_path / "labels.jsonl"
    path.write_bytes(good + b"\nnot json at all\n" + good + b"\n")
    with pytest.raises(LabelStoreError, match=r"labels\.jsonl, line 2"):
        read_labels(path)


def test_record_that_is_json_but_not_a_label_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"trace_id": "a", "judge": "j", "status": "maybe"}\n', encoding="utf-8")
    with pytest.raises(LabelStoreError, match="line 1"):
        read_labels(tmp_path)


def test_directory_with_only_labels_file_and_no_manifest(tmp_path: Path) -> None:
    with LabelStore(tmp_path) as store:
        store.append(_label("x"))
    assert read_manifest(tmp_path) is None
    assert list(read_labels(tmp_path)) == ["x"]


def test_missing_labels_file_is_an_error_with_a_hint(tmp_path: Path) -> None:
    with pytest.raises(LabelStoreError, match="no such file"):
        read_labels(tmp_path / "nothing")


def test_manifest_is_written_atomically_and_read_back(tmp_path: Path) -> None:
    manifest = RunManifest(judge="openai:m:1234", seed=7, taxonomy_hash="abc")
    path = write_manifest(tmp_path, manifest)
    assert path.name == "manifest.json"
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]  # no temp file left
    back = read_manifest(tmp_path)
    assert back is not None
    assert back.judge == "openai:m:1234"
    assert back.seed == 7
    assert back.version == 2


def test_every_append_reaches_the_file_before_close(tmp_path: Path) -> None:
    store = LabelStore(tmp_path)
    store.append(_label("a"))
    # another reader (or a kill -9 now) sees the record: it was flushed
    assert os.path.getsize(tmp_path / "labels.jsonl") > 0
    assert list(read_labels(tmp_path)) == ["a"]
    store.close()


def test_a_cut_last_line_longer_than_64_kib_is_repaired(tmp_path: Path) -> None:
    from misstep.labels import LabelStatus, LabelStore, StoredLabel, read_labels

    run = tmp_path / "run"
    run.mkdir()
    good = StoredLabel(trace_id="t1", judge="j", status=LabelStatus.OK, error_type="other")
    long = StoredLabel(
        trace_id="t2", judge="j", status=LabelStatus.UNPARSEABLE, raw_reply="x" * 200_000
    )
    line = long.model_dump_json().encode()
    (run / "labels.jsonl").write_bytes(good.model_dump_json().encode() + b"\n" + line[:150_000])
    with LabelStore(run) as store:  # a 150 KB fragment: cut off, not an error
        assert store.dropped_bytes == 150_000
        store.append(StoredLabel(trace_id="t3", judge="j", status=LabelStatus.SKIPPED))
    assert sorted(read_labels(run)) == ["t1", "t3"]


def test_label_rows_keep_no_text(tmp_path: Path) -> None:
    # summary --labels reads rows: memory must not grow with the judge's text.
    import tracemalloc

    from misstep.labels import LabelRow, read_label_rows

    def run(text: str) -> int:
        folder = tmp_path / f"run{len(text)}"
        folder.mkdir()
        rows = [
            {
                "trace_id": f"t{i}",
                "judge": "j",
                "status": "ok",
                "error_type": "arithmetic",
                "explanation": text,
                "raw_reply": text,
            }
            for i in range(2000)
        ]
        (folder / "labels.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
        )
        tracemalloc.start()
        try:
            kept = read_label_rows(folder)
            size, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert kept["t7"] == LabelRow("ok", "arithmetic")
        return size

    small, large = run("x"), run("x" * 5000)
    assert large < small * 1.2 + 50_000  # 2,000 x 10 KB of text is not kept
