"""The review app's API through a real HTTP client (http.client) on a live server."""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import orjson
import pytest
from typer.testing import CliRunner

from misstep.cli.app import app
from misstep.labels import human_consensus, read_human_labels
from misstep.review import CSP, ReviewServer
from tests.review.review_fixture import HOSTILE, Fixture, make_run, review_data, serving


class Client:
    """A tiny HTTP client that talks to the server like a browser or a script would."""

    def __init__(self, server: ReviewServer, *, token: str | None = None) -> None:
        self.server = server
        self.token = server.token if token is None else token

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        *,
        auth: bool = True,
    ) -> tuple[int, dict[str, str], Any]:
        conn = http.client.HTTPConnection(self.server.host, self.server.port, timeout=30)
        sent = {"Host": f"127.0.0.1:{self.server.port}"}
        if auth:
            sent["Authorization"] = f"Bearer {self.token}"
        if body is not None:
            sent["Content-Type"] = "application/json"
        sent.update(headers or {})
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body))
        conn.request(method, path, body=data, headers=sent)
        response = conn.getresponse()
        raw = response.read()
        conn.close()
        kind = response.getheader("Content-Type", "")
        payload = json.loads(raw) if kind.startswith("application/json") else raw
        return response.status, {k.lower(): v for k, v in response.getheaders()}, payload

    def get(self, path: str, **kw: Any) -> tuple[int, dict[str, str], Any]:
        return self.request("GET", path, **kw)

    def post(self, body: Any, **kw: Any) -> tuple[int, dict[str, str], Any]:
        headers = kw.pop("headers", {})
        return self.request("POST", "/api/labels", body, headers=headers, **kw)


@pytest.fixture
def fx(tmp_path: Path) -> Fixture:
    return make_run(tmp_path / "data")


def _label(trace_id: str, **kw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "trace_id": trace_id,
        "error_type": "arithmetic",
        "first_error_step": 1,
        "annotator": "alice",
        "note": None,
    }
    body.update(kw)
    return body


def test_list_filters_and_pages(fx: Fixture) -> None:
    with serving(review_data(fx)) as server:
        c = Client(server)
        status, headers, body = c.get("/api/traces?limit=5")
        assert status == 200 and body["total"] == 16 and len(body["items"]) == 5
        assert headers["content-security-policy"] == CSP
        # Pages cover the list once: 5 + 5 + 5 + 1 = 16 distinct ids.
        seen = []
        for offset in (0, 5, 10, 15):
            seen += [
                i["trace_id"] for i in c.get(f"/api/traces?limit=5&offset={offset}")[2]["items"]
            ]
        assert sorted(seen) == sorted(fx.trace_ids)
        # 8 wrong traces, all labelled arithmetic with confidence 0.9.
        assert c.get("/api/traces?outcome=wrong")[2]["total"] == 8
        assert c.get("/api/traces?error_type=arithmetic")[2]["total"] == 8
        assert c.get("/api/traces?status=unlabelled")[2]["total"] == 8
        assert c.get("/api/traces?min_confidence=0.95")[2]["total"] == 0
        assert c.get("/api/traces?min_confidence=0.9&max_confidence=0.9")[2]["total"] == 8
        # Per checkpoint: 2 problems x 4 samples = 8.
        ck = "ck<b>2</b>\"'"
        items = c.get("/api/traces?" + urlencode({"checkpoint": ck}))[2]["items"]
        assert len(items) == 8 and {i["checkpoint"] for i in items} == {ck}
        # Each problem: 2 wrong of 4 with two different wrong answers? No: both wrong say 6,
        # so 6 (2 votes) ties 5 (2 votes): a tie is not a correct majority -> failure (c >= 1).
        assert c.get("/api/traces?majority_failure=true")[2]["total"] == 16
        assert c.get("/api/traces?majority_failure=false")[2]["total"] == 0
        for bad in (
            "limit=0",
            "limit=501",
            "offset=-1",
            "limit=x",
            "min_confidence=2",
            "majority_failure=maybe",
        ):
            status, _, body = c.get(f"/api/traces?{bad}")
            assert status == 400 and body["error"], bad


def test_distributions(fx: Fixture) -> None:
    with serving(review_data(fx)) as server:
        c = Client(server)
        dists = c.get("/api/distributions")[2]["distributions"]
        # Per checkpoint: 4 wrong traces, all judged arithmetic -> share 1 (interval [1, 1]).
        assert [(d["n_wrong"], d["error_dist"]["arithmetic"]) for d in dists] == [(4, 1.0)] * 2
        assert all(d["error_dist_corrected"] is None for d in dists)
        assert all(d["made_by"] == "judge (uncorrected)" for d in dists)
        assert c.post(_label(fx.wrong_ids[0]))[0] == 200
        after = c.get("/api/distributions")[2]
        # One person's label (recomputed after the write): ppi, summary's default, corrects a
        # checkpoint from its own 10 human labels or more, so the shares stay the judge's and
        # the checkpoint labelled says why (tests/review/test_estimator.py: with enough).
        assert after["n_human"] == 1
        assert all(d["error_dist_corrected"] is None for d in after["distributions"])
        notes = sorted(d["note"].split(",")[0] for d in after["distributions"])
        assert notes == ["0 human-labelled trace(s) here", "1 human-labelled trace(s) here"]
        assert all("ppi needs 10" in d["note"] for d in after["distributions"])
        assert c.get("/api/summary")[2]["n_human"] == 1


def test_no_descriptor_leaks_across_requests(fx: Fixture) -> None:
    # Each request runs in a new thread: opening a trace must not keep a file per thread.
    with serving(review_data(fx)) as server:
        c = Client(server)
        before = len(os.listdir("/proc/self/fd"))
        for i in range(60):
            path = "/api/traces/" + quote(fx.trace_ids[i % 16], safe="")
            assert c.get(path)[0] == 200
        assert len(os.listdir("/proc/self/fd")) - before < 5


def test_trace_detail(fx: Fixture) -> None:
    with serving(review_data(fx)) as server:
        c = Client(server)
        tid = fx.wrong_ids[0]
        status, _, body = c.get("/api/traces/" + quote(tid, safe=""))
        assert status == 200
        assert body["item"]["trace_id"] == tid
        assert body["problem"].startswith("What is 2 + 3? ") and HOSTILE[0] in body["problem"]
        assert len(body["steps"]) == 3  # three paragraphs, split_steps' rule
        judge = body["judge_label"]
        assert judge["error_type"] == "arithmetic" and judge["first_error_step"] == 1
        span = judge["evidence_span"]
        step = body["steps"][span["step"]]
        assert span["step"] == 1 and step[span["start"] : span["end"]] == judge["evidence"]
        # 4 samples: answer 6 twice (wrong) and 5 twice (correct).
        dist = {(a["count"], a["correct"]) for a in body["answer_distribution"]}
        assert dist == {(2, False), (2, True)}
        assert [o["checkpoint"] for o in body["other_checkpoints"]] == [
            "ck<b>1</b>\"'",
            "ck<b>2</b>\"'",
        ]
        assert len(body["siblings"]) == 4
        assert c.get("/api/traces/nope")[0] == 404


def test_labels_are_stored_and_read_by_agree(fx: Fixture) -> None:
    with serving(review_data(fx)) as server:
        c = Client(server)
        a, b, d = fx.wrong_ids[:3]
        assert c.post(_label(a, note=HOSTILE[1]))[0] == 200
        assert c.post(_label(b, error_type="no_error", first_error_step=None))[0] == 200
        assert c.post(_label(d, error_type="cant_tell", first_error_step=None))[0] == 200
        # A later label of the same trace by the same person supersedes; both are kept.
        status, _, body = c.post(_label(a, error_type="misread", first_error_step=0))
        assert status == 200 and body["stored"]["error_type"] == "misread"
        assert (
            c.get("/api/traces/" + quote(a, safe="") + "?annotator=alice")[2]["human"]["error_type"]
            == "misread"
        )
    path = fx.run_dir / "human" / "alice.jsonl"
    lines = path.read_bytes().splitlines()
    assert len(lines) == 4 and all(isinstance(orjson.loads(x), dict) for x in lines)
    # Read by both readers with no conversion.
    people = read_human_labels(path)
    assert [(h.error_type, h.has_error) for h in people] == [
        ("arithmetic", True),
        (None, False),
        (None, None),
        ("misread", True),
    ]
    assert len(read_human_labels(path)) == 4  # "can't tell" is a label too
    # The consensus honours supersession: a's current type is misread (not arithmetic).
    assert human_consensus(read_human_labels(path)).types == {a: "misread"}
    # A later "can't tell" (by created_at) supersedes an earlier type: nothing left typed.
    after = "2999-01-01T00:00:00.000+00:00"
    later = [*people, people[2].model_copy(update={"trace_id": a, "created_at": after})]
    assert human_consensus(later).types == {}
    result = CliRunner().invoke(
        app,
        [
            "agree",
            "--human",
            str(path),
            "--labels",
            str(fx.run_dir),
            "--format",
            "json",
            "--n-boot",
            "20",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    pair = report["pairs"][0]
    # Typed by both: a (misread, the later label wins, vs arithmetic). b is "no error" and
    # d "can't tell": neither has a type, so n = 1 and agreement 0.
    assert pair["n"] == 1 and pair["agreement"] == 0.0


def test_bad_labels_get_400_and_write_nothing(fx: Fixture) -> None:
    with serving(review_data(fx)) as server:
        c = Client(server)
        t = fx.wrong_ids[0]
        for body in (
            _label(t, error_type="not_a_type"),
            _label(t, first_error_step=3),  # 3 steps: 0..2
            _label(t, first_error_step=-1),
            _label(t, first_error_step=True),
            _label(t, first_error_step="1"),
            _label("no such trace"),
            _label(t, error_type="no_error", first_error_step=1),
            _label(t, annotator="../evil"),
            _label(t, annotator="a/b"),
            _label(t, annotator=".hidden"),
            _label(t, note=7),
            {**_label(t), "extra": 1},
            [1, 2],
        ):
            status, _, answer = c.post(body)
            assert status == 400 and answer["error"], body
        assert c.post(b"{not json")[0] == 400
    assert not (fx.run_dir / "human").exists()
    assert not list(fx.run_dir.parent.rglob("evil*"))


def test_token_and_cross_site_writes(fx: Fixture) -> None:
    with serving(review_data(fx)) as server:
        c = Client(server)
        assert c.get("/api/traces", auth=False)[0] == 403
        assert Client(server, token="wrong").get("/api/traces")[0] == 403
        # Pages and static files are the package's own: public; data needs the token.
        status, headers, page = c.get("/", auth=False)
        assert status == 200 and b'<script src="/static/app.js"' in page
        assert "set-cookie" not in headers
        assert c.get("/static/app.js", auth=False)[0] == 200
        # No path reaches the file system.
        for path in (
            "/static/../_data.py",
            "/static/_data.py",
            "/static/%2e%2e/_server.py",
            "/../../etc/passwd",
        ):
            assert c.get(path)[0] == 404, path
        # Writes need the token, JSON and, when an Origin is sent, the request's own Host.
        body = _label(fx.wrong_ids[0])
        assert c.post(body, headers={"Origin": "http://evil.example"})[0] == 403
        assert c.post(json.dumps(body).encode(), headers={"Content-Type": "text/plain"})[0] == 415
        origin = f"http://127.0.0.1:{server.port}"
        assert c.post(body, headers={"Origin": origin})[0] == 200
        assert c.post(body, auth=False)[0] == 403  # no token at all
        # DNS rebinding: a foreign Host header is refused.
        assert c.get("/api/traces", headers={"Host": "evil.example:80"})[0] == 403
        status, headers, _ = c.request("OPTIONS", "/api/labels")
        assert status == 405 and headers["content-security-policy"] == CSP


def test_queue_is_the_sample_misstep_sample_draws(fx: Fixture, tmp_path: Path) -> None:
    with serving(review_data(fx, queue_n=4)) as server:
        queue = Client(server).get("/api/queue")[2]
    out = tmp_path / "task.jsonl"
    result = CliRunner().invoke(
        app,
        ["sample", str(fx.traces), "--labels", str(fx.run_dir), "--out", str(out), "--n", "4"],
    )
    assert result.exit_code == 0, result.output
    # The sidecar keeps the sample's order and weights (the task's rows are shuffled).
    side = out.with_name(out.name + ".judge.jsonl")
    sampled = [orjson.loads(x) for x in side.read_bytes().splitlines()]
    assert [q["trace_id"] for q in queue["items"]] == [s["trace_id"] for s in sampled]
    assert [q["weight"] for q in queue["items"]] == [s["weight"] for s in sampled]
    task = [orjson.loads(x)["trace_id"] for x in out.read_bytes().splitlines()]
    assert sorted(task) == sorted(s["trace_id"] for s in sampled)


def test_two_annotators_post_a_hundred_labels_each(fx: Fixture) -> None:
    errors: list[str] = []
    with serving(review_data(fx)) as server:

        def post_many(name: str) -> None:
            c = Client(server)
            for i in range(100):
                t = fx.wrong_ids[i % len(fx.wrong_ids)]
                status, _, body = c.post(_label(t, annotator=name, note=f"{name} {i}"))
                if status != 200:
                    errors.append(f"{name} {i}: {status} {body}")

        threads = [threading.Thread(target=post_many, args=(n,)) for n in ("ann1", "ann2")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    for name in ("ann1", "ann2"):
        lines = (fx.run_dir / "human" / f"{name}.jsonl").read_bytes().splitlines()
        notes = [orjson.loads(x)["note"] for x in lines]  # every line valid JSON
        assert sorted(notes) == sorted(f"{name} {i}" for i in range(100))  # none lost/doubled


def test_server_url_and_loopback(fx: Fixture) -> None:
    with serving(review_data(fx)) as server:
        parts = urlsplit(server.url)
        assert parts.hostname == "127.0.0.1" and parts.query == ""
        assert parts.fragment == f"token={server.token}"  # never sent to a server
        assert len(server.token) >= 32 and server.loopback
        # TCP_NODELAY on every connection (asyncio sets it only for IPPROTO_TCP sockets):
        # without it each keep-alive request waited 40 ms for a delayed ACK.
        assert server.socket.proto == socket.IPPROTO_TCP


def test_a_busy_port_is_an_option_error(fx: Fixture) -> None:
    from misstep.errors import OptionError
    from misstep.review import make_server

    data = review_data(fx)
    with serving(data) as server, pytest.raises(OptionError, match="--host/--port"):
        make_server(data, port=server.port)


def test_search_sort_and_not_yet_labelled(fx: Fixture) -> None:
    with serving(review_data(fx)) as server:
        c = Client(server)
        # Search in the trace text: every response holds "Step one"; the wrong ones "= 6".
        assert c.get("/api/traces?q=Step%20one")[2]["total"] == 16
        assert c.get("/api/traces?" + urlencode({"q": "2 + 3 = 6"}))[2]["total"] == 8
        # A quote in the text is found as written (the file holds it JSON-escaped).
        assert c.get("/api/traces?" + urlencode({"q": HOSTILE[4][:8]}))[2]["total"] > 0
        assert c.get("/api/traces?q=no%20such%20text")[2]["total"] == 0
        # Sorting by problem, both ways: problem ids are p0... and p1...
        up = [i["problem_id"] for i in c.get("/api/traces?sort=problem_id")[2]["items"]]
        down = [i["problem_id"] for i in c.get("/api/traces?sort=-problem_id")[2]["items"]]
        assert up == sorted(up) and down == sorted(down, reverse=True) and up != down
        assert c.get("/api/traces?sort=nope")[0] == 400
        # Not yet labelled by me: 16, then 15 after one label; another person still 16.
        assert c.get("/api/traces?todo=1&annotator=alice")[2]["total"] == 16
        assert c.post(_label(fx.wrong_ids[0]))[0] == 200
        assert c.get("/api/traces?todo=1&annotator=alice")[2]["total"] == 15
        assert c.get("/api/traces?todo=1&annotator=bob")[2]["total"] == 16
        assert c.get("/api/traces?todo=1")[0] == 400  # whose?
        queue = c.get("/api/queue?annotator=alice")[2]
        assert queue["total"] == 4 and queue["done"] == int(
            fx.wrong_ids[0] in {i["trace_id"] for i in queue["items"]}
        )
