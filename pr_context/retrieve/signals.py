"""Candidate rankings from each signal: lexical (BM25), semantic (cosine), structure.

Each function returns ``(chunk_index, score)`` pairs, best first, ties broken by chunk
index (which follows path and position), so every ranking is deterministic.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from pr_context.retrieve.corpus import DefinitionInfo, SearchCorpus
from pr_context.retrieve.tokens import STOPWORDS, identifiers, tokenize

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "Ranking",
    "anchor_ranking",
    "bm25_ranking",
    "bm25_scores",
    "embedding_ranking",
    "foreign_report",
    "message_ranking",
    "name_ranking",
    "neighbourhood_paths",
    "owner_ranking",
    "raised_ranking",
    "reported_exceptions",
    "structure_ranking",
    "traceback_locations",
    "usage_ranking",
]

Ranking = list[tuple[int, float]]

CANDIDATES_PER_SIGNAL = 100
CODE_WORD_STRENGTH = 1.0  # snake_case, CamelCase, dotted or backticked: surely a name
# A plain word that happens to be a definition's name ("release", "hook") is weak
# evidence: in prose it is more often the English word than the symbol.
PLAIN_WORD_STRENGTH = 0.0
MIN_PLAIN_WORD_CHARS = 4
MIN_NAME_SHARE = 0.5  # at least half of a definition name's words appear in the query
MIN_ABBREVIATION_CHARS = 3  # "max", "len", "arg": shorter prefixes are no abbreviations
SINGLE_WORD_NAME_FACTOR = 0.5
# ``InvalidSpecifier: Invalid specifier: '=>1.0'``: the answer is where it is raised.
RAISE_SITE_STRENGTH = 1.0
# A field named as code is found in the header of the class declaring it; a little below
# a definition of that name, which says more than one line of a header.
FIELD_DECLARATION_STRENGTH = 0.8
EXCEPTION_CLASS_FACTOR = 0.5
MAX_ANCHOR_DEFINITIONS = 3
RAISERS_VOTING = 10  # the candidates that vote: two answer lists' worth
# What several of them raise is what they have in common; one raiser may raise it in
# passing (a guard against misuse), which says nothing of the question.
MIN_RAISERS = 2
_EXPECTING_ROLES = frozenset({"test", "test_support"})
# A template matching less than this is a few shared words, not the message quoted.
MIN_MESSAGE_STRENGTH = 0.3
_EXCEPTION_NAME = re.compile(r"(Error|Exception|Warning|Exit|Interrupt|Expired|Invalid\w*|"
                             r"Bad\w+|\w+Failure|\w+Timeout)$")

_TRACEBACK = re.compile(r'File "([^"]+)", line (\d+)(?:, in ([\w<>]+))?')
# Other stack traces name a frame as path:line (JavaScript ``at f (src/a.ts:3:7)``, Go
# ``/go/pkg/mod/x@v1/cmd.go:98 +0x1d``, Java ``(Order.java:42)``, pytest ``a.py:3: in f``).
_FRAME = re.compile(r"(?:^|[\s(/])(?P<path>[\w.@~+-]*(?:/[\w.@~+-]+)*\."
                    r"(?:py|js|jsx|mjs|cjs|ts|tsx|go|rs|java|kt|rb|php)):(?P<line>\d+)",
                    re.MULTILINE)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def _top(scores: NDArray[np.float64] | NDArray[np.float32], limit: int) -> Ranking:
    """The ``limit`` best positive scores, ties broken by index."""
    if scores.size == 0:
        return []
    if scores.size > limit:
        threshold = np.partition(scores, scores.size - limit)[scores.size - limit]
        candidates = np.flatnonzero(scores >= threshold)
    else:
        candidates = np.arange(scores.size)
    order = candidates[np.lexsort((candidates, -scores[candidates]))][:limit]
    return [(int(i), float(scores[i])) for i in order if scores[i] > 0]


def bm25_ranking(corpus: SearchCorpus, query: str, limit: int = CANDIDATES_PER_SIGNAL
                 ) -> Ranking:
    """BM25 over code-aware tokens; only chunks sharing a query token are ranked."""
    terms = sorted(set(corpus.query_tokens(query)))
    if not terms or not corpus.chunks:
        return []
    return _top(bm25_scores(corpus, terms), limit)


def bm25_scores(corpus: SearchCorpus, terms: Sequence[str]) -> NDArray[np.float64]:
    """rank-bm25's BM25Okapi scores for ``terms``, computed over posting lists."""
    model = corpus.bm25
    scores = np.zeros(len(corpus.chunks))
    lengths = np.asarray(model.doc_len, dtype=np.float64)
    for term in terms:
        if term not in corpus.bm25_postings:
            continue
        docs, freqs = corpus.bm25_postings[term]
        norm = model.k1 * (1 - model.b + model.b * lengths[docs] / model.avgdl)
        scores[docs] += model.idf[term] * (freqs * (model.k1 + 1) / (freqs + norm))
    return scores


def embedding_ranking(cosines: NDArray[np.float32] | None,
                      limit: int = CANDIDATES_PER_SIGNAL) -> Ranking:
    """The chunks most similar to the query, from ``cosine_scores``."""
    return [] if cosines is None else _top(cosines, limit)


def cosine_scores(corpus: SearchCorpus, query_vector: NDArray[np.float32] | None
                  ) -> NDArray[np.float32] | None:
    """Cosine similarity of every chunk (vectors are normalised: a dot product)."""
    if corpus.vectors is None or query_vector is None:
        return None
    scores: NDArray[np.float32] = corpus.vectors @ query_vector
    return scores


def structure_ranking(corpus: SearchCorpus, query: str) -> Ranking:
    """Definitions the query names, and the places raising an exception it names."""
    scores = dict(_definition_matches(corpus, query))
    raised = _raise_sites(corpus, query)
    if raised:
        # An error message's reader wants where it is raised; the exception class
        # itself says little more than its name.
        scores = {i: s * EXCEPTION_CLASS_FACTOR if corpus.chunks[i].kind == "class_header"
                  else s for i, s in scores.items()}
    for index, strength in raised:
        scores[index] = max(scores.get(index, 0.0), strength)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


# ``pkg.errors.BadThing: message`` at the start of a query's last line.
_QUALIFIED_REPORT = re.compile(r"^\s*([A-Za-z_]\w*)\.(?:[A-Za-z_]\w*\.)*([A-Z]\w*)\s*:\s")


def foreign_report(corpus: SearchCorpus, query: str) -> str | None:
    """The exception a query reports from another package (``attr.exceptions.X: ...``
    asked of a codebase with no module ``attr`` and no class ``X``), if it does."""
    match = _QUALIFIED_REPORT.match(query.rstrip().rsplit("\n", 1)[-1])
    if match is None or match[1] in corpus.top_modules or match[2] in corpus.definitions_by_name:
        return None
    return match.group().strip().rstrip(":")


def reported_exceptions(corpus: SearchCorpus, query: str) -> set[str]:
    """Exception classes the query reports (``Name: message``) that the code raises."""
    names = set()
    for word, _strength in _query_names(query):
        name = word.rsplit(".", 1)[-1]
        if re.search(rf"\b{re.escape(name)}:", query) and name in corpus.definitions_by_name:
            names.add(name)
    return names


def _raise_sites(corpus: SearchCorpus, query: str) -> Ranking:
    """Production chunks that use an exception class the query names (where it is raised)."""
    found: dict[int, float] = {}
    for word, strength in _query_names(query):
        name = word.rsplit(".", 1)[-1]
        reported = bool(re.search(rf"\b{re.escape(name)}:", query))  # "Name: message"
        if strength < CODE_WORD_STRENGTH and not reported:
            continue
        if not (reported or _EXCEPTION_NAME.search(name)) or name not in corpus.definitions_by_name:
            continue
        for index in corpus.chunks_using.get(name, ()):
            chunk = corpus.chunks[index]
            if chunk.role == "production" and chunk.kind != "class_header":
                found[index] = RAISE_SITE_STRENGTH
    return list(found.items())


def _definition_matches(corpus: SearchCorpus, query: str) -> Ranking:
    """Definition chunks whose name or qualified name the query spells out.

    A name written as code counts fully; a plain word that is also a definition name
    counts a quarter. Either is shared among all definitions of that name, so an overloaded
    name weighs less than a unique one. A name written as code that no definition has may
    be a field: the class headers declaring it match instead.
    """
    scores: dict[int, float] = {}
    for word, strength in _query_names(query):
        matches = _definitions_named(corpus, word)
        if not matches:
            if strength >= CODE_WORD_STRENGTH:
                declaring = _field_declarations(corpus, word)
                for index in declaring:
                    scores[index] = max(scores.get(index, 0.0), FIELD_DECLARATION_STRENGTH
                                        / math.log2(1 + len(declaring)))
            continue
        share = strength / math.log2(1 + len(matches))
        for definition in matches:
            for index in _definition_chunks(corpus, definition):
                scores[index] = max(scores.get(index, 0.0), share)
    return list(scores.items())


def _definition_chunks(corpus: SearchCorpus, definition: DefinitionInfo) -> list[int]:
    """The chunks of a definition; for a bodiless member (an interface method, an
    associated type), the header chunk of its container that holds its line."""
    own = corpus.chunk_by_symbol.get(definition.qualified_name)
    if own:
        return own
    container = definition.qualified_name.rpartition(".")[0]
    return [i for i in corpus.chunk_by_symbol.get(container, ())
            if corpus.chunks[i].path == definition.path
            and corpus.chunks[i].start_line <= definition.start_line <= corpus.chunks[i].end_line]


def name_ranking(corpus: SearchCorpus, query: str) -> Ranking:
    """Definition chunks whose own name is spelled by the query's words.

    ``_compare_compatible`` for "how are compatible versions compared": code names
    describe behaviour, so a name made of the query's words is strong evidence even when
    the body is long and shares little else with the query. Scored by the share of the
    name's words present in the query; one-word names count half (mostly English words).
    A name word that starts a longer query word is its abbreviation (``max_len`` for
    "maximum length", ``init`` for "initializer"). A name of one word that is several of
    the query's words run together counts as spelled in full (``_run_together_matches``).
    """
    words = set(tokenize(query, drop_stopwords=True))
    shared: dict[str, set[str]] = {}
    for word in words:
        if len(word) < MIN_PLAIN_WORD_CHARS:
            continue
        for part in {word, *(word[:n] for n in range(MIN_ABBREVIATION_CHARS, len(word)))}:
            for symbol in corpus.symbols_by_name_word.get(part, ()):
                shared.setdefault(symbol, set()).add(part)
    scores: dict[int, float] = {}
    for symbol, found in shared.items():
        parts = corpus.name_words[symbol]
        share = len(found | (parts & words)) / len(parts)
        if len(parts) == 1:
            share *= SINGLE_WORD_NAME_FACTOR
        if share >= MIN_NAME_SHARE * (SINGLE_WORD_NAME_FACTOR if len(parts) == 1 else 1):
            for index in corpus.chunk_by_symbol[symbol]:
                scores[index] = share
    for index in _run_together_matches(corpus, query):
        scores[index] = 1.0
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


_LETTERS = re.compile(r"[A-Za-z]+")


def _run_together_matches(corpus: SearchCorpus, query: str) -> list[int]:
    """Chunks of the names that are two or more of the query's words run together,
    abbreviations allowed: ``typedmethodkey`` for "a typed key for cached methods",
    ``getattr`` for "get an attribute"."""
    words = {w.lower() for w in _LETTERS.findall(query) if len(w) >= MIN_ABBREVIATION_CHARS}
    found = []
    for prefix in {w[:MIN_ABBREVIATION_CHARS] for w in words}:
        for symbol, name in corpus.run_together_names.get(prefix, {}).items():
            if _fewest_words_spelling(name, words) >= 2:
                found.extend(corpus.chunk_by_symbol[symbol])
    return found


def _fewest_words_spelling(name: str, words: set[str]) -> int:
    """The fewest of ``words`` (or their abbreviations) that spell ``name`` in turn; 0
    when they cannot."""
    fewest = {0: 0}
    for start in range(len(name)):
        if start in fewest:
            for word in words:
                end = start + _spelled_length(name, start, word)
                if end > start:
                    fewest[end] = min(fewest.get(end, len(name)), fewest[start] + 1)
    return fewest.get(len(name), 0)


def _spelled_length(name: str, start: int, word: str) -> int:
    """How many letters of ``name`` from ``start`` are ``word`` or its abbreviation
    (its first three letters or more); 0 when neither."""
    for length in range(min(len(word), len(name) - start), MIN_ABBREVIATION_CHARS - 1, -1):
        if name.startswith(word[:length], start):
            return length
    return 0


def usage_ranking(corpus: SearchCorpus, query: str, roles: tuple[str, ...]) -> Ranking:
    """Chunks of the asked roles (tests, docs...) that use a name the query spells out."""
    if not roles:
        return []
    scores: dict[int, float] = {}
    for word, strength in _query_names(query):
        if strength < CODE_WORD_STRENGTH:
            continue
        users = [i for i in corpus.chunks_using.get(word.rsplit(".", 1)[-1], ())
                 if corpus.chunks[i].role in roles]
        for index in users:
            scores[index] = scores.get(index, 0.0) + strength
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _query_names(query: str) -> list[tuple[str, float]]:
    names: dict[str, float] = {}
    for name in identifiers(query):
        names[name.strip(".")] = CODE_WORD_STRENGTH
    if PLAIN_WORD_STRENGTH > 0:
        for match in _WORD.finditer(query):
            word = match.group()
            if (word not in names and len(word) >= MIN_PLAIN_WORD_CHARS
                    and word.lower() not in STOPWORDS):
                names[word] = PLAIN_WORD_STRENGTH
    return sorted(names.items())


def _field_declarations(corpus: SearchCorpus, word: str) -> list[int]:
    """Class header chunks (struct, interface, class) with a line declaring field ``word``.

    ``ValidArgsFunction CompletionFunc`` (Go), ``timeout?: number`` (TypeScript),
    ``private int timeout;`` (Java), ``timeout: float = 1.0`` (Python). A dotted word
    (``Command.ValidArgsFunction``) must name the class too.
    """
    owner, _, name = word.rpartition(".")
    tokens = tokenize(name)  # the last is the whole name, or the one (stemmed) word
    if not name.isidentifier() or not tokens or tokens[-1] not in corpus.bm25_postings:
        return []
    whole, owner_name = tokens[-1], owner.rsplit(".", 1)[-1]
    declares = re.compile(rf"(?:[\w.<>\[\]?*&,]+[ \t]+)*{re.escape(name)}"
                          rf"[ \t]*(?:\??:|=|;|,|$|[ \t]+[\w*\[(])")
    found = []
    for index in corpus.bm25_postings[whole][0]:
        chunk = corpus.chunks[int(index)]
        if chunk.kind != "class_header" or (
                owner and (chunk.symbol or "").rsplit(".", 1)[-1] != owner_name):
            continue
        if any(declares.match(line) for line in _member_lines(corpus.texts[int(index)])):
            found.append(int(index))
    return found


def _member_lines(header: str) -> list[str]:
    """The lines of a class header at its members' indentation, without that indentation.

    Deeper lines (a method's parameters on lines of their own) declare no member.
    """
    indented = [line for line in header.splitlines() if line[:1] in (" ", "\t") and line.strip()]
    if not indented:
        return []
    depth = min(len(line) - len(line.lstrip()) for line in indented)
    return [line[depth:] for line in indented if not line[depth].isspace()]


def _definitions_named(corpus: SearchCorpus, word: str) -> list[DefinitionInfo]:
    """Definitions named ``word``; a dotted word must match the qualified name's tail."""
    last = word.rsplit(".", 1)[-1]
    candidates = corpus.definitions_by_name.get(last, [])
    if "." not in word:
        return candidates
    return [d for d in candidates
            if d.qualified_name == word or d.qualified_name.endswith("." + word)]


def anchor_ranking(corpus: SearchCorpus, query: str, limit: int = CANDIDATES_PER_SIGNAL
                   ) -> Ranking:
    """Definitions whose docs (the lines around their mentions, their directives'
    bodies) share the query's words, ranked by BM25 over those texts.

    A name defined more than ``MAX_ANCHOR_DEFINITIONS`` times is skipped: the docs'
    words cannot say which definition they describe.
    """
    found: dict[int, float] = {}
    for name, score in corpus.anchors.scores(query):
        definitions = corpus.definitions_by_name.get(name, ())
        if not 0 < len(definitions) <= MAX_ANCHOR_DEFINITIONS:
            continue
        for definition in definitions:
            for index in _definition_chunks(corpus, definition):
                if corpus.chunks[index].role != "docs":
                    found[index] = max(found.get(index, 0.0), score)
        if len(found) >= limit:
            break
    return sorted(found.items(), key=lambda item: (-item[1], item[0]))


# ``raise WouldBlock``, ``raise IncompleteRead from None``, ``throw new BadInput(...)``.
_RAISE = re.compile(r"\b(?:raise|throw)\s+(?:new\s+)?([A-Za-z_][\w.]*)")


def raised_ranking(corpus: SearchCorpus, fused: Ranking, top: int = RAISERS_VOTING
                   ) -> Ranking:
    """Exception classes the best candidates raise, by the candidates' summed scores.

    An exception is described by the conditions it is raised under, and those are
    written at its raise sites: a question describing it ("raised when the connection
    closes before enough bytes were read") finds the functions raising it more readily
    than its class, whose own text is often a line. Each of the ``top`` best fused
    candidates votes with its score for the classes its code raises.
    """
    votes: dict[str, list[float]] = defaultdict(list)
    for index, score in fused[:top]:
        for name in {n.rsplit(".", 1)[-1] for n in _RAISE.findall(corpus.texts[index])}:
            votes[name].append(score)
    found: dict[int, float] = {}
    for name, scores in votes.items():
        if len(scores) < MIN_RAISERS:
            continue
        vote = sum(scores)
        definitions = [d for d in corpus.definitions_by_name.get(name, ()) if d.kind == "class"]
        if len(definitions) > MAX_ANCHOR_DEFINITIONS:
            continue
        for definition in definitions:
            for index in _definition_chunks(corpus, definition):
                found[index] = max(found.get(index, 0.0), vote)
    return sorted(found.items(), key=lambda item: (-item[1], item[0]))


# Members of one class among the best candidates: what the class does, spread over its
# methods, while its header chunk holds only their signatures.
OWNERS_VOTING = RAISERS_VOTING
MIN_VOTING_MEMBERS = 2  # one method matching says nothing of the rest of its class


def owner_ranking(corpus: SearchCorpus, fused: Ranking, top: int = OWNERS_VOTING) -> Ranking:
    """Classes with several members among the ``top`` best fused candidates, by the
    members' summed scores; the class's first header chunk stands for it.

    A question about a class ("a loader that looks for templates in every blueprint")
    describes what its methods do together; each method matches part of it, the class
    header (its signatures) little of it.
    """
    votes: dict[int, list[float]] = defaultdict(list)
    for index, score in fused[:top]:
        header = _owner_header(corpus, corpus.chunks[index].symbol)
        if header is not None:
            votes[header].append(score)
    found = {header: sum(scores) for header, scores in votes.items()
             if len(scores) >= MIN_VOTING_MEMBERS}
    return sorted(found.items(), key=lambda item: (-item[1], item[0]))


def _owner_header(corpus: SearchCorpus, symbol: str | None) -> int | None:
    """The first class-header chunk of the class defining ``symbol``, if any."""
    owner = (symbol or "").rpartition(".")[0]
    return next((i for i in corpus.chunk_by_symbol.get(owner, ())
                 if corpus.chunks[i].kind == "class_header"), None)


def message_ranking(corpus: SearchCorpus, query: str, asked: tuple[str, ...] = ()
                    ) -> Ranking:
    """Chunks holding a string literal or format template the query quotes.

    A chunk's score is its best template's match strength (``retrieve/messages.py``).
    A test holding the message expects it rather than produces it: tests count only
    when the query asks for tests (``asked``: the roles it asks for).
    """
    best: dict[int, float] = {}
    for match in corpus.messages.matches(query):
        role = corpus.chunks[match.chunk].role
        if role in _EXPECTING_ROLES and role not in asked:
            continue
        if match.strength >= MIN_MESSAGE_STRENGTH:
            best[match.chunk] = max(best.get(match.chunk, 0.0), match.strength)
    return sorted(best.items(), key=lambda item: (-item[1], item[0]))


def traceback_locations(corpus: SearchCorpus, query: str) -> Ranking:
    """Chunks at the frames of a pasted traceback, the innermost frame first."""
    scores: dict[int, float] = {}
    for depth, (raw_path, line) in enumerate(_frames(query)):
        path = _indexed_suffix(corpus.paths, raw_path)
        if path is None:
            continue
        for index, chunk in enumerate(corpus.chunks):
            if chunk.path == path and chunk.start_line <= int(line) <= chunk.end_line:
                scores[index] = max(scores.get(index, 0.0), 1.0 / (1 + depth))
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _frames(query: str) -> list[tuple[str, str]]:
    """(path, line) of each frame, innermost first.

    Python prints the innermost frame last, as pytest does; the other languages first.
    """
    python = [(path, line) for path, line, _ in _TRACEBACK.findall(query)]
    if python:
        return python[::-1]
    frames = [(m["path"], m["line"]) for m in _FRAME.finditer(query)]
    return frames[::-1] if frames and all(p.endswith(".py") for p, _ in frames) else frames


def _indexed_suffix(paths: set[str], raw: str) -> str | None:
    """The indexed path a traceback path ends with (site-packages, absolute...)."""
    raw = raw.replace("\\", "/")
    best = None
    for path in paths:
        if (raw == path or raw.endswith("/" + path)) and (best is None or len(path) > len(best)):
            best = path
    if best is None:
        tail = "/".join(raw.split("/")[-2:])
        matches = sorted(p for p in paths if p == tail or p.endswith("/" + tail))
        best = matches[0] if len(matches) == 1 else None
    return best


def neighbourhood_paths(corpus: SearchCorpus, path: str | None) -> set[str]:
    """The file itself, the files it imports and the files importing it."""
    if not path or path not in corpus.paths:
        return set()
    module_to_path = {m: p for p, m in corpus.module_of_path.items() if m}
    near = {path}
    for module in corpus.imports_by_path.get(path, ()):
        target = _resolve_module(module_to_path, module)
        if target:
            near.add(target)
    own = corpus.module_of_path.get(path)
    if own:
        for other, modules in corpus.imports_by_path.items():
            if any(m == own or m.startswith(own + ".") for m in modules):
                near.add(other)
    return near


def _resolve_module(module_to_path: dict[str, str], module: str) -> str | None:
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in module_to_path:
            return module_to_path[candidate]
    suffix_matches = sorted(p for m, p in module_to_path.items() if m.endswith("." + module))
    return suffix_matches[0] if suffix_matches else None
