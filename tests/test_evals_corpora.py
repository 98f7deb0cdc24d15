"""Corpora: safe sdist extraction and the deterministic one-commit repository (no network)."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from pr_context.evals.corpora import (
    GitCorpus,
    PypiCorpus,
    commit_tree,
    extract_sdist,
    is_full_sha,
    load_corpora,
    parse_corpora,
    prepare_corpus,
    prepare_pypi_corpus,
)
from pr_context.evals.errors import CorporaFileError, CorpusError, RevisionIntegrityError
from pr_context.models import Sha
from tests.conftest import GitRepo

REPO_ROOT = Path(__file__).resolve().parent.parent
# The commit of DEMO_FILES as "demo 1.0 sdist": fixed here so a change in the procedure,
# or anything on this machine leaking into it, shows up as a changed SHA.
DEMO_SHA = Sha("0c647fcf1001ba937edf3a45e3c229b5dedb4d2a")
DEMO_FILES: dict[str, tuple[bytes, int]] = {
    "PKG-INFO": (b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n", 0o644),
    ".gitignore": (b"*.log\nbuild/\n", 0o644),
    "src/demo/__init__.py": (
        b'"""Demo."""\n\n\ndef greet(name):\n    return f"hi {name}"\n', 0o644),
    "scripts/run.sh": (b"#!/bin/sh\necho run\n", 0o755),
    "notes.log": (b"ignored by .gitignore, kept by git add -f\n", 0o644),
    "docs/index.md": (b"# Demo\r\nWindows line endings stay as they are.\r\n", 0o644),
}


def _info(name: str, **attrs: object) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mtime = 1_700_000_000
    for key, value in attrs.items():
        setattr(info, key, value)
    return info


def write_tarball(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def demo_sdist(path: Path, top: str = "demo-1.0") -> Path:
    members: list[tuple[tarfile.TarInfo, bytes | None]] = [
        (_info(top, type=tarfile.DIRTYPE, mode=0o755), None)]
    for name, (data, mode) in DEMO_FILES.items():
        members.append((_info(f"{top}/{name}", mode=mode), data))
    return write_tarball(path, members)


class FakeDownloader:
    """Stands in for pip download: copies a local sdist and counts the calls."""

    def __init__(self, sdist: Path) -> None:
        self.sdist = sdist
        self.calls: list[str] = []

    def __call__(self, requirement: str, dest: Path) -> Path:
        self.calls.append(requirement)
        dest.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy(self.sdist, dest / self.sdist.name))


def demo_corpus(revision: str = DEMO_SHA) -> PypiCorpus:
    return PypiCorpus(name="demo", requirement="demo==1.0", version="1.0",
                      revision=Sha(revision))


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_extract_strips_the_top_directory_and_keeps_modes(tmp_path: Path) -> None:
    tree = extract_sdist(demo_sdist(tmp_path / "demo-1.0.tar.gz"), tmp_path / "tree")
    assert sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file()) == sorted(
        DEMO_FILES)
    assert (tree / "scripts/run.sh").stat().st_mode & 0o100
    assert (tree / "docs/index.md").read_bytes() == DEMO_FILES["docs/index.md"][0]


def test_deterministic_commit_is_stable_across_preparations(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sdist = demo_sdist(tmp_path / "demo-1.0.tar.gz")
    first = commit_tree(extract_sdist(sdist, tmp_path / "one"), "demo 1.0 sdist")
    # A user config that would change author, line endings or signing must not matter.
    user_config = tmp_path / "gitconfig"
    user_config.write_text("[user]\n\tname = Someone\n\temail = s@example.com\n"
                           "[core]\n\tautocrlf = true\n[commit]\n\tgpgSign = true\n")
    with monkeypatch.context() as env:
        env.setenv("GIT_CONFIG_GLOBAL", str(user_config))
        env.setenv("GIT_AUTHOR_NAME", "Someone Else")
        env.setenv("GIT_INDEX_FILE", str(tmp_path / "elsewhere.index"))
        second = commit_tree(extract_sdist(sdist, tmp_path / "two"), "demo 1.0 sdist")
    assert first == second == DEMO_SHA
    repo = tmp_path / "two"
    assert git(repo, "rev-list", "--count", "HEAD") == "1"
    assert git(repo, "log", "-1", "--format=%an <%ae> %aI|%cn <%ce> %cI|%s") == (
        "pr-context-evals <evals@pr-context.invalid> 2000-01-01T00:00:00+00:00|"
        "pr-context-evals <evals@pr-context.invalid> 2000-01-01T00:00:00+00:00|demo 1.0 sdist")
    assert "notes.log" in git(repo, "ls-files").splitlines()  # despite the sdist's .gitignore
    assert git(repo, "ls-files", "-s", "scripts/run.sh").startswith("100755")


def test_prepare_verifies_and_reuses_the_pinned_commit(tmp_path: Path) -> None:
    download = FakeDownloader(demo_sdist(tmp_path / "demo-1.0.tar.gz"))
    cache = tmp_path / "cache"
    repo = prepare_pypi_corpus(demo_corpus(), cache, download)
    assert repo == cache / "corpora" / "demo-1.0"
    assert git(repo, "rev-parse", "HEAD") == DEMO_SHA
    assert prepare_pypi_corpus(demo_corpus(), cache, download) == repo
    assert download.calls == ["demo==1.0"]  # the second preparation reused the cache
    assert [p.name for p in (cache).iterdir()] == ["corpora"]  # no temporary leftovers


def test_prepare_rebuilds_a_cached_repository_at_another_commit(tmp_path: Path) -> None:
    download = FakeDownloader(demo_sdist(tmp_path / "demo-1.0.tar.gz"))
    stale = GitRepo(tmp_path / "cache" / "corpora" / "demo-1.0")
    stale.write("other.txt", "not the sdist")
    stale.commit()
    repo = prepare_pypi_corpus(demo_corpus(), tmp_path / "cache", download)
    assert git(repo, "rev-parse", "HEAD") == DEMO_SHA and not (repo / "other.txt").exists()
    assert download.calls == ["demo==1.0"]


def test_prepare_refuses_a_commit_that_is_not_the_pinned_revision(tmp_path: Path) -> None:
    download = FakeDownloader(demo_sdist(tmp_path / "demo-1.0.tar.gz"))
    with pytest.raises(RevisionIntegrityError, match=(
            f"revision integrity broken: demo==1.0 sdist commits as {DEMO_SHA}, but "
            f"corpora.yml pins demo at {'0' * 40}")):
        prepare_pypi_corpus(demo_corpus("0" * 40), tmp_path / "cache", download)
    assert list((tmp_path / "cache").iterdir()) == []  # nothing half-prepared is left


def _file(name: str) -> tuple[tarfile.TarInfo, bytes]:
    return _info(name, mode=0o644), b"x\n"


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    return _info(name, type=kind, linkname=target), None


@pytest.mark.parametrize(("members", "message"), [
    ([_file("demo-1.0/ok.py"), _file("demo-1.0/../../evil.py")], "has a '..' component"),
    ([_file("demo-1.0/ok.py"), _file("/tmp/evil.py")], "has an absolute path"),
    ([_file("demo-1.0/ok.py"), _link("demo-1.0/passwd", "../../etc/passwd")],
     "links outside the extracted tree"),
    ([_file("demo-1.0/ok.py"), _link("demo-1.0/up", "..")], "links outside the extracted tree"),
    ([_file("demo-1.0/ok.py"), _link("demo-1.0/abs", "/etc/passwd")],
     "links outside the extracted tree"),
    ([_file("demo-1.0/ok.py"), _link("demo-1.0/hard", "other-1.0/x", tarfile.LNKTYPE)],
     "links outside the extracted tree"),
    ([_file("demo-1.0/ok.py"), (_info("demo-1.0/dev", type=tarfile.CHRTYPE), None)],
     "is not a regular file, directory or link"),
    ([_file("demo-1.0/ok.py"), _file("demo-1.0/.git/config")], "is inside a .git directory"),
    ([_file("demo-1.0/ok.py"), _file("other-1.0/ok.py")], "expected one top-level directory"),
    ([_file("README")], "top-level entry 'README' is not a directory"),
])
def test_unsafe_archives_are_refused_before_anything_is_written(
        tmp_path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]],
        message: str) -> None:
    sdist = write_tarball(tmp_path / "bad.tar.gz", members)
    (tmp_path / "out").mkdir()
    with pytest.raises(CorpusError, match=f"refusing to extract bad.tar.gz: .*{message}"):
        extract_sdist(sdist, tmp_path / "out" / "tree")
    assert list((tmp_path / "out").iterdir()) == []
    assert not (tmp_path / "evil.py").exists()


def test_links_inside_the_tree_are_kept(tmp_path: Path) -> None:
    sdist = write_tarball(tmp_path / "ok.tar.gz", [
        _file("demo-1.0/src/real.py"), _link("demo-1.0/docs/real.py", "../src/real.py")])
    tree = extract_sdist(sdist, tmp_path / "tree")
    assert (tree / "docs/real.py").is_symlink()


def test_a_corrupt_archive_is_a_corpus_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(b"not a tarball")
    with pytest.raises(CorpusError, match=re.escape("cannot extract broken.tar.gz")):
        extract_sdist(broken, tmp_path / "tree")


def test_shipped_corpora_file_pins_full_revisions() -> None:
    corpora = load_corpora(REPO_ROOT / "evals" / "corpora.yml")
    pypi = {n: c for n, c in corpora.items() if isinstance(c, PypiCorpus)}
    assert {"werkzeug", "rich", "pluggy", "packaging", "itsdangerous", "django"} <= set(pypi)
    assert all(is_full_sha(c.revision) for c in pypi.values())
    assert pypi["werkzeug"].requirement == "werkzeug==3.1.3"
    assert corpora["pr-context"] == GitCorpus("pr-context", REPO_ROOT / "evals")


@pytest.mark.parametrize(("data", "message"), [
    ({}, "expected a mapping of corpus name"),
    ({"w": {"pypi": "werkzeug>=3", "revision": "a" * 40}}, "must be an exact pin"),
    ({"w": {"pypi": "werkzeug==3.1.3", "revision": "abc"}}, "full 40-hex commit SHA"),
    ({"w": {"pypi": "werkzeug==3.1.3"}}, "expected exactly the keys pypi and revision"),
    ({"w": {"git": ".", "revision": "a" * 40}}, "expected exactly the keys"),
    ({"w": "werkzeug==3.1.3"}, "expected {pypi"),
    ({"../w": {"git": "."}}, "names use letters"),
])
def test_invalid_corpora_files_are_refused(data: object, message: str) -> None:
    with pytest.raises(CorporaFileError, match=message.replace("{", r"\{")):
        parse_corpora(data, Path("/"), "corpora.yml")


def test_git_corpus_is_the_repository_itself(
        tmp_path: Path, make_repo: Callable[..., GitRepo]) -> None:
    repo = make_repo({"evals/corpora.yml": "self: {git: '..'}\n", "a.py": "x = 1\n"})
    corpora_file = repo.path / "evals" / "corpora.yml"
    assert prepare_corpus("self", tmp_path / "cache", corpora_file) == repo.path.resolve()
    with pytest.raises(CorporaFileError, match="no corpus named 'rich'"):
        prepare_corpus("rich", tmp_path / "cache", corpora_file)
