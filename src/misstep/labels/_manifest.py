"""The run manifest (``RUN_DIR/manifest.json``: how a label run was made, with the history of
every earlier run into the directory) and the run's taxonomy read back from it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from misstep.errors import LabelStoreError, TaxonomyError
from misstep.labels._rundir import MANIFEST_FILE, RunDir, labels_path
from misstep.taxonomy import Taxonomy, load_taxonomy

__all__ = [
    "MANIFEST_VERSION",
    "InputFile",
    "RunManifest",
    "add_to_history",
    "make_manifest",
    "read_manifest",
    "run_taxonomy",
    "write_manifest",
]

MANIFEST_VERSION = 2


class InputFile(BaseModel):
    """One input file of a run, as it was when the run started."""

    path: str
    """Absolute path."""
    size: int
    """Size in bytes."""
    mtime: float
    """Modification time (seconds since the epoch)."""

    @classmethod
    def of(cls, path: str | Path) -> InputFile:
        resolved = Path(path).resolve()
        stat = resolved.stat()
        return cls(path=str(resolved), size=stat.st_size, mtime=stat.st_mtime)


class RunManifest(BaseModel):
    """``RUN_DIR/manifest.json``: how the labels of a run were made. Never holds an API key."""

    model_config = ConfigDict(extra="ignore")

    version: int = MANIFEST_VERSION
    """Manifest format version."""
    inputs: list[InputFile] = Field(default_factory=list)
    """The traces files labelled."""
    input_sha256: str | None = None
    """SHA-256 of the labelled input's content (``misstep.rollouts.input_digest``): the label
    run belongs to this input, and the analysis commands refuse another one."""
    judge_config: dict[str, Any] = Field(default_factory=dict)
    """The judge configuration (backend, model, URL, sampling, limits); never a key."""
    judge: str = ""
    """Judge id written into every label of this configuration."""
    taxonomy_id: str = ""
    """Taxonomy id, e.g. ``math-v1``."""
    taxonomy_version: str = ""
    """Taxonomy version."""
    taxonomy_hash: str = ""
    """Content hash of the taxonomy."""
    taxonomy_path: str | None = None
    """Absolute path of the ``--taxonomy`` file; None for the built-in one. The analysis
    commands read the run's taxonomy from here (checked against ``taxonomy_hash``)."""
    prompt_hash: str = ""
    """Hash of the prompt templates."""
    seed: int = 0
    """Global seed from which per-request seeds are derived."""
    server_model: str | None = None
    """The model id the judge server reported, when it reports one."""
    versions: dict[str, str | None] = Field(default_factory=dict)
    """Versions of misstep and of the backend libraries (openai, vllm)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Pipeline options: include_correct, limit, input_format, regrade, skip_invalid."""
    created_at: str = ""
    """When this run started, UTC ISO 8601."""
    server: dict[str, Any] = Field(default_factory=dict)
    """What the judge server said of itself: ``url``, ``version`` (``GET /version``),
    ``max_model_len``, and ``batch_invariant`` as the user declared it."""
    history: list[dict[str, Any]] = Field(default_factory=list)
    """Every earlier run into this directory, oldest first, each as its manifest was (without
    its own history): a manifest is never overwritten, only added to."""


def make_manifest(
    traces_path: Path,
    *,
    digest: str,
    judge: str,
    judge_config: Mapping[str, Any],
    taxonomy: Taxonomy,
    prompt_hash: str,
    seed: int,
    options: Mapping[str, Any],
    server_model: str | None = None,
    server: Mapping[str, Any] | None = None,
) -> RunManifest:
    """The manifest of a run over ``traces_path`` (SHA-256 ``digest``) by the judge ``judge``
    (its id) configured as ``judge_config`` (as the judge records it: no credential), with
    ``taxonomy`` and the prompt templates' ``prompt_hash``; ``options``: the run's recorded
    options; ``server_model`` and ``server``: what the judge's server said of itself. The
    versions of misstep and the backend libraries, and the time, are added here."""
    return RunManifest(
        inputs=[InputFile.of(traces_path)] if traces_path.exists() else [],
        input_sha256=digest,
        judge_config=dict(judge_config),
        judge=judge,
        taxonomy_id=str(taxonomy.id),
        taxonomy_version=str(taxonomy.version),
        taxonomy_hash=taxonomy.hash,
        taxonomy_path=taxonomy.source,
        prompt_hash=prompt_hash,
        seed=seed,
        server_model=server_model,
        versions={name: _pkg_version(name) for name in ("misstep", "openai", "vllm", "ray")},
        options=dict(options),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        server=dict(server or {}),
    )


def _pkg_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def add_to_history(previous: RunManifest | None, new: RunManifest) -> RunManifest:
    """``new`` with the history of ``previous`` and ``previous`` itself appended to it."""
    if previous is None:
        return new
    entry = previous.model_dump(mode="json", exclude={"history"})
    return new.model_copy(update={"history": [*previous.history, entry]})


def write_manifest(run_dir: str | Path, manifest: RunManifest) -> Path:
    """Write ``manifest.json`` atomically (temp file + rename): never half a manifest."""
    path = RunDir(Path(run_dir)).manifest
    tmp = path.with_name(f".{MANIFEST_FILE}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(orjson.dumps(manifest.model_dump(mode="json"), option=orjson.OPT_INDENT_2))
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise LabelStoreError(path=path, reason=f"cannot write it: {exc}") from None
    return path


def read_manifest(run_dir: str | Path) -> RunManifest | None:
    """The run's manifest, or None when the directory has none (it is optional)."""
    path = RunDir(Path(run_dir)).manifest
    if not path.exists():
        return None
    try:
        return RunManifest.model_validate(orjson.loads(path.read_bytes()))
    except (orjson.JSONDecodeError, ValidationError) as exc:
        raise LabelStoreError(path=path, reason=f"not a valid manifest: {exc}") from None


def run_taxonomy(labels: str | Path, taxonomy: str | Path | None = None) -> Taxonomy:
    """The taxonomy a label run was made with.

    With ``taxonomy`` (a YAML file) that file, which must have the hash the run's manifest
    records. Without it: the file the manifest names (``taxonomy_path``), checked by hash; the
    built-in one for a run labelled with it or without a manifest. A moved or changed file,
    or a run made with a file whose path was not recorded, raises ``TaxonomyError`` saying to
    pass ``--taxonomy FILE``."""
    run_dir = labels_path(labels).parent
    manifest = read_manifest(run_dir) if run_dir.is_dir() else None
    recorded = manifest.taxonomy_hash if manifest is not None else ""
    what = (
        f"taxonomy {manifest.taxonomy_id} version {manifest.taxonomy_version} (hash {recorded})"
        if manifest is not None
        else ""
    )
    if taxonomy is not None:
        tax = load_taxonomy(taxonomy)
        return _same_hash(
            tax,
            recorded,
            path=taxonomy,
            reason=f"its hash is {tax.hash}, but the label run {run_dir} was made with {what}",
            hint="pass the taxonomy file the run was labelled with, or leave --taxonomy "
            "out to use the one the run records",
        )
    path = manifest.taxonomy_path if manifest is not None else None
    if path:
        if not Path(path).is_file():
            raise TaxonomyError(
                path=path,
                reason=f"the label run {run_dir} was made with this taxonomy file ({what}), "
                "which no longer exists",
                hint=f"pass --taxonomy FILE with the moved file (its hash must be {recorded})",
            )
        tax = load_taxonomy(path)
        return _same_hash(
            tax,
            recorded,
            path=path,
            reason=f"changed since the label run {run_dir} was made with it: its hash is "
            f"now {tax.hash}, the run's is {recorded}",
            hint="restore the file, or pass --taxonomy FILE with the version the run used",
        )
    builtin = load_taxonomy(None)
    return _same_hash(
        builtin,
        recorded,
        path=run_dir,
        reason=f"the label run was made with {what}, not the built-in {builtin.id} "
        f"(hash {builtin.hash}), and its manifest does not say which file",
        hint="pass --taxonomy FILE with the taxonomy the run was labelled with",
    )


def _same_hash(
    tax: Taxonomy, recorded: str, *, path: str | Path, reason: str, hint: str
) -> Taxonomy:
    """``tax`` when the run records no hash or the same one; else a ``TaxonomyError``."""
    if recorded and tax.hash != recorded:
        raise TaxonomyError(path=path, reason=reason, hint=hint)
    return tax
