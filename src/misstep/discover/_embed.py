"""Text embeddings for clustering, all offline: wordllama's static token vectors (weights in
its wheel, MIT) or TF-IDF reduced by LSA (scikit-learn).

wordllama texts are embedded as a SIF average (Arora et al. 2017, "A simple but tough-to-beat
baseline for sentence embeddings"): each token weighs ``a / (a + p(token))`` with ``p`` its
frequency in the texts at hand, so words every explanation uses ("step", "wrong") count less
than the words that tell errors apart; the mean vector and the first principal direction, which
all texts share, are removed before the rows are scaled to unit length."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from misstep.errors import OptionError

__all__ = ["EMBEDDINGS", "Embedding", "embed_texts", "wordllama_available"]

Embedding = Literal["wordllama", "tfidf"]
EMBEDDINGS: tuple[Embedding, ...] = ("wordllama", "tfidf")
"""The embeddings ``misstep discover --embedding`` accepts; the first is the default."""

SIF_A = 1e-3  # Arora et al.'s recommended smoothing (1e-3 to 1e-4); see benchmarks/bench_discover
_PC_SAMPLE = 2_000  # rows used to find the shared principal direction (enough for 256 dims)
_LSA_DIMS = 100

FloatArray = npt.NDArray[np.float64]


def wordllama_available() -> bool:
    """Whether the optional ``wordllama`` package (``misstep[discover]``) is installed."""
    return importlib.util.find_spec("wordllama") is not None


def _load_wordllama() -> Any:
    if not wordllama_available():
        raise OptionError(
            option="embedding",
            value="wordllama",
            allowed="tfidf (wordllama is not installed)",
            hint="install it with `pip install 'misstep[discover]'`, or use `embedding=tfidf`",
        )
    import wordllama
    from wordllama import WordLlama

    # Its loader looks for the weights in a user cache and would download them: point it at
    # the package's own folder, where the wheel ships them, and forbid any download.
    return WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)


def _unit_rows(x: npt.NDArray[np.float64]) -> FloatArray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.asarray(x / norms, dtype=np.float64)


def _mean(texts: list[str], seed: int) -> FloatArray:
    # wordllama's own average pooling (no weighting): kept for the benchmark's comparison.
    model = _load_wordllama()
    return _unit_rows(np.asarray(model.embed(texts, norm=False), dtype=np.float64))


def _sif(texts: list[str], seed: int) -> FloatArray:
    import scipy.sparse as sp

    model = _load_wordllama()
    vectors = np.asarray(model.embedding, dtype=np.float32)
    # wordllama's tokenizer pads a batch to its longest text, and the padding ids are not
    # words. Counted, they pulled every short text towards the padding vector, the more so
    # the longer the set's longest text; padded, one 10^4-token text also made the batch
    # 10^4 ids wide for every text. This model was loaded for this call alone: unpad it.
    model.tokenizer.no_padding()
    encodings = model.tokenizer.encode_batch(texts, add_special_tokens=False)
    lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))
    cols = np.fromiter((i for e in encodings for i in e.ids), dtype=np.int64)
    rows = np.repeat(np.arange(len(texts)), lengths)
    counts = sp.csr_matrix(
        (np.ones(len(cols), dtype=np.float32), (rows, cols)),
        shape=(len(texts), vectors.shape[0]),
    )
    counts.sum_duplicates()
    freq = np.asarray(counts.sum(axis=0)).ravel()
    weights = SIF_A / (SIF_A + freq / max(freq.sum(), 1.0))
    weighted = counts @ sp.diags(weights.astype(np.float32))
    totals = np.asarray(weighted.sum(axis=1)).ravel()
    totals[totals == 0] = 1.0
    x = np.asarray(sp.diags(1.0 / totals) @ weighted @ vectors, dtype=np.float64)
    x -= x.mean(axis=0)
    rng = np.random.default_rng(seed)
    sample = x[rng.choice(len(x), size=min(len(x), _PC_SAMPLE), replace=False)]
    if len(sample) >= 2:
        _, _, vt = np.linalg.svd(sample, full_matrices=False)
        x -= np.outer(x @ vt[0], vt[0])
    return _unit_rows(x)


def _tfidf(texts: list[str], seed: int) -> FloatArray:
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    matrix = TfidfVectorizer(sublinear_tf=True, stop_words="english", min_df=2).fit_transform(texts)
    dims = min(_LSA_DIMS, matrix.shape[1] - 1, len(texts) - 1)
    if dims < 2:
        return _unit_rows(np.asarray(matrix.toarray(), dtype=np.float64))
    reduced = TruncatedSVD(dims, random_state=seed).fit_transform(matrix)
    return _unit_rows(np.asarray(reduced, dtype=np.float64))


def embed_texts(
    texts: list[str], embedding: Embedding = "wordllama", *, seed: int = 0
) -> FloatArray:
    """One unit-length row per text. ``wordllama`` needs the ``misstep[discover]`` extra
    (OptionError with the install hint otherwise); ``tfidf`` needs only scikit-learn."""
    if embedding == "wordllama":
        return _sif(texts, seed)
    if embedding == "tfidf":
        return _tfidf(texts, seed)
    raise OptionError(option="embedding", value=embedding, allowed=", ".join(EMBEDDINGS))
