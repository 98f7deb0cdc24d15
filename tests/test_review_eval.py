"""The metric functions of evals/review/run_review_eval.py on hand-computed examples."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).parents[1] / "evals" / "review" / "run_review_eval.py"
sys.path.insert(0, str(_PATH.parent))  # the evaluator imports caller_sample beside it
_SPEC = importlib.util.spec_from_file_location("run_review_eval", _PATH)
assert _SPEC and _SPEC.loader
ev = importlib.util.module_from_spec(_SPEC)
sys.modules["run_review_eval"] = ev  # dataclasses look their module up by name
_SPEC.loader.exec_module(ev)


def ranked(*pairs: tuple[str, float]) -> list[ev.Ranked]:
    return [ev.Ranked(path, (key,)) for path, key in pairs]


@pytest.mark.parametrize(("items", "relevant", "k", "expected"), [
    # strict order: a and c within 2, b at 3 is not
    ([("a", 1), ("b", 3), ("c", 2)], {"a", "b"}, 2, 0.5),
    ([("a", 1), ("b", 3), ("c", 2)], {"a", "b"}, 3, 1.0),
    # four tied for places 1-4, k=2: each relevant one is in with probability 2/4
    ([("a", 1), ("b", 1), ("c", 1), ("d", 1)], {"a", "b"}, 2, 0.5),
    # x first; then a tie of three for places 2-4, k=3 leaves 2 of 3 places
    ([("x", 0), ("a", 1), ("b", 1), ("c", 1)], {"a"}, 3, 2 / 3),
    # a relevant file never listed counts as missed
    ([("a", 1)], {"a", "z"}, 5, 0.5),
    ([], {"a"}, 5, 0.0),
])
def test_recall_at_k(items, relevant, k, expected):
    assert ev.recall_at_k(ranked(*items), relevant, k) == pytest.approx(expected)


def test_recall_at_k_without_relevant_files_is_undefined():
    assert ev.recall_at_k(ranked(("a", 1)), set(), 5) is None


def test_union_by_best_rank_keeps_each_paths_best_rank_then_score():
    first = [{"path": "t/a.py", "rank": 1, "score": 0.9}, {"path": "t/b.py", "rank": 2,
                                                          "score": 0.5}]
    second = [{"path": "t/b.py", "rank": 1, "score": 0.7}, {"path": "t/c.py", "rank": 2,
                                                          "score": 0.6}]
    union = {r.path: r.key for r in ev.union_by_best_rank([first, second])}
    assert union == {"t/a.py": (1.0, -0.9), "t/b.py": (1.0, -0.7), "t/c.py": (2.0, -0.6)}
    # a ranks above b (higher score at the same rank); k=1 keeps only a
    assert ev.recall_at_k(ev.union_by_best_rank([first, second]), {"t/b.py"}, 1) == 0.0


def test_docs_top_k_per_symbol_then_union():
    items = [{"path": "docs/b.rst", "rank": 2}, {"path": "docs/a.rst", "rank": 1},
             {"path": "docs/a.rst", "rank": 3}, {"path": "docs/c.rst", "rank": 4},
             {"path": "docs/d.rst", "rank": 5}]
    paths = ev.doc_paths_per_symbol(items)
    assert paths == ["docs/a.rst", "docs/b.rst", "docs/c.rst", "docs/d.rst"]
    union = ev.top_docs_union([paths, ["docs/d.rst"]], 3)
    assert union == {"docs/a.rst", "docs/b.rst", "docs/c.rst", "docs/d.rst"}
    assert ev.set_recall(union, {"docs/d.rst", "docs/x.rst"}) == 0.5
    assert ev.set_recall(union, set()) is None


def test_mean_skips_undefined_values_and_counts_the_rest():
    assert ev.mean([1.0, None, 0.0, 0.5]) == (0.5, 3)
    assert ev.mean([None]) == (None, 0)


def test_precision_recall():
    predicted, truth = {("a", 1), ("a", 2), ("b", 9)}, {("a", 1), ("c", 3)}
    assert ev.precision_recall(predicted, truth) == (pytest.approx(1 / 3), 0.5)
    assert ev.precision_recall(set(), truth) == (None, 0.0)


def test_naming_baseline_matches_test_modules_under_test_directories():
    files = ["tests/test_hooks.py", "testing/hooks_test.py", "src/test_hooks.py",
             "tests/sub/test_utils.py", "tests/test_other.py", "tests/test_pkg.py"]
    found = ev.naming_tests(["src/pkg/_hooks.py", "src/pkg/utils.py",
                             "src/pkg/__init__.py"], files)
    assert {r.path for r in found} == {"tests/test_hooks.py", "testing/hooks_test.py",
                                       "tests/sub/test_utils.py", "tests/test_pkg.py"}
    assert len({r.key for r in found}) == 1  # all tied


def test_grep_doc_ranking_counts_word_mentions():
    texts = {"docs/a.rst": "MultiDict and MultiDict", "docs/b.rst": "OrderedMultiDict",
             "docs/c.rst": "a MultiDict"}
    order = ev.top_k_paths(ev.grep_doc_ranking("MultiDict", texts), 3)
    assert order == ["docs/a.rst", "docs/c.rst"]


@pytest.mark.parametrize(("qualified", "name"), [
    ("pkg.mod.Class.method", "method"), ("pkg.mod.Class.__init__", "Class"),
    ("func", "func")])
def test_search_name(qualified, name):
    assert ev.search_name(qualified) == name


@pytest.mark.parametrize(("path", "doc"), [
    ("docs/api.rst", True), ("README.md", True), ("docs/changelog.rst", False),
    ("CHANGES.rst", False), ("changelog/123.bugfix.rst", False), ("docs/conf.py", False),
    ("src/pkg/notes.md", False)])
def test_is_doc(path, doc):
    assert ev.is_doc(path) is doc


def test_caller_figures_pool_sites_over_symbols():
    checks = [ev.CallerCheck("c1", "f", jedi={("a.py", 1), ("a.py", 2)}, graph={("a.py", 1)},
                             lexical={("a.py", 2), ("b.py", 5)}, grep=set()),
              ev.CallerCheck("c1", "g", jedi={("a.py", 1)}, graph=set(), lexical=set(),
                             grep={("a.py", 1)})]
    figures = ev.caller_figures(checks)
    assert figures["graph"] == (1.0, pytest.approx(1 / 3))
    assert figures["lexical"] == (0.5, pytest.approx(1 / 3))
    assert figures["graph+lexical"] == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert figures["grep"] == (1.0, pytest.approx(1 / 3))


def test_caller_figures_count_the_sites_jedi_resolves_when_asked_there():
    check = ev.CallerCheck("c1", "f", jedi={("a.py", 1)}, graph={("a.py", 1), ("t.py", 9),
                                                                  ("t.py", 12)},
                           lexical=set(), grep=set(),
                           extra={"t.py:9": "jedi at the site", "t.py:12": "unconfirmed"})
    figures = ev.caller_figures([check])
    assert figures["graph"] == (pytest.approx(1 / 3), 1.0)
    assert figures["graph, jedi at the site"] == (pytest.approx(2 / 3), 1.0)
    assert figures["graph+lexical, jedi at the site"] == (pytest.approx(2 / 3), 1.0)


def test_a_report_renders_again_from_the_results_a_run_wrote(tmp_path):
    case = ev.CaseResult("c1", "o/r", 2, tests={"pr-context": 1.0}, docs={"grep": None},
                         docs_listed=[1], seconds=1.5)
    check = ev.CallerCheck("c1", "f", jedi={("a.py", 1)}, graph={("a.py", 1)},
                           lexical=set(), grep={("a.py", 1), ("b.py", 2)}, nested=("g",),
                           extra={"t.py:9": "unconfirmed"})
    ev._write_results(tmp_path, [case], [check])
    assert ev.load_results(tmp_path / "results.json") == ([case], [check])


import ast  # noqa: E402

import caller_sample as cs  # noqa: E402  (beside the evaluator, on the path above)

SAMPLE = '''\
import functools


def deco(f):
    @functools.wraps(f)
    def wrapper(*args):
        return f(*args)
    return wrapper


class Box:
    @property
    def size(self):
        return 1

    def items(self):
        def gen():
            yield 1
        return list(gen())
'''


def test_touched_lines_take_added_head_lines_and_removed_base_lines():
    patch = ("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n"
             "@@ -3,0 +4,2 @@ x\n+a\n+b\n@@ -9 +10,0 @@\n-gone\n"
             "diff --git a/n.py b/n.py\n--- a/n.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n")
    assert cs.touched_lines(patch) == {"m.py": ({4, 5}, {9}), "n.py": (set(), {1, 2})}


@pytest.mark.parametrize(("added", "expected"), [
    ({7}, [("deco", ("deco.wrapper",))]),  # inside the closure: the decorator
    ({5}, [("deco", ("deco.wrapper",))]),  # the closure's decorator line
    ({4}, [("deco", ())]),
    ({14}, [("Box.size", ())]),
    ({18, 19}, [("Box.items", ("Box.items.gen",))]),
    ({9, 10}, []),  # between definitions
])
def test_changed_functions_count_nested_changes_for_the_outermost_function(added, expected):
    found = cs.changed_functions("m.py", SAMPLE, added)
    assert [(f.local_name, f.nested) for f in found] == expected


def test_removed_lines_count_for_the_base_function_the_head_still_has():
    base = SAMPLE.replace("        return list(gen())\n",
                          "        x = 1\n        return list(gen())\n")
    base += "\n\ndef gone():\n    return 0\n"
    # line 19 (x = 1) was removed from Box.items; gone() is not at head; line 9 is blank
    found = cs.changed_functions("m.py", SAMPLE, set(), base, {9, 19, 23, 24})
    assert [(f.local_name, f.line) for f in found] == [("Box.items", 16)]


def test_a_function_moved_within_its_file_is_not_changed():
    moved = SAMPLE.replace("class Box:", "def later():\n    return 2\n\n\nclass Box:")
    head = moved.replace("def deco(f):", "def first():\n    return 1\n\n\ndef deco(f):")
    base = moved.replace("def later():\n    return 2\n\n\n", "") + (
        "\n\ndef later():\n    return 2\n")
    added = set(range(1, len(head.splitlines()) + 1))
    assert [f.local_name for f in cs.changed_functions("m.py", head, added, base, set())] == [
        "first"]


def test_changed_function_positions_and_properties():
    [size] = cs.changed_functions("m.py", SAMPLE, {14})
    assert (size.line, size.column, size.start, size.is_property) == (13, 8, 12, True)
    assert cs.changed_functions("m.py", "def broken(:\n", {1}) == []


MISSES = '''\
from pkg import registry, Thing


def use(param):
    client = make()
    client.send()
    make().send()
    param.send()
    registry.send()
    Color.RED.send()
    self.conn.send()
    send()
    items[0].send()
    Thing.send()
'''


@pytest.mark.parametrize(("line", "kind"), [
    (6, "return-type receiver"), (7, "return-type receiver"), (8, "parameter"),
    (9, "module global"), (10, "enum member"), (11, "attribute"), (12, "bare name"),
    (13, "other"), (14, "other"), (1, "other")])
def test_miss_kind_names_what_the_site_calls_the_function_on(line, kind):
    assert cs.miss_kind(ast.parse(MISSES), line, "send") == kind
    assert cs.miss_kind(None, line, "send") == "other"


# jedi resolves ``@pytest.fixture`` to ``_pytest.fixtures.fixture`` in the tree (its
# search path is the tree and the standard library only), so the tree holds that name.
FIXTURE_TREE = {
    "_pytest/__init__.py": "",
    "_pytest/fixtures.py": "def fixture(function):\n    return function\n",
    "pytest.py": "from _pytest.fixtures import fixture\n",
    "conftest.py": '''\
import pytest


class Foo:
    def run(self): ...


class Bar:
    def run(self): ...


@pytest.fixture
def foo() -> Foo:
    return Foo()
''',
    "test_a.py": '''\
from conftest import Bar


def test_one(foo):
    foo.run()


def test_two(foo):
    foo.run()


def test_other():
    Bar().run()
''',
}


def test_jedi_confirms_a_fixture_call_its_reference_search_left_out(tmp_path):
    for path, text in FIXTURE_TREE.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    definition = ("conftest.py", 5)  # Foo.run
    listed = ev.jedi_references(tmp_path, *definition, 8)
    fixture_calls = {("test_a.py", 5), ("test_a.py", 9)}
    assert listed <= fixture_calls
    assert all(ev.jedi_confirms(tmp_path, site, "run", definition) for site in fixture_calls)
    assert not ev.jedi_confirms(tmp_path, ("test_a.py", 13), "run", definition)
