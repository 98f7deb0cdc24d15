"""The DuckDB index file: one file reflects exactly one commit.

Only this module talks to DuckDB. Opening checks the file: a file that cannot be read as
an index (truncated, corrupted, not DuckDB) is moved aside and a new one started; a file
written by another schema, parser, model or path policy is emptied and rebuilt. Both
are reported through ``warn``; neither is ever half-used.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from pr_context.embed import TORCH_BACKEND
from pr_context.errors import IndexFileError, ShardError
from pr_context.index.schema import (
    ARROW_TYPES,
    MIGRATIONS,
    SCHEMA_VERSION,
    embeddings_table_sql,
)

__all__ = ["DATA_TABLES", "DERIVED_TABLES", "GRAPH_TABLES", "PATH_TABLES", "EarlyConnection",
           "IndexStore", "Manifest", "TableRows", "arrow_table"]

# Tables holding per-file rows, with the columns that order them deterministically.
DATA_TABLES: dict[str, str] = {
    "files": "path",
    "chunks": "path, ordinal",
    "definitions": "path, ordinal",
    "refs": "path, ordinal",
    "imports": "path, ordinal",
    "messages": "path, ordinal",
    "syntax_uses": "path, ordinal",
}
# Every table whose rows belong to one path: replaced path by path, and a merge of shards
# takes their union. ``embeddings`` is content-addressed (one row per text, any path).
PATH_TABLES = (*DATA_TABLES, "file_digests")
# Tables computed from the whole index (and the history) once its paths are in: a shard
# leaves them empty, and the build and the merge of shards both recompute them.
# The symbol graph (pr_context/graph/stored.py), stored by the graph stage: a build that
# replaces paths empties them, and nothing else here writes them.
GRAPH_TABLES = ("graph_marks", "graph_sites", "graph_bindings", "graph_returns", "graph_names",
                "graph_memo")
DERIVED_TABLES = ("cochange", *GRAPH_TABLES)

# DuckDB's buffer cache otherwise grows towards 80 % of RAM; the index's queries are
# scans and point lookups that need far less, and a CI runner shares its memory with the
# model. Larger work spills to disk instead of failing.
DUCKDB_MEMORY_LIMIT = "512MB"
_DUCKDB_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "memory_limit": DUCKDB_MEMORY_LIMIT}

_LISTED_PATHS = 64  # paths deleted by a list of constants; more go through a join
_LOCKED = re.compile(r"could not set lock|conflicting lock", re.IGNORECASE)

TableRows = dict[str, list[Any]]  # column name -> values, one table's new rows
_EMPTY_DIGEST = "{}:0:" + hashlib.md5(b"").hexdigest() + ";"


@dataclass(frozen=True)
class Manifest:
    """What an index file was built from and by. Settings fields decide reuse."""

    schema_version: int
    parser_version: str
    embedding_model: str  # "none" when built without embeddings
    path_policy: str  # JSON of the policy, for people and artifacts
    policy_fingerprint: str
    cochange_commits: int
    lexical_version: str  # of the stored BM25 terms (retrieve.lexical)
    # How the vectors were computed: "torch", or an exported model with its hash
    # ("onnx-int8:<hash>"); vectors of two backends are never mixed in one file.
    embedding_backend: str
    revision: str = ""
    build_id: str = ""
    built_at: str = ""
    embedding_dimension: int = 0  # known once the model has been loaded
    shard: str = ""  # "K/N" for shard K of a sharded build (index.shards); "" when whole

    def settings(self) -> tuple[object, ...]:
        """The fields that must match for an index to be reused."""
        return tuple(getattr(self, n) for n in _SETTINGS)

    def embedder(self) -> tuple[str, str]:
        """What made the vectors: the model and the backend that ran it."""
        return self.embedding_model, self.embedding_backend

    def describe_mismatch(self, other: Manifest) -> str:
        diffs = [f"{n} {getattr(self, n)!r} != {getattr(other, n)!r}"
                 for n in _SETTINGS if getattr(self, n) != getattr(other, n)]
        return ", ".join(diffs)


_SETTINGS = ("schema_version", "parser_version", "embedding_model", "embedding_backend",
             "policy_fingerprint", "cochange_commits", "lexical_version", "shard")


class EarlyConnection:
    """A connection to an existing index file, begun in a background thread.

    Much of DuckDB's start-up runs without the GIL, so the caller's own work (git calls)
    overlaps it. ``IndexStore.open`` takes the connection over, and its errors with it;
    leaving the context closes a connection never taken.
    """

    def __init__(self, path: Path) -> None:
        pool = ThreadPoolExecutor(1, thread_name_prefix="index-connect")
        self._connection = pool.submit(duckdb.connect, str(path), config=_DUCKDB_CONFIG)
        pool.shutdown(wait=False)  # the thread ends with the connect
        self._taken = False

    def __enter__(self) -> EarlyConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        # exception() waits for the connect: no thread outlives the build.
        if not self._taken and self._connection.exception() is None:
            self._connection.result().close()

    def take(self) -> duckdb.DuckDBPyConnection:
        """The connection, once made. :raises duckdb.Error: as ``duckdb.connect``."""
        self._taken = True
        return self._connection.result()


class IndexStore:
    """An open index file. Use ``IndexStore.open``; close it (or use ``with``)."""

    def __init__(self, path: Path, connection: duckdb.DuckDBPyConnection,
                 manifest: Manifest | None, has_vectors_table: bool | None = None) -> None:
        self.path = path
        self._con = connection
        self.manifest = manifest  # None for a new or reset file
        self._has_vectors_table = has_vectors_table  # None until asked, or created

    # -- opening -----------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, wanted: Manifest, warn: Callable[[str], None],
             early: EarlyConnection | None = None) -> IndexStore:
        """Open ``path`` for an index with ``wanted``'s settings, repairing what it must.

        ``early`` is a connection to ``path`` already begun, which this takes over.
        :raises IndexFileError: the file cannot be created, or another process holds it.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        con = _connect(path, warn, early)
        try:
            tables = _table_names(con)
            manifest = _read_manifest(con, tables)
        except duckdb.Error as exc:
            con.close()
            _move_aside(path, f"it cannot be read ({_first_line(exc)})", warn)
            con, manifest, tables = _connect(path, warn), None, set()
        if manifest is not None and manifest.shard and not wanted.shard:
            con.close()
            raise _lone_shard(path, manifest)
        if manifest is None and _has_data_tables(tables):
            keep = _reusable_vectors(con, wanted)
            tables = _reset(con, tables, path, "it was written by another schema version",
                            warn, keep_embeddings=keep)
        elif manifest is not None and manifest.settings() != wanted.settings():
            keep = manifest.embedder() == wanted.embedder()
            reason = f"it was built with other settings ({wanted.describe_mismatch(manifest)})"
            tables = _reset(con, tables, path, reason, warn, keep_embeddings=keep)
            manifest = None
        if not _has_data_tables(tables):
            _migrate(con, wanted)
        return cls(path, con, manifest, has_vectors_table="embeddings" in tables)

    @classmethod
    def open_existing(cls, path: Path, writable: bool = False) -> IndexStore:
        """Open a built index as it is: for searching (read-only unless ``writable``, for
        storing what is derived from it), never for repair.

        :raises IndexFileError: the file is missing, unreadable or not a complete index.
        """
        if not path.is_file():
            raise IndexFileError(f"no index at {path}: build it with `pr-context index`")
        try:
            con = duckdb.connect(str(path), read_only=not writable, config=_DUCKDB_CONFIG)
            manifest = _read_manifest(con, _table_names(con))
        except duckdb.Error as exc:
            raise IndexFileError(f"cannot read index {path}: {_first_line(exc)}") from exc
        if manifest is None or not manifest.revision:
            con.close()
            raise IndexFileError(f"{path} is not a complete pr-context index of this "
                                 "version: rebuild it with `pr-context index`")
        if manifest.shard:
            con.close()
            raise _lone_shard(path, manifest)
        return cls(path, con, manifest)

    @staticmethod
    def read_shard_manifest(path: Path) -> Manifest:
        """The manifest of a complete shard file (see ``index.shards``), for a merge.

        :raises ShardError: the file is missing, unreadable, not a shard or incomplete.
        """
        if not path.is_file():
            raise ShardError(f"no shard file at {path}")
        try:
            with duckdb.connect(str(path), read_only=True, config=_DUCKDB_CONFIG) as con:
                manifest = _read_manifest(con, _table_names(con))
        except duckdb.Error as exc:
            raise ShardError(f"shard file {path} cannot be read ({_first_line(exc)}): "
                             "build that shard again") from exc
        if manifest is None or not manifest.shard:
            raise ShardError(f"{path} is not a shard of this pr-context version: build it "
                             "with `pr-context index --shard K/N`")
        if not manifest.revision:
            raise ShardError(f"shard file {path} is incomplete (its build was interrupted): "
                             f"run `pr-context index --shard {manifest.shard}` again")
        return manifest

    @classmethod
    def overlaid(cls, path: Path, hidden: Iterable[str], rows: Mapping[str, pa.Table],
                 vectors: pa.Table | None = None,
                 manifest: Manifest | None = None) -> IndexStore:
        """The built index at ``path`` as it would be with ``hidden`` paths' rows left out
        and ``rows`` (per table, as ``Rows.tables``) added, in memory, read-only.

        Nothing is written to ``path``; the file is attached read-only until ``close``.
        ``vectors`` are embeddings rows (text_hash, tokens, truncated, vector) for texts
        the file has none for; ``manifest``, the file's own, when already read.

        :raises IndexFileError: as ``open_existing``.
        """
        manifest = manifest or cls._manifest_at(path)
        has_vectors = manifest.embedding_dimension > 0
        try:
            con = duckdb.connect(":memory:", config=_DUCKDB_CONFIG)
            con.execute(f"ATTACH '{_sql_text(str(path))}' AS base (READ_ONLY)")
            con.register("hidden_paths", pa.table({"path": sorted(set(hidden))},
                                                   schema=pa.schema([("path", pa.string())])))
            for table in PATH_TABLES:
                _overlay_view(con, table, "WHERE path NOT IN (SELECT path FROM hidden_paths)",
                              rows.get(table))
            for table in ("manifest", "schema_migrations", *DERIVED_TABLES):
                _overlay_view(con, table, "", None)
            if has_vectors:
                _overlay_view(con, "embeddings", "", vectors)
        except duckdb.Error as exc:
            raise IndexFileError(f"cannot read index {path}: {_first_line(exc)}") from exc
        return cls(path, con, manifest, has_vectors_table=has_vectors)

    @classmethod
    def _manifest_at(cls, path: Path) -> Manifest:
        """The manifest of the built index at ``path``.

        :raises IndexFileError: as ``open_existing``.
        """
        with cls.open_existing(path) as base:
            manifest = base.manifest
        assert manifest is not None
        return manifest

    @classmethod
    def of_rows(cls, path: Path, rows: Mapping[str, pa.Table],
                vectors: pa.Table | None = None, manifest: Manifest | None = None
                ) -> IndexStore:
        """``rows`` alone (per table, as ``Rows.tables``), read as an index, in memory:
        the built index at ``path`` lends its tables' columns and the vectors it holds
        for the texts of ``rows``' chunks, and no other row of it is read. ``vectors``,
        as for ``overlaid``.

        :raises IndexFileError: as ``open_existing``.
        """
        manifest = manifest or cls._manifest_at(path)
        has_vectors = manifest.embedding_dimension > 0
        chunks = rows.get("chunks")
        hashes = pa.table({"text_hash": chunks.column("text_hash") if chunks is not None
                           else pa.array([], pa.string())})
        try:
            con = duckdb.connect(":memory:", config=_DUCKDB_CONFIG)
            con.execute(f"ATTACH '{_sql_text(str(path))}' AS base (READ_ONLY)")
            for table in PATH_TABLES:
                _overlay_view(con, table, "WHERE false", rows.get(table))
            for table in ("manifest", "schema_migrations"):
                _overlay_view(con, table, "", None)
            for table in DERIVED_TABLES:
                _overlay_view(con, table, "WHERE false", None)
            if has_vectors:
                con.register("wanted_hashes", hashes)
                _overlay_view(con, "embeddings", "WHERE text_hash IN (SELECT text_hash FROM "
                              "wanted_hashes)", vectors)
        except duckdb.Error as exc:
            raise IndexFileError(f"cannot read index {path}: {_first_line(exc)}") from exc
        return cls(path, con, manifest, has_vectors_table=has_vectors)

    def __enter__(self) -> IndexStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._con.close()

    # -- reading -----------------------------------------------------------------

    def file_blobs(self) -> dict[str, str]:
        """path -> blob SHA for every file the index knows, indexed or skipped."""
        return dict(self._con.execute("SELECT path, blob_sha FROM files").fetchall())

    def counts(self) -> dict[str, int]:
        # Both statuses from one scan of files.
        row = self._con.execute(
            "SELECT count(*) FILTER (WHERE status = 'indexed'),"
            " count(*) FILTER (WHERE status = 'skipped'),"
            " (SELECT count(*) FROM chunks), (SELECT count(*) FROM definitions),"
            " (SELECT count(*) FROM refs), (SELECT count(*) FROM imports) FROM files"
        ).fetchall()[0]
        keys = ("files", "skipped", "chunks", "definitions", "references", "imports")
        return dict(zip(keys, (int(v) for v in row), strict=True))

    def text_hashes(self) -> set[str]:
        """Hashes of every chunk text in the index."""
        rows = self._con.execute("SELECT DISTINCT text_hash FROM chunks").fetchall()
        return {h for (h,) in rows}

    def embedded_hashes(self) -> set[str]:
        if not self._has_embeddings_table():
            return set()
        return {h for (h,) in self._con.execute("SELECT text_hash FROM embeddings").fetchall()}

    def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """Run a read-only SQL query (for retrieval and tests)."""
        try:
            return self._con.execute(sql, params).fetchall()
        except duckdb.Error as exc:
            raise IndexFileError(f"query on {self.path} failed: {exc}") from exc

    def read_arrow(self, sql: str) -> pa.Table:
        """Run a read-only SQL query and return its rows as an Arrow table (bulk reads)."""
        try:
            return self._con.sql(sql).to_arrow_table()
        except duckdb.Error as exc:
            raise IndexFileError(f"query on {self.path} failed: {exc}") from exc

    def path_rows(self, paths: Iterable[str]) -> dict[str, pa.Table]:
        """Every row of ``paths`` in each of ``PATH_TABLES``, per table (as
        ``Rows.tables``, for ``of_rows``)."""
        wanted = pa.table({"path": sorted(set(paths))}, schema=pa.schema([("path", pa.string())]))
        try:
            self._con.register("wanted_paths", wanted)
            found = {table: self._con.sql(
                f"SELECT * FROM {table} WHERE path IN (SELECT path FROM wanted_paths)"
            ).to_arrow_table() for table in PATH_TABLES}
            self._con.unregister("wanted_paths")
        except duckdb.Error as exc:
            raise IndexFileError(f"query on {self.path} failed: {exc}") from exc
        return found

    # -- writing -----------------------------------------------------------------

    def replace_paths(self, removed: Iterable[str], rows: dict[str, pa.Table]) -> None:
        """In one transaction: drop every row of ``removed`` paths, insert ``rows``.

        ``rows`` carries each new path's ``file_digests`` row with its other rows. The
        manifest loses its revision in the same transaction (``write_manifest`` names the
        new one): until then the file holds no revision whole, and an interrupted build
        is completed from a full listing, never from a diff against the old revision.
        """
        removed = sorted(set(removed))
        with self._transaction():
            self._con.execute("UPDATE manifest SET value = '' "
                              "WHERE key IN ('revision', 'build_id', 'built_at')")
            if removed or any(arrow.num_rows for arrow in rows.values()):
                for table in GRAPH_TABLES:  # the graph of other content
                    self._con.execute(f"DELETE FROM {table}")
            if removed:
                self._delete_paths(removed)
            for table, arrow in rows.items():
                if arrow.num_rows:
                    self._insert_arrow(table, arrow)

    def _delete_paths(self, paths: list[str]) -> None:
        # A short list of constants is a filter DuckDB applies while scanning (and checks
        # against each row group's path range), cheaper than a join for a small update.
        listed = len(paths) <= _LISTED_PATHS
        if listed:
            where = f"path IN ({', '.join('?' * len(paths))})"
        else:
            self._con.register("removed_paths", pa.table({"path": paths}))
            where = "path IN (SELECT path FROM removed_paths)"
        for table in PATH_TABLES:
            self._con.execute(f"DELETE FROM {table} WHERE {where}", paths if listed else [])
        if not listed:
            self._con.unregister("removed_paths")

    def clear(self) -> None:
        """Remove every row but the content-addressed vectors, for a full rebuild."""
        with self._transaction():
            for table in (*PATH_TABLES, *DERIVED_TABLES, "manifest"):
                self._con.execute(f"DELETE FROM {table}")
        self.manifest = None

    def add_shards(self, paths: Sequence[Path], copied: Callable[[], object]) -> None:
        """Copy shard files' per-path rows and vectors into this index, in one transaction
        (one commit: a commit per shard costs more than the copying). ``copied`` is
        called after each shard.

        A text embedded by two shards keeps the vector copied first. Derived tables are
        not copied: they are recomputed over the whole index.
        :raises ShardError: a shard cannot be read (a corrupt file, say).
        """
        with self._transaction():
            for path in paths:
                try:
                    self._con.execute(f"ATTACH '{_sql_text(str(path))}' AS shard (READ_ONLY)")
                    self._copy_shard_rows()
                    self._con.execute("DETACH shard")
                except duckdb.Error as exc:
                    raise ShardError(f"shard file {path} cannot be read "
                                     f"({_first_line(exc)}): build that shard again") from exc
                copied()

    def _copy_shard_rows(self) -> None:
        for table in PATH_TABLES:
            self._con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM shard.{table}")
        width = (self._con.execute("SELECT array_length(vector) FROM shard.embeddings "
                                   "LIMIT 1").fetchall() if self._shard_has_vectors() else [])
        if width:
            self._con.execute(embeddings_table_sql(int(width[0][0])))
            self._has_vectors_table = True
            self._con.execute(
                "INSERT INTO embeddings BY NAME SELECT * FROM shard.embeddings WHERE "
                "text_hash NOT IN (SELECT text_hash FROM embeddings)")

    def _shard_has_vectors(self) -> bool:
        return bool(self._con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'shard' "
            "AND table_name = 'embeddings'").fetchall()[0][0])

    def embedding_dimension(self) -> int:
        """Width of the stored vectors, 0 when nothing is embedded."""
        if not self._has_embeddings_table():
            return 0
        rows = self._con.execute(
            "SELECT array_length(vector) FROM embeddings LIMIT 1").fetchall()
        return int(rows[0][0]) if rows else 0

    def chunk_texts(self, text_hashes: Iterable[str]) -> dict[str, str]:
        """text_hash -> embed text (context + text) for stored chunks."""
        wanted = sorted(set(text_hashes))
        if not wanted:
            return {}
        self._con.register("wanted_hashes", pa.table({"text_hash": wanted}))
        rows = self._con.execute(
            "SELECT DISTINCT c.text_hash, c.context || chr(10) || c.text FROM chunks c "
            "JOIN wanted_hashes w USING (text_hash)").fetchall()
        self._con.unregister("wanted_hashes")
        return dict(rows)

    def add_embeddings(self, hashes: Sequence[str], vectors: np.ndarray,
                       tokens: Sequence[int], max_tokens: int) -> None:
        """Store vectors by text hash; committed at once so a killed build keeps them."""
        if not hashes:
            return
        dimension = int(vectors.shape[1])
        with self._transaction():
            self._con.execute(embeddings_table_sql(dimension))
            arrow = pa.table({
                "text_hash": list(hashes),
                "tokens": list(tokens),
                "truncated": [t > max_tokens for t in tokens],
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(vectors.astype(np.float32).ravel()), dimension),
            })
            self._insert_arrow("embeddings", arrow)
        self._has_vectors_table = True

    def prune_embeddings(self) -> None:
        """Drop vectors no chunk uses any more."""
        if self._has_embeddings_table():
            self._con.execute(
                "DELETE FROM embeddings WHERE text_hash NOT IN (SELECT text_hash FROM chunks)"
            )

    def replace_cochange(self, pairs: dict[tuple[str, str], int]) -> None:
        ordered = sorted(pairs.items())
        with self._transaction():
            self._con.execute("DELETE FROM cochange")
            self._insert("cochange", {
                "path_a": [a for (a, _), _ in ordered],
                "path_b": [b for (_, b), _ in ordered],
                "commits": [n for _, n in ordered],
            })

    def replace_graph(self, rows: Mapping[str, TableRows]) -> None:
        """In one transaction: every ``GRAPH_TABLES`` table holds ``rows`` alone."""
        with self._transaction():
            for table in GRAPH_TABLES:
                self._con.execute(f"DELETE FROM {table}")
                self._insert(table, rows.get(table, {}))

    def write_manifest(self, manifest: Manifest) -> None:
        with self._transaction():
            self._con.execute("DELETE FROM manifest")
            _insert_manifest(self._con, manifest)
        self.manifest = manifest

    # -- digest ------------------------------------------------------------------

    def paths_digest(self) -> str:
        """A hash of every path's rows (``file_digests``): what is derived from the files."""
        return self._table_digest("file_digests", "path")

    def digest(self) -> str:
        """A stable hash of the index content: no build ids, timestamps or float noise.

        Embeddings count by which texts have one (and their token counts), not by vector
        values, which may differ in the last bits between batchings of the same text.
        """
        assert self.manifest is not None
        h = hashlib.sha256()
        settings = {k: v for k, v in asdict(self.manifest).items()
                    if k not in ("build_id", "built_at")}
        h.update(json.dumps(settings, sort_keys=True).encode())
        for table, order in (("file_digests", "path"), ("cochange", "path_a, path_b")):
            h.update(self._table_digest(table, order).encode())
        # A missing embeddings table and an empty one hash alike.
        embeddings = (self._table_digest("embeddings", "text_hash", "text_hash, tokens, truncated")
                      if self._has_embeddings_table() else _EMPTY_DIGEST.format("embeddings"))
        h.update(embeddings.encode())
        return h.hexdigest()

    def _table_digest(self, table: str, order: str, columns: str = "*") -> str:
        row = self._con.execute(
            f"SELECT count(*), md5(coalesce(string_agg(CAST(t AS VARCHAR), chr(30) "
            f"ORDER BY {order}), '')) FROM (SELECT {columns} FROM {table}) AS t"
        ).fetchall()[0]
        return f"{table}:{row[0]}:{row[1]};"

    # -- helpers -----------------------------------------------------------------

    def _insert(self, table: str, columns: TableRows) -> None:
        if columns and len(next(iter(columns.values()))):
            self._insert_arrow(table, arrow_table(columns))

    def _insert_arrow(self, table: str, new_rows: pa.Table) -> None:
        names = ", ".join(new_rows.column_names)
        # DuckDB finds ``new_rows`` among this frame's variables (a replacement scan):
        # about half the time of registering it as a view and dropping that again.
        self._con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM new_rows")

    def _has_embeddings_table(self) -> bool:
        if self._has_vectors_table is None:
            self._has_vectors_table = "embeddings" in _table_names(self._con)
        return self._has_vectors_table

    def _transaction(self) -> _Transaction:
        return _Transaction(self._con, self.path)


class _Transaction:
    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path) -> None:
        self._con = con
        self._path = path

    def __enter__(self) -> None:
        self._con.execute("BEGIN TRANSACTION")

    def __exit__(self, exc_type: type[BaseException] | None, exc: object, tb: object) -> None:
        if exc_type is None:
            try:
                self._con.execute("COMMIT")
            except duckdb.Error as err:
                raise IndexFileError(f"cannot write index {self._path}: {err}") from err
        else:
            self._con.execute("ROLLBACK")
            if isinstance(exc, duckdb.Error):
                raise IndexFileError(f"cannot write index {self._path}: {exc}") from exc


def _overlay_view(con: duckdb.DuckDBPyConnection, table: str, where: str,
                  added: pa.Table | None) -> None:
    """``table`` as a view of the attached base's rows (filtered) plus ``added``."""
    union = ""
    if added is not None and added.num_rows:
        con.register(f"added_{table}", added)
        union = f" UNION ALL BY NAME SELECT * FROM added_{table}"
    con.execute(f"CREATE VIEW {table} AS SELECT * FROM base.{table} {where}{union}")


def _sql_text(text: str) -> str:
    return text.replace("'", "''")


def arrow_table(columns: TableRows) -> pa.Table:
    """New rows as an Arrow table, each column of its type in ``ARROW_TYPES``."""
    return pa.table({name: pa.array(values, type=ARROW_TYPES.get(name))
                     for name, values in columns.items()})


def _connect(path: Path, warn: Callable[[str], None],
             early: EarlyConnection | None = None) -> duckdb.DuckDBPyConnection:
    try:
        if early is not None:
            return early.take()
        return duckdb.connect(str(path), config=_DUCKDB_CONFIG)
    except duckdb.Error as exc:
        if _LOCKED.search(str(exc)):
            raise IndexFileError(f"index {path} is in use by another process") from exc
        return _connect(_move_aside(path, f"it cannot be opened ({_first_line(exc)})", warn),
                        warn)


def _read_manifest(con: duckdb.DuckDBPyConnection, tables: set[str]) -> Manifest | None:
    """The manifest of a file written by this schema, else None. Raises duckdb.Error."""
    if not {"manifest", "schema_migrations"} <= tables:
        return None
    applied = [n for (n,) in con.execute(
        "SELECT name FROM schema_migrations ORDER BY version").fetchall()]
    values = dict(con.execute("SELECT key, value FROM manifest").fetchall())
    if applied != [name for name, _ in MIGRATIONS] or not values:
        return None
    return _manifest_from(values)


_EMBEDDING_COLUMNS = ["text_hash", "tokens", "truncated", "vector"]


def _reusable_vectors(con: duckdb.DuckDBPyConnection, wanted: Manifest) -> bool:
    """Whether an older file's vectors were made by ``wanted``'s model and backend, in
    today's layout.

    Vectors depend only on the text, the model and the backend, so a schema upgrade
    need not re-embed a whole repository. Files from before backends were recorded
    were embedded with torch.
    """
    try:
        columns = [c for (c,) in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = "
            "'embeddings' ORDER BY ordinal_position").fetchall()]
        values = dict(con.execute(
            "SELECT key, value FROM manifest WHERE key IN "
            "('embedding_model', 'embedding_backend')").fetchall())
    except duckdb.Error:
        return False
    made_by = (values.get("embedding_model"), values.get("embedding_backend", TORCH_BACKEND))
    return columns == _EMBEDDING_COLUMNS and made_by == wanted.embedder()


def _manifest_from(values: dict[str, str]) -> Manifest | None:
    kwargs: dict[str, Any] = {}
    for f in fields(Manifest):
        if f.name not in values:
            return None
        kwargs[f.name] = int(values[f.name]) if f.type == "int" else values[f.name]
    return Manifest(**kwargs)


def _reset(con: duckdb.DuckDBPyConnection, tables: set[str], path: Path, reason: str,
           warn: Callable[[str], None], keep_embeddings: bool = False) -> set[str]:
    """Empty the file for a full rebuild, keeping content-addressed vectors if allowed.

    Returns the tables left.
    """
    warn(f"rebuilding index {path}: {reason}")
    kept = {"embeddings"} & tables if keep_embeddings else set()
    for table in sorted(tables - kept):
        con.execute(f'DROP TABLE "{table}"')
    return kept


def _lone_shard(path: Path, manifest: Manifest) -> ShardError:
    count = manifest.shard.partition("/")[2]
    return ShardError(
        f"{path} is shard {manifest.shard} of a sharded build, not a whole index: merge "
        f"all {count} shards with `pr-context merge --db OUT SHARD...` and use OUT (or "
        f"update the shard with `pr-context index --shard {manifest.shard}`)")


def _move_aside(path: Path, reason: str, warn: Callable[[str], None]) -> Path:
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    for suffix in ("", ".wal"):
        source = Path(f"{path}{suffix}")
        if source.exists():
            source.replace(Path(f"{aside}{suffix}"))
    warn(f"index {path} moved aside to {aside.name} and rebuilt: {reason}")
    return path


def _migrate(con: duckdb.DuckDBPyConnection, settings: Manifest) -> None:
    """Create the tables, with a manifest of ``settings`` that names no revision yet.

    The settings come with the tables so that an interrupted first build leaves a file
    that is recognised and completed, keeping the vectors it committed.
    """
    con.execute("BEGIN TRANSACTION")
    con.execute("CREATE TABLE schema_migrations (version INTEGER NOT NULL, "
                "name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)")
    for version, (name, sql) in enumerate(MIGRATIONS, start=1):
        con.execute(sql)
        con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", (version, name))
    _insert_manifest(con, replace(settings, revision="", build_id="", built_at=""))
    con.execute("COMMIT")
    assert version == SCHEMA_VERSION


def _insert_manifest(con: duckdb.DuckDBPyConnection, manifest: Manifest) -> None:
    rows = [(key, str(value)) for key, value in asdict(manifest).items()]
    # One statement for all rows: executemany runs one per row, twice the time.
    con.execute(f"INSERT INTO manifest VALUES {', '.join(['(?, ?)'] * len(rows))}",
                [column for row in rows for column in row])


def _has_data_tables(tables: set[str]) -> bool:
    return bool(tables - {"embeddings"})


def _table_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    # duckdb_tables() answers in a fraction of the time information_schema takes.
    return {name for (name,) in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
