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
           "LexicalModel", "Postings", "chunk_terms", "lexical_model", "merged_model"]

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
                 freqs: np.ndarray, ranks: np.ndarray, slots: list[str]) -> None:
        self._position = position
        self._offsets = offsets
        self._docs = docs
        self._freqs = freqs
        # Per entry, the term's place among its chunk's distinct terms; per slot of
        # ``offsets``, its term (a slot may be empty): what ``merged_model`` splices.
        self._ranks = ranks
        self._slots = slots

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
    ranks = np.arange(len(term_of_entry), dtype=np.int32) - np.repeat(
        offsets[:-1], np.diff(offsets)).astype(np.int32)
    postings = Postings(
        {term: i for i, term in enumerate(vocabulary)},
        np.concatenate([[0], np.cumsum(document_frequency)]),
        doc_of_entry[order], frequencies[order].astype(np.float32), ranks[order], vocabulary)
    return LexicalModel(
        k1=BM25_K1, b=BM25_B,
        avgdl=int(doc_len.sum()) / len(term_lists) if len(term_lists) else 0.0,
        doc_len=doc_len, idf=_idf(vocabulary, document_frequency, len(term_lists)),
        postings=postings)


def merged_model(base: LexicalModel, base_rows: np.ndarray, part: LexicalModel,
                 part_rows: np.ndarray) -> LexicalModel:
    """The model of a corpus spliced from ``base``'s chunks and ``part``'s: chunk ``i``
    of base is chunk ``base_rows[i]`` of the result (-1: left out), chunk ``j`` of part
    is ``part_rows[j]``; every result chunk comes from one of them, and both maps keep
    their chunks' order. Equal, to the bit, to ``lexical_model`` over the spliced
    chunks' terms, without sorting or encoding the whole corpus again: base's posting
    lists are kept in place and part's entries merged into them."""
    size = int(max(base_rows.max(initial=-1), part_rows.max(initial=-1))) + 1
    old, new = base.postings, part.postings
    slots, part_slot = _merged_slots(old, new)
    kept = base_rows[old._docs] >= 0
    ours = _Entries(np.repeat(np.arange(len(old._slots)), np.diff(old._offsets))[kept],
                    base_rows[old._docs][kept], old._freqs[kept], old._ranks[kept])
    theirs = _Entries(part_slot[np.repeat(np.arange(len(new._slots)),
                                          np.diff(new._offsets))],
                      part_rows[new._docs], new._freqs, new._ranks)
    entries = ours.merged(theirs, size)
    document_frequency = np.bincount(entries.slot, minlength=len(slots))
    offsets = np.concatenate([[0], np.cumsum(document_frequency)])
    vocabulary = _first_occurrence(slots, offsets, entries)
    doc_len = np.zeros(size, np.int64)
    doc_len[base_rows[base_rows >= 0]] = base.doc_len[base_rows >= 0]
    doc_len[part_rows] = part.doc_len
    postings = Postings({slots[s]: int(s) for s in vocabulary}, offsets, entries.doc,
                        entries.freq, entries.rank, slots)
    return LexicalModel(
        k1=BM25_K1, b=BM25_B, avgdl=int(doc_len.sum()) / size if size else 0.0,
        doc_len=doc_len, idf=_idf([slots[s] for s in vocabulary],
                                  document_frequency[vocabulary], size),
        postings=postings)


@dataclass(frozen=True)
class _Entries:
    """Posting entries, sorted by (slot, chunk)."""

    slot: np.ndarray
    doc: np.ndarray
    freq: np.ndarray
    rank: np.ndarray

    def merged(self, other: _Entries, size: int) -> _Entries:
        """Both sets in one order; ``other``, being small, is sorted and inserted."""
        key = self.slot.astype(np.int64) * size + self.doc
        other_key = other.slot.astype(np.int64) * size + other.doc
        order = np.argsort(other_key, kind="stable")
        at = np.searchsorted(key, other_key[order])
        return _Entries(*(np.insert(mine, at, theirs[order]) for mine, theirs in (
            (self.slot, other.slot), (self.doc, other.doc), (self.freq, other.freq),
            (self.rank, other.rank))))


def _merged_slots(base: Postings, part: Postings) -> tuple[list[str], np.ndarray]:
    """Base's slots followed by part's new terms, and each part slot's merged slot."""
    slots = list(base._slots)
    part_slot = np.empty(len(part._slots), np.int64)
    for i, term in enumerate(part._slots):
        found = base._position.get(term)
        if found is None:
            found = len(slots)
            slots.append(term)
        part_slot[i] = found
    return slots, part_slot


def _first_occurrence(slots: list[str], offsets: np.ndarray, entries: _Entries
                      ) -> np.ndarray:
    """The slots holding entries, in order of their terms' first occurrence over the
    chunks (the chunk, then the place among its terms): ``lexical_model``'s order."""
    live = np.flatnonzero(np.diff(offsets) > 0)
    first = offsets[live]
    return live[np.lexsort((entries.rank[first], entries.doc[first]))]


def _idf(vocabulary: list[str], document_frequency: np.ndarray, chunks: int
         ) -> dict[str, float]:
    """BM25Okapi's idf: negative values (terms in most chunks) floored at a share of the
    average, which is summed term by term in vocabulary order, as rank-bm25 does.

    A term's idf depends only on its document frequency: each distinct frequency's
    value is computed once, with the same float operations as term by term.
    """
    distinct, which = np.unique(np.asarray(document_frequency, np.int64),
                                return_inverse=True)
    value_of = [math.log(chunks - f + 0.5) - math.log(f + 0.5) for f in distinct.tolist()]
    values = [value_of[i] for i in which.tolist()]
    total = 0.0
    for value in values:
        total += value
    floor = BM25_EPSILON * (total / len(values)) if values else 0.0
    return {term: value if value >= 0 else floor
            for term, value in zip(vocabulary, values, strict=True)}


def _combined(column: pa.ChunkedArray | pa.Array) -> pa.ListArray:
    combined = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    assert isinstance(combined, pa.ListArray)
    return combined
