"""What the docs say around a name: words for a definition its own code may lack.

A question is often phrased as the documentation phrases it ("load the configuration
from a Python file"), while the definition says ``from_pyfile``. The lines of the docs
around each mention of a name (one line either side) and the body of each directive
documenting it (``.. function:: name`` and the indented lines under it) are that name's
anchor text, as links' text describes the page they point to. Lexical search over anchor
texts finds the definitions the docs describe in the query's words.

Pure: built once per loaded corpus from (name, text) rows; changelogs are left out by
the loader (they say what changed, not what a name does).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from pr_context.retrieve.tokens import tokenize

__all__ = ["MAX_ANCHOR_CHARS", "AnchorIndex"]

MAX_ANCHOR_CHARS = 4_000  # per name: what the docs say about it first is enough
K1, B = 1.5, 0.75  # rank-bm25's BM25Okapi defaults, as for the chunks


class AnchorIndex:
    """BM25 (Okapi, rank-bm25's constants) over one anchor text per documented name."""

    def __init__(self, rows: Sequence[tuple[str, str]]) -> None:
        texts: dict[str, list[str]] = defaultdict(list)
        sizes: dict[str, int] = defaultdict(int)
        for name, text in rows:
            if sizes[name] < MAX_ANCHOR_CHARS:
                texts[name].append(text)
                sizes[name] += len(text)
        self.names = sorted(texts)
        postings: dict[str, dict[int, int]] = defaultdict(dict)
        lengths = []
        for number, name in enumerate(self.names):
            tokens = tokenize(" ".join(texts[name]))
            lengths.append(len(tokens))
            for token in tokens:
                postings[token][number] = postings[token].get(number, 0) + 1
        self._lengths = np.asarray(lengths or [0], dtype=np.float64)
        average = float(self._lengths.mean()) or 1.0
        self._norm = K1 * (1 - B + B * self._lengths / average)
        total = len(self.names)
        self._postings = {t: (np.fromiter(d.keys(), np.int64), np.fromiter(d.values(), np.float64))
                          for t, d in postings.items()}
        self._idf = {t: math.log((total - len(d) + 0.5) / (len(d) + 0.5) + 1.0)
                     for t, d in postings.items()}

    def __len__(self) -> int:
        return len(self.names)

    def scores(self, query: str) -> list[tuple[str, float]]:
        """(name, BM25 score) of the anchors sharing a word with the query, best first."""
        terms = sorted(set(tokenize(query, drop_stopwords=True)) & self._postings.keys())
        if not terms:
            return []
        scores = np.zeros(len(self.names))
        for term in terms:
            docs, freqs = self._postings[term]
            scores[docs] += self._idf[term] * freqs * (K1 + 1) / (freqs + self._norm[docs])
        found = np.flatnonzero(scores > 0)
        return sorted(((self.names[i], float(scores[i])) for i in found),
                      key=lambda item: (-item[1], item[0]))
