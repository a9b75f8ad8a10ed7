"""`misstep discover` through the CLI: what a person sees, the files, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from misstep.cli import app
from misstep.discover import planted_set
from misstep.labels import StoredLabel
from misstep.taxonomy import load_taxonomy

runner = CliRunner()


@pytest.fixture(scope="module")
def texts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ps = planted_set(400, seed=3)
    path = tmp_path_factory.mktemp("texts") / "texts.jsonl"
    rows = zip(ps.ids, ps.texts, ps.checkpoints, strict=True)
    path.write_text(
        "".join(json.dumps({"id": i, "text": t, "checkpoint": c}) + "\n" for i, t, c in rows)
    )
    return path


def test_default_output_is_a_table_and_both_files_are_written(texts: Path, tmp_path: Path) -> None:
    out = tmp_path / "found"
    result = runner.invoke(app, ["discover", "--texts", str(texts), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Proposed categories" in result.output
    assert "stability across 3 seeds ARI" in result.output
    assert "step100" in result.output and "step400" in result.output  # first -> last checkpoint
    found = json.loads((out / "categories.json").read_text())
    assert found["version"] == 1 and found["texts"] == 400 and found["embedding"] == "wordllama"
    for c in found["categories"]:
        assert c["key"] in result.output
        # Up to three distinct members: a cluster of two distinct texts shows two.
        assert 1 <= len(c["examples"]) <= 3 and c["criterion"] and c["keywords"]
        assert len(c["per_checkpoint"]) == 4
    taxonomy = load_taxonomy(out / "taxonomy.yaml")
    assert taxonomy.keys[-1] == "other"
    assert set(taxonomy.keys) >= {c["key"] for c in found["categories"]}


def test_json_format_prints_data_alone(texts: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            *("discover", "--texts", str(texts), "--out", str(tmp_path), "--format", "json"),
            *("--embedding", "tfidf", "--seeds", "1"),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["embedding"] == "tfidf" and data["stability_ari"] is None
    assert data == json.loads((tmp_path / "categories.json").read_text())


@pytest.mark.parametrize("args", [[], ["--labels", "x", "--texts", "y"]])
def test_exactly_one_source(args: list[str], tmp_path: Path) -> None:
    result = runner.invoke(app, ["discover", "--out", str(tmp_path), *args])
    assert result.exit_code == 2
    assert "exactly one of --labels RUN_DIR or --texts FILE" in result.output


def test_a_bad_row_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "a", "text": "fine"}\n\n{"id": "b"}\n')
    result = runner.invoke(app, ["discover", "--texts", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "line 3" in result.output and "'text'" in result.output
    assert "Traceback" not in result.output


def _label_run(tmp_path: Path, n: int) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    with (run / "labels.jsonl").open("w") as fh:
        for i in range(n):
            kind = ("other", "the total of hours was read as minutes")
            if i % 2:
                kind = ("arithmetic", "7 times 8 was computed as 54")
            rec = StoredLabel(
                trace_id=f"t{i}",
                judge="test",
                status="ok",
                error_type=kind[0],
                explanation=kind[1],
                evidence="7 × 8 = 54",
                checkpoint=f"c{i % 2}",
            )
            fh.write(rec.model_dump_json() + "\n")
    return run


def test_unknown_type_lists_the_taxonomy_keys(tmp_path: Path) -> None:
    run = _label_run(tmp_path, 4)
    result = runner.invoke(
        app, ["discover", "--labels", str(run), "--types", "nope", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert "nope" in result.output and "arithmetic" in result.output


def test_too_few_other_labels_says_what_to_do(tmp_path: Path) -> None:
    run = _label_run(tmp_path, 30)  # 15 `other` explanations: under the 20 needed
    result = runner.invoke(app, ["discover", "--labels", str(run), "--out", str(tmp_path / "o")])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "at least 20 texts" in result.output and "--types all" in result.output


def test_missing_extra_gives_the_install_hint(
    texts: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import misstep.discover._embed as embed

    # The extra is installed here; pretend it is not, as on a plain `pip install misstep`.
    monkeypatch.setattr(embed, "wordllama_available", lambda: False)
    result = runner.invoke(app, ["discover", "--texts", str(texts), "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "misstep[discover]" in result.output and "--embedding tfidf" in result.output


def test_identical_explanations_are_an_error_not_a_traceback(tmp_path: Path) -> None:
    # A rules-judge run: every `other` label carries the same explanation.
    run = tmp_path / "run"
    run.mkdir()
    with (run / "labels.jsonl").open("w") as fh:
        for i in range(40):
            rec = StoredLabel(
                trace_id=f"t{i}",
                judge="rules",
                status="ok",
                error_type="other",
                explanation="rules judge: no checkable arithmetic error found",
            )
            fh.write(rec.model_dump_json() + "\n")
    result = runner.invoke(app, ["discover", "--labels", str(run), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "only 1 distinct text" in result.output and "model judge" in result.output
