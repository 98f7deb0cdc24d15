"""BM25 term statistics: counted per chunk when it is indexed, gathered at load.

Tokenising every chunk again for each process that searches cost seconds on a
repository of ten thousand chunks, so the index stores each chunk's terms and their
counts (``chunk_terms``) and a search process only gathers them into posting lists
(``lexical_model``), in vectorised Arrow and numpy steps. The model equals rank-bm25's
``BM25Okapi`` over the same tokens, to the bit: the same term frequencies, document
lengths, idf values and idf floor, summed in the same order.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pr_context.retrieve.tokens import tokenize

__all__ = ["BM25_B", "BM25_EPSILON", "BM25_K1", "EMPTY_TERM", "LEXICAL_VERSION",
           "LexicalModel", "Postings", "chunk_terms", "lexical_model"]

# Recorded in each index's manifest: the stored terms are ``tokenize``'s output, so a
# change to the tokenizer (tokens.py) or to ``chunk_terms`` must bump it, and every
# index is then rebuilt instead of mixing two tokenizations.
LEXICAL_VERSION = "1"

# rank-bm25's BM25Okapi defaults, which the search weights were tuned with.
BM25_K1 = 1.5
BM25_B = 0.75
BM25_EPSILON = 0.25  # the idf floor, as a share of the average idf
# A chunk without a single token still counts as a document of one (rank-bm25 needs one).
EMPTY_TERM = "_"

Posting = tuple[np.ndarray, np.ndarray]  # chunk indexes (int32), term frequencies (float32)


def chunk_terms(text: str) -> tuple[list[str], list[int]]:
    """A chunk's distinct terms, in the order they first occur, and how often each does."""
    counts = Counter(tokenize(text) or [EMPTY_TERM])
    return list(counts), list(counts.values())


class Postings(Mapping[str, Posting]):
    """term -> (chunks holding it, its frequency in each), chunks in index order.

    One flat array per column, sliced on lookup: a large vocabulary costs no
    per-term arrays until a query asks for the term.
    """

    def __init__(self, position: dict[str, int], offsets: np.ndarray, docs: np.ndarray,
                 freqs: np.ndarray) -> None:
        self._position = position
        self._offsets = offsets
        self._docs = docs
        self._freqs = freqs

    def __getitem__(self, term: str) -> Posting:
        i = self._position[term]
        start, end = self._offsets[i], self._offsets[i + 1]
        return self._docs[start:end], self._freqs[start:end]

    def __contains__(self, term: object) -> bool:
        return term in self._position

    def __iter__(self) -> Iterator[str]:
        return iter(self._position)

    def __len__(self) -> int:
        return len(self._position)


@dataclass(frozen=True)
class LexicalModel:
    """What BM25 scoring reads (rank-bm25's attribute names, so scoring reads alike)."""

    k1: float
    b: float
    avgdl: float
    doc_len: np.ndarray  # tokens per chunk, in index order
    idf: dict[str, float]
    postings: Postings


def lexical_model(terms: pa.ChunkedArray | pa.Array, counts: pa.ChunkedArray | pa.Array
                  ) -> LexicalModel:
    """The BM25 model of chunks whose stored ``chunk_terms`` are ``terms`` and ``counts``
    (list columns, one row per chunk, in index order)."""
    term_lists, count_lists = _combined(terms), _combined(counts)
    offsets = term_lists.offsets.to_numpy()
    offsets = offsets - offsets[0]
    frequencies = count_lists.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
    # Unique terms in order of first occurrence over the chunks, which is the order
    # rank-bm25 meets them in and so sums their idf in.
    encoded = pc.dictionary_encode(term_lists.flatten())
    vocabulary: list[str] = encoded.dictionary.to_pylist()
    term_of_entry = encoded.indices.to_numpy(zero_copy_only=False)
    doc_of_entry = np.repeat(np.arange(len(term_lists), dtype=np.int32), np.diff(offsets))
    # Every chunk holds at least EMPTY_TERM, so no segment is empty.
    doc_len = (np.add.reduceat(frequencies, offsets[:-1]) if len(term_lists)
               else np.zeros(0, np.int64))
    document_frequency = np.bincount(term_of_entry, minlength=len(vocabulary))
    order = np.argsort(term_of_entry, kind="stable")  # by term, chunks in index order
    postings = Postings(
        {term: i for i, term in enumerate(vocabulary)},
        np.concatenate([[0], np.cumsum(document_frequency)]),
        doc_of_entry[order], frequencies[order].astype(np.float32))
    return LexicalModel(
        k1=BM25_K1, b=BM25_B,
        avgdl=int(doc_len.sum()) / len(term_lists) if len(term_lists) else 0.0,
        doc_len=doc_len, idf=_idf(vocabulary, document_frequency.tolist(), len(term_lists)),
        postings=postings)


def _idf(vocabulary: list[str], document_frequency: list[int], chunks: int
         ) -> dict[str, float]:
    """BM25Okapi's idf: negative values (terms in most chunks) floored at a share of the
    average, which is summed term by term in vocabulary order, as rank-bm25 does."""
    idf: dict[str, float] = {}
    total = 0.0
    negative = []
    for term, frequency in zip(vocabulary, document_frequency, strict=True):
        value = math.log(chunks - frequency + 0.5) - math.log(frequency + 0.5)
        idf[term] = value
        total += value
        if value < 0:
            negative.append(term)
    floor = BM25_EPSILON * (total / len(idf)) if idf else 0.0
    for term in negative:
        idf[term] = floor
    return idf


def _combined(column: pa.ChunkedArray | pa.Array) -> pa.ListArray:
    combined = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    assert isinstance(combined, pa.ListArray)
    return combined
