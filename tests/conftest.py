"""Shared fixtures: real git repositories in temp dirs, a deterministic embedder."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pr_context.cli import ONNX_CACHE_ENV
from pr_context.embed import DEFAULT_MODEL, SentenceTransformerEmbedder, make_embedder
from pr_context.embed_onnx import OnnxEmbedder
from pr_context.git import open_repository
from pr_context.graph import SymbolGraph, load_graph
from pr_context.index.build import IndexOptions, build_index
from pr_context.index.store import IndexStore
from pr_context.progress import SilentProgress
from tests.fakes import FakeEmbedder

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}


class GitRepo:
    """A real git repository in a temp dir, with helpers to write and commit files."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=self.path, check=True, capture_output=True,
                              env={**os.environ, **_GIT_ENV})
        return done.stdout.decode()

    def write(self, relpath: str, content: str | bytes) -> None:
        target = self.path / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")

    def remove(self, relpath: str) -> None:
        (self.path / relpath).unlink()

    def rename(self, old: str, new: str) -> None:
        (self.path / new).parent.mkdir(parents=True, exist_ok=True)
        (self.path / old).rename(self.path / new)

    def commit(self, message: str = "change") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., GitRepo]:
    """Create a git repository, optionally with files committed as its first commit."""
    counter = iter(range(1000))

    def make(files: dict[str, str | bytes] | None = None) -> GitRepo:
        repo = GitRepo(tmp_path / f"repo{next(counter)}")
        if files:
            for relpath, content in files.items():
                repo.write(relpath, content)
            repo.commit("initial")
        return repo

    return make


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture(scope="session")
def real_embedder() -> SentenceTransformerEmbedder:
    """The default model, loaded once per test session (a few seconds)."""
    embedder = SentenceTransformerEmbedder()
    embedder.embed(["load the model once"])
    return embedder


@pytest.fixture(scope="session", autouse=True)
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One cache of ONNX graphs per test session, also for the CLI processes tests start
    (through the environment): the user's own cache is never touched."""
    path = tmp_path_factory.mktemp("onnx-cache")
    before = os.environ.get(ONNX_CACHE_ENV)
    os.environ[ONNX_CACHE_ENV] = str(path)
    yield path
    if before is None:
        os.environ.pop(ONNX_CACHE_ENV, None)
    else:
        os.environ[ONNX_CACHE_ENV] = before


@pytest.fixture(scope="session")
def onnx_embedders(onnx_cache: Path) -> dict[str, OnnxEmbedder]:
    """Both ONNX backends of the default model, each graph built once per session."""
    made = {}
    for backend in ("onnx", "onnx-int8"):
        embedder = make_embedder(DEFAULT_MODEL, backend, onnx_cache, lambda _: None)
        assert isinstance(embedder, OnnxEmbedder)
        embedder.embed(["build once"])
        made[backend] = embedder
    return made


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory
           ) -> Callable[[dict[str, str]], SymbolGraph]:
    """A real index of a repository with ``files``, and its graph; built once per file set."""
    built: dict[int, SymbolGraph] = {}

    def build(files: dict[str, str]) -> SymbolGraph:
        if id(files) not in built:
            root = tmp_path_factory.mktemp("graph")
            repo = GitRepo(root / "repo")
            for relpath, content in files.items():
                repo.write(relpath, content)
            repo.commit("initial")
            build_index(open_repository(repo.path), "HEAD", root / "index.duckdb",
                        IndexOptions(), None, SilentProgress())
            with IndexStore.open_existing(root / "index.duckdb") as store:
                built[id(files)] = load_graph(store)
        return built[id(files)]
    return build
