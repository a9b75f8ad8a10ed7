"""`misstep discover --judge openai` against real vLLM (CPU) serving SmolLM2-135M-Instruct:
the plumbing of the judge-server path (proposal and assignment requests under the server's
structured output, rounds, the candidate taxonomy). The tiny model's categories are not a
result."""

from __future__ import annotations

import json
from pathlib import Path

from misstep.discover import planted_set
from misstep.taxonomy import load_taxonomy
from tests.real._server import Server
from tests.real.conftest import CONCURRENCY, run_misstep


def test_discover_judge_path_plumbing(real_server: Server, tmp_path: Path) -> None:
    ps = planted_set(24, seed=0)
    texts = tmp_path / "texts.jsonl"
    rows = zip(ps.ids, ps.texts, ps.checkpoints, strict=True)
    texts.write_text(
        "".join(json.dumps({"id": i, "text": t, "checkpoint": c}) + "\n" for i, t, c in rows)
    )
    out = tmp_path / "found"
    run_misstep(
        "discover", "--texts", str(texts), "--out", str(out), "--judge", "openai",
        "--base-url", real_server.base_url, "--rounds", "2", "--sample", "12",
        "--max-tokens", "512", "--concurrency", CONCURRENCY, "--min-share", "0",
    )  # fmt: skip
    found = json.loads((out / "categories.json").read_text(encoding="utf-8"))
    print(json.dumps(found["judge_rounds"]))
    assert found["embedding"] == "judge" and found["texts"] == 24
    # The grammar-constrained proposal parsed: the model proposed at least one type.
    assert found["judge_rounds"] and found["judge_rounds"][0]["proposed"]
    # Every text was assigned (to a type or to none) and counted once.
    assert sum(c["size"] for c in found["categories"]) + found["unassigned"] == 24
    keys = load_taxonomy(out / "taxonomy.yaml").keys
    assert {c["key"] for c in found["categories"]} <= set(keys) and keys[-1] == "other"
