"""The link: which error types moved where majority voting stopped paying off.

``link_analysis`` joins the graded table with the judge's labels (status ``ok`` labels of
``wrong`` traces; truncated and no-answer traces are never labelled), then computes per
checkpoint the vote metrics, the error-type distribution (pooled over datasets, problems as
clusters), its shifts, the anatomy of majority-vote failures, rank correlations, the per-problem
regression, dominant-type transitions and ranked findings. See ``_shifts``, ``_anatomy``,
``_linkstats`` and ``_findings`` for the exact definitions and the "too few data" thresholds.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

from misstep.agreement import ErrorDistribution, Homogeneity, LabelledRun
from misstep.errors import AnalysisError, InputFormatError, InvalidRecordError
from misstep.labels import HumanLabel, LabelRow, StoredLabel, human_consensus
from misstep.link._anatomy import (
    FAILURE_KINDS,
    PROBLEM_KEY,
    failure_mix,
    problem_votes,
    winner_types,
)
from misstep.link._causes import (
    CAUSES,
    CauseShift,
    VoteTransition,
    cause_shifts,
    cause_values,
    vote_transitions,
)
from misstep.link._findings import Finding, build_findings
from misstep.link._linkstats import (
    Correlation,
    RegressionResult,
    Transition,
    coverage_table,
    dominant_transitions,
    finite,
    problem_regression,
    spearman_permutation,
    vote_table,
)
from misstep.link._shifts import (
    CheckpointShares,
    Shift,
    bh_adjust,
    checkpoint_shares,
    distribution_shifts,
    estimator_shifts,
)
from misstep.metrics import DEFAULT_KS, order_checkpoints

__all__ = [
    "LINK_STAGES",
    "CheckpointSummary",
    "LinkResult",
    "link_analysis",
    "read_train_metrics",
]

_N_PERM = 2000


class CheckpointSummary(BaseModel):
    """Per-checkpoint metrics and error-type distribution."""

    checkpoint: str
    """Checkpoint name."""
    step: int | None
    """Training step, when known."""
    n_problems: int
    """Problems (over all datasets)."""
    n_samples: int
    """Traces."""
    n_wrong: int
    """Traces graded ``wrong``."""
    n_labelled: int
    """Wrong traces with an ``ok`` label (count)."""
    labelled_share: float | None = None
    """``n_labelled / n_wrong`` (share); None without wrong traces."""
    metrics: dict[str, float | None]
    """``pass@1``, ``maj@k`` and ``sc_gain@k`` for each k."""
    metrics_ci: dict[str, tuple[float, float] | None] = {}
    """95% bootstrap interval over problems of each of ``metrics``."""
    error_dist: dict[str, float | None] | None
    """The distribution the analysis used: corrected with human labels, else the judge's
    (see ``error_dist_source``); None when no wrong trace of the checkpoint is labelled."""
    error_dist_source: str
    """``corrected`` or ``judge``."""
    error_dist_estimator: str = "judge"
    """What made the corrected shares (``ppi`` or ``pooled``), or ``judge``."""
    n_human: int = 0
    """Human labels behind the corrected shares (``ppi``: this checkpoint's own; ``pooled``:
    all of the run's)."""
    error_dist_sim_ci: dict[str, tuple[float, float] | None] | None = None
    """Simultaneous intervals over the types (``--simultaneous``)."""
    error_dist_judge: dict[str, float] | None = None
    """Share of labelled wrong traces per type, as the judge gives it."""
    error_dist_ci: dict[str, tuple[float, float] | None]
    """95% interval of each share of ``error_dist``: the bootstrap of
    ``misstep.agreement.error_distributions`` (within each dataset), the same as ``summary``."""
    error_dist_corrected: dict[str, float | None] | None = None
    """Corrected for the judge's confusion (with human labels); None for a type that is not
    identified."""
    not_identified: list[str] = []
    """Types without a corrected share (the judge's confusion matrix does not identify them)."""
    majority_failures: int
    """Problems whose full-n vote is not correct while some sample is (count)."""
    majority_failure_rate: float | None = None
    """``majority_failures / n_problems`` (share)."""
    failure_kinds: dict[str, int]
    """Failures per kind (consistent-wrong, scattered, truncation-driven, no-answer-driven)."""
    winner_mix: dict[str, float]
    """Type mix of the winning wrong classes' labelled traces, over this checkpoint's failures."""
    other_mix: dict[str, float]
    """Type mix of the other labelled wrong traces of the same failed problems."""
    train_metrics: dict[str, float | None] = {}
    """Training metrics joined on ``step``, when given."""
    causes: dict[str, float] = {}
    """Mean over problems of each cause beyond error types (``_causes.CAUSES``)."""
    n_no_answer: int = 0
    """Samples without a final answer (count)."""
    n_truncated: int = 0
    """Samples cut at the token limit (count)."""


class LinkResult(BaseModel):
    """Everything ``misstep link`` reports; ``to_json()`` for scripts."""

    k: int
    """The k of the headline ``sc_gain@k``."""
    ks: list[int]
    """All k computed."""
    types: list[str]
    """Error types: the run's taxonomy keys in its order (without a taxonomy, those seen in
    the labels, sorted)."""
    checkpoints: list[CheckpointSummary]
    """In checkpoint order."""
    shifts: list[Shift]
    """Between consecutive checkpoints."""
    failures: list[dict[str, Any]]
    """One record per majority-vote failure (checkpoint, dataset, problem_id, kind, votes,
    winner_type, winner trace ids)."""
    correlations: list[Correlation]
    """Spearman correlations across checkpoints."""
    regression: RegressionResult
    """Per-problem logistic regression of majority-vote failure."""
    transitions: list[Transition]
    """Dominant-type moves between consecutive checkpoints, most frequent first."""
    cause_shifts: list[CauseShift] = []
    """Changes of the causes beyond error types between consecutive checkpoints."""
    vote_transitions: list[VoteTransition] = []
    """Problems whose full-n vote went right/wrong between consecutive checkpoints."""
    coverage: dict[str, Any]
    """Solved-set Jaccard matrix, retention, acquisition, forgetting."""
    agreement: dict[str, Any] | None
    """Judge vs human: n, agreement, Cohen's kappa and the confusion matrix (with ``human``)."""
    findings: list[Finding]
    """Ranked, best first."""
    confusion_homogeneity: Homogeneity | None = None
    """With ``--estimator pooled``: the test of its assumption (one judge confusion at every
    checkpoint) on the human labels."""
    notes: list[str]
    """Plain statements about too few data and uncorrected distributions."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN never appears: missing numbers are null)."""
        data: dict[str, Any] = self.model_dump(mode="json")
        return data


_VERL_STEP = re.compile(r"(?:^|\s)step:(\d+)(?:\s|$)")
_VERL_PAIR = re.compile(r"([^\s:]+):(-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)(?=\s|$)")
_WANDB_STEP = ("step", "Step", "_step", "global_step", "trainer/global_step")


def _verl_console(p: Path, lines: list[str]) -> pd.DataFrame:
    """verl's console lines: ``step:25 - actor/entropy:8.63 - critic/score/mean:0.0044 - ...``
    (other lines are skipped)."""
    rows = []
    for line in lines:
        step = _VERL_STEP.search(line)
        if step is None:
            continue
        row: dict[str, Any] = {"step": int(step.group(1))}
        for key, value in _VERL_PAIR.findall(line.replace(" - ", "  ")):
            if key != "step":
                row[key] = float(value)
        rows.append(row)
    if not rows:
        raise InputFormatError(path=p, reason="no line of the form 'step:N - name:value - ...'")
    return pd.DataFrame(rows)


def _wandb_columns(df: pd.DataFrame) -> pd.DataFrame:
    """A W&B CSV export: its step column (``Step``, ``_step`` ...) becomes ``step``; the
    ``__MIN`` / ``__MAX`` band columns are dropped; a ``RUN - `` prefix shared by every metric
    column is removed."""
    if "step" not in df.columns:
        for name in _WANDB_STEP:
            if name in df.columns:
                df = df.rename(columns={name: "step"})
                break
    df = df.loc[:, [c for c in df.columns if not str(c).endswith(("__MIN", "__MAX"))]]
    metrics = [str(c) for c in df.columns if c != "step"]
    prefixes = {c.split(" - ", 1)[0] for c in metrics if " - " in c}
    if len(prefixes) == 1 and all(" - " in c for c in metrics):
        df = df.rename(columns={c: c.split(" - ", 1)[1] for c in metrics})
    return df


def read_train_metrics(path: str | Path) -> pd.DataFrame:
    """Training metrics per step, from a CSV or JSONL file with a ``step`` column, a W&B CSV
    export (``Step`` / ``_step``, ``RUN - metric`` columns), or verl's console log
    (``step:25 - actor/entropy:8.63 - ...`` lines); numeric columns only, mean per step."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
        lines = text.splitlines()
        first = next((line for line in lines if line.strip()), "")
        if _VERL_STEP.search(first) or p.suffix.lower() in {".log", ".txt", ".out"}:
            df = _verl_console(p, lines)
        elif p.suffix.lower() in {".jsonl", ".json", ".ndjson"}:
            rows = []
            for i, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise InvalidRecordError(
                        path=p, line=i, reason=f"not valid JSON ({exc.msg})"
                    ) from None
            df = pd.DataFrame(rows)
        else:
            df = _wandb_columns(pd.read_csv(io.StringIO(text)))
    except OSError as exc:
        raise InputFormatError(path=p, reason=f"cannot read: {exc.strerror}") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputFormatError(path=p, reason=f"not a CSV file: {exc}") from None
    if "step" not in df.columns:
        raise InputFormatError(
            path=p,
            reason="no 'step' column",
            hint="add a 'step' column holding the training step (a W&B export's Step or "
            "_step and verl's console lines 'step:N - ...' are read too)",
        )
    step = pd.to_numeric(df["step"], errors="coerce")
    if step.isna().any():
        bad = int(np.flatnonzero(step.isna().to_numpy())[0]) + 2  # header is line 1
        raise InvalidRecordError(path=p, line=bad, field="step", reason="not an integer")
    numeric = df.drop(columns=["step"]).apply(pd.to_numeric, errors="coerce")
    numeric = numeric.loc[:, numeric.notna().any()]
    numeric.index = step.astype(int)
    out: pd.DataFrame = numeric.groupby(level=0).mean()
    return out


def _labels_frame(labels: Mapping[str, StoredLabel | LabelRow]) -> pd.DataFrame:
    """trace_id, error_type, first_error_step, evidence of the ``ok`` labels with a type."""
    rows = [
        (
            tid,
            lab.error_type,
            getattr(lab, "first_error_step", None),
            getattr(lab, "evidence", None),
        )
        for tid, lab in labels.items()
        if lab.status == "ok" and lab.error_type
    ]
    return pd.DataFrame(rows, columns=["trace_id", "error_type", "first_error_step", "evidence"])


def _mix(rows: pd.DataFrame, types: list[str]) -> dict[str, float]:
    if rows.empty:
        return {}
    counts = rows["error_type"].value_counts()
    return {t: float(counts.get(t, 0) / len(rows)) for t in types}


def _agreement(
    human: Sequence[HumanLabel], labelled: pd.DataFrame, types: Sequence[str] = ()
) -> dict[str, Any] | None:
    """Judge vs the human consensus (``misstep.labels.human_consensus``: ties have none)."""
    from sklearn.metrics import cohen_kappa_score

    agreed = human_consensus(human)
    consensus = agreed.types
    judged = dict(zip(labelled["trace_id"], labelled["error_type"], strict=True))
    pairs = [(judged[t], consensus[t]) for t in consensus if t in judged]
    if not pairs:
        return {"n": 0, "note": "no trace has both a judge label and a human consensus"}
    jl, hl = zip(*pairs, strict=True)
    used = set(jl) | set(hl)
    # The taxonomy's order, as every table; a type outside it (no taxonomy given) after.
    cats = [t for t in types if t in used] + sorted(used - set(types))
    matrix = [[sum(1 for a, b in pairs if b == r and a == c) for c in cats] for r in cats]
    kappa = cohen_kappa_score(list(hl), list(jl), labels=cats) if len(cats) > 1 else None
    return {
        "n": len(pairs),
        "n_tied": len(agreed.tied),
        "agreement": sum(a == b for a, b in pairs) / len(pairs),
        "cohen_kappa": finite(kappa),
        "labels": cats,
        "confusion": matrix,
        "confusion_rows": "human",
        "confusion_cols": "judge",
    }


def _distributions(labelled: LabelledRun, dataset: str | None) -> list[ErrorDistribution]:
    """The run's per-checkpoint distributions: datasets pooled, or one dataset's."""
    if dataset is None:
        return labelled.distributions(pool_datasets=True)
    return [d for d in labelled.distributions(pool_datasets=False) if d.dataset == dataset]


def _typed_wrong(
    graded: pd.DataFrame, lab: pd.DataFrame, types: list[str]
) -> tuple[pd.DataFrame, list[str]]:
    """The wrong traces with an ok label, and the types among ``types`` that occur in them."""
    wrong = graded.loc[
        graded["outcome"].astype(str) == "wrong", [*PROBLEM_KEY, "trace_id", "answer_class"]
    ]
    wl = wrong.merge(lab[["trace_id", "error_type"]], on="trace_id", how="inner")
    seen_types = set(wl["error_type"].astype(str).unique().tolist())
    unknown = sorted(seen_types - set(types))
    if unknown:
        raise AnalysisError(
            f"labels with error types outside the taxonomy: {', '.join(unknown)}",
            hint="analyse the run with the taxonomy it was labelled with",
        )
    # The tests and correlations run over the types that occur (a type never given has no
    # share to test); every table shows all of ``types``.
    return wl, [t for t in types if t in seen_types]


def _type_shifts(
    wl: pd.DataFrame,
    checkpoints: list[str],
    seen: list[str],
    dists: Mapping[str, ErrorDistribution],
    *,
    has_human: bool,
    level: float,
    notes: list[str],
) -> tuple[list[CheckpointShares], list[Shift]]:
    """Per-checkpoint shares and their shifts, both from one estimator: the corrected one
    (``ppi`` or ``pooled``, its covariance) when people's labels correct the shares, else the
    judge's (``JudgeOnly``, its variances over problems)."""
    if wl.empty:
        notes.append("no wrong trace has an ok label: the error-type analysis is empty")
    shares = checkpoint_shares(dists, checkpoints, seen)
    corrected = any(d.error_dist_corrected is not None for d in dists.values())
    if has_human and not corrected:
        notes.append(
            "human labels give no corrected distribution (none shares a trace with the "
            "judge's labels, or too few per checkpoint for the estimator): distributions are "
            "uncorrected"
        )
    if not corrected:
        if not has_human:
            notes.append("error-type distributions are the judge's, uncorrected (no human labels)")
        return shares, distribution_shifts(shares, seen, level=level)
    _corrected_notes(dists, notes)
    ordered = [dists.get(ck) for ck in checkpoints]
    return shares, estimator_shifts(ordered, checkpoints, seen, level=level)


def _correlations(
    graded: pd.DataFrame,
    checkpoints: list[str],
    shares: list[CheckpointShares],
    seen: list[str],
    sc: Mapping[str, float],
    k: int,
    train_metrics: pd.DataFrame | None,
    seed: int,
    notes: list[str],
) -> tuple[list[Correlation], dict[str, dict[str, float]], dict[str, dict[str, float | None]]]:
    """Spearman correlations across checkpoints (one BH family), the causes per checkpoint
    and the training metrics joined on ``step``."""
    values = cause_values(graded)
    causes_by_ck: dict[str, dict[str, float]] = {
        str(ck): {str(c): float(v) for c, v in row.items() if np.isfinite(v)}
        for ck, row in values.groupby("checkpoint", sort=False)[list(CAUSES)].mean().iterrows()
    }
    rng = np.random.default_rng(seed)
    sc_vec = np.array([sc.get(ck, np.nan) for ck in checkpoints])
    cors: list[Correlation] = []

    def corr(x: str, y: str, kind: str, xv: np.ndarray, yv: np.ndarray) -> None:
        rho, p = spearman_permutation(xv, yv, n_perm=_N_PERM, rng=rng)
        n = int((np.isfinite(xv) & np.isfinite(yv)).sum())
        note = None
        if rho is None:
            note = f"too few data: {n} checkpoints with both values (needs 5) or a constant series"
        cors.append(Correlation(x=x, y=y, kind=kind, n=n, rho=rho, p_value=p, p_raw=p, note=note))

    share_vec = {
        t: np.array(
            [cs.shares.get(t, np.nan) if cs.n_labelled else np.nan for cs in shares], dtype=float
        )
        for t in seen
    }
    for t in seen:
        corr(t, f"sc_gain@{k}", "type_vs_sc_gain", share_vec[t], sc_vec)
    for cause in CAUSES:
        series = np.array(
            [causes_by_ck.get(ck, {}).get(cause, np.nan) for ck in checkpoints], dtype=np.float64
        )
        corr(cause, f"sc_gain@{k}", "cause_vs_sc_gain", series, sc_vec)
    tm_by_ck: dict[str, dict[str, float | None]] = {}
    if train_metrics is not None:
        tm = train_metrics
        step_min = graded.groupby("checkpoint", sort=False)["step"].min().to_dict()
        ck_steps = [
            int(step_min[ck]) if ck in step_min and pd.notna(step_min[ck]) else None
            for ck in checkpoints
        ]
        tm_rows = tm.to_dict("index")
        if all(s is None for s in ck_steps):
            notes.append("--train-metrics given but the traces carry no 'step': nothing joined")
        for col in tm.columns:
            vals = np.array(
                [
                    float(tm_rows[s][col]) if s is not None and s in tm_rows else np.nan
                    for s in ck_steps
                ],
                dtype=float,
            )
            for ck, v in zip(checkpoints, vals, strict=True):
                tm_by_ck.setdefault(ck, {})[str(col)] = finite(v)
            corr(str(col), f"sc_gain@{k}", "train_vs_sc_gain", vals, sc_vec)
            for t in seen:
                corr(str(col), t, "train_vs_type", vals, share_vec[t])
    for c, adj in zip(cors, bh_adjust([c.p_raw for c in cors]), strict=True):
        c.p_value = adj
    if len(checkpoints) < 5:
        notes.append(
            f"only {len(checkpoints)} checkpoint(s): correlations across checkpoints need 5"
        )
    return cors, causes_by_ck, tm_by_ck


@dataclass
class _Parts:
    """What the per-checkpoint table is built from."""

    graded: pd.DataFrame
    shares: list[CheckpointShares]
    dists: Mapping[str, ErrorDistribution]
    metrics: pd.DataFrame
    metric_cis: Mapping[str, Mapping[str, Any]]
    votes: pd.DataFrame
    failed: pd.DataFrame
    mix: pd.DataFrame
    types: list[str]
    tm_by_ck: Mapping[str, dict[str, float | None]]
    causes_by_ck: Mapping[str, dict[str, float]]


def _summary(parts: _Parts, cs: CheckpointShares) -> CheckpointSummary:
    """One checkpoint's row of the table."""
    graded, ck = parts.graded, cs.checkpoint
    mine = graded[graded["checkpoint"] == ck]
    outcome = mine["outcome"].astype(str)
    failed = parts.failed[parts.failed["checkpoint"] == ck]
    fk = failed["kind"].value_counts()
    m = parts.mix[parts.mix["checkpoint"] == ck] if not parts.mix.empty else parts.mix
    step = mine["step"].min() if len(mine) else None
    d = parts.dists.get(ck)
    wrong_count = int((outcome == "wrong").sum())
    problems_count = int((parts.votes["checkpoint"] == ck).sum())
    has = d is not None and d.error_dist is not None
    corrected = d is not None and d.error_dist_corrected is not None
    ci: dict[str, tuple[float, float] | None] = {}
    if d is not None and has:
        ci = dict((d.error_dist_ci if corrected else d.error_dist_raw_ci) or {})
    metrics = parts.metrics
    return CheckpointSummary(
        checkpoint=ck,
        step=int(step) if step is not None and pd.notna(step) else None,
        n_problems=problems_count,
        n_samples=len(mine),
        n_wrong=wrong_count,
        n_labelled=cs.n_labelled,
        labelled_share=cs.n_labelled / wrong_count if wrong_count else None,
        metrics={
            c: finite(metrics.loc[ck, c]) if ck in metrics.index else None for c in metrics.columns
        },
        metrics_ci={
            c: (tuple(v) if v is not None else None)
            for c, v in parts.metric_cis.get(ck, {}).items()
        },
        error_dist=d.used if d is not None and has else None,
        error_dist_source="corrected" if corrected else "judge",
        error_dist_estimator=d.estimator if d is not None else "judge",
        n_human=d.n_human if d is not None and corrected else 0,
        error_dist_judge=dict(d.error_dist) if d is not None and d.error_dist else None,
        error_dist_ci=ci,
        error_dist_sim_ci=d.error_dist_sim_ci if d is not None else None,
        error_dist_corrected=(
            dict(d.error_dist_corrected)
            if d is not None and d.error_dist_corrected is not None
            else None
        ),
        not_identified=list(d.not_identified) if d is not None else [],
        majority_failures=int(fk.sum()),
        majority_failure_rate=int(fk.sum()) / problems_count if problems_count else None,
        failure_kinds={kd: int(fk.get(kd, 0)) for kd in FAILURE_KINDS},
        winner_mix=_mix(m[m["in_winner"]], parts.types) if len(m) else {},
        other_mix=_mix(m[~m["in_winner"]], parts.types) if len(m) else {},
        train_metrics=dict(parts.tm_by_ck.get(ck, {})),
        causes=dict(parts.causes_by_ck.get(ck, {})),
        n_no_answer=int((outcome == "no_answer").sum()),
        n_truncated=int((outcome == "truncated").sum()),
    )


def _failure_records(failed: pd.DataFrame, mix: pd.DataFrame) -> list[dict[str, Any]]:
    """One JSON-ready record per majority-vote failure."""
    win_ids = (
        mix[mix["in_winner"]].groupby(PROBLEM_KEY, sort=False)["trace_id"].agg(list)
        if not mix.empty
        else pd.Series(dtype=object)
    )
    out = []
    for row in failed.to_dict("records"):
        key = (row["checkpoint"], row["dataset"], row["problem_id"])
        out.append(
            {
                "checkpoint": row["checkpoint"],
                "dataset": row["dataset"],
                "problem_id": row["problem_id"],
                "kind": row["kind"],
                "n": int(row["n"]),
                "correct_votes": int(row["correct_votes"]),
                "top_wrong_answer": None
                if pd.isna(row["top_wrong_answer"])
                else str(row["top_wrong_answer"]),
                "top_wrong_count": int(row["top_wrong_count"]),
                "n_unanswered": int(row["n_unanswered"]),
                "winner_type": None if pd.isna(row["winner_type"]) else str(row["winner_type"]),
                "winner_trace_ids": list(win_ids.get(key, [])),
            }
        )
    return out


def link_analysis(
    labelled: LabelledRun,
    *,
    train_metrics: pd.DataFrame | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    on_stage: Callable[[str], None] | None = None,
    dataset: str | None = None,
) -> LinkResult:
    """Link error-type shifts to majority-vote failures across checkpoints.

    ``labelled`` is the label run joined to its graded table (``load_labelled_run``, or
    ``labelled_run_of`` for tables in memory): its labels, people's labels, taxonomy and its
    error distributions, whose estimators (``labelled.config.estimator``) make the shares
    shown, their intervals and the shift tests; ``dataset``: analyse that dataset's rows
    alone. ``train_metrics``: training metrics per step (``read_train_metrics``). ``ks`` are
    capped at the smallest number of samples of a problem; the headline ``sc_gain@k`` uses
    the largest. Every random step is seeded by ``labelled.config.seed``. Raises
    ``AnalysisError`` when the table is empty."""
    graded = labelled.table
    if dataset is not None:
        graded = graded[graded["dataset"].astype(str) == dataset].reset_index(drop=True)
    seed = labelled.config.seed
    if graded.empty:
        raise AnalysisError("the graded table is empty: nothing to analyse")
    checkpoints = list(order_checkpoints(graded))
    notes: list[str] = []
    n_min = int(graded.groupby(PROBLEM_KEY, sort=False).size().min())
    ks_used = sorted({min(int(k), n_min) for k in ks if int(k) >= 1} | {1})
    k = ks_used[-1]
    metrics, sc_changes, metric_cis = vote_table(graded, ks_used, seed)
    metric_rows = metrics.to_dict("index")
    sc = {ck: float(metric_rows[ck][f"sc_gain@{k}"]) for ck in checkpoints if ck in metric_rows}
    types = labelled.categories
    human = labelled.human or None
    lab = _labels_frame(labelled.labels)
    wl, seen = _typed_wrong(graded, lab, types)
    distributions = _distributions(labelled, dataset)
    dists = {d.checkpoint: d for d in distributions}

    _stage(on_stage, "error-type distributions and their shifts")
    shares, shifts = _type_shifts(
        wl,
        checkpoints,
        seen,
        dists,
        has_human=human is not None,
        level=labelled.config.level,
        notes=notes,
    )

    _stage(on_stage, "majority-vote failures")
    votes = problem_votes(graded)
    mix = failure_mix(votes, wl)
    failed = votes[votes["majority_failure"]].merge(winner_types(mix), on=PROBLEM_KEY, how="left")
    c_shifts = cause_shifts(cause_values(graded), checkpoints, seed=seed)

    _stage(on_stage, "correlations across checkpoints")
    cors, causes_by_ck, tm_by_ck = _correlations(
        graded, checkpoints, shares, seen, sc, k, train_metrics, seed, notes
    )

    _stage(on_stage, "per-problem regression")
    regression = problem_regression(votes, wl, seen, seed=seed)
    if regression.coefficients == [] and regression.note:
        notes.append(regression.note)
    transitions, _ = dominant_transitions(wl, checkpoints)
    notes += [f"{s.before} -> {s.after}: {s.note}" for s in shifts if s.note]

    _stage(on_stage, "findings")
    findings = build_findings(
        shifts=shifts,
        shares=shares,
        sc=sc,
        sc_change={ck: c.get(k) for ck, c in sc_changes.items()},
        k=k,
        failures=failed,
        correlations=cors,
        transitions=transitions,
        cause_shifts=c_shifts,
    )
    if not any(f.significant for f in findings):
        notes.append("no finding reaches significance (adjusted p < 0.05)")

    _stage(on_stage, "per-checkpoint tables")
    parts = _Parts(
        graded,
        shares,
        dists,
        metrics,
        metric_cis,
        votes,
        failed,
        mix,
        types,
        tm_by_ck,
        causes_by_ck,
    )
    return LinkResult(
        k=k,
        ks=ks_used,
        types=types,
        checkpoints=[_summary(parts, cs) for cs in shares],
        shifts=shifts,
        failures=_failure_records(failed, mix),
        correlations=cors,
        regression=regression,
        transitions=transitions,
        cause_shifts=c_shifts,
        vote_transitions=vote_transitions(graded, checkpoints),
        coverage=coverage_table(graded),
        agreement=_agreement(human, lab, types) if human is not None else None,
        findings=findings,
        notes=notes,
        confusion_homogeneity=next(
            (d.homogeneity for d in distributions if d.homogeneity is not None), None
        ),
    )


LINK_STAGES = 6
"""How many times ``link_analysis`` calls ``on_stage``: a progress bar's total."""


def _stage(on_stage: Callable[[str], None] | None, name: str) -> None:
    if on_stage is not None:
        on_stage(name)


def _corrected_notes(dists: Mapping[str, ErrorDistribution], notes: list[str]) -> None:
    used = sorted({d.estimator for d in dists.values() if d.error_dist_corrected is not None})
    n_human = {d.checkpoint: d.n_human for d in dists.values() if d.error_dist_corrected}
    if "ppi" in used:
        notes.append(
            "with human labels, shares, changes, shift tests and findings use the corrected "
            "distributions (ppi: prediction-powered inference per checkpoint from its own human "
            "labels: "
            + ", ".join(f"{ck} {n}" for ck, n in n_human.items())
            + "); the shift tests compare the corrected shares with their standard errors"
        )
    if "pooled" in used:
        notes.append(
            "with human labels, shares, changes, shift tests and findings use the corrected "
            "distributions (pooled: the judge's confusion measured on all "
            f"{max(n_human.values(), default=0)} human-labelled traces, inverted by least "
            "squares on the simplex; it assumes the judge errs the same way at every "
            "checkpoint); the shift tests compare the corrected shares with their bootstrap "
            "covariance"
        )
        test = next((d.homogeneity for d in dists.values() if d.homogeneity is not None), None)
        if test is not None:
            notes.append(f"test of one confusion at every checkpoint: {test.meaning}")
    for d in dists.values():
        if d.note:
            notes.append(f"{d.checkpoint}: {d.note}")
    missing = sorted({c for d in dists.values() for c in d.not_identified})
    if missing:
        notes.append(
            "not identified, so no corrected share is shown: "
            + ", ".join(missing)
            + " (no person gave the type, or the judge never uses the categories that would "
            "tell it apart from others)"
        )
