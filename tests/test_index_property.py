"""Property: updating the index revision by revision equals a full build at every revision."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
