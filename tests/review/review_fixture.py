"""A small run for the review app whose every text field is hostile, and a live server on it."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from misstep.agreement import load_labelled_run
from misstep.labels import LabelStatus, RunManifest, StoredLabel, write_manifest
from misstep.review import ReviewData, ReviewServer, make_server, open_trace_texts
from misstep.rollouts import input_digest, load_graded
from misstep.taxonomy import load_taxonomy

# Each payload would set window.__pwned or call alert if it ever ran as code.
HOSTILE = [
    "<script>window.__pwned=1;alert(1)</script>",
    '<img src=x onerror="window.__pwned=2;alert(2)">',
    "</script><script>window.__pwned=3</script>",
    "javascript:window.__pwned=4",
    '"\'><svg onload="window.__pwned=5">',
    "{{7*7}}${alert(6)}",
]
H = " ".join(HOSTILE)
CHECKPOINTS = [f"ck<b>{i}</b>\"'" for i in (1, 2)]
DATASET = "<i>ds</i>&amp;"
JUDGE = f"rules:{HOSTILE[4]}"  # the judge id is shown too


@dataclass
class Fixture:
    traces: Path
    run_dir: Path
    trace_ids: list[str]
    """Every trace id, in input order."""
    wrong_ids: list[str]
    """The wrong traces (each has an ok judge label)."""


def _response(k: int, wrong: bool) -> str:
    steps = [
        f"Step one {HOSTILE[k % len(HOSTILE)]} we read the problem.",
        f"Then 2 + 3 = {'6' if wrong else '5'} {HOSTILE[(k + 1) % len(HOSTILE)]}.",
        f"So the answer is \\boxed{{{'6' if wrong else '5'}}}.",
    ]
    return "\n\n".join(steps)


def make_run(tmp: Path) -> Fixture:
    """2 checkpoints x 2 problems x 4 samples = 16 traces; samples 0 and 1 of each problem are
    wrong (8 wrong traces, each judged ``arithmetic`` at step 1 with a hostile quote)."""
    tmp.mkdir(parents=True, exist_ok=True)
    rows = []
    quotes: dict[str, str] = {}
    for ck, checkpoint in enumerate(CHECKPOINTS):
        for p in range(2):
            for s in range(4):
                wrong = s < 2
                rows.append(
                    {
                        "trace_id": f"{HOSTILE[(ck + p + s) % len(HOSTILE)]}/{ck}/{p}/{s}",
                        "problem_id": f"p{p}{HOSTILE[p]}",
                        "checkpoint": checkpoint,
                        "step": 100 * (ck + 1),
                        "dataset": DATASET,
                        "sample_idx": s,
                        "problem": f"What is 2 + 3? Also $\\frac{{10}}{{2}}$. {H}",
                        "gold_answer": f"5 {HOSTILE[1]}",
                        "pred_answer": f"6 {HOSTILE[2]}" if wrong else f"5 {HOSTILE[1]}",
                        "correct": not wrong,
                        "response": _response(ck + p + s, wrong),
                    }
                )
                # The quote of the wrong step, verbatim (see _response).
                quotes[str(rows[-1]["trace_id"])] = f"2 + 3 = 6 {HOSTILE[(ck + p + s + 1) % 6]}"
    traces = tmp / "traces.jsonl"
    traces.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    run_dir = tmp / "run"
    run_dir.mkdir()
    tax = load_taxonomy(None)
    labels = []
    for r in rows:
        if r["correct"]:
            continue
        labels.append(
            StoredLabel(
                trace_id=str(r["trace_id"]),
                judge=JUDGE,
                status=LabelStatus.OK,
                error_type="arithmetic",
                first_error_step=1,
                evidence=quotes[str(r["trace_id"])],
                explanation=f"The sum is wrong. {H}",
                confidence=0.9,
            )
        )
    (run_dir / "labels.jsonl").write_bytes(
        b"".join(orjson.dumps(lab.model_dump(mode="json")) + b"\n" for lab in labels)
    )
    write_manifest(
        run_dir,
        RunManifest(
            input_sha256=input_digest(traces),
            judge=JUDGE,
            taxonomy_id=tax.id,
            taxonomy_version=str(tax.version),
            taxonomy_hash=tax.hash,
        ),
    )
    return Fixture(
        traces=traces,
        run_dir=run_dir,
        trace_ids=[str(r["trace_id"]) for r in rows],
        wrong_ids=[str(r["trace_id"]) for r in rows if not r["correct"]],
    )


def review_data(fx: Fixture, *, blind: bool = False, queue_n: int = 4, **kw: Any) -> ReviewData:
    run = load_graded(fx.traces)
    texts = open_trace_texts(
        fx.traces, run.table["trace_id"].astype(str).tolist(), input_sha256=run.input_sha256
    )
    labelled = load_labelled_run(fx.run_dir, run)
    return ReviewData(labelled, texts, blind=blind, queue_n=queue_n, **kw)


@contextmanager
def serving(
    data: ReviewData, *, annotator: str | None = None, host: str = "127.0.0.1", **kw: Any
) -> Iterator[ReviewServer]:
    """A real uvicorn server (any free port), served by a thread while the block runs."""
    server = make_server(data, annotator=annotator, host=host, **kw)
    server.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


TYPES = ("arithmetic", "other")


def make_typed_run(
    tmp: Path, *, n_problems: int = 100, seed: int = 1, permute: int | None = None
) -> tuple[Fixture, dict[str, str]]:
    """One checkpoint, ``n_problems`` x 4 samples; samples 0-2 of each problem are wrong and
    the judge types each of them ``arithmetic`` or ``other`` (about 2 to 1, at random over the
    ids: the id says nothing of the type), with a confidence, step, quote and explanation of
    its type. Returns the fixture and trace_id -> the judge's type.

    ``permute`` (a seed): the same traces, the judge's records moved whole between the wrong
    traces by a random permutation (same counts per type: a run that differs from the first
    in nothing but which trace the judge gave which type)."""
    tmp.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    rows = []
    for p in range(n_problems):
        for s in range(4):
            wrong = s < 3
            rows.append(
                {
                    "trace_id": f"t{4 * p + s:04d}",
                    "problem_id": f"p{p:03d}",
                    "checkpoint": "ck",
                    "step": 100,
                    "dataset": "ds",
                    "sample_idx": s,
                    "problem": f"What is 2 + {p}?",
                    "gold_answer": str(2 + p),
                    "pred_answer": str(3 + p) if wrong else str(2 + p),
                    "correct": not wrong,
                    "response": f"We add.\n\nThen 2 + {p} = {3 + p if wrong else 2 + p}.\n\n"
                    f"So \\boxed{{{3 + p if wrong else 2 + p}}}.",
                }
            )
    traces = tmp / "traces.jsonl"
    traces.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    wrong = [r for r in rows if not r["correct"]]
    kinds = [TYPES[0] if rng.random() < 2 / 3 else TYPES[1] for _ in wrong]
    records = [
        {
            "status": LabelStatus.OK,
            "error_type": kind,
            "first_error_step": 1 if kind == TYPES[0] else 0,
            "evidence": "Then 2 +" if kind == TYPES[0] else None,
            "explanation": "The sum is off by one." if kind == TYPES[0] else "Something else.",
            "confidence": 0.9 if kind == TYPES[0] else 0.55,
        }
        for kind in kinds
    ]
    if permute is not None:
        random.Random(permute).shuffle(records)
    run_dir = tmp / "run"
    run_dir.mkdir()
    tax = load_taxonomy(None)
    labels = [
        StoredLabel(trace_id=str(r["trace_id"]), judge=JUDGE, **rec)
        for r, rec in zip(wrong, records, strict=True)
    ]
    (run_dir / "labels.jsonl").write_bytes(
        b"".join(orjson.dumps(lab.model_dump(mode="json")) + b"\n" for lab in labels)
    )
    write_manifest(
        run_dir,
        RunManifest(
            input_sha256=input_digest(traces),
            judge=JUDGE,
            taxonomy_id=tax.id,
            taxonomy_version=str(tax.version),
            taxonomy_hash=tax.hash,
        ),
    )
    fx = Fixture(
        traces=traces,
        run_dir=run_dir,
        trace_ids=[str(r["trace_id"]) for r in rows],
        wrong_ids=[str(r["trace_id"]) for r in wrong],
    )
    return fx, {lab.trace_id: str(lab.error_type) for lab in labels}
