"""A loaded corpus with a few files' chunks replaced, without loading it again.

The MCP server overlays the working tree's changes on the index of a commit. Loading
the overlaid index from scratch for every edit re-reads, re-encodes and re-sorts every
chunk of the repository; here the overlaid corpus is spliced in memory from the
already-loaded corpus of the commit (``base``) and the corpus of the changed files
alone (``part``, loaded by ``load_corpus`` from their rows): base's chunks of hidden
paths are left out, part's chunks put in path order among the rest, and every index
into the chunks is mapped to its new place.

The result equals ``load_corpus`` of the overlaid index, field by field, to the bit:
chunks are in the same (path, ordinal) order, the BM25 model is merged in the order
``lexical_model`` meets the terms (``merged_model``), and what depends on chunk indexes
across files (who uses which name, the message rows) is recomputed from the spliced
columns. What does not depend on the changed files is reused as is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pyarrow as pa

from pr_context.retrieve.corpus import (
    DefinitionInfo,
    SearchCorpus,
    chunks_by_symbol,
    chunks_using_names,
    expand_messages,
)
from pr_context.retrieve.lexical import merged_model
from pr_context.retrieve.messages import MessageIndex

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["Splice", "overlaid_corpus"]

_T = TypeVar("_T")
_V = TypeVar("_V")
_Block = tuple[bool, int, int]  # (from part, start, end): a run of chunks, in order


@dataclass(frozen=True)
class Splice:
    """Where each chunk of the spliced corpus comes from."""

    blocks: list[_Block]
    base_rows: np.ndarray  # base chunk -> its index in the result, -1: left out
    part_rows: np.ndarray  # part chunk -> its index in the result

    def take(self, base: Sequence[_T], part: Sequence[_T]) -> list[_T]:
        taken: list[_T] = []
        for from_part, start, end in self.blocks:
            taken.extend((part if from_part else base)[start:end])
        return taken

    def stack(self, base: NDArray[np.float32] | None, part: NDArray[np.float32] | None
              ) -> NDArray[np.float32] | None:
        if base is None:
            return None
        if part is None:  # nothing the part holds was embedded
            part = np.zeros((len(self.part_rows), base.shape[1]), np.float32)
        return np.concatenate([(part if p else base)[s:e] for p, s, e in self.blocks]
                              or [base[:0]])

    def column(self, base: pa.ChunkedArray, part: pa.ChunkedArray) -> pa.ChunkedArray:
        pieces = [(part if p else base).slice(s, e - s) for p, s, e in self.blocks]
        return pa.chunked_array([c for piece in pieces for c in piece.chunks],
                                type=base.type)


def overlaid_corpus(base: SearchCorpus, hidden: frozenset[str],
                    part: SearchCorpus, search: bool = True) -> SearchCorpus:
    """``base`` with the chunks and definitions of ``hidden`` paths left out and
    ``part``'s (whose paths must all be hidden) put in.

    With ``search``, the search structures (BM25, names' words, messages) are made now
    from base's; without, they are made from scratch if ever asked for (a review
    searches nothing), equal either way.
    """
    splice = splice_of(base, hidden, part)
    assert base.chunk_uses is not None and part.chunk_uses is not None
    uses = splice.column(base.chunk_uses, part.chunk_uses)
    corpus = SearchCorpus(
        manifest=base.manifest,
        chunks=splice.take(base.chunks, part.chunks),
        texts=splice.take(base.texts, part.texts),
        vectors=splice.stack(base.vectors, part.vectors),
        definitions_by_name=_definitions(base.definitions_by_name, hidden,
                                         part.definitions_by_name),
        imports_by_path=_by_path(base.imports_by_path, hidden, part.imports_by_path),
        module_of_path=_by_path(base.module_of_path, hidden, part.module_of_path),
        chunk_terms=(splice.column(base.chunk_terms[0], part.chunk_terms[0]),
                     splice.column(base.chunk_terms[1], part.chunk_terms[1])),
        chunks_using=chunks_using_names(uses),
        chunk_uses=uses,
    )
    corpus.chunk_by_symbol = chunks_by_symbol(corpus.chunks)
    corpus.message_records = _messages(base, part, splice, corpus)
    corpus.message_rows = expand_messages(corpus.message_records, corpus.chunks_using)
    _anchors(corpus, base, hidden, part)
    if search:
        _reuse(corpus, base, splice, part)
    if _same_files(base, hidden, part):
        _reuse_file_structures(corpus, base)
    return corpus


def splice_of(base: SearchCorpus, hidden: frozenset[str], part: SearchCorpus) -> Splice:
    """The runs of base and part chunks, in path order: each path's chunks are one run
    in either corpus (both are in path order)."""
    runs = {path: (False, start, end) for path, (start, end) in _runs(base).items()
            if path not in hidden}
    runs.update((path, (True, start, end)) for path, (start, end) in _runs(part).items())
    blocks: list[_Block] = []
    for path in sorted(runs):
        from_part, start, end = runs[path]
        if blocks and blocks[-1][0] == from_part and blocks[-1][2] == start:
            blocks[-1] = (from_part, blocks[-1][1], end)  # adjacent: one slice
        else:
            blocks.append((from_part, start, end))
    base_rows = np.full(len(base.chunks), -1, np.int64)
    part_rows = np.zeros(len(part.chunks), np.int64)
    at = 0
    for from_part, start, end in blocks:
        (part_rows if from_part else base_rows)[start:end] = np.arange(at, at + end - start)
        at += end - start
    return Splice(blocks, base_rows, part_rows)


def _runs(corpus: SearchCorpus) -> dict[str, tuple[int, int]]:
    """path -> (first chunk, past its last chunk)."""
    runs: dict[str, tuple[int, int]] = {}
    for i, chunk in enumerate(corpus.chunks):
        start = runs.get(chunk.path, (i, i))[0]
        runs[chunk.path] = (start, i + 1)
    return runs


def _definitions(base: dict[str, list[DefinitionInfo]], hidden: frozenset[str],
                 part: dict[str, list[DefinitionInfo]]) -> dict[str, list[DefinitionInfo]]:
    """Per name, base's definitions outside ``hidden`` and part's, in path order."""
    merged: dict[str, list[DefinitionInfo]] = {}
    for name, found in base.items():
        kept = [d for d in found if d.path not in hidden]
        if kept:
            merged[name] = kept
    for name, found in part.items():
        # Stable: within a path the definitions keep their order.
        merged[name] = sorted([*merged.get(name, []), *found], key=lambda d: d.path)
    return merged


def _by_path(base: dict[str, _V], hidden: frozenset[str], part: dict[str, _V]
             ) -> dict[str, _V]:
    """Base's entries outside ``hidden`` and part's, in path order (as loaded)."""
    merged = {path: value for path, value in base.items() if path not in hidden}
    merged.update(part)
    return dict(sorted(merged.items()))


def _messages(base: SearchCorpus, part: SearchCorpus, splice: Splice,
              corpus: SearchCorpus) -> list[tuple[str, int, str | None]]:
    """Both corpora's message records at their chunks' new indexes, in path order."""
    base_rows, part_rows = splice.base_rows.tolist(), splice.part_rows.tolist()
    records = [(t, base_rows[i], n) for t, i, n in base.message_records if base_rows[i] >= 0]
    records += [(t, part_rows[i], n) for t, i, n in part.message_records]
    return _in_path_order(records, lambda r: corpus.chunks[r[1]].path)


def _anchors(corpus: SearchCorpus, base: SearchCorpus, hidden: frozenset[str],
             part: SearchCorpus) -> None:
    rows = [(p, row) for p, row in zip(base.anchor_paths, base.anchor_rows, strict=True)
            if p not in hidden]
    rows += zip(part.anchor_paths, part.anchor_rows, strict=True)
    ordered = _in_path_order(rows, lambda r: r[0])
    corpus.anchor_paths = [p for p, _ in ordered]
    corpus.anchor_rows = [row for _, row in ordered]


def _same_files(base: SearchCorpus, hidden: frozenset[str], part: SearchCorpus) -> bool:
    """Whether the overlay changes no file's presence, role or module, only contents:
    then what is made of paths, roles and modules alone comes out as base's."""
    def files(corpus: SearchCorpus) -> set[tuple[str, str, str | None]]:
        return {(c.path, c.role, corpus.module_of_path.get(c.path))
                for c in corpus.chunks if c.path in hidden}
    return files(base) == files(part) and all(
        base.module_of_path.get(p) == part.module_of_path.get(p) for p in hidden)


def _reuse_file_structures(corpus: SearchCorpus, base: SearchCorpus) -> None:
    for name in ("paths", "stub_paths", "top_modules", "role_markers"):
        if name in vars(base):
            vars(corpus)[name] = vars(base)[name]


def _in_path_order(rows: list[_T], path: Callable[[_T], str]) -> list[_T]:
    """``rows`` (two runs each in path order, on distinct paths) in path order: a
    stable sort keeps each path's rows in their order."""
    return sorted(rows, key=path)


def _reuse(corpus: SearchCorpus, base: SearchCorpus, splice: Splice,
           part: SearchCorpus) -> None:
    """The search structures, built from base's rather than from scratch where they
    would come out equal: the BM25 model merged, names' words looked up, templates
    not compiled again, the anchor index kept when no docs changed."""
    store = corpus.__dict__  # what the cached properties read
    store["bm25"] = merged_model(base.bm25, splice.base_rows, part.bm25, splice.part_rows)
    known, own = base.name_words, base.chunk_by_symbol
    fresh = part.name_words
    store["name_words"] = {s: words for s in corpus.chunk_by_symbol
                           for words in [known.get(s) if s in own else fresh.get(s)]
                           if words is not None}
    store["messages"] = MessageIndex(corpus.message_rows, previous=base.messages)
    if corpus.anchor_rows == base.anchor_rows:
        store["anchors"] = base.anchors
