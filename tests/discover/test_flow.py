"""Done-when: a discovered category flows through `label --taxonomy`, `link` and the report on
the demo run (the judge is the fake OpenAI-compatible server, which answers the new type for
a third of the traces; the rules judge can only say `arithmetic` or `other`)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from misstep.cli import app
from misstep.labels import read_labels
from misstep.taxonomy import BUILTIN_TAXONOMY, load_taxonomy
from tests.conftest import DemoRun
from tests.judge.fake_openai import FakeOpenAIServer

runner = CliRunner()
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, demo_run: DemoRun) -> Path:
    """The suite's one demo run (tests/conftest.py), copied."""
    return demo_run.copy_to(tmp_path_factory.mktemp("demo") / "demo")


def test_a_discovered_category_flows_through_label_link_and_report(
    demo: Path, tmp_path: Path
) -> None:
    found = tmp_path / "found"
    result = runner.invoke(
        app,
        [
            *("discover", "--labels", str(demo / "labels"), "--types", "all"),
            # At most 3 new types: link's table (200 columns wide) then shows whole names.
            *("--k-max", "3", "--out", str(found)),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Proposed categories" in result.output
    categories = json.loads((found / "categories.json").read_text(encoding="utf-8"))
    keys = [c["key"] for c in categories["categories"]]
    assert keys and all(k.startswith("found_") for k in keys)
    candidate = load_taxonomy(found / "taxonomy.yaml")
    base = load_taxonomy(None)
    # The run's taxonomy plus the proposed types, `other` still last, with a new version.
    assert candidate.keys == [*base.keys[:-1], *keys, "other"]
    assert str(candidate.version).startswith(f"{base.version}+discover.")
    assert candidate.hash != base.hash
    assert yaml.safe_load((found / "taxonomy.yaml").read_text(encoding="utf-8"))["id"] == (
        BUILTIN_TAXONOMY
    )

    new = keys[0]
    turn = itertools.count()

    def error_type(_body: dict[str, Any]) -> str:
        return new if next(turn) % 3 == 0 else "arithmetic"

    relabelled = tmp_path / "relabelled"
    with FakeOpenAIServer() as server:
        server.error_type = error_type
        result = runner.invoke(
            app,
            [
                "label",
                str(demo / "traces.jsonl"),
                "--judge",
                "openai",
                "--base-url",
                server.base_url,
                "--taxonomy",
                str(found / "taxonomy.yaml"),
                "--per-checkpoint",
                "30",
                "--out",
                str(relabelled),
            ],
        )
    assert result.exit_code == 0, result.output
    stored = read_labels(relabelled)
    assert sum(r.error_type == new for r in stored.values()) >= 10

    result = runner.invoke(app, ["link", str(demo / "traces.jsonl"), "--labels", str(relabelled)])
    assert result.exit_code == 0, result.output
    # A column of the per-checkpoint table: long names fold onto the header's next lines, so
    # join each column's header cells line by line; the key stands whole in one column.
    lines = result.output.splitlines()
    first = next(i for i, line in enumerate(lines) if "pass@1" in line and "┃" in line)
    while first > 0 and lines[first - 1].startswith("┃"):
        first -= 1
    header_lines = []
    for line in lines[first:]:
        if not line.startswith("┃"):
            break
        header_lines.append([c.strip() for c in line.split("┃")[1:-1]])
    columns = ["".join(parts) for parts in zip(*header_lines, strict=True)]
    assert new in columns, (new, columns)
    result = runner.invoke(
        app, ["link", str(demo / "traces.jsonl"), "--labels", str(relabelled), "--format", "json"]
    )
    link = json.loads(result.stdout)
    assert new in link["types"]
    assert all(c["error_dist"][new] > 0 for c in link["checkpoints"])

    report = tmp_path / "report.html"
    result = runner.invoke(
        app,
        [
            "report",
            str(demo / "traces.jsonl"),
            "--labels",
            str(relabelled),
            "--out",
            str(report),
        ],
    )
    assert result.exit_code == 0, result.output
    assert new in report.read_text(encoding="utf-8")

    # `misstep review` reads the same run: its taxonomy and its distributions show the type.
    from misstep.agreement import load_labelled_run
    from misstep.review import ReviewData, open_trace_texts
    from misstep.rollouts import load_graded

    run = load_graded(demo / "traces.jsonl")
    texts = open_trace_texts(
        demo / "traces.jsonl",
        run.table["trace_id"].astype(str).tolist(),
        input_sha256=run.input_sha256,
    )
    labelled = load_labelled_run(relabelled, run, taxonomy=found / "taxonomy.yaml")
    data = ReviewData(labelled, texts)
    assert new in [c["key"] for c in data.summary()["taxonomy"]]
    assert new in json.dumps(data.distributions())
