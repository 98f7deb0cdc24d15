"""The evidence item both link finders return, and the view of an index they read.

:func:`load_link_index` is the only function here that reads an index; everything else
works on the :class:`LinkIndex` it returns, so one load serves every changed symbol.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from pr_context.index.store import IndexStore
from pr_context.languages import CODE_LANGUAGES
from pr_context.links.doc_pages import module_directive, toctree_entries
from pr_context.parse.code_paths import module_path

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from pr_context.retrieve.corpus import SearchCorpus

__all__ = [
    "DocRef",
    "Docstring",
    "Evidence",
    "LinkIndex",
    "Section",
    "TestDef",
    "load_link_index",
    "nearness_by_path",
    "symbol_vector",
    "word_pattern",
]

TEST_ROLES = frozenset({"test", "test_support"})


@dataclass(frozen=True)
class Evidence:
    """One EVIDENCE item of evidence.json, before ranks are assigned (DESIGN contract).

    ``node_ids`` are the pytest node ids of the linked test functions, where resolvable;
    ``status`` is set for docs only: "stale", or "updated" when the PR edited the file.
    """

    path: str
    symbol: str | None
    role: str
    start_line: int
    end_line: int
    score: float
    signals: Mapping[str, float]
    reason: str
    touched_in_pr: bool
    status: str | None = None
    node_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class TestDef:
    """A definition in a test or test-support file."""

    path: str
    name: str
    qualified_name: str
    kind: str
    parent: str | None
    parameters: tuple[str, ...]
    start_line: int
    end_line: int


@dataclass(frozen=True)
class Section:
    """A doc section chunk: lines are 1-based and inclusive."""

    path: str
    role: str
    heading: str | None  # "Install > From source"; None before the first heading
    start_line: int
    end_line: int
    text: str


@dataclass(frozen=True)
class DocRef:
    """A mention or directive in a docs file (see parse/docs.py)."""

    path: str
    name: str  # last identifier, or the full dotted target of a directive
    kind: str  # "mention" | "directive"
    receiver: str | None
    line: int


@dataclass(frozen=True)
class Docstring:
    """The docstring of a code definition, with the definition's lines."""

    path: str
    role: str
    qualified_name: str
    start_line: int
    end_line: int
    text: str


@dataclass(frozen=True)
class LinkIndex:
    """What linked tests and stale docs read from one index; built by ``load_link_index``."""

    revision: str
    roles: Mapping[str, str]  # path -> role, indexed files only
    languages: Mapping[str, str | None]
    test_defs: Mapping[str, tuple[TestDef, ...]]  # path -> definitions in test files
    sections: Mapping[str, tuple[Section, ...]]  # path -> sections in line order
    doc_refs: tuple[DocRef, ...]
    docstrings: tuple[Docstring, ...]
    cochange: Mapping[str, Mapping[str, int]]  # path -> other path -> commits together
    name_counts: Mapping[str, int]  # definition name -> how many definitions have it
    # (path, section start line) -> page names its tables of contents list
    toctrees: Mapping[tuple[str, int], tuple[str, ...]] = field(default_factory=dict)
    # (path, line) -> the stripped text of a line holding a directive or role
    directive_lines: Mapping[tuple[str, int], str] = field(default_factory=dict)
    # path -> (line, module) of its module directives (``currentmodule``), in line order
    module_directives: Mapping[str, tuple[tuple[int, str], ...]] = field(default_factory=dict)
    code_modules: frozenset[str] = frozenset()  # dotted modules of the indexed code files
    # doc_refs with the sections holding them, made on first use (ref_sections)
    _ref_sections: list[tuple[DocRef, Section | None]] = field(
        default_factory=list, compare=False, repr=False)

    def section_at(self, path: str, line: int) -> Section | None:
        """The section of ``path`` holding ``line``."""
        return _section_in(self.sections.get(path, ()), line)

    def ref_sections(self) -> list[tuple[DocRef, Section | None]]:
        """Each of ``doc_refs`` with the section holding it, found once: every changed
        symbol's search for stale docs goes through them all."""
        if not self._ref_sections and self.doc_refs:
            self._ref_sections.extend((ref, self.section_at(ref.path, ref.line))
                                      for ref in self.doc_refs)
        return self._ref_sections

    def current_module(self, path: str, line: int) -> str | None:
        """The module the last module directive of ``path`` above ``line`` names."""
        found = self.module_directives.get(path, ())
        i = bisect.bisect_right([at for at, _ in found], line) - 1
        return found[i][1] if i >= 0 else None


def _section_in(sections: tuple[Section, ...], line: int) -> Section | None:
    i = bisect.bisect_right([s.start_line for s in sections], line) - 1
    return sections[i] if i >= 0 and line <= sections[i].end_line else None


def load_link_index(store: IndexStore) -> LinkIndex:
    """Read the rows linked tests and stale docs need from ``store``."""
    files = store.query("SELECT path, role, language FROM files WHERE status = 'indexed'")
    roles = {p: r or "production" for p, r, _ in files}
    counts = dict(store.query("SELECT name, count(*) FROM definitions GROUP BY name"))
    sections = _sections(store)
    doc_refs = tuple(DocRef(*row) for row in store.query(
        "SELECT path, name, kind, receiver, line FROM refs "
        "WHERE kind IN ('mention', 'directive') ORDER BY path, ordinal"))
    lines = _directive_lines(doc_refs, sections)
    return LinkIndex(
        revision=store.manifest.revision if store.manifest else "",
        roles=roles, languages={p: lang for p, _, lang in files},
        test_defs=_test_defs(store), sections=sections,
        doc_refs=doc_refs,
        docstrings=tuple(Docstring(p, roles.get(p, "production"), *rest) for p, *rest in
                         store.query("SELECT path, qualified_name, start_line, end_line, "
                                     "docstring FROM definitions WHERE docstring IS NOT NULL "
                                     "ORDER BY path, ordinal")),
        cochange=_cochange(store.query("SELECT path_a, path_b, commits FROM cochange")),
        name_counts={str(k): int(v) for k, v in counts.items()},
        toctrees=_toctrees(sections), directive_lines=lines,
        module_directives=_module_directives(doc_refs, lines),
        code_modules=frozenset(module_path(p, lang) for p, _, lang in files
                               if lang in CODE_LANGUAGES),
    )


def _test_defs(store: IndexStore) -> dict[str, tuple[TestDef, ...]]:
    roles = ", ".join(f"'{r}'" for r in sorted(TEST_ROLES))
    rows = store.query(
        "SELECT d.path, d.name, d.qualified_name, d.kind, d.parent, d.parameters, "
        "d.start_line, d.end_line FROM definitions d JOIN files f USING (path) "
        f"WHERE f.role IN ({roles}) ORDER BY d.path, d.ordinal")
    found: dict[str, list[TestDef]] = defaultdict(list)
    for path, name, qualified, kind, parent, params, start, end in rows:
        found[path].append(TestDef(path, name, qualified, kind, parent, tuple(params or ()),
                                   start, end))
    return {p: tuple(d) for p, d in found.items()}


def _sections(store: IndexStore) -> dict[str, tuple[Section, ...]]:
    rows = store.query("SELECT path, role, context, start_line, end_line, text FROM chunks "
                       "WHERE kind = 'section' ORDER BY path, start_line")
    found: dict[str, list[Section]] = defaultdict(list)
    for path, role, context, start, end, text in rows:
        found[path].append(Section(path, role, _heading(context), start, end, text))
    return {p: tuple(s) for p, s in found.items()}


def _directive_lines(refs: Iterable[DocRef], sections: Mapping[str, tuple[Section, ...]]
                     ) -> dict[tuple[str, int], str]:
    split: dict[tuple[str, int], list[str]] = {}  # each section split once
    found: dict[tuple[str, int], str] = {}
    for ref in refs:
        if ref.kind != "directive" or (ref.path, ref.line) in found:
            continue
        section = _section_in(sections.get(ref.path, ()), ref.line)
        if section is None:
            continue
        lines = split.setdefault((section.path, section.start_line), section.text.splitlines())
        index = ref.line - section.start_line
        found[(ref.path, ref.line)] = lines[index].strip() if index < len(lines) else ""
    return found


def _module_directives(refs: Iterable[DocRef], lines: Mapping[tuple[str, int], str]
                       ) -> dict[str, tuple[tuple[int, str], ...]]:
    found: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for ref in refs:
        if ref.kind == "directive" and module_directive(lines.get((ref.path, ref.line), "")):
            found[ref.path].append((ref.line, ref.name))
    return {p: tuple(m) for p, m in found.items()}


def _toctrees(sections: Mapping[str, tuple[Section, ...]]
              ) -> dict[tuple[str, int], tuple[str, ...]]:
    return {(s.path, s.start_line): tuple(entries) for found in sections.values()
            for s in found if "toctree" in s.text and (entries := toctree_entries(s.text))}


def _heading(context: str) -> str | None:
    match = re.search(r"^section: (.*)$", context, re.MULTILINE)
    return match.group(1) if match else None


def _cochange(rows: Iterable[tuple[str, str, int]]) -> dict[str, dict[str, int]]:
    pairs: dict[str, dict[str, int]] = defaultdict(dict)
    for a, b, commits in rows:
        pairs[a][b] = pairs[b][a] = int(commits)
    return dict(pairs)


def word_pattern(word: str) -> re.Pattern[str]:
    """``word`` as a whole identifier: not part of a longer name."""
    return re.compile(rf"(?<![\w$]){re.escape(word)}(?![\w$])")


def symbol_vector(corpus: SearchCorpus, qualified_name: str) -> NDArray[np.float32] | None:
    """The mean vector of the chunks of ``qualified_name`` in ``corpus``, normalised."""
    rows = corpus.chunk_by_symbol.get(qualified_name)
    if corpus.vectors is None or not rows:
        return None
    vector = corpus.vectors[rows].mean(axis=0)
    norm = float(np.linalg.norm(vector))
    return (vector / norm).astype(np.float32) if norm else None


def nearness_by_path(corpus: SearchCorpus, vector: NDArray[np.float32],
                     paths: Mapping[str, object]) -> dict[tuple[str, int], float]:
    """(path, chunk start line) -> cosine with ``vector``, for chunks of ``paths``."""
    if corpus.vectors is None:
        return {}
    rows = [i for i, c in enumerate(corpus.chunks) if c.path in paths]
    if not rows:
        return {}
    matrix = corpus.vectors[rows]
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    scores = (matrix @ vector) / norms
    return {(corpus.chunks[i].path, corpus.chunks[i].start_line): float(s)
            for i, s in zip(rows, scores, strict=True)}
