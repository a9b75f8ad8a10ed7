"""A run directory's files are written by ``labels.LabelRun`` alone: ``labels.jsonl`` through
``LabelRun.open``, ``selections.jsonl`` through ``LabelRun.selections``; and no module outside
``labels`` spells a run directory's file names (they live in ``labels/_rundir.py``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import orjson
import pytest
from pydantic import BaseModel

import misstep
from misstep.errors import LabelStoreError, OptionError
from misstep.labels import (
    SELECTIONS_FILE,
    LabelRun,
    RunDir,
    RunManifest,
    read_manifest,
    run_dir_lock,
)
from misstep.labels._rundir import RUN_DIR_NAMES

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


# Calls whose string arguments are parts of a path.
_PATH_CALLS = {"Path", "joinpath", "join", "with_name", "glob", "rglob", "open"}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring constants of a module, its classes and functions."""
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = body[0] if body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _in_path(tree: ast.AST) -> set[int]:
    """ids of the string constants used as a path part: an operand of ``/``, an argument of
    a call in ``_PATH_CALLS``, or the value of a ``*_DIR`` / ``*_FILE`` name."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(getattr(n, "id", "").endswith(("_DIR", "_FILE")) for n in targets):
                found.add(id(node.value))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            found.update(id(n) for n in (node.left, node.right))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _PATH_CALLS:
                found.update(id(a) for a in node.args)
    return found


def spelled_names(source: str) -> list[str]:
    """The run-directory names a module's code spells (docstrings aside; a sentence, with
    spaces, that names a file for a person is not code): a literal without whitespace, or a
    piece of an f-string, that has a file name as a path component (``labels.jsonl``,
    ``*/labels.jsonl``, ``{run}/labels.jsonl``), or a folder name (``human``, ``reveals``) as
    a path part (``run / "human"``, ``"human/x.jsonl"``, ``REVEALS_DIR = "reveals"``)."""
    tree = ast.parse(source)
    skip, in_path = _docstrings(tree), _in_path(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        text = node.value
        if id(node) in skip or any(c.isspace() for c in text):
            continue
        parts = re.split(r"[/\\]", text)
        for name in RUN_DIR_NAMES:
            dotted = "." in name
            if name in parts and (dotted or id(node) in in_path or len(parts) > 1):
                found.append((node.lineno, f"{node.lineno}: {text!r}"))
    return [where for _, where in sorted(found)]


def test_no_module_outside_labels_spells_a_run_directory_file() -> None:
    found = [
        f"{path.relative_to(SRC)}:{where}"
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] != "labels"
        for where in spelled_names(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "take these paths from misstep.labels.RunDir:\n" + "\n".join(found)


def test_the_file_name_check_sees_one() -> None:
    # The check must be able to fail: each way of spelling a run directory's file is reported;
    # a docstring, a sentence for a person and a word that is no path are not.
    source = (
        '"""Reads RUN_DIR/labels.jsonl."""\n'
        'a = run / "labels.jsonl"\n'
        'b = sorted(run.glob("*/labels.jsonl"))\n'
        'c = f"{run}/requests.jsonl"\n'
        'd = run / "human" / name\n'
        'e = Path(run, "reveals")\n'
        'f = "human/reveals"\n'
        'g = ".lock"\n'
        'h = "Run directory (or labels.jsonl) of `misstep label`."\n'
        'i = {"confusion_rows": "human"}\n'
        'REVEALS_DIR = "reveals"\n'
    )
    assert [w.split(":")[0] for w in spelled_names(source)] == [
        "2",
        "3",
        "4",
        "5",
        "6",
        "7",
        "7",
        "8",
        "11",
    ]


def test_run_dir_paths() -> None:
    run = RunDir(Path("/r"))
    assert (run.labels, run.manifest, run.lock, run.rejects, run.selections) == tuple(
        Path("/r") / n
        for n in ("labels.jsonl", "manifest.json", ".lock", "rejects.jsonl", "selections.jsonl")
    )
    assert (run.requests, run.requests_parquet, run.request_tries) == tuple(
        Path("/r") / n for n in ("requests.jsonl", "requests.parquet", "requests.tries.jsonl")
    )
    assert run.human_file("ann") == Path("/r/human/ann.jsonl")
    assert run.reveals_file("ann") == Path("/r/human/reveals/ann.jsonl")
    with pytest.raises(OptionError):
        run.human_file("../x")
