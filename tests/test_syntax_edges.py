"""Dunder methods called by syntax: where Python runs them, and the linked tests they give.

The uses are found in real parsed code; the callers and links come from a real index of a
real git repository. Expectations are computed by hand from the sources below.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pr_context.graph import load_graph
from pr_context.graph.syntax import SyntaxCallers, is_dunder, syntax_uses
from pr_context.index.store import IndexStore
from pr_context.links import linked_tests
from pr_context.links.reach import Reacher
from tests.conftest import GitRepo
from tests.test_index import index
from tests.test_links import Analysis, analyse_edit

BOX = (
    "class Box:\n"                                   # 1
    "    def __init__(self, items):\n"               # 2
    "        self.items = list(items)\n"             # 3
    "\n"                                             # 4
    "    def __contains__(self, item):\n"            # 5
    "        return item in self.items\n"            # 6
    "\n"                                             # 7
    "    def __eq__(self, other):\n"                 # 8
    "        return self.items == other.items\n"     # 9
    "\n"                                             # 10
    "    def __len__(self):\n"                       # 11
    "        return len(self.items)\n"               # 12
    "\n"                                             # 13
    "    def __repr__(self):\n"                      # 14
    "        return f'Box({self.items!r})'\n"        # 15
    "\n"                                             # 16
    "    def __copy__(self):\n"                      # 17
    "        return Box(self.items)\n"               # 18
    "\n"                                             # 19
    "    def __call__(self, item):\n"                # 20
    "        return item in self\n"                  # 21
    "\n"                                             # 22
    "\n"                                             # 23
    "def make_box() -> Box:\n"                       # 24
    "    return Box([1])\n"                          # 25
)
TESTS = (
    "import copy\n"                                  # 1
    "\n"                                             # 2
    "from pkg.box import Box, make_box\n"            # 3
    "\n"                                             # 4
    "\n"                                             # 5
    "def test_contains():\n"                         # 6
    "    box = Box([1])\n"                           # 7
    "    assert 1 in box\n"                          # 8
    "\n"                                             # 9
    "\n"                                             # 10
    "def test_equal():\n"                            # 11
    "    assert make_box() == Box([1])\n"            # 12
    "\n"                                             # 13
    "\n"                                             # 14
    "def test_size_and_text():\n"                    # 15
    "    box = Box([1])\n"                           # 16
    "    assert len(box) == 1\n"                     # 17
    "    assert str(box) == 'Box([1])'\n"            # 18
    "\n"                                             # 19
    "\n"                                             # 20
    "def test_copy():\n"                             # 21
    "    assert copy.copy(make_box()).items == [1]\n"  # 22
    "\n"                                             # 23
    "\n"                                             # 24
    "def test_call():\n"                             # 25
    "    box = Box([2])\n"                           # 26
    "    assert box(2)\n"                            # 27
    "    assert Box([3])\n"                          # 28
    "\n"                                             # 29
    "\n"                                             # 30
    "def test_unknown(thing):\n"                     # 31
    "    assert 1 in thing\n"                        # 32
)
PROJECT = {"pkg/__init__.py": "", "pkg/box.py": BOX, "tests/__init__.py": "",
           "tests/test_box.py": TESTS}


@pytest.fixture(scope="module")
def box_case(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    edited = BOX.replace("return item in self.items", "return self.items.count(item) > 0")
    return analyse_edit(tmp_path_factory.mktemp("syntax"), PROJECT, {"pkg/box.py": edited})


def sites(case: Analysis, method: str) -> set[tuple[str, int, str | None]]:
    found = SyntaxCallers(case.graph.tables, Reacher(case.graph, case.head)._source)
    return {(c.path, c.line, (c.enclosing or "").rsplit(".", 1)[-1])
            for c in found.of(f"pkg.box.Box.{method}")}


@pytest.mark.parametrize(("method", "expected"), [
    # `1 in box` where box = Box(...); `item in self` inside Box; not `1 in thing`
    ("__contains__", {("tests/test_box.py", 8, "test_contains"),
                      ("pkg/box.py", 21, "__call__")}),
    # both sides of `make_box() == Box([1])`: the reflected __eq__ runs when one declines
    ("__eq__", {("tests/test_box.py", 12, "test_equal")}),
    # len(box); `assert Box([3])` tests a Box's truth, which is its __len__
    ("__len__", {("tests/test_box.py", 17, "test_size_and_text"),
                 ("tests/test_box.py", 28, "test_call")}),
    # str(box) on a class without __str__ runs __repr__
    ("__repr__", {("tests/test_box.py", 18, "test_size_and_text")}),
    ("__copy__", {("tests/test_box.py", 22, "test_copy")}),
    # box(2) calls the instance; Box([2]) calls the class (its constructor), not __call__
    ("__call__", {("tests/test_box.py", 27, "test_call")}),
])
def test_syntax_calls_a_dunder_of_an_evident_class(box_case: Analysis, method: str,
                                                   expected: set[tuple[str, int, str]]) -> None:
    assert sites(box_case, method) == expected


def test_what_a_file_may_call_reads_that_file_alone(box_case: Analysis) -> None:
    """Tables made without their syntax uses: a file's text is read when the file is
    asked about, every file's when a method is."""
    read: list[str] = []

    def text(path: str) -> str | None:
        read.append(path)
        return Reacher(box_case.graph, box_case.head)._source(path)

    found = SyntaxCallers(replace(box_case.graph.tables, syntax=None), text)
    assert found.names_in("tests/test_box.py")["tests.test_box.test_call"] >= {
        "__call__", "__bool__", "__len__"}
    assert read == ["tests/test_box.py"]
    assert {c.line for c in found.of("pkg.box.Box.__call__")} == {27}


def test_both_sides_of_a_comparison_are_asked() -> None:
    uses = syntax_uses("a < b\nx[k] += 1\nf'{v!r}'\n'%s %s' % (p, q)\n")
    assert {(u.line, u.operand, u.names) for u in uses if u.names} == {
        (1, "a", ("__lt__",)), (1, "b", ("__gt__",)),
        (2, "x[k]", ("__iadd__", "__add__")), (2, "x", ("__getitem__",)),
        (2, "x", ("__setitem__",)), (2, "k", ("__hash__",)),
        (3, "v", ("__repr__",)), (4, "p", ("__str__", "__repr__")),
        (4, "q", ("__str__", "__repr__")),
    }


def test_code_that_does_not_parse_has_no_uses() -> None:
    assert syntax_uses("def broken(:\n") == ()


LINKED = {
    "pkg/__init__.py": "", "pkg/box.py": BOX, "tests/__init__.py": "",
    # applies `in` to a Box: the syntax path
    "tests/test_contains.py": "from pkg.box import Box\n\n\ndef test_in():\n"
                              "    assert 1 in Box([1])\n",
    # holds a Box and applies `in` to something of unknown class
    "tests/test_lookup.py": "from pkg.box import Box\n\n\ndef test_lookup():\n"
                            "    boxes = {'a': Box([1])}\n    assert 1 in boxes['a']\n",
    # holds a Box and never tests membership
    "tests/test_holds.py": "from pkg.box import Box\n\n\ndef test_holds():\n"
                           "    assert Box([1]).items == [1]\n",
}


def test_a_dunder_links_the_tests_running_its_syntax(tmp_path: Path) -> None:
    edited = BOX.replace("return item in self.items", "return self.items.count(item) > 0")
    case = analyse_edit(tmp_path, LINKED, {"pkg/box.py": edited})
    change = case.changes["pkg.box.Box.__contains__"]
    reach = Reacher(case.graph, case.head).reach(change.qualified_name)
    items = linked_tests(change, case.graph, case.head, case.touched, reach=reach)
    assert [e.path for e in items] == ["tests/test_contains.py", "tests/test_lookup.py"]
    assert "by syntax" in items[0].reason
    assert "holds Box objects" in items[1].reason
    # the walk (which the selection runs whole, for safety) keeps every test holding Box
    # objects, saying which ones are seen using __contains__; the syntax path is direct
    held = {r.path: r.unused for r in reach.tests if r.through}
    assert held == {"tests/test_lookup.py": (), "tests/test_holds.py": ("__contains__",)}
    assert {(r.path, r.verb, r.hops) for r in reach.tests if not r.through} == {
        ("tests/test_contains.py", "syntax", 1)}


REAL_CODE = sorted(p for folder in ("graph", "links")
                   for p in (Path(__file__).resolve().parents[1] / "pr_context" / folder)
                   .glob("*.py"))


def test_the_index_stores_the_uses_a_parse_of_each_file_finds(tmp_path: Path) -> None:
    """Over real code (this project's own graph and links packages): the uses stored when
    a file is indexed are those its text gives, and the callers they lead to are those a
    parse of every file at question time finds (with the Box files, whose methods the
    syntax calls)."""
    repo = GitRepo(tmp_path / "repo")
    texts = {**PROJECT, **{f"real/{p.parent.name}/{p.name}": p.read_text(encoding="utf-8")
                           for p in REAL_CODE}}
    for path, text in texts.items():
        repo.write(path, text)
    repo.commit("real code")
    index(repo, tmp_path / "index.duckdb")
    with IndexStore.open_existing(tmp_path / "index.duckdb") as store:
        graph = load_graph(store)
    stored = graph.tables.syntax
    assert stored is not None
    assert sum(map(len, stored.values())) > 1000
    assert {p: stored.get(p, ()) for p in texts} == {p: syntax_uses(t) for p, t in texts.items()}
    parsed = replace(graph.tables, syntax=None)
    dunders = [q for q, d in graph.tables.definitions.items() if is_dunder(d.name)]
    assert dunders
    answers = {m: SyntaxCallers(graph.tables, texts.get).of(m) for m in dunders}
    assert answers == {m: SyntaxCallers(parsed, texts.get).of(m) for m in dunders}
    assert len([a for a in answers.values() if a]) >= 5
