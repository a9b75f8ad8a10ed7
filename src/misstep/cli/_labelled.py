"""The label run every analysis command reads: ``misstep.agreement.load_labelled_run`` with
its notes on stderr."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from misstep.cli._errors import err_console, quote

if TYPE_CHECKING:
    from misstep.agreement import LabelledRun
    from misstep.rollouts import GradedRun


def load_labelled(
    labels: Path,
    run: GradedRun,
    *,
    judge_id: str | None,
    human: list[Path] | None,
    taxonomy: Path | None,
    allow_other_input: bool,
    seed: int,
    full: bool = False,
    estimator: str = "ppi",
    simultaneous: bool = False,
) -> LabelledRun:
    """Load the run's labels, taxonomy and people's labels; say what was left out and which
    people's label files were read."""
    from misstep.agreement import ESTIMATORS, load_labelled_run
    from misstep.errors import OptionError

    if estimator not in ESTIMATORS:
        raise OptionError(option="--estimator", value=estimator, allowed=", ".join(ESTIMATORS))
    labelled = load_labelled_run(
        labels,
        run,
        judge=judge_id,
        human=human or [],
        taxonomy=taxonomy,
        allow_other_input=allow_other_input,
        full=full,
        seed=seed,
        estimator=estimator,  # type: ignore[arg-type]  # checked against ESTIMATORS above
        simultaneous=simultaneous,
    )
    if labelled.outside:
        err_console.print(
            f"{labelled.outside} labelled trace(s) of {quote(labels)} are not in "
            f"{quote(run.input_path)} and are left out",
            soft_wrap=True,
        )
    given = {p.resolve() for p in human or []}
    own = [p for p in labelled.human_files if p.resolve() not in given]
    if own:
        err_console.print(
            f"people's labels of the run: {len(own)} file(s) in "
            f"{quote(own[0].parent)} ({', '.join(p.name for p in own)})",
            soft_wrap=True,
        )
    return labelled
