"""Vote metrics per checkpoint: counts, pass@k, maj@k, answer statistics, coverage."""

from misstep.metrics._bootstrap import (
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
    LEVEL,
    Strata,
    percentile_ci,
    resample_counts,
    stratify,
)
from misstep.metrics._boundary import boundary_interval
from misstep.metrics._compare import Comparison, compare_runs
from misstep.metrics._counts import ProblemCounts, problem_counts
from misstep.metrics._coverage import Coverage, coverage
from misstep.metrics._intervals import mean_ci, share_ci, verdict
from misstep.metrics._ks import (
    DEFAULT_KS,
    check_ks,
    default_ks,
    fitting_samples,
    k_fits,
    max_samples,
)
from misstep.metrics._majk import MajEstimate, MajMethod, maj_at_k_one
from misstep.metrics._order import order_checkpoints
from misstep.metrics._passk import pass_at_k, pass_at_k_one
from misstep.metrics._votes import (
    Change,
    CheckpointChange,
    CheckpointMetrics,
    problem_stats,
    vote_metrics,
)
from misstep.metrics._voting import AggregatorScore, VotingRow, voting_table

__all__ = [
    "DEFAULT_KS",
    "DEFAULT_N_BOOT",
    "DEFAULT_SEED",
    "LEVEL",
    "AggregatorScore",
    "Change",
    "CheckpointChange",
    "CheckpointMetrics",
    "Comparison",
    "Coverage",
    "MajEstimate",
    "MajMethod",
    "ProblemCounts",
    "Strata",
    "VotingRow",
    "boundary_interval",
    "check_ks",
    "compare_runs",
    "coverage",
    "default_ks",
    "fitting_samples",
    "k_fits",
    "maj_at_k_one",
    "max_samples",
    "mean_ci",
    "order_checkpoints",
    "pass_at_k",
    "pass_at_k_one",
    "percentile_ci",
    "problem_counts",
    "problem_stats",
    "resample_counts",
    "share_ci",
    "stratify",
    "verdict",
    "vote_metrics",
    "voting_table",
]
