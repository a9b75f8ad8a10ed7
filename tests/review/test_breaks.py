"""Issue 26's seven breaks of the review app, each replayed against the real server (uvicorn on
127.0.0.1, any free port): blind, cookies, 0.0.0.0, header injection, weights, a bad
Content-Length and stalled uploads."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest
from typer.testing import CliRunner

from misstep.cli.app import app
from misstep.review import ReviewServer
from tests.review.review_fixture import Fixture, make_run, review_data, serving
from tests.review.test_api import Client, _label


@pytest.fixture
def fx(tmp_path: Path) -> Fixture:
    return make_run(tmp_path / "data")


def _raw(server: ReviewServer, request: bytes, *, timeout: float = 10) -> bytes:
    """Send ``request`` as raw bytes and read the whole answer (the server closes)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        sock.sendall(request)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            if b"\r\n\r\n" in b"".join(chunks) and b"connection: close" not in chunk.lower():
                head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
                length = [
                    int(line.split(b":")[1])
                    for line in head.lower().split(b"\r\n")
                    if line.startswith(b"content-length:")
                ]
                if length and len(body) >= length[0]:
                    return b"".join(chunks)


# --- 1. blind -------------------------------------------------------------------------------


def test_1_blind_serves_nothing_of_the_judge_before_a_recorded_reveal(fx: Fixture) -> None:
    with serving(review_data(fx, blind=True, queue_n=4)) as server:
        c = Client(server)
        # The judge typed every wrong trace "arithmetic": the word must appear nowhere in
        # the queue or the list (not as a stratum, a judge column or a weight).
        for path in ("/api/queue?annotator=bob", "/api/traces?annotator=bob&limit=50"):
            status, _, body = c.get(path)
            assert status == 200
            text = json.dumps(body)
            assert "arithmetic" not in text and "stratum" not in text and "weight" not in text
            assert all("judge" not in i for i in body["items"])
        assert c.get("/api/traces?error_type=arithmetic")[0] == 400
        assert c.get("/api/traces?sort=-confidence")[0] == 400
        assert c.get("/api/traces?sort=problem_id")[0] == 200  # a sort without the judge
        t = fx.wrong_ids[0]
        path = f"/api/traces/{quote(t, safe='')}?annotator=bob"
        # Before answering: hidden, and a reveal is refused.
        assert c.get(path)[2]["judge_hidden"]
        reveal = {"trace_id": t, "annotator": "bob"}
        assert c.request("POST", "/api/reveal", reveal)[0] == 400
        # "Can't tell" is an answer like any other: stored blind, judge still hidden.
        status, _, stored = c.post(
            _label(t, annotator="bob", error_type="cant_tell", first_error_step=None)
        )
        assert status == 200 and stored["stored"]["blind"] is True
        body = c.get(path)[2]
        assert body["judge_hidden"] and body["can_reveal"] and body["judge_label"] is None
        # Anyone asking as bob after bob answered still sees nothing: no reveal was made.
        assert "arithmetic" not in json.dumps(c.get(path)[2]["judge_label"])
        # The reveal is recorded, then served; bob's later label is stored blind: false.
        status, _, shown = c.request("POST", "/api/reveal", reveal)
        assert status == 200 and shown["judge_label"]["error_type"] == "arithmetic"
        reveals = (fx.run_dir / "human" / "reveals" / "bob.jsonl").read_bytes().splitlines()
        assert [orjson.loads(r)["trace_id"] for r in reveals] == [t]
        status, _, stored = c.post(_label(t, annotator="bob"))
        assert status == 200 and stored["stored"]["blind"] is False
        # Nobody else sees it.
        assert c.get(f"/api/traces/{quote(t, safe='')}?annotator=carol")[2]["judge_hidden"]
    # A restart remembers the reveal.
    with serving(review_data(fx, blind=True)) as server:
        stored = Client(server).post(_label(t, annotator="bob"))[2]
        assert stored["stored"]["blind"] is False


# --- 2. cookies -----------------------------------------------------------------------------


def test_2_no_credential_in_a_cookie_and_foreign_cookies_lock_nobody_out(fx: Fixture) -> None:
    with serving(review_data(fx)) as a, serving(review_data(fx)) as b:
        for server in (a, b):
            c = Client(server)
            status, headers, _ = c.get("/")
            assert status == 200 and "set-cookie" not in headers
            # Another local app's JSON-valued cookie changes nothing.
            jar = {"Cookie": 'prefs={"theme":"dark"}; misstep_review=x'}
            assert c.get("/", headers=jar)[0] == 200
            assert c.get("/api/traces", headers=jar)[0] == 200
            # The token as a cookie is no credential (a cookie reaches every local port).
            cookie = {"Cookie": f"misstep_review={server.token}"}
            assert c.get("/api/traces", auth=False, headers=cookie)[0] == 403
        # Two servers, two tokens: neither answers the other's (each tab keeps its own in
        # sessionStorage, which is per origin: per port).
        assert a.token != b.token
        assert Client(a, token=b.token).get("/api/traces")[0] == 403


# --- 3. 0.0.0.0 -----------------------------------------------------------------------------


def test_3_wildcard_host_prints_working_urls_and_saves(fx: Fixture) -> None:
    with serving(review_data(fx), host="0.0.0.0") as server:
        assert server.url.startswith(f"http://127.0.0.1:{server.port}/#token=")
        assert len(server.urls()) == 2 and f":{server.port}/#token=" in server.urls()[1]
        c = Client(server)
        body = _label(fx.wrong_ids[0])
        # The browser's Origin is the address it opened: the request's own Host.
        for host in (f"127.0.0.1:{server.port}", f"{socket.gethostname()}:{server.port}"):
            headers = {"Host": host, "Origin": f"http://{host}"}
            status, _, answer = c.post(body, headers=headers)
            assert status == 200, answer
        mismatch = {"Host": f"127.0.0.1:{server.port}", "Origin": "http://0.0.0.0:1"}
        assert c.post(body, headers=mismatch)[0] == 403


# --- 4. header injection --------------------------------------------------------------------


def test_4_no_request_text_reaches_a_response_header(fx: Fixture) -> None:
    with serving(review_data(fx)) as server:
        host = f"127.0.0.1:{server.port}"
        for target in (
            "/?a=x%0d%0aX-Injected:%20yes",
            "/queue?a=x%0d%0aX-Injected:%20yes&token=abc",
            "/?q=%26%23%25%20a%20b",
            "/traces/x%0d%0aX-Injected:%20yes",
        ):
            raw = _raw(server, f"GET {target} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            head = raw.partition(b"\r\n\r\n")[0].lower()
            assert head.startswith(b"http/1.1 200"), (target, head[:80])
            assert b"x-injected" not in head and b"location" not in head, target


# --- 5. weights -----------------------------------------------------------------------------


def test_5_a_labels_weight_is_its_samples_whatever_the_request_order(
    fx: Fixture, tmp_path: Path
) -> None:
    out = tmp_path / "task.jsonl"
    result = CliRunner().invoke(
        app,
        ["sample", str(fx.traces), "--labels", str(fx.run_dir), "--out", str(out), "--n", "4"],
    )
    assert result.exit_code == 0, result.output
    side = out.with_name(out.name + ".judge.jsonl")  # the weights are in the task's sidecar
    sampled = {
        r["trace_id"]: r["weight"] for r in map(orjson.loads, side.read_bytes().splitlines())
    }
    first = next(iter(sampled))
    with serving(review_data(fx, queue_n=4)) as server:
        c = Client(server)
        # Before anyone opened the queue: the sample's weight already.
        before = c.post(_label(first, annotator="ann1"))[2]["stored"]["weight"]
        queue = c.get("/api/queue")[2]
        after = c.post(_label(first, annotator="ann2"))[2]["stored"]["weight"]
        assert before == after == sampled[first]
        assert {i["trace_id"]: i["weight"] for i in queue["items"]} == sampled
        # A trace outside the sample: weight 1.
        outside = next(t for t in fx.wrong_ids if t not in sampled)
        assert c.post(_label(outside))[2]["stored"]["weight"] == 1.0
    # --task: the task file's rows are the queue, with its sidecar's weights (17 here).
    rows = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    design = [orjson.loads(x) for x in side.read_bytes().splitlines()]
    for r in design:
        r["weight"] = 17.0
    side.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in design))
    with serving(review_data(fx, task=out)) as server:
        c = Client(server)
        assert c.post(_label(first, annotator="ann3"))[2]["stored"]["weight"] == 17.0
        items = c.get("/api/queue")[2]["items"]
        assert [i["trace_id"] for i in items] == [r["trace_id"] for r in rows]


# --- 6. bad Content-Length -------------------------------------------------------------------


def test_6_a_bad_content_length_is_a_400_without_a_traceback(
    fx: Fixture, capfd: pytest.CaptureFixture[str]
) -> None:
    with serving(review_data(fx)) as server:
        host = f"127.0.0.1:{server.port}"
        for length in ("abc", "-1", "1e3", "99999999999999999999999"):
            request = (
                f"POST /api/labels HTTP/1.1\r\nHost: {host}\r\n"
                f"Authorization: Bearer {server.token}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {length}\r\n\r\n{{}}"
            ).encode()
            head = _raw(server, request).partition(b"\r\n")[0]
            assert head.startswith(b"HTTP/1.1 400"), (length, head)
        # A big but honest length is refused without reading it all.
        c = Client(server)
        status, _, body = c.post(b"[" + b"1," * 40000 + b"1]")
        assert status == 413 and "too large" in body["error"]
        assert c.get("/api/summary")[0] == 200  # still serving
    assert "Traceback" not in capfd.readouterr().err


# --- 7. stalled uploads ---------------------------------------------------------------------


def test_7_stalled_uploads_are_dropped_without_delaying_others(fx: Fixture) -> None:
    # 40 stalled connections and a 2 s request deadline here (fast); the full 150 against
    # the default 30 s deadline is benchmarks/bench_review.py --stalled 150.
    n, deadline = 40, 2.0
    with serving(review_data(fx), request_timeout=deadline) as server:
        host = f"127.0.0.1:{server.port}"
        threads_before = threading.active_count()
        stalled = []
        for i in range(n):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=15)
            if i % 2:  # half: headers sent, body promised and never sent
                sock.sendall(
                    f"POST /api/labels HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer "
                    f"{server.token}\r\nContent-Type: application/json\r\n"
                    'Content-Length: 1000\r\n\r\n{"trace'.encode()
                )
            else:  # half: half a request line
                sock.sendall(b"GET /api/sum")
            stalled.append(sock)
        started = time.monotonic()
        c = Client(server)
        # Others are answered at once while the stalled ones wait.
        for _ in range(10):
            t0 = time.monotonic()
            assert c.get("/api/summary")[0] == 200
            assert time.monotonic() - t0 < 1.0
        # No thread per connection.
        assert threading.active_count() - threads_before < 5
        dropped: list[float] = []
        for sock in stalled:
            try:
                data: Any = sock.recv(1024)
                while data:
                    data = sock.recv(1024)
            except OSError:
                pass
            dropped.append(time.monotonic() - started)
            sock.close()
        # Each is dropped by the deadline (plus scheduling slack), none left hanging.
        assert len(dropped) == n and max(dropped) < deadline + 3.0
        assert c.get("/api/summary")[0] == 200
