"""Every error pr-context raises on purpose.

PrContextError                 base; ``exit_code`` says how the process ends
 ├── BadInputError (2)         the user's input cannot be used as given
 │    ├── NotARepositoryError  the path is not a git repository
 │    ├── UnknownRevisionError the revision does not name a commit
 │    ├── ConfigError          a configuration file or option is invalid
 │    ├── ShardError           a shard used as a whole index, or shards that do not
 │    │                        make one index (pr-context merge)
 │    └── CoverageFileError    a coverage data file cannot be read, or not placed at a
 │                             revision of this repository
 ├── GitError (1)              git failed for a reason other than bad input
 ├── GitHubApiError (1)        the GitHub API refused or kept failing
 │    └── ReadOnlyTokenError   the token may read but not write (fork pull requests)
 ├── ArtifactError (1)         another run's artifact is refused (forged, oversized, invalid)
 ├── IndexFileError (1)        the index file cannot be opened or written
 └── EmbeddingError (1)        the embedding model cannot be loaded or run

Foreign exceptions (``CalledProcessError``, ``duckdb.Error``, ...) are translated into
these at the one module that touches the library, with ``raise ... from exc``.
"""

from __future__ import annotations

__all__ = [
    "ArtifactError",
    "BadInputError",
    "ConfigError",
    "CoverageFileError",
    "EmbeddingError",
    "GitError",
    "GitHubApiError",
    "IndexFileError",
    "NotARepositoryError",
    "PrContextError",
    "ReadOnlyTokenError",
    "ShardError",
    "UnknownRevisionError",
]


class PrContextError(Exception):
    """Base of all deliberate errors; the message is shown to the user as one line."""

    exit_code = 1


class BadInputError(PrContextError):
    exit_code = 2


class NotARepositoryError(BadInputError):
    pass


class UnknownRevisionError(BadInputError):
    pass


class ConfigError(BadInputError):
    pass


class ShardError(BadInputError):
    pass


class CoverageFileError(BadInputError):
    pass


class GitError(PrContextError):
    pass


class GitHubApiError(PrContextError):
    pass


class ReadOnlyTokenError(GitHubApiError):
    pass


class ArtifactError(PrContextError):
    """An artifact from another workflow run that cannot be used: nothing is posted."""


class IndexFileError(PrContextError):
    pass


class EmbeddingError(PrContextError):
    pass
