"""The index schema as numbered migrations.

A new index file gets every migration in order and records each in
``schema_migrations``. An index whose recorded migrations differ from ``MIGRATIONS``
was written by another version of pr-context: it is rebuilt, not patched, because its
rows were produced by other parsing code too.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["ARROW_TYPES", "MIGRATIONS", "SCHEMA_VERSION", "embeddings_table_sql"]

_M001_CREATE_TABLES = """
CREATE TABLE manifest (key VARCHAR NOT NULL, value VARCHAR NOT NULL);
CREATE TABLE files (
    path VARCHAR NOT NULL, blob_sha VARCHAR NOT NULL, language VARCHAR, role VARCHAR,
    size BIGINT NOT NULL, status VARCHAR NOT NULL, skip_reason VARCHAR,
    syntax_errors INTEGER NOT NULL, decode_errors BOOLEAN NOT NULL
);
CREATE TABLE chunks (
    chunk_id VARCHAR NOT NULL, path VARCHAR NOT NULL, ordinal INTEGER NOT NULL,
    kind VARCHAR NOT NULL, symbol VARCHAR, role VARCHAR NOT NULL,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    text VARCHAR NOT NULL, context VARCHAR NOT NULL, text_hash VARCHAR NOT NULL
);
CREATE TABLE definitions (
    path VARCHAR NOT NULL, ordinal INTEGER NOT NULL, name VARCHAR NOT NULL,
    qualified_name VARCHAR NOT NULL, kind VARCHAR NOT NULL, signature VARCHAR NOT NULL,
    parameters VARCHAR[] NOT NULL, docstring VARCHAR,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, parent VARCHAR
);
CREATE TABLE refs (
    path VARCHAR NOT NULL, ordinal INTEGER NOT NULL, name VARCHAR NOT NULL,
    kind VARCHAR NOT NULL, receiver VARCHAR, line INTEGER NOT NULL,
    col INTEGER NOT NULL, enclosing VARCHAR
);
CREATE TABLE imports (
    path VARCHAR NOT NULL, ordinal INTEGER NOT NULL, module VARCHAR NOT NULL,
    name VARCHAR, alias VARCHAR, level INTEGER NOT NULL, line INTEGER NOT NULL
);
CREATE TABLE cochange (
    path_a VARCHAR NOT NULL, path_b VARCHAR NOT NULL, commits INTEGER NOT NULL
);
"""

# One digest per path over all its rows, kept up to date as paths are replaced, so the
# index digest costs O(files), not O(rows), after a small update.
_M002_FILE_DIGESTS = """
CREATE TABLE file_digests (path VARCHAR NOT NULL, digest VARCHAR NOT NULL);
"""

# Each chunk's BM25 terms (distinct, in order of first occurrence) and their counts,
# and the distinct names referenced on its lines, found once when the chunk is indexed:
# a search process only gathers them.
_M003_CHUNK_LEXICON = """
ALTER TABLE chunks ADD COLUMN terms VARCHAR[];
ALTER TABLE chunks ADD COLUMN term_counts INTEGER[];
ALTER TABLE chunks ADD COLUMN uses VARCHAR[];
"""

# String literals and format templates of code (placeholders as U+FFFC), so a pasted
# error message finds the code raising it (pr_context/parse/code_strings.py).
_M004_MESSAGES = """
CREATE TABLE messages (
    path VARCHAR NOT NULL, ordinal INTEGER NOT NULL, line INTEGER NOT NULL,
    template VARCHAR NOT NULL, name VARCHAR
);
"""

# Where Python's syntax calls a dunder method (``a in b``: ``b.__contains__``), found once
# when the file is indexed, so that a review or MCP process parses no file for it
# (pr_context/parse/code_syntax.py).
_M005_SYNTAX_USES = """
CREATE TABLE syntax_uses (
    path VARCHAR NOT NULL, ordinal INTEGER NOT NULL, line INTEGER NOT NULL,
    col INTEGER NOT NULL, operand VARCHAR NOT NULL, names VARCHAR[] NOT NULL,
    syntax VARCHAR NOT NULL, callee VARCHAR
);
"""

# The symbol graph built from the index (pr_context/graph/stored.py): what binding types
# and resolving every site add to the rows above, so a process reads it instead of
# building it. ``graph_marks`` says what content and code it was made from.
_M006_GRAPH = """
CREATE TABLE graph_marks (inputs VARCHAR NOT NULL);
CREATE TABLE graph_sites (
    site INTEGER NOT NULL, state VARCHAR NOT NULL, target VARCHAR, reason VARCHAR NOT NULL,
    self_class VARCHAR
);
CREATE TABLE graph_bindings (
    mapping VARCHAR NOT NULL, ordinal INTEGER NOT NULL, scope VARCHAR NOT NULL,
    name VARCHAR NOT NULL, line INTEGER NOT NULL, cls VARCHAR, how VARCHAR NOT NULL,
    iterable BOOLEAN NOT NULL
);
CREATE TABLE graph_returns (
    ordinal INTEGER NOT NULL, function VARCHAR NOT NULL, line INTEGER NOT NULL,
    value VARCHAR NOT NULL
);
CREATE TABLE graph_names (
    mapping VARCHAR NOT NULL, ordinal INTEGER NOT NULL, owner VARCHAR NOT NULL,
    name VARCHAR, target VARCHAR
);
CREATE TABLE graph_memo (
    ordinal INTEGER NOT NULL, function VARCHAR NOT NULL, owner VARCHAR, kind VARCHAR,
    target VARCHAR, how VARCHAR, bound VARCHAR
);
"""

MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("m001_create_tables", _M001_CREATE_TABLES),
    ("m002_file_digests", _M002_FILE_DIGESTS),
    ("m003_chunk_lexicon", _M003_CHUNK_LEXICON),
    ("m004_messages", _M004_MESSAGES),
    ("m005_syntax_uses", _M005_SYNTAX_USES),
    ("m006_graph", _M006_GRAPH),
)
SCHEMA_VERSION = len(MIGRATIONS)

_TEXT, _NUMBER = pa.string(), pa.int64()  # what pyarrow infers from str and int values
# The Arrow type of each column new rows are gathered in, by name: a name has one type in
# every table. Given the type, pyarrow does not infer it, which tries to import dateutil
# for every column and searches sys.path each time when dateutil is not installed.
ARROW_TYPES: dict[str, pa.DataType] = {
    **dict.fromkeys(("alias", "blob_sha", "callee", "chunk_id", "context", "digest",
                     "docstring", "enclosing", "key", "kind", "language", "module", "name",
                     "operand", "parent", "path", "path_a", "path_b", "qualified_name",
                     "receiver", "role", "signature", "skip_reason", "status", "symbol",
                     "syntax", "template", "text", "text_hash", "value", "inputs", "state",
                     "target", "reason", "self_class", "mapping", "scope", "cls", "how",
                     "function", "owner", "bound"), _TEXT),
    **dict.fromkeys(("col", "commits", "end_line", "level", "line", "ordinal", "size",
                     "start_line", "syntax_errors", "site"), _NUMBER),
    "decode_errors": pa.bool_(),
    "iterable": pa.bool_(),
    "parameters": pa.list_(_TEXT),
    "terms": pa.list_(_TEXT),
    "term_counts": pa.list_(pa.int32()),
    "uses": pa.list_(_TEXT),
    "names": pa.list_(_TEXT),
}


def embeddings_table_sql(dimension: int) -> str:
    """The embeddings table: its vector width depends on the model, so it is made per index.

    Rows are content-addressed by ``text_hash`` (the hash of the embedded text), so an
    unchanged chunk is never embedded twice.
    """
    return (
        "CREATE TABLE IF NOT EXISTS embeddings (text_hash VARCHAR NOT NULL, "
        f"tokens INTEGER NOT NULL, truncated BOOLEAN NOT NULL, vector FLOAT[{dimension}])"
    )
