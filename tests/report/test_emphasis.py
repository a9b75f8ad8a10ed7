"""Emphasis (colour, bold, "significant") only where the interval excludes no-change: hand-built
intervals on both sides of 0, in the CLI's cells and in the HTML report (issue 33)."""

from __future__ import annotations

import re

from rich.console import Console

from misstep.agreement import AnalysisConfig, labelled_run_of
from misstep.cli._summary_tables import change_cell, gain_cell
from misstep.link import link_analysis
from misstep.metrics import Change, CheckpointMetrics
from misstep.report import render_report
from tests.link.link_synth import synth_run

BELOW = (-0.08, -0.01)  # excludes 0: the gain is negative beyond noise
ACROSS = (-0.10, 0.02)  # covers 0: within noise
ABOVE = (0.01, 0.09)


def test_gain_cell_red_only_below_zero() -> None:
    assert gain_cell(-0.05, BELOW).startswith("[red]")
    assert "[red]" not in gain_cell(-0.05, ACROSS)  # negative, but its interval covers 0
    assert "[red]" not in gain_cell(-0.05, None)  # no interval: nothing established
    assert "[red]" not in gain_cell(0.05, ABOVE)
    assert "[red]" not in gain_cell(None, None)
    assert gain_cell(-0.05, ACROSS) == "-0.050 [-0.100, +0.020]"


def test_change_cell_bold_only_beyond_noise() -> None:
    assert change_cell(Change(delta=-0.05, ci=BELOW, verdict="down")).startswith("[bold]")
    assert change_cell(Change(delta=0.05, ci=ABOVE, verdict="up")).startswith("[bold]")
    within = change_cell(Change(delta=-0.05, ci=ACROSS, verdict="within noise"))
    assert "[bold]" not in within and within.endswith("within noise")


def _metrics(ck: str, gain: float, ci: tuple[float, float] | None) -> CheckpointMetrics:
    return CheckpointMetrics(
        checkpoint=ck,
        dataset="d",
        n_problems=40,
        n_samples=640,
        pass_at_k={1: 0.5, 16: 0.9},
        maj_at_k={1: 0.5, 16: 0.5 + gain},
        sc_gain_at_k={1: 0.0, 16: gain},
        sc_gain_at_k_ci={16: ci},
        answer_entropy=None,
        top1_share=None,
        wrong_consistency=None,
        majority_failures=0,
        majority_failure_rate=0.0,
        n_correct=0,
        n_wrong=0,
        n_truncated=0,
        n_no_answer=0,
    )


def test_demo_table_red_only_below_zero() -> None:
    from misstep.cli.demo import _compact_table

    table = _compact_table([_metrics("a", -0.05, BELOW), _metrics("b", -0.05, ACROSS)])
    gains = list(table.columns[4].cells)
    assert gains == ["[red]-0.050[/]", "-0.050"]
    Console(file=None, record=True).print(table)  # the markup renders


def test_report_colours_only_gains_below_zero() -> None:
    graded, labels = synth_run(n_checkpoints=4, n_problems=30, n_samples=4, seed=3)
    r = link_analysis(labelled_run_of(graded, labels, config=AnalysisConfig(n_boot=50)), ks=[1, 4])
    hand = [(-0.05, BELOW), (-0.05, ACROSS), (0.05, ABOVE), (-0.05, None)]
    for c, (value, ci) in zip(r.checkpoints, hand, strict=True):
        c.metrics["sc_gain@4"] = value
        c.metrics_ci["sc_gain@4"] = ci
    html = render_report(r)
    cells = re.findall(r'<td class="neg">([^<]*)', html)
    assert cells == ["-0.050 "], cells  # the first checkpoint's alone
    assert '<td class="neg">-0.050 <span class="notes">[-0.080, -0.010]' in html


def test_one_sample_report_colours_only_changes_below_zero() -> None:
    graded, labels = synth_run(n_checkpoints=4, n_problems=30, n_samples=1, seed=3)
    r = link_analysis(labelled_run_of(graded, labels, config=AnalysisConfig(n_boot=50)))
    assert r.story == "one-sample"
    r.checkpoints[1].accuracy_change = Change(delta=-0.05, ci=BELOW, verdict="down")
    r.checkpoints[2].accuracy_change = Change(delta=-0.05, ci=ACROSS, verdict="within noise")
    r.checkpoints[3].accuracy_change = Change(delta=0.05, ci=ABOVE, verdict="up")
    html = render_report(r)
    cells = re.findall(r'<td class="neg">([^<]*)', html)
    assert cells == ["-5.0 pp "], cells
