"""A run directory's files are written by ``labels.LabelRun`` alone: ``labels.jsonl`` through
``LabelRun.open``, ``selections.jsonl`` through ``LabelRun.selections``."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from pydantic import BaseModel

import misstep
from misstep.errors import LabelStoreError
from misstep.labels import SELECTIONS_FILE, LabelRun, RunManifest, read_manifest, run_dir_lock

SRC = Path(misstep.__file__).parent
# What only the owner of a run directory may call: its lock, its manifest writer.
OWNER_ONLY = re.compile(r"\b(run_dir_lock|write_manifest)\(")


class _Rec(BaseModel):
    version: int = 1
    key: str


def _manifest(judge: str) -> RunManifest:
    return RunManifest(judge=judge, taxonomy_id="t", taxonomy_hash="h", prompt_hash="p")


def test_selections_repairs_the_tail_locks_and_records_the_manifest(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    # one whole record, then a line cut by a kill (no newline, not JSON)
    (run / SELECTIONS_FILE).write_bytes(b'{"version": 1, "key": "a"}\n{"version": 1, "ke')
    with LabelRun.selections(run, _manifest("j1")) as out:
        with pytest.raises(LabelStoreError, match="another"), run_dir_lock(run):
            pass  # a second writer is refused while the file is open
        out.append(_Rec(key="b"))
        # flushed at once: readable before the block ends
        lines = (run / SELECTIONS_FILE).read_bytes().splitlines()
        assert [orjson.loads(x)["key"] for x in lines] == ["a", "b"]
    assert out.written == 1
    with LabelRun.selections(run, _manifest("j2")) as out:
        out.append(_Rec(key="c"))
    manifest = read_manifest(run)
    assert manifest is not None and manifest.judge == "j2"
    assert [m["judge"] for m in manifest.history] == ["j1"]
    keys = [orjson.loads(x)["key"] for x in (run / SELECTIONS_FILE).read_bytes().splitlines()]
    assert keys == ["a", "b", "c"]


def test_no_module_outside_labels_writes_a_run_directory() -> None:
    found = [
        f"{path.relative_to(SRC)}: {m.group(0)}"
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] != "labels"
        for m in OWNER_ONLY.finditer(path.read_text())
    ]
    assert found == []
