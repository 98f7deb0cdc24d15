"""Hybrid search over one index: BM25 + embeddings + structure, fused, then role-aware.

``search`` is pure: it takes the loaded corpus and the query's vector (or None for an
index without embeddings) and returns ranked hits with every score component, the
candidates before re-ranking, and a message when nothing is relevant enough.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from pr_context.defaults import DEFAULT_K
from pr_context.retrieve.corpus import ChunkInfo, SearchCorpus
from pr_context.retrieve.foreign_names import unknown_names
from pr_context.retrieve.fusion import (
    ASKED_KIND_BOOST,
    DEFINITION_KINDS,
    IMPORTED_NAME_BOOST,
    INTENT_ROLES,
    NEIGHBOURHOOD_BOOST,
    QueryIntent,
    asked_kinds,
    detect_intent,
    fuse,
    intent_words,
    prose_of,
    role_weight,
)
from pr_context.retrieve.name_meaning import NameEmbedder, name_meaning_ranking
from pr_context.retrieve.signals import (
    anchor_ranking,
    bm25_ranking,
    cosine_scores,
    embedding_ranking,
    foreign_report,
    message_ranking,
    name_ranking,
    neighbourhood_paths,
    owner_ranking,
    raised_ranking,
    reported_exceptions,
    structure_ranking,
    traceback_locations,
    usage_ranking,
)
from pr_context.retrieve.tokens import TECHNOLOGY_NAMES, tokenize
from pr_context.roles import is_history

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["SearchHit", "SearchOutcome", "search"]

# Relevance threshold, calibrated on the negative gold cases of the tuning split: below
# this best cosine similarity, and with no exact name or traceback match, the index
# holds nothing that answers the query.
MIN_QUERY_COSINE = 0.30
# The share of the query's words the best lexical hit must contain: without embeddings
# always; with them, unless the closest chunk is at least this similar. Calibrated on the
# mined tuning packages (evals/mined.yml): positives whose best lexical match holds
# under 60 % of their words have a best similarity of 0.45 or more, near every negative
# sits below both.
MIN_LEXICAL_COVERAGE = 0.6
WEAK_QUERY_COSINE = 0.45
# A rare word the codebase never uses is the user's own wording, not a concept it lacks,
# when one chunk holds this share of the query's other words and is at least
# WEAK_QUERY_COSINE similar ("apply then flatten nested schema options"). No mined
# tuning negative reaches it; mined tuning behaviour hit@5 0.740 -> 0.746.
PARAPHRASE_COVERAGE = 0.8
# A single hit this far below the query's best similarity is noise, not an answer.
MIN_HIT_COSINE_RATIO = 0.5
# A rare word the codebase does use, but only in chunks this far below the query's best
# similarity, names something else there (rich's ":clipboard:" emoji is no clipboard
# support, an SPDX "PostgreSQL" license id no database). On the tuning cases a
# positive's rare word always reaches a chunk at >= 0.50 of the best similarity and the
# unrelated mentions sit at 0.07 and 0.17: half the noise ratio keeps a margin both ways.
UNRELATED_MENTION_RATIO = MIN_HIT_COSINE_RATIO / 2
TEST_ROLES = frozenset(INTENT_ROLES["tests"])
DEFINITION_BOOST = 1.2  # a definition beats a chunk that only uses the name
# "ValueError: bad x" asks where and why it is raised: the exception class itself, which
# every signal matches by name, steps behind the raise sites.
REPORTED_EXCEPTION_FACTOR = 0.5
# A docs page whose file name the query uses is about what it asks ("how do I test my
# app": docs/testing.rst); a changelog records what changed, so for any other question
# the page describing the code comes first.
NAMED_PAGE_BOOST = 1.3
# A type stub beside its module (``m.pyi`` by ``m.py``, ``x.d.ts`` by ``x.js``) declares
# what the module's code does; the code answers how.
STUB_FACTOR = 0.5
HISTORY_FACTOR = 0.5
MIN_PAGE_NAME_CHARS = 4
# Signals that match what the query spells out (a name, a frame, a message), not what it
# resembles; a chunk they found is kept however dissimilar it looks.
EXACT_SIGNALS = ("structure", "traceback", "usage", "message")
# An exception class raised by the best candidates is kept too: its own text (a class
# line) resembles no question, its raise sites do; so is a class whose methods are
# among them, for the same reason.
KEPT_SIGNALS = (*EXACT_SIGNALS, "raised", "owner")
# So is a definition whose name the query's words mostly spell, two of three words or
# more ("setup and return a filter stack": ``build_filter_stack``): a name says what its
# body, however unlike the question's wording, does. Half a name (``test_parse`` for
# "parse the configuration") is no such evidence. Mined tuning behaviour hit@5 0.746 ->
# 0.752, negatives unchanged.
SPELLED_NAME_SHARE = 2 / 3
# Only evidence this strong overrides the relevance threshold: a name written as code,
# not a plain word that happens to name a definition; most of a message template's
# words, in order, not a few of them.
EXACT_EVIDENCE_STRENGTH = MappingProxyType({"structure": 0.5, "traceback": 0.5,
                                            "usage": 0.5, "message": 0.7})


@dataclass(frozen=True)
class SearchHit:
    rank: int
    chunk_id: str
    path: str
    symbol: str | None
    role: str
    kind: str
    start_line: int
    end_line: int
    revision: str
    score: float
    components: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchOutcome:
    query: str
    rewritten_query: str
    intent: str
    hits: list[SearchHit]
    candidates: list[SearchHit]  # fused, before role weights and the threshold
    message: str | None


def search(corpus: SearchCorpus, query: str, k: int = DEFAULT_K,
           query_vector: NDArray[np.float32] | None = None,
           path_context: str | None = None,
           rare_words: frozenset[str] = frozenset(),
           embed_names: NameEmbedder | None = None) -> SearchOutcome:
    """The ``k`` best chunks for ``query``, or none with a message when nothing is relevant.

    ``rare_words`` are the query's prose words and product names that are rare in
    general English (the embedding tokenizer splits them) and the formats, protocols and
    services it names (``TECHNOLOGY_NAMES``); one the codebase never uses, or uses only
    in chunks unrelated to the query, names a concept it does not have. ``embed_names``
    embeds the best candidates' names for the ``name_meaning`` signal (none without it).
    """
    intent = detect_intent(query, corpus.role_markers)
    cosines = cosine_scores(corpus, query_vector)
    rankings = {
        "bm25": bm25_ranking(corpus, query),
        "embedding": embedding_ranking(cosines),
        "structure": structure_ranking(corpus, query),
        "name": name_ranking(corpus, query),
        "traceback": traceback_locations(corpus, query),
        "message": message_ranking(corpus, query, INTENT_ROLES[intent.intent]),
        # The docs' words point at definitions, which a question for docs, tests or
        # examples does not ask for.
        "anchor": [] if INTENT_ROLES[intent.intent] else anchor_ranking(corpus, query),
        "usage": usage_ranking(corpus, query, INTENT_ROLES[intent.intent]),
    }
    contributions = fuse(rankings, intent)
    if not INTENT_ROLES[intent.intent]:  # exception classes are definitions
        names = (_NameReader(query_vector, embed_names)
                 if query_vector is not None and embed_names is not None else None)
        _add_second_stage(corpus, rankings, contributions, intent, names)
    rewritten = " ".join(tokenize(query, drop_stopwords=True))
    candidates = _ordered(corpus, contributions, lambda i, parts: sum(parts.values()))
    message = _irrelevance(corpus, query, rankings, cosines, rare_words, intent)
    if message:
        return SearchOutcome(query, rewritten, intent.intent, [], candidates[:k * 5], message)
    scorer = _Scorer(
        corpus=corpus,
        intent=intent,
        cosines=cosines,
        best_cosine=max((float(cosines[i]) for i in contributions), default=0.0)
        if cosines is not None else 0.0,
        near=neighbourhood_paths(corpus, path_context),
        imported=frozenset(corpus.imports_by_path.get(path_context or "", ())),
        reported=frozenset(reported_exceptions(corpus, query)),
        query_tokens=frozenset(tokenize(query, drop_stopwords=True)),
        kinds=asked_kinds(query),
        spelled=frozenset(i for i, share in rankings["name"] if share >= SPELLED_NAME_SHARE),
    )
    ranked = [h for h in _ordered(corpus, contributions, scorer.score, cosines) if h.score > 0]
    return SearchOutcome(query, rewritten, intent.intent, _renumber(ranked[:k]),
                         candidates[:k * 5], None if ranked else
                         "no indexed chunk is relevant enough to this query")


@dataclass(frozen=True)
class _Scorer:
    """Turns a chunk's fused signal contributions into its final score."""

    corpus: SearchCorpus
    intent: QueryIntent
    cosines: NDArray[np.float32] | None
    best_cosine: float
    near: set[str]
    imported: frozenset[str]
    reported: frozenset[str]
    query_tokens: frozenset[str]
    kinds: frozenset[str]  # definition kinds the query asks for (fusion.asked_kinds)
    spelled: frozenset[int]  # chunks of the names the query spells (SPELLED_NAME_SHARE)

    def score(self, index: int, parts: dict[str, float]) -> float:
        chunk = self.corpus.chunks[index]
        if chunk.role == "deprecated" and not self.intent.wants_deprecated:
            return 0.0  # filtered by policy, not merely down-weighted
        if (self.cosines is not None and not _has_exact_evidence(parts)
                and index not in self.spelled
                and float(self.cosines[index]) < self.best_cosine * MIN_HIT_COSINE_RATIO):
            return 0.0
        weight = role_weight(chunk.role, self.intent, chunk.symbol, chunk.path)
        return sum(parts.values()) * weight * self._factor(chunk, parts)

    def _factor(self, chunk: ChunkInfo, parts: dict[str, float]) -> float:
        factor = 1.0
        if chunk.kind in DEFINITION_KINDS and "structure" in parts:
            factor *= DEFINITION_BOOST
        if chunk.kind == "class_header" and (chunk.symbol or "").rsplit(".", 1)[-1] in \
                self.reported:
            factor *= REPORTED_EXCEPTION_FACTOR
        if chunk.path in self.near:
            factor *= NEIGHBOURHOOD_BOOST
        if chunk.symbol and chunk.symbol in self.imported:
            factor *= IMPORTED_NAME_BOOST
        if chunk.role == "docs":
            factor *= self._page_factor(chunk.path)
        if chunk.path in self.corpus.stub_paths:
            factor *= STUB_FACTOR
        if self.kinds and self.corpus.definition_kinds.get(chunk.symbol or "") in self.kinds:
            factor *= ASKED_KIND_BOOST
        return factor

    def _page_factor(self, path: str) -> float:
        """A docs page named by the query ("testing", "routing", "changelog") leads; a
        changelog not named steps back."""
        stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        if set(t for t in tokenize(stem) if len(t) >= MIN_PAGE_NAME_CHARS) & self.query_tokens:
            return NAMED_PAGE_BOOST
        return HISTORY_FACTOR if is_history(path) else 1.0


@dataclass(frozen=True)
class _NameReader:
    query_vector: NDArray[np.float32]
    embed: NameEmbedder


def _add_second_stage(corpus: SearchCorpus, rankings: dict[str, list[tuple[int, float]]],
                      contributions: dict[int, dict[str, float]], intent: QueryIntent,
                      names: _NameReader | None) -> None:
    """Fuse in the exception classes the best fused candidates raise, the classes
    several of them belong to and, for a question about the implementation, what their
    names mean (a second stage: it reads the first's order)."""
    fused = sorted(((i, sum(parts.values())) for i, parts in contributions.items()),
                   key=lambda item: (-item[1], item[0]))
    second = {"raised": raised_ranking(corpus, fused), "owner": owner_ranking(corpus, fused)}
    if names is not None and intent.intent == "implementation":
        second["name_meaning"] = name_meaning_ranking(corpus, fused, names.query_vector,
                                                      names.embed)
    rankings.update(second)
    for index, part in fuse(second, intent).items():
        contributions.setdefault(index, {}).update(part)


def _has_exact_evidence(parts: dict[str, float]) -> bool:
    return any(signal in parts for signal in KEPT_SIGNALS)


def _irrelevance(corpus: SearchCorpus, query: str, rankings: dict[str, list[tuple[int, float]]],
                 cosines: NDArray[np.float32] | None, rare_words: frozenset[str],
                 intent: QueryIntent) -> str | None:
    """Why nothing should be returned, or None when something may be relevant."""
    if not corpus.chunks:
        return "the index holds no chunks"
    if _exact_match(corpus, rankings):
        return None
    foreign = foreign_report(corpus, query)
    if foreign and not rankings["message"]:
        return (f"nothing relevant: {foreign!r} is raised by another package, and no "
                "message of this codebase matches")
    unknown = sorted(w for w in rare_words if not _known(corpus, w))
    if unknown and _paraphrased(corpus, query, rankings, cosines, unknown):
        unknown = []
    unknown = unknown or unknown_names(corpus, query)
    if unknown:
        return ("nothing relevant: the codebase never mentions "
                + ", ".join(repr(w) for w in unknown))
    if intent.intent != "tests":
        in_tests = _rare_words_only_in_tests(corpus, rare_words)
        if in_tests:
            return ("nothing relevant: the codebase mentions "
                    + ", ".join(repr(w) for w in in_tests) + " only in its tests")
    if cosines is not None:
        best = float(cosines.max())
        if best < MIN_QUERY_COSINE:
            return (f"nothing relevant: the closest chunk's similarity {best:.2f} is below "
                    f"the relevance threshold {MIN_QUERY_COSINE:.2f}")
        unrelated = _unrelated_rare_words(corpus, rare_words, cosines)
        if unrelated:
            return ("nothing relevant: the codebase mentions "
                    + ", ".join(repr(w) for w in unrelated)
                    + " only in chunks unrelated to the query")
        # A how-to question describes a task in the user's own words ("save what I
        # printed as a web page"): a weak lexical match is what it is expected to have.
        coverage = _lexical_coverage(corpus, query, rankings["bm25"])
        if (intent.intent != "how_to" and best < WEAK_QUERY_COSINE
                and coverage < MIN_LEXICAL_COVERAGE):
            return (f"nothing relevant: the best lexical match covers {coverage:.0%} of the "
                    f"query's words and the closest chunk's similarity is {best:.2f}")
        return None
    return _lexical_irrelevance(corpus, query, rankings["bm25"])


def _common_word(word: str) -> bool:
    """A lower-case word of letters that names no technology: a user's wording may use
    it for what the code calls otherwise ("flatten", "superclass"); a product, a
    technology or a value ("PostgreSQL", "redis", "kubernetes2") is a name for something
    the codebase has or has not."""
    return word.isalpha() and word.islower() and word not in TECHNOLOGY_NAMES


def _paraphrased(corpus: SearchCorpus, query: str,
                 rankings: dict[str, list[tuple[int, float]]],
                 cosines: NDArray[np.float32] | None, unknown: list[str]) -> bool:
    """Whether words of the query the codebase never uses are the user's own wording:
    common words, and one chunk holds nearly every other word and is similar."""
    return (all(map(_common_word, unknown)) and cosines is not None
            and float(cosines.max()) >= WEAK_QUERY_COSINE
            and _lexical_coverage(corpus, query, rankings["bm25"]) >= PARAPHRASE_COVERAGE)


# A prefix that turns a word the codebase knows into one the tokenizer splits: "mistypes"
# is about types, "unsubscribing" about subscribing, not a concept the code lacks.
_NEGATING_PREFIXES = ("mis", "un", "non", "dis")


def _known(corpus: SearchCorpus, word: str) -> bool:
    """Whether the codebase uses ``word``, or the word it negates or mistakes."""
    forms = [word] + [word[len(p):] for p in _NEGATING_PREFIXES
                      if word.lower().startswith(p) and len(word) - len(p) >= 4]
    return any(set(corpus.query_tokens(form)) & corpus.vocabulary for form in forms)


def _unrelated_rare_words(corpus: SearchCorpus, rare_words: frozenset[str],
                          cosines: NDArray[np.float32]) -> list[str]:
    """Rare words whose every use lies in a chunk far less similar than the best one.

    Only the chunks holding the word are read (its posting lists), so the cost does not
    grow with the corpus beyond those.
    """
    floor = float(cosines.max()) * UNRELATED_MENTION_RATIO
    unrelated = []
    for word in sorted(rare_words):
        chunks = _chunks_using(corpus, word)
        if chunks and float(cosines[chunks].max()) < floor:
            unrelated.append(word)
    return unrelated


def _rare_words_only_in_tests(corpus: SearchCorpus, rare_words: frozenset[str]) -> list[str]:
    """Rare words found in test code alone: tests feed arbitrary data (made-up hosts,
    products, names) to the code, so such a word names nothing the codebase does."""
    only = []
    for word in sorted(rare_words):
        chunks = _chunks_using(corpus, word)
        if chunks and all(corpus.chunks[i].role in TEST_ROLES for i in chunks):
            only.append(word)
    return only


def _chunks_using(corpus: SearchCorpus, word: str) -> list[int]:
    """The chunks holding any token of ``word``, from its posting lists."""
    tokens = set(tokenize(word)) & corpus.vocabulary
    return sorted({int(i) for t in tokens for i in corpus.bm25_postings[t][0]})


def _exact_match(corpus: SearchCorpus, rankings: dict[str, list[tuple[int, float]]]) -> bool:
    """A name written as code, a raise site, a traceback frame, a usage or a message
    template matched."""
    return any(score >= EXACT_EVIDENCE_STRENGTH.get(signal, 1.0)
               for signal in EXACT_SIGNALS for _, score in rankings[signal][:1])


def _lexical_coverage(corpus: SearchCorpus, query: str, bm25: list[tuple[int, float]]
                      ) -> float:
    """The share of the query's own words (not its code, quoted values or intent words)
    that its best lexical match holds."""
    asked_for = set(tokenize(" ".join(intent_words(query, corpus.role_markers))))
    words = (set(corpus.query_tokens(prose_of(query)))
             or set(corpus.query_tokens(query))) - asked_for
    if not words or not bm25:
        return 0.0
    return len(words & set(tokenize(corpus.texts[bm25[0][0]]))) / len(words)


def _lexical_irrelevance(corpus: SearchCorpus, query: str,
                         bm25: list[tuple[int, float]]) -> str | None:
    if not bm25:
        return "nothing relevant: no indexed chunk shares a word with the query"
    coverage = _lexical_coverage(corpus, query, bm25)
    if coverage < MIN_LEXICAL_COVERAGE:
        return (f"nothing relevant: the best lexical match covers {coverage:.0%} of the "
                f"query's words (threshold {MIN_LEXICAL_COVERAGE:.0%})")
    return None


def _ordered(corpus: SearchCorpus, contributions: dict[int, dict[str, float]],
             score_of: Callable[[int, dict[str, float]], float],
             cosines: NDArray[np.float32] | None = None) -> list[SearchHit]:
    """Hits sorted by score, ties broken by path, line and chunk id (deterministic)."""
    scored = [(float(score_of(i, parts)), i, parts) for i, parts in contributions.items()]
    scored.sort(key=lambda item: (-round(item[0], 12), corpus.chunks[item[1]].path,
                                  corpus.chunks[item[1]].start_line,
                                  corpus.chunks[item[1]].chunk_id))
    hits = []
    for rank, (score, index, parts) in enumerate(scored, start=1):
        chunk = corpus.chunks[index]
        components = dict(parts)
        if cosines is not None:
            components["cosine"] = float(cosines[index])
        hits.append(SearchHit(rank, chunk.chunk_id, chunk.path, chunk.symbol, chunk.role,
                              chunk.kind, chunk.start_line, chunk.end_line, corpus.revision,
                              round(score, 6), components))
    return hits


def _renumber(hits: list[SearchHit]) -> list[SearchHit]:
    return [replace(h, rank=i) for i, h in enumerate(hits, start=1)]
