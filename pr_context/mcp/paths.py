"""Paths a client names, confined to the repository; files the server never returns.

A path is resolved (symlinks followed, ``..`` collapsed) and then checked to lie inside
the resolved repository root by comparing path components, never by string prefix:
``/repo-evil`` is not inside ``/repo``. Secret-looking files are refused by name,
whatever the index's path policy says.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path, PurePosixPath

from pr_context.errors import BadInputError
from pr_context.git import Repository

__all__ = ["SECRET_FILE_PATTERNS", "PathRefusedError", "confine", "is_secret_path",
           "require_work_tree"]

# Files that hold credentials by convention: never read, never listed.
SECRET_FILE_PATTERNS = (
    ".env", ".env.*", "*.env", ".envrc", ".netrc", "_netrc", ".npmrc", ".pypirc",
    ".git-credentials", ".pgpass", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks",
    "*.keystore", "*.kdbx", "id_rsa", "id_rsa.*", "id_dsa", "id_dsa.*", "id_ecdsa",
    "id_ecdsa.*", "id_ed25519", "id_ed25519.*", "credentials", "credentials.json",
    "secrets.yml", "secrets.yaml", "secrets.json", "*.tfstate", "*.tfvars",
)


class PathRefusedError(BadInputError):
    """A path outside the repository, inside ``.git``, or a secret-looking file."""


def confine(root: Path, path: str, follow: bool = True) -> str:
    """The repository-relative ``/`` path that ``path`` names inside ``root``.

    With ``follow`` False a symlink at ``path`` itself is not followed (its directories
    still are): the result names the link, for callers that read it with ``lstat``.

    :raises PathRefusedError: ``path`` is empty, absolute, climbs out with ``..``,
        leads out through a symlink, points into ``.git``, or names a secret-looking file.
    """
    if not path or "\0" in path:
        raise PathRefusedError("a path must be a non-empty repository-relative path")
    pure = PurePosixPath(path.replace("\\", "/"))
    if pure.is_absolute() or Path(path).is_absolute() or pure.drive:
        raise PathRefusedError(f"{path!r} is absolute: give a path relative to the "
                               "repository root")
    if ".." in pure.parts:
        raise PathRefusedError(f"{path!r} climbs out of the repository with '..'")
    base = root.resolve()
    resolved = (base / pure).resolve() if follow else (
        (base / pure).parent.resolve() / pure.name)
    if not resolved.is_relative_to(base):
        raise PathRefusedError(f"{path!r} leads outside the repository (through a "
                               "symlink)")
    relative = resolved.relative_to(base).as_posix()
    if relative == ".":
        raise PathRefusedError(f"{path!r} is the repository root, not a file")
    if relative.split("/")[0] == ".git":
        raise PathRefusedError(f"{path!r} is inside .git")
    if is_secret_path(relative):
        raise PathRefusedError(f"{path!r} looks like a file of secrets; it is never read")
    return relative


def is_secret_path(path: str) -> bool:
    """Whether a repository path names a secret-looking file (``.env``, private keys)."""
    name = PurePosixPath(path).name.lower()
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in SECRET_FILE_PATTERNS)


def require_work_tree(repo: Repository) -> None:
    """:raises BadInputError: ``repo`` is bare: there is no working tree to serve."""
    if repo.path.resolve() == repo.git_dir.resolve():
        raise BadInputError(f"{repo.path} is a bare repository: serve a work tree "
                            "(a checkout) instead")
