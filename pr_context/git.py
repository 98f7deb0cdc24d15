"""Read a git repository at any revision without checking anything out.

Only this module runs git. Works on bare repositories. Nothing here runs repository
code: diffs are taken with ``--no-ext-diff --no-textconv`` and no hooks are involved.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Literal

from pr_context.errors import GitError, NotARepositoryError, UnknownRevisionError
from pr_context.models import FileEntry, Sha

__all__ = [
    "SUBMODULE_MODE",
    "SYMLINK_MODE",
    "BlobReader",
    "CommitHistory",
    "IndexCopy",
    "PathChange",
    "Repository",
    "TreeChanges",
    "WorktreeChange",
    "changed_files",
    "changed_paths",
    "commit_exists",
    "fetch",
    "has_remote",
    "hooks_dir",
    "list_files",
    "merge_base",
    "open_repository",
    "read_blob",
    "read_file_at",
    "resolve_revision",
    "snapshot_worktree",
    "unified_diff",
    "worktree_changes",
]

ChangeStatus = Literal["added", "modified", "deleted", "renamed", "copied", "type_changed"]

_STATUS: dict[str, ChangeStatus] = {
    "A": "added",
    "M": "modified",
    "D": "deleted",
    "R": "renamed",
    "C": "copied",
    "T": "type_changed",
}

SYMLINK_MODE = "120000"  # tree entry modes that are not regular files
SUBMODULE_MODE = "160000"

# Read-only commands: trust the directory whoever owns it (Actions workspaces are owned
# by another user), never page, never prompt, never quote non-ASCII paths.
_GIT_CONFIG = ("-c", "safe.directory=*", "-c", "core.quotepath=off", "--no-pager")
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"}


@dataclass(frozen=True)
class Repository:
    """A git repository: ``path`` is the work tree (or the bare git directory)."""

    path: Path
    git_dir: Path


@dataclass(frozen=True)
class PathChange:
    """One line of ``git diff --name-status -M``."""

    status: ChangeStatus
    path: str  # the new path (the old one for deletions)
    old_path: str | None = None  # set for renames and copies


@dataclass(frozen=True)
class TreeChanges:
    """What changed between two trees."""

    removed: list[str]  # paths whose file at the old tree is gone or different, sorted
    files: list[FileEntry]  # files of the new tree that are new or different, by path
    paths: list[PathChange]  # as ``changed_paths`` reports them, in git's order


@dataclass(frozen=True)
class WorktreeChange:
    """A file of the work tree whose content differs from a commit's."""

    status: Literal["modified", "added", "deleted"]
    path: str


# The snapshot commit of a work tree: a fixed identity and date, so that the same tree
# on the same parent is the same commit, and nothing of the user's config is needed.
_SNAPSHOT_ENV = {
    "GIT_AUTHOR_NAME": "pr-context", "GIT_AUTHOR_EMAIL": "pr-context@localhost",
    "GIT_COMMITTER_NAME": "pr-context", "GIT_COMMITTER_EMAIL": "pr-context@localhost",
    "GIT_AUTHOR_DATE": "1970-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "1970-01-01T00:00:00Z",
}


def _run(repo_path: Path, args: Sequence[str], stdin: bytes | None = None,
         env: dict[str, str] | None = None) -> bytes:
    """Run git in ``repo_path`` and return stdout; raise GitError on failure."""
    try:
        done = subprocess.run(
            ["git", *_GIT_CONFIG, *args],
            cwd=repo_path,
            input=stdin,
            capture_output=True,
            env={**os.environ, **_GIT_ENV, **(env or {})},
            check=True,
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed or not on PATH") from exc
    except subprocess.CalledProcessError as exc:
        raise _git_failed(args, exc.stderr, exc) from exc
    return done.stdout


def _git_failed(args: Sequence[str], stderr: bytes, fallback: object) -> GitError:
    """The error for a failed git command: its last line of stderr says why."""
    message = stderr.decode("utf-8", "replace").strip().splitlines()
    return GitError(f"git {args[0]} failed: {message[-1] if message else fallback}")


def open_repository(path: str | Path) -> Repository:
    """Check that ``path`` is a git repository (work tree or bare) and return it.

    :raises NotARepositoryError: the path does not exist or is not inside a repository.
    """
    root = Path(path).resolve()
    if not root.is_dir():
        raise NotARepositoryError(f"not a git repository: {path} (no such directory)")
    try:
        out = _run(root, ["rev-parse", "--absolute-git-dir"])
    except GitError as exc:
        raise NotARepositoryError(f"not a git repository: {path}") from exc
    return Repository(path=root, git_dir=Path(out.decode().strip()))


def resolve_revision(repo: Repository, rev: str) -> Sha:
    """The full commit SHA that ``rev`` (SHA, branch, tag, ``HEAD~3``...) names.

    :raises UnknownRevisionError: ``rev`` names no commit, or the repository has none.
    """
    if not rev or rev.startswith("-"):
        raise UnknownRevisionError(f"unknown revision: {rev!r}")
    try:
        out = _run(repo.path, ["rev-parse", "--verify", "--quiet", "--end-of-options",
                               f"{rev}^{{commit}}"])
    except GitError as exc:
        if not _has_commits(repo):
            raise UnknownRevisionError(
                f"unknown revision: {rev} (the repository has no commits yet)"
            ) from exc
        raise UnknownRevisionError(f"unknown revision: {rev}") from exc
    return Sha(out.decode().strip())


def _has_commits(repo: Repository) -> bool:
    try:
        return bool(_run(repo.path, ["rev-list", "-n", "1", "--all"]).strip())
    except GitError:
        return False


def hooks_dir(repo: Repository) -> Path:
    """The directory git runs hooks from (``core.hooksPath`` honoured)."""
    return _git_path(repo, "hooks")


def _git_path(repo: Repository, name: str) -> Path:
    """Where git keeps ``name`` (``hooks``, ``index``) for this work tree."""
    out = _run(repo.path, ["rev-parse", "--git-path", name]).decode().strip()
    return (repo.path / out).resolve()


def commit_exists(repo: Repository, sha: str) -> bool:
    """Whether ``sha`` names a commit in this repository."""
    try:
        _run(repo.path, ["cat-file", "-e", f"{sha}^{{commit}}"])
    except GitError:
        return False
    return True


def merge_base(repo: Repository, a: Sha, b: Sha) -> Sha | None:
    """The best common ancestor of two commits; None when the history does not have one."""
    try:
        out = _run(repo.path, ["merge-base", a, b]).decode().strip()
    except GitError:  # no common ancestor, or a shallow history that hides it
        return None
    return Sha(out) if out else None


def has_remote(repo: Repository, name: str) -> bool:
    """Whether the repository has a remote called ``name``."""
    try:
        return name in _run(repo.path, ["remote"]).decode().split()
    except GitError:
        return False


def fetch(repo: Repository, remote: str, refspecs: Sequence[str],
          env: dict[str, str] | None = None) -> None:
    """``git fetch --no-tags REMOTE REFSPECS...``; ``env`` may carry credentials.

    :raises GitError: the fetch failed (the message is git's last line of stderr).
    """
    _run(repo.path, ["fetch", "--no-tags", "--quiet", remote, *refspecs], env=env)


def list_files(repo: Repository, sha: Sha) -> list[FileEntry]:
    """Every file in the tree of ``sha``, sorted by path; submodules and symlinks included."""
    out = _run(repo.path, ["ls-tree", "-r", "-z", "--long", "--full-tree", sha])
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, _kind, blob, size = meta.split()
        path = raw_path.decode("utf-8", "surrogateescape")
        entries.append(FileEntry(path=path, blob_sha=blob.decode(), mode=mode.decode(),
                                 size=_listed_size(size, path, sha)))
    return sorted(entries, key=lambda e: e.path)


def _listed_size(size: bytes, path: str, sha: Sha) -> int:
    """A blob's size as ``ls-tree --long`` lists it: ``-`` for a submodule, -1 here.

    :raises GitError: git lists ``BAD``: the blob is missing from the object store.
    """
    if size == b"-":
        return -1
    if not size.isdigit():
        raise GitError(f"the content of {path} at {sha[:12]} is missing from the "
                       "repository (a partial or damaged clone): fetch it, or clone the "
                       "repository in full")
    return int(size)


def changed_files(repo: Repository, old: Sha, new: Sha) -> TreeChanges:
    """What changed between two trees, from one diff and without listing either.

    A rename removes its old path and adds its new one; a file that turned into a
    symlink or submodule is both removed and added.
    """
    # The rename detection of ``changed_paths``, so that one diff serves both views.
    out = _run(repo.path, ["diff-tree", "-r", "-z", "--raw", "-M", "--no-commit-id",
                           old, new, "--"])
    removed: list[str] = []
    added: list[tuple[str, str, str]] = []  # path, blob, mode
    paths: list[PathChange] = []
    for old_mode, new_mode, new_blob, change in _raw_records(out.split(b"\0")):
        if old_mode != "000000":
            removed.append(change.old_path or change.path)
        if new_mode != "000000":
            added.append((change.path, new_blob, new_mode))
        paths.append(change)
    sizes = _blob_sizes(repo, [blob for _, blob, mode in added if mode != SUBMODULE_MODE])
    entries = [FileEntry(path=path, blob_sha=blob, mode=mode, size=sizes.get(blob, -1))
               for path, blob, mode in added]
    return TreeChanges(sorted(removed), sorted(entries, key=lambda e: e.path), paths)


def _raw_records(fields: list[bytes]) -> Iterator[tuple[str, str, str, PathChange]]:
    """``--raw -z`` records without copies: (old mode, new mode, new blob, change)."""
    i = 0
    while i < len(fields) and fields[i].startswith(b":"):
        old_mode, new_mode, _old_blob, new_blob, status = fields[i][1:].decode().split()
        width = 3 if status.startswith("R") else 2  # a rename names both paths
        change = next(_parse_name_status([status.encode(), *fields[i + 1 : i + width]]))
        yield old_mode, new_mode, new_blob, change
        i += width


def _blob_sizes(repo: Repository, blobs: Sequence[str]) -> dict[str, int]:
    """blob SHA -> size in bytes, through one ``git cat-file --batch-check``."""
    if not blobs:
        return {}
    out = _run(repo.path, ["cat-file", "--batch-check"], stdin="\n".join(blobs).encode() + b"\n")
    sizes = {}
    for line in out.decode().splitlines():
        fields = line.split()  # "<sha> blob <size>", or "<name> missing"
        if len(fields) == 3 and fields[1] == "blob":
            sizes[fields[0]] = int(fields[2])
    return sizes


def read_blob(repo: Repository, blob_sha: str) -> bytes:
    """The content of one blob; use BlobReader for many."""
    return _run(repo.path, ["cat-file", "blob", blob_sha])


def read_file_at(repo: Repository, sha: Sha, path: str) -> bytes | None:
    """The content of the file at ``path`` in the tree of ``sha``, None when there is
    none (no such path, or a directory there)."""
    try:
        return read_blob(repo, f"{sha}:{path}")
    except GitError:
        return None


class BlobReader:
    """Streams many blobs through one ``git cat-file --batch`` process."""

    def __init__(self, repo: Repository) -> None:
        self._proc = subprocess.Popen(
            ["git", *_GIT_CONFIG, "cat-file", "--batch"],
            cwd=repo.path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **_GIT_ENV},
        )

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def read(self, blob_sha: str) -> bytes:
        """The content of ``blob_sha``. :raises GitError: the object is missing."""
        stdin, stdout = self._pipes()
        stdin.write(blob_sha.encode() + b"\n")
        stdin.flush()
        header = stdout.readline().split()
        if len(header) != 3:
            raise GitError(f"git cat-file: object {blob_sha} is missing")
        data = stdout.read(int(header[2]))
        stdout.read(1)  # the newline after each object
        return data

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        if self._proc.stdin is None or self._proc.stdout is None:
            raise GitError("git cat-file is not running")
        return self._proc.stdin, self._proc.stdout

    def close(self) -> None:
        if self._proc.stdin:
            self._proc.stdin.close()
        self._proc.wait()
        if self._proc.stdout:
            self._proc.stdout.close()


def changed_paths(repo: Repository, old: Sha, new: Sha) -> list[PathChange]:
    """``git diff --name-status -M old new`` as PathChange records, in git's order."""
    out = _run(repo.path, ["diff", "--name-status", "-M", "-z", "--no-ext-diff",
                           "--no-textconv", old, new, "--"])
    return list(_parse_name_status(out.split(b"\0")))


def _parse_name_status(fields: list[bytes]) -> Iterator[PathChange]:
    i = 0
    while i < len(fields) and fields[i]:
        status = _STATUS.get(fields[i][:1].decode(), "modified")
        if status in ("renamed", "copied"):
            old, new = fields[i + 1], fields[i + 2]
            yield PathChange(status, new.decode("utf-8", "surrogateescape"),
                             old.decode("utf-8", "surrogateescape"))
            i += 3
        else:
            yield PathChange(status, fields[i + 1].decode("utf-8", "surrogateescape"))
            i += 2


def unified_diff(
    repo: Repository, old: Sha, new: Sha, paths: Iterable[str] = (), context: int = 3
) -> str:
    """The unified diff ``old..new`` with rename detection, optionally for some paths."""
    out = _run(repo.path, ["diff", "-M", f"-U{context}", "--no-color", "--no-ext-diff",
                           "--no-textconv", old, new, "--", *paths])
    return out.decode("utf-8", "replace")


def worktree_changes(repo: Repository, sha: Sha, index: Path | None = None
                     ) -> list[WorktreeChange]:
    """Files of the work tree that differ from commit ``sha``, sorted by path.

    Tracked files whose content differs (staged or not) are ``modified``, files ``sha``
    lacks (staged, or untracked and not ignored) ``added``, files gone from the work tree
    ``deleted``. Nothing is written, not even git's index; ``index``: a copy of it to read
    instead (:class:`IndexCopy`), with the same entries.
    """
    env = {"GIT_INDEX_FILE": str(index)} if index is not None else None
    tracked = _run(repo.path, ["diff", "--name-status", "-z", "--no-renames",
                               "--no-ext-diff", "--no-textconv", sha, "--"], env=env)
    untracked = _run(repo.path, ["ls-files", "--others", "--exclude-standard", "-z"],
                     env=env)
    kinds: dict[ChangeStatus, Literal["modified", "added", "deleted"]] = {
        "added": "added", "deleted": "deleted"}
    changes = {c.path: WorktreeChange(kinds.get(c.status, "modified"), c.path)
               for c in _parse_name_status(tracked.split(b"\0"))}
    for raw in untracked.split(b"\0"):
        if raw:
            path = raw.decode("utf-8", "surrogateescape")
            changes[path] = WorktreeChange("added", path)
    return [changes[p] for p in sorted(changes)]


class IndexCopy:
    """A private copy of the repository's git index whose files' stat data is refreshed.

    Reading the work tree without taking git's lock (``GIT_OPTIONAL_LOCKS=0``) leaves
    the stat data git would have stored: after a checkout, every file written in the
    same second as the index is compared by content on every read (0.1 s a read on a
    fresh clone of 2,000 files), until the user's own git refreshes the index. The copy
    holds the same entries, refreshed once in a file of ours; it is made again whenever
    the index changes (git replaces the file on every write).
    """

    def __init__(self, repo: Repository, target: Path) -> None:
        self._repo, self._target = repo, target
        self._source: Path | None = None
        self._stamp: tuple[int, int, int] | None = None

    def path(self) -> Path | None:
        """The refreshed copy of the index as it is now; None when there is no index or
        it cannot be copied (then the index itself is read)."""
        source = self._index_file()
        try:
            found = source.stat()
            stamp = (found.st_ino, found.st_mtime_ns, found.st_size)
            if stamp != self._stamp:
                self._stamp = None
                shutil.copyfile(source, self._target)
                self._refresh()
                self._stamp = stamp
        except OSError:
            return None
        return self._target

    def _index_file(self) -> Path:
        if self._source is None:
            self._source = _git_path(self._repo, "index")
        return self._source

    def _refresh(self) -> None:
        # It exits 1 when a file differs from its entry: the copy is refreshed all the same.
        with contextlib.suppress(GitError):
            _run(self._repo.path, ["update-index", "-q", "--refresh"],
                 env={"GIT_INDEX_FILE": str(self._target)})


def snapshot_worktree(repo: Repository, parent: Sha) -> Sha:
    """A commit of the work tree as it is (ignored files left out), child of ``parent``.

    Built in a temporary git index, so the user's index, refs and files are untouched;
    only unreachable objects are added to the object store (as ``git stash create``
    does), which git's garbage collection removes in time.
    """
    with tempfile.TemporaryDirectory(prefix="pr-context-snapshot-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        _run(repo.path, ["read-tree", parent], env=env)
        _run(repo.path, ["add", "--all", "--", "."], env=env)
        tree = _run(repo.path, ["write-tree"], env=env).decode().strip()
    out = _run(repo.path, ["commit-tree", tree, "-p", parent, "-m",
                           "pr-context: snapshot of the working tree"], env=_SNAPSHOT_ENV)
    return Sha(out.decode().strip())


class CommitHistory:
    """The files each recent commit touched, from a ``git log`` begun at once.

    git walks the history while the caller goes on, writing to a temporary file, which
    unlike a pipe never fills up and stops it; ``file_lists`` waits for it. Use it as a
    context manager: leaving it stops a git that was never waited for.
    """

    def __init__(self, repo: Repository, sha: Sha, max_commits: int) -> None:
        self._args = ["log", "--no-merges", "--format=%x01", "--name-only", "-z",
                      "--no-renames", f"-n{max_commits}", sha, "--"]
        self._out = tempfile.TemporaryFile()  # noqa: SIM115 - closed by __exit__
        self._proc = _start(repo.path, self._args, self._out) if max_commits > 0 else None

    def __enter__(self) -> CommitHistory:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.returncode is None:  # never waited for
            self._proc.kill()
            self._proc.communicate()
        self._out.close()

    def file_lists(self, max_files_per_commit: int) -> list[list[str]]:
        """Paths touched by each of the last ``max_commits`` commits reachable from ``sha``.

        Merge commits and commits touching more than ``max_files_per_commit`` files (bulk
        reformatting, vendoring) are left out: they say nothing about which files belong
        together.

        :raises GitError: git failed.
        """
        if self._proc is None:
            return []
        _, err = self._proc.communicate()
        if self._proc.returncode:
            raise _git_failed(self._args, err, f"exit status {self._proc.returncode}")
        self._out.seek(0)
        return _file_lists(self._out.read(), max_files_per_commit)


def _file_lists(log: bytes, max_files_per_commit: int) -> list[list[str]]:
    commits = []
    for block in log.split(b"\x01")[1:]:
        paths = {p.lstrip(b"\n") for p in block.split(b"\0")}
        paths.discard(b"")
        # Counted before decoding: a shallow clone's root commit names every file.
        if 1 < len(paths) <= max_files_per_commit:
            commits.append(sorted(p.decode("utf-8", "surrogateescape") for p in paths))
    return commits


def _start(repo_path: Path, args: Sequence[str], out: IO[bytes]) -> subprocess.Popen[bytes]:
    """Start git in ``repo_path`` writing to ``out``; its stderr is kept for errors."""
    try:
        return subprocess.Popen(["git", *_GIT_CONFIG, *args], cwd=repo_path, stdout=out,
                                stderr=subprocess.PIPE, env={**os.environ, **_GIT_ENV})
    except FileNotFoundError as exc:
        raise GitError("git is not installed or not on PATH") from exc
