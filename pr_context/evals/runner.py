"""The two ways to evaluate: replay recorded results, or search live through a Retriever.

Recorded mode (``run_recorded``) needs no index, network or model: it scores a results
file against the cases, which checks labels and metrics on their own. Live mode
(``run_live``) prepares each corpus at its pinned revision and asks every retriever for
every case. Both write the same artifacts (see ``pr_context.evals.report``).

The real retriever plugs in through the ``Retriever`` protocol: given the corpus
repository, the pinned revision and an index file path that the runner reserves for that
retriever and corpus, it builds or updates the index at that revision (its job, not the
runner's) and returns a ``SearchRun`` with the manifest of the index it searched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from pr_context.errors import ConfigError
from pr_context.evals.cases import Case, Split, load_cases, select_split
from pr_context.evals.corpora import (
    DEFAULT_CORPORA_PATH,
    Corpus,
    Downloader,
    GitCorpus,
    corpus_repository,
    load_corpora,
)
from pr_context.evals.errors import CaseFileError, CorpusError, ResultsFileError
from pr_context.evals.mined import DEFAULT_MINED_PATH, load_mined_config, prepare_mined
from pr_context.evals.report import Report, build_report, write_report
from pr_context.evals.results import CaseRun, Run, SearchRun, case_run_from_search, load_runs
from pr_context.git import commit_exists, open_repository

__all__ = ["DIAGNOSTIC_DEPTH", "Retriever", "index_path", "mined_index_root", "run_live",
           "run_mined", "run_recorded", "search_cases"]

# Live searches ask for this many results even when the cutoff is smaller: metrics are
# taken at the cutoff, the deeper list only shows how far away missed evidence was.
DIAGNOSTIC_DEPTH = 20
_RETRIEVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class Retriever(Protocol):
    """A search implementation under evaluation (hybrid, or a baseline)."""

    def search(self, repo: Path, revision: str, db: Path, query: str, k: int,
               path_context: str | None) -> SearchRun:
        """The ranked chunks for ``query`` in ``repo`` at ``revision``, at most ``k``.

        ``db`` is this retriever's index file for this corpus; build or update it to
        ``revision`` first. Return empty ``results`` when nothing is relevant enough.
        """
        ...


def run_recorded(cases_path: Path, results_path: Path, out_dir: Path,
                 corpora_path: Path = DEFAULT_CORPORA_PATH, split: Split | None = None
                 ) -> Report:
    """Score a recorded results file on the cases, write the artifacts, return the report.

    :raises CaseFileError: the case file is invalid.
    :raises ResultsFileError: the results file is malformed or does not fit the cases.
    """
    corpora = load_corpora(corpora_path)
    all_cases = load_cases(cases_path, corpora)
    cases = _selected(all_cases, split, cases_path)
    runs = load_runs(results_path)
    for run in runs:
        _check_known(run, all_cases, results_path)
    report = build_report(cases, runs, split)
    write_report(report, out_dir)
    return report


def run_live(cases_path: Path, out_dir: Path, retrievers: Mapping[str, Retriever],
             cache_dir: Path, split: Split | None = None,
             corpora_path: Path = DEFAULT_CORPORA_PATH, download: Downloader | None = None
             ) -> Report:
    """Search every case with every retriever, then score and write the artifacts.

    Corpora are prepared under ``cache_dir`` (downloaded once, verified against their
    pinned revision); each retriever gets one index file per corpus under it.

    :raises CorpusError: a corpus cannot be prepared or lacks a case's revision.
    """
    if not retrievers:
        raise ConfigError("run_live needs at least one retriever")
    corpora = load_corpora(corpora_path)
    cases = _selected(load_cases(cases_path, corpora), split, cases_path)
    repos = _prepare_repos(cases, corpora, cache_dir, download)
    runs = [search_cases(_checked_name(name), retriever, cases, repos, cache_dir)
            for name, retriever in retrievers.items()]
    report = build_report(cases, runs, split)
    write_report(report, out_dir)
    return report


def run_mined(out_dir: Path, retrievers: Mapping[str, Retriever], cache_dir: Path,
              split: Split | None = None, mined_path: Path = DEFAULT_MINED_PATH,
              corpora_path: Path = DEFAULT_CORPORA_PATH, download: Downloader | None = None
              ) -> Report:
    """Mine the cases of every package of ``mined_path``, search them, score and write.

    Each package's eval copy gets its own indexes under ``mined_index_root``, apart from
    the hand-written cases' corpora, so a package that is also a hand corpus is never
    confused with its eval copy.
    """
    if not retrievers:
        raise ConfigError("run_mined needs at least one retriever")
    mined = prepare_mined(load_mined_config(mined_path), load_corpora(corpora_path),
                          cache_dir, download)
    cases = _selected(mined.cases, split, mined_path)
    runs = [search_cases(_checked_name(name), retriever, cases, mined.repos,
                         mined_index_root(cache_dir))
            for name, retriever in retrievers.items()]
    report = build_report(cases, runs, split)
    write_report(report, out_dir)
    return report


def mined_index_root(cache_dir: Path) -> Path:
    """Where the mined corpus keeps its indexes (``index_path`` below it)."""
    return cache_dir / "mined"


def index_path(cache_dir: Path, retriever: str, corpus: str) -> Path:
    """The index file reserved for ``retriever`` on ``corpus``: indexes are never shared,
    so one retriever's settings never force another's index to be rebuilt."""
    return cache_dir / "indexes" / retriever / f"{corpus}.duckdb"


def _selected(cases: Sequence[Case], split: Split | None, source: Path) -> tuple[Case, ...]:
    selected = select_split(cases, split)
    if not selected:
        raise CaseFileError(f"{source}: no cases in split {split}")
    return selected


def _check_known(run: Run, cases: Sequence[Case], source: Path) -> None:
    known = {c.id for c in cases}
    unknown = [c.case_id for c in run.cases if c.case_id not in known]
    if unknown:
        raise ResultsFileError(f"{source}: run {run.retriever!r} has results for cases the "
                               f"case file does not define: {', '.join(unknown)}")


def _checked_name(name: str) -> str:
    if _RETRIEVER_NAME.fullmatch(name) is None:
        raise ConfigError(f"retriever names use letters, digits, '.', '_' and '-': {name!r}")
    return name


def _prepare_repos(cases: Sequence[Case], corpora: Mapping[str, Corpus], cache_dir: Path,
                   download: Downloader | None) -> dict[str, Path]:
    repos = {name: corpus_repository(corpora[name], cache_dir, download)
             for name in sorted({c.repo for c in cases})}
    for case in cases:
        if isinstance(corpora[case.repo], GitCorpus) and not commit_exists(
            open_repository(repos[case.repo]), case.revision
        ):
            raise CorpusError(f"case {case.id}: revision {case.revision} is not a commit of "
                              f"{repos[case.repo]} (fetch it, or fix the case)")
    return repos


def search_cases(name: str, retriever: Retriever, cases: Sequence[Case],
                 repos: Mapping[str, Path], cache_dir: Path) -> Run:
    """Every case searched by ``retriever``, each corpus's index under ``cache_dir``."""
    # Grouped by corpus and revision so each index is brought to a revision once.
    entries: dict[str, CaseRun] = {}
    for case in sorted(cases, key=lambda c: (c.repo, c.revision, c.id)):
        db = index_path(cache_dir, name, case.repo)
        db.parent.mkdir(parents=True, exist_ok=True)
        search = retriever.search(repos[case.repo], case.revision, db, case.query,
                                  max(case.cutoff, DIAGNOSTIC_DEPTH), case.path_context)
        entries[case.id] = case_run_from_search(case.id, case.query, search)
    return Run(retriever=name, manifest=None, cases=tuple(entries[c.id] for c in cases))
