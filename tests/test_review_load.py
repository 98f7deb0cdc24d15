"""A review reads the head index over the base's: the same rows, graph and corpus as a
load of the head index alone."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pr_context.git import open_repository
from pr_context.index.build import IndexOptions, build_index
from pr_context.index.store import IndexStore
from pr_context.progress import SilentProgress
from pr_context.retrieve.corpus import load_corpus
from pr_context.review import _base_reads, _load_head, _Sources, load_side
from tests.conftest import GitRepo
from tests.fakes import FakeEmbedder
from tests.test_mcp_splice import FILES, _edit, _fields


@pytest.mark.parametrize(("docs", "files"), [(False, False), (True, True)],
                         ids=["contents-only", "files-and-docs"])
def test_the_head_read_over_the_base_equals_the_head_read_alone(
        make_repo: Callable[..., GitRepo], tmp_path: Path, docs: bool, files: bool) -> None:
    embedder, progress = FakeEmbedder(), SilentProgress()
    repo = make_repo(FILES)
    base_db, head_db = tmp_path / "base.duckdb", tmp_path / "head.duckdb"
    build_index(open_repository(repo.path), "HEAD", base_db, IndexOptions(), embedder,
                progress)
    _edit(repo, docs, files)
    repo.commit("edit")
    shutil.copyfile(base_db, head_db)  # updated from the base, as a review does
    build_index(open_repository(repo.path), "HEAD", head_db, IndexOptions(), embedder,
                progress)
    with _Sources(open_repository(repo.path)) as sources:
        over, manifest = _load_head(head_db, sources, _base_reads(base_db, True), True)
    with IndexStore.open_existing(head_db) as store:
        alone = load_corpus(store)
        alone_side = load_side(store)
        assert manifest == store.manifest
    assert over.corpus.manifest == alone.manifest
    fields, fresh = _fields(over.corpus), _fields(alone)
    assert fields.keys() == fresh.keys()
    for name, value in fresh.items():
        assert fields[name] == value, name
    assert over.graph == alone_side.graph  # its tables (sites, syntax uses) included
    assert over.spans == alone_side.spans
