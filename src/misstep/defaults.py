"""The defaults of misstep's settings, written once: the seed, the analyses', the judge's
configuration, select's, discover's, sample's and review's.

Plain values with no imports: the CLI shows them in ``--help`` without loading the packages
(pydantic alone would add about 0.15 s to every start), and the config models declare their
fields' defaults from here (``misstep.judge.JudgeConfig`` from :class:`JudgeDefaults`,
``misstep.discover.DiscoverConfig`` and ``JudgeDiscoverSettings`` from
:class:`DiscoverDefaults`, ``misstep.agreement.AnalysisConfig`` and the bootstrap toolbox's
``misstep.metrics.DEFAULT_N_BOOT``, ``LEVEL`` and ``DEFAULT_SEED`` from
:class:`AnalysisDefaults`), with their constraints beside them. A command's option and a
function's parameter take their default from the same name, so the CLI, the Python API and
a stored configuration never disagree (``tests/test_defaults.py``: a literal default is
written in one signature at most).
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "DEFAULT_SEED",
    "AnalysisDefaults",
    "DiscoverDefaults",
    "JudgeDefaults",
    "ReviewDefaults",
    "SampleDefaults",
    "SelectDefaults",
]

DEFAULT_SEED = 0
"""Seed of every random step when none is given: bootstraps, permutations, the label budget's
draw, the judge's, samples, the review queue, the synthetic run, discovery."""


class AnalysisDefaults:
    """``misstep.agreement.AnalysisConfig``'s defaults and the bootstrap toolbox's
    (``misstep.metrics``): every analysis command's (summary, link, report, review, sample,
    plan, agree, compare)."""

    n_boot: ClassVar[int] = 1000
    """Bootstrap resamples behind an interval (``metrics.DEFAULT_N_BOOT``)."""
    level: ClassVar[float] = 0.95
    """Confidence level of an interval (``metrics.LEVEL``)."""
    seed: ClassVar[int] = DEFAULT_SEED
    n_perm: ClassVar[int] = 2000
    """Permutations behind ``compare``'s p-value (``metrics.compare_runs``)."""


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
    seed: ClassVar[int] = DEFAULT_SEED
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
    seed: ClassVar[int] = DEFAULT_SEED
    seeds: ClassVar[int] = 3
    min_share: ClassVar[float] = 0.05
    max_share: ClassVar[float] = 0.75
    concurrency: ClassVar[int] = 8
    sample: ClassVar[int] = 40
    rounds: ClassVar[int] = 2
    timeout_s: ClassVar[float] = 300.0


class SampleDefaults:
    """``misstep sample``'s defaults (``agreement.stratified_sample``,
    ``assign_annotators``); review's queue is drawn the same way."""

    n: ClassVar[int] = 200
    stratify: ClassVar[str] = "checkpoint,error_type"
    """The strata, comma-separated as ``--stratify`` takes them."""
    overlap: ClassVar[float] = 0.0
    """Share of the traces two people label (none: each trace goes to one person)."""


class ReviewDefaults:
    """``misstep review``'s defaults (``review.make_server``, ``ReviewData``)."""

    host: ClassVar[str] = "127.0.0.1"
    """Loopback: the app is reachable from this machine only."""
    port: ClassVar[int] = 0
    """Any free port."""
    queue_n: ClassVar[int] = 200
    """Traces in the labelling queue (a stratified sample, as ``sample`` draws)."""
