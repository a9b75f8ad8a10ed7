"""A label run as every analysis reads it: the current labels of one judge configuration
checked against their input, people's labels, and the error distributions computed once.

``summary``, ``link``, ``report``, ``agree`` and ``sample`` all start from
``load_labelled_run``, so one run gives one answer whichever command reads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from misstep.agreement._errordist import ErrorDistribution, error_distributions
from misstep.agreement._sampling import read_annotations
from misstep.labels import HumanLabel, LabelRow, StoredLabel, check_labels_input, read_label_rows
from misstep.rollouts import GradedRun
from misstep.taxonomy import Taxonomy, load_taxonomy

__all__ = ["LabelledRun", "add_error_distributions", "load_labelled_run"]


@dataclass
class LabelledRun:
    """What every analysis needs from a label run joined to its graded input."""

    run: GradedRun
    """The graded input the labels belong to."""
    labels_path: Path
    """The run directory (or labels.jsonl) given."""
    labels: Mapping[str, StoredLabel | LabelRow]
    """trace_id -> current label of the chosen judge configuration."""
    taxonomy: Taxonomy
    """The run's taxonomy."""
    human: list[HumanLabel]
    """People's labels."""
    outside: int = 0
    """Labelled traces that are not in the input (left out; only with ``allow_other_input``)."""
    seed: int = 0
    """Seed of the distributions' bootstrap."""
    _dists: dict[bool, list[ErrorDistribution]] = field(default_factory=dict, repr=False)

    @property
    def categories(self) -> list[str]:
        """The taxonomy's keys, in its order."""
        return list(self.taxonomy.keys)

    def distributions(self, *, pool_datasets: bool) -> list[ErrorDistribution]:
        """Per (checkpoint, dataset), or per checkpoint with ``pool_datasets``: the error
        distributions, raw and (with people's labels) corrected; computed once."""
        if pool_datasets not in self._dists:
            self._dists[pool_datasets] = error_distributions(
                self.run.table,
                self.labels,
                self.categories,
                human=self.human or None,
                seed=self.seed,
                pool_datasets=pool_datasets,
            )
        return self._dists[pool_datasets]


def load_labelled_run(
    labels: str | Path,
    run: GradedRun,
    *,
    judge: str | None = None,
    human: Sequence[str | Path] = (),
    allow_other_input: bool = False,
    seed: int = 0,
) -> LabelledRun:
    """The label run at ``labels`` joined to ``run``: its current labels (status and type
    only: memory never grows with the judge's text), checked to belong to the input, and the
    people's labels of ``human``."""
    stored = read_label_rows(labels, judge=judge)
    outside = check_labels_input(
        labels,
        stored,
        input_path=run.input_path,
        input_sha256=run.input_sha256,
        trace_ids=set(run.table["trace_id"].tolist()),
        allow_other_input=allow_other_input,
    )
    people = [row for path in human for row in read_annotations(path)]
    return LabelledRun(
        run=run,
        labels_path=Path(labels),
        labels=stored,
        taxonomy=load_taxonomy(None),
        human=people,
        outside=outside,
        seed=seed,
    )


def add_error_distributions(
    records: list[dict[str, Any]],
    dists: Sequence[ErrorDistribution],
    *,
    corrected: bool,
    flat: bool = False,
) -> None:
    """Add ``n_labelled``, ``labelled_share``, ``error_dist`` (and with ``corrected``
    ``error_dist_corrected``, ``error_dist_ci``) to each summary record in place, matched on
    checkpoint and dataset (``flat``: as ``error_dist.<type>`` columns, for CSV)."""
    by_group = {(d.checkpoint, d.dataset): d for d in dists}
    for record in records:
        d = by_group.get((str(record.get("checkpoint")), str(record.get("dataset"))))
        record["n_labelled"] = d.n_labelled if d is not None else 0
        record["labelled_share"] = d.labelled_share if d is not None else None
        record["error_dist"] = d.error_dist if d is not None else None
        if corrected:
            record["error_dist_corrected"] = d.error_dist_corrected if d is not None else None
            record["error_dist_ci"] = d.error_dist_ci if d is not None else None
        if flat:
            for name in ("error_dist", "error_dist_corrected", "error_dist_ci"):
                for key, value in (record.pop(name, None) or {}).items():
                    record[f"{name}.{key}"] = value
