"""Adjudication: the disagreements the app lists, the decision stored with its own role, and
the commands that read it (summary, link and the corrected distributions take it as the
trace's human label; agree reports agreement before it)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from misstep.cli.app import app
from misstep.labels import HumanLabel, human_consensus, read_human_labels
from misstep.review import ReviewServer
from tests.review.review_fixture import Fixture, make_run, review_data, serving
from tests.review.test_api import Client, _label


@pytest.fixture
def fx(tmp_path: Path) -> Fixture:
    return make_run(tmp_path / "data")


def _people(c: Client, fx: Fixture) -> tuple[str, str, str]:
    """ann1 and ann2 disagree on a (arithmetic vs misread), agree on b (arithmetic, the
    judge's type too); ann1 alone says "no error" on d (the judge says arithmetic)."""
    a, b, d = fx.wrong_ids[0], fx.wrong_ids[1], fx.wrong_ids[2]
    for body in (
        _label(a, annotator="ann1", note="carry"),
        _label(a, annotator="ann2", error_type="misread", first_error_step=0),
        _label(b, annotator="ann1"),
        _label(b, annotator="ann2"),
        _label(d, annotator="ann1", error_type="no_error", first_error_step=None),
    ):
        assert c.post(body)[0] == 200
    return a, b, d


def _adjudicate(c: Client, body: dict[str, Any]) -> tuple[int, Any]:
    status, _, answer = c.request("POST", "/api/adjudications", body)
    return status, answer


def _adjudicator(server: ReviewServer) -> Client:
    """A client with the server's (shared) adjudicator token."""
    return Client(server, token=server.token_of(role="adjudicator"))


def test_disagreements_side_by_side_and_the_stored_decision(fx: Fixture) -> None:
    with serving(review_data(fx)) as server:  # not in adjudication mode: no such role
        c = Client(server)
        a, _, _ = _people(c, fx)
        assert c.get("/api/disagreements")[0] == 403
        assert _adjudicate(c, _label(a, annotator="carol"))[0] == 403
        with pytest.raises(KeyError):
            server.token_of(role="adjudicator")
    with serving(review_data(fx, adjudicate=True)) as server:
        # An annotator's token reaches no adjudication view (issue 34, item 4).
        assert Client(server).get("/api/disagreements")[0] == 403
        assert _adjudicate(Client(server), _label(a, annotator="carol"))[0] == 403
        c = _adjudicator(server)
        body = c.get("/api/disagreements")[2]
        # Only a: b is agreed, d has one person (and the judge is not asked for).
        assert body["total"] == 1 and body["done"] == 0
        item = body["items"][0]
        assert item["trace_id"] == a and "judge" not in item
        side = {
            (p["annotator"], p["error_type"], p["first_error_step"], p["note"])
            for p in item["labels"]
        }
        assert side == {("ann1", "arithmetic", 1, "carry"), ("ann2", "misread", 0, None)}
        status, stored = _adjudicate(
            c, _label(a, annotator="carol", error_type="misread", first_error_step=0)
        )
        assert status == 200 and stored["stored"]["role"] == "adjudicator"
        body = c.get("/api/disagreements")[2]
        assert body["done"] == 1 and body["items"][0]["adjudicated"]["error_type"] == "misread"
        assert _adjudicate(c, _label(fx.wrong_ids[5], annotator="carol"))[0] == 400  # unlabelled
    record = orjson.loads((fx.run_dir / "human" / "carol.jsonl").read_bytes())
    assert (record["role"], record["error_type"], record["blind"]) == (
        "adjudicator",
        "misread",
        False,
    )
    # Names hidden, and the judge asked for: d (ann1 "no error" vs the judge's arithmetic)
    # joins a.
    with serving(review_data(fx, adjudicate=True, hide_names=True, with_judge=True)) as server:
        body = _adjudicator(server).get("/api/disagreements")[2]
        assert [i["trace_id"] for i in body["items"]] == sorted([a, fx.wrong_ids[2]])
        names = {p["annotator"] for i in body["items"] for p in i["labels"]}
        assert names == {"person 1", "person 2"}
        assert all(i["judge"]["error_type"] == "arithmetic" for i in body["items"])


def test_the_consensus_takes_the_adjudicated_label() -> None:
    def lab(t: str, who: str, kind: str | None, **kw: Any) -> HumanLabel:
        return HumanLabel(trace_id=t, annotator=who, error_type=kind, **kw)

    people = [lab("a", "x", "arithmetic"), lab("a", "y", "misread"), lab("b", "x", "logic")]
    before = human_consensus(people)
    assert before.types == {"b": "logic"} and before.tied == ["a"]
    decided = [*people, lab("a", "z", "misread", role="adjudicator", weight=3.0)]
    after = human_consensus(decided)
    assert after.types == {"a": "misread", "b": "logic"} and after.tied == []
    assert after.weights["a"] == 3.0  # the decision's weight
    # It also overrides a majority, and "no error" leaves the trace untyped.
    overruled = [*decided, lab("b", "z", None, has_error=False, role="adjudicator")]
    assert human_consensus(overruled).types == {"a": "misread"}
    # "Can't tell" decides nothing.
    unsure = [*people, lab("a", "z", None, role="adjudicator")]
    assert human_consensus(unsure).types == before.types


def _json(args: list[str]) -> Any:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_agree_summary_and_link_read_the_adjudication(fx: Fixture, tmp_path: Path) -> None:
    with serving(review_data(fx, adjudicate=True)) as server:
        c = _adjudicator(server)
        a, _, _ = _people(c, fx)
        summary_before = _json(
            ["summary", str(fx.traces), "--labels", str(fx.run_dir), "--format", "json"]
        )
        link_before = _json(
            ["link", str(fx.traces), "--labels", str(fx.run_dir), "--format", "json"]
        )
        agree_args = ["agree", "--labels", str(fx.run_dir), "--format", "json", "--n-boot", "20"]
        agree_before = _json(agree_args)
        assert (
            _adjudicate(c, _label(a, annotator="carol", error_type="misread", first_error_step=0))[
                0
            ]
            == 200
        )
    # agree: the same figures as before the adjudication; carol is no rater.
    agree_after = _json(agree_args)
    assert agree_after == agree_before
    assert "carol" not in json.dumps(agree_after)
    # link: a's tie is settled, so judge vs people now has 2 traces (a and b), none tied.
    human_before = link_before["agreement"]
    link_args = ["link", str(fx.traces), "--labels", str(fx.run_dir), "--format", "json"]
    human_after = _json(link_args)["agreement"]
    assert (human_before["n"], human_before["n_tied"]) == (1, 1)
    assert (human_after["n"], human_after["n_tied"]) == (2, 0)
    # summary: the same as a run where one person alone said what carol decided (an
    # independent way to the same consensus), and not the same as before.
    other = tmp_path / "other"
    shutil.copytree(fx.run_dir, other)
    shutil.rmtree(other / "human")
    (other / "human").mkdir()
    same = [r for r in read_human_labels(fx.run_dir / "human" / "ann1.jsonl") if r.trace_id != a]
    same += [r for r in read_human_labels(fx.run_dir / "human" / "ann2.jsonl") if r.trace_id != a]
    same.append(HumanLabel(trace_id=a, annotator="solo", error_type="misread", has_error=True))
    (other / "human" / "all.jsonl").write_bytes(
        b"".join(orjson.dumps(r.model_dump()) + b"\n" for r in same)
    )
    summary_after = _json(
        ["summary", str(fx.traces), "--labels", str(fx.run_dir), "--format", "json"]
    )
    equivalent = _json(["summary", str(fx.traces), "--labels", str(other), "--format", "json"])
    assert summary_after == equivalent
    assert summary_after != summary_before


def test_the_later_adjudication_is_shown_and_used_after_a_restart(fx: Fixture) -> None:
    """Issue 34, item 6: zed decides arithmetic, amy decides misread later; amy's file is
    read first (by name), yet her later decision is the one the page shows, live and after a
    restart, and the one the consensus (so summary, link, report) uses."""
    with serving(review_data(fx, adjudicate=True)) as server:
        c = Client(server)
        a, _, _ = _people(c, fx)
        adj = _adjudicator(server)
        assert _adjudicate(adj, _label(a, annotator="zed", error_type="arithmetic"))[0] == 200
        time.sleep(0.01)  # created_at is to the millisecond
        assert _adjudicate(adj, _label(a, annotator="amy", error_type="misread"))[0] == 200
        live = adj.get("/api/disagreements")[2]["items"][0]["adjudicated"]
        assert (live["annotator"], live["error_type"]) == ("amy", "misread")
    with serving(review_data(fx, adjudicate=True)) as server:  # a restart
        again = _adjudicator(server).get("/api/disagreements")[2]["items"][0]["adjudicated"]
        assert (again["annotator"], again["error_type"]) == ("amy", "misread")
    stored = [
        x for p in sorted((fx.run_dir / "human").glob("*.jsonl")) for x in read_human_labels(p)
    ]
    assert [x.annotator for x in stored if x.role == "adjudicator"] == ["amy", "zed"]
    assert human_consensus(stored).types[a] == "misread"
    # link reads the run's people's labels through the same consensus
    link = _json(["link", str(fx.traces), "--labels", str(fx.run_dir), "--format", "json"])
    assert (link["agreement"]["n"], link["agreement"]["n_tied"]) == (2, 0)
    # a: people's consensus misread (amy), the judge said arithmetic -> one disagreement of two
    assert link["agreement"]["agreement"] == pytest.approx(0.5)
