"""Properties: updating the index revision by revision equals a full build at every
revision, and so do shards of it, updated the same way and merged."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pr_context.git import open_repository
from pr_context.index.build import IndexOptions
from pr_context.index.merge import merge_shards
from pr_context.index.shards import ShardSpec
from pr_context.progress import SilentProgress
from tests.conftest import GitRepo
from tests.fakes import FakeEmbedder
from tests.test_index import index, table_dump

CONTENTS = [
    "def alpha(x):\n    return x + 1\n",
    "class Beta:\n    def run(self):\n        return alpha(2)\n",
    "import os\n\nVALUE = os.sep\n\n\ndef gamma():\n    return VALUE\n",
    "# Title\n\nCall `alpha()` here.\n\n## Usage\n\n```python\nBeta().run()\n```\n",
    "export function delta(a: string): string {\n  return a.trim();\n}\n",
    "func Epsilon() int {\n\treturn 1\n}\n",
    "key: value\nother: [1, 2]\n",
]
PATHS = ["a.py", "pkg/b.py", "pkg/sub/c.py", "docs/d.md", "web/e.ts", "f.go", "conf/g.yml",
         "tests/test_a.py"]

add = st.tuples(st.just("add"), st.sampled_from(PATHS), st.sampled_from(CONTENTS))
modify = st.tuples(st.just("modify"), st.integers(0, 100), st.sampled_from(CONTENTS))
delete = st.tuples(st.just("delete"), st.integers(0, 100), st.just(""))
rename = st.tuples(st.just("rename"), st.integers(0, 100), st.sampled_from(PATHS))
step = st.lists(st.one_of(add, modify, delete, rename), min_size=1, max_size=3)


def apply(repo: GitRepo, files: dict[str, str], op: tuple[str, object, str]) -> None:
    kind, target, arg = op
    existing = sorted(files)
    if kind == "add":
        assert isinstance(target, str)
        files[target] = arg
        repo.write(target, arg)
        return
    if not existing:
        return
    path = existing[int(str(target)) % len(existing)]
    if kind == "modify":
        files[path] = files[path] + "\n" + arg
        repo.write(path, files[path])
    elif kind == "delete":
        del files[path]
        repo.remove(path)
    elif arg not in files:
        files[arg] = files.pop(path)
        repo.rename(path, arg)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=4))
def test_incremental_update_equals_full_build(commits: list[list[tuple[str, object, str]]]
                                              ) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = GitRepo(root / "repo")
        files: dict[str, str] = {"a.py": CONTENTS[0]}
        repo.write("a.py", CONTENTS[0])
        repo.commit("start")
        db = root / "incremental.duckdb"
        index(repo, db, embedder=FakeEmbedder())
        for number, ops in enumerate(commits):
            for op in ops:
                apply(repo, files, op)
            repo.commit(f"step {number}")
            updated, _ = index(repo, db, embedder=FakeEmbedder())
            fresh_db = root / f"fresh{number}.duckdb"
            fresh, _ = index(repo, fresh_db, embedder=FakeEmbedder())
            assert updated.incremental
            assert updated.digest == fresh.digest
            assert table_dump(db) == table_dump(fresh_db)


def merged_shards(repo: GitRepo, shards: list[Path], out: Path) -> str:
    for number, shard in enumerate(shards, 1):
        index(repo, shard, embedder=FakeEmbedder(),
              options=IndexOptions(shard=ShardSpec(number, len(shards))))
    return merge_shards(open_repository(repo.path), shards, out, SilentProgress()).digest


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=3), st.integers(1, 4))
def test_merged_shards_equal_a_single_build_at_every_revision(
        commits: list[list[tuple[str, object, str]]], count: int) -> None:
    """Shards built once, then each updated revision by revision from its own file (files
    move between shards as sizes change), merge into a single build's index every time."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = GitRepo(root / "repo")
        files: dict[str, str] = {"a.py": CONTENTS[0], "docs/d.md": CONTENTS[3]}
        for path, text in files.items():
            repo.write(path, text)
        repo.commit("start")
        shards = [root / f"shard{n}.duckdb" for n in range(1, count + 1)]
        for number, ops in enumerate([[], *commits]):
            for op in ops:
                apply(repo, files, op)
            repo.commit(f"step {number}")
            merged = merged_shards(repo, shards, root / "merged.duckdb")
            single, _ = index(repo, root / f"single{number}.duckdb", embedder=FakeEmbedder())
            assert merged == single.digest
            assert table_dump(root / "merged.duckdb") == table_dump(
                root / f"single{number}.duckdb")
