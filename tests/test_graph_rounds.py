"""Type binding's rounds: skipping a pending value whose inputs did not change gives the
tables that inferring every value in every round gives."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

from pr_context.git import open_repository
from pr_context.graph.names import class_bases
from pr_context.graph.reads import EVERYTHING, ReadLog, RecordedMap, RecordedMemo
from pr_context.graph.tables import CLASS_KINDS, Tables, read_tables
from pr_context.graph.types import bind_types
from pr_context.index.build import IndexOptions, build_index
from pr_context.index.store import IndexStore
from pr_context.progress import SilentProgress
from tests.conftest import GitRepo


def _tables(root: Path, files: dict[str, str]) -> Tables:
    repo = GitRepo(root / "repo")
    for relpath, content in files.items():
        repo.write(relpath, content)
    repo.commit("initial")
    build_index(open_repository(repo.path), "HEAD", root / "index.duckdb", IndexOptions(),
                None, SilentProgress())
    with IndexStore.open_existing(root / "index.duckdb") as store:
        tables = read_tables(store)
    bases = {q: class_bases(tables, q) for q, d in tables.definitions.items()
             if d.kind in CLASS_KINDS}
    return replace(tables, bases={c: b for c, b in bases.items() if b})


def _bound(tables: Tables) -> tuple[object, ...]:
    return (dict(tables.variables), dict(tables.attributes), dict(tables.globals))


# A chain that takes several rounds (each name typed from the one before), a fixture
# returning another fixture, functions returning each other's values (a recursion) and a
# module-level name typed late.
CHAIN = {
    "app/__init__.py": "",
    "app/parts.py": (
        "class Leaf:\n"
        "    def grow(self):\n"
        "        return 1\n"
        "\n"
        "class Branch:\n"
        "    def leaf(self):\n"
        "        return Leaf()\n"
        "\n"
        "class Trunk:\n"
        "    def __init__(self):\n"
        "        self.branch = make_branch()\n"
        "\n"
        "    def top(self):\n"
        "        return self.branch\n"
        "\n"
        "def make_branch():\n"
        "    return Branch()\n"
        "\n"
        "def ping(n):\n"
        "    if n:\n"
        "        return pong(n - 1)\n"
        "    return Leaf()\n"
        "\n"
        "def pong(n):\n"
        "    return ping(n)\n"
        "\n"
        "TRUNK = Trunk()\n"
        "\n"
        "def walk():\n"
        "    a = TRUNK\n"
        "    b = a.top()\n"
        "    c = b.leaf()\n"
        "    d = c\n"
        "    e = d\n"
        "    e.grow()\n"
        "    p = ping(3)\n"
        "    p.grow()\n"
    ),
    "tests/conftest.py": (
        "import pytest\n"
        "from app.parts import Trunk\n"
        "\n"
        "@pytest.fixture\n"
        "def trunk():\n"
        "    return Trunk()\n"
        "\n"
        "@pytest.fixture\n"
        "def same(trunk):\n"
        "    return trunk\n"
    ),
    "tests/test_parts.py": (
        "def test_top(same):\n"
        "    branch = same.top()\n"
        "    branch.leaf().grow()\n"
    ),
}


def test_rounds_skip_nothing_that_changes(tmp_path: Path) -> None:
    tables = _tables(tmp_path, CHAIN)
    skipping, every = bind_types(tables), bind_types(tables, every_round=True)
    assert _bound(skipping) == _bound(every)
    # the chain was typed to its end, through the rounds
    assert skipping.variables[("app.parts.walk", "e")][-1].cls == "app.parts.Leaf"
    assert skipping.variables[("tests.test_parts.test_top", "branch")][-1].cls \
        == "app.parts.Branch"


_VALUES = ("C{i}()", "make{i}()", "G{i}", "G{i}.get{j}()", "self.a{i}", "unknown()")


def _program(rng: random.Random) -> str:
    """Four classes, functions and module-level names whose values name each other, at
    random: chains of several rounds, recursions, names never typed."""
    def value(owner: str = "self.") -> str:
        return rng.choice(_VALUES).format(i=rng.randrange(4), j=rng.randrange(4)).replace(
            "self.", owner)
    lines = []
    for i in range(4):
        lines += [f"class C{i}:", "    def __init__(self):", f"        self.a{i} = {value()}",
                  f"    def get{i}(self):", f"        return {value()}", ""]
    for i in range(4):
        lines += [f"def make{i}():", f"    return {value('G0.')}", ""]
    lines += [f"G{i} = {value('G1.')}" for i in range(4)]
    lines += ["", "def use():", "    v = G2.get3()", "    w = v.get1()", "    w.get0()"]
    return "\n".join(lines) + "\n"


def test_rounds_equal_every_round_on_random_programs(tmp_path: Path) -> None:
    rng = random.Random(20261202)
    tables = _tables(tmp_path, {f"m{n}.py": _program(rng) for n in range(150)})
    assert len(tables.definitions) > 40 * 16
    assert _bound(bind_types(tables)) == _bound(bind_types(tables, every_round=True))


def test_a_memo_hit_reads_what_computing_it_read() -> None:
    log = ReadLog()
    names = RecordedMap([("x", 1)], log, "variables")
    memo = RecordedMemo(log)
    log.start()  # the first inference computes the memo entry
    memo["f"] = None
    assert names.get("x") == 1
    memo["f"] = "C"
    assert log.finish() == {("variables", "x")}
    log.start()  # the second only finds it
    assert "f" in memo
    assert log.finish() == {("variables", "x")}


def test_a_recursive_call_reads_everything() -> None:
    log = ReadLog()
    memo = RecordedMemo(log)
    log.start()
    memo["f"] = None  # computing f ...
    assert "f" in memo  # ... meets f again
    memo["f"] = None
    assert EVERYTHING in log.finish()
