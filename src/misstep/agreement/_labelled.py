"""A label run as every analysis reads it: the one loader behind ``summary``, ``link``,
``report``, ``agree`` and ``sample``, so that one run gives one answer whichever command
reads it.

``load_labelled_run`` gathers

- the current labels of one judge configuration (``read_label_rows`` / ``read_labels`` with
  the judge chosen), checked to belong to the input (``check_labels_input``);
- the run's taxonomy: the ``--taxonomy`` file the run was labelled with (its path and hash are
  in the manifest), never silently the built-in one; a judge label whose type is not a key of
  it is an error;
- people's labels through the one reader (``misstep.labels.read_human_labels``) checked
  against that taxonomy: the files given and the run's own ``RUN_DIR/human/*.jsonl``;
- the label budget's inclusion probabilities, from the stored records;

and ``LabelledRun.distributions`` computes the error distributions, raw and corrected, with
their intervals once (``error_distributions``: stratified by dataset when a checkpoint pools
its datasets, ``n_boot`` resamples).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from misstep.agreement._config import AnalysisConfig
from misstep.agreement._errordist import ALL_DATASETS, ErrorDistribution, error_distributions
from misstep.errors import AnalysisError, LabelStoreError
from misstep.labels import (
    HumanLabel,
    LabelRow,
    LabelStatus,
    StoredLabel,
    check_labels_input,
    gather_human_files,
    labels_path,
    read_human_labels,
    read_label_rows,
    read_labels,
    run_taxonomy,  # moved beside the run manifest; re-exported here
)
from misstep.metrics import CheckpointMetrics, ProblemCounts, problem_counts, vote_metrics
from misstep.rollouts import GradedRun
from misstep.taxonomy import Taxonomy, load_taxonomy

__all__ = [
    "LabelledRun",
    "LabelledSummary",
    "add_error_distributions",
    "labelled_run_of",
    "labelled_summary",
    "load_labelled_run",
    "run_taxonomy",
]


@dataclass
class LabelledRun:
    """What every analysis needs from a label run joined to its graded input."""

    run: GradedRun | None
    """The graded input the labels belong to (None: labels alone, as ``agree`` reads them;
    no distributions then)."""
    labels_path: Path
    """The run directory (or labels.jsonl) given."""
    labels: Mapping[str, StoredLabel | LabelRow]
    """trace_id -> current label of the chosen judge configuration (``StoredLabel`` records
    when loaded with ``full``, else ``LabelRow``: status, type and inclusion probability)."""
    taxonomy: Taxonomy
    """The run's taxonomy."""
    human: list[HumanLabel] = field(default_factory=list)
    """People's labels, every type a key of ``taxonomy``."""
    human_files: list[Path] = field(default_factory=list)
    """The files they were read from (the ones given, then ``RUN_DIR/human/*.jsonl``)."""
    inclusion: dict[str, float] = field(default_factory=dict)
    """trace_id -> the label budget's inclusion probability (empty: every trace judged)."""
    outside: int = 0
    """Labelled traces that are not in the input (left out; only with ``allow_other_input``)."""
    config: AnalysisConfig = field(default_factory=AnalysisConfig)
    """How its analyses estimate: resamples, seed, level, the estimator of the shares."""
    _dists: dict[bool, list[ErrorDistribution]] = field(
        default_factory=dict, init=False, repr=False
    )

    @property
    def table(self) -> pd.DataFrame:
        """The graded table; ``AnalysisError`` for a run loaded without its input."""
        if self.run is None:
            raise AnalysisError(
                f"the label run {self.labels_path} was loaded without its traces",
                hint="pass the traces file the run was labelled from",
            )
        return self.run.table

    @property
    def records(self) -> dict[str, StoredLabel]:
        """The whole stored records; ``AnalysisError`` unless loaded with ``full``."""
        out = {t: lab for t, lab in self.labels.items() if isinstance(lab, StoredLabel)}
        if len(out) != len(self.labels):
            raise AnalysisError(
                f"the label run {self.labels_path} was loaded without its records' text",
                hint="load it with full=True",
            )
        return out

    @property
    def categories(self) -> list[str]:
        """The taxonomy's keys, in its order: every table shows these."""
        return list(self.taxonomy.keys)

    def with_human(self, human: list[HumanLabel]) -> LabelledRun:
        """The same run with ``human`` as its people's labels (the review app's, which grow as
        people label): its distributions are computed afresh, by the same estimator."""
        return replace(self, human=list(human))

    def distributions(self, *, pool_datasets: bool) -> list[ErrorDistribution]:
        """Per (checkpoint, dataset), or per checkpoint with ``pool_datasets`` (stratified by
        dataset): the error distributions of wrong traces, raw and (with people's labels)
        corrected, with their intervals. Computed once per grouping."""
        if pool_datasets not in self._dists:
            self._dists[pool_datasets] = error_distributions(
                self.table,
                self.labels,
                self.categories,
                human=self.human or None,
                config=self.config,
                pool_datasets=pool_datasets,
            )
        return self._dists[pool_datasets]

    def weight(self, trace_id: str) -> float:
        """Inverse inclusion probability of a trace in the label budget (1 without one)."""
        prob = self.inclusion.get(trace_id)
        return 1.0 / prob if prob else 1.0


def _check_types(
    labels: Mapping[str, StoredLabel | LabelRow], taxonomy: Taxonomy, where: Path
) -> None:
    keys = set(taxonomy.keys)
    bad = {
        t: str(lab.error_type)
        for t, lab in labels.items()
        if lab.status == LabelStatus.OK
        and lab.error_type is not None
        and lab.error_type not in keys
    }
    if bad:
        first = min(bad)
        raise LabelStoreError(
            path=where,
            reason=f"{len(bad)} ok label(s) have an error type that is not a key of the run's "
            f"taxonomy {taxonomy.id}: {sorted(set(bad.values()))} (first: trace {first!r}); "
            "allowed: " + ", ".join(taxonomy.keys),
            hint="pass the taxonomy the run was labelled with (--taxonomy FILE)",
        )


def load_labelled_run(
    labels: str | Path,
    run: GradedRun | None,
    *,
    judge: str | None = None,
    human: Sequence[str | Path] = (),
    taxonomy: str | Path | None = None,
    allow_other_input: bool = False,
    full: bool = False,
    config: AnalysisConfig | None = None,
) -> LabelledRun:
    """The label run at ``labels`` (a run directory or its labels.jsonl) joined to ``run``
    (None: the labels alone, without the input check or distributions).

    ``judge`` chooses one judge configuration (required when the file holds several);
    ``human`` adds people's label files to the run's own ``RUN_DIR/human/*.jsonl``;
    ``taxonomy`` overrides the run's taxonomy file (same hash required, see ``run_taxonomy``);
    ``allow_other_input`` accepts a run made from another input, joined by trace_id; ``full``
    keeps the whole ``StoredLabel`` records (evidence, steps: what the report shows), else
    only status, type and inclusion probability (memory never grows with the judge's text).
    Raises ``LabelStoreError`` for a run of another input or a judge type outside the
    taxonomy, ``TaxonomyError`` for a taxonomy that moved or changed, ``InvalidRecordError``
    (file, line, field, value, allowed keys) for a person's type outside it. ``config``: how
    its analyses estimate (``AnalysisConfig``; its defaults when None)."""
    tax = run_taxonomy(labels, taxonomy)
    stored: Mapping[str, StoredLabel | LabelRow] = (
        read_labels(labels, judge=judge) if full else read_label_rows(labels, judge=judge)
    )
    outside = 0
    if run is not None:
        outside = check_labels_input(
            labels,
            stored,
            input_path=run.input_path,
            input_sha256=run.input_sha256,
            trace_ids=set(run.table["trace_id"].tolist()),
            allow_other_input=allow_other_input,
        )
    _check_types(stored, tax, labels_path(labels))
    files = gather_human_files(human, [labels])
    people = [row for path in files for row in read_human_labels(path, keys=tax.keys)]
    inclusion = {
        t: float(prob)
        for t, lab in stored.items()
        if (prob := getattr(lab, "inclusion_prob", None)) is not None
    }
    return LabelledRun(
        run=run,
        labels_path=Path(labels),
        labels=stored,
        taxonomy=tax,
        human=people,
        human_files=files,
        inclusion=inclusion,
        outside=outside,
        config=config or AnalysisConfig(),
    )


def labelled_run_of(
    graded: pd.DataFrame,
    labels: Mapping[str, StoredLabel | LabelRow] | pd.DataFrame,
    *,
    human: Sequence[HumanLabel] = (),
    taxonomy: Taxonomy | None = None,
    config: AnalysisConfig | None = None,
) -> LabelledRun:
    """A ``LabelledRun`` from tables in memory (scripts, tests, benchmarks): ``graded`` with
    the ``GRADED_COLUMNS``, ``labels`` per trace (or a DataFrame with ``trace_id``,
    ``error_type`` and optionally ``status``, ``first_error_step``, ``evidence``), people's
    labels, the taxonomy (built-in when None), how its analyses estimate (``config``). No input
    or taxonomy-hash check: nothing was read from disk."""
    if isinstance(labels, pd.DataFrame):
        status = labels["status"] if "status" in labels.columns else ["ok"] * len(labels)
        extra = {c: labels[c] for c in ("first_error_step", "evidence") if c in labels.columns}
        stored: dict[str, StoredLabel | LabelRow] = {}
        for i, (t, st, e) in enumerate(
            zip(labels["trace_id"], status, labels["error_type"], strict=True)
        ):
            more = {
                c: (v.item() if hasattr(v, "item") else v)
                for c, col in extra.items()
                if pd.notna(v := col.iloc[i])
            }
            stored[str(t)] = StoredLabel(
                trace_id=str(t),
                judge="memory",
                status=LabelStatus(str(st)),
                error_type=None if pd.isna(e) else str(e),
                **more,
            )
        labels = stored
    tax = taxonomy if taxonomy is not None else load_taxonomy(None)
    _check_types(labels, tax, Path("<memory>"))
    return LabelledRun(
        run=GradedRun(table=graded, input_path=Path("<memory>"), input_sha256="", from_cache=False),
        labels_path=Path("<memory>"),
        labels=labels,
        taxonomy=tax,
        human=list(human),
        inclusion={
            t: float(p)
            for t, lab in labels.items()
            if (p := getattr(lab, "inclusion_prob", None)) is not None
        },
        config=config or AnalysisConfig(),
    )


def add_error_distributions(
    records: list[dict[str, Any]],
    dists: Sequence[ErrorDistribution],
    *,
    corrected: bool,
    flat: bool = False,
) -> None:
    """Add ``n_labelled``, ``labelled_share``, ``error_dist``, ``error_dist_raw_ci`` (and with
    ``corrected`` ``error_dist_corrected``, ``error_dist_ci``) to each summary record in place,
    matched on checkpoint and dataset (``flat``: as ``error_dist.<type>`` columns, for CSV)."""
    by_group = {(d.checkpoint, d.dataset): d for d in dists}
    for record in records:
        d = by_group.get((str(record.get("checkpoint")), str(record.get("dataset"))))
        record["n_labelled"] = d.n_labelled if d is not None else 0
        record["labelled_share"] = d.labelled_share if d is not None else None
        record["error_dist"] = d.error_dist if d is not None else None
        record["error_dist_raw_ci"] = d.error_dist_raw_ci if d is not None else None
        if corrected:
            record["error_dist_corrected"] = d.error_dist_corrected if d is not None else None
            record["error_dist_ci"] = d.error_dist_ci if d is not None else None
            record["error_dist_estimator"] = d.estimator if d is not None else None
            record["n_human"] = d.n_human if d is not None else 0
            if d is not None and d.error_dist_sim_ci is not None:
                record["error_dist_sim_ci"] = d.error_dist_sim_ci
            if d is not None and d.homogeneity is not None:
                record["confusion_homogeneity_p"] = d.homogeneity.p_value
        if flat:
            for name in (
                "error_dist",
                "error_dist_raw_ci",
                "error_dist_corrected",
                "error_dist_ci",
                "error_dist_sim_ci",
            ):
                for key, value in (record.pop(name, None) or {}).items():
                    record[f"{name}.{key}"] = value


@dataclass
class LabelledSummary:
    """``misstep summary --labels`` as data: the vote metrics per checkpoint (x dataset) and
    the error distributions of the same groups."""

    rows: list[CheckpointMetrics]
    """The vote metrics (``misstep.metrics.vote_metrics``)."""
    distributions: list[ErrorDistribution]
    """The error distributions (``LabelledRun.distributions``), pooled over datasets when the
    rows are."""
    corrected: bool
    """Whether people's labels were given (the records carry the corrected shares)."""

    def records(self, *, flat: bool = False) -> list[dict[str, Any]]:
        """One JSON-ready record per row, its error distribution added
        (``add_error_distributions``; ``flat``: as ``error_dist.<type>`` columns, for CSV)."""
        records: list[dict[str, Any]] = [row.to_json() for row in self.rows]
        add_error_distributions(records, self.distributions, corrected=self.corrected, flat=flat)
        return records


def labelled_summary(
    labelled: LabelledRun,
    ks: Sequence[int],
    *,
    by_dataset: bool | None = None,
    counts: ProblemCounts | None = None,
) -> LabelledSummary:
    """``misstep summary --labels`` as data: the vote metrics of ``labelled``'s table per
    checkpoint (per checkpoint and dataset with ``by_dataset``; None: as
    ``misstep.metrics.vote_metrics`` decides), seeded by its config, and its error
    distributions of the same groups (pooled checkpoints stratified by dataset). ``counts``:
    the table's ``problem_counts`` when the caller has them already."""
    table = counts if counts is not None else problem_counts(labelled.table)
    rows = vote_metrics(table, list(ks), by_dataset=by_dataset, seed=labelled.config.seed)
    pool = bool(rows) and all(row.dataset == ALL_DATASETS for row in rows)
    return LabelledSummary(
        rows=rows,
        distributions=labelled.distributions(pool_datasets=pool),
        corrected=bool(labelled.human),
    )
