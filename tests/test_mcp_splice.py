"""The MCP server's overlaid corpus, spliced in memory, equals a fresh index's.

On real git repositories: the working tree is edited (files modified, added, deleted,
docs and messages changed), the server's overlaid corpus is taken, then the same
content is committed and indexed from scratch into another file. Every field and
search structure of the two corpora, and the tools' answers, must be equal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import astuple
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pr_context.git import open_repository
from pr_context.index.build import IndexOptions, build_index
from pr_context.index.store import IndexStore
from pr_context.mcp.bounds import Deadline
from pr_context.progress import SilentProgress
from pr_context.retrieve.corpus import SearchCorpus, load_corpus
from tests.conftest import GitRepo
from tests.fakes import FakeEmbedder
from tests.mcp_client import Served, items, serve

CORE = '''"""Configuration parsing."""

MISSING = "missing key {} in section {}"


def parse_config(text):
    """Parse a config text into a dict of key=value pairs."""
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def require(config, key, section):
    if key not in config:
        raise KeyError(MISSING.format(key, section))
    return config[key]
'''
UTIL = '''from pkg.core import MISSING, parse_config


def load_settings(path):
    """Read the settings file at path."""
    with open(path) as handle:
        return parse_config(handle.read())


def explain(key):
    return MISSING.format(key, "settings")
'''
OLD = '''def obsolete_helper(value):
    """Scale a legacy value by the retired factor."""
    return value * 3
'''
GUIDE = '''Guide
=====

Call ``parse_config`` to read a configuration text.

.. function:: load_settings(path)

   Read the settings file and parse its key value pairs.
'''
FILES = {"pkg/__init__.py": "", "pkg/core.py": CORE, "pkg/util.py": UTIL,
         "pkg/old.py": OLD, "tests/test_core.py":
         "from pkg.core import parse_config\n\n\ndef test_parse():\n"
         "    assert parse_config('a=1') == {'a': '1'}\n",
         "docs/guide.rst": GUIDE, "docs/other.rst": "Other\n=====\n\nSee ``explain``.\n"}
NEW = '''from pkg.util import load_settings

TIMEOUT = "request timed out after {} seconds"


def fetch_remote(url, seconds):
    """Download the remote configuration with a timeout."""
    settings = load_settings(url)
    if not settings:
        raise TimeoutError(TIMEOUT.format(seconds))
    return settings
'''
QUERIES = ("parse the configuration text", "request timed out after 5 seconds",
           "fetch_remote", "read the settings file", "MISSING key in section",
           "legacy value retired factor")


def _edit(repo: GitRepo, docs: bool, files: bool = True) -> None:
    """Contents edited; with ``files``, a file added and one deleted; with ``docs``,
    the docs edited too."""
    repo.write("pkg/core.py", CORE.replace("parse_config", "read_config").replace(
        "missing key", "absent key") + "\n\ndef scale(value):\n    return value * 2\n")
    repo.write("pkg/util.py", UTIL.replace("parse_config", "read_config"))
    if files:
        repo.write("pkg/remote.py", NEW)  # untracked
        repo.remove("pkg/old.py")
    if docs:
        repo.write("docs/guide.rst", GUIDE.replace("parse_config", "read_config")
                   + "\nUse ``fetch_remote`` for remote files.\n")


def _fresh(repo: GitRepo, embedder: FakeEmbedder, db: Path) -> SearchCorpus:
    """The working tree committed and indexed from scratch into ``db``."""
    head = repo.commit("the working tree")
    build_index(open_repository(repo.path), head, db, IndexOptions(), embedder,
                SilentProgress())
    with IndexStore.open_existing(db) as store:
        return load_corpus(store)


def _overlaid(served: Served) -> SearchCorpus:
    workspace = served.workspace
    with workspace.lock:
        try:
            view = workspace.view(Deadline(60))
            assert view.overlay.overlaid and not view.stale
            corpus = view.corpus
            corpus.prepare()
            return corpus
        finally:
            workspace.release()


def _fields(corpus: SearchCorpus) -> dict[str, Any]:
    """Every field and search structure of ``corpus`` as plain, comparable values."""
    bm25 = corpus.bm25
    messages = corpus.messages
    return {
        "chunks": [astuple(c) for c in corpus.chunks], "texts": corpus.texts,
        "vectors": None if corpus.vectors is None else corpus.vectors.tolist(),
        "definitions": {k: [astuple(d) for d in v]
                        for k, v in corpus.definitions_by_name.items()},
        "imports": list(corpus.imports_by_path.items()),
        "modules": list(corpus.module_of_path.items()),
        "terms": [c.to_pylist() for c in corpus.chunk_terms],
        "uses": list(corpus.chunks_using.items()),
        "by_symbol": list(corpus.chunk_by_symbol.items()),
        "message_rows": corpus.message_rows, "anchor_rows": corpus.anchor_rows,
        "idf": list(bm25.idf.items()), "avgdl": bm25.avgdl,
        "doc_len": bm25.doc_len.tolist(),
        "postings": {t: [a.tolist() for a in bm25.postings[t]] for t in bm25.idf},
        "name_words": list(corpus.name_words.items()),
        "symbols_by_word": list(corpus.symbols_by_name_word.items()),
        "templates": [astuple(t) for t in messages._templates],
        "template_idf": messages._idf,
        "anchors": (corpus.anchors.names, corpus.anchors._lengths.tolist(),
                    corpus.anchors._idf),
        "role_markers": corpus.role_markers, "stubs": corpus.stub_paths,
        "top_modules": corpus.top_modules,
    }


@pytest.mark.parametrize(("docs", "files"), [(False, False), (False, True), (True, True)],
                         ids=["contents-only", "code-files", "code-and-docs"])
def test_the_overlaid_corpus_equals_a_fresh_index_of_the_working_tree(
        make_repo: Callable[..., GitRepo], tmp_path: Path, docs: bool, files: bool) -> None:
    embedder = FakeEmbedder()
    served = serve(make_repo(FILES), embedder=embedder)
    served.structured("search_code", query="parse the configuration")  # the clean corpus
    _edit(served.repo, docs, files)
    overlaid = _fields(_overlaid(served))
    fresh = _fields(_fresh(served.repo, embedder, tmp_path / "fresh.duckdb"))
    assert overlaid.keys() == fresh.keys()
    for name, value in fresh.items():
        assert overlaid[name] == value, name


def test_overlay_answers_equal_a_fresh_index_of_the_same_content(
        make_repo: Callable[..., GitRepo]) -> None:
    """Search and callers through the tools: the overlay of the edits, then the same
    content committed (so the index is updated to it), answer alike but for revision."""
    served = serve(make_repo(FILES), embedder=FakeEmbedder())
    served.structured("search_code", query="warm up")
    _edit(served.repo, docs=True)
    calls = [("search_code", {"query": q}) for q in QUERIES] + [
        ("find_callers", {"symbol": "pkg.util.load_settings"}),
        ("find_docs", {"symbol": "pkg.remote.fetch_remote"})]
    overlaid = [_answer(r.structured_content) for r in served.calls(calls)]
    assert any(i["revision"] == "WORKTREE" for answer in overlaid for i in answer)
    served.repo.commit("the working tree")
    fresh = [_answer(r.structured_content) for r in served.calls(calls)]
    assert overlaid == [[{**i, "revision": "WORKTREE"} if i["path"] in _EDITED else i
                         for i in answer] for answer in fresh]


_EDITED = frozenset({"pkg/core.py", "pkg/util.py", "pkg/remote.py", "docs/guide.rst"})


def _answer(content: dict[str, Any] | None) -> list[dict[str, Any]]:
    assert content is not None
    return [{k: v for k, v in item.items() if k != "reason"} | {
        "reason": item["reason"].replace("; from the working tree", "")}
        for item in items(content)]


def test_an_overlay_reuses_the_loaded_corpus_of_the_commit(
        make_repo: Callable[..., GitRepo]) -> None:
    served = serve(make_repo(FILES), embedder=FakeEmbedder())
    served.structured("search_code", query="parse the configuration")
    clean = served.workspace._clean.view.corpus
    served.repo.write("pkg/remote.py", NEW)
    overlaid = _overlaid(served)
    assert served.workspace._clean.view.corpus is clean  # not loaded again
    assert overlaid.anchors is clean.anchors  # no docs changed: the anchor index kept
    assert len(overlaid.chunks) > len(clean.chunks)


def _model_fields(model: Any) -> dict[str, Any]:
    postings = model.postings
    return {"idf": list(model.idf.items()), "avgdl": model.avgdl,
            "doc_len": model.doc_len.tolist(),
            "postings": {t: [a.tolist() for a in postings[t]] for t in model.idf},
            "terms": sorted(postings)}


@pytest.mark.parametrize("seed", range(12))
def test_a_merged_bm25_model_equals_the_model_of_the_spliced_chunks(seed: int) -> None:
    """Chunks left out, kept and put in at random places, terms shared, new and gone."""
    import random

    import pyarrow as pa

    from pr_context.retrieve.lexical import chunk_terms, lexical_model, merged_model

    rng = random.Random(seed)
    words = [f"w{n}" for n in range(40)]

    def chunk() -> tuple[list[str], list[int]]:
        return chunk_terms(" ".join(rng.choice(words) for _ in range(rng.randint(0, 12))))

    def model(chunks: list[tuple[list[str], list[int]]]) -> Any:
        return lexical_model(pa.array([c[0] for c in chunks], pa.list_(pa.string())),
                             pa.array([c[1] for c in chunks], pa.list_(pa.int32())))

    base = [chunk() for _ in range(rng.randint(1, 30))]
    part = [chunk() for _ in range(rng.randint(0, 8))]
    origin = [(False, i) for i in range(len(base)) if rng.random() > 0.3]
    for j in range(len(part)):
        origin.insert(rng.randint(0, len(origin)), (True, j))
    base_rows = np.full(len(base), -1, np.int64)
    part_rows = np.zeros(len(part), np.int64)
    for at, (from_part, i) in enumerate(origin):
        (part_rows if from_part else base_rows)[i] = at
    spliced = [(part if from_part else base)[i] for from_part, i in origin]
    assert _model_fields(merged_model(model(base), base_rows, model(part), part_rows)) == (
        _model_fields(model(spliced)))


def test_an_undone_edit_returns_to_its_overlay_already_spliced(
        make_repo: Callable[..., GitRepo]) -> None:
    served = serve(make_repo(FILES), embedder=FakeEmbedder())
    served.repo.write("pkg/remote.py", NEW)
    first = _overlaid(served)
    served.repo.write("pkg/remote.py", NEW + "\n\ndef later():\n    return 1\n")
    second = _overlaid(served)
    assert second is not first and any(c.symbol == "pkg.remote.later" for c in second.chunks)
    served.repo.write("pkg/remote.py", NEW)  # undone: the first state again
    assert _overlaid(served) is first
