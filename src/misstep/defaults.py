"""The defaults of the judge's configuration and of the discovery, written once.

Plain values with no imports: the CLI shows them in ``--help`` without loading the packages
(pydantic alone would add about 0.15 s to every start), and the config models declare their
fields' defaults from here (``misstep.judge.JudgeConfig`` from :class:`JudgeDefaults`,
``misstep.discover.DiscoverConfig`` and ``JudgeDiscoverSettings`` from
:class:`DiscoverDefaults`), with their constraints beside them. A command's option takes its
default from the same name, so the CLI, the Python API and a stored configuration never
disagree.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = ["DiscoverDefaults", "JudgeDefaults", "SelectDefaults"]


class JudgeDefaults:
    """``misstep.judge.JudgeConfig``'s defaults (the options of ``label``, ``export-requests``
    and ``select``)."""

    backend: ClassVar[str] = "rules"
    temperature: ClassVar[float] = 0.0
    max_tokens: ClassVar[int] = 1024
    timeout_s: ClassVar[float] = 60.0
    deadline_s: ClassVar[float] = 300.0
    max_retries: ClassVar[int] = 3
    concurrency: ClassVar[int] = 16
    samples: ClassVar[int] = 1
    seed: ClassVar[int] = 0
    max_trace_tokens: ClassVar[int] = 6000


class SelectDefaults:
    """``misstep select``'s defaults (``pipelines.run_selection``)."""

    backend: ClassVar[str] = "openai"
    max_candidates: ClassVar[int] = 8
    max_candidate_chars: ClassVar[int] = 6000
    max_tokens: ClassVar[int] = 2048
    """A selection writes its analysis first: more room than a label."""


class DiscoverDefaults:
    """``misstep.discover.DiscoverConfig``'s and ``JudgeDiscoverSettings``' defaults."""

    k_min: ClassVar[int] = 2
    k_max: ClassVar[int] = 15
    seed: ClassVar[int] = 0
    seeds: ClassVar[int] = 3
    min_share: ClassVar[float] = 0.05
    max_share: ClassVar[float] = 0.75
    concurrency: ClassVar[int] = 8
    sample: ClassVar[int] = 40
    rounds: ClassVar[int] = 2
    timeout_s: ClassVar[float] = 300.0
