"""Evaluation corpora: real code nobody here wrote, fetched at run time, never committed.

``evals/corpora.yml`` maps a corpus name (the ``repo`` of a case) to one of:

- ``{pypi: "werkzeug==3.1.3", revision: "<sha>"}``: the project's sdist from PyPI, unpacked
  and committed as the single commit of a fresh git repository. The commit is built
  deterministically (fixed author, committer, dates and message; no user or system git
  config), so its SHA depends only on the sdist's files and must equal ``revision``.
- ``{git: "."}``: an existing git repository, the path relative to the directory holding
  corpora.yml (``.`` is the repository corpora.yml lives in). Nothing is downloaded; each
  case names the commit it was labelled at.

Side effects: ``prepare_corpus`` runs ``pip download`` (network) and git, and writes under
the cache directory. This module is the harness's I/O edge for corpora; the rest of
``pr_context.evals`` only reads the paths it returns.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from pr_context.evals.errors import CorporaFileError, CorpusError, RevisionIntegrityError
from pr_context.models import Sha

__all__ = [
    "DEFAULT_CORPORA_PATH",
    "Corpus",
    "Downloader",
    "GitCorpus",
    "PypiCorpus",
    "checkout_copy",
    "commit_tree",
    "corpus_repository",
    "download_sdist",
    "extract_sdist",
    "git_toplevel",
    "is_full_sha",
    "load_corpora",
    "parse_corpora",
    "prepare_corpus",
    "prepare_pypi_corpus",
]

DEFAULT_CORPORA_PATH = Path("evals/corpora.yml")

# Every input to the commit object is fixed, so the SHA depends only on the files.
COMMIT_IDENTITY = "pr-context-evals"
COMMIT_EMAIL = "evals@pr-context.invalid"
COMMIT_DATE = "2000-01-01T00:00:00+0000"
_COMMIT_ENV = {
    "GIT_AUTHOR_NAME": COMMIT_IDENTITY,
    "GIT_AUTHOR_EMAIL": COMMIT_EMAIL,
    "GIT_AUTHOR_DATE": COMMIT_DATE,
    "GIT_COMMITTER_NAME": COMMIT_IDENTITY,
    "GIT_COMMITTER_EMAIL": COMMIT_EMAIL,
    "GIT_COMMITTER_DATE": COMMIT_DATE,
    # User and system config (autocrlf, hooks path, signing, templates) must not change it.
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
}
# Settings git would otherwise probe from the file system or read from config.
_COMMIT_CONFIG = (
    "-c", "core.autocrlf=false", "-c", "core.fileMode=true", "-c", "core.symlinks=true",
    "-c", "commit.gpgSign=false", "-c", "core.hooksPath=/dev/null",
)

_SHA = re.compile(r"[0-9a-f]{40}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_PIN = re.compile(
    r"(?P<project>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9][A-Za-z0-9.+!_-]*)"
)
_SDIST_SUFFIX = ".tar.gz"


@dataclass(frozen=True)
class PypiCorpus:
    """A project's sdist from PyPI, committed once, deterministically."""

    name: str
    requirement: str  # an exact pin: "werkzeug==3.1.3"
    version: str
    revision: Sha  # the SHA the deterministic commit must have


@dataclass(frozen=True)
class GitCorpus:
    """An existing git repository; each case pins its own commit."""

    name: str
    path: Path  # absolute


Corpus = PypiCorpus | GitCorpus

Downloader = Callable[[str, Path], Path]
"""``download(requirement, dest_dir) -> sdist path``; the seam tests replace (no network)."""


def is_full_sha(value: object) -> bool:
    """Whether ``value`` is a full, lower-case, 40-hex commit SHA."""
    return isinstance(value, str) and _SHA.fullmatch(value) is not None


def load_corpora(path: Path = DEFAULT_CORPORA_PATH) -> dict[str, Corpus]:
    """Read and validate corpora.yml. :raises CorporaFileError: unreadable or invalid."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise CorporaFileError(f"cannot read corpora file {path}: {exc}") from exc
    return parse_corpora(data, base_dir=path.resolve().parent, source=str(path))


def parse_corpora(data: object, base_dir: Path, source: str = "corpora.yml") -> dict[str, Corpus]:
    """Validate the parsed YAML of corpora.yml; ``git`` paths are relative to ``base_dir``."""
    if not isinstance(data, dict) or not data:
        raise CorporaFileError(f"{source}: expected a mapping of corpus name to entry")
    return {str(name): _parse_entry(str(name), entry, base_dir, source)
            for name, entry in data.items()}


def _parse_entry(name: str, entry: object, base_dir: Path, source: str) -> Corpus:
    where = f"{source}: corpus {name!r}"
    if _NAME.fullmatch(name) is None:
        raise CorporaFileError(f"{where}: names use letters, digits, '.', '_' and '-'")
    if not isinstance(entry, dict):
        raise CorporaFileError(f"{where}: expected {{pypi: ..., revision: ...}} or {{git: ...}}")
    keys = set(entry)
    if keys == {"pypi", "revision"}:
        return _parse_pypi(name, entry["pypi"], entry["revision"], where)
    if keys == {"git"} and isinstance(entry["git"], str) and entry["git"]:
        return GitCorpus(name=name, path=(base_dir / entry["git"]).resolve())
    raise CorporaFileError(
        f"{where}: expected exactly the keys pypi and revision, or git; got {sorted(keys)}"
    )


def _parse_pypi(name: str, requirement: object, revision: object, where: str) -> PypiCorpus:
    match = _PIN.fullmatch(requirement) if isinstance(requirement, str) else None
    if match is None:
        raise CorporaFileError(f"{where}: pypi must be an exact pin like 'name==1.2.3', "
                               f"got {requirement!r}")
    if not is_full_sha(revision):
        raise CorporaFileError(f"{where}: revision must be a full 40-hex commit SHA "
                               f"(run prepare_corpus once to learn it), got {revision!r}")
    return PypiCorpus(name=name, requirement=str(requirement), version=match["version"],
                      revision=Sha(str(revision)))


def prepare_corpus(name: str, cache_dir: Path, corpora_path: Path = DEFAULT_CORPORA_PATH,
                   download: Downloader | None = None) -> Path:
    """The path of corpus ``name``'s git repository, prepared under ``cache_dir`` if needed.

    A PyPI corpus is downloaded, extracted and committed once, then reused while its HEAD
    is the pinned revision. A git corpus is returned as it is (its commits are the cases').

    :raises CorporaFileError: corpora.yml is invalid or has no such corpus.
    :raises CorpusError: the download, extraction or commit failed.
    :raises RevisionIntegrityError: the prepared commit is not the pinned revision.
    """
    corpora = load_corpora(corpora_path)
    if name not in corpora:
        raise CorporaFileError(f"{corpora_path}: no corpus named {name!r} "
                               f"(known: {', '.join(sorted(corpora))})")
    return corpus_repository(corpora[name], cache_dir, download)


def corpus_repository(corpus: Corpus, cache_dir: Path, download: Downloader | None = None
                      ) -> Path:
    """Like ``prepare_corpus`` for an already loaded corpus entry."""
    if isinstance(corpus, GitCorpus):
        return git_toplevel(corpus.path)
    return prepare_pypi_corpus(corpus, cache_dir, download or download_sdist)


def prepare_pypi_corpus(corpus: PypiCorpus, cache_dir: Path, download: Downloader) -> Path:
    """Download, extract and commit ``corpus`` under ``cache_dir``; reuse a matching one.

    The repository is built in a temporary directory and moved into place only once its
    HEAD is verified, so an interrupted or rejected build never looks prepared.
    """
    target = cache_dir / "corpora" / f"{corpus.name}-{corpus.version}"
    if (target / ".git").is_dir() and _head(target) == corpus.revision:
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=f".{corpus.name}-") as tmp:
        work = Path(tmp)
        sdist = download(corpus.requirement, work / "download")
        tree = extract_sdist(sdist, work / "tree")
        sha = commit_tree(tree, f"{corpus.name} {corpus.version} sdist")
        if sha != corpus.revision:
            raise RevisionIntegrityError(
                f"revision integrity broken: {corpus.requirement} sdist commits as {sha}, "
                f"but corpora.yml pins {corpus.name} at {corpus.revision}; the sdist on "
                f"PyPI or the commit procedure changed. Cases labelled at the pinned "
                f"revision cannot be scored against it."
            )
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        tree.rename(target)
    return target


def download_sdist(requirement: str, dest: Path) -> Path:
    """``pip download`` the sdist (never a wheel) of ``requirement`` into ``dest``.

    pip may build the project's metadata, which runs its build backend in an isolated
    environment; nothing else of the project is run.
    """
    dest.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
               "--no-binary", ":all:", "--disable-pip-version-check", requirement,
               "-d", str(dest)]
    try:
        subprocess.run(command, check=True, capture_output=True)
    except subprocess.CalledProcessError as exc:
        detail = exc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise CorpusError(f"pip download {requirement} failed: "
                          f"{detail[-1] if detail else exc}") from exc
    sdists = sorted(dest.glob(f"*{_SDIST_SUFFIX}"))
    if len(sdists) != 1:
        raise CorpusError(f"pip download {requirement}: expected one {_SDIST_SUFFIX} sdist "
                          f"in {dest}, found {[p.name for p in dest.iterdir()]}")
    return sdists[0]


def extract_sdist(sdist: Path, dest: Path) -> Path:
    """Extract ``sdist`` (.tar.gz) to ``dest``, without its single top-level directory.

    Refuses, before writing anything, archives with absolute paths, ``..`` components,
    links that point outside the archive, devices, or more than one top-level entry.

    :raises CorpusError: the archive is unreadable or unsafe.
    """
    staging = dest.with_name(dest.name + ".extract")
    try:
        with tarfile.open(sdist, "r:gz") as archive:
            members = archive.getmembers()
            top = _check_members(members, sdist.name)
            # The "data" filter re-checks every member as it is written: defence in depth.
            archive.extractall(staging, members=members, filter="data")
        (staging / top).rename(dest)
        staging.rmdir()
    except (OSError, tarfile.TarError) as exc:
        raise CorpusError(f"cannot extract {sdist.name}: {exc}") from exc
    return dest


def _check_members(members: Sequence[tarfile.TarInfo], archive: str) -> str:
    """The single top-level directory name; raise CorpusError on any unsafe member."""
    for member in members:
        problem = _member_problem(member)
        if problem:
            raise CorpusError(f"refusing to extract {archive}: member {member.name!r} {problem}")
    tops = {PurePosixPath(m.name).parts[0] for m in members}
    if len(tops) != 1:
        raise CorpusError(f"refusing to extract {archive}: expected one top-level directory, "
                          f"found {sorted(tops) or 'none'}")
    top = tops.pop()
    for member in members:
        if PurePosixPath(member.name).parts == (top,) and not member.isdir():
            raise CorpusError(f"refusing to extract {archive}: its top-level entry {top!r} "
                              "is not a directory")
        if (member.issym() or member.islnk()) and _link_target(member)[:1] != (top,):
            raise CorpusError(f"refusing to extract {archive}: member {member.name!r} links "
                              f"outside the extracted tree ({member.linkname!r})")
    return top


def _member_problem(member: tarfile.TarInfo) -> str | None:
    name = PurePosixPath(member.name)
    if name.is_absolute() or member.name.startswith("\\"):
        return "has an absolute path"
    if ".." in name.parts:
        return "has a '..' component"
    if not name.parts:
        return "has an empty name"
    if ".git" in name.parts:
        return "is inside a .git directory"
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        return "is not a regular file, directory or link"
    return None


def _link_target(member: tarfile.TarInfo) -> tuple[str, ...]:
    """Where a link points, as archive-relative parts; () when it climbs above the root."""
    target = PurePosixPath(member.linkname)
    if target.is_absolute():
        return ()
    # A symlink resolves against its own directory, a hard link against the archive root.
    base = PurePosixPath(member.name).parent.parts if member.issym() else ()
    parts: list[str] = list(base)
    for part in target.parts:
        if part == "..":
            if not parts:
                return ()
            parts.pop()
        elif part != ".":
            parts.append(part)
    return tuple(parts)


def commit_tree(tree: Path, message: str) -> Sha:
    """Make ``tree`` a git repository with exactly one deterministic commit; return its SHA.

    ``git add -A -f`` also adds files an sdist's own .gitignore would hide.
    """
    _git(tree, "init", "-q", "-b", "main")
    _git(tree, "add", "-A", "-f")
    _git(tree, "commit", "-q", "--no-verify", "--allow-empty", "-m", message)
    return Sha(_git(tree, "rev-parse", "HEAD"))


def checkout_copy(source: Path, dest: Path, revision: str) -> Path:
    """A clone of ``source`` at ``dest`` with ``revision`` checked out (detached, clean).

    An existing clone is reused; a commit made on it with ``commit_tree`` is a child of
    ``revision``, as deterministic as the corpus commit itself.
    """
    if not (dest / ".git").is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True)
        _git(dest.parent, "clone", "-q", "--no-checkout", str(source.resolve()), dest.name)
    _git(dest, "checkout", "-q", "--force", "--detach", revision)
    _git(dest, "clean", "-q", "-f", "-d", "-x")
    return dest


def git_toplevel(path: Path) -> Path:
    """The work-tree root of the repository containing ``path``."""
    if not path.is_dir():
        raise CorpusError(f"git corpus {path} does not exist")
    return Path(_git(path, "rev-parse", "--show-toplevel"))


def _head(repo: Path) -> str | None:
    try:
        return _git(repo, "rev-parse", "--verify", "--quiet", "HEAD")
    except CorpusError:
        return None


def _git_env() -> dict[str, str]:
    """The environment without any inherited GIT_* variable (GIT_DIR, GIT_INDEX_FILE, ...
    would redirect or alter the commit), plus the fixed identity and dates."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**inherited, **_COMMIT_ENV}


def _git(cwd: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", *_COMMIT_CONFIG, *args], cwd=cwd, check=True,
                              capture_output=True, env=_git_env())
    except FileNotFoundError as exc:
        raise CorpusError("git is not installed or not on PATH") from exc
    except subprocess.CalledProcessError as exc:
        detail = exc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise CorpusError(f"git {args[0]} in {cwd} failed: {detail[-1] if detail else exc}"
                          ) from exc
    return done.stdout.decode().strip()
