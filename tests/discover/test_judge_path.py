"""The judge-server path of `misstep discover`, against the fake OpenAI-compatible server (a
real HTTP server on 127.0.0.1): the proposal and assignment requests, their schemas, the
fenced texts, the second round on the unassigned, and the CLI's table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from misstep.cli import app
from misstep.discover import DiscoverConfig, DiscoverText, JudgeDiscoverSettings
from misstep.discover import discover_with_judge as run
from misstep.taxonomy import load_taxonomy
from tests.judge.fake_openai import FakeOpenAIServer

UNITS = "Unit conversion slip"
SIGN = "Dropped minus sign"


def _items() -> list[DiscoverText]:
    # 30 about units, 30 about signs, 10 about something the first proposal misses.
    texts = (
        [f"minutes taken as hours in case {i}" for i in range(30)]
        + [f"the minus sign vanished in case {i}" for i in range(30)]
        + [f"read the wrong table row in case {i}" for i in range(10)]
    )
    return [DiscoverText(id=f"t{i}", text=t, checkpoint=f"c{i % 2}") for i, t in enumerate(texts)]


def _script(server: FakeOpenAIServer) -> None:
    def fields(body: dict[str, Any]) -> dict[str, Any]:
        name = body["response_format"]["json_schema"]["name"]
        user = body["messages"][-1]["content"]
        if name == "Proposal":
            if "do not repeat them" in body["messages"][0]["content"]:
                return {"categories": [{"name": "Table misread", "criterion": "Wrong row."}]}
            return {
                "categories": [
                    {"name": UNITS, "criterion": "A quantity is used in the wrong unit."},
                    {"name": SIGN, "criterion": "A minus sign is lost."},
                ]
            }
        if "minutes" in user:
            return {"error_type": UNITS}
        if "minus" in user:
            return {"error_type": SIGN}
        if "table" in user and "Table misread" in body["messages"][0]["content"]:
            return {"error_type": "Table misread"}
        return {"error_type": "none"}

    server.fields = fields


def test_proposes_assigns_and_iterates_on_the_unassigned() -> None:
    with FakeOpenAIServer() as server:
        _script(server)
        settings = JudgeDiscoverSettings(base_url=server.base_url, sample=20, concurrency=4)
        d = run(_items(), settings, DiscoverConfig(min_share=0.05))
        requests = server.chat_requests
    # Round 1: 1 proposal + 70 assignments; round 2 on the 10 unassigned: 1 + 10.
    assert len(requests) == 1 + 70 + 1 + 10
    assert [r["proposed"] for r in d.judge_rounds] == [[UNITS, SIGN], ["Table misread"]]
    assert [r["assigned"] for r in d.judge_rounds] == [60, 10]
    assert not any(r["used_embeddings"] for r in d.judge_rounds)  # the fake serves none
    sizes = {c.name: c.size for c in d.categories}
    assert sizes == {UNITS: 30, SIGN: 30, "Table misread": 10}
    assert d.unassigned == 0 and d.embedding == "judge" and d.silhouette is None
    units = next(c for c in d.categories if c.name == UNITS)
    assert units.key == "found_unit_conversion_slip"
    assert units.criterion == "A quantity is used in the wrong unit."
    assert units.stability is None
    # 15 of 35 texts per checkpoint: 30 unit texts alternate c0/c1.
    assert [(p.count, p.total) for p in units.per_checkpoint] == [(15, 35), (15, 35)]
    # Every request is structured output, with the texts fenced as JSON strings.
    first = requests[0]
    assert first["response_format"]["type"] == "json_schema"
    assert "<texts>" in first["messages"][-1]["content"]
    assignment = requests[1]["response_format"]["json_schema"]["schema"]
    assert assignment["properties"]["error_type"]["enum"] == [UNITS, SIGN, "none"]


def test_cli_judge_path_prints_the_table_and_writes_the_taxonomy(tmp_path: Path) -> None:
    texts = tmp_path / "t.jsonl"
    texts.write_text(
        "".join(
            json.dumps({"id": t.id, "text": t.text, "checkpoint": t.checkpoint}) + "\n"
            for t in _items()
        )
    )
    with FakeOpenAIServer() as server:
        _script(server)
        result = CliRunner().invoke(
            app,
            [
                *("discover", "--texts", str(texts), "--out", str(tmp_path / "o")),
                *("--judge", "openai", "--base-url", server.base_url, "--rounds", "1"),
            ],
        )
    assert result.exit_code == 0, result.output
    assert "Proposed categories" in result.output and "found_dropped_minus_sign" in result.output
    assert "types proposed in 1 round(s)" in result.output
    keys = load_taxonomy(tmp_path / "o" / "taxonomy.yaml").keys
    assert "found_unit_conversion_slip" in keys and keys[-1] == "other"


def test_cli_refuses_the_in_process_backend(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["discover", "--texts", "x", "--out", str(tmp_path), "--judge", "vllm"]
    )
    assert result.exit_code == 2 and "openai" in result.output


def _embed(texts: list[str]) -> np.ndarray:
    """What a server that serves /v1/embeddings gives: three tight groups of texts."""
    centre = {"a": [1.0, 0.0, 0.0], "b": [0.0, 1.0, 0.0], "c": [0.0, 0.0, 1.0]}
    rng = np.random.default_rng(0)
    x = np.array([centre[t[0]] for t in texts]) + rng.normal(0, 0.01, (len(texts), 3))
    return np.asarray(x / np.linalg.norm(x, axis=1, keepdims=True))


def test_with_embeddings_the_sample_covers_every_group() -> None:
    from misstep.discover._judge import _sample

    # 50 + 45 + 5 texts: a random sample of 3 would often miss the small group; the texts
    # nearest the k-means centres take one from each.
    texts = [f"a{i}" for i in range(50)] + [f"b{i}" for i in range(45)] + ["c0", "c1", "c2"]
    texts += ["c3", "c4"]
    picked, used = _sample(_embed(texts), texts, 3, np.random.default_rng(1))
    assert used and sorted(t[0] for t in picked) == ["a", "b", "c"]


def test_unserved_model_names_the_served_ones() -> None:
    from misstep.errors import OptionError

    with FakeOpenAIServer() as server:
        settings = JudgeDiscoverSettings(base_url=server.base_url, model="nope")
        with pytest.raises(OptionError, match="fake-judge"):
            run(_items(), settings)


def test_asks_through_the_exchange_a_broken_reply_is_reasked_a_5xx_retried() -> None:
    with FakeOpenAIServer() as server:
        _script(server)
        # request 1 (the proposal) breaks the schema: re-asked once (request 2), which meets a
        # 503: the transport sends it again (request 3)
        server.faults_by_request = {1: "malformed", 2: "503"}
        settings = JudgeDiscoverSettings(
            base_url=server.base_url, sample=20, concurrency=1, rounds=1
        )
        d = run(_items(), settings, DiscoverConfig(min_share=0.05))
        requests = server.chat_requests
    assert len(requests) == 3 + 70  # the proposal's three, then one assignment per text
    reask = requests[1]["messages"]
    assert reask[-2] == {
        "role": "assistant",
        "content": "I think the error is arithmetic, in step 2.",
    }
    assert requests[2] == requests[1]
    assert d.judge_rounds[0]["proposed"] == [UNITS, SIGN]
    assert d.judge_rounds[0]["assigned"] == 60


def test_a_server_that_refuses_the_key_stops_discover_with_exit_3(tmp_path: Path) -> None:
    from misstep.errors import JudgeUnavailableError

    with FakeOpenAIServer() as server:
        server.fault = "401"
        settings = JudgeDiscoverSettings(base_url=server.base_url, sample=20)
        with pytest.raises(JudgeUnavailableError, match="HTTP 401") as caught:
            run(_items(), settings)
    assert caught.value.exit_code == 3
