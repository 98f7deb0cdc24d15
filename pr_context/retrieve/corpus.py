"""Everything retrieval needs from one index, loaded once and kept in memory.

Loading reads the chunk metadata, the vectors and the definitions and imports in bulk.
The BM25 model is gathered from the terms the index stored for each chunk on first
lexical query, so a caller that only needs the graph never pays for it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pr_context.index.store import IndexStore, Manifest
from pr_context.parse.code_paths import absolute_module, module_path
from pr_context.retrieve.anchors import AnchorIndex
from pr_context.retrieve.lexical import LexicalModel, Postings, lexical_model
from pr_context.retrieve.messages import MessageIndex
from pr_context.retrieve.tokens import run_together_names, stem, tokenize
from pr_context.roles import is_history

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["ChunkInfo", "DefinitionInfo", "SearchCorpus", "chunks_by_symbol",
           "chunks_using_names", "expand_messages", "load_corpus"]


@dataclass(frozen=True)
class ChunkInfo:
    chunk_id: str
    path: str
    symbol: str | None
    kind: str
    role: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class DefinitionInfo:
    name: str
    qualified_name: str
    path: str
    kind: str
    start_line: int


@dataclass
class SearchCorpus:
    """Chunks (row i of ``vectors`` is chunk i), definitions and the import graph."""

    manifest: Manifest
    chunks: list[ChunkInfo]
    texts: list[str]  # context + text, what BM25 tokenises
    vectors: NDArray[np.float32] | None  # None for an index built without embeddings
    definitions_by_name: dict[str, list[DefinitionInfo]]
    imports_by_path: dict[str, set[str]]  # path -> modules it imports (dotted)
    module_of_path: dict[str, str]  # path -> dotted module of its definitions
    # Each chunk's stored BM25 terms and their counts (list columns), for ``bm25``.
    chunk_terms: tuple[pa.ChunkedArray, pa.ChunkedArray]
    chunk_by_symbol: dict[str, list[int]] = field(default_factory=dict)
    # identifier -> chunks that use it (calls, types, doc mentions and directives)
    chunks_using: dict[str, list[int]] = field(default_factory=dict)
    # (message template, index of the chunk holding it): see pr_context.parse.code_strings
    message_rows: list[tuple[str, int]] = field(default_factory=list)
    # (name, docs text around a mention or under a directive of it): see anchors.py
    anchor_rows: list[tuple[str, str]] = field(default_factory=list)
    # What the fields above were made of, kept so that an overlay of a few files can be
    # spliced in (pr_context.retrieve.splice): each chunk's used names (list column),
    # (template, chunk index, constant) per message, and each anchor row's path.
    chunk_uses: pa.ChunkedArray | None = None
    message_records: list[tuple[str, int, str | None]] = field(default_factory=list)
    anchor_paths: list[str] = field(default_factory=list)

    def prepare(self) -> None:
        """Build the lazily made search structures now (for steady query latency)."""
        _ = (self.bm25_postings, self.symbols_by_name_word, self.run_together_names,
             self.vocabulary, self.messages,
             self.anchors,
             self.stub_paths, self.top_modules, self.role_markers)

    def terms_of(self, text: str) -> tuple[list[str], list[int]] | None:
        """The stored BM25 terms and counts of a chunk whose text (context and text, as
        embedded) is ``text``; None when no chunk has it."""
        row = self._row_of_text.get(text)
        if row is None:
            return None
        return self.chunk_terms[0][row].as_py(), self.chunk_terms[1][row].as_py()

    @cached_property
    def _row_of_text(self) -> dict[str, int]:
        return {text: i for i, text in enumerate(self.texts)}

    @cached_property
    def messages(self) -> MessageIndex:
        return MessageIndex(self.message_rows)

    @cached_property
    def anchors(self) -> AnchorIndex:
        return AnchorIndex(self.anchor_rows)

    @cached_property
    def role_markers(self) -> dict[str, frozenset[str]]:
        """intent -> the folder-name tokens that mark the files of its role here.

        A token of the folder path of at least half of a role's files and of under
        ``MARKER_PRODUCTION_SHARE`` of production files: ``demo`` where examples live in
        ``demo/``, ``tutorial`` where the docs do. A query naming it asks for that role.
        """
        by_role: dict[str, set[str]] = defaultdict(set)
        for chunk in self.chunks:
            by_role[chunk.role].add(chunk.path)
        production = _folder_tokens(by_role.get("production", set()))
        total = max(len(by_role.get("production", ())), 1)
        markers = {}
        for intent, role in (("docs", "docs"), ("examples", "example")):
            paths = by_role.get(role, set())
            counts = _folder_tokens(paths)
            markers[intent] = frozenset(
                t for t, n in counts.items() if len(t) >= MIN_MARKER_CHARS
                and n >= len(paths) / 2 and production.get(t, 0) / total < MARKER_PRODUCTION_SHARE)
        return markers

    @cached_property
    def definition_kinds(self) -> dict[str, str]:
        """qualified name -> its definition's kind ("class", "method", ...)."""
        return {d.qualified_name: d.kind
                for found in self.definitions_by_name.values() for d in found}

    @cached_property
    def stub_paths(self) -> frozenset[str]:
        """Type stubs beside the module they describe: ``m.pyi`` by ``m.py``,
        ``x.d.ts`` by ``x.js`` or ``x.ts``."""
        paths = self.paths
        stubs = {p for p in paths if p.endswith(".pyi") and p[:-1] in paths}
        stubs |= {p for p in paths if p.endswith(".d.ts") and any(
            p[:-len(".d.ts")] + suffix in paths for suffix in (".js", ".ts", ".mjs"))}
        return frozenset(stubs)

    @cached_property
    def top_modules(self) -> frozenset[str]:
        """The first part of every module and path: the packages this codebase holds."""
        return frozenset({m.split(".", 1)[0] for m in self.module_of_path.values() if m}
                         | {p.split("/", 1)[0] for p in self.paths})

    @property
    def revision(self) -> str:
        return self.manifest.revision

    @cached_property
    def bm25(self) -> LexicalModel:
        """rank-bm25's BM25Okapi model of the chunks, from the terms the index stored."""
        return lexical_model(*self.chunk_terms)

    @property
    def bm25_postings(self) -> Postings:
        """term -> (chunk indexes, term frequencies): the BM25 model, inverted.

        Walking only the chunks that contain a term gives rank-bm25's scores at a
        fraction of the cost of scanning every chunk for every term.
        """
        return self.bm25.postings

    @cached_property
    def name_words(self) -> dict[str, frozenset[str]]:
        """symbol -> the words of its own name (``_compare_compatible``: compar, compatibl).

        Protocol names (``__init__``) have none: they say nothing about behaviour.
        """
        words = {}
        for symbol in self.chunk_by_symbol:
            name = symbol.rsplit(".", 1)[-1]
            parts = tokenize(name)
            if name.startswith("__") or not parts:
                continue
            words[symbol] = frozenset(parts[:-1] if len(parts) > 1 else parts)
        return words

    @cached_property
    def run_together_names(self) -> dict[str, dict[str, str]]:
        """First three letters -> {symbol: name} for names of one lower-case word long
        enough to be several run together (``typedmethodkey``, ``getattr``)."""
        names: dict[str, dict[str, str]] = defaultdict(dict)
        for symbol, words in self.name_words.items():
            name = symbol.rsplit(".", 1)[-1].strip("_")
            if (len(words) == 1 and name.isalpha() and name.islower()
                    and len(name) >= MIN_RUN_TOGETHER_CHARS):
                names[name[:3]][symbol] = name
        return dict(names)

    @cached_property
    def symbols_by_name_word(self) -> dict[str, list[str]]:
        """name word -> symbols whose name contains it (an inverted index of name_words)."""
        index: dict[str, list[str]] = defaultdict(list)
        for symbol, parts in self.name_words.items():
            for part in parts:
                index[part].append(symbol)
        return dict(index)

    @cached_property
    def vocabulary(self) -> set[str]:
        """Every token of every chunk."""
        return set(self.bm25.idf)

    def query_tokens(self, text: str) -> list[str]:
        """``tokenize(text, drop_stopwords=True)``, each word that is one of the
        codebase's names run together in lower case kept whole (``tokentype`` for ``TokenType``
        or ``token_type``): people type names so, and the stemmer cuts them
        (``tokentyp``), while the index keeps each whole name as written."""
        tokens = tokenize(text, drop_stopwords=True)
        for word in run_together_names(text):
            if word in self.vocabulary and stem(word) in tokens:
                tokens[tokens.index(stem(word))] = word
        return tokens

    @cached_property
    def paths(self) -> set[str]:
        return {c.path for c in self.chunks}


MIN_RUN_TOGETHER_CHARS = 6  # two words of three letters, the shortest abbreviation
MIN_MARKER_CHARS = 4
MARKER_PRODUCTION_SHARE = 0.05


def _folder_tokens(paths: set[str]) -> dict[str, int]:
    """token -> how many of ``paths`` have it in their folder names."""
    counts: dict[str, int] = defaultdict(int)
    for path in paths:
        for token in set(tokenize(path.rpartition("/")[0])):
            counts[token] += 1
    return counts


def load_corpus(store: IndexStore) -> SearchCorpus:
    """Read an index into memory for searching."""
    assert store.manifest is not None
    arrow = store.read_arrow(
        "SELECT chunk_id, path, symbol, kind, role, start_line, end_line, "
        "context || chr(10) || text AS body, text_hash, terms, term_counts, uses "
        "FROM chunks ORDER BY path, ordinal")
    terms = (arrow.column("terms"), arrow.column("term_counts"))
    usages = chunks_using_names(arrow.column("uses"))
    anchors = _anchor_sources(store)
    table = arrow.drop_columns(["terms", "term_counts", "uses"]).to_pydict()
    chunks = [
        ChunkInfo(*row)
        for row in zip(table["chunk_id"], table["path"], table["symbol"], table["kind"],
                       table["role"], table["start_line"], table["end_line"], strict=True)
    ]
    corpus = SearchCorpus(
        manifest=store.manifest,
        chunks=chunks,
        texts=table["body"],
        vectors=_load_vectors(store, table["text_hash"]),
        definitions_by_name=_load_definitions(store),
        imports_by_path=_load_imports(store),
        module_of_path=_load_modules(store),
        chunk_terms=terms,
        chunks_using=usages,
        chunk_uses=arrow.column("uses"),
        message_records=_message_records(store),
        anchor_paths=[path for path, _, _ in anchors],
    )
    corpus.message_rows = expand_messages(corpus.message_records, corpus.chunks_using)
    corpus.anchor_rows = [(name, text) for _, name, text in anchors]
    corpus.chunk_by_symbol = chunks_by_symbol(chunks)
    return corpus


def chunks_by_symbol(chunks: list[ChunkInfo]) -> dict[str, list[int]]:
    """symbol -> indexes of the chunks of its definition, in order."""
    found: dict[str, list[int]] = {}
    for i, chunk in enumerate(chunks):
        if chunk.symbol:
            found.setdefault(chunk.symbol, []).append(i)
    return found


def _load_vectors(store: IndexStore, hashes: list[str]) -> NDArray[np.float32] | None:
    dimension = store.embedding_dimension()
    if dimension == 0:
        return None
    table = store.read_arrow("SELECT text_hash, vector FROM embeddings")
    row_of = {h: i for i, h in enumerate(table.column("text_hash").to_pylist())}
    stored = np.asarray(table.column("vector").combine_chunks().flatten(), dtype=np.float32)
    stored = stored.reshape(len(row_of), dimension)
    vectors = np.zeros((len(hashes), dimension), np.float32)
    for i, h in enumerate(hashes):
        if h in row_of:
            vectors[i] = stored[row_of[h]]
    return vectors


def _load_definitions(store: IndexStore) -> dict[str, list[DefinitionInfo]]:
    by_name: dict[str, list[DefinitionInfo]] = defaultdict(list)
    for row in store.query("SELECT name, qualified_name, path, kind, start_line "
                           "FROM definitions ORDER BY path, ordinal"):
        by_name[row[0]].append(DefinitionInfo(*row))
    return dict(by_name)


def _load_imports(store: IndexStore) -> dict[str, set[str]]:
    """path -> dotted modules (and module.name) it imports, relative imports resolved."""
    imports: dict[str, set[str]] = defaultdict(set)
    rows = store.query("SELECT i.path, i.module, i.name, i.level, f.language FROM imports i "
                       "JOIN files f USING (path) ORDER BY i.path, i.ordinal")
    for path, module, name, level, language in rows:
        target = absolute_module(path, module, level, language)
        imports[path].add(target)
        if name and name not in ("*", "default"):
            imports[path].add(f"{target}.{name}".strip("."))
    return dict(imports)


def chunks_using_names(uses: pa.ChunkedArray) -> dict[str, list[int]]:
    """identifier -> indexes (in load order) of the chunks whose lines use it, from each
    chunk's stored names: in name order, then chunk order."""
    lists = uses.combine_chunks()
    lengths = pc.list_value_length(lists).to_numpy(zero_copy_only=False)
    pairs = pa.table({"name": lists.flatten(),
                      "chunk": np.repeat(np.arange(len(lists)), lengths)}).sort_by(
        [("name", "ascending"), ("chunk", "ascending")])
    names = pairs.column("name").combine_chunks()
    chunk_of = pairs.column("chunk").to_numpy()
    if len(names) == 0:
        return {}
    starts = np.concatenate([[0], np.flatnonzero(pc.not_equal(
        names[1:], names[:-1]).to_numpy(zero_copy_only=False)) + 1])
    ends = np.append(starts[1:], len(names))
    usages: dict[str, list[int]] = defaultdict(list)
    for name, start, end in zip(names.take(starts).to_pylist(), starts.tolist(),
                                ends.tolist(), strict=True):
        members = chunk_of[start:end].tolist()
        usages[name].extend(members)
        if "." in name:  # a directive's target: pkg.mod.func also counts as func
            usages[name.rsplit(".", 1)[-1]].extend(members)
    return dict(usages)


# Lines of a directive's body read as its anchor text (``.. function:: f`` and below).
DIRECTIVE_BODY_LINES = 6


def _anchor_sources(store: IndexStore) -> list[tuple[str, str, str]]:
    """(path, name, docs lines around a mention of it or under a directive documenting
    it), in path and line order; changelogs left out."""
    rows = store.query(
        "SELECT r.name, ch.path, array_to_string(list_slice(string_split(ch.text, chr(10)), "
        "CASE WHEN r.kind = 'directive' THEN r.line - ch.start_line + 1 "
        "ELSE r.line - ch.start_line END, "
        f"r.line - ch.start_line + CASE WHEN r.kind = 'directive' THEN "
        f"{DIRECTIVE_BODY_LINES + 1} ELSE 2 END), ' ') "
        "FROM refs r JOIN chunks ch ON ch.path = r.path "
        "AND r.line BETWEEN ch.start_line AND ch.end_line "
        "WHERE r.kind IN ('mention', 'directive') AND ch.role = 'docs' "
        "ORDER BY r.path, r.line, r.ordinal")
    return [(path, name.rsplit(".", 1)[-1], text) for name, path, text in rows
            if text and not is_history(path)]


def _message_records(store: IndexStore) -> list[tuple[str, int, str | None]]:
    """(template, index of the smallest chunk holding its line, the constant holding
    it), in path order."""
    rows = store.query(
        "WITH numbered AS (SELECT path, start_line, end_line, "
        "row_number() OVER (ORDER BY path, ordinal) - 1 AS i FROM chunks) "
        "SELECT m.template, arg_min(n.i, n.end_line - n.start_line), m.name FROM messages m "
        "JOIN numbered n ON m.path = n.path AND m.line BETWEEN n.start_line AND n.end_line "
        "GROUP BY m.path, m.ordinal, m.template, m.name ORDER BY m.path, m.ordinal")
    return [(template, int(index), name) for template, index, name in rows]


def expand_messages(records: list[tuple[str, int, str | None]],
                    chunks_using: dict[str, list[int]]) -> list[tuple[str, int]]:
    """(template, chunk index) for the smallest chunk holding each template's line, and
    for the chunks using the constant that holds it, in path order."""
    found = []
    for template, index, name in records:
        found.append((template, index))
        found.extend((template, user) for user in chunks_using.get(name or "", ())
                     if user != index)
    return found


def _load_modules(store: IndexStore) -> dict[str, str]:
    """path -> dotted module: by path rules, or from its definitions (Go, Java packages)."""
    modules: dict[str, str] = {
        path: module_path(path, language)
        for path, language in store.query(
            "SELECT path, language FROM files WHERE language IN "
            "('python', 'javascript', 'typescript', 'tsx') ORDER BY path")}
    for path, qualified, name in store.query(
            "SELECT path, qualified_name, name FROM definitions WHERE parent IS NULL "
            "ORDER BY path, ordinal"):
        if path not in modules and qualified.endswith("." + name):  # first definition
            modules[path] = qualified[: -len(name) - 1]
    return dict(sorted(modules.items()))  # in path order, whatever the rows' order
