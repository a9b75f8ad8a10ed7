"""A broken reply's problem is stored apart from its reason (record version 2), and a later
round's re-ask names it whole; a version-1 record is still read (its reason split)."""

from __future__ import annotations

from misstep.judge import (
    JudgeConfig,
    JudgeResult,
    JudgeSpec,
    Reply,
    RetryPolicy,
    Try,
    next_attempt,
    parse_reply,
    request_seed,
)
from misstep.labels import LABEL_RECORD_VERSION, LabelStatus, StoredLabel, record_of
from misstep.rollouts import Trace
from misstep.taxonomy import load_taxonomy

CONFIG = JudgeConfig(backend="openai", model="m", seed=5)
SEED = request_seed(5, "t0", 0)
TRACE = Trace(trace_id="t0", problem_id="p", response="1 + 1 = 3")
# A problem whose own text holds " (after ": splitting the reason there would cut it.
PROBLEM = "error_type: not one of the keys (after the comma, a quote)"


def _record(result: JudgeResult) -> StoredLabel:
    return record_of(TRACE, [result], ["1 + 1 = 3"], judge="j", samples=1, order={}, attempts=1)


def test_the_reask_names_the_whole_problem_from_the_stored_record() -> None:
    result = JudgeResult(
        status=LabelStatus.UNPARSEABLE,
        raw_reply="{x",
        reason=PROBLEM,
        problem=PROBLEM,
        tries=[Try("first", SEED, 0.0, "unparseable")],
    )
    record = _record(result)
    assert record.version == LABEL_RECORD_VERSION == 3
    assert record.problem == PROBLEM
    stored = StoredLabel.model_validate_json(record.model_dump_json()).model_dump(mode="json")
    attempt = next_attempt(CONFIG, "t0", stored, RetryPolicy())
    assert attempt is not None and attempt.kind == "reask"
    assert (attempt.raw, attempt.problem) == ("{x", PROBLEM)


def test_a_version_1_record_is_read_from_its_reason() -> None:
    old = {
        "version": 1,
        "trace_id": "t0",
        "judge": "j",
        "status": "unparseable",
        "raw_reply": "{x",
        "reason": "reply: bad (after 2 attempts: first truncated, cut-retry unparseable)",
    }
    assert StoredLabel.model_validate(old).problem is None
    attempt = next_attempt(CONFIG, "t0", old, RetryPolicy())
    assert attempt is not None and attempt.problem == "reply: bad"


def test_only_an_unparseable_reply_carries_a_problem() -> None:
    model = JudgeSpec(CONFIG, load_taxonomy(None)).label_type
    broken = parse_reply(Reply("{x", "stop", None), model, n_steps=1, max_tokens=9)
    assert broken.status is LabelStatus.UNPARSEABLE
    assert broken.problem is not None and broken.problem == broken.reason
    cut = parse_reply(Reply("{x", "length", None), model, n_steps=1, max_tokens=9)
    assert cut.status is LabelStatus.TRUNCATED and cut.problem is None
    assert _record(cut).problem is None
