"""The checks every command runs on its options and files before it reads a single trace,
and the parsers of the options that take a list.

Nothing heavy is imported here: ``misstep --help`` loads this module and must stay fast.
"""

from __future__ import annotations

import os
from pathlib import Path

from misstep.errors import InputFormatError, OptionError, OutputError

__all__ = [
    "REASONING_EFFORTS",
    "check_base_urls",
    "check_input",
    "check_output_file",
    "check_reasoning_effort",
    "label_run",
    "parse_annotators",
    "parse_ks",
    "parse_strata",
]

REASONING_EFFORTS = ("low", "medium", "high")


def parse_ks(text: str | None) -> list[int] | None:
    """``--k``: sorted distinct integers >= 1, or None for the default (what the data allow)."""
    if text is None:
        return None
    try:
        ks = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise OptionError(
            option="--k", value=text, allowed="comma-separated integers, e.g. 1,4,16"
        ) from None
    if not ks or ks[0] < 1:
        raise OptionError(option="--k", value=text, allowed="integers >= 1, e.g. 1,4,16")
    return ks


def parse_annotators(text: str, option: str = "--annotators") -> list[str]:
    """A comma-separated list of distinct annotator names, each a valid one (the name of a
    file in ``RUN_DIR/human/``), in the order given."""
    from misstep.labels import check_annotator

    names = [check_annotator(x.strip(), option) for x in text.split(",") if x.strip()]
    if not names or len(set(names)) != len(names):
        raise OptionError(
            option=option, value=text, allowed="distinct comma-separated names, e.g. alice,bob"
        )
    return names


def parse_strata(stratify: str) -> list[str]:
    """The ``--stratify`` fields, each one a sample can be stratified by."""
    from misstep.agreement import STRATA_FIELDS

    fields = [f.strip() for f in stratify.split(",") if f.strip()]
    if any(f not in STRATA_FIELDS for f in fields):
        raise OptionError(
            option="--stratify", value=stratify, allowed="names among " + ", ".join(STRATA_FIELDS)
        )
    return fields


def check_input(path: Path, what: str = "input") -> None:
    """An input file or directory that exists and can be read."""
    if not path.exists():
        raise InputFormatError(path=path, reason=f"{what}: no such file or directory")
    if not os.access(path, os.R_OK):
        raise InputFormatError(path=path, reason=f"{what}: not readable")


def label_run(path: Path, option: str = "--labels") -> Path:
    """The label run that ``option`` names: ``path`` itself when it is a labels.jsonl or a run
    directory (one holding labels.jsonl), else the one run directory inside ``path`` (the demo's
    ``demo-run`` -> ``demo-run/labels``). Several inside, or none: an error naming what to give.
    """
    from misstep.labels import find_label_run

    check_input(path, option)
    return find_label_run(path, option)


def check_output_file(path: Path, option: str) -> None:
    """A file the command will write: not a directory, in a directory that exists (or can be
    made) and is writable. Checked before any work, so a bad path costs nothing."""
    if path.is_dir():
        raise OutputError(path=path, reason=f"{option} is a directory, not a file")
    parent = path.parent
    probe = parent
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise OutputError(path=path, reason=f"{option}: {probe} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise OutputError(path=path, reason=f"{option}: cannot write in {probe}")
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputError(path=path, reason=f"{option}: the file is not writable")


def check_reasoning_effort(value: str | None) -> None:
    """``--reasoning-effort`` is one of low, medium, high (checked before any connection)."""
    if value is not None and value not in REASONING_EFFORTS:
        raise OptionError(
            option="--reasoning-effort",
            value=value,
            allowed="one of " + ", ".join(REASONING_EFFORTS),
        )


def check_base_urls(urls: list[str] | None) -> None:
    """Every ``--base-url`` is an http(s) URL with a host (checked before any connection)."""
    from urllib.parse import urlsplit

    for url in urls or []:
        try:
            parts = urlsplit(url)
            ok = parts.scheme in ("http", "https") and bool(parts.hostname)
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError:
            ok = False
        if not ok:
            raise OptionError(
                option="--base-url",
                value=url,
                allowed="an http(s) URL of an OpenAI-compatible server, e.g. "
                "http://127.0.0.1:8000/v1",
            )
