"""Blind mode against a determined annotator (issue 34, items 1, 2, 4 and 5), each attack
replayed against the real server: the queue's order, every answer body, the adjudication
views, the judge's records read before a reveal, two servers on one run, and names."""

from __future__ import annotations

import itertools
import json
import random
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from misstep.review import QueueItem, ReviewServer
from tests.review.review_fixture import (
    TYPES,
    Fixture,
    make_run,
    make_typed_run,
    review_data,
    serving,
)
from tests.review.test_api import Client, _label

KEY = b"k" * 32
"""A fixed order key where a test needs one order (the attacker never has it)."""


@pytest.fixture
def typed(tmp_path: Path) -> tuple[Fixture, dict[str, str]]:
    return make_typed_run(tmp_path / "typed")


def _cant_tell(trace_id: str, **kw: Any) -> dict[str, Any]:
    return _label(trace_id, error_type="cant_tell", first_error_step=None, **kw)


def _path(trace_id: str, **query: str) -> str:
    q = "&".join(f"{k}={v}" for k, v in query.items())
    return f"/api/traces/{quote(trace_id, safe='')}" + (f"?{q}" if q else "")


# --- 1. the order -----------------------------------------------------------------------


def _unshuffle_attack(order: list[str], seeds: range) -> dict[str, str]:
    """The attack of issue 34, item 1: for each candidate seed, undo ``Random(seed).shuffle``
    on the served order; the seed whose result has the most ascending neighbours is taken
    (the sample lists each stratum's traces by id); its runs of ascending ids are read as the
    strata in their sorted order (``error_type=arithmetic`` before ``error_type=other``).
    Returns trace_id -> the type guessed."""
    n = len(order)
    best: tuple[int, list[str]] | None = None
    for seed in seeds:
        perm = list(range(n))
        random.Random(seed).shuffle(perm)
        undone = [""] * n
        for i, p in enumerate(perm):
            undone[p] = order[i]  # shuffle put original[perm[i]] at i
        ascents = sum(a < b for a, b in itertools.pairwise(undone))
        if best is None or ascents > best[0]:
            best = (ascents, undone)
    assert best is not None
    guesses, run = {}, 0
    for i, t in enumerate(best[1]):
        if i and best[1][i - 1] > t:
            run += 1
        guesses[t] = TYPES[min(run, len(TYPES) - 1)]
    return guesses


def _accuracy(guesses: dict[str, str], truth: dict[str, str]) -> float:
    return sum(guesses[t] == truth[t] for t in guesses) / len(guesses)


def test_the_public_seed_does_not_unshuffle_the_blind_queue(
    typed: tuple[Fixture, dict[str, str]],
) -> None:
    fx, truth = typed
    data = review_data(fx, blind=True, queue_n=200, order_key=KEY)
    served = data.queue_ids()
    assert len(served) == 200
    kinds = [truth[t] for t in served]
    majority = max(kinds.count(k) for k in TYPES) / len(kinds)  # always guess the commoner
    # The control: the order blind mode served before (the sample, by stratum, shuffled
    # with the public seed 0) gives the attack every type.
    by_stratum = review_data(fx, blind=False, queue_n=200).queue
    before: list[QueueItem] = list(by_stratum)
    random.Random(0).shuffle(before)
    assert _accuracy(_unshuffle_attack([q.trace_id for q in before], range(50)), truth) > 0.95
    # Now: no seed un-shuffles it. 200 guesses: beyond chance would be the commoner type's
    # share plus 3 standard deviations of a proportion.
    guessed = _accuracy(_unshuffle_attack(served, range(1000)), truth)
    assert guessed <= majority + 3 * (majority * (1 - majority) / 200) ** 0.5, (guessed, majority)
    # Nor does the order itself run through the strata: as many neighbours of one type as a
    # random order has (200 items, about 2/3 of one type: about 110 of 199 pairs).
    same = sum(a == b for a, b in itertools.pairwise(kinds))
    expected = 199 * (majority**2 + (1 - majority) ** 2)
    assert abs(same - expected) < 4 * (199 * 0.25) ** 0.5, (same, expected)


def test_two_servers_with_identical_arguments_serve_different_blind_orders(
    typed: tuple[Fixture, dict[str, str]], tmp_path: Path
) -> None:
    fx, _ = typed
    with serving(review_data(fx, blind=True, queue_n=100)) as a:
        first = [i["trace_id"] for i in Client(a).get("/api/queue")[2]["items"]]
    with serving(review_data(fx, blind=True, queue_n=100)) as b:
        second = [i["trace_id"] for i in Client(b).get("/api/queue")[2]["items"]]
    assert first != second  # 100! orders: the same one twice is no chance
    # The membership is the sample `misstep sample --n 100` draws with the same seed.
    from typer.testing import CliRunner

    from misstep.cli.app import app

    out = tmp_path / "task.jsonl"
    args = ["sample", str(fx.traces), "--labels", str(fx.run_dir), "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "--n", "100"])
    assert result.exit_code == 0, result.output
    task = [orjson.loads(x)["trace_id"] for x in out.read_bytes().splitlines()]
    assert sorted(first) == sorted(second) == sorted(task)


def test_a_blind_task_queue_is_not_served_in_the_files_order(
    typed: tuple[Fixture, dict[str, str]], tmp_path: Path
) -> None:
    """With --task, un-shuffling gave back the task file's own order; now the file's traces
    are served in the server's secret order, a different one per server."""
    from typer.testing import CliRunner

    from misstep.cli.app import app

    fx, _ = typed
    out = tmp_path / "task.jsonl"
    args = ["sample", str(fx.traces), "--labels", str(fx.run_dir), "--out", str(out)]
    assert CliRunner().invoke(app, [*args, "--n", "60"]).exit_code == 0
    rows = [orjson.loads(x)["trace_id"] for x in out.read_bytes().splitlines()]
    orders = []
    for _ in range(2):
        with serving(review_data(fx, blind=True, task=out)) as server:
            orders.append([i["trace_id"] for i in Client(server).get("/api/queue")[2]["items"]])
    assert sorted(orders[0]) == sorted(orders[1]) == sorted(rows)
    assert orders[0] != rows and orders[1] != rows and orders[0] != orders[1]


# --- 2. every answer, for a blind annotator ---------------------------------------------


def _script(server: ReviewServer, fx: Fixture, queue: list[str]) -> list[Any]:
    """Everything a blind annotator (bob, his own token) can ask before a reveal, each
    endpoint with good and bad requests: the answers as (path, status, content type,
    length, body), timestamps blanked."""
    bob = Client(server, token=server.token_of("bob"))
    seen: list[Any] = []

    def keep(method: str, path: str, body: Any = None) -> Any:
        status, headers, answer = bob.request(method, path, body)
        seen.append(
            (
                method,
                path,
                status,
                headers["content-type"],
                headers["content-length"],
                json.dumps(_timeless(answer)),
            )
        )
        return answer

    keep("GET", "/api/summary")
    keep("GET", "/api/distributions")
    for query in ("", "?todo=1", "?annotator=bob", "?annotator=carol", "?annotator=None"):
        keep("GET", "/api/queue" + query)
    for query in (
        "limit=500",
        "limit=7&offset=3",
        "outcome=wrong&sort=-problem_id",
        "sort=sample_idx&todo=1",
        "q=2%20%2B%201",
        "error_type=arithmetic",
        "error_type=other",
        "status=ok",
        "min_confidence=0.6",
        "sort=-confidence",
    ):
        keep("GET", f"/api/traces?{query}")
    for t in fx.trace_ids:
        keep("GET", _path(t))
        keep("POST", "/api/reveal", {"trace_id": t})  # before answering: refused
    for t in queue:  # "can't tell" on every trace of the queue, then a type, then again
        keep("POST", "/api/labels", _cant_tell(t, annotator=None))
        keep("GET", _path(t))
        keep("POST", "/api/labels", _label(t, annotator="bob", first_error_step=0))
        keep("POST", "/api/labels", _label(t, annotator="bob", first_error_step=99))
    keep("GET", "/api/queue?todo=1")
    keep("GET", "/api/traces?todo=1&limit=500")
    keep("GET", "/api/summary")
    keep("GET", "/api/distributions")
    # The adjudication views are not an annotator's.
    keep("GET", "/api/disagreements")
    keep("GET", "/api/disagreements?annotator=bob")
    keep("POST", "/api/adjudications", _label(queue[0], annotator="bob"))
    return seen


def _timeless(answer: Any) -> Any:
    """The answer with every ``created_at`` blanked (a label's time, the same length)."""
    if isinstance(answer, dict):
        return {k: "T" if k == "created_at" else _timeless(v) for k, v in answer.items()}
    if isinstance(answer, list):
        return [_timeless(v) for v in answer]
    return answer


def test_nothing_a_blind_annotator_is_served_depends_on_the_judges_types(
    tmp_path: Path,
) -> None:
    """Two runs of the same traces whose judge records differ only in which trace got which
    type (moved whole: type, step, quote, explanation, confidence), served blind with
    --adjudicate --with-judge: every answer to everything a blind annotator can ask before a
    reveal is the same byte for byte, status, content type and length included. Strata by
    checkpoint alone, so the queue's sample is the same in both (with strata by type the
    sample itself follows the types: see the next test)."""
    plain, truth = make_typed_run(tmp_path / "a")
    moved, truth_moved = make_typed_run(tmp_path / "b", permute=7)
    differ = sum(truth[t] != truth_moved[t] for t in truth)
    assert differ > 100  # of 300 wrong traces: the two runs disagree on many types
    answers = []
    for fx in (plain, moved):
        data = review_data(
            fx,
            blind=True,
            queue_n=60,
            queue_stratify=("checkpoint",),
            order_key=KEY,
            adjudicate=True,
            with_judge=True,
        )
        with serving(data, annotators=["bob"]) as server:
            answers.append(_script(server, fx, data.queue_ids()))
    assert len(answers[0]) == len(answers[1]) > 1000
    for one, other in zip(*answers, strict=True):
        assert one == other
    # The script did reach the refusals it means to (none served a judge's field).
    statuses = {(a[0], a[1].split("?")[0], a[2]) for a in answers[0]}
    assert ("GET", "/api/disagreements", 403) in statuses
    assert ("POST", "/api/adjudications", 403) in statuses
    assert ("GET", "/api/traces", 400) in statuses
    assert not any('"judge_label": {' in a[5] or '"stratum"' in a[5] for a in answers[0])


def test_no_answer_carries_the_weight_that_names_the_type(
    typed: tuple[Fixture, dict[str, str]],
) -> None:
    """Issue 34, item 2: strata by type (the default) give each type its own weight; posting
    "can't tell" on every trace of the queue and reading the answers told every type. Now
    every answer is the same but for the trace id and the time."""
    fx, truth = typed
    data = review_data(fx, blind=True, queue_n=200)
    weights = {truth[q.trace_id]: set() for q in data.queue}
    for q in data.queue:
        weights[truth[q.trace_id]].add(q.weight)
    # The control: the weights kept with the labels do separate the types here.
    assert not weights[TYPES[0]] & weights[TYPES[1]], weights
    with serving(data, annotators=["bob"]) as server:
        bob = Client(server, token=server.token_of("bob"))
        shapes = set()
        for t in data.queue_ids():
            for body in (_cant_tell(t, annotator=None), _cant_tell(t, annotator=None, note="x")):
                status, headers, answer = bob.post(body)
                assert status == 200
                stored = dict(answer["stored"])
                assert "weight" not in stored and stored["blind"] is True
                del stored["trace_id"], stored["created_at"]
                shapes.add((json.dumps(stored, sort_keys=True), headers["content-length"]))
        assert len(shapes) == 2  # one per body sent, whatever the trace
    # The weights are kept, with the labels, for the estimates.
    kept = [orjson.loads(x) for x in (fx.run_dir / "human" / "bob.jsonl").read_bytes().splitlines()]
    assert {r["trace_id"]: r["weight"] for r in kept} == {q.trace_id: q.weight for q in data.queue}


def test_a_blind_annotator_reads_no_judge_record_before_a_reveal(
    typed: tuple[Fixture, dict[str, str]],
) -> None:
    """Timing: no request of a blind annotator reads the judge's records before a reveal (so
    none takes longer for one type). The judge's file is taken away once the server has
    started: every request still answers; the reveal, which reads it, is the first that
    cannot."""
    fx, _ = typed
    data = review_data(fx, blind=True, queue_n=20, adjudicate=True, with_judge=True)
    with serving(data, annotators=["bob"]) as server:
        bob = Client(server, token=server.token_of("bob"))
        away = fx.run_dir / "labels.away"
        shutil.move(fx.run_dir / "labels.jsonl", away)
        try:
            for t in data.queue_ids():
                assert bob.get(_path(t))[0] == 200
                assert bob.post(_cant_tell(t, annotator=None))[0] == 200
                assert bob.get(_path(t))[0] == 200
            assert bob.get("/api/queue")[0] == 200
            assert bob.get("/api/traces?limit=500")[0] == 200
            status, _, _ = bob.request("POST", "/api/reveal", {"trace_id": data.queue_ids()[0]})
            assert status == 500  # the reveal reads the judge's record: gone
        finally:
            shutil.move(away, fx.run_dir / "labels.jsonl")


# --- 4. adjudication ------------------------------------------------------------------------


def test_blind_adjudication_is_the_adjudicators_and_what_it_shows_is_recorded(
    typed: tuple[Fixture, dict[str, str]],
) -> None:
    fx, truth = typed
    a, b, c = fx.wrong_ids[:3]
    data = review_data(fx, blind=True, queue_n=20, adjudicate=True, with_judge=True)
    with serving(data, annotators=["ann1", "ann2"], adjudicators=["carol"]) as server:
        ann1 = Client(server, token=server.token_of("ann1"))
        ann2 = Client(server, token=server.token_of("ann2"))
        carol = Client(server, token=server.token_of("carol", "adjudicator"))
        # An annotator who labelled nothing: no adjudication link, no view, no decision.
        assert ann1.get("/api/summary")[2]["adjudicate"] is False
        assert ann1.get("/api/disagreements")[0] == 403
        assert ann1.request("POST", "/api/adjudications", _label(a))[0] == 403
        assert carol.get("/api/summary")[2]["adjudicate"] is True
        # People answer: they disagree on a; on b and c one person each.
        for client, t, kind in ((ann1, a, "misread"), (ann2, a, "other"), (ann1, b, "misread")):
            body = _label(t, annotator=None, error_type=kind, first_error_step=0)
            assert client.post(body)[0] == 200
        assert ann2.post(_cant_tell(c, annotator=None))[0] == 200
        # Carol sees the judge's answers (--with-judge): recorded first as revealed to her,
        # for every trace people labelled (one left out of the list is one the judge agrees
        # on: that tells her its type too).
        status, _, body = carol.get("/api/disagreements")
        assert status == 200
        assert {i["trace_id"]: i["judge"]["error_type"] for i in body["items"]} == {
            t: truth[t] for t in (a, b, c)
        }
        reveals = (fx.run_dir / "human" / "reveals" / "carol.jsonl").read_bytes().splitlines()
        assert sorted(orjson.loads(r)["trace_id"] for r in reveals) == sorted([a, b, c])
        carol.get("/api/disagreements")  # nothing new to record
        assert (
            len((fx.run_dir / "human" / "reveals" / "carol.jsonl").read_bytes().splitlines()) == 3
        )
        # Her own label of such a trace is not blind; the annotators' stay blind.
        assert carol.post(_label(a, annotator=None))[2]["stored"]["blind"] is False
        assert carol.get(_path(a))[2]["judge_label"]["error_type"] == truth[a]
        assert ann1.post(_label(a, annotator=None))[2]["stored"]["blind"] is True
        assert ann1.get(_path(a))[2]["judge_hidden"] is True
        # Her decision is stored as an adjudication.
        status, _, stored = carol.request("POST", "/api/adjudications", _label(a, annotator=None))
        assert status == 200 and stored["stored"]["role"] == "adjudicator"
    # A shared adjudicator URL (no --adjudicators) needs a name before it shows the judge.
    with serving(review_data(fx, blind=True, adjudicate=True, with_judge=True)) as server:
        shared = Client(server, token=server.token_of(role="adjudicator"))
        status, _, body = shared.get("/api/disagreements")
        assert status == 400 and "name" in body["error"]
        assert shared.get("/api/disagreements?annotator=dave")[0] == 200
        assert (fx.run_dir / "human" / "reveals" / "dave.jsonl").exists()
    # Without --with-judge, the list shows nothing of the judge and records nothing.
    with serving(review_data(fx, blind=True, adjudicate=True)) as server:
        shared = Client(server, token=server.token_of(role="adjudicator"))
        body = shared.get("/api/disagreements?annotator=erin")[2]
        assert body["total"] == 1 and "judge" not in body["items"][0]
        assert not (fx.run_dir / "human" / "reveals" / "erin.jsonl").exists()


# --- 5. two servers on one run, and names ----------------------------------------------------


def test_two_servers_on_one_run_agree_on_reveals(typed: tuple[Fixture, dict[str, str]]) -> None:
    fx, truth = typed
    t, u = fx.wrong_ids[:2]
    with (
        serving(review_data(fx, blind=True)) as one,
        serving(review_data(fx, blind=True)) as two,
    ):
        c1, c2 = Client(one), Client(two)
        # bob answers t on one and asks for the judge there; his next label of t, on two, is
        # not blind.
        assert c1.post(_cant_tell(t, annotator="bob"))[2]["stored"]["blind"] is True
        assert c1.request("POST", "/api/reveal", {"trace_id": t, "annotator": "bob"})[0] == 200
        assert c2.post(_label(t, annotator="bob"))[2]["stored"]["blind"] is False
        assert c2.get(_path(t, annotator="bob"))[2]["judge_label"]["error_type"] == truth[t]
        # bob answers u on two, asks for the judge on one (which reads his label from the
        # run): shown, and two knows.
        assert c2.post(_cant_tell(u, annotator="bob"))[0] == 200
        status, _, shown = c1.request("POST", "/api/reveal", {"trace_id": u, "annotator": "bob"})
        assert status == 200 and shown["judge_label"]["error_type"] == truth[u]
        assert c2.post(_label(u, annotator="bob"))[2]["stored"]["blind"] is False
        # Nobody else.
        assert c2.post(_label(u, annotator="carol"))[2]["stored"]["blind"] is True


def test_a_request_without_a_name_matches_nobody(tmp_path: Path) -> None:
    fx = make_run(tmp_path / "data")
    t = fx.wrong_ids[0]
    # A reveal to a person literally named None, as an earlier version could write it.
    (fx.run_dir / "human" / "reveals").mkdir(parents=True)
    record = {"version": 1, "trace_id": t, "annotator": "None", "judge": None}
    (fx.run_dir / "human" / "reveals" / "None.jsonl").write_bytes(orjson.dumps(record) + b"\n")
    with serving(review_data(fx, blind=True)) as server:
        c = Client(server)
        detail = c.get(_path(t))[2]  # no name
        assert detail["judge_hidden"] is True and detail["judge_label"] is None
        listed = c.get("/api/traces?limit=50")[2]["items"]
        assert not any("judge" in i for i in listed)
        # The names a missing one turns into, empty and path-like names: refused.
        for name in ("None", "null", "undefined", "NaN", "../x", ".x", "a/b"):
            status, _, body = c.post(_label(t, annotator=name))
            assert status == 400 and "annotator" in body["error"], name
            assert c.get(_path(t, annotator=quote(name, safe="")))[0] == 400
        status, _, body = c.post(_label(t, annotator=""))
        assert status == 400 and "name first" in body["error"]
    assert sorted(p.name for p in (fx.run_dir / "human").glob("*.jsonl")) == []
