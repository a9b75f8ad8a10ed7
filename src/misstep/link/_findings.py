"""Ranked findings: the link's results as plain sentences with their numbers.

Every finding is tied to one checkpoint. Its ``p_value`` is the one behind it, already adjusted
(Benjamini-Hochberg) for the tests of its family; a sentence calls a result significant only when
that adjusted p-value is below ``ALPHA``. Ranking, best first:

1. significant type changes that move against sc_gain (a type rose where sc_gain fell, or fell
   where it rose) where the sc_gain change itself is beyond noise (its paired 95% interval
   excludes 0), by the size of the change (|Cohen's h|); where either checkpoint has no
   sc_gain@k with k > 1 (one sample per problem: nothing to vote over), every significant type
   change instead, told beside the change of accuracy (pass@1) with its interval;
2. significant rank correlations across checkpoints, by adjusted p then |rho|;
3. the same kinds when not significant (at most ``MAX_WEAK`` of them, smallest p first),
   stated as such;
4. descriptive facts without a test (dominant-type transitions), ``p_value`` None.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
from pydantic import BaseModel

from misstep.link._causes import CauseShift
from misstep.link._linkstats import Correlation, Transition
from misstep.link._shifts import CheckpointShares, Shift
from misstep.metrics import Change

__all__ = ["ALPHA", "MAX_WEAK", "Finding", "build_findings"]

ALPHA = 0.05
MAX_WEAK = 5


class Finding(BaseModel):
    """One ranked finding."""

    rank: int
    """1 for the most important."""
    kind: str
    """``type_shift``, ``correlation``, ``train_correlation`` or ``transition``."""
    checkpoint: str
    """The checkpoint the finding is about."""
    error_type: str | None
    """The error type it is about, when one."""
    effect: float
    """Cohen's h of the share change, Spearman's rho, or a share of problems (transitions)."""
    p_value: float | None
    """Adjusted p-value behind the finding; None for descriptive findings."""
    significant: bool
    """``p_value < 0.05``."""
    sentence: str
    """The finding in plain words, with its numbers."""


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _p(p: float) -> str:
    text = f"p={p:.3f}" if p >= 0.001 else "p<0.001"
    return text + ("" if p < ALPHA else ", not significant")


_CAUSE_NAMES = {
    "response_chars": ("the mean response length", "characters"),
    "no_answer_rate": ("the share of samples with no final answer", "pp"),
    "truncated_rate": ("the share of samples cut at the token limit", "pp"),
    "repetition": ("the mean repetition score", ""),
}


def _cause_text(cs: CauseShift) -> str:
    name, unit = _CAUSE_NAMES.get(cs.cause, (cs.cause, ""))
    moved = "rose" if cs.delta > 0 else "fell"
    ci = cs.ci or (cs.delta, cs.delta)
    if unit == "pp":
        counts = (
            f", {cs.count_before:,} -> {cs.count_after:,} samples"
            if cs.count_before is not None and cs.count_after is not None
            else ""
        )
        return (
            f"{name} {moved} from {100 * cs.value_before:.1f}% to {100 * cs.value_after:.1f}%"
            f"{counts} ({100 * cs.delta:+.1f} pp, 95% interval [{100 * ci[0]:+.1f}, "
            f"{100 * ci[1]:+.1f}] pp, over {cs.n_shared} shared problems)"
        )
    scale = ".0f" if unit == "characters" else ".3f"
    return (
        f"{name} {moved} from {cs.value_before:{scale}} to {cs.value_after:{scale}}"
        f"{' ' + unit if unit else ''} (change {cs.delta:+{scale}}, 95% interval "
        f"[{ci[0]:+{scale}}, {ci[1]:+{scale}}], over {cs.n_shared} shared problems)"
    )


def _type_shift_findings(
    shifts: list[Shift],
    sc: dict[str, float],
    k: int,
    sc_change: Mapping[str, Change | None],
    failures: pd.DataFrame,
    strong: list[tuple[tuple[float, ...], Finding]],
    weak: list[tuple[tuple[float, ...], Finding]],
) -> None:
    """Type shifts narrated against the sc_gain change, appended to ``strong`` / ``weak``."""
    n_fail = failures.groupby("checkpoint").size() if not failures.empty else pd.Series(dtype=int)
    for s in shifts:
        if s.before not in sc or s.after not in sc:
            continue
        d_sc = sc[s.after] - sc[s.before]
        for c in s.changes:
            if c.p_value is None or c.delta == 0 or (c.delta > 0) == (d_sc > 0) or d_sc == 0:
                continue
            moved = "rose" if c.delta > 0 else "fell"
            fell = "fell" if d_sc < 0 else "rose"
            change = sc_change.get(s.after)
            noise = change is None or change.verdict == "within noise"
            move = f"{fell} from {sc[s.before]:+.3f} to {sc[s.after]:+.3f}"
            if change is not None and change.ci is not None:
                move += (
                    f" (change {100 * change.delta:+.1f} pp, 95% interval "
                    f"[{100 * change.ci[0]:+.1f}, {100 * change.ci[1]:+.1f}] pp"
                    + (", within noise)" if noise else ")")
                )
            elif noise:
                move += " (no interval for the change: within noise as far as is known)"
            text = (
                f"At {s.after} sc_gain@{k} {move}; "
                f"{c.error_type} {moved} from {_pct(c.share_before)} to {_pct(c.share_after)} "
                f"of wrong traces ({_p(c.p_value)})"
            )
            total = int(n_fail.get(s.after, 0))
            if total:
                mine = failures[
                    (failures["checkpoint"] == s.after)
                    & (failures["kind"] == "consistent-wrong")
                    & (failures["winner_type"] == c.error_type)
                ]
                if len(mine):
                    text += (
                        f", and {_pct(len(mine) / total)} of its {total} majority-vote failures "
                        f"were consistent-wrong answers carried by {c.error_type} traces"
                    )
            f = Finding(
                rank=0,
                kind="type_shift",
                checkpoint=s.after,
                error_type=c.error_type,
                effect=c.cohen_h,
                p_value=c.p_value,
                significant=c.p_value < ALPHA and not noise,
                sentence=text + ".",
            )
            (strong if f.significant else weak).append(((0, -abs(c.cohen_h)), f))


def _accuracy_move(
    before: str,
    after: str,
    accuracy: Mapping[str, float],
    change: Change | None,
) -> str:
    """``accuracy (pass@1) went from 0.425 to 0.500 (+7.5 pp, 95% interval [...], within
    noise)``: the context of a type change where there is no vote to narrate against."""
    text = f"accuracy (pass@1) went from {accuracy[before]:.3f} to {accuracy[after]:.3f}"
    if change is not None and change.ci is not None:
        text += (
            f" ({100 * change.delta:+.1f} pp, 95% interval [{100 * change.ci[0]:+.1f}, "
            f"{100 * change.ci[1]:+.1f}] pp"
            + (", within noise)" if change.verdict == "within noise" else ")")
        )
    return text


def _accuracy_shift_findings(
    shifts: list[Shift],
    sc: Mapping[str, float],
    accuracy: Mapping[str, float],
    accuracy_change: Mapping[str, Change | None],
    strong: list[tuple[tuple[float, ...], Finding]],
    weak: list[tuple[tuple[float, ...], Finding]],
) -> None:
    """Type shifts between checkpoints that lack sc_gain@k (one sample per problem): each
    tested change, with the accuracy change beside it. Significant when the type change's
    adjusted p-value is below ``ALPHA`` (its own test; accuracy is context, not a premise)."""
    for s in shifts:
        if (s.before in sc and s.after in sc) or s.before not in accuracy:
            continue
        if s.after not in accuracy:
            continue
        context = _accuracy_move(s.before, s.after, accuracy, accuracy_change.get(s.after))
        for c in s.changes:
            if c.p_value is None or c.delta == 0:
                continue
            moved = "rose" if c.delta > 0 else "fell"
            text = (
                f"At {s.after} {c.error_type} {moved} from {_pct(c.share_before)} to "
                f"{_pct(c.share_after)} of wrong traces ({_p(c.p_value)}); {context}."
            )
            f = Finding(
                rank=0,
                kind="type_shift",
                checkpoint=s.after,
                error_type=c.error_type,
                effect=c.cohen_h,
                p_value=c.p_value,
                significant=c.p_value < ALPHA,
                sentence=text,
            )
            (strong if f.significant else weak).append(((0, -abs(c.cohen_h)), f))


def _cause_findings(
    cause_shifts: list[CauseShift],
    sc: dict[str, float],
    k: int,
    sc_change: Mapping[str, Change | None],
    strong: list[tuple[tuple[float, ...], Finding]],
    weak: list[tuple[tuple[float, ...], Finding]],
) -> None:
    """Shifts of the causes beyond error types, appended to ``strong`` / ``weak``."""
    for cs in cause_shifts:
        if cs.p_value is None or cs.ci is None or cs.delta == 0:
            continue
        significant = cs.p_value < ALPHA and cs.verdict != "within noise"
        change = sc_change.get(cs.after)
        context = ""
        # sc_gain@1 is 0 by definition (one sample per problem): no context to give.
        if k > 1 and cs.before in sc and cs.after in sc:
            context = f"; sc_gain@{k} went from {sc[cs.before]:+.3f} to {sc[cs.after]:+.3f}"
            if change is not None and change.ci is not None:
                context += (
                    f" ({100 * change.delta:+.1f} pp [{100 * change.ci[0]:+.1f}, "
                    f"{100 * change.ci[1]:+.1f}], {change.verdict})"
                )
        f = Finding(
            rank=0,
            kind="cause_shift",
            checkpoint=cs.after,
            error_type=None,
            effect=cs.effect or 0.0,
            p_value=cs.p_value,
            significant=significant,
            sentence=f"At {cs.after} {_cause_text(cs)} ({_p(cs.p_value)}){context}.",
        )
        (strong if significant else weak).append(((0, -abs(cs.effect or 0.0)), f))


def _value(name: str, value: float) -> str:
    return f"{value:.3f}" if name == "pass@1" else f"{value:+.3f}"


def _correlation_findings(
    correlations: list[Correlation],
    shares: list[CheckpointShares],
    sc: Mapping[str, float],
    accuracy: Mapping[str, float],
    k: int,
    strong: list[tuple[tuple[float, ...], Finding]],
    weak: list[tuple[tuple[float, ...], Finding]],
) -> None:
    """Correlations across checkpoints, appended to ``strong`` / ``weak``."""
    share_at = {cs.checkpoint: cs for cs in shares}
    for cor in correlations:
        # Against accuracy (pass@1) where there is no vote (one sample per problem).
        target = accuracy if cor.y == "pass@1" or cor.x == "pass@1" else sc
        name = "pass@1" if target is accuracy else f"sc_gain@{k}"
        worst = min(target, key=lambda ck: target[ck]) if target else None
        if cor.rho is None or cor.p_value is None or worst is None:
            continue
        if cor.kind in ("type_vs_sc_gain", "type_vs_accuracy"):
            at = share_at.get(worst)
            here = (
                f" where {cor.x} is {_pct(at.shares[cor.x])}" if at and cor.x in at.shares else ""
            )
            text = (
                f"Across {cor.n} checkpoints the share of {cor.x} among wrong traces "
                f"{'moves against' if cor.rho < 0 else 'moves with'} {cor.y} "
                f"(Spearman rho={cor.rho:+.2f}, permutation {_p(cor.p_value)}); "
                f"{cor.y} is lowest at {worst} ({_value(name, target[worst])}){here}."
            )
            etype: str | None = cor.x
        else:
            text = (
                f"Across {cor.n} checkpoints {cor.x} and {cor.y} move "
                f"{'against each other' if cor.rho < 0 else 'together'} "
                f"(Spearman rho={cor.rho:+.2f}, permutation {_p(cor.p_value)}); "
                f"{name} is lowest at {worst} ({_value(name, target[worst])})."
            )
            etype = cor.y if cor.kind == "train_vs_type" else None
        f = Finding(
            rank=0,
            kind={
                "type_vs_sc_gain": "correlation",
                "type_vs_accuracy": "correlation",
                "cause_vs_sc_gain": "cause_correlation",
                "cause_vs_accuracy": "cause_correlation",
            }.get(cor.kind, "train_correlation"),
            checkpoint=worst,
            error_type=etype,
            effect=cor.rho,
            p_value=cor.p_value,
            significant=cor.p_value < ALPHA,
            sentence=text,
        )
        (strong if f.significant else weak).append(((1, cor.p_value, -abs(cor.rho)), f))


def _transition_findings(transitions: list[Transition]) -> list[Finding]:
    """The three most frequent dominant-type moves (never significant: no test)."""
    tail: list[Finding] = []
    for t in transitions[:3]:
        tail.append(
            Finding(
                rank=0,
                kind="transition",
                checkpoint=t.checkpoint,
                error_type=t.to_type,
                effect=t.n_problems / t.n_tracked,
                p_value=None,
                significant=False,
                sentence=(
                    f"{t.n_problems} of {t.n_tracked} tracked problems went from {t.from_type} "
                    f"to {t.to_type} between {t.before} and {t.checkpoint} (dominant error type)."
                ),
            )
        )
    return tail


def build_findings(
    *,
    shifts: list[Shift],
    shares: list[CheckpointShares],
    sc: dict[str, float],
    k: int,
    sc_change: Mapping[str, Change | None] | None = None,
    cause_shifts: list[CauseShift] | None = None,
    failures: pd.DataFrame,
    correlations: list[Correlation],
    transitions: list[Transition],
    accuracy: Mapping[str, float] | None = None,
    accuracy_change: Mapping[str, Change | None] | None = None,
) -> list[Finding]:
    """Rank findings. ``sc`` maps checkpoint to sc_gain@k and ``sc_change`` to its paired change
    from the previous checkpoint (with its interval); a checkpoint without a vote (one sample
    per problem) is left out of ``sc``, and its type shifts are told against ``accuracy``
    (pass@1) and ``accuracy_change`` instead; ``failures`` holds one row per majority-vote
    failure with ``checkpoint``, ``kind`` and ``winner_type``.

    A type shift is narrated against the sc_gain change; when that change's interval covers 0
    the sentence says it is within noise, and the finding is never marked significant: its
    premise (sc_gain moved) is not established."""
    sc_change = sc_change or {}
    strong: list[tuple[tuple[float, ...], Finding]] = []
    weak: list[tuple[tuple[float, ...], Finding]] = []
    _type_shift_findings(shifts, sc, k, sc_change, failures, strong, weak)
    _cause_findings(cause_shifts or [], sc, k, sc_change, strong, weak)
    _accuracy_shift_findings(shifts, sc, accuracy or {}, accuracy_change or {}, strong, weak)
    _correlation_findings(correlations, shares, sc, accuracy or {}, k, strong, weak)
    tail = _transition_findings(transitions)
    strong.sort(key=lambda kv: kv[0])
    # Not significant: the closest to significance first, whatever its kind.
    weak.sort(key=lambda kv: (kv[1].p_value if kv[1].p_value is not None else 1.0, kv[0]))
    ranked = [f for _, f in strong] + [f for _, f in weak[:MAX_WEAK]] + tail
    for i, f in enumerate(ranked, start=1):
        f.rank = i
    return ranked
