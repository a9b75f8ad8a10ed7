"""Table-driven unit tests of the exchange's three pieces: ``parse_reply`` (the one validator),
``RetryPolicy.next_try`` (the one retry policy) and ``run_exchange`` (the one loop), each case
worked by hand from the rules in ``misstep.judge._exchange``'s docstring."""

from __future__ import annotations

import asyncio
import json

import pytest

from misstep.judge import JudgeRequest, RetryPolicy, Try, label_model, parse_reply
from misstep.judge._exchange import Reply, Sent, TransportGaveUp, run_exchange
from misstep.judge._protocol import JudgeResult
from misstep.labels import LabelStatus
from misstep.rollouts import Trace
from misstep.taxonomy import load_taxonomy

TAXONOMY = load_taxonomy(None)
LABEL = label_model(TAXONOMY)
KEY = TAXONOMY.keys[0]


def _label(step: int = 0, error_type: str = KEY) -> str:
    return json.dumps(
        {
            "first_error_step": step,
            "evidence": "x",
            "explanation": "y",
            "error_type": error_type,
            "confidence": 0.5,
        }
    )


@pytest.mark.parametrize(
    ("text", "finish", "n_steps", "status", "reason_has"),
    [
        (_label(0), "stop", 2, LabelStatus.OK, None),
        (_label(1), "stop", 2, LabelStatus.OK, None),  # the last of 2 steps (0-based)
        (_label(2), "stop", 2, LabelStatus.UNPARSEABLE, "outside the 2 steps"),
        (_label(5), "stop", None, LabelStatus.OK, None),  # no steps known: no range check
        (_label(0), "length", 2, LabelStatus.TRUNCATED, "max_tokens=64"),  # cut beats valid
        ('{"first_error_step": 0,', "stop", 2, LabelStatus.UNPARSEABLE, "reply"),
        (_label(0, "no-such-type"), "stop", 2, LabelStatus.UNPARSEABLE, "error_type"),
        ("", "stop", 2, LabelStatus.UNPARSEABLE, None),
        # "cannot tell": a status with no type and no step, whatever step it wrote
        (_label(0, "cant_tell"), "stop", 2, LabelStatus.ABSTAINED, "cannot tell: y"),
        (_label(0, "cant_tell"), "length", 2, LabelStatus.TRUNCATED, "max_tokens"),
    ],
)
def test_parse_reply(
    text: str, finish: str, n_steps: int | None, status: LabelStatus, reason_has: str | None
) -> None:
    result = parse_reply(Reply(text, finish, "why"), LABEL, n_steps=n_steps, max_tokens=64)
    assert result.status is status
    assert result.reasoning == "why"  # kept whatever the status
    if status is LabelStatus.OK:
        assert result.label is not None and result.raw_reply is None
    else:
        assert result.label is None and result.raw_reply == text  # the raw reply is kept
    if reason_has is not None:
        assert reason_has in str(result.reason)


# (tries so far as (kind, seed, temperature, status), the last status, the configured
# temperature) -> the next (kind, seed, temperature), or None to keep the result
CUT = ("first", 7, 0.0, "truncated")
BROKEN = ("first", 7, 0.0, "unparseable")


@pytest.mark.parametrize(
    ("tries", "status", "temperature", "expected"),
    [
        ([CUT], LabelStatus.TRUNCATED, 0.0, ("cut-retry", 7 + 1_000_003, 0.3)),  # T >= 0.3
        ([CUT], LabelStatus.TRUNCATED, 0.7, ("cut-retry", 1_000_010, 0.7)),  # 0.7 kept
        # the seed wraps into [0, 2^31): (2^31 - 1 + 1_000_003) & (2^31 - 1) = 1_000_002
        ([("first", 2**31 - 1, 0.0, "truncated")], LabelStatus.TRUNCATED, 0.0,
         ("cut-retry", 1_000_002, 0.3)),
        ([CUT, ("cut-retry", 1_000_010, 0.3, "truncated")], LabelStatus.TRUNCATED, 0.0, None),
        ([BROKEN], LabelStatus.UNPARSEABLE, 0.0, ("reask", 7, 0.0)),  # same seed and T
        ([BROKEN, ("reask", 7, 0.0, "unparseable")], LabelStatus.UNPARSEABLE, 0.0, None),
        ([("first", 7, 0.0, "abstained")], LabelStatus.ABSTAINED, 0.0, None),  # an answer
        # a cut after a re-ask still has its one cut retry, and the other way round
        ([BROKEN, ("reask", 7, 0.0, "truncated")], LabelStatus.TRUNCATED, 0.0,
         ("cut-retry", 1_000_010, 0.3)),
        ([CUT, ("cut-retry", 1_000_010, 0.3, "unparseable")], LabelStatus.UNPARSEABLE, 0.0,
         ("reask", 1_000_010, 0.3)),
        ([("first", 7, 0.0, "ok")], LabelStatus.OK, 0.0, None),
        ([("first", 7, 0.0, "failed")], LabelStatus.FAILED, 0.0, None),
    ],
)  # fmt: skip
def test_retry_policy_next_try(
    tries: list[tuple[str, int, float, str]],
    status: LabelStatus,
    temperature: float,
    expected: tuple[str, int, float] | None,
) -> None:
    assert RetryPolicy().next_try([Try(*t) for t in tries], status, temperature) == expected


def test_retry_policy_without_retries_keeps_everything() -> None:
    policy = RetryPolicy(cut_retries=0, reasks=0)
    assert policy.next_try([Try(*CUT)], LabelStatus.TRUNCATED, 0.0) is None
    assert policy.next_try([Try(*BROKEN)], LabelStatus.UNPARSEABLE, 0.0) is None


def _request(n: int = 1) -> JudgeRequest:
    return JudgeRequest(
        trace=Trace(trace_id="t", problem_id="p", response="a\n\nb"),
        final_answer=None,
        steps=["a", "b"],
        messages=[{"role": "user", "content": "label it"}],
        seed=7,
        n=n,
    )


GOOD = Reply(_label(1), "stop")
CUT_REPLY = Reply('{"first_error_step": 1, "evidence": "', "length")
BAD = Reply('{"oops"', "stop")
FAIL = object()  # the transport gives up


@pytest.mark.parametrize(
    ("replies", "status", "kinds", "statuses", "seeds", "temperatures"),
    [
        ([GOOD], "ok", ["first"], ["ok"], [7], [0.0]),
        ([CUT_REPLY, GOOD], "ok", ["first", "cut-retry"], ["truncated", "ok"],
         [7, 1_000_010], [0.0, 0.3]),
        ([CUT_REPLY, CUT_REPLY], "truncated", ["first", "cut-retry"], ["truncated"] * 2,
         [7, 1_000_010], [0.0, 0.3]),
        ([BAD, GOOD], "ok", ["first", "reask"], ["unparseable", "ok"], [7, 7], [0.0, 0.0]),
        ([BAD, BAD], "unparseable", ["first", "reask"], ["unparseable"] * 2, [7, 7],
         [0.0, 0.0]),
        ([FAIL], "failed", ["first"], ["failed"], [7], [0.0]),
        ([CUT_REPLY, FAIL], "failed", ["first", "cut-retry"], ["truncated", "failed"],
         [7, 1_000_010], [0.0, 0.3]),
    ],
)  # fmt: skip
def test_run_exchange(
    replies: list[object],
    status: str,
    kinds: list[str],
    statuses: list[str],
    seeds: list[int],
    temperatures: list[float],
) -> None:
    sent: list[tuple[list[dict[str, str]], int, float, int]] = []
    queue = list(replies)

    async def send(messages: list[dict[str, str]], seed: int, temp: float, n: int) -> Sent:
        sent.append((messages, seed, temp, n))
        reply = queue.pop(0)
        if reply is FAIL:
            failed = JudgeResult(status=LabelStatus.FAILED, reason="down")
            raise TransportGaveUp(failed, requests=3)
        assert isinstance(reply, Reply)
        return Sent([reply], usage={"prompt_tokens": 10, "completion_tokens": 2})

    result = asyncio.run(
        run_exchange(_request(), send, label_type=LABEL, temperature=0.0, max_tokens=64)
    )
    assert not queue  # every planned reply was asked for, no more
    assert result.status.value == status
    assert result.tries is not None
    assert [t.kind for t in result.tries] == kinds
    assert [t.status for t in result.tries] == statuses
    assert [s[1] for s in sent] == seeds and [s[2] for s in sent] == temperatures
    # requests: 1 per sent reply, 3 for the transport that gave up
    assert result.attempts == sum(3 if r is FAIL else 1 for r in replies)
    # usage sums the replies that came: 10 + 2 tokens each
    came = sum(r is not FAIL for r in replies)
    assert result.usage == ({"prompt_tokens": 10 * came, "completion_tokens": 2 * came}
                            if came else {})  # fmt: skip
    if kinds[-1] == "reask":  # the re-ask shows the broken reply, then names the problem
        assert sent[-1][0][-2] == {"role": "assistant", "content": BAD.text}
        assert "schema" in sent[-1][0][-1]["content"]
    if status != "ok" and len(kinds) > 1 and status != "failed":
        assert f"after {len(kinds)} attempts" in str(result.reason)


def test_run_exchange_with_samples_validates_each_without_retry() -> None:
    async def send(messages: list[dict[str, str]], seed: int, temp: float, n: int) -> Sent:
        assert n == 3
        return Sent([GOOD, CUT_REPLY, BAD])

    result = asyncio.run(
        run_exchange(_request(n=3), send, label_type=LABEL, temperature=0.7, max_tokens=64)
    )
    assert result.status is LabelStatus.OK
    assert [c.status for c in result.choices] == [LabelStatus.TRUNCATED, LabelStatus.UNPARSEABLE]
    assert result.tries is not None and len(result.tries) == 1  # no retry of a sample
