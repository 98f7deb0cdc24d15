"""The symbol graph stored in its index reads back as the graph a build makes."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from pr_context.git import open_repository
from pr_context.graph import SymbolGraph, build_graph, load_graph, store_graph
from pr_context.graph.tables import read_rows, read_tables
from pr_context.index.build import IndexOptions, build_index
from pr_context.index.store import GRAPH_TABLES, IndexStore
from pr_context.progress import LogProgress, SilentProgress
from tests import test_graph
from tests.conftest import GitRepo

FILE_SETS = {name: getattr(test_graph, name) for name in (
    "PY_FILES", "TYPED_FILES", "VALUE_FILES", "INFER_FILES", "GLOBAL_FILES", "TS_FILES",
    "GO_FILES", "JAVA_FILES", "RUST_FILES", "TYPE_USE_FILES", "DECLARED_FILES",
    "OTHER_VALUE_FILES", "RETURN_FILES", "MEMBER_FILES", "UNDECLARED_TS_FILES",
    "EXPRESSION_FILES", "HOMONYM_FILES", "PLUGIN_FIXTURE_FILES", "CLASS_FIXTURE_FILES",
    "ALIAS_FILES")}


def indexed(repo: GitRepo, db: Path, rev: str = "HEAD") -> None:
    build_index(open_repository(repo.path), rev, db, IndexOptions(), None, SilentProgress())


def graphs_of(db: Path) -> tuple[SymbolGraph, SymbolGraph]:
    """(what load_graph reads, what a build makes) of the index at ``db``."""
    with IndexStore.open_existing(db) as store:
        return load_graph(store), build_graph(read_tables(store))


def assert_same(loaded: SymbolGraph, built: SymbolGraph) -> None:
    assert loaded == built
    # what resolving remembered of return values, and every mapping's order, too
    assert loaded.tables.returned == built.tables.returned
    for name in ("variables", "attributes", "globals", "aliases", "members", "bases",
                 "returns"):
        assert list(getattr(loaded.tables, name)) == list(getattr(built.tables, name))
    for name in ("edges", "dynamic", "unbound", "names"):
        assert list(getattr(loaded, name)) == list(getattr(built, name))


def graph_rows(db: Path) -> dict[str, list[tuple[object, ...]]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
                for t in GRAPH_TABLES}


@pytest.mark.parametrize("name", sorted(FILE_SETS))
def test_the_stored_graph_is_the_built_graph(make_repo: Callable[..., GitRepo],
                                             tmp_path: Path, name: str) -> None:
    db = tmp_path / "index.duckdb"
    indexed(make_repo(FILE_SETS[name]), db)
    assert store_graph(db)
    assert not store_graph(db)  # current: kept
    assert any(graph_rows(db)["graph_sites"])
    assert_same(*graphs_of(db))


def test_return_values_remembered_in_a_recursion_are_kept(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    """What a recursion answered depends on the order of evaluation: it is read back as
    the build left it, not worked out again in another order."""
    db = tmp_path / "index.duckdb"
    indexed(make_repo({
        "pkg/a.py": "from pkg.b import Box, make_b\n\n\ndef make_a(n):\n"
                    "    if n:\n        return make_b(n - 1)\n    return Box()\n\n\n"
                    "def use():\n    make_a(1).open()\n",
        "pkg/b.py": "class Box:\n    def open(self):\n        return 1\n\n\n"
                    "def make_b(n):\n    from pkg.a import make_a\n    return make_a(n)\n\n\n"
                    "def use_b():\n    make_b(2).open()\n",
    }), db)
    store_graph(db)
    loaded, built = graphs_of(db)
    assert built.tables.returned
    assert_same(loaded, built)


def test_an_update_drops_the_graph_and_storing_again_equals_a_full_build(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(test_graph.PY_FILES)
    db, full = tmp_path / "index.duckdb", tmp_path / "full.duckdb"
    indexed(repo, db)
    store_graph(db)
    repo.write("app/extra.py", "from app.models import User\n\n\ndef f():\n"
                               "    return User().save()\n")
    repo.commit("more")
    indexed(repo, db)
    assert not any(graph_rows(db).values())
    assert_same(*graphs_of(db))  # built, as nothing is stored
    indexed(repo, full)
    assert store_graph(db) and store_graph(full)
    assert graph_rows(db) == graph_rows(full)


def test_an_index_update_that_changes_nothing_keeps_the_graph(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(test_graph.PY_FILES)
    db = tmp_path / "index.duckdb"
    indexed(repo, db)
    store_graph(db)
    indexed(repo, db)
    assert not store_graph(db)


def test_storing_the_graph_is_a_progress_stage_and_keeping_it_is_silent(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    db = tmp_path / "index.duckdb"
    indexed(make_repo(test_graph.PY_FILES), db)
    with IndexStore.open_existing(db) as store:
        sites = len(read_tables(store).sites)
    log = io.StringIO()
    assert store_graph(db, LogProgress(log))
    lines = log.getvalue().splitlines()
    assert lines[0] == f"pr-context: resolving call sites: {sites} to do"
    assert re.fullmatch(rf"pr-context: resolving call sites: {sites} done in [0-9.]+s", lines[1])
    kept = io.StringIO()
    assert not store_graph(db, LogProgress(kept))
    assert kept.getvalue() == ""


def test_facts_made_from_other_content_are_not_read(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    db = tmp_path / "index.duckdb"
    indexed(make_repo(test_graph.PY_FILES), db)
    store_graph(db)
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE graph_sites SET reason = 'forged'")
        con.execute("UPDATE graph_marks SET inputs = 'another index'")
    loaded, built = graphs_of(db)
    assert_same(loaded, built)
    assert store_graph(db)  # made again
    assert_same(*graphs_of(db))


def test_rows_read_over_another_index_are_the_rows_read_whole(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    """A head index's graph rows read over its base's (only files whose digest differs)."""
    repo = make_repo({**test_graph.PY_FILES, **test_graph.TS_FILES})
    base_db, head_db = tmp_path / "base.duckdb", tmp_path / "head.duckdb"
    indexed(repo, base_db)
    paths = sorted(test_graph.PY_FILES)
    repo.write(paths[0], test_graph.PY_FILES[paths[0]] + "\n\ndef more():\n    return 1\n")
    repo.remove(paths[1])
    repo.rename(paths[2], "moved/" + paths[2])
    repo.write("app/new.py", "from app.models import User\n\n\ndef f():\n"
                             "    return User().save()\n")
    repo.commit("change")
    indexed(repo, head_db)
    with IndexStore.open_existing(base_db) as store:
        base = read_rows(store)
    with IndexStore.open_existing(head_db) as store:
        whole, over = read_rows(store), read_rows(store, over=base)
    assert over == whole
    assert over.tables() == whole.tables()
