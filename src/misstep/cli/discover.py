"""CLI: ``misstep discover``, the error types the taxonomy misses, proposed offline."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from misstep.cli._errors import (
    data,
    err_console,
    handles_errors,
    out_console,
    quote,
    stage_progress,
    writing,
)
from misstep.cli._judge_options import bind
from misstep.cli._options import (
    JudgeIdOpt,
    MaxTokensOpt,
    ModelOpt,
    RunTaxonomyOpt,
    SeedOpt,
    TextFormat,
    check_base_urls,
    check_input,
    label_run,
)
from misstep.defaults import DiscoverDefaults as D
from misstep.defaults import JudgeDefaults as J
from misstep.errors import OptionError

if TYPE_CHECKING:
    from misstep.discover import Discovery

CATEGORIES_FILE = "categories.json"
TAXONOMY_FILE = "taxonomy.yaml"


class EmbeddingChoice(StrEnum):
    """``--embedding``."""

    wordllama = "wordllama"
    tfidf = "tfidf"


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _ci(ci: tuple[float, float]) -> str:
    return f"{100 * ci[0]:.0f}-{100 * ci[1]:.0f}%"


def _print_text(d: Discovery, out: Path) -> None:
    from rich.table import Table

    o = out_console
    o.print(
        f"{d.texts} texts ({d.distinct_texts} distinct), embedding {d.embedding}: k={d.k} "
        + (
            f"clusters (silhouette {d.silhouette:.2f}), "
            if d.silhouette is not None
            else f"types proposed in {len(d.judge_rounds)} round(s), "
        )
        + (
            f"stability across {d.seeds} seeds ARI {d.stability_ari:.2f}"
            if d.stability_ari is not None
            else "one run (no stability figure)"
        ),
        markup=False,
    )
    t = Table(
        title="Proposed categories (share of the texts analysed, Wilson 95% interval; "
        "per checkpoint: first -> last)",
        title_justify="left",
    )
    for col in ("key", "members (count)", "share (95% CI)", "stability", "per checkpoint"):
        t.add_column(col, justify="left" if col in ("key", "per checkpoint") else "right")
    t.add_column("keywords")
    for c in d.categories:
        trend = "-"
        if c.per_checkpoint:
            first, last = c.per_checkpoint[0], c.per_checkpoint[-1]
            trend = (
                f"{first.checkpoint} {100 * first.share:.0f}% ({_ci(first.ci)}) -> "
                f"{last.checkpoint} {100 * last.share:.0f}% ({_ci(last.ci)})"
            )
        t.add_row(
            data(c.key),
            str(c.size),
            f"{100 * c.share:.1f}% ({_ci(c.ci)})",
            "-" if c.stability is None else f"{c.stability:.2f}",
            data(trend),
            data(", ".join(c.keywords[:6])),
        )
    o.print(t)
    for c in d.categories:
        o.print(f"{c.key}: ", end="", markup=False)
        o.print(c.criterion, markup=False)
        for e in c.examples:
            line = f"  - [{e.id}] {_one_line(e.text)}"
            if e.quote:
                line += f'  quote: "{_one_line(e.quote)}"'
            o.print(line, markup=False, soft_wrap=True)
    if d.dropped:
        o.print(
            f"dropped {len(d.dropped)} cluster(s) holding {d.unassigned} texts: "
            + "; ".join(
                f"{x.reason} ({100 * x.share:.1f}%: {', '.join(x.keywords[:3])})" for x in d.dropped
            ),
            markup=False,
        )
    err_console.print(
        f"wrote {quote(out / CATEGORIES_FILE)} and {quote(out / TAXONOMY_FILE)}; relabel with "
        f"`misstep label TRACES --taxonomy {quote(out / TAXONOMY_FILE)} ...`"
    )


_OutOpt = Annotated[
    Path,
    typer.Option(
        "--out", "-o", metavar="DIR", help="Directory for categories.json and taxonomy.yaml."
    ),
]
_LabelsOpt = Annotated[
    Path | None,
    typer.Option(
        "--labels",
        metavar="RUN_DIR",
        help="Run directory (or labels.jsonl) of `misstep label`.",
    ),
]
_TextsOpt = Annotated[
    Path | None,
    typer.Option(
        "--texts",
        metavar="FILE",
        help="JSONL of texts instead of a label run: id, text, optional checkpoint, quote.",
    ),
]
_TypesOpt = Annotated[
    str,
    typer.Option(
        "--types",
        metavar="KEYS",
        help="With --labels: the error types whose explanations to cluster, comma-separated, "
        "or `all`.",
    ),
]
_EmbeddingOpt = Annotated[
    EmbeddingChoice,
    typer.Option("--embedding", help="wordllama (the discover extra) or tfidf (LSA, no extra)."),
]
_KMaxOpt = Annotated[
    int, typer.Option("--k-max", metavar="INT", min=2, help="Most clusters tried.")
]
_SeedsOpt = Annotated[
    int,
    typer.Option("--seeds", metavar="INT", min=1, help="k-means runs compared for stability."),
]
_MinShareOpt = Annotated[
    float,
    typer.Option(
        "--min-share", metavar="FLOAT", min=0.0, max=1.0, help="Drop rarer clusters (share)."
    ),
]
_MaxShareOpt = Annotated[
    float,
    typer.Option(
        "--max-share",
        metavar="FLOAT",
        min=0.0,
        max=1.0,
        help="Drop clusters at least this common (too generic; share).",
    ),
]
_JudgeOpt = Annotated[
    str | None,
    typer.Option(
        "--judge",
        metavar="NAME",
        help="openai: a judge server proposes the types and assigns every text (structured "
        "output) instead of the offline clustering.",
    ),
]
_BaseUrlOpt = Annotated[
    str | None,
    typer.Option("--base-url", metavar="URL", help="--judge openai: the server's /v1 URL."),
]
_RoundsOpt = Annotated[
    int,
    typer.Option(
        "--rounds",
        metavar="INT",
        min=1,
        help="--judge: proposal rounds (later ones see the unassigned texts).",
    ),
]
_SampleOpt = Annotated[
    int,
    typer.Option("--sample", metavar="INT", min=2, help="--judge: texts shown per proposal."),
]
_ConcurrencyOpt = Annotated[
    int,
    typer.Option("--concurrency", metavar="INT", min=1, help="--judge: requests in flight."),
]
_OutputOpt = Annotated[
    TextFormat, typer.Option("--format", help="text, or json (data alone on stdout).")
]


def _check_options(
    labels: Path | None, texts: Path | None, out: Path, judge: str | None, base_url: str | None
) -> None:
    """The option checks, before any reading."""
    if (labels is None) == (texts is None):
        raise OptionError(
            option="--labels/--texts",
            value="both" if labels is not None else "neither",
            allowed="exactly one of --labels RUN_DIR or --texts FILE",
        )
    if out.exists() and not out.is_dir():
        raise OptionError(option="--out", value=str(out), allowed="a directory")
    if judge is not None and judge != "openai":
        raise OptionError(
            option="--judge",
            value=judge,
            allowed="openai (an OpenAI-compatible server such as `vllm serve`); the in-process "
            "vllm backend is not supported by discover",
        )
    if judge is not None and base_url is None:
        raise OptionError(option="--base-url", value=None, allowed="a URL with --judge openai")
    check_base_urls([base_url] if base_url else None)


@handles_errors
def discover(
    out: _OutOpt,
    labels: _LabelsOpt = None,
    texts: _TextsOpt = None,
    types: _TypesOpt = "other",
    taxonomy: RunTaxonomyOpt = None,
    judge_id: JudgeIdOpt = None,
    embedding: _EmbeddingOpt = EmbeddingChoice.wordllama,
    k_max: _KMaxOpt = D.k_max,
    seeds: _SeedsOpt = D.seeds,
    min_share: _MinShareOpt = D.min_share,
    max_share: _MaxShareOpt = D.max_share,
    judge: _JudgeOpt = None,
    base_url: _BaseUrlOpt = None,
    model: ModelOpt = None,
    max_tokens: MaxTokensOpt = J.max_tokens,
    rounds: _RoundsOpt = D.rounds,
    sample: _SampleOpt = D.sample,
    concurrency: _ConcurrencyOpt = D.concurrency,
    seed: SeedOpt = D.seed,
    output: _OutputOpt = TextFormat.text,
) -> None:
    """Propose the error types the taxonomy misses: cluster the judge's explanations (of
    `other` by default) or free texts offline, and write OUT/categories.json and a candidate
    taxonomy OUT/taxonomy.yaml (the run's taxonomy plus the proposed types) for `label
    --taxonomy`."""

    from misstep.discover import (
        DISCOVER_STAGES,
        DiscoverConfig,
        JudgeDiscoverSettings,
        candidate_taxonomy,
        discover_with_judge,
        read_texts_file,
        texts_from_labels,
        write_taxonomy,
    )
    from misstep.discover import discover as run_discover

    _check_options(labels, texts, out, judge, base_url)
    config = bind(
        DiscoverConfig, embedding=embedding.value, k_max=k_max, seed=seed, seeds=seeds,
        min_share=min_share, max_share=max_share,
    )  # fmt: skip
    if labels is not None:
        from misstep.agreement import run_taxonomy

        labels = label_run(labels, "--labels")
        base = run_taxonomy(labels, taxonomy)
        chosen = None if types == "all" else [t.strip() for t in types.split(",") if t.strip()]
        items = texts_from_labels(labels, types=chosen, keys=base.keys, judge=judge_id)
        source = f"labels {labels} ({'all types' if chosen is None else ', '.join(chosen)})"
    else:
        from misstep.taxonomy import load_taxonomy

        assert texts is not None  # one of the two, checked above
        check_input(texts, "--texts")
        base = load_taxonomy(taxonomy)
        items = read_texts_file(texts)
        source = f"texts {texts}"
    with stage_progress("discovering") as progress:
        stages = len(DISCOVER_STAGES) if judge is None else rounds + 1
        task = progress.add_task("", total=stages)

        def on_stage(name: str) -> None:
            progress.update(task, advance=1, description=name)

        if judge is None:
            result = run_discover(
                items, config, source=source, taken_keys=base.keys, on_stage=on_stage
            )
        else:
            settings = bind(
                JudgeDiscoverSettings, base_url=base_url, model=model, max_tokens=max_tokens,
                concurrency=concurrency, seed=seed, sample=sample, rounds=rounds,
            )  # fmt: skip
            result = discover_with_judge(
                items, settings, config, source=source, taken_keys=base.keys, on_stage=on_stage
            )
    with writing(out):
        out.mkdir(parents=True, exist_ok=True)
        (out / CATEGORIES_FILE).write_text(result.model_dump_json(indent=2), encoding="utf-8")
        write_taxonomy(candidate_taxonomy(base, result), out / TAXONOMY_FILE)
    if output is TextFormat.json:
        typer.echo(result.model_dump_json(indent=2))
        return
    _print_text(result, out)


def register(app: typer.Typer) -> None:
    """Add ``discover`` to the app."""
    app.command("discover")(discover)
