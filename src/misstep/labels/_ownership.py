"""A label run belongs to the input it was made from: the one check every command runs before
it joins a run's labels to a graded table."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

from misstep.errors import LabelStoreError
from misstep.labels._manifest import read_manifest
from misstep.labels._rundir import labels_path

__all__ = ["check_labels_input"]

_HINT = (
    "label these traces with `misstep label TRACES --out NEW_RUN_DIR`, or pass "
    "--labels-from-other-input to join a run made from another input (a subset, say) by trace_id"
)


def check_labels_input(
    labels: str | Path,
    stored: Mapping[str, object],
    *,
    input_path: str | Path,
    input_sha256: str,
    trace_ids: Collection[str],
    allow_other_input: bool = False,
) -> int:
    """Raise ``LabelStoreError`` unless the run at ``labels`` was made from this input.

    The manifest's ``input_sha256`` must equal ``input_sha256``. A run without one (made by an
    older misstep, or a bare labels.jsonl) must label only traces of this input. With
    ``allow_other_input`` any run is accepted as long as some of its traces are in the input.
    Returns how many labelled traces are not in the input (0 unless ``allow_other_input``)."""
    path = Path(labels)
    run_dir = path if path.is_dir() else path.parent
    manifest = read_manifest(run_dir)
    recorded = manifest.input_sha256 if manifest is not None else None
    made_from = manifest.inputs[0].path if manifest is not None and manifest.inputs else None
    ids = trace_ids if isinstance(trace_ids, set | frozenset) else set(trace_ids)
    outside = sum(1 for t in stored if t not in ids)
    if allow_other_input:
        if stored and outside == len(stored):
            raise LabelStoreError(
                path=labels_path(path),
                reason=f"none of its {len(stored)} labelled traces is in {input_path}",
                hint="check that the run was made from these traces (trace_id values differ)",
            )
        return outside
    if recorded is not None and recorded != input_sha256:
        raise LabelStoreError(
            path=run_dir,
            reason=f"this label run was made from {made_from or 'another input'} "
            f"(sha256 {recorded[:12]}), not from {input_path} (sha256 {input_sha256[:12]})",
            hint=_HINT,
        )
    if recorded is None and outside:
        raise LabelStoreError(
            path=labels_path(path),
            reason=f"{outside} of its {len(stored)} labelled traces are not in {input_path}: "
            "it was made from another input",
            hint=_HINT,
        )
    return outside
