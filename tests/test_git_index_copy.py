"""The server's private, refreshed copy of git's index (git.IndexCopy), on real repositories."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pr_context.git import IndexCopy, open_repository, resolve_revision, worktree_changes
from tests.conftest import GitRepo

FILES = {"pkg/a.py": "A = 1\n", "pkg/b.py": "B = 2\n", "docs/c.md": "# C\n"}


def _changes(repo: GitRepo, index: Path | None) -> list[tuple[str, str]]:
    opened = open_repository(repo.path)
    found = worktree_changes(opened, resolve_revision(opened, "HEAD"), index)
    return [(c.status, c.path) for c in found]


def test_reads_through_the_copy_equal_reads_of_the_index(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(FILES)
    copy = IndexCopy(open_repository(repo.path), tmp_path / "git-index")
    user_index = repo.path / ".git" / "index"
    states: list[Callable[[], object]] = [
        lambda: None,
        lambda: repo.write("pkg/a.py", "A = 10\n"),  # modified, not staged
        lambda: repo.write("pkg/new.py", "N = 3\n"),  # untracked
        lambda: repo.git("add", "pkg/new.py"),  # staged: the index changed
        lambda: repo.remove("docs/c.md"),  # gone from the work tree
        lambda: repo.git("rm", "--cached", "-q", "pkg/b.py"),  # untracked again
    ]
    for change in states:
        change()
        before = user_index.read_bytes()
        assert _changes(repo, copy.path()) == _changes(repo, None)
        assert user_index.read_bytes() == before  # the user's index is never written
    assert _changes(repo, copy.path()) == [
        ("deleted", "docs/c.md"), ("modified", "pkg/a.py"), ("added", "pkg/b.py"),
        ("added", "pkg/new.py")]


def test_without_an_index_file_the_repository_is_read_as_it_is(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(FILES)
    (repo.path / ".git" / "index").unlink()  # as after `git read-tree --empty`, unwritten
    copy = IndexCopy(open_repository(repo.path), tmp_path / "git-index")
    assert copy.path() is None
    # no index: every file is untracked, as git itself says
    assert _changes(repo, copy.path()) == [("added", path) for path in sorted(FILES)]
