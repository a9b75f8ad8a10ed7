"""The self-contained HTML report of a link analysis.

One file, viewable with no network: CSS and JS inline, figures as base64 PNG made by matplotlib
(Agg backend; PNG rather than SVG so that no data-derived text is ever parsed as markup). The
Jinja2 template is rendered with autoescape on. Trace text is untrusted: it travels only inside
a ``<script type="application/json">`` block whose ``<``, ``>``, ``&``, U+2028 and U+2029 are
written as ``\\u003c``-style escapes, and the page's script renders it with ``textContent``
(evidence highlighted by splitting text nodes), never ``innerHTML``.

The failure browser embeds at most ``MAX_FAILURES`` failures (the latest checkpoints first) and
at most ``MAX_TRACES`` labelled traces of each failure's winning wrong class.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from misstep.errors import InputFormatError
from misstep.labels import StoredLabel
from misstep.link import LinkResult
from misstep.metrics import ONE_SAMPLE_REASON, CheckpointMetrics, Story, VotingRow, verdict
from misstep.prompts import split_steps
from misstep.rollouts import Trace

__all__ = ["MAX_FAILURES", "MAX_TRACES", "render_report", "report_trace_ids", "write_report"]

MAX_FAILURES = 300
TITLES: dict[Story, str] = {
    "votes": "misstep: why majority voting failed",
    "mixed": "misstep: why majority voting failed",
    "one-sample": "misstep: accuracy and error types per checkpoint",
}
"""The report's default title by the run's story (``LinkResult.story``)."""
MAX_TRACES = 4
_PALETTE = [
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
]


def json_for_script(data: Any) -> Markup:
    """JSON safe to place inside ``<script type="application/json">``."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    for ch, esc in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(ch, esc)
    return Markup(text)


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _ticks(ax: Any, names: list[str]) -> None:
    step = max(1, len(names) // 20)
    ax.set_xticks(range(0, len(names), step))
    ax.set_xticklabels(names[::step], rotation=45, ha="right", fontsize=8)


class Figure(NamedTuple):
    """A figure of the report: its PNG as a data URL and the fewest finite values any of its
    panels plots (0: a panel is empty; the report never shows such a figure)."""

    src: str
    points: int


def _series(result: LinkResult, key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A metric per checkpoint with the distances to its interval's ends (0 where it has
    none); NaN where the checkpoint has no value."""
    values, low, high = [], [], []
    for c in result.checkpoints:
        v = c.metrics.get(key)
        ci = c.metrics_ci.get(key)
        values.append(np.nan if v is None else v)
        low.append(0.0 if v is None or ci is None else max(v - ci[0], 0.0))
        high.append(0.0 if v is None or ci is None else max(ci[1] - v, 0.0))
    return np.array(values, dtype=float), np.array(low), np.array(high)


def _errorbars(ax: Any, x: np.ndarray, result: LinkResult, key: str, shift: float) -> int:
    """One metric with its 95% interval as error bars; the number of finite values drawn."""
    y, low, high = _series(result, key)
    ax.errorbar(
        x + shift, y, yerr=[low, high], marker="o", ms=3, capsize=2, elinewidth=0.8, label=key
    )
    return int(np.isfinite(y).sum())


def _fig_metrics(result: LinkResult) -> Figure:
    """Accuracy per checkpoint (pass@1, and maj@k where there is a vote) with 95% intervals as
    error bars on the whole 0-1 axis of a share (a narrow axis would make a change of a
    point look like a collapse); beside it sc_gain@k with its intervals where some k > 1
    (never in a one-sample run: there is nothing to vote over)."""
    names = [c.checkpoint for c in result.checkpoints]
    gains = [k for k in result.ks if k > 1]
    panels = 2 if gains and result.story != "one-sample" else 1
    fig, axes = plt.subplots(1, panels, figsize=(11 if panels == 2 else 7.5, 3.6), squeeze=False)
    a1 = axes[0][0]
    x = np.arange(len(names))
    keys = ["pass@1"] + ([f"maj@{k}" for k in gains] if panels == 2 else [])
    # Side by side by a few hundredths of a checkpoint so that the bars do not hide each other.
    spread = 0.08 * (np.arange(len(keys)) - (len(keys) - 1) / 2)
    drawn = [_errorbars(a1, x, result, key, dx) for key, dx in zip(keys, spread, strict=True)]
    a1.set_ylim(0, 1)
    a1.set_ylabel("share of problems")
    a1.set_title("accuracy (pass@1) per checkpoint" if panels == 1 else "accuracy per checkpoint")
    a1.legend(fontsize=8)
    points = max(drawn)
    if panels == 2:
        a2 = axes[0][1]
        spread = 0.08 * (np.arange(len(gains)) - (len(gains) - 1) / 2)
        drawn = [
            _errorbars(a2, x, result, f"sc_gain@{k}", dx)
            for k, dx in zip(gains, spread, strict=True)
        ]
        a2.axhline(0, color="#888", lw=0.8)
        a2.set_title("self-consistency gain (maj@k - pass@1)")
        a2.legend(fontsize=8)
        points = min(points, max(drawn))
    for ax in axes[0]:
        _ticks(ax, names)
        ax.grid(alpha=0.3)
    return Figure(_png(fig), points)


def _fig_errors(result: LinkResult) -> Figure:
    names = [c.checkpoint for c in result.checkpoints]
    fig, ax = plt.subplots(figsize=(11, 3.8))
    x = np.arange(len(names))
    bottom = np.zeros(len(names))
    for i, t in enumerate(result.types):
        # A checkpoint without labels, or a type that is not identified, draws no bar.
        share = np.array([(c.error_dist or {}).get(t) or 0.0 for c in result.checkpoints])
        cis = [
            c.error_dist_ci.get(t) or (s, s) for c, s in zip(result.checkpoints, share, strict=True)
        ]
        lo = np.array([ci[0] for ci in cis])
        hi = np.array([ci[1] for ci in cis])
        color = _PALETTE[i % len(_PALETTE)]
        ax.bar(x, share, bottom=bottom, color=color, label=t, width=0.8)
        top = bottom + share
        ax.errorbar(
            x,
            top,
            yerr=[np.maximum(share - lo, 0), np.maximum(hi - share, 0)],
            fmt="none",
            ecolor="#333",
            elinewidth=0.7,
            capsize=1.5,
        )
        bottom = top
    ax.set_ylim(0, 1.05)
    source = {c.error_dist_source for c in result.checkpoints if c.error_dist is not None}
    ax.set_ylabel("share of labelled wrong traces")
    ax.set_title(
        "error-type distribution per checkpoint"
        + (", corrected for the judge's confusion" if source == {"corrected"} else "")
        + " (bars: 95% interval of each share)"
    )
    if result.types:
        ax.legend(
            fontsize=8,
            ncol=min(6, max(1, len(result.types))),
            loc="upper center",
            bbox_to_anchor=(0.5, -0.25),
        )
    _ticks(ax, names)
    return Figure(_png(fig), sum(c.error_dist is not None for c in result.checkpoints))


def _fig_coverage(result: LinkResult) -> Figure:
    cov = result.coverage
    names = list(cov["checkpoints"])
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [1, 1.3]})
    im = a1.imshow(np.array(cov["jaccard"], dtype=float), vmin=0, vmax=1, cmap="viridis")
    a1.set_title("Jaccard of solved-problem sets")
    step = max(1, len(names) // 15)
    a1.set_xticks(range(0, len(names), step))
    a1.set_xticklabels(names[::step], rotation=90, fontsize=7)
    a1.set_yticks(range(0, len(names), step))
    a1.set_yticklabels(names[::step], fontsize=7)
    fig.colorbar(im, ax=a1, fraction=0.046)
    x = np.arange(len(names))
    moves = 0
    for key in ("retention", "acquisition", "forgetting"):
        line = np.array([np.nan if v is None else v for v in cov[key]], dtype=float)
        a2.plot(x, line, marker="o", ms=3, label=key)
        moves = max(moves, int(np.isfinite(line).sum()))
    a2.set_title("between consecutive checkpoints")
    a2.legend(fontsize=8)
    a2.grid(alpha=0.3)
    _ticks(a2, names)
    return Figure(_png(fig), min(len(names), moves))


def _fig_confusion(agreement: Mapping[str, Any]) -> Figure:
    cats = list(agreement["labels"])
    m = np.array(agreement["confusion"], dtype=float)
    fig, ax = plt.subplots(figsize=(1.2 + 0.6 * len(cats), 1 + 0.6 * len(cats)))
    ax.imshow(m, cmap="Blues")
    for i in range(len(cats)):
        for j in range(len(cats)):
            ax.text(j, i, str(int(m[i, j])), ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(cats)))
    ax.set_xticklabels(cats, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(cats)))
    ax.set_yticklabels(cats, fontsize=8)
    ax.set_xlabel("judge")
    ax.set_ylabel("human")
    return Figure(_png(fig), int(m.sum()))


def _shown_failures(result: LinkResult) -> list[dict[str, Any]]:
    order = {c.checkpoint: i for i, c in enumerate(result.checkpoints)}
    return sorted(
        result.failures,
        key=lambda f: (-order.get(f["checkpoint"], 0), f["dataset"], f["problem_id"]),
    )[:MAX_FAILURES]


def report_trace_ids(result: LinkResult) -> set[str]:
    """The trace ids whose text the report's failure browser shows, so that a caller can
    stream the traces file once more and keep only these instead of every trace."""
    return {t for f in _shown_failures(result) for t in f["winner_trace_ids"][:MAX_TRACES]}


def _failure_data(
    result: LinkResult,
    traces: Mapping[str, Trace],
    labels: Mapping[str, StoredLabel] | pd.DataFrame | None,
) -> list[dict[str, Any]]:
    fails = _shown_failures(result)
    lab: dict[str, dict[str, Any]] = {}
    wanted = {t for f in fails for t in f["winner_trace_ids"][:MAX_TRACES]}
    if isinstance(labels, pd.DataFrame):
        sub = labels[labels["trace_id"].isin(wanted)]
        for row in sub.to_dict("records"):
            lab[str(row["trace_id"])] = {str(k): v for k, v in row.items()}
    elif labels is not None:
        for tid in wanted:
            if tid in labels:
                lab[tid] = labels[tid].model_dump()
    out = []
    for f in fails:
        items = []
        for tid in f["winner_trace_ids"][:MAX_TRACES]:
            tr = traces.get(tid)
            lb = lab.get(tid, {})
            step = lb.get("first_error_step")
            items.append(
                {
                    "trace_id": tid,
                    "error_type": lb.get("error_type"),
                    "first_error_step": None if step is None or pd.isna(step) else int(step),
                    "evidence": lb.get("evidence") if isinstance(lb.get("evidence"), str) else None,
                    "explanation": lb.get("explanation")
                    if isinstance(lb.get("explanation"), str)
                    else None,
                    "steps": split_steps(tr) if tr is not None else None,
                }
            )
        out.append({**{k: v for k, v in f.items() if k != "winner_trace_ids"}, "traces": items})
    return out


def _fig_curves(result: LinkResult, curves: Sequence[CheckpointMetrics]) -> Figure:
    """pass@k and maj@k against k for a few checkpoints: the first, the last, and those with
    the lowest and highest headline sc_gain."""
    by_name = {c.checkpoint: c for c in curves}
    names = [c.checkpoint for c in result.checkpoints if c.checkpoint in by_name]
    gain = {c.checkpoint: c.metrics.get(f"sc_gain@{result.k}") for c in result.checkpoints}
    ranked = sorted((n for n in names if gain.get(n) is not None), key=lambda n: gain[n] or 0.0)
    chosen = list(dict.fromkeys([names[0], names[-1], *ranked[:1], *ranked[-1:]]))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.6))
    for i, name in enumerate(chosen):
        row = by_name[name]
        ks = [k for k in sorted(row.pass_at_k) if row.pass_at_k[k] is not None]
        color = _PALETTE[i % len(_PALETTE)]
        a1.plot(ks, [row.pass_at_k[k] for k in ks], marker="o", ms=3, color=color, label=name)
        a2.plot(ks, [row.maj_at_k[k] for k in ks], marker="o", ms=3, color=color, label=name)
    all_ks = sorted({k for c in curves for k, v in c.pass_at_k.items() if v is not None})
    for ax, what in ((a1, "pass@k"), (a2, "maj@k")):
        ax.set_xscale("log", base=2)
        # plain tick labels: names are never mathtext here, so the log axis's own are unusable
        ax.set_xticks(all_ks, [str(k) for k in all_ks])
        ax.minorticks_off()
        ax.set_xlabel("k (samples)")
        ax.set_title(f"{what} against k")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    # A curve needs two ks: one k is a dot, not a curve.
    return Figure(_png(fig), len(all_ks) if len(all_ks) > 1 else 0)


def render_report(
    result: LinkResult,
    *,
    traces: Mapping[str, Trace] | None = None,
    labels: Mapping[str, StoredLabel] | pd.DataFrame | None = None,
    title: str | None = None,
    voting: Sequence[VotingRow] = (),
    curves: Sequence[CheckpointMetrics] = (),
) -> str:
    """The report as one HTML string. ``traces`` (trace id to Trace) and ``labels`` supply the
    text, evidence and explanations of the failures shown in the browser; without them the
    browser lists the failures and their trace ids only. ``voting`` (``metrics.voting_table``)
    adds the table of other aggregators, ``curves`` (``vote_metrics`` over many k) the figure
    of pass@k and maj@k against k. ``title``: by default the story's (``TITLES``).

    A one-sample run (``result.story``) leads with accuracy and error types: no vote metric,
    no majority-vote failure browser, no table of other aggregators, no curves, and the
    reason said once. A figure none of whose panels has data is left out. Emphasis (the
    ``neg`` colour of a sc_gain) only where its interval excludes 0 (``metrics.verdict``)."""
    env = Environment(
        loader=PackageLoader("misstep.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.tests["below_zero"] = lambda ci: verdict(ci) == "down"
    one_sample = result.story == "one-sample"
    # Checkpoint and type names are data: never matplotlib mathtext (`ckpt_$x^{$` is a name).
    with plt.rc_context({"text.parse_math": False}):
        figures = {
            "metrics": _fig_metrics(result),
            "errors": _fig_errors(result),
            "coverage": _fig_coverage(result),
        }
        if result.agreement and result.agreement.get("n"):
            figures["confusion"] = _fig_confusion(result.agreement)
        if curves and not one_sample:
            figures["curves"] = _fig_curves(result, curves)
    failures = _failure_data(result, traces or {}, labels) if not one_sample else []
    metric_keys = ["pass@1"] + [f"{p}@{k}" for k in result.ks if k > 1 for p in ("maj", "sc_gain")]
    return env.get_template("report.html.j2").render(
        title=title or TITLES[result.story],
        one_sample=one_sample,
        reason=ONE_SAMPLE_REASON,
        r=result,
        figures={name: f for name, f in figures.items() if f.points > 0},
        metric_keys=metric_keys,
        failures_json=json_for_script(failures),
        n_failures_total=len(result.failures),
        n_failures_shown=len(failures),
        voting=[] if one_sample else list(voting),
    )


def write_report(path: str | Path, result: LinkResult, **kwargs: Any) -> Path:
    """Render the report and write it to ``path`` (UTF-8). Returns the path."""
    p = Path(path)
    html = render_report(result, **kwargs)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(html, encoding="utf-8")
        tmp.replace(p)
    except OSError as exc:
        raise InputFormatError(path=p, reason=f"cannot write the report: {exc.strerror}") from None
    return p
