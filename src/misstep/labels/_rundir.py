"""A label run directory: the name of every file in it, spelled here and nowhere else, and
:class:`RunDir`, which says where each thing lives::

    RUN_DIR/
      labels.jsonl                     the judge's labels (LabelStore; read_labels)
      manifest.json                    how they were made (write_manifest; read_manifest)
      .lock                            one writer at a time (run_dir_lock)
      rejects.jsonl                    invalid input rows (--skip-invalid)
      selections.jsonl                 misstep select's records (LabelRun.selections)
      requests.jsonl                   export-requests' batch requests, with
      requests.parquet                 the same rows for Ray Data and
      requests.tries.jsonl             each request's attempts before
      human/<annotator>.jsonl          people's labels (HumanLabelWriter; read_human_labels)
      human/reveals/<annotator>.jsonl  the judge's label shown to a person in blind mode

Every package reads and writes these through ``misstep.labels`` (``tests/labels/
test_run_files.py`` fails on a file name spelled anywhere else).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from misstep.errors import LabelStoreError, OptionError

__all__ = [
    "ANNOTATOR_PATTERN",
    "HUMAN_DIR",
    "LABELS_FILE",
    "LOCK_FILE",
    "MANIFEST_FILE",
    "REJECTS_FILE",
    "REQUESTS_FILE",
    "REQUESTS_PARQUET",
    "REQUEST_TRIES_FILE",
    "RESERVED_NAMES",
    "REVEALS_DIR",
    "RUN_DIR_NAMES",
    "SELECTIONS_FILE",
    "RunDir",
    "check_annotator",
    "find_label_run",
    "gather_human_files",
    "labels_path",
]

LABELS_FILE = "labels.jsonl"
"""The judge's labels, one ``StoredLabel`` per line, append-only (the last per trace wins)."""
MANIFEST_FILE = "manifest.json"
"""How the labels were made (``RunManifest``), written atomically."""
LOCK_FILE = ".lock"
"""Held (``flock``) by the one process writing the directory."""
REJECTS_FILE = "rejects.jsonl"
"""Invalid input rows, with ``--skip-invalid``."""
SELECTIONS_FILE = "selections.jsonl"
"""``misstep select``'s records, one per majority-vote failure (``LabelRun.selections``)."""
REQUESTS_FILE = "requests.jsonl"
"""``export-requests``: one OpenAI batch request per trace to judge."""
REQUESTS_PARQUET = "requests.parquet"
"""The same requests as a table, for Ray Data."""
REQUEST_TRIES_FILE = "requests.tries.jsonl"
"""What each exported request is: its attempts before."""
HUMAN_DIR = "human"
"""People's labels of a run: ``RUN_DIR/human/<annotator>.jsonl`` (``HumanLabel`` lines)."""
REVEALS_DIR = "reveals"
"""Reveals of the judge's label in blind mode: ``RUN_DIR/human/reveals/<annotator>.jsonl``
(a folder of its own, so no reader of people's labels takes them for labels)."""

RUN_DIR_NAMES = (
    LABELS_FILE,
    MANIFEST_FILE,
    LOCK_FILE,
    REJECTS_FILE,
    SELECTIONS_FILE,
    REQUESTS_FILE,
    REQUESTS_PARQUET,
    REQUEST_TRIES_FILE,
    HUMAN_DIR,
    REVEALS_DIR,
)
"""Every name in a run directory (what the fitness test looks for outside ``labels``)."""

ANNOTATOR_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")
"""An annotator name becomes a file name: letters, digits and ``._@+-``, no path separator,
not starting with a dot."""
RESERVED_NAMES = frozenset({"none", "null", "nil", "undefined", "nan", "true", "false"})
"""Names no person has (any case): what a missing name turns into when some code writes it
as text (Python's ``str(None)``, JSON's ``null``, JavaScript's ``undefined``), so a request
without a name can never match a stored person."""


def check_annotator(name: str, option: str = "annotator") -> str:
    """``name`` when it is a valid annotator name, else OptionError."""
    if (
        not isinstance(name, str)
        or not ANNOTATOR_PATTERN.fullmatch(name)
        or name.lower() in RESERVED_NAMES
    ):
        raise OptionError(
            option=option,
            value=name,
            allowed="1-64 letters, digits or ._@+- (no path separator), starting with a "
            "letter or digit, and not " + ", ".join(sorted(RESERVED_NAMES)),
        )
    return name


def labels_path(run_dir_or_file: str | Path) -> Path:
    """``RUN_DIR/labels.jsonl`` for a directory, the path itself for a file."""
    path = Path(run_dir_or_file)
    return path / LABELS_FILE if path.is_dir() or path.suffix != ".jsonl" else path


@dataclass(frozen=True)
class RunDir:
    """Where each thing of a label run directory lives (paths only: nothing is read or made
    here; the readers and writers of ``misstep.labels`` take these paths)."""

    path: Path
    """The directory."""

    @classmethod
    def of(cls, run_dir_or_file: str | Path) -> RunDir:
        """The run directory of a run directory or of its labels file."""
        return cls(labels_path(run_dir_or_file).parent)

    @property
    def labels(self) -> Path:
        """``labels.jsonl``."""
        return self.path / LABELS_FILE

    @property
    def manifest(self) -> Path:
        """``manifest.json``."""
        return self.path / MANIFEST_FILE

    @property
    def lock(self) -> Path:
        """``.lock``."""
        return self.path / LOCK_FILE

    @property
    def rejects(self) -> Path:
        """``rejects.jsonl``."""
        return self.path / REJECTS_FILE

    @property
    def selections(self) -> Path:
        """``selections.jsonl``."""
        return self.path / SELECTIONS_FILE

    @property
    def requests(self) -> Path:
        """``requests.jsonl``."""
        return self.path / REQUESTS_FILE

    @property
    def requests_parquet(self) -> Path:
        """``requests.parquet``."""
        return self.path / REQUESTS_PARQUET

    @property
    def request_tries(self) -> Path:
        """``requests.tries.jsonl``."""
        return self.path / REQUEST_TRIES_FILE

    @property
    def human_dir(self) -> Path:
        """``human/``: people's labels, one file per annotator."""
        return self.path / HUMAN_DIR

    @property
    def reveals_dir(self) -> Path:
        """``human/reveals/``: the reveals of the judge, one file per annotator."""
        return self.human_dir / REVEALS_DIR

    def human_file(self, annotator: str) -> Path:
        """``human/<annotator>.jsonl`` (the name checked by ``check_annotator``: it never
        reaches the file system otherwise)."""
        return self.human_dir / f"{check_annotator(annotator)}.jsonl"

    def reveals_file(self, annotator: str) -> Path:
        """``human/reveals/<annotator>.jsonl`` (the name checked as for ``human_file``)."""
        return self.reveals_dir / f"{check_annotator(annotator)}.jsonl"

    def human_files(self) -> list[Path]:
        """``human/*.jsonl``, sorted: the people's labels kept with the run (none when the
        folder does not exist)."""
        return _jsonl_files(self.human_dir)

    def reveal_files(self) -> list[Path]:
        """``human/reveals/*.jsonl``, sorted."""
        return _jsonl_files(self.reveals_dir)


def _jsonl_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.jsonl") if p.is_file())


def gather_human_files(given: Iterable[str | Path], runs: Iterable[str | Path] = ()) -> list[Path]:
    """People's label files of an analysis: the ``given`` ones, then each run's own
    ``RUN_DIR/human/*.jsonl`` (``runs``: run directories or their labels files), each file
    once (by its resolved path), in that order. The one place they are gathered."""
    files: list[Path] = []
    seen: set[Path] = set()
    for path in [*map(Path, given), *(p for run in runs for p in RunDir.of(run).human_files())]:
        resolved = path.resolve()
        if resolved not in seen:
            seen.add(resolved)
            files.append(path)
    return files


def find_label_run(path: Path, option: str = "--labels") -> Path:
    """The label run at ``path``: ``path`` itself when it is a labels file or a run directory
    (one holding labels.jsonl), else the one run directory inside it (the demo's ``demo-run``
    -> ``demo-run/labels``). Several inside, or none: a LabelStoreError naming what to pass as
    ``option``."""
    if not path.is_dir() or RunDir(path).labels.exists():
        return path
    found = sorted(p.parent for p in path.glob(f"*/{LABELS_FILE}"))
    if len(found) == 1:
        return found[0]
    if found:
        names = ", ".join(str(p) for p in found)
        raise LabelStoreError(
            path=path,
            reason=f"holds {len(found)} label runs: {names}",
            hint=f"pass one of them as {option}",
        )
    raise LabelStoreError(
        path=path,
        reason=f"not a label run: no {LABELS_FILE} in it or in a folder inside it",
        hint=f"pass the run directory of `misstep label` (--out) as {option}, "
        "or run `misstep label` first",
    )
