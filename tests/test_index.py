"""Building and updating the index against real git repositories and real DuckDB files."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from pr_context.cli import cli
from pr_context.embed import Embedder, Embeddings
from pr_context.errors import EmbeddingError, IndexFileError, UnknownRevisionError
from pr_context.git import open_repository
from pr_context.index import parsing
from pr_context.index.build import IndexOptions, IndexResult, build_index, start_index
from pr_context.index.schema import ARROW_TYPES, MIGRATIONS
from pr_context.index.store import DATA_TABLES, IndexStore
from pr_context.progress import SilentProgress
from tests.conftest import GitRepo
from tests.fakes import FakeEmbedder

PY_MODULE = '''"""Client helpers."""
import os
from .util import retry


class Client:
    """Talks to the server."""

    timeout = 10

    def get(self, url: str) -> str:
        return retry(lambda: self._fetch(url))

    def _fetch(self, url):
        return os.path.join(url, "x")


def connect(host: str, port: int = 80) -> Client:
    return Client()
'''

UTIL = '''def retry(fn, attempts=3):
    for _ in range(attempts):
        return fn()
'''

README = '''# Demo

Use `connect()` to get a `Client`.

## API

::: pkg.client.connect
'''

STARTER = {
    "pkg/__init__.py": "",
    "pkg/client.py": PY_MODULE,
    "pkg/util.py": UTIL,
    "tests/test_client.py": "from pkg.client import connect\n\n\ndef test_connect():\n"
                            "    assert connect('h')\n",
    "README.md": README,
    "web/app.ts": "export function add(a: number, b: number): number {\n  return a + b;\n}\n",
}


def index(repo: GitRepo, db: Path, rev: str = "HEAD", embedder: Embedder | None = None,
          options: IndexOptions | None = None) -> tuple[IndexResult, SilentProgress]:
    progress = SilentProgress()
    result = build_index(open_repository(repo.path), rev, db, options or IndexOptions(),
                         embedder, progress)
    return result, progress


def table_dump(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every data row, ordered, for row-for-row comparisons."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        dump = {t: con.execute(f"SELECT * FROM {t} ORDER BY {o}").fetchall()
                for t, o in {**DATA_TABLES, "cochange": "path_a, path_b"}.items()}
        tables = {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables")
                  .fetchall()}
        dump["embeddings"] = con.execute(
            "SELECT text_hash, tokens, truncated FROM embeddings ORDER BY text_hash"
        ).fetchall() if "embeddings" in tables else []
        return dump
    finally:
        con.close()


def test_full_build_records_files_chunks_symbols(make_repo: Callable[..., GitRepo],
                                                 tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    db = tmp_path / "index.duckdb"
    result, _ = index(repo, db, embedder=FakeEmbedder())
    assert not result.incremental
    assert result.files == 6 and result.skipped == 0
    assert result.embedded == result.chunks > 0
    con = duckdb.connect(str(db), read_only=True)
    roles = dict(con.execute("SELECT path, role FROM files").fetchall())
    assert roles["tests/test_client.py"] == "test"
    assert roles["pkg/client.py"] == "production"
    assert roles["README.md"] == "docs"
    names = {q for (q,) in con.execute("SELECT qualified_name FROM definitions").fetchall()}
    assert {"pkg.client.Client", "pkg.client.Client.get", "pkg.client.connect",
            "pkg.util.retry"} <= names
    directive = con.execute(
        "SELECT name FROM refs WHERE path = 'README.md' AND kind = 'directive'").fetchall()
    assert directive == [("pkg.client.connect",)]
    con.close()


def test_update_reparses_and_reembeds_only_what_changed(make_repo: Callable[..., GitRepo],
                                                        tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    db = tmp_path / "index.duckdb"
    before, _ = index(repo, db, embedder=FakeEmbedder())
    repo.write("pkg/util.py", UTIL + "\n\ndef backoff(n):\n    return 2 ** n\n")
    repo.commit("add backoff")
    embedder = FakeEmbedder()
    result, _ = index(repo, db, embedder=embedder)
    assert result.incremental
    assert result.changes["parsed"] == 1 and result.changes["modified"] == 1
    assert embedder.embedded_texts and all("pkg/util.py" in t for t in embedder.embedded_texts)
    fresh, _ = index(repo, tmp_path / "fresh.duckdb", embedder=FakeEmbedder())
    assert result.digest == fresh.digest != before.digest
    assert table_dump(db) == table_dump(tmp_path / "fresh.duckdb")


def test_update_handles_delete_and_rename(make_repo: Callable[..., GitRepo],
                                          tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    db = tmp_path / "index.duckdb"
    index(repo, db)
    repo.remove("web/app.ts")
    repo.rename("pkg/util.py", "pkg/helpers.py")
    repo.commit("move things")
    result, _ = index(repo, db)
    assert result.changes["deleted"] == 1 and result.changes["renamed"] == 1
    paths = {row[0] for row in table_dump(db)["files"]}
    assert "web/app.ts" not in paths and "pkg/util.py" not in paths
    assert "pkg/helpers.py" in paths
    defs = table_dump(db)["definitions"]
    assert not [d for d in defs if d[0] == "pkg/util.py"]
    assert ("pkg.helpers.retry" in {d[3] for d in defs})
    fresh, _ = index(repo, tmp_path / "fresh.duckdb")
    assert result.digest == fresh.digest


def test_going_back_to_an_older_revision_matches_its_full_build(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    first = repo.git("rev-parse", "HEAD").strip()
    repo.write("pkg/new.py", "def new():\n    pass\n")
    repo.commit()
    db = tmp_path / "index.duckdb"
    index(repo, db)
    back, _ = index(repo, db, rev=first)
    fresh, _ = index(repo, tmp_path / "fresh.duckdb", rev=first)
    assert back.revision == first and back.digest == fresh.digest


class _ThreadRecordingEmbedder(FakeEmbedder):
    """FakeEmbedder that records the thread each batch ran in."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[str] = []

    def embed(self, texts: Sequence[str], threads: int | None = None) -> Embeddings:
        self.threads.append(f"{threading.current_thread().name}/{threads}")
        return super().embed(texts, threads)


def _indexed_then_a_module_added(make_repo: Callable[..., GitRepo],
                                 tmp_path: Path) -> tuple[GitRepo, Path, str]:
    """A repository indexed with vectors, its index, and the commit adding a module."""
    repo = make_repo(STARTER)
    db = tmp_path / "index.duckdb"
    index(repo, db, embedder=FakeEmbedder())
    repo.write("pkg/new.py", "def brand_new(x):\n    return x * 2\n")
    return repo, db, repo.commit("add a module")


def _update_with_vectors_later(repo: GitRepo, db: Path,
                               embedder: Embedder | None) -> IndexResult:
    """start_index's result, once its vectors are stored."""
    with start_index(open_repository(repo.path), "HEAD", db, IndexOptions(), embedder,
                     SilentProgress()) as build:
        return build.finish()


def test_vectors_computed_in_a_worker_give_the_index_a_build_gives(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    db, twin = tmp_path / "index.duckdb", tmp_path / "twin.duckdb"
    index(repo, db, embedder=FakeEmbedder())
    index(repo, twin, embedder=FakeEmbedder())
    repo.write("pkg/util.py", UTIL + "\n\ndef backoff(n):\n    return 2 ** n\n")
    repo.write("pkg/new.py", "def brand_new(x):\n    return x * 2\n")
    repo.commit("add backoff and a module")
    embedder = _ThreadRecordingEmbedder()
    later = _update_with_vectors_later(repo, db, embedder)
    built, _ = index(repo, twin, embedder=FakeEmbedder())
    # one model thread: the caller's own work has the other core meanwhile
    assert embedder.threads and all(t.endswith("/1") for t in embedder.threads)
    assert later.embedded == built.embedded > 0 and later.reused == built.reused
    assert later.digest == built.digest and later.truncated == built.truncated
    assert table_dump(db) == table_dump(twin)
    query = "SELECT text_hash, vector FROM embeddings ORDER BY text_hash"
    with IndexStore.open_existing(db) as store, IndexStore.open_existing(twin) as other:
        assert store.query(query) == other.query(query)
        assert store.manifest == dataclasses.replace(
            other.manifest, build_id=store.manifest.build_id,
            built_at=store.manifest.built_at)


class _LoadRecordingEmbedder(_ThreadRecordingEmbedder):
    """Records its loads beside its batches; ``broken``: the model cannot be loaded."""

    def __init__(self, broken: bool = False) -> None:
        super().__init__()
        self.broken = broken

    def load(self) -> None:
        self.threads.append(f"load in {threading.current_thread().name}")
        self._loaded()

    def embed(self, texts: Sequence[str], threads: int | None = None) -> Embeddings:
        self._loaded()  # as a real embedder loads its model on first use
        return super().embed(texts, threads)

    def _loaded(self) -> None:
        if self.broken:
            raise EmbeddingError("cannot load embedding model 'fake': broken")


def test_the_worker_loads_the_model_before_the_texts_reach_it(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo, db, _ = _indexed_then_a_module_added(make_repo, tmp_path)
    embedder = _LoadRecordingEmbedder()
    assert _update_with_vectors_later(repo, db, embedder).embedded > 0
    first, *_ = embedder.threads
    assert first.startswith("load in index-vectors")


class _FirstBatchEmbedder(FakeEmbedder):
    """Tells when the worker thread takes its first texts."""

    def __init__(self) -> None:
        super().__init__()
        self.first_batch = threading.Event()

    def embed(self, texts: Sequence[str], threads: int | None = None) -> Embeddings:
        if threading.current_thread() is not threading.main_thread():
            self.first_batch.set()
        return super().embed(texts, threads)


def test_the_worker_embeds_a_files_texts_while_the_next_files_are_parsed(
        make_repo: Callable[..., GitRepo], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(STARTER)
    db = tmp_path / "index.duckdb"
    index(repo, db, embedder=FakeEmbedder())
    repo.write("pkg/aa_first.py", "def first(x):\n    return x + 1\n")
    repo.write("pkg/zz_last.py", "def last(x):\n    return x - 1\n")
    repo.commit("add two modules")
    embedder = _FirstBatchEmbedder()
    parse_file = parsing.parse_file
    seen_while_parsing: list[bool] = []

    def parse_holding_the_last(path: str, *args: object) -> object:
        if path == "pkg/zz_last.py":  # parsed last: the first file's texts are out
            seen_while_parsing.append(embedder.first_batch.wait(timeout=10))
        return parse_file(path, *args)

    monkeypatch.setattr(parsing, "parse_file", parse_holding_the_last)
    result = _update_with_vectors_later(repo, db, embedder)
    assert seen_while_parsing == [True]
    assert result.embedded == len({h for call in embedder.calls for h in call}) > 0


def test_a_model_that_cannot_load_fails_the_build_when_its_vectors_are_waited_for(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo, db, _ = _indexed_then_a_module_added(make_repo, tmp_path)
    with pytest.raises(EmbeddingError, match="broken"):
        _update_with_vectors_later(repo, db, _LoadRecordingEmbedder(broken=True))


class _HeldWorkerEmbedder(_ThreadRecordingEmbedder):
    """Holds the worker thread's first batch until the waiting caller has embedded two."""

    def __init__(self) -> None:
        super().__init__()
        self.caller_embedded = threading.Event()

    def embed(self, texts: Sequence[str], threads: int | None = None) -> Embeddings:
        if threading.current_thread() is not threading.main_thread():
            assert self.caller_embedded.wait(timeout=60)
            return super().embed(texts, threads)
        found = super().embed(texts, threads)
        if sum(t.startswith("MainThread") for t in self.threads) == 2:
            self.caller_embedded.set()
        return found


def test_the_caller_embeds_the_texts_the_worker_has_not_begun(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    db, twin = tmp_path / "index.duckdb", tmp_path / "twin.duckdb"
    index(repo, db, embedder=FakeEmbedder())
    index(repo, twin, embedder=FakeEmbedder())
    repo.write("pkg/many.py", "".join(f"def f{i}(x):\n    return x + {i}\n\n\n"
                                      for i in range(30)))
    repo.commit("add many functions")
    embedder = _HeldWorkerEmbedder()
    later = _update_with_vectors_later(repo, db, embedder)
    built, _ = index(repo, twin, embedder=FakeEmbedder())
    places = [t.split("/")[0] for t in embedder.threads]
    assert places.count("MainThread") >= 2 and any(p != "MainThread" for p in places)
    assert len(embedder.embedded_texts) == len(set(embedder.embedded_texts)) == built.embedded
    assert later.digest == built.digest
    assert table_dump(db) == table_dump(twin)


def test_an_index_built_with_vectors_later_is_complete_but_for_them_until_finished(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo, db, head = _indexed_then_a_module_added(make_repo, tmp_path)
    with start_index(open_repository(repo.path), "HEAD", db, IndexOptions(), FakeEmbedder(),
                     SilentProgress()) as build:
        with IndexStore.open_existing(db) as store:  # readable meanwhile: rows, revision
            assert store.manifest is not None and store.manifest.revision == head
            missing = store.text_hashes() - store.embedded_hashes()
            assert missing and store.query(
                "SELECT count(*) FROM chunks WHERE path = 'pkg/new.py'")[0][0] > 0
        result = build.finish()
        assert build.finish() is result  # stored once
    with IndexStore.open_existing(db) as store:
        assert store.text_hashes() <= store.embedded_hashes()


def test_an_index_without_a_model_is_built_alike_with_vectors_later(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    db, twin = tmp_path / "index.duckdb", tmp_path / "twin.duckdb"
    index(repo, db)
    index(repo, twin)
    repo.write("pkg/new.py", "def brand_new(x):\n    return x * 2\n")
    repo.commit("add a module")
    later = _update_with_vectors_later(repo, db, None)
    built, _ = index(repo, twin)
    assert later.digest == built.digest and later.embedded == 0
    assert table_dump(db) == table_dump(twin)


def test_a_model_failing_in_the_worker_fails_the_finish(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo, db, _ = _indexed_then_a_module_added(make_repo, tmp_path)
    with pytest.raises(EmbeddingError, match="interrupted"):
        _update_with_vectors_later(repo, db, _InterruptedEmbedder(batches=0))


def test_same_revision_twice_is_a_noop_with_the_same_digest(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    db = tmp_path / "index.duckdb"
    first, _ = index(repo, db, embedder=FakeEmbedder())
    embedder = FakeEmbedder()
    second, _ = index(repo, db, embedder=embedder)
    assert second.digest == first.digest
    assert embedder.calls == [] and second.embedded == 0
    assert second.build_id != first.build_id


def test_no_embeddings_mode_is_recorded_and_loads_no_model(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    db = tmp_path / "index.duckdb"
    result, _ = index(repo, db, embedder=None)
    assert result.embedded == 0
    con = duckdb.connect(str(db), read_only=True)
    manifest = dict(con.execute("SELECT key, value FROM manifest").fetchall())
    assert manifest["embedding_model"] == "none"
    assert manifest["revision"] == result.revision
    con.close()


def test_switching_model_rebuilds_with_a_warning(make_repo: Callable[..., GitRepo],
                                                 tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    db = tmp_path / "index.duckdb"
    index(repo, db, embedder=None)
    result, progress = index(repo, db, embedder=FakeEmbedder())
    assert not result.incremental and result.embedded == result.chunks
    assert any("other settings" in w and "embedding_model" in w for w in progress.warnings)


def test_parser_change_rebuilds_but_keeps_vectors(make_repo: Callable[..., GitRepo],
                                                  tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    db = tmp_path / "index.duckdb"
    first, _ = index(repo, db, embedder=FakeEmbedder())
    con = duckdb.connect(str(db))
    con.execute("UPDATE manifest SET value = 'old' WHERE key = 'parser_version'")
    con.close()
    embedder = FakeEmbedder()
    result, progress = index(repo, db, embedder=embedder)
    assert any("parser_version" in w for w in progress.warnings)
    assert not result.incremental and embedder.calls == []
    assert result.digest == first.digest


def test_index_of_another_repository_is_rebuilt(make_repo: Callable[..., GitRepo],
                                                tmp_path: Path) -> None:
    other = make_repo({"other.py": "def other():\n    pass\n"})
    repo = make_repo(STARTER)
    db = tmp_path / "index.duckdb"
    index(other, db)
    result, progress = index(repo, db)
    assert not result.incremental
    assert any("not in this repository" in w for w in progress.warnings)
    fresh, _ = index(repo, tmp_path / "fresh.duckdb")
    assert result.digest == fresh.digest


def test_older_schema_is_rebuilt(make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    db = tmp_path / "index.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE schema_migrations (version INTEGER, name VARCHAR, "
                "applied_at TIMESTAMP)")
    con.execute("INSERT INTO schema_migrations VALUES (1, 'm001_old_layout', now())")
    con.execute("CREATE TABLE manifest (key VARCHAR, value VARCHAR)")
    con.execute("CREATE TABLE files (path VARCHAR)")
    con.close()
    result, progress = index(repo, db)
    assert any("another schema version" in w for w in progress.warnings)
    assert result.files == 6


def test_older_schema_keeps_vectors_of_the_same_model(make_repo: Callable[..., GitRepo],
                                                      tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    db = tmp_path / "index.duckdb"
    first, _ = index(repo, db, embedder=FakeEmbedder())
    con = duckdb.connect(str(db))
    con.execute("DELETE FROM schema_migrations WHERE name = 'm002_file_digests'")
    con.close()
    embedder = FakeEmbedder()
    result, progress = index(repo, db, embedder=embedder)
    assert any("another schema version" in w for w in progress.warnings)
    assert embedder.calls == [] and result.digest == first.digest


@pytest.mark.parametrize("damage", ["truncate", "garbage", "text"])
def test_corrupted_index_is_moved_aside_and_rebuilt(make_repo: Callable[..., GitRepo],
                                                    tmp_path: Path, damage: str) -> None:
    repo = make_repo(STARTER)
    db = tmp_path / "index.duckdb"
    first, _ = index(repo, db)
    data = db.read_bytes()
    if damage == "truncate":
        db.write_bytes(data[: len(data) // 3])
    elif damage == "garbage":
        db.write_bytes(data[:4096] + b"\xde\xad" * 50_000)
    else:
        db.write_text("this is not a database\n")
    result, progress = index(repo, db)
    assert result.digest == first.digest
    assert any("moved aside" in w for w in progress.warnings)
    assert len(list(tmp_path.glob("index.duckdb.corrupt-*"))) == 1


def test_an_index_another_process_holds_is_reported_and_left_alone(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    db = tmp_path / "index.duckdb"
    first, _ = index(repo, db)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys; con = duckdb.connect(sys.argv[1]); "
         "print('holding', flush=True); sys.stdin.read()", str(db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        with pytest.raises(IndexFileError, match="in use by another process"):
            index(repo, db)
    finally:
        holder.communicate("")
    assert not list(tmp_path.glob("index.duckdb.corrupt-*"))
    again, _ = index(repo, db)
    assert again.digest == first.digest


def test_an_unknown_revision_leaves_no_index_file(make_repo: Callable[..., GitRepo],
                                                  tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    with pytest.raises(UnknownRevisionError):
        index(repo, tmp_path / "index.duckdb", rev="no-such-branch")
    assert not list(tmp_path.glob("index.duckdb*"))


def test_every_column_of_the_schema_has_an_arrow_type() -> None:
    con = duckdb.connect(":memory:")
    for _, sql in MIGRATIONS:
        con.execute(sql)
    columns = {c for (c,) in con.execute(
        "SELECT column_name FROM information_schema.columns").fetchall()}
    con.close()
    assert columns <= set(ARROW_TYPES)


def test_bare_repository(make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    bare = tmp_path / "bare.git"
    repo.git("clone", "-q", "--bare", str(repo.path), str(bare))
    result = build_index(open_repository(bare), "main", tmp_path / "b.duckdb", IndexOptions(),
                         None, SilentProgress())
    fresh, _ = index(repo, tmp_path / "w.duckdb")
    assert result.digest == fresh.digest


def test_config_file_in_repository_sets_path_policy(make_repo: Callable[..., GitRepo],
                                                    tmp_path: Path) -> None:
    repo = make_repo({**STARTER, ".github/pr-context.yml": "index:\n  exclude: ['web/**']\n"})
    index(repo, tmp_path / "index.duckdb")
    files = {row[0]: row for row in table_dump(tmp_path / "index.duckdb")["files"]}
    assert files["web/app.ts"][5] == "skipped"
    assert "config" in files["web/app.ts"][6]


def test_an_update_reads_the_config_file_at_the_new_revision(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo({**STARTER, ".github/pr-context.yml": "index:\n  max_file_kb: 500\n"})
    db = tmp_path / "index.duckdb"
    index(repo, db)
    repo.write("pkg/extra.py", "def extra():\n    return 3\n")
    repo.commit("unrelated to the config")
    same_policy, progress = index(repo, db)
    assert same_policy.incremental and not progress.warnings
    repo.write(".github/pr-context.yml", "index:\n  exclude: ['web/**']\n")
    repo.commit("exclude web")
    rebuilt, progress = index(repo, db)
    fresh, _ = index(repo, tmp_path / "fresh.duckdb")
    assert not rebuilt.incremental and "other settings" in " ".join(progress.warnings)
    assert rebuilt.digest == fresh.digest
    files = {row[0]: row for row in table_dump(db)["files"]}
    assert files["web/app.ts"][5] == "skipped"


def test_secrets_never_reach_chunk_text(make_repo: Callable[..., GitRepo],
                                        tmp_path: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    repo = make_repo({"settings.py": f'GITHUB_TOKEN = "{token}"\n',
                      "deploy.yml": f"password: hunter2hunter2\ntoken: {token}\n"})
    db = tmp_path / "index.duckdb"
    index(repo, db)
    con = duckdb.connect(str(db), read_only=True)
    texts = " ".join(t for (t,) in con.execute("SELECT text FROM chunks").fetchall())
    con.close()
    assert token not in texts and "hunter2hunter2" not in texts
    assert "REDACTED" in texts


# -- bad input ---------------------------------------------------------------------


def test_bad_files_are_indexed_or_skipped_with_a_reason(make_repo: Callable[..., GitRepo],
                                                        tmp_path: Path) -> None:
    minified = "var a=1;" * (5 * 1024 * 1024 // 8)
    repo = make_repo({
        "latin1.py": "def caf\xe9():\n    return 1\n".encode("latin-1"),
        "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4,
        "data.bin.py": b"\x00\x01\x02def f(): pass\x00",
        "static/app.min.js": minified,
        "static/bundle.js": minified,
        "broken.py": "def good():\n    return 1\n\ndef bad(:\n    pass\n\n"
                     "class Fine:\n    def m(self):\n        return 2\n",
        "lfs.bin.py": "version https://git-lfs.github.com/spec/v1\noid sha256:"
                      + "a" * 64 + "\nsize 12345\n",
    })
    (repo.path / "link.py").symlink_to("broken.py")
    repo.git("add", "-A")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},vendor-sub")
    repo.git("commit", "-q", "-m", "bad inputs")
    db = tmp_path / "index.duckdb"
    result, _ = index(repo, db)
    files = {row[0]: row for row in table_dump(db)["files"]}
    status = {p: (row[5], row[6]) for p, row in files.items()}
    assert status["latin1.py"][0] == "indexed" and files["latin1.py"][8] is True
    assert status["logo.png"][0] == "skipped"
    assert status["data.bin.py"] == ("skipped", "binary")
    assert status["static/app.min.js"][0] == "skipped"
    assert status["static/bundle.js"][0] == "skipped"
    assert status["link.py"] == ("skipped", "symlink (not followed)")
    assert status["vendor-sub"] == ("skipped", "submodule (not indexed)")
    assert status["lfs.bin.py"] == ("skipped", "git-lfs pointer")
    assert status["broken.py"][0] == "indexed" and files["broken.py"][7] > 0
    defs = {d[3] for d in table_dump(db)["definitions"] if d[0] == "broken.py"}
    assert {"broken.good", "broken.Fine", "broken.Fine.m"} <= defs
    assert result.files == 2


def run_cli(*args: str) -> tuple[int, str, str]:
    runner = CliRunner()
    outcome = runner.invoke(cli, list(args))
    return outcome.exit_code, outcome.stdout, outcome.stderr


def test_cli_json_contract(make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    code, out, _ = run_cli("index", "--repo", str(repo.path), "--rev", "HEAD",
                           "--db", str(tmp_path / "i.duckdb"), "--json", "--no-embeddings")
    assert code == 0
    data = json.loads(out)
    for key in ("revision", "files", "chunks", "definitions", "references", "embedded",
                "reused", "incremental", "seconds", "digest"):
        assert key in data
    assert len(data["revision"]) == 40 and data["incremental"] is False


def test_the_console_entry_point_flushes_its_output_and_keeps_the_exit_code(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    # `python -m pr_context` runs what the `pr-context` script runs: `run`, which leaves
    # through os._exit, so nothing may be lost between the last write and the exit.
    repo = make_repo(STARTER)

    def console(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pr_context", *args], capture_output=True,
                              text=True, check=False, cwd=tmp_path)

    done = console("index", "--repo", str(repo.path), "--db", str(tmp_path / "i.duckdb"),
                   "--json", "--no-embeddings")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files"] == len(STARTER)
    failed = console("index", "--repo", str(tmp_path / "missing"), "--db",
                     str(tmp_path / "j.duckdb"))
    assert failed.returncode == 2
    assert failed.stderr.strip().endswith("(no such directory)")
    with open(Path(__file__).resolve().parents[1] / "pyproject.toml", "rb") as config:
        scripts = tomllib.load(config)["project"]["scripts"]
    assert scripts == {"pr-context": "pr_context.cli:run"}


@pytest.mark.parametrize(
    ("setup", "rev", "message"),
    [
        ("repo", "no-such-branch", "unknown revision: no-such-branch"),
        ("empty", "HEAD", "no commits yet"),
        ("plain-dir", "HEAD", "not a git repository"),
        ("missing", "HEAD", "not a git repository"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(make_repo: Callable[..., GitRepo],
                                             tmp_path: Path, setup: str, rev: str,
                                             message: str) -> None:
    if setup == "repo":
        path = make_repo(STARTER).path
    elif setup == "empty":
        path = make_repo().path
    elif setup == "plain-dir":
        path = tmp_path / "plain"
        path.mkdir()
    else:
        path = tmp_path / "missing"
    code, out, err = run_cli("index", "--repo", str(path), "--rev", rev,
                             "--db", str(tmp_path / "i.duckdb"), "--no-embeddings")
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert out == ""


def test_cli_invalid_config_exits_2(make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo({**STARTER, ".github/pr-context.yml": "index:\n  exclude: 42\n"})
    code, _, err = run_cli("index", "--repo", str(repo.path), "--db",
                           str(tmp_path / "i.duckdb"), "--no-embeddings")
    assert code == 2 and "exclude" in err


def test_methods_of_a_deprecated_class_are_deprecated(make_repo: Callable[..., GitRepo],
                                                      tmp_path: Path) -> None:
    source = ('import warnings\n\n\nclass OldMap:\n    """Use NewMap."""\n\n'
              '    def __init__(self):\n'
              '        warnings.warn("OldMap is deprecated", DeprecationWarning)\n\n'
              '    def get(self, key):\n        return key\n\n\n'
              'class NewMap:\n    def get(self, key):\n        return key\n')
    repo = make_repo({"maps.py": source})
    db = tmp_path / "index.duckdb"
    index(repo, db)
    con = duckdb.connect(str(db), read_only=True)
    roles = dict(con.execute("SELECT symbol, role FROM chunks WHERE symbol IS NOT NULL")
                 .fetchall())
    con.close()
    assert roles["maps.OldMap.get"] == "deprecated"
    assert roles["maps.NewMap.get"] == "production"


def test_parallel_parsing_builds_the_same_index(make_repo: Callable[..., GitRepo],
                                                tmp_path: Path) -> None:
    files = {f"pkg/mod{i}.py": f"def f{i}(x):\n    return g{i}(x) + {i}\n" for i in range(60)}
    repo = make_repo({**STARTER, **files})
    serial, _ = index(repo, tmp_path / "serial.duckdb", options=IndexOptions(parse_workers=1))
    parallel, _ = index(repo, tmp_path / "parallel.duckdb",
                        options=IndexOptions(parse_workers=2))
    assert parallel.files == serial.files == 66
    assert parallel.digest == serial.digest
    assert table_dump(tmp_path / "parallel.duckdb") == table_dump(tmp_path / "serial.duckdb")


def test_parallel_update_equals_a_serial_full_build(make_repo: Callable[..., GitRepo],
                                                    tmp_path: Path) -> None:
    files = {f"pkg/mod{i}.py": f"def f{i}(x):\n    return g{i}(x) + {i}\n" for i in range(80)}
    repo = make_repo({**STARTER, **files})
    db = tmp_path / "parallel.duckdb"
    index(repo, db, options=IndexOptions(parse_workers=2))
    for i in range(70):  # in workers again, and more than deleted by a list of paths
        repo.write(f"pkg/mod{i}.py", f"def h{i}(y):\n    return f{i}(y)\n")
    repo.remove("pkg/mod79.py")
    repo.commit("rewrite")
    updated, _ = index(repo, db, options=IndexOptions(parse_workers=2))
    fresh, _ = index(repo, tmp_path / "serial.duckdb", options=IndexOptions(parse_workers=1))
    assert updated.incremental
    assert updated.changes["parsed"] == 70 and updated.changes["removed"] == 71
    assert updated.digest == fresh.digest
    assert table_dump(db) == table_dump(tmp_path / "serial.duckdb")


class _InterruptedEmbedder(FakeEmbedder):
    """Stands for a build killed while embedding: fails after ``batches`` model calls."""

    def __init__(self, batches: int) -> None:
        super().__init__()
        self._batches = batches

    def embed(self, texts: Sequence[str], threads: int | None = None) -> Embeddings:
        if len(self.calls) >= self._batches:
            raise EmbeddingError("interrupted")
        return super().embed(texts, threads)


def test_a_build_interrupted_while_embedding_is_resumed(make_repo: Callable[..., GitRepo],
                                                        tmp_path: Path) -> None:
    # 300 distinct functions: more than one batch of vectors to commit.
    files = {f"pkg/mod{i}.py": "".join(f"def f{i}_{j}(x):\n    return x + {j}\n\n\n"
                                       for j in range(10)) for i in range(30)}
    repo = make_repo({**STARTER, **files})
    db = tmp_path / "index.duckdb"
    with pytest.raises(EmbeddingError):
        index(repo, db, embedder=_InterruptedEmbedder(batches=1))
    with pytest.raises(IndexFileError, match="not a complete"):
        IndexStore.open_existing(db)  # a first build: settings, but no revision
    resumed, _ = index(repo, db, embedder=FakeEmbedder())
    fresh, _ = index(repo, tmp_path / "fresh.duckdb", embedder=FakeEmbedder())
    assert 0 < resumed.embedded < fresh.embedded  # the first batch's vectors were kept
    assert resumed.digest == fresh.digest
    assert table_dump(db) == table_dump(tmp_path / "fresh.duckdb")


def test_an_update_interrupted_while_embedding_is_resumed(make_repo: Callable[..., GitRepo],
                                                          tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    db = tmp_path / "index.duckdb"
    previous, _ = index(repo, db, embedder=FakeEmbedder())
    repo.write("pkg/new.py", "def brand_new(x):\n    return x * 2\n")
    repo.commit("add a module")
    with pytest.raises(EmbeddingError):
        index(repo, db, embedder=_InterruptedEmbedder(batches=0))
    with IndexStore.open_existing(db) as store:  # the previous revision, whole
        assert store.manifest is not None and store.manifest.revision == previous.revision
    resumed, _ = index(repo, db, embedder=FakeEmbedder())
    fresh, _ = index(repo, tmp_path / "fresh.duckdb", embedder=FakeEmbedder())
    assert resumed.digest == fresh.digest
    assert table_dump(db) == table_dump(tmp_path / "fresh.duckdb")


def test_an_update_interrupted_after_writing_rows_is_completed_from_a_listing(
        make_repo: Callable[..., GitRepo], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Killed between the new rows and the new manifest, the file names no revision: the
    # next update must not diff from the old one (the reverted file would keep its edit).
    repo = make_repo(STARTER)
    db = tmp_path / "index.duckdb"
    index(repo, db)
    original = (repo.path / "pkg/util.py").read_text()
    repo.write("pkg/util.py", original + "\n\ndef edited():\n    return 1\n")
    repo.commit("edit")

    def killed(self: IndexStore, pairs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(IndexStore, "replace_cochange", killed)
    with pytest.raises(KeyboardInterrupt):
        index(repo, db)
    monkeypatch.undo()
    with pytest.raises(IndexFileError, match="not a complete"):
        IndexStore.open_existing(db)
    repo.write("pkg/util.py", original)
    repo.commit("revert")
    resumed, _ = index(repo, db)
    fresh, _ = index(repo, tmp_path / "fresh.duckdb")
    assert resumed.digest == fresh.digest
    assert table_dump(db) == table_dump(tmp_path / "fresh.duckdb")


def test_an_update_follows_files_turning_into_links_and_submodules(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo({**STARTER, "pkg/extra.py": "def extra():\n    return 3\n",
                      "vendor/lib.py": "def lib():\n    return 4\n"})
    db = tmp_path / "index.duckdb"
    index(repo, db)
    repo.remove("pkg/extra.py")
    (repo.path / "pkg/extra.py").symlink_to("util.py")
    repo.remove("vendor/lib.py")
    repo.git("add", "-A")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{'2' * 40},vendor")
    repo.git("commit", "-q", "-m", "link and submodule")
    updated, _ = index(repo, db)
    fresh, _ = index(repo, tmp_path / "fresh.duckdb")
    assert updated.changes == {"parsed": 2, "removed": 2, "type_changed": 1, "added": 1,
                               "deleted": 1}
    assert updated.incremental
    assert updated.digest == fresh.digest
    assert table_dump(db) == table_dump(tmp_path / "fresh.duckdb")
    status = {row[0]: row[6] for row in table_dump(db)["files"]}
    assert status["pkg/extra.py"] == "symlink (not followed)"
    assert status["vendor"] == "submodule (not indexed)"


def test_a_blob_missing_from_the_repository_is_a_clear_error(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo({"pkg/a.py": "def a():\n    return 1\n", "pkg/b.py": "B = 2\n"})
    blob = repo.git("rev-parse", "HEAD:pkg/a.py").strip()
    (repo.path / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # a damaged clone
    result = CliRunner().invoke(cli, ["index", "--repo", str(repo.path), "--db",
                                      str(tmp_path / "index.duckdb"), "--no-embeddings"])
    assert result.exit_code == 1, result.output
    assert "pkg/a.py" in result.output and "missing from the repository" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
