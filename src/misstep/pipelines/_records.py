"""Where the judge meets storage: a run's manifest from its judge's spec, and the record of a
reply from a round that cannot retry inline. The judge says what it is and returns verdicts
(``misstep.judge.JudgeSpec``, ``misstep.verdict.Verdict``); ``misstep.labels`` makes the
manifest (``make_manifest``) and the record (``record_of``). Every way of labelling (live,
batch files, Ray, select) goes through here, so their manifests and records are the same."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from misstep.labels import RunManifest, StoredLabel, make_manifest, record_of

if TYPE_CHECKING:
    from misstep.judge import Judge, JudgeResult, JudgeSpec
    from misstep.labels import LabelRun
    from misstep.rollouts import Trace

__all__ = ["manifest_of", "record_manifest", "round_record"]


def manifest_of(
    spec: JudgeSpec,
    traces_path: Path,
    *,
    judge_id: str,
    digest: str,
    options: Mapping[str, Any],
    judge: Judge | None = None,
    server_model: str | None = None,
) -> RunManifest:
    """The manifest of a run of ``spec`` over ``traces_path``: the spec's configuration (the
    model resolved), its recorded ``options``, the server as ``judge`` reports it (or
    ``server_model`` for a judge that is a file)."""
    from misstep.prompts import prompt_hash

    return make_manifest(
        traces_path,
        digest=digest,
        judge=judge_id,
        judge_config=spec.recorded_config(),
        taxonomy=spec.taxonomy,
        prompt_hash=prompt_hash(),
        seed=spec.config.seed,
        options=options,
        server_model=judge.server_model if judge is not None else server_model,
        server=judge.server_info if judge is not None else None,
    )


def record_manifest(
    run: LabelRun,
    spec: JudgeSpec,
    options: Mapping[str, Any],
    *,
    judge: Judge | None = None,
    server_model: str | None = None,
) -> None:
    """Write the manifest of ``run`` (``manifest_of``), the directory's earlier ones kept."""
    run.record_manifest(
        manifest_of(
            spec,
            run.traces_path,
            judge_id=run.judge_id,
            digest=run.digest,
            options=options,
            judge=judge,
            server_model=server_model,
        )
    )


def round_record(
    spec: JudgeSpec,
    trace: Trace,
    answer: str | None,
    results_of: Callable[[int], list[JudgeResult]],
    sent: Mapping[str, Any] | None,
    *,
    judge_id: str,
    inclusion_prob: float | None = None,
) -> StoredLabel:
    """The record of a reply from a round that cannot retry inline (run-batch files, Ray's
    engine): its verdicts (``JudgeSpec.round_results``) made into a record by ``record_of``."""
    verdicts = spec.round_results(trace, answer, results_of, sent)
    return record_of(
        trace,
        verdicts.results,
        verdicts.steps,
        judge=judge_id,
        samples=spec.config.samples,
        order=spec.order,
        attempts=verdicts.attempts,
        trace_cut=verdicts.trace_cut,
        inclusion_prob=inclusion_prob,
    )
