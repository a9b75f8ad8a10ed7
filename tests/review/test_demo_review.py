"""``misstep review`` serves the demo run: its numbers are the report's (link.json's)."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from misstep.agreement import load_labelled_run
from misstep.review import ReviewData, open_trace_texts
from misstep.rollouts import load_graded
from tests.conftest import DemoRun
from tests.review.review_fixture import serving
from tests.review.test_api import Client


@pytest.mark.slow
def test_review_serves_the_demo_run(demo_run: DemoRun) -> None:
    demo = demo_run.out  # the suite's one demo run (tests/conftest.py)
    run = load_graded(demo / "traces.jsonl")
    ids = run.table["trace_id"].astype(str).tolist()
    texts = open_trace_texts(demo / "traces.jsonl", ids, input_sha256=run.input_sha256)
    data = ReviewData(load_labelled_run(demo / "labels", run), texts)
    link = {c["checkpoint"]: c for c in json.loads((demo / "link.json").read_text())["checkpoints"]}
    with serving(data) as server:
        c = Client(server)
        dists = c.get("/api/distributions")[2]["distributions"]
        assert [d["checkpoint"] for d in dists] == list(link)
        for d in dists:
            ref = link[d["checkpoint"]]
            assert d["n_wrong"] == ref["n_wrong"]
            shown = {k: v for k, v in d["error_dist"].items() if v}  # link.json omits zeros
            assert shown == pytest.approx({k: v for k, v in ref["error_dist"].items() if v})
            # The list behind a share: its count is share x labelled wrong traces.
            q = f"/api/traces?outcome=wrong&error_type=arithmetic&checkpoint={d['checkpoint']}"
            total = c.get(q)[2]["total"]
            assert total == round(d["error_dist"]["arithmetic"] * d["n_labelled"])
        first = c.get(q + "&limit=1")[2]["items"][0]["trace_id"]
        detail = c.get("/api/traces/" + quote(first, safe=""))[2]
        assert detail["judge_label"]["error_type"] == "arithmetic" and detail["steps"]
