"""The ``pr-context`` command line: parses options, calls the pipeline, turns errors into exits.

Exit codes: 0 success, 2 bad input (one line on stderr), 1 unexpected failure.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from pr_context import __version__
from pr_context.defaults import (
    COCHANGE_COMMITS,
    DEFAULT_BACKEND,
    DEFAULT_K,
    DEFAULT_MODEL,
    DEFAULT_TOP_K,
    EMBEDDING_BACKENDS,
    REVIEW_BUDGET_S,
)
from pr_context.errors import BadInputError, ConfigError, PrContextError
from pr_context.evals import LIVE_RETRIEVERS
from pr_context.git import open_repository
from pr_context.mcp import (
    DEFAULT_BUDGET_CHARS,
    DEFAULT_DEADLINE_S,
    DEFAULT_MAX_DIRTY_FILES,
    DEFAULT_PORT,
)
from pr_context.progress import progress_for

if TYPE_CHECKING:
    from pr_context.evals.cases import Split
    from pr_context.evals.report import Report
    from pr_context.index.build import IndexResult
    from pr_context.pipeline import EmbeddingChoice
    from pr_context.retrieve import SearchHit

_F = TypeVar("_F", bound=Callable[..., Any])

# Commands import their pipelines when they run, so `index` does not pay for loading
# review, evaluation and rendering code it never uses.

__all__ = ["cli", "main"]

ONNX_CACHE_ENV = "PR_CONTEXT_ONNX_CACHE"


def _backend_option(default: str | None) -> Callable[[_F], _F]:
    shown = f"default: {default}" if default else "default: the one the index was built with"
    return click.option(
        "--embedding-backend", "backend", type=click.Choice(EMBEDDING_BACKENDS),
        default=default, envvar="PR_CONTEXT_EMBEDDING_BACKEND",
        help="What runs the embedding model: ONNX Runtime on a graph built from its "
             "weights without torch, its linear layers in int8 (onnx-int8) or fp32 (onnx), or "
             f"torch (needs pip install 'pr-context[torch]') ({shown}) "
             "[env: PR_CONTEXT_EMBEDDING_BACKEND].")


_onnx_cache_option = click.option(
    "--onnx-cache", type=click.Path(file_okay=False, path_type=Path), envvar=ONNX_CACHE_ENV,
    help="Where the model's ONNX graphs are kept [env: PR_CONTEXT_ONNX_CACHE; default: "
         "$XDG_CACHE_HOME/pr-context/onnx, or ~/.cache/pr-context/onnx].")


def _onnx_cache(given: Path | None) -> Path:
    from pr_context.pipeline import default_onnx_cache

    return given if given is not None else default_onnx_cache(os.environ)


def _choice(model: str | None, backend: str | None, onnx_cache: Path | None
            ) -> EmbeddingChoice:
    from pr_context.pipeline import EmbeddingChoice

    return EmbeddingChoice(model, backend, _onnx_cache(onnx_cache))


class _Group(click.Group):
    """Turns PrContextError into its exit code with a one-line message, in one place."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except PrContextError as exc:
            click.echo(f"pr-context: error: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pr-context")
def cli() -> None:
    """Callers, linked tests and possibly-stale docs for every symbol a PR changes."""


@cli.command()
@click.option("--repo", default=".", show_default=True,
              help="Git repository (work tree or bare).")
@click.option("--rev", default="HEAD", show_default=True,
              help="Revision to index: SHA, branch, tag or expression like HEAD~3.")
@click.option("--db", "db", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Index file. Created if missing; updated incrementally if it holds "
                   "another revision of this repository.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.option("--no-embeddings", is_flag=True,
              help="Lexical and graph index only: no model is loaded (large repositories).")
@click.option("--model", default=DEFAULT_MODEL, show_default=True,
              help="sentence-transformers model name or local path. The default ships "
                   "with pr-context and loads offline; a model that is not BERT-family "
                   "needs --embedding-backend torch.")
@_backend_option(DEFAULT_BACKEND)
@_onnx_cache_option
@click.option("--include", multiple=True, metavar="GLOB",
              help="Index only paths matching GLOB (repeatable; adds to the config file).")
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Never index paths matching GLOB (repeatable; adds to the config file).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Config file to use instead of .github/pr-context.yml at the revision.")
@click.option("--cochange-commits", default=COCHANGE_COMMITS, show_default=True,
              type=click.IntRange(min=0), help="Commits of history mined for co-changes.")
@click.option("--shard", "shard_text", metavar="K/N",
              help="Index only shard K of N: a share of the files balanced by size and "
                   "stable across revisions. Merge all N shard files with `merge`.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output, warnings only.")
def index(repo: str, rev: str, db: Path, as_json: bool, no_embeddings: bool, model: str,
          backend: str, onnx_cache: Path | None, include: tuple[str, ...],
          exclude: tuple[str, ...], config_file: Path | None, cochange_commits: int,
          shard_text: str | None, quiet: bool) -> None:
    """Index revision REV of a repository into a DuckDB file.

    Parses every file with tree-sitter into chunks, definitions, references and imports,
    embeds the chunks, and mines co-change history. When the file already holds another
    revision of the same repository, only the files that differ are re-parsed and only
    text never embedded before is embedded. With --shard, the file holds one shard's
    files and no co-changes; it cannot be searched until `merge` makes the shards one
    index.
    """
    from pr_context.graph import store_graph
    from pr_context.index.build import IndexOptions, build_index
    from pr_context.index.shards import parse_shard

    options = IndexOptions(
        include=include,
        exclude=exclude,
        config_text=_read_config(config_file),
        cochange_commits=cochange_commits,
        shard=parse_shard(shard_text) if shard_text is not None else None,
    )
    from pr_context.pipeline import embedder_for

    progress = progress_for(sys.stderr, quiet)
    embedder = embedder_for(_choice(model, backend, onnx_cache), no_embeddings, db,
                            progress.warn)
    result = build_index(open_repository(repo), rev, db, options, embedder, progress)
    if options.shard is None:  # a shard's graph would miss the others' files
        store_graph(db, progress)
    click.echo(json.dumps(_index_json(result)) if as_json else _index_summary(result))


def _read_config(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc


def _index_json(result: IndexResult) -> dict[str, object]:
    data = dataclasses.asdict(result)
    data["warnings"] = list(result.warnings)
    return data


def _index_summary(result: IndexResult) -> str:
    mode = (f"updated from {result.previous_revision[:12]}" if result.previous_revision
            else "built from scratch")
    return (
        f"indexed {result.revision[:12]} ({mode}) in {result.seconds:.1f}s: "
        f"{result.files} files ({result.skipped} skipped), {result.chunks} chunks, "
        f"{result.definitions} definitions, {result.references} references; "
        f"{result.embedded} chunks embedded, {result.reused} reused; digest {result.digest[:16]}"
    )


@cli.command("merge")
@click.option("--repo", default=".", show_default=True,
              help="Git repository the shards were built from (for co-change history).")
@click.option("--db", "db", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Merged index file to write; replaced only once the merge is complete.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output, warnings only.")
@click.argument("shards", nargs=-1, required=True,
                type=click.Path(dir_okay=False, path_type=Path))
def merge_command(repo: str, db: Path, as_json: bool, quiet: bool,
                  shards: tuple[Path, ...]) -> None:
    """Merge the shard files of `index --shard K/N` into one index.

    Takes every shard of one build (same revision, settings and N, each once), copies
    their rows and vectors, and mines co-change history over all their files: the
    merged index equals a single build of that revision (same digest) and is searched,
    reviewed and updated like one.
    """
    from pr_context.graph import store_graph
    from pr_context.index.merge import merge_shards

    progress = progress_for(sys.stderr, quiet)
    result = merge_shards(open_repository(repo), shards, db, progress)
    store_graph(db, progress)
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(result)))
    else:
        click.echo(f"merged {result.shards} shards of {result.revision[:12]} into {db} in "
                   f"{result.seconds:.1f}s: {result.files} files ({result.skipped} skipped), "
                   f"{result.chunks} chunks; digest {result.digest[:16]}")


@cli.command("search")
@click.option("--repo", default=".", show_default=True, help="Git repository (work tree or bare).")
@click.option("--rev", default="HEAD", show_default=True,
              help="Revision to search; the index is built or updated to it first.")
@click.option("--db", "db", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Index file (see `index`).")
@click.option("--k", "k", default=DEFAULT_K, show_default=True, type=click.IntRange(min=1),
              help="How many results at most.")
@click.option("--json", "as_json", is_flag=True, help="Print results as a JSON list.")
@click.option("--path-context", metavar="PATH",
              help="The file you are in: its imports and importers rank higher.")
@click.option("--model", default=None,
              help="Embedding model; defaults to the one the index was built with.")
@_backend_option(None)
@_onnx_cache_option
@click.option("--no-embeddings", is_flag=True, help="Lexical and structural search only.")
@click.argument("query")
def search_command(repo: str, rev: str, db: Path, k: int, as_json: bool,
                   path_context: str | None, model: str | None, backend: str | None,
                   onnx_cache: Path | None, no_embeddings: bool, query: str) -> None:
    """Search revision REV for QUERY: code, tests and docs, best first.

    Combines BM25 over code-aware tokens, embedding similarity and exact definition
    names, then weighs by role: tests, fakes and docs rank below the implementation
    unless the query asks for them ("which tests...", "where is ... documented"), and
    deprecated code is left out unless asked for. When nothing is relevant enough the
    answer is empty, with the reason on stderr.
    """
    from pr_context.pipeline import Searcher, embedder_for, model_loading

    if not query.strip():
        raise BadInputError("the query is empty")
    progress = progress_for(sys.stderr, quiet=True)
    searcher = Searcher(embedder_for(_choice(model, backend, onnx_cache), no_embeddings, db,
                                     progress.warn), progress)
    repository = open_repository(repo)
    with model_loading(searcher.embedder):
        corpus = searcher.corpus(repository, rev, db)
    outcome = searcher.search(corpus, query, k, path_context)
    if outcome.message:
        click.echo(f"pr-context: {outcome.message}", err=True)
    if as_json:
        click.echo(json.dumps([_hit_json(h) for h in outcome.hits], indent=2))
    else:
        for hit in outcome.hits:
            symbol = f"  {hit.symbol}" if hit.symbol else ""
            click.echo(f"{hit.rank:>3}. {hit.path}:{hit.start_line}-{hit.end_line}{symbol}"
                       f"  [{hit.role}]  {hit.score:.4f}")


def _hit_json(hit: SearchHit) -> dict[str, object]:
    return {"rank": hit.rank, "path": hit.path, "symbol": hit.symbol, "role": hit.role,
            "start_line": hit.start_line, "end_line": hit.end_line,
            "revision": hit.revision, "score": hit.score, "chunk_id": hit.chunk_id,
            "kind": hit.kind, "components": hit.components}


DEFAULT_DB = Path(".pr-context") / "index.duckdb"  # inside the repository, git-ignored


def _default_db(repo: str, db: Path | None) -> Path:
    return db if db is not None else Path(repo) / DEFAULT_DB


def _work_tree_options(command: Callable[..., None]) -> Callable[..., None]:
    """--repo and --db, as the commands that work in a checkout take them."""
    command = click.option(
        "--db", "db", type=click.Path(dir_okay=False, path_type=Path),
        help="Index file (see `index`); default: REPO/.pr-context/index.duckdb.")(command)
    return click.option("--repo", default=".", show_default=True,
                        help="Git work tree.")(command)


@cli.command("mcp")
@_work_tree_options
@click.option("--http", is_flag=True,
              help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="HTTP address to bind; other than loopback only with a token in "
                   "PR_CONTEXT_MCP_TOKEN.")
@click.option("--port", default=DEFAULT_PORT, show_default=True,
              type=click.IntRange(1, 65535), help="HTTP port.")
@click.option("--budget-chars", default=DEFAULT_BUDGET_CHARS, show_default=True,
              type=click.IntRange(min=2_000), help="Most characters in one answer.")
@click.option("--deadline", "deadline_s", default=DEFAULT_DEADLINE_S, show_default=True,
              type=click.FloatRange(min=1.0), help="Seconds of work per call.")
@click.option("--max-dirty-files", default=DEFAULT_MAX_DIRTY_FILES, show_default=True,
              type=click.IntRange(min=0),
              help="Working-tree changes overlaid; past this answers say they are stale.")
def mcp_command(repo: str, db: Path | None, http: bool, host: str, port: int,
                budget_chars: int, deadline_s: float, max_dirty_files: int) -> None:
    """Serve the index to code assistants over MCP (read-only tools).

    Tools: search_code, find_symbol, find_callers, find_tests, find_docs, change_impact,
    read_range, index_status. Answers come from the index with the working tree's
    changes overlaid; the index is updated when HEAD moves. Stdio by default (the
    client starts this command); --http serves 127.0.0.1 with Host/Origin checks.
    See docs/mcp.md.
    """
    from pr_context.mcp.handshake import FirstLine, take_first_line
    from pr_context.mcp.paths import require_work_tree

    repository = open_repository(repo)
    require_work_tree(repository)
    first: FirstLine | None = None
    if not http:  # answered before the index, model and SDK code is imported
        first = take_first_line(__version__)
    from pr_context.mcp.workspace import ServerSettings, Workspace

    settings = ServerSettings(budget_chars=budget_chars, deadline_s=deadline_s,
                              max_dirty_files=max_dirty_files,
                              onnx_cache=_onnx_cache(None))
    workspace = Workspace(repository, _default_db(repo, db).resolve(), settings)
    try:
        if http:
            from pr_context.mcp.server import serve_http

            serve_http(workspace, host, port, os.environ.get("PR_CONTEXT_MCP_TOKEN") or None)
        else:
            from pr_context.mcp.server import serve_stdio

            serve_stdio(workspace, first)
    finally:
        workspace.close()


@cli.group("hook")
def hook_group() -> None:
    """Install git hooks that keep the index up to date in the background."""


@hook_group.command("install")
@_work_tree_options
@click.option("--chain", is_flag=True,
              help="Keep existing hooks: run them first, then the index update.")
def hook_install(repo: str, db: Path | None, chain: bool) -> None:
    """Add post-commit, post-checkout and post-merge hooks that update the index.

    An existing hook that is not pr-context's is never overwritten: without --chain
    nothing changes and the command fails, saying which hooks exist.
    """
    from pr_context.hooks import install_hooks

    repository = open_repository(repo)
    target = _default_db(repo, db).resolve()
    for hook in install_hooks(repository, target, sys.executable, chain):
        kept = f" (runs {hook.chained.name} first)" if hook.chained else ""
        click.echo(f"installed {hook.path}{kept}")


@hook_group.command("update")
@_work_tree_options
def hook_update(repo: str, db: Path | None) -> None:
    """Update the index to HEAD with the settings it was built with (what the hooks run).

    Does nothing when there is no index yet: build it once with `pr-context index`.
    """
    from pr_context.hooks import update_index

    result = update_index(open_repository(repo), _default_db(repo, db).resolve(),
                          progress_for(sys.stderr, quiet=True))
    click.echo("no index to update" if result is None else _index_summary(result))


# Split names as in pr_context.evals.cases.SPLITS (a test keeps them equal); the evals
# modules themselves are imported when the command runs, keeping other commands' start fast.
_EVAL_SPLITS = ("tuning", "heldout")


@cli.command("eval")
@click.option("--cases", "cases_path", type=click.Path(path_type=Path),
              help="Labelled cases: a JSONL file, or a directory of them (format: "
                   "evals/README.md).")
@click.option("--mined", "mined_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Live mode: also evaluate the mined corpus of this file "
                   "(evals/mined.yml: cases generated from PyPI packages), written to "
                   "OUT/mined.")
@click.option("--recorded", "results_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Recorded mode: score this results file (JSON); no index, network or "
                   "model is used.")
@click.option("--live", is_flag=True,
              help="Live mode: prepare each corpus at its pinned revision, index it and "
                   "search every case with the hybrid retriever and the baselines.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for the artifacts: run.json, report.json, report.md.")
@click.option("--gate", "gate_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Gate file with thresholds (e.g. evals/gate.yml) for the --cases run; "
                   "exit 1 when not met.")
@click.option("--split", type=click.Choice(_EVAL_SPLITS),
              help="Evaluate only this split's cases (default: all).")
@click.option("--corpora", "corpora_path", default="evals/corpora.yml", show_default=True,
              type=click.Path(dir_okay=False, path_type=Path),
              help="Corpora file pinning the revision of every case's corpus.")
@click.option("--cache-dir", default="evals/.cache", show_default=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Live mode: where corpora and their indexes are kept between runs.")
@click.option("--retriever", "retriever_names", multiple=True,
              type=click.Choice(LIVE_RETRIEVERS),
              help="Live mode: evaluate only these retrievers (repeatable; default: all; "
                   "the mined corpus never runs naive-windows).")
@click.option("--model", default=DEFAULT_MODEL, show_default=True,
              help="Live mode: embedding model.")
@_backend_option(DEFAULT_BACKEND)
@_onnx_cache_option
@click.option("--no-embeddings", is_flag=True,
              help="Live mode: lexical and structural retrieval only.")
@click.option("--doc", "doc_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the evaluation document (hand-written held-out results in "
                   "full, tuning in brief, and the mined corpus with --mined), e.g. "
                   "docs/evaluation.md.")
def eval_command(cases_path: Path | None, mined_path: Path | None, results_path: Path | None,
                 live: bool, out_dir: Path, gate_path: Path | None, split: str | None,
                 corpora_path: Path, cache_dir: Path, retriever_names: tuple[str, ...],
                 model: str, backend: str, onnx_cache: Path | None, no_embeddings: bool,
                 doc_path: Path | None) -> None:
    """Score retrieval against labelled cases and check the scores against a gate.

    Recorded mode (--recorded) scores a stored results file; live mode (--live) indexes
    each corpus at its pinned revision and runs the hybrid search and its baselines
    (bm25, embedding, rrf, naive-windows). Writes run.json (every ranked chunk with
    per-case metrics), report.json (aggregates overall and per query class, repository
    and split) and report.md into OUT, and with --mined the same for the mined corpus
    into OUT/mined. Exits 0 when the gate passes or none is given, 1 when it fails
    (failures printed one per line), 2 for invalid input.
    """
    from pr_context.evals.cases import SPLITS

    if live == (results_path is not None):
        raise BadInputError("choose one mode: --recorded FILE or --live")
    if cases_path is None and (mined_path is None or results_path is not None):
        raise BadInputError("give --cases (and, in live mode, optionally --mined)")
    if mined_path is not None and results_path is not None:
        raise BadInputError("--mined needs --live")
    selected = next((s for s in SPLITS if s == split), None)
    reports = _eval_reports(cases_path, mined_path, results_path, out_dir, selected,
                            corpora_path, cache_dir, retriever_names,
                            None if no_embeddings else _choice(model, backend, onnx_cache))
    if doc_path is not None:
        _write_eval_document(doc_path, cases_path, mined_path, corpora_path, reports)
    if gate_path is not None and reports.hand is not None:
        _apply_gate(gate_path, reports.hand)
    for report in (reports.hand, reports.mined):
        for run in report.runs if report is not None and gate_path is None else ():
            if not run.valid:
                click.echo(f"warning: run {run.retriever!r} is invalid: {run.problems[0]}",
                           err=True)


@dataclasses.dataclass(frozen=True)
class _EvalReports:
    hand: Report | None
    mined: Report | None


def _eval_reports(cases_path: Path | None, mined_path: Path | None,
                  results_path: Path | None, out_dir: Path, split: Split | None,
                  corpora_path: Path, cache_dir: Path, retriever_names: tuple[str, ...],
                  embedding: EmbeddingChoice | None) -> _EvalReports:
    """Run the requested evaluations and print each one's summary (``embedding``: the
    model and backend, None for lexical and structural retrieval only)."""
    from pr_context.evals.markdown import summary_lines
    from pr_context.evals.retrievers import live_retrievers
    from pr_context.evals.runner import run_live, run_mined, run_recorded
    from pr_context.pipeline import Searcher

    if results_path is not None:
        assert cases_path is not None
        recorded = run_recorded(cases_path, results_path, out_dir, corpora_path, split)
        _echo_summary(summary_lines(recorded), out_dir)
        return _EvalReports(recorded, None)
    from pr_context.embed import make_embedder

    progress = progress_for(sys.stderr)
    embedder = None if embedding is None else make_embedder(
        embedding.model or DEFAULT_MODEL, embedding.backend or DEFAULT_BACKEND,
        embedding.onnx_cache, progress.warn)
    retrievers = live_retrievers(Searcher(embedder, progress), embedder, progress)
    chosen = {n: r for n, r in retrievers.items()
              if not retriever_names or n in retriever_names}
    hand: Report | None = None
    mined: Report | None = None
    if cases_path is not None:
        hand = run_live(cases_path, out_dir, chosen, cache_dir, split, corpora_path)
        _echo_summary(summary_lines(hand), out_dir)
    if mined_path is not None:
        without_windows = {n: r for n, r in chosen.items() if n != "naive-windows"}
        mined = run_mined(out_dir / "mined", without_windows, cache_dir, split, mined_path,
                          corpora_path)
        _echo_summary(summary_lines(mined), out_dir / "mined")
    return _EvalReports(hand, mined)


def _echo_summary(lines: list[str], out_dir: Path) -> None:
    for line in lines:
        click.echo(line)
    click.echo(f"wrote {out_dir / 'report.md'}, report.json, run.json")


def _write_eval_document(doc_path: Path, cases_path: Path | None, mined_path: Path | None,
                         corpora_path: Path, reports: _EvalReports) -> None:
    from pr_context.evals.cases import load_cases
    from pr_context.evals.corpora import load_corpora
    from pr_context.evals.document import evaluation_document

    if cases_path is None or reports.hand is None:
        raise BadInputError("--doc needs --cases: the document reports the hand-written "
                            "cases first")
    cases = load_cases(cases_path, load_corpora(corpora_path))
    doc_path.write_text(evaluation_document(cases, reports.hand.runs, reports.mined),
                        encoding="utf-8")
    click.echo(f"wrote {doc_path}")


def _apply_gate(gate_path: Path, report: Report) -> None:
    from pr_context.evals.errors import GateFailedError
    from pr_context.evals.gate import evaluate_gate, load_gate

    result = evaluate_gate(report, load_gate(gate_path))
    if result.passed:
        click.echo(f"gate {gate_path}: passed")
        return
    click.echo(f"gate {gate_path}: {len(result.failures)} failure(s):")
    for failure in result.failures:
        click.echo(failure)
    raise GateFailedError(f"gate {gate_path} failed with {len(result.failures)} failure(s)")


@cli.command("review")
@click.option("--repo", default=".", show_default=True, help="Git repository (work tree or bare).")
@click.option("--base", "base", required=True, help="Base revision of the pull request.")
@click.option("--head", "head", required=True, help="Head revision of the pull request.")
@click.option("--db", "db", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Base index file: built or updated to BASE, and left valid for it. The "
                   "head is indexed in a copy, OUT/head-index.duckdb.")
@click.option("--out", "out_dir", required=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Directory for evidence.json, comment.md and summary.md.")
@click.option("--top-k", default=DEFAULT_TOP_K, show_default=True, type=click.IntRange(min=1),
              help="Items per category shown in the comment (evidence.json holds all).")
@click.option("--no-embeddings", is_flag=True, help="Lexical and graph evidence only.")
@click.option("--model", default=None,
              help="Embedding model; defaults to the one the index was built with.")
@_backend_option(None)
@_onnx_cache_option
@click.option("--link-base", metavar="URL",
              help="Link locations to URL/blob/<sha>/path#Lline, e.g. "
                   "https://github.com/owner/name; plain paths otherwise.")
@click.option("--budget", "budget_s", default=REVIEW_BUDGET_S, show_default=True,
              type=click.FloatRange(min=0),
              help="Seconds of analysis; symbols left after it are only listed.")
@click.option("--coverage", "coverage_file", type=click.Path(dir_okay=False, path_type=Path),
              help="coverage.py data file with per-test contexts (pytest --cov "
                   "--cov-context=test), from a run of the repository's own tests: the "
                   "tests that ran each changed symbol become the strongest evidence. "
                   "Read only; nothing is run.")
@click.option("--coverage-rev", metavar="REV",
              help="The commit the --coverage tests ran at (default: BASE); its lines are "
                   "mapped to BASE through the diff.")
@click.option("--json", "as_json", is_flag=True, help="Print a one-line JSON summary.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output, warnings only.")
def review_command(repo: str, base: str, head: str, db: Path, out_dir: Path, top_k: int,
                   no_embeddings: bool, model: str | None, backend: str | None,
                   onnx_cache: Path | None, link_base: str | None, budget_s: float,
                   coverage_file: Path | None, coverage_rev: str | None,
                   as_json: bool, quiet: bool) -> None:
    """Review the changes BASE..HEAD: callers, linked tests and possibly-stale docs.

    Writes OUT/evidence.json (every ranked item), OUT/comment.md (the PR comment, top
    items per symbol) and OUT/summary.md (a step summary).
    """
    from pr_context.coverage import CoverageInput
    from pr_context.pipeline import embedder_for
    from pr_context.render import headline
    from pr_context.review import ReviewOptions, review, write_review

    if link_base is not None and not link_base.startswith(("https://", "http://")):
        raise BadInputError(f"--link-base must be an http(s) URL, not {link_base!r}")
    if coverage_rev is not None and coverage_file is None:
        raise BadInputError("--coverage-rev needs --coverage FILE")
    coverage = CoverageInput(coverage_file, coverage_rev) if coverage_file else None
    options = ReviewOptions(top_k=top_k, budget_s=budget_s, link_base=link_base,
                            coverage=coverage)
    progress = progress_for(sys.stderr, quiet)
    # One review per process, which ends in os._exit (run): the cyclic collector, back on
    # after the review, would only walk both sides' graphs and corpora once more to free
    # what the exit frees anyway (0.5 s on sphinx).
    gc.disable()
    report = review(open_repository(repo), base, head, db, out_dir,
                    embedder_for(_choice(model, backend, onnx_cache), no_embeddings, db,
                                 progress.warn), progress, options)
    outputs = write_review(report, out_dir)
    if as_json:
        click.echo(json.dumps({
            "changed_symbols": len(report.symbols),
            "callers_not_updated": report.callers_not_updated,
            "stale_docs": report.stale_docs, "tests_to_run": len(report.test_selection),
            "run_everything": report.run_everything is not None,
            "no_test_runs": report.no_test_runs,
            "evidence": str(outputs.evidence), "comment": str(outputs.comment),
            "summary": str(outputs.summary)}))
    else:
        click.echo(f"{headline(report)}; wrote {outputs.evidence}, {outputs.comment.name}, "
                   f"{outputs.summary.name}")


_ACTION_ENV = "PR_CONTEXT_"


@cli.command("action")
@click.option("--repo", envvar="GITHUB_WORKSPACE", default=".", show_default=True,
              help="The checked-out repository [env: GITHUB_WORKSPACE].")
@click.option("--db", envvar="PR_CONTEXT_DB", type=click.Path(dir_okay=False, path_type=Path),
              help="Index file of the base revision (restored from the cache) "
                   "[env: PR_CONTEXT_DB; default: $RUNNER_TEMP/pr-context/index.duckdb].")
@click.option("--out", "out_dir", envvar="PR_CONTEXT_OUT",
              type=click.Path(file_okay=False, path_type=Path),
              help="Directory for evidence.json, comment.md, summary.md and "
                   "action-report.json [env: PR_CONTEXT_OUT; default: "
                   "$RUNNER_TEMP/pr-context/out].")
@click.option("--config", envvar="PR_CONTEXT_CONFIG", default=".github/pr-context.yml",
              show_default=True,
              help="Config file in the repository, read at the base revision "
                   "[env: PR_CONTEXT_CONFIG].")
@click.option("--model", envvar="PR_CONTEXT_MODEL", default=None,
              help="Embedding model; empty: the bundled offline default "
                   "[env: PR_CONTEXT_MODEL].")
@click.option("--embeddings/--no-embeddings", envvar="PR_CONTEXT_EMBEDDINGS", default=True,
              show_default=True, help="Use the embedding model [env: PR_CONTEXT_EMBEDDINGS].")
@_backend_option(DEFAULT_BACKEND)
@_onnx_cache_option
@click.option("--top-k", envvar="PR_CONTEXT_TOP_K", default=DEFAULT_TOP_K, show_default=True,
              type=click.IntRange(min=1),
              help="Items per category in the comment [env: PR_CONTEXT_TOP_K].")
@click.option("--comment", envvar="PR_CONTEXT_COMMENT", default="sticky", show_default=True,
              type=click.Choice(["sticky", "off"]),
              help="Post and update one sticky comment, or none [env: PR_CONTEXT_COMMENT].")
@click.option("--fail-on", envvar="PR_CONTEXT_FAIL_ON", default="", metavar="LIST",
              help="Exit 1 when any of these hold (comma-separated): stale-docs, "
                   "callers-not-updated; eval-gate is checked by the action's eval step "
                   "[env: PR_CONTEXT_FAIL_ON].")
@click.option("--skip-drafts/--no-skip-drafts", envvar="PR_CONTEXT_SKIP_DRAFTS", default=True,
              show_default=True, help="Skip draft pull requests [env: PR_CONTEXT_SKIP_DRAFTS].")
@click.option("--comment-when-empty/--no-comment-when-empty",
              envvar="PR_CONTEXT_COMMENT_WHEN_EMPTY", default=False, show_default=True,
              help="Comment even when no symbol changed [env: PR_CONTEXT_COMMENT_WHEN_EMPTY].")
@click.option("--annotations", envvar="PR_CONTEXT_ANNOTATIONS", default="warning",
              show_default=True, type=click.Choice(["warning", "notice", "off"]),
              help="Level of the annotations on the diff for high-confidence findings "
                   "(at most 10) [env: PR_CONTEXT_ANNOTATIONS].")
@click.option("--coverage-file", envvar="PR_CONTEXT_COVERAGE_FILE", default="",
              help="coverage.py data file with per-test contexts, relative to the repository; "
                   "used when it exists and fits [env: PR_CONTEXT_COVERAGE_FILE].")
@click.option("--coverage-revision", envvar="PR_CONTEXT_COVERAGE_REVISION", default="",
              help="The commit the coverage file's tests ran at; empty: the PR's base "
                   "[env: PR_CONTEXT_COVERAGE_REVISION].")
@click.option("--prepare", "prepare_only", is_flag=True,
              help="Only work out the cache plan and write it to GITHUB_OUTPUT: "
                   "cache-key, cache-restore-prefix, index-path, save-cache, base-sha, run, "
                   "needs-index.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output, warnings only.")
def action_command(repo: str, db: Path | None, out_dir: Path | None, config: str,
                   model: str | None, embeddings: bool, backend: str,
                   onnx_cache: Path | None, top_k: int, comment: str,
                   fail_on: str, skip_drafts: bool, comment_when_empty: bool,
                   annotations: str, coverage_file: str, coverage_revision: str,
                   prepare_only: bool, quiet: bool) -> None:
    """Run inside GitHub Actions: review a PR, publish a fork's review, answer a slash
    command, or index a push.

    Reads the standard environment (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH,
    GITHUB_REPOSITORY, GITHUB_API_URL, GITHUB_SERVER_URL, GITHUB_OUTPUT,
    GITHUB_STEP_SUMMARY, RUNNER_TEMP) and the token from GITHUB_TOKEN. pull_request:
    review base..head, write the step summary, outputs (evidence-path, test-selection,
    run-everything, changed-symbols, comment-url), annotations on the diff and one sticky
    comment, updated in place. workflow_run (a completed pull_request run): post that
    run's review from its artifact on the one open PR the API gives for its head, for
    forks.
    issue_comment: /pr-context refresh | search QUERY | explain SYMBOL | help, for
    collaborators with write access. push, workflow_dispatch: build or update the index.
    Exits 0 (also when a fork's read-only token could not comment: a warning says so),
    1 when a fail-on condition holds or the GitHub API kept failing (files are still
    written), 2 for bad input.
    """
    from pr_context.action import ActionSettings, parse_fail_on, prepare, run_action
    from pr_context.action.annotations import annotation_lines
    from pr_context.action.events import ActionEnv
    from pr_context.action.outputs import write_outputs
    from pr_context.action.settings import AnnotationLevel

    env = ActionEnv.from_environ()
    settings = ActionSettings(
        repo=Path(repo), db=db or env.runner_temp / "pr-context" / "index.duckdb",
        out=out_dir or env.runner_temp / "pr-context" / "out", config=config,
        model=model or None, embeddings=embeddings, backend=backend,
        onnx_cache=_onnx_cache(onnx_cache), top_k=top_k,
        comment="off" if comment == "off" else "sticky", fail_on=parse_fail_on(fail_on),
        skip_drafts=skip_drafts, comment_when_empty=comment_when_empty,
        annotations=cast("AnnotationLevel", annotations),
        coverage_file=coverage_file.strip(), coverage_revision=coverage_revision.strip())
    if prepare_only:
        plan = prepare(settings, env)
        write_outputs(env.output, plan)
        click.echo(" ".join(f"{k}={v}" for k, v in plan.items()))
        return
    gc.disable()  # as for review_command: a review, then os._exit (run)
    record = run_action(settings, env, progress_for(sys.stderr, quiet))
    for line in annotation_lines(record.annotations, record.findings):
        click.echo(line)
    click.echo(f"pr-context action: {record.outcome or 'done'}")
    if record.exit_code:
        sys.exit(record.exit_code)


def main() -> None:
    cli(prog_name="pr-context")


def run() -> None:
    """The console entry point: ``main``, then an exit without the interpreter's teardown.

    Unloading torch and sentence-transformers at exit takes over a second (1.2 s
    measured on 2 cores) and does nothing useful: every index file is closed and every
    output written by the time a command returns. Errors that escape ``main`` leave the
    usual way, with their traceback.
    """
    try:
        main()
        code = 0
    except SystemExit as done:  # click ends every command with one
        code = _exit_code(done.code)
    for stream in (sys.stdout, sys.stderr):
        # A reader that went away, or a stream already closed: nothing left to say.
        with contextlib.suppress(BrokenPipeError, ValueError):
            stream.flush()
    os._exit(code)


def _exit_code(code: object) -> int:
    """What the interpreter makes of ``sys.exit(code)``: a message is printed, exit 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1
