"""Agreement between judges and people, the annotation tasks behind it, and error-type
distributions corrected for the judge's measured confusion."""

from misstep.agreement._agreement import (
    AgreementReport,
    CategoryRow,
    ConfusionEntry,
    Disagreement,
    OverallAgreement,
    PairAgreement,
    Rating,
    StepAgreement,
    agreement_report,
)
from misstep.agreement._assign import assign_annotators
from misstep.agreement._cohen import cohen_kappa, kappa_from_confusions
from misstep.agreement._compare import Raters, compare_raters, gather_raters
from misstep.agreement._config import DEFAULT_ESTIMATOR, ESTIMATORS, AnalysisConfig, Estimator
from misstep.agreement._confusion import confusion_counts, consensus, per_category_scores
from misstep.agreement._correction import (
    CorrectedDistribution,
    Pooled,
    correct_distribution,
    estimate_confusion,
    identified_categories,
    simplex_lstsq,
)
from misstep.agreement._errordist import (
    ALL_DATASETS,
    ErrorDistribution,
    error_distributions,
    ok_types,
    plot_confusion,
)
from misstep.agreement._estimators import CORRECTIONS
from misstep.agreement._fleiss import fleiss_kappa_of
from misstep.agreement._homogeneity import Homogeneity, confusion_homogeneity
from misstep.agreement._judge_only import JudgeOnly
from misstep.agreement._krippendorff import (
    alpha_from_coincidences,
    item_coincidences,
    krippendorff_alpha,
)
from misstep.agreement._labelled import (
    LabelledRun,
    LabelledSummary,
    add_error_distributions,
    labelled_run_of,
    labelled_summary,
    load_labelled_run,
    run_taxonomy,
)
from misstep.agreement._plan import (
    MIN_PILOT,
    PLAN_VERSION,
    LabelPlan,
    PlanRow,
    labels_needed,
    plan_labels,
)
from misstep.agreement._ppi import MIN_PPI_HUMAN, PPI, PPIEstimate, ppi_shares, simultaneous_z
from misstep.agreement._raters import human_raters, judge_raters
from misstep.agreement._sampling import (
    STRATA_FIELDS,
    SampleRow,
    allocate,
    labelstudio_config,
    stratified_sample,
    write_task,
)
from misstep.agreement._shares import Group, NoEstimate, ShareEstimate, ShareEstimator, ShareInputs
from misstep.agreement._steps import StepScores, step_scores
from misstep.labels import NO_ERROR_CHOICE

__all__ = [
    "ALL_DATASETS",
    "CORRECTIONS",
    "DEFAULT_ESTIMATOR",
    "ESTIMATORS",
    "MIN_PILOT",
    "MIN_PPI_HUMAN",
    "NO_ERROR_CHOICE",
    "PLAN_VERSION",
    "PPI",
    "STRATA_FIELDS",
    "AgreementReport",
    "AnalysisConfig",
    "CategoryRow",
    "ConfusionEntry",
    "CorrectedDistribution",
    "Disagreement",
    "ErrorDistribution",
    "Estimator",
    "Group",
    "Homogeneity",
    "JudgeOnly",
    "LabelPlan",
    "LabelledRun",
    "LabelledSummary",
    "NoEstimate",
    "OverallAgreement",
    "PPIEstimate",
    "PairAgreement",
    "PlanRow",
    "Pooled",
    "Raters",
    "Rating",
    "SampleRow",
    "ShareEstimate",
    "ShareEstimator",
    "ShareInputs",
    "StepAgreement",
    "StepScores",
    "add_error_distributions",
    "agreement_report",
    "allocate",
    "alpha_from_coincidences",
    "assign_annotators",
    "cohen_kappa",
    "compare_raters",
    "confusion_counts",
    "confusion_homogeneity",
    "consensus",
    "correct_distribution",
    "error_distributions",
    "estimate_confusion",
    "fleiss_kappa_of",
    "gather_raters",
    "human_raters",
    "identified_categories",
    "item_coincidences",
    "judge_raters",
    "kappa_from_confusions",
    "krippendorff_alpha",
    "labelled_run_of",
    "labelled_summary",
    "labels_needed",
    "labelstudio_config",
    "load_labelled_run",
    "ok_types",
    "per_category_scores",
    "plan_labels",
    "plot_confusion",
    "ppi_shares",
    "run_taxonomy",
    "simplex_lstsq",
    "simultaneous_z",
    "step_scores",
    "stratified_sample",
    "write_task",
]
