"""Annotators who are who they say (issue 34): with ``--annotators`` each token is bound to
its person, who reads and writes only their own labels; adjudication is a role with tokens of
its own; the command prints one URL per token."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import orjson
import pytest
from typer.testing import CliRunner

from misstep.cli.app import app
from misstep.errors import OptionError
from misstep.review import make_grants
from tests.review.review_fixture import Fixture, make_run, review_data, serving
from tests.review.test_api import Client, _label

SRC = Path(__file__).resolve().parents[2] / "src"
SECRET = "bob's own note, for nobody else"


@pytest.fixture
def fx(tmp_path: Path) -> Fixture:
    return make_run(tmp_path / "data")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines()] if path.exists() else []


def test_a_persons_token_reads_and_writes_only_their_labels(fx: Fixture) -> None:
    a, b = fx.wrong_ids[:2]
    data = review_data(fx, adjudicate=True)
    with serving(data, annotators=["alice", "bob"], adjudicators=["carol"]) as server:
        assert [(g.name, g.role) for g in server.grants] == [
            ("alice", "annotator"),
            ("bob", "annotator"),
            ("carol", "adjudicator"),
        ]
        assert len({g.token for g in server.grants}) == 3
        alice = Client(server, token=server.token_of("alice"))
        bob = Client(server, token=server.token_of("bob"))
        carol = Client(server, token=server.token_of("carol", "adjudicator"))
        assert alice.get("/api/summary")[2]["you"] == {
            "name": "alice",
            "role": "annotator",
            "who": "alice (annotator)",
        }
        # bob labels a, with a note; the server takes the name from his token.
        status, _, stored = bob.post(_label(a, annotator=None, note=SECRET))
        assert status == 200 and stored["stored"]["annotator"] == "bob"
        # alice's token cannot write as bob, nor ask for his labels, nor reveal as him.
        status, _, body = alice.post(_label(b, annotator="bob"))
        assert status == 403 and "alice's" in body["error"]
        for path in (
            "/api/queue?annotator=bob",
            "/api/traces?annotator=bob",
            "/api/traces?todo=1&annotator=bob",
            f"/api/traces/{quote(a, safe='')}?annotator=bob",
        ):
            assert alice.get(path)[0] == 403, path
        assert alice.request("POST", "/api/reveal", {"trace_id": a, "annotator": "bob"})[0] == 403
        assert alice.get("/api/disagreements")[0] == 403
        assert alice.request("POST", "/api/adjudications", _label(a, annotator=None))[0] == 403
        # Nothing alice can read holds bob's label.
        for path in (
            "/api/summary",
            "/api/queue",
            "/api/traces?limit=50",
            f"/api/traces/{quote(a, safe='')}",
            "/api/distributions",
        ):
            status, _, body = alice.get(path)
            assert status == 200 and SECRET not in json.dumps(body), path
        assert alice.get(f"/api/traces/{quote(a, safe='')}")[2]["human"] is None
        # Her own labels are hers, with or without her name in the request.
        assert alice.post(_label(b, annotator=None))[2]["stored"]["annotator"] == "alice"
        assert alice.post(_label(b, annotator="alice", note="again"))[0] == 200
        assert alice.get(f"/api/traces/{quote(b, safe='')}")[2]["human"]["note"] == "again"
        # The adjudicator sees people's labels side by side, and decides.
        status, _, body = carol.get("/api/disagreements")
        assert status == 200
        status, _, stored = carol.request("POST", "/api/adjudications", _label(a, annotator=None))
        assert status == 200 and stored["stored"]["annotator"] == "carol"
        assert carol.request("POST", "/api/adjudications", _label(a, annotator="bob"))[0] == 403
        # No other token opens anything.
        assert Client(server, token="x" * 43).get("/api/summary")[0] == 403
    human = fx.run_dir / "human"
    assert [r["trace_id"] for r in _lines(human / "bob.jsonl")] == [a]
    assert [r["trace_id"] for r in _lines(human / "alice.jsonl")] == [b, b]
    assert [r["role"] for r in _lines(human / "carol.jsonl")] == ["adjudicator"]


def test_a_shared_token_takes_self_declared_names(fx: Fixture) -> None:
    """Without --annotators, as before: one token, names as people give them."""
    with serving(review_data(fx), annotator="dora") as server:
        assert [(g.name, g.role) for g in server.grants] == [(None, "annotator")]
        c = Client(server)
        assert c.get("/api/summary")[2]["you"]["name"] is None
        assert c.post(_label(fx.wrong_ids[0], annotator=None))[2]["stored"]["annotator"] == "dora"
        assert c.post(_label(fx.wrong_ids[0], annotator="eve"))[2]["stored"]["annotator"] == "eve"


def test_grants_are_checked() -> None:
    for bad in (
        {"annotators": ["alice", "alice"]},
        {"annotators": ["None"]},
        {"annotators": ["../x"]},
        {"adjudicators": ["carol"]},  # without --adjudicate
        {"adjudicators": ["c", "c"], "adjudicate": True},
    ):
        with pytest.raises(OptionError):
            make_grants(**bad)  # type: ignore[arg-type]
    # One person may hold both roles, a token for each.
    both = make_grants(annotators=["carol"], adjudicators=["carol"], adjudicate=True)
    assert [(g.name, g.role) for g in both] == [("carol", "annotator"), ("carol", "adjudicator")]
    assert both[0].token != both[1].token


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _call(url: str, method: str, path: str, body: Any = None) -> int:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    headers = {"Authorization": "Bearer " + parts.fragment.removeprefix("token=")}
    if body is not None:
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    status = conn.getresponse().status
    conn.close()
    return status


@pytest.mark.slow
def test_the_command_prints_one_url_per_person(fx: Fixture) -> None:
    args = [str(fx.traces), "--labels", str(fx.run_dir), "--blind"]
    args += ["--annotators", "alice,bob", "--adjudicators", "carol"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "misstep.cli", "review", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    try:
        assert proc.stdout is not None
        urls = [proc.stdout.readline().decode().strip() for _ in range(3)]
        assert all(u.startswith("http://127.0.0.1:") and "/#token=" in u for u in urls)
        assert len(set(urls)) == 3
        alice, bob, carol = urls
        t = fx.wrong_ids[0]
        body = {"trace_id": t, "error_type": "cant_tell"}
        assert _call(alice, "POST", "/api/labels", body) == 200
        assert _call(bob, "POST", "/api/labels", {**body, "annotator": "alice"}) == 403
        assert _call(bob, "GET", "/api/disagreements") == 403
        assert _call(carol, "GET", "/api/disagreements") == 200
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert b"alice (annotator), bob (annotator), carol (adjudicator)" in err, err
    assert [r["annotator"] for r in _lines(fx.run_dir / "human" / "alice.jsonl")] == ["alice"]
    assert not (fx.run_dir / "human" / "bob.jsonl").exists()


def test_bad_names_and_options_exit_2(fx: Fixture) -> None:
    base = ["review", str(fx.traces), "--labels", str(fx.run_dir)]
    runner = CliRunner()
    for extra, said in (
        (["--annotators", "alice,alice"], "--annotators"),
        (["--annotators", "alice,None"], "--annotators"),
        (["--adjudicators", "../c"], "--adjudicators"),
        (["--annotator", "x", "--annotators", "alice"], "--annotator"),
        (["--annotator", "null"], "--annotator"),
    ):
        result = runner.invoke(app, [*base, *extra])
        assert result.exit_code == 2 and said in result.output, (extra, result.output)
