"""Distinguishing keywords of each cluster: class-based TF-IDF (c-TF-IDF, as in BERTopic).

All texts of a cluster form one document; a word's weight is its frequency in that document
times ``log(1 + A / f)``, with ``A`` the mean number of words per cluster and ``f`` the word's
frequency over all clusters: frequent in this cluster, rare elsewhere."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["ctfidf_keywords"]

_TOKEN = r"(?u)\b[^\W\d_]{3,}\b"  # words of 3+ letters: numbers and one-letter variables say little


def ctfidf_keywords(
    texts: list[str], labels: npt.NDArray[np.int64], *, top: int = 8
) -> dict[int, list[str]]:
    """The ``top`` words of each cluster id in ``labels``, best first."""
    from sklearn.feature_extraction.text import CountVectorizer

    clusters = [int(c) for c in np.unique(labels)]
    vectorizer = CountVectorizer(token_pattern=_TOKEN, stop_words="english", max_features=50_000)
    try:
        counts = vectorizer.fit_transform(texts)
    except ValueError:  # every text is stop words or numbers: no vocabulary
        return {c: [] for c in clusters}
    vocab = vectorizer.get_feature_names_out()
    per_class = np.vstack(
        [np.asarray(counts[labels == c].sum(axis=0)).ravel() for c in clusters]
    ).astype(np.float64)
    totals = per_class.sum(axis=1, keepdims=True)
    totals[totals == 0] = 1.0
    tf = per_class / totals
    mean_words = per_class.sum() / len(clusters)
    idf = np.log1p(mean_words / np.maximum(per_class.sum(axis=0), 1.0))
    scores = tf * idf
    out: dict[int, list[str]] = {}
    for i, c in enumerate(clusters):
        order = np.argsort(-scores[i], kind="stable")
        out[c] = [str(vocab[j]) for j in order[:top] if per_class[i, j] > 0]
    return out
