"""What a definition's name means, read by the embedding model.

The lexical ``name`` signal meets a name only in the query's own words. A name also says
what its definition does in other words: ``CancelScope.shield`` for "true if this scope
is shielded from external cancellation", ``get_cases`` for "the list of (condition,
value) pairs". The best fused candidates' names, split into words with their owner's
("cancel scope shield"), are embedded and ranked by their similarity to the query. Only
the names are embedded, at query time: a few words each, one small batch per query.

Pure: the caller passes the function that embeds (``Searcher`` caches its vectors).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import islice
from typing import TYPE_CHECKING

from pr_context.retrieve.tokens import identifier_words

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from pr_context.retrieve.corpus import SearchCorpus

__all__ = ["NAME_CANDIDATES", "NameEmbedder", "name_meaning_ranking", "name_phrase"]

NameEmbedder = Callable[[Sequence[str]], "NDArray[np.float32]"]
# The candidates whose names are read: three answer lists' worth, past which a name
# alone rarely lifts a chunk into the answer (mined tuning: 30 and 50 score alike).
NAME_CANDIDATES = 30
_NAME_SEGMENTS = 2  # the definition's own name and its owner's (class or module)


def name_phrase(symbol: str) -> str:
    """``anyio._core._tasks.CancelScope.shield`` -> ``cancel scope shield``."""
    segments = symbol.split(".")[-_NAME_SEGMENTS:]
    return " ".join(w for s in segments for w in identifier_words(s))


def name_meaning_ranking(corpus: SearchCorpus, fused: Sequence[tuple[int, float]],
                         query_vector: NDArray[np.float32], embed: NameEmbedder
                         ) -> list[tuple[int, float]]:
    """The best fused candidates that define something (docs pages left out), by how
    similar their names' words are to the query."""
    defining = (i for i, _ in fused
                if corpus.chunks[i].symbol and corpus.chunks[i].role != "docs")
    chosen = [(i, p) for i in islice(defining, NAME_CANDIDATES)
              if (p := name_phrase(corpus.chunks[i].symbol or ""))]
    if not chosen:
        return []
    distinct = sorted({p for _, p in chosen})
    vectors = dict(zip(distinct, embed(distinct), strict=True))
    scored = [(i, float(vectors[p] @ query_vector)) for i, p in chosen]
    return sorted(scored, key=lambda item: (-item[1], item[0]))
