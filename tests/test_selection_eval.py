"""The metric and oracle functions of evals/test_selection/ on hand-computed examples."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

_DIR = Path(__file__).parents[1] / "evals" / "test_selection"


def _load(name: str) -> ModuleType:
    if str(_DIR) not in sys.path:
        sys.path.insert(0, str(_DIR))  # the scripts import each other by name
    spec = importlib.util.spec_from_file_location(name, _DIR / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


fn = _load("functions")
ev = _load("run_selection_eval")


@pytest.mark.parametrize(("target", "node", "expected"), [
    ("tests", "tests/a/test_x.py::t", True),
    ("tests/test_x.py", "tests/test_x.py::C::t[1]", True),
    ("tests/test_x.py::C", "tests/test_x.py::C::t", True),
    ("tests/test_x.py::t", "tests/test_x.py::t[a-b]", True),
    ("tests/test_x.py::t", "tests/test_x.py::t_other", False),
    ("tests/test_x", "tests/test_x.py::t", False),
    ("test", "tests/test_x.py::t", False),
])
def test_covers(target: str, node: str, expected: bool) -> None:
    assert ev.covers(target, node) is expected


def test_recall_counts_a_file_only_when_all_its_executing_tests_run() -> None:
    executing = {"t/a.py::x", "t/a.py::y", "t/b.py::z"}
    selection = ["t/a.py::x", "t/b.py"]
    assert ev.node_recall(selection, executing) == pytest.approx(2 / 3)
    assert ev.file_recall(selection, executing) == pytest.approx(1 / 2)
    assert ev.file_recall(["t"], executing) == 1.0
    assert ev.node_recall(selection, set()) is None


def test_suite_share_in_tests_and_files() -> None:
    suite = {"t/a.py::x", "t/a.py::y", "t/b.py::z", "t/c.py::w"}
    assert ev.suite_share(["t/a.py::x"], suite) == (0.25, pytest.approx(1 / 3))
    assert ev.suite_share(["t"], suite) == (1.0, 1.0)


@pytest.mark.parametrize(("ranked", "relevant", "expected"), [
    (["a", "b", "a", "c"], {"a", "c"}, (2 / 3, 1.0)),  # distinct paths, in order
    (["a", "b", "c", "d", "e", "f"], {"f"}, (0.0, 0.0)),  # sixth is out
    ([], {"a"}, (None, 0.0)),
    (["a"], set(), (0.0, None)),
    (["a", "b"], {f"r{n}" for n in range(9)} | {"a"}, (0.5, 0.2)),  # recall of min(5, 10)
])
def test_precision_and_recall_at_5(ranked: list[str], relevant: set[str],
                                   expected: tuple[float | None, float | None]) -> None:
    assert ev.precision_recall_at_k(ranked, relevant) == pytest.approx(expected)


def test_import_closure_follows_imports_and_parent_packages() -> None:
    texts = {"src/pkg/__init__.py": "from .core import run\n",
             "src/pkg/core.py": "def run():\n    return 1\n",
             "src/pkg/other.py": "X = 1\n",
             "tests/test_core.py": "from pkg.core import run\n",
             "tests/test_other.py": "import pkg.other\n",  # runs pkg/__init__, which imports core
             "tests/test_plain.py": "import os\n"}
    tests = [p for p in texts if p.startswith("tests/")]
    assert ev.import_closure(texts, ["src/pkg/core.py"], tests) == {
        "tests/test_core.py", "tests/test_other.py"}


BASE = '''\
def kept(a):
    """Doc."""
    return a


def changed(a):
    b = a + 1
    return b


class C:
    def method(self):
        def inner():
            return 1
        return inner()

    def moved(self):
        return 2
'''


def test_changed_functions_compare_own_code_only() -> None:
    head = (BASE.replace('"""Doc."""', '"""Other doc."""')  # a docstring is no change
            .replace("a + 1", "a + 2")
            .replace("return 1", "return 3")  # inner changed, method's own code did not
            .replace("    def moved(self):\n        return 2\n", "")
            + "\n\ndef moved_here():\n    return 2\n")
    found = {f.qualname for f in fn.changed_functions("src/m.py", BASE, head)}
    assert found == {"changed", "C.method.inner", "C.moved"}


def test_own_lines_leave_out_the_def_the_docstring_and_nested_bodies() -> None:
    functions = fn.functions_of("src/m.py", BASE)
    assert functions["kept"].lines == (3,)
    assert functions["C.method"].lines == (13, 15)  # the nested def line runs, its body not
    assert functions["C.method.inner"].lines == (14,)


def test_module_names_and_imports() -> None:
    assert fn.module_name("src/pkg/__init__.py") == "pkg"
    assert fn.module_name("tests/test_x.py") == "tests.test_x"
    assert fn.imported_modules("src/pkg/sub/mod.py",
                               "from . import a\nfrom ..b import c\nimport os.path\n") == {
        "pkg.sub", "pkg.sub.a", "pkg.b", "pkg.b.c", "os.path"}


def test_a_report_renders_again_from_the_results_a_run_wrote(tmp_path: Path) -> None:
    import json
    from dataclasses import asdict

    result = ev.CaseResult("p-1", "o/p", 10, 2, 1, runs={
        "plain": ev.Run(["tests"], "everything", 1.0, 1.0, 1.0, 1.0),
        "coverage": ev.Run(["tests/test_a.py::t"], None, 1.0, 1.0, 0.1, 0.5)},
        symbols=[ev.SymbolScore("p.f", 1, {"plain": 0.5, "coverage": 1.0, "naming": None},
                                {"plain": 1.0, "coverage": 1.0, "naming": None})])
    saved = tmp_path / "results.json"
    saved.write_text(json.dumps([asdict(result)]), encoding="utf-8")
    assert ev.results_from_json(saved) == [result]


def _reason(via: tuple[str, ...], **weak: object) -> str:
    """A linked test's reason, worded by linked_tests itself."""
    from pr_context.changes import ChangedSymbol
    from pr_context.links.linked_tests import _reach_reason
    from pr_context.links.reach import Reached

    change = ChangedSymbol("src/m.py", None, "parse", "m.parse", None, "function",
                           "modified", False, 1, 2, None, None, (), ())
    return _reach_reason(change, Reached("tests/test_m.py", None, len(via) + 1, 1.0, via, 3,
                                         "call", **weak))  # type: ignore[arg-type]


def test_linked_kinds_reads_the_calls_and_weak_links_of_a_reason() -> None:
    lk = _load("linked_kinds")
    direct, helper, deep = _reason(()), _reason(("helper",)), _reason(("run", "helper"))
    assert [lk.hops(r) for r in (direct, helper, deep)] == [1, 2, 3]
    assert lk.weak_links(helper) == ()
    weak = _reason(("Parser", "__iter__"), through="Parser", state="DEFAULTS",
                   candidate=True)
    assert lk.weak_links(weak) == ("objects", "import-time value", "same-name candidate")
    assert lk.kind({"reason": helper, "signals": {"graph": 0.7}}) == "call path, 2 call(s)"
    assert lk.kind({"reason": "statistical: x", "signals": {"cochange": 0.5}}) == "statistical"
