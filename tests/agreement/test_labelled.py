"""load_labelled_run and run_taxonomy on hand-made runs: the taxonomy the run records, the
checks on judge and people's types, the run's own people's labels, the budget weights."""

from __future__ import annotations

from pathlib import Path

import orjson
import pandas as pd
import pytest

from misstep.agreement import labelled_summary, load_labelled_run, run_taxonomy
from misstep.errors import InvalidRecordError, LabelStoreError, TaxonomyError
from misstep.labels import RunManifest, write_manifest
from misstep.rollouts import GradedRun
from misstep.taxonomy import load_taxonomy

CUSTOM = """\
id: tiny
version: 1
categories:
  - key: slip
    definition: a slip
  - key: guess
    definition: a guess
"""


def _graded() -> GradedRun:
    # one checkpoint, datasets x (3 wrong) and y (1 wrong), one correct trace
    table = pd.DataFrame(
        {
            "trace_id": ["x0", "x1", "x2", "y0", "ok"],
            "checkpoint": ["c"] * 5,
            "dataset": ["x", "x", "x", "y", "y"],
            "problem_id": ["p", "p", "p", "q", "q"],
            "outcome": ["wrong", "wrong", "wrong", "wrong", "correct"],
            "correct": [False, False, False, False, True],
            "answer_class": ["1", "1", "2", "3", "4"],
        }
    )
    return GradedRun(table=table, input_path=Path("t.jsonl"), input_sha256="abc", from_cache=False)


def _run(tmp_path: Path, labels: list[dict[str, object]], taxonomy: Path | None) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "labels.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in labels))
    tax = load_taxonomy(taxonomy)
    write_manifest(
        run,
        RunManifest(
            input_sha256="abc",
            judge="j",
            taxonomy_id=tax.id,
            taxonomy_version=str(tax.version),
            taxonomy_hash=tax.hash,
            taxonomy_path=tax.source,
        ),
    )
    return run


def _label(trace: str, ds: str, error_type: str, prob: float | None = None) -> dict[str, object]:
    return {
        "trace_id": trace,
        "judge": "j",
        "status": "ok",
        "error_type": error_type,
        "checkpoint": "c",
        "dataset": ds,
        "inclusion_prob": prob,
    }


@pytest.fixture
def custom(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(CUSTOM, encoding="utf-8")
    return path


def test_the_run_taxonomy_people_and_weights(tmp_path: Path, custom: Path) -> None:
    # x: 2 of 3 wrong traces judged (inclusion 2/3), both slip; y: its 1 judged, guess.
    run = _run(
        tmp_path,
        [
            _label("x0", "x", "slip", 2 / 3),
            _label("x1", "x", "slip", 2 / 3),
            _label("y0", "y", "guess", 1.0),
        ],
        custom,
    )
    (run / "human").mkdir()
    (run / "human" / "ann.jsonl").write_text(
        '{"trace_id": "x0", "annotator": "ann", "error_type": "slip"}\n', encoding="utf-8"
    )
    labelled = load_labelled_run(run, _graded())
    assert labelled.categories == ["slip", "guess"]
    assert [h.trace_id for h in labelled.human] == ["x0"]
    assert labelled.human_files == [run / "human" / "ann.jsonl"]
    assert labelled.weight("x0") == pytest.approx(1.5) and labelled.weight("y0") == 1.0
    assert labelled.weight("x2") == 1.0  # not judged: no budget weight
    (pooled,) = labelled.distributions(pool_datasets=True)
    # stratified: x holds 3 of the 4 wrong traces (all slip), y 1 (guess): slip 3/4
    assert pooled.error_dist == pytest.approx({"slip": 0.75, "guess": 0.25})
    assert labelled.distributions(pool_datasets=True) is labelled.distributions(pool_datasets=True)
    records = labelled_summary(labelled, [1], by_dataset=False).records()
    assert records[0]["error_dist"] == pytest.approx({"slip": 0.75, "guess": 0.25})
    assert records[0]["n_labelled"] == 3


def test_a_judge_type_outside_the_taxonomy_is_an_error(tmp_path: Path, custom: Path) -> None:
    run = _run(tmp_path, [_label("x0", "x", "arithmetic")], custom)
    with pytest.raises(LabelStoreError, match=r"arithmetic.*allowed: slip, guess"):
        load_labelled_run(run, _graded())


def test_a_person_type_outside_the_taxonomy_is_an_error(tmp_path: Path, custom: Path) -> None:
    run = _run(tmp_path, [_label("x0", "x", "slip")], custom)
    people = tmp_path / "people.jsonl"
    people.write_text(
        '{"trace_id": "x0", "annotator": "a", "error_type": "slip"}\n'
        '{"trace_id": "x0", "annotator": "b", "error_type": "arithmetic"}\n',
        encoding="utf-8",
    )
    with pytest.raises(InvalidRecordError) as info:
        load_labelled_run(run, _graded(), human=[people])
    err = info.value
    assert (err.path, err.line, err.field, err.value) == (
        str(people),
        2,
        "error_type",
        "arithmetic",
    )
    assert "slip, guess" in err.reason


def test_run_taxonomy_moved_changed_and_unrecorded(tmp_path: Path, custom: Path) -> None:
    run = _run(tmp_path, [], custom)
    assert run_taxonomy(run).id == "tiny"
    assert run_taxonomy(run / "labels.jsonl").id == "tiny"
    moved = tmp_path / "moved.yaml"
    custom.rename(moved)
    with pytest.raises(TaxonomyError, match="no longer exists"):
        run_taxonomy(run)
    assert run_taxonomy(run, moved).id == "tiny"  # the moved file, same hash
    other = tmp_path / "other.yaml"
    other.write_text(CUSTOM.replace("a guess", "another guess"), encoding="utf-8")
    with pytest.raises(TaxonomyError, match="hash"):
        run_taxonomy(run, other)
    moved.write_text(CUSTOM.replace("a slip", "changed"), encoding="utf-8")
    manifest = (run / "manifest.json").read_text(encoding="utf-8")
    (run / "manifest.json").write_text(
        manifest.replace(str(custom.resolve()), str(moved.resolve())), encoding="utf-8"
    )
    with pytest.raises(TaxonomyError, match="changed since"):
        run_taxonomy(run)
    # An older manifest without the path: the built-in taxonomy only when the hash is its own.
    (run / "manifest.json").write_text(
        manifest.replace(f'"{custom.resolve()}"', "null"), encoding="utf-8"
    )
    with pytest.raises(TaxonomyError, match="does not say which file"):
        run_taxonomy(run)


def test_builtin_and_bare_labels_file(tmp_path: Path) -> None:
    run = _run(tmp_path, [_label("x0", "x", "arithmetic")], None)
    assert run_taxonomy(run).id == "math-v1"
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "labels.jsonl").write_bytes((run / "labels.jsonl").read_bytes())
    assert run_taxonomy(bare).id == "math-v1"  # no manifest: the built-in one
    labelled = load_labelled_run(run, None, full=True)
    assert labelled.records["x0"].error_type == "arithmetic"
    with pytest.raises(Exception, match="without its traces"):
        labelled.distributions(pool_datasets=True)
