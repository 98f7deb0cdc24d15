"""The ``review`` pipeline: index base and head, analyse every changed symbol, write files.

Wires the stages like ``pipeline.py`` does for search, so it may import every stage,
rendering included. Side effects: ``db`` is built or updated to the base revision (and
stays valid for it); the head is indexed in a copy, ``OUT/head-index.duckdb``, updated
incrementally from the base; ``write_review`` writes evidence.json, comment.md and
summary.md. Nothing here prints.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import mmap
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pr_context.changes import ChangedSymbol, SymbolChanges, changed_symbols_between
from pr_context.collector import collector_paused
from pr_context.coverage import CoverageInput, MeasuredCoverage, SymbolCoverage
from pr_context.defaults import DEFAULT_TOP_K, REVIEW_BUDGET_S
from pr_context.diff import parse_patch
from pr_context.embed import Embedder
from pr_context.errors import (
    BadInputError,
    CoverageFileError,
    GitError,
    IndexFileError,
    UnknownRevisionError,
)
from pr_context.forked import Forked, fork_work
from pr_context.git import (
    BlobReader,
    Repository,
    changed_paths,
    resolve_revision,
    unified_diff,
)
from pr_context.graph import Caller, SymbolGraph, callers_of, load_graph, store_graph
from pr_context.graph.readers import readers_of
from pr_context.graph.tables import CLASS_KINDS, GraphRows, Tables, read_rows
from pr_context.index.build import (
    IndexBuild,
    IndexOptions,
    IndexResult,
    build_index,
    start_index,
    vector_worker,
)
from pr_context.index.store import IndexStore, Manifest
from pr_context.links import (
    Evidence,
    ImportGraph,
    LinkIndex,
    Reacher,
    SymbolTests,
    TestSelection,
    import_graph,
    linked_tests,
    load_link_index,
    select_tests,
    stale_docs,
    symbol_vector,
)
from pr_context.links.parametrize import parametrized_counts
from pr_context.models import Sha
from pr_context.progress import Progress
from pr_context.render import render_comment, render_summary
from pr_context.report import (
    EvidenceItem,
    IndexInfo,
    Report,
    SymbolReport,
    evidence_json,
)
from pr_context.retrieve.corpus import SearchCorpus, load_corpus
from pr_context.retrieve.splice import overlaid_corpus
from pr_context.review_tests import coverage_key, measure_changes, module_changes
from pr_context.secrets import redact_secrets
from pr_context.signatures import call_arguments, python_call_break
from pr_context.symbols import NamedDefinition, definitions_named

__all__ = [
    "DEFAULT_TOP_K",
    "HEAD_INDEX_NAME",
    "REVIEW_BUDGET_S",
    "Explanation",
    "IndexSide",
    "ReviewOptions",
    "ReviewOutputs",
    "analyse_definitions",
    "explain",
    "index_pair",
    "load_side",
    "review",
    "write_review",
]

# Analysis (callers, tests, docs) of one symbol takes milliseconds; a PR that still runs
# past a minute is a sweep nobody reads symbol by symbol, so the rest are only listed.
HEAD_INDEX_NAME = "head-index.duckdb"
# Changes that break callers still written against the old name or signature.
# (A renamed symbol's head callers resolve to its new name: what a rename leaves behind
# are its old name's callers at base, found by ``_left_on_old_name``.)
_BREAKING_CHANGES = frozenset({"signature_changed", "removed"})
_TEST_FILE_ROLES = frozenset({"test", "test_support"})
# Changed files with these roles are counted, not analysed: nobody reviews them by hand.
_EXCLUDED_ROLES = frozenset({"generated", "vendored"})
_NOT_UPDATED = "not updated in this PR"
_ANNOTATION_CHANGES = ("annotation of ", "return annotation")
_CALL_LINES = 30  # lines after a call site read to find the end of its arguments
# A reason quotes repository text (a doc line can be a whole minified paragraph): cut it,
# so evidence.json stays within what the workflow_run publisher accepts (2,000).
MAX_REASON_CHARS = 1_000


@dataclass(frozen=True)
class ReviewOptions:
    top_k: int = DEFAULT_TOP_K
    budget_s: float = REVIEW_BUDGET_S
    link_base: str | None = None
    index_options: IndexOptions = field(default_factory=IndexOptions)
    coverage: CoverageInput | None = None  # the user's per-test coverage data
    # False: coverage data that cannot be used is a note (Report.coverage_problem), and
    # the review goes on without it; True: it is an error
    coverage_required: bool = True
    # True: the base side's symbols are analysed in a forked child, on the second core,
    # while this process analyses the head's (``_analyse_all``); the same report either way
    fork: bool = True


@dataclass(frozen=True)
class ReviewOutputs:
    """The files ``write_review`` wrote."""

    evidence: Path
    comment: Path
    summary: Path


@dataclass(frozen=True)
class IndexSide:
    """One revision's index, loaded once for every symbol (see ``load_side``)."""

    sha: str
    graph: SymbolGraph
    links: LinkIndex
    corpus: SearchCorpus
    spans: Mapping[str, tuple[int, int]]  # qualified name -> definition lines
    reacher: Reacher  # walks from symbols to the tests, each definition's callers once
    imports: ImportGraph


@dataclass(frozen=True)
class _PrDiff:
    """What the PR touched: paths on either side, and changed lines per file."""

    paths: frozenset[str]
    added: Mapping[str, frozenset[int]]  # head path -> added head lines
    removed: Mapping[str, frozenset[int]]  # base path -> removed base lines


@dataclass
class _Timer:
    """Milliseconds per stage, in the order the stages ran."""

    stages: dict[str, int] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.stages[name] = round((time.perf_counter() - started) * 1000)


def review(repo: Repository, base_rev: str, head_rev: str, db: Path, out_dir: Path,
           embedder: Embedder | None, progress: Progress,
           options: ReviewOptions | None = None) -> Report:
    """Index ``base_rev`` into ``db`` and ``head_rev`` into a copy, then analyse the PR.

    :raises UnknownRevisionError: a revision names no commit.
    :raises IndexFileError: an index file cannot be built, copied or read.
    """
    # The cyclic collector is paused for the whole review (pr_context.collector): both
    # sides' graphs and corpora live until it ends, and every full collection their
    # allocations, and the analysis's, set off would walk them all again.
    with collector_paused():
        return _review(repo, base_rev, head_rev, db, out_dir, embedder, progress,
                       options or ReviewOptions())


def _review(repo: Repository, base_rev: str, head_rev: str, db: Path, out_dir: Path,
            embedder: Embedder | None, progress: Progress, options: ReviewOptions) -> Report:
    timer, started = _Timer(), time.perf_counter()
    base, head = resolve_revision(repo, base_rev), resolve_revision(repo, head_rev)
    head_db = out_dir / HEAD_INDEX_NAME
    with ExitStack() as stack:
        # The worker that embeds the head's new texts loads the model while the base index
        # is checked; it embeds them while the diff is read and the graphs are built, and
        # the analysis waits for them (``_analyse_pr``).
        worker = vector_worker(embedder)
        stack.callback(worker.shutdown, wait=False, cancel_futures=True)
        with timer.stage("index_base"):
            base_result = build_index(repo, base, db, options.index_options, embedder,
                                      progress)
            store_graph(db)  # kept for the next review of this base (read by _load_base)
        with timer.stage("index_head"):
            head_build = stack.enter_context(
                _start_overlay(repo, head, db, head_db, embedder, progress, options, worker))
        with timer.stage("diff"):
            changes = changed_symbols_between(repo, base, head)
            pr_diff = _pr_diff(repo, base, head)
        sources = stack.enter_context(_Sources(repo))
        found = _analyse_pr(repo, base, head, db, head_db, changes, pr_diff, options, sources,
                            timer, head_build)
        head_result = head_build.finish()
    timer.stages["total"] = round((time.perf_counter() - started) * 1000)
    return Report(
        repository=str(repo.path), base=base, head=head,
        index=_index_info(found.manifest, head_result, base_result),
        symbols=tuple(found.symbols), test_selection=found.selection.targets,
        timings_ms=timer.stages, excluded_files=tuple(found.excluded),
        skipped_files=changes.skipped_files,
        notes=tuple(_notes(changes, found.excluded, found.skipped, found.analysed,
                           options.budget_s, found.coverage_problem)),
        top_k=options.top_k, link_base=options.link_base,
        selection_details=found.selection.items,
        run_everything=found.selection.run_everything,
        coverage=_coverage_info(found.coverage), coverage_problem=found.coverage_problem)


@dataclass(frozen=True)
class _Analysis:
    """What ``_analyse_pr`` found, for the report."""

    manifest: Manifest
    symbols: list[SymbolReport]
    selection: TestSelection
    excluded: list[str]
    skipped: int  # symbols the time budget left unanalysed
    analysed: int  # symbols meant to be analysed
    coverage: MeasuredCoverage | None
    coverage_problem: str | None


def _analyse_pr(repo: Repository, base: Sha, head: Sha, db: Path, head_db: Path,
                changes: SymbolChanges, pr_diff: _PrDiff, options: ReviewOptions,
                sources: _Sources, timer: _Timer, head_build: IndexBuild) -> _Analysis:
    """Load both indexes, then every symbol's evidence and the test selection. Once the
    head's graph is built, the base side is loaded while the worker ends the embedding,
    then the head's vectors are waited for, before its corpus is read."""
    base_sides: list[IndexSide | None] = []

    def base_then_head_vectors() -> None:  # both within "load"
        with timer.stage("load_base"):
            base_sides.append(_load_base(db, sources, base_reads) if needs_base else None)
        with timer.stage("head_vectors"):  # the wait for the worker
            head_build.finish()

    with timer.stage("load"):
        roles = {**_file_roles(db), **_file_roles(head_db)}
        excluded = sorted(p for p in pr_diff.paths if roles.get(p) in _EXCLUDED_ROLES)
        wanted = [s for s in changes.symbols if s.path not in excluded]
        needs_base = any(map(_needs_base, wanted))
        # The head's graph rows and corpus are the base's but for the files the PR
        # changed: read from the base once, and for those files from the head.
        base_reads = _base_reads(db, needs_base)
        head_side, manifest = _load_head(head_db, sources, base_reads, True,
                                         base_then_head_vectors)
    base_side = base_sides[0]
    with timer.stage("coverage"):
        coverage, problem = _coverage(repo, options, base, db, wanted, roles, sources)
    # Without coverage's own counts, the selection may ask for an estimate: the child
    # that analyses the base side counts it once its symbols are done (_analyse_all).
    estimate = _Estimate(head_side, sources) if not (coverage and coverage.instances) \
        else None
    with timer.stage("analyse"):
        symbols, tests, skipped = _analyse_all(wanted, head_side, base_side, pr_diff,
                                               options.budget_s, sources, coverage,
                                               options.fork, estimate)
    with timer.stage("select"):
        selection = _selection(tests, head_side, pr_diff, roles, base, head, sources,
                               coverage, estimate)
    return _Analysis(manifest, symbols, selection, excluded, skipped, len(wanted), coverage,
                     problem)


def _coverage(repo: Repository, options: ReviewOptions, base: Sha, db: Path,
              wanted: list[ChangedSymbol], roles: Mapping[str, str],
              sources: _Sources) -> tuple[MeasuredCoverage | None, str | None]:
    """The coverage evidence, and why there is none when it was given but unusable."""
    if options.coverage is None:
        return None, None
    try:
        return measure_changes(repo, options.coverage, base, db, wanted, roles,
                               sources.text), None
    except (CoverageFileError, UnknownRevisionError) as exc:
        if options.coverage_required:
            raise
        return None, str(exc)


def _selection(tests: list[SymbolTests], head: IndexSide, pr: _PrDiff, roles: Mapping[str, str],
               base: Sha, head_sha: Sha, sources: _Sources,
               coverage: MeasuredCoverage | None,
               estimate: _Estimate | None = None) -> TestSelection:
    """What CI should run; every target exists at head (a removed symbol's base tests may
    be gone)."""
    changed_tests = [p for p in pr.added if roles.get(p) == "test"]
    modules = module_changes(pr.added, pr.removed, roles, base, head_sha, sources.text)
    selection = select_tests(tests, head.links, head.imports, pr.paths, changed_tests,
                             modules, coverage.tests_changed_since if coverage else (),
                             instances=coverage.instances if coverage else None,
                             estimate=estimate or _Estimate(head, sources))
    kept = tuple(i for i in selection.items if selection.run_everything
                 or i.target.split("::", 1)[0] in head.links.roles)
    return dataclasses.replace(selection, items=kept)


@dataclass
class _Estimate:
    """What ``_parametrized_tests`` finds for ``side``, counted when first asked for, or
    before by the forked child of ``_analyse_all`` (``known``)."""

    side: IndexSide
    sources: _Sources
    known: dict[str, int] | None = None
    parent: int = field(default_factory=os.getpid)  # the process that made it
    # 1 once the parent has analysed its own symbols; shared with a child forked after
    _parent_done: mmap.mmap = field(default_factory=lambda: mmap.mmap(-1, 1))

    def __call__(self) -> dict[str, int]:
        if self.known is None:
            self.known = _parametrized_tests(self.side, self.sources)
        return self.known

    def parent_done(self) -> None:
        self._parent_done[0] = 1

    def in_child(self) -> dict[str, int] | None:
        """The counts when this is a forked child and the parent still analyses its own
        symbols (the child's spare time), else None: the parent counts them if asked."""
        if os.getpid() == self.parent or self._parent_done[0]:
            return None
        return self()


def _parametrized_tests(side: IndexSide, sources: _Sources) -> dict[str, int]:
    """pytest node id of a test function -> the tests its parametrize decorators make,
    from the text of every Python test file of ``side``."""
    found: dict[str, int] = {}
    for path, role in side.links.roles.items():
        text = sources.text(side.sha, path) if role == "test" and path.endswith(".py") \
            else None
        for name, count in (parametrized_counts(text) if text is not None else {}).items():
            found["::".join([path, *name.split(".")])] = count
    return found


def _coverage_info(coverage: MeasuredCoverage | None) -> dict[str, object] | None:
    if coverage is None:
        return None
    counts: dict[str, int] = {}
    for found in coverage.symbols.values():
        counts[found.status] = counts.get(found.status, 0) + 1
    return {"file": coverage.source, "revision": coverage.revision, "symbols": counts,
            "tests_changed_since": list(coverage.tests_changed_since)}


@dataclass(frozen=True)
class Explanation:
    """One head definition's callers, tests and docs; ``others`` share its name."""

    symbol: SymbolReport
    head: str
    others: tuple[str, ...]


def explain(repo: Repository, base_rev: str, head_rev: str, db: Path, out_dir: Path,
            name: str, embedder: Embedder | None, progress: Progress,
            options: ReviewOptions | None = None) -> Explanation:
    """Callers, linked tests and docs of the head definition ``name``, changed or not.

    ``name`` is a qualified name, a dotted suffix of one, or a short name; several
    matches prefer production code, then the shortest path. Indexes like ``review``.

    :raises BadInputError: no definition at head has that name.
    """
    options = options or ReviewOptions()
    base, head = resolve_revision(repo, base_rev), resolve_revision(repo, head_rev)
    # The head's new texts are embedded in a worker while the graphs are built (review).
    with _start_pair(repo, base, head, db, out_dir, embedder, progress, options) as build:
        matches = _definitions_named(build.db_path, name.strip())
        if not matches:
            raise BadInputError(f"no function, method or class named {name!r} at "
                                f"{head[:12]}")
        chosen = matches[0]
        changed = next((s for s in changed_symbols_between(repo, base, head).symbols
                        if s.qualified_name == chosen.qualified_name), None)
        report = _explained(repo, base, head, db, build, changed or chosen, options)
    if changed is None:
        report = dataclasses.replace(report, change="unchanged")
    return Explanation(report, head, tuple(m.qualified_name for m in matches[1:]))


def _explained(repo: Repository, base: Sha, head: Sha, db: Path, build: IndexBuild,
               analysed: ChangedSymbol, options: ReviewOptions) -> SymbolReport:
    """``analysed``'s report, both sides loaded as a review loads them."""
    pr_diff = _pr_diff(repo, base, head)
    with _Sources(repo) as sources:
        base_reads = _base_reads(db, False)
        head_side, _ = _load_head(build.db_path, sources, base_reads, False, build.finish)
        base_side = _load_base(db, sources, base_reads) if _needs_base(analysed) else None
        reports, _, _ = _analyse_all([analysed], head_side, base_side, pr_diff,
                                     options.budget_s, sources, None)
    return reports[0]


def index_pair(repo: Repository, base: Sha, head: Sha, db: Path, out_dir: Path,
               embedder: Embedder | None, progress: Progress,
               options: ReviewOptions) -> Path:
    """Build or update ``db`` to ``base`` and its head copy in ``out_dir``; return the copy."""
    with _start_pair(repo, base, head, db, out_dir, embedder, progress, options) as build:
        build.finish()
    return build.db_path


def _start_pair(repo: Repository, base: Sha, head: Sha, db: Path, out_dir: Path,
                embedder: Embedder | None, progress: Progress,
                options: ReviewOptions) -> IndexBuild:
    """``index_pair``, the head copy's new vectors still being computed (``start_index``),
    by a worker that loads the model while the base index is checked (as ``review``)."""
    worker = vector_worker(embedder)
    try:
        build_index(repo, base, db, options.index_options, embedder, progress)
        store_graph(db)
        return _start_overlay(repo, head, db, out_dir / HEAD_INDEX_NAME, embedder, progress,
                              options, worker)
    except BaseException:
        worker.shutdown(wait=False, cancel_futures=True)
        raise


def _definitions_named(db: Path, name: str) -> list[ChangedSymbol]:
    """Head definitions ``name`` designates, best first, as unchanged symbols."""
    with IndexStore.open_existing(db) as store:
        return [unchanged_symbol(d) for d in definitions_named(store, name)]


def unchanged_symbol(d: NamedDefinition) -> ChangedSymbol:
    """A definition as a symbol to analyse that no diff changed."""
    return ChangedSymbol(
        path=d.path, old_path=None, symbol=d.name, qualified_name=d.qualified_name,
        old_qualified_name=None, kind=d.kind,
        change="modified", cosmetic=False, start_line=d.start_line, end_line=d.end_line,
        old_signature=None, new_signature=None, parameter_changes=(), changed_lines=())


def analyse_definitions(repo: Repository, side: IndexSide,
                        definitions: Iterable[NamedDefinition],
                        budget_s: float = REVIEW_BUDGET_S) -> list[SymbolReport]:
    """Callers, linked tests and docs of definitions no diff changed, on a loaded index.

    Symbols the budget leaves are listed with ``analysed`` False.
    """
    symbols = [unchanged_symbol(d) for d in definitions]
    empty = _PrDiff(frozenset(), {}, {})
    with _Sources(repo) as sources:
        reports, _, _ = _analyse_all(symbols, side, None, empty, budget_s, sources, None)
    return [dataclasses.replace(r, change="unchanged") for r in reports]


def write_review(report: Report, out_dir: Path) -> ReviewOutputs:
    """Write evidence.json, comment.md and summary.md into ``out_dir``.

    :raises BadInputError: ``out_dir`` cannot be written.
    """
    outputs = ReviewOutputs(out_dir / "evidence.json", out_dir / "comment.md",
                            out_dir / "summary.md")
    texts = {
        outputs.evidence: json.dumps(evidence_json(report), indent=2) + "\n",
        outputs.comment: render_comment(report),
        outputs.summary: render_summary(report),
    }
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for path, text in texts.items():
            path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BadInputError(f"cannot write the review into {out_dir}: {exc}") from exc
    return outputs


# -- indexes --------------------------------------------------------------------------------


def _start_overlay(repo: Repository, head: Sha, db: Path, head_db: Path,
                   embedder: Embedder | None, progress: Progress, options: ReviewOptions,
                   worker: ThreadPoolExecutor | None = None) -> IndexBuild:
    """``db`` copied to ``head_db`` and the copy updated to ``head``, its new vectors still
    being computed (``start_index``, in ``worker`` when given); ``db`` is kept."""
    _copy_index(db, head_db)
    return start_index(repo, head, head_db, options.index_options, embedder, progress,
                       worker)


def _copy_index(db: Path, head_db: Path) -> None:
    """``db`` copied to ``head_db``, the copy replaced if there is one.

    :raises IndexFileError: the file cannot be copied.
    """
    try:
        head_db.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", ".wal"):
            source, target = Path(f"{db}{suffix}"), Path(f"{head_db}{suffix}")
            target.unlink(missing_ok=True)
            if source.is_file():
                shutil.copyfile(source, target)
    except OSError as exc:
        raise IndexFileError(f"cannot copy index {db} to {head_db}: {exc}") from exc


@dataclass(frozen=True)
class _BaseReads:
    """What the base index gives both sides: its graph rows and their tables, and its
    corpus when the base side is analysed."""

    rows: GraphRows
    tables: Tables
    corpus: SearchCorpus | None


def _base_reads(db: Path, corpus: bool) -> _BaseReads:
    """The base index's graph rows and tables, and its corpus when ``corpus``."""
    with IndexStore.open_existing(db) as store, collector_paused():
        rows = read_rows(store)
        return _BaseReads(rows, rows.tables(), load_corpus(store) if corpus else None)


def _load_base(db: Path, sources: _Sources, base: _BaseReads) -> IndexSide:
    """The base side, from what ``base`` already read."""
    with IndexStore.open_existing(db) as store:
        return load_side(store, base.corpus, sources.text, base.tables)


def _load_head(db: Path, sources: _Sources, base: _BaseReads, spliced: bool,
               vectors: Callable[[], object] = lambda: None) -> tuple[IndexSide, Manifest]:
    """The head side: its graph rows read over the base's (the sites and syntax uses of
    the files whose rows are the base's taken from the base's tables), and, when
    ``spliced``, its corpus spliced into the base's from the other files; the head's
    manifest. ``vectors()`` is called once the graph is built, before the corpus is read:
    it returns when the index holds every vector (it may write them into ``db``)."""
    with IndexStore.open_existing(db) as store, collector_paused():
        rows = read_rows(store, over=base.rows)
        differing = rows.differing(base.rows)
        tables = rows.tables(same=(base.tables, differing))
        parts = _side_parts(store, sources.text, tables)
    vectors()
    with IndexStore.open_existing(db) as store, collector_paused():
        assert store.manifest is not None
        corpus = (_spliced_corpus(store, base.corpus, differing)
                  if spliced and base.corpus is not None else load_corpus(store))
        return parts.side(corpus), store.manifest


def _spliced_corpus(store: IndexStore, base: SearchCorpus,
                    paths: frozenset[str]) -> SearchCorpus:
    """``store``'s corpus: ``base`` with the chunks of ``paths`` read from ``store``
    (``retrieve.splice``: what ``load_corpus`` gives, at the cost of those files)."""
    with IndexStore.of_rows(store.path, store.path_rows(paths), None,
                            store.manifest) as part:
        corpus = overlaid_corpus(base, paths, load_corpus(part), search=False)
    assert store.manifest is not None
    corpus.manifest = store.manifest
    return corpus


def load_side(store: IndexStore, corpus: SearchCorpus | None = None,
              text: Callable[[str, str], str | None] | None = None,
              tables: Tables | None = None) -> IndexSide:
    """Everything the analysis reads from ``store``; ``corpus`` when already loaded;
    ``text(sha, path)`` a file's text, for the walk to the tests to follow module-level
    variables (None: it does not); ``tables``, its graph's tables when already read."""
    parts = _side_parts(store, text, tables)
    with collector_paused():
        return parts.side(corpus or load_corpus(store))


@dataclass(frozen=True)
class _SideParts:
    """An ``IndexSide`` but for its corpus."""

    sha: str
    graph: SymbolGraph
    links: LinkIndex
    spans: Mapping[str, tuple[int, int]]
    reacher: Reacher
    imports: ImportGraph

    def side(self, corpus: SearchCorpus) -> IndexSide:
        return IndexSide(self.sha, self.graph, self.links, corpus, self.spans, self.reacher,
                         self.imports)


def _side_parts(store: IndexStore, text: Callable[[str, str], str | None] | None,
                tables: Tables | None) -> _SideParts:
    """``load_side`` without the corpus (see there)."""
    assert store.manifest is not None
    with collector_paused():  # millions of objects, that live as long as the side
        spans: dict[str, tuple[int, int]] = {}
        for name, start, end in store.query(
                "SELECT qualified_name, start_line, end_line FROM definitions "
                "ORDER BY path, ordinal"):
            spans.setdefault(name, (start, end))
        graph, links = load_graph(store, tables), load_link_index(store)
        sha = store.manifest.revision
        reader = (lambda path: text(sha, path)) if text is not None else None
        return _SideParts(sha, graph, links, spans, Reacher(graph, links, read_text=reader),
                          import_graph(graph.tables))


def _file_roles(db: Path) -> dict[str, str]:
    """path -> role for every file the index knows, skipped files included."""
    with IndexStore.open_existing(db) as store:
        return {p: r or "production" for p, r in store.query("SELECT path, role FROM files")}


def _index_info(manifest: Manifest, head: IndexResult, base: IndexResult) -> IndexInfo:
    return IndexInfo(
        build_id=manifest.build_id, revision=manifest.revision, base_revision=base.revision,
        parser_version=manifest.parser_version, embedding_model=manifest.embedding_model,
        path_policy=json.loads(manifest.path_policy or "{}"), incremental=head.incremental,
        files=head.files, chunks=head.chunks, base_build_id=base.build_id,
        embedded=head.embedded, reused=head.reused)


def _pr_diff(repo: Repository, base: Sha, head: Sha) -> _PrDiff:
    paths = {p for c in changed_paths(repo, base, head) for p in (c.path, c.old_path) if p}
    diffs = parse_patch(unified_diff(repo, base, head, context=0)) if paths else []
    return _PrDiff(frozenset(paths),
                   {d.path: d.added_lines for d in diffs if d.status != "deleted"},
                   {d.base_path: d.removed_lines for d in diffs})


# -- analysis -------------------------------------------------------------------------------


def _analyse_all(
    symbols: list[ChangedSymbol], head: IndexSide, base: IndexSide | None, pr: _PrDiff,
    budget_s: float, sources: _Sources, coverage: MeasuredCoverage | None, fork: bool = False,
    estimate: _Estimate | None = None,
) -> tuple[list[SymbolReport], list[SymbolTests], int]:
    """Every symbol's report, what the test selection needs of each, and how many
    symbols the budget skipped.

    With ``fork``, the symbols analysed at base (removed ones) are analysed in a forked
    child while this process analyses the others, on the second core (pr_context.forked).
    Each side's walks remember what they met on that side alone, so a symbol is walked
    as one process walks it, in the same order among its side's symbols. The time budget
    is counted from the same start in both processes. A child done before this process
    then counts the test selection's ``estimate``, which this process may ask for next.
    """
    analyser = _Analyser(head, base, pr, budget_s, time.monotonic(), sources, coverage)
    at_base = [change for change in symbols if analyser.holder(change) is not head]
    work = functools.partial(analyser.aside, at_base, estimate)
    with fork_work(work) if fork and at_base else Forked(work) as aside:
        here = iter(analyser.all_of([c for c in symbols if analyser.holder(c) is head]))
        if estimate is not None:
            estimate.parent_done()
        analysed, counted = aside.result()
    there = iter(analysed)
    if estimate is not None and counted is not None:
        estimate.known = counted
    done = [next(here if analyser.holder(change) is head else there) for change in symbols]
    return ([d.report for d in done], [d.tests for d in done],
            sum(d.skipped for d in done))


@dataclass(frozen=True)
class _Analysed:
    """One symbol's report and what the test selection needs of it."""

    report: SymbolReport
    tests: SymbolTests
    skipped: bool  # the time budget left it unanalysed


@dataclass(frozen=True)
class _Analyser:
    """What every symbol's analysis reads (see ``_analyse_all``)."""

    head: IndexSide
    base: IndexSide | None
    pr: _PrDiff
    budget_s: float
    started: float  # time.monotonic() when the analysis began
    sources: _Sources
    coverage: MeasuredCoverage | None

    def holder(self, change: ChangedSymbol) -> IndexSide:
        """The side whose graph holds the symbol: the base for a removed one."""
        return self.base if change.change == "removed" and self.base is not None else self.head

    def all_of(self, changes: list[ChangedSymbol]) -> list[_Analysed]:
        return [self.analysed(change) for change in changes]

    def aside(self, changes: list[ChangedSymbol], estimate: _Estimate | None
              ) -> tuple[list[_Analysed], dict[str, int] | None]:
        """``changes`` analysed, then, in a forked child, ``estimate``'s counts."""
        return self.all_of(changes), estimate.in_child() if estimate else None

    def analysed(self, change: ChangedSymbol) -> _Analysed:
        if time.monotonic() - self.started >= self.budget_s:
            return _Analysed(_symbol_report(change, (), (), (), analysed=False),
                             SymbolTests(change.symbol, change.path), True)
        head, base, pr, coverage = self.head, self.base, self.pr, self.coverage
        holder = self.holder(change)
        found = _callers(change, holder, self.sources)
        walk = holder.reacher.reach(change.qualified_name, holder.reacher.runtime_reads(found)
                                    if change.kind == "variable" else None)
        covered = coverage.symbols.get(coverage_key(change)) if coverage else None
        label = coverage.label if coverage else "coverage"
        linked = linked_tests(change, holder.graph, holder.links, set(pr.paths),
                              holder.corpus, set(head.links.roles), walk, covered, label,
                              coverage.test_files if coverage else frozenset())
        vector = symbol_vector(holder.corpus, change.qualified_name)
        docs = stale_docs(change, head.links, set(pr.paths), head.corpus, vector)
        tests = SymbolTests(change.symbol, change.old_path or change.path, walk, covered,
                            label, _inert(change, found, holder))
        callers = _caller_items(change, found, holder, head, pr, self.sources)
        if change.old_qualified_name and base is not None and holder is head:
            callers = _reranked([*callers, *_left_on_old_name(change, base, head, pr)])
        return _Analysed(_symbol_report(change, callers, _link_items(linked, holder, head),
                                        _link_items(docs, head, head), covered=covered),
                         tests, False)


def _inert(change: ChangedSymbol, callers: list[Caller], side: IndexSide) -> bool:
    """Nothing the change alters runs: only comments, docstrings or whitespace changed; or
    a module-level variable's annotation or ``cast`` type only; or a variable read only in
    annotations (a type alias), or read by nothing at all."""
    if change.cosmetic or change.types_only:
        return True
    return change.kind == "variable" and (side.reacher.read_only_as_type(callers) or (
        not callers and not side.reacher.named_somewhere(change.symbol)
        and change.symbol != "__all__"))  # star imports read __all__


def _symbol_report(change: ChangedSymbol, callers: Iterable[EvidenceItem],
                   tests: Iterable[EvidenceItem], docs: Iterable[EvidenceItem],
                   analysed: bool = True, covered: SymbolCoverage | None = None
                   ) -> SymbolReport:
    return SymbolReport(
        path=change.path, symbol=change.symbol, qualified_name=change.qualified_name,
        kind=change.kind, change=change.change, start_line=change.start_line,
        end_line=change.end_line, callers=tuple(callers), tests=tuple(tests),
        docs=tuple(docs), old_path=change.old_path,
        old_qualified_name=change.old_qualified_name, old_signature=change.old_signature,
        new_signature=change.new_signature, parameter_changes=change.parameter_changes,
        cosmetic=change.cosmetic, analysed=analysed, changed_inside=change.changed_inside,
        coverage=covered)


def _caller_items(change: ChangedSymbol, found: list[Caller], holder: IndexSide, head: IndexSide,
                  pr: _PrDiff, sources: _Sources) -> list[EvidenceItem]:
    """Callers ranked with the ones the PR left on a broken signature first."""
    at_base = holder is not head
    breaking = change.change in _BREAKING_CHANGES
    items = []
    for caller in found:
        updated = _caller_updated(caller, at_base, head, pr)
        problem = (_call_problem(change, caller, holder, sources)
                   if breaking and not updated and _may_break(change, caller) else None)
        items.append(_caller_item(0, caller, updated, problem, holder, at_base, pr))
    return _reranked(items)


def _may_break(change: ChangedSymbol, caller: Caller) -> bool:
    """Whether the change can break this call site at all.

    A resolved call, yes. ``self.m()`` that may dispatch to a removed override still
    reaches the base method it resolves to (a changed override's signature may not fit).
    A same-name candidate among several definitions most likely calls another one. A type
    use (an annotation, a field's type), a class passed as a value or a read of its
    members (``Color.RED``) breaks when the type goes, not when its declaration changes.
    """
    if caller.kind == "type" or (caller.kind == "attribute" and change.kind in CLASS_KINDS):
        return change.change == "removed"
    if caller.candidate is None:
        return True
    if caller.candidate == "override":
        return change.change == "signature_changed"
    return caller.sole


def _callers(change: ChangedSymbol, side: IndexSide, sources: _Sources) -> list[Caller]:
    """Call sites of a definition; the sites reading a module-level variable."""
    if change.kind == "variable":
        return readers_of(side.graph.tables, change.qualified_name,
                          lambda path: sources.text(side.sha, path))
    callers = callers_of(side.graph, change.qualified_name)
    if side.links.roles.get(change.path) not in _TEST_FILE_ROLES:
        return callers
    # Code does not import its tests: a same-name candidate outside the tests for a test
    # file's symbol (the library's visitor.visit_enum() for a test's visitor) tells the
    # reviewer of that test nothing.
    return [c for c in callers
            if c.how == "graph" or side.links.roles.get(c.path) in _TEST_FILE_ROLES]


def _call_problem(change: ChangedSymbol, caller: Caller, side: IndexSide,
                  sources: _Sources) -> str | None:
    """Why the call needs an update ("" when not said more precisely), or None: it fits.

    Python calls to a changed signature are checked argument by argument, and changed
    annotations alone never break one; other languages, other breaking changes and
    references that are not calls are all flagged.
    """
    if (change.change != "signature_changed" or change.old_signature is None
            or change.new_signature is None or not change.path.endswith(".py")
            or not caller.path.endswith(".py")):
        return ""
    if all(c.startswith(_ANNOTATION_CHANGES) for c in change.parameter_changes):
        return None  # Python does not check annotations at a call
    text = sources.text_from(side.sha, caller.path, caller.line, caller.column)
    call = call_arguments(text) if text is not None else None
    if call is None:
        return ""
    return python_call_break(call, change.old_signature, change.new_signature, change.symbol)


def _needs_base(change: ChangedSymbol) -> bool:
    """Removed symbols are analysed at base; renamed ones have callers left there."""
    return change.change == "removed" or change.old_qualified_name is not None


def _left_on_old_name(change: ChangedSymbol, base: IndexSide, head: IndexSide,
                      pr: _PrDiff) -> list[EvidenceItem]:
    """Base callers of a renamed or moved symbol's old name that the PR left as they were.

    A caller is fine when its line was edited, or when its file has an unedited call that
    resolves to the new name at head (the old module re-exports it).
    """
    assert change.old_qualified_name is not None
    resolving = {c.path for c in callers_of(head.graph, change.qualified_name)
                 if c.how == "graph"
                 and c.line not in pr.added.get(c.path, frozenset())}
    left = [c for c in callers_of(base.graph, change.old_qualified_name)
            if c.how == "graph" and c.path not in resolving
            and not _caller_updated(c, True, head, pr)]
    problem = f"still refers to {change.old_qualified_name}, which this PR renamed or moved"
    return [_caller_item(0, caller, False, problem, base, True, pr) for caller in left]


def _reranked(items: list[EvidenceItem]) -> list[EvidenceItem]:
    """Callers that need an update first, then by confidence and place; ranks from 1."""
    ordered = sorted(items, key=lambda i: (not i.needs_update, -i.score, i.path,
                                           i.line or 0))
    return [dataclasses.replace(item, rank=rank) for rank, item in enumerate(ordered, 1)]


class _Sources:
    """File text at a revision, read once per file, for checking call sites."""

    def __init__(self, repo: Repository) -> None:
        self._repo = repo
        # process id -> its git process, started on its first read: a forked child
        # (pr_context.forked) starts its own, the parent's pipes are the parent's
        self._readers: dict[int, BlobReader] = {}
        self._blobs: dict[tuple[str, str], bytes | None] = {}
        self._lines: dict[tuple[str, str], list[bytes]] = {}

    def __enter__(self) -> _Sources:
        return self

    def __exit__(self, *exc: object) -> None:
        reader = self._readers.get(os.getpid())
        if reader is not None:
            reader.close()

    def text(self, sha: str, path: str) -> str | None:
        """The whole text of ``path`` at ``sha`` (None: unreadable)."""
        blob = self._blob(sha, path)
        return None if blob is None else blob.decode("utf-8", "replace")

    def text_from(self, sha: str, path: str, line: int, column: int) -> str | None:
        """The source from 1-based ``line``, byte ``column`` onwards (a few lines)."""
        if (sha, path) not in self._lines:
            blob = self._blob(sha, path)
            self._lines[sha, path] = blob.splitlines() if blob is not None else []
        lines = self._lines[sha, path]
        if not 0 < line <= len(lines):
            return None
        window = [lines[line - 1][column:], *lines[line:line + _CALL_LINES]]
        return b"\n".join(window).decode("utf-8", "replace")

    def _blob(self, sha: str, path: str) -> bytes | None:
        key = (sha, path)
        if key not in self._blobs:
            try:
                self._blobs[key] = self._reader().read(f"{sha}:{path}")
            except GitError:
                self._blobs[key] = None
        return self._blobs[key]

    def _reader(self) -> BlobReader:
        pid = os.getpid()
        if pid not in self._readers:
            self._readers[pid] = BlobReader(self._repo)
        return self._readers[pid]


def _caller_updated(caller: Caller, at_base: bool, head: IndexSide, pr: _PrDiff) -> bool:
    """The PR edited the call's line (or, at base, deleted the caller's file)."""
    if at_base:
        return (caller.path not in head.links.roles
                or caller.line in pr.removed.get(caller.path, frozenset()))
    return caller.line in pr.added.get(caller.path, frozenset())


def _caller_item(rank: int, caller: Caller, updated: bool, problem: str | None, side: IndexSide,
                 at_base: bool, pr: _PrDiff) -> EvidenceItem:
    start, end = side.spans.get(caller.enclosing or "", (caller.line, caller.line))
    reason = caller.reason
    if problem is not None:
        reason += f"; {problem}" if problem else ""
        reason += f"; {_NOT_UPDATED}"
    return EvidenceItem(
        rank=rank, path=caller.path, symbol=caller.enclosing,
        role=side.links.roles.get(caller.path, "production"), start_line=start,
        end_line=end, revision=side.sha, score=caller.confidence,
        signals={caller.how: caller.confidence}, reason=_reason(reason, side, at_base),
        touched_in_pr=caller.path in pr.paths, line=caller.line, updated_in_pr=updated,
        needs_update=problem is not None)


def _link_items(found: list[Evidence], side: IndexSide, head: IndexSide) -> list[EvidenceItem]:
    at_base = side is not head
    return [EvidenceItem(
        rank=rank, path=e.path, symbol=e.symbol, role=e.role, start_line=e.start_line,
        end_line=e.end_line, revision=side.sha, score=e.score, signals=dict(e.signals),
        reason=_reason(e.reason, side, at_base), touched_in_pr=e.touched_in_pr,
        status=e.status, node_ids=e.node_ids) for rank, e in enumerate(found, start=1)]


def _reason(text: str, side: IndexSide, at_base: bool) -> str:
    line = redact_secrets(" ".join(text.split()))
    if len(line) > MAX_REASON_CHARS:
        line = line[:MAX_REASON_CHARS - 1] + "…"
    return f"{line} (lines at base {side.sha[:12]})" if at_base else line


def _notes(changes: SymbolChanges, excluded: list[str], skipped: int, total: int,
           budget_s: float, coverage_problem: str | None = None) -> Iterator[str]:
    if excluded:
        yield (f"{len(excluded)} generated or vendored file(s) changed: counted, "
               "not analysed")
    if changes.reason:
        yield f"not analysed: {changes.reason}"
    if skipped:
        yield (f"time budget of {budget_s:g}s ran out: {skipped} of {total} changed "
               "symbols listed without callers, tests or docs")
    if coverage_problem:
        yield f"coverage data not used: {coverage_problem}"
