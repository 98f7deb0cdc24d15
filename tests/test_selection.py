"""The test selection for CI, through ``review`` on real git repositories and indexes.

One project with enough independent tests that a narrow change selects a small part of
the suite; each test edits it one way and checks what is selected, and why.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pr_context.git import open_repository
from pr_context.links import module_level_change
from pr_context.links.parametrize import parametrized_counts
from pr_context.progress import SilentProgress
from pr_context.report import Report
from pr_context.review import review
from tests.conftest import GitRepo

MONEY = (
    "class Money:\n"
    "    def __init__(self, cents):\n"
    "        self.cents = cents\n"
    "\n"
    "    def __eq__(self, other):\n"
    "        return self.cents == other.cents\n"
    "\n"
    "    def double(self):\n"
    "        return Money(self.cents * 2)\n"
)
PROJECT = {
    "shop/__init__.py": "",
    "shop/money.py": MONEY,
    "shop/cart.py": ("from shop.money import Money\n\n\n"
                     "def total(prices):\n    return Money(sum(prices))\n"),
    "shop/text.py": "def shout(text):\n    return text.upper()\n\n\n"
                    "def whisper(text):\n    return text.lower()\n",
    "shop/registry.py": ("from shop.text import shout\n\nHANDLERS = {}\n\n\n"
                         "def register(name):\n    HANDLERS[name] = shout\n\n\n"
                         "register('loud')\n"),
    "shop/plugins.py": "import shop.registry\n\n\ndef names():\n"
                       "    return sorted(shop.registry.HANDLERS)\n",
    "tests/__init__.py": "",
    "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef base_cart():\n"
                         "    return [1, 2]\n",
    "tests/test_money.py": ("from shop.money import Money\n\n\n"
                            "def test_equal():\n    assert Money(1) == Money(1)\n\n\n"
                            "def test_double():\n    assert Money(1).double().cents == 2\n"),
    "tests/test_cart.py": ("from shop.cart import total\n\n\n"
                           "def test_total(base_cart):\n    assert total(base_cart)\n"),
    "tests/test_text.py": ("from shop.text import shout\n\n\n"
                           "def test_shout():\n    assert shout('a') == 'A'\n\n\n"
                           "def test_shout_twice():\n    assert shout(shout('a')) == 'A'\n"),
    "tests/test_plugins.py": ("from shop.plugins import names\n\n\n"
                              "def test_names():\n    assert names()\n"),
    "tests/test_misc.py": "".join(f"def test_misc_{n}():\n    assert {n} == {n}\n\n\n"
                                  for n in range(6)),
    "tests/unit/__init__.py": "",
    "tests/unit/conftest.py": ("import pytest\n\nfrom shop.text import whisper\n\n\n"
                               "@pytest.fixture(autouse=True)\ndef quiet():\n"
                               "    return whisper('X')\n"),
    "tests/unit/test_quiet.py": "def test_quiet():\n    assert True\n\n\n"
                                "def test_quieter():\n    assert True\n",
    "tests/test_setup.py": ("import unittest\n\nfrom shop.text import whisper\n\n\n"
                            "class TestWords(unittest.TestCase):\n"
                            "    def setUp(self):\n        self.word = whisper('A')\n\n"
                            "    def test_word(self):\n        assert self.word == 'a'\n"),
}


@pytest.fixture
def project(make_repo: Callable[..., GitRepo]) -> tuple[GitRepo, str]:
    repo = make_repo(PROJECT)
    return repo, repo.git("rev-parse", "HEAD").strip()


def select(project: tuple[GitRepo, str], tmp_path: Path, edits: dict[str, str]) -> Report:
    repo, base = project
    for path, text in edits.items():
        repo.write(path, text)
    head = repo.commit("edit")
    return review(open_repository(repo.path), base, head, tmp_path / "base.duckdb",
                  tmp_path / "out", None, SilentProgress())


def reasons(report: Report) -> dict[str, tuple[str, ...]]:
    return {item.target: item.reasons for item in report.selection_details}


def test_a_narrow_change_selects_the_tests_that_call_it(project: tuple[GitRepo, str],
                                                        tmp_path: Path) -> None:
    report = select(project, tmp_path, {"shop/text.py": PROJECT["shop/text.py"].replace(
        "text.upper()", "text.upper().strip()")})
    assert report.run_everything is None
    selected = reasons(report)
    assert {"tests/test_text.py::test_shout", "tests/test_text.py::test_shout_twice"} \
        <= set(selected)
    assert selected["tests/test_text.py::test_shout"] == ("calls shout",)
    assert not any(t.startswith(("tests/test_money.py", "tests/test_misc.py"))
                   for t in report.test_selection)


def test_a_dunder_method_is_reached_wherever_its_class_is_made(
        project: tuple[GitRepo, str], tmp_path: Path) -> None:
    report = select(project, tmp_path, {"shop/money.py": MONEY.replace(
        "return self.cents == other.cents",
        "return isinstance(other, Money) and self.cents == other.cents")})
    selected = set(report.test_selection)
    # nothing calls __eq__ by name; == on Money instances does
    assert {"tests/test_money.py::test_equal", "tests/test_money.py::test_double",
            "tests/test_cart.py::test_total"} <= selected
    assert not any(t.startswith("tests/test_text.py") for t in selected)


@pytest.mark.parametrize(("test", "how"), [
    pytest.param("tests/unit/test_quiet.py", "an autouse fixture of tests/unit/conftest.py",
                 id="autouse-fixture"),
    pytest.param("tests/test_setup.py::TestWords::test_word", "its class's setUp",
                 id="setup-method"),
])
def test_tests_reached_through_the_framework_are_selected(
        project: tuple[GitRepo, str], tmp_path: Path, test: str, how: str) -> None:
    report = select(project, tmp_path, {"shop/text.py": PROJECT["shop/text.py"].replace(
        "text.lower()", "text.lower().strip()")})
    assert any(t == test or t.startswith(test + "::") for t in report.test_selection), (
        how, report.test_selection)


def test_module_level_code_selects_the_importers(project: tuple[GitRepo, str],
                                                 tmp_path: Path) -> None:
    report = select(project, tmp_path, {"shop/registry.py": PROJECT["shop/registry.py"]
                                        .replace("register('loud')\n",
                                                 "register('loud')\nregister('shout')\n")})
    selected = reasons(report)
    assert "tests/test_plugins.py" in selected
    assert any("module-level code changed" in r for r in selected["tests/test_plugins.py"])
    assert not any(t.startswith("tests/test_money.py") for t in selected)


def test_code_run_at_import_selects_the_importers(project: tuple[GitRepo, str],
                                                          tmp_path: Path) -> None:
    # register() runs at import of shop.registry only: no test calls it
    report = select(project, tmp_path, {"shop/registry.py": PROJECT["shop/registry.py"]
                                        .replace("HANDLERS[name] = shout",
                                                 "HANDLERS[name.lower()] = shout")})
    selected = reasons(report)
    assert "tests/test_plugins.py" in selected, selected
    assert any("runs register at import" in r for r in selected["tests/test_plugins.py"])


@pytest.mark.parametrize(("path", "text", "reason"), [
    pytest.param("tests/conftest.py", PROJECT["tests/conftest.py"] + "\n\nX = 1\n",
                 "tests/conftest.py changed: its fixtures and hooks serve every test",
                 id="root-conftest"),
    pytest.param("pyproject.toml", "[tool.pytest.ini_options]\naddopts = '-ra'\n",
                 "pyproject.toml changed: it configures how every test runs",
                 id="test-configuration"),
    pytest.param("requirements-dev.txt", "pytest\n", "requirements-dev.txt changed",
                 id="dependencies"),
    pytest.param("shop/__init__.py", "import logging\n\nlogging.getLogger('shop')\n",
                 "shop/__init__.py changed at module level: a package's __init__ runs",
                 id="package-init"),
])
def test_ubiquitous_changes_run_everything(project: tuple[GitRepo, str], tmp_path: Path,
                                           path: str, text: str, reason: str) -> None:
    report = select(project, tmp_path, {path: text})
    assert report.run_everything is not None and reason in report.run_everything
    assert report.test_selection == ("tests",)
    assert reasons(report) == {"tests": (report.run_everything,)}


def test_a_conftest_below_the_root_selects_its_directory(project: tuple[GitRepo, str],
                                                         tmp_path: Path) -> None:
    report = select(project, tmp_path, {
        "tests/unit/conftest.py": PROJECT["tests/unit/conftest.py"] + "\n\nY = 2\n"})
    assert report.run_everything is None
    assert report.test_selection == ("tests/unit/test_quiet.py",)


def test_a_change_most_tests_reach_runs_everything(make_repo: Callable[..., GitRepo],
                                                   tmp_path: Path) -> None:
    repo = make_repo({"core.py": "def parse(x):\n    return int(x)\n",
                      **{f"tests/test_{n}.py": f"from core import parse\n\n\ndef test_{n}():\n"
                         f"    assert parse('{n}') == {n}\n" for n in range(3)},
                      "tests/test_other.py": "def test_other():\n    assert True\n"})
    base = repo.git("rev-parse", "HEAD").strip()
    repo.write("core.py", "def parse(x):\n    return int(x.strip())\n")
    head = repo.commit("strip")
    report = review(open_repository(repo.path), base, head, tmp_path / "b.duckdb",
                    tmp_path / "out", None, SilentProgress())
    assert report.run_everything == ("the change reaches 75% of the suite's tests: running "
                                     "the rest costs little and leaves no path the graph "
                                     "cannot see untested")
    assert report.test_selection == ("tests",)


DISPATCH = {
    "calc/__init__.py": "",
    "calc/ops.py": (
        "class Op:\n"
        "    def run(self, name, a, b):\n"
        "        return getattr(self, f'_op_{name}')(a, b)\n"
        "\n"
        "    def _op_add(self, a, b):\n"
        "        return a + b\n"
        "\n"
        "    def _op_mul(self, a, b):\n"
        "        return a * b\n"
        "\n"
        "\n"
        "class Bag:\n"
        "    def __init__(self, items):\n"
        "        self.items = list(items)\n"
        "\n"
        "    def __contains__(self, item):\n"
        "        return item in self.items\n"
        "\n"
        "\n"
        "class Memo:\n"
        "    def __call__(self, key):\n"
        "        return self.compute(key)\n"
        "\n"
        "    def compute(self, key):\n"
        "        return key * 2\n"
        "\n"
        "\n"
        "class Cached:\n"
        "    _memo = Memo()\n"
        "\n"
        "    def get(self, key):\n"
        "        return self._memo(key)\n"
        "\n"
        "\n"
        "def convert(data, kind):\n"
        "    return kind(data)\n"
        "\n"
        "\n"
        "class Base:\n"
        "    def __init__(self, items):\n"
        "        self.items = self.clean(items)\n"
        "\n"
        "    def clean(self, items):\n"
        "        return sorted(items)\n"
    ),
    "calc/types.py": ("from typing import Union, cast\n\nNumber = Union[int, float]\n"
                      "Pair = tuple[Number, Number]\nRatio = Union[float, int]\n"
                      "ONE = cast(Ratio, 1)\nUnused = Union[int, str]\n\n\n"
                      "def half(x: Number) -> Number:\n    return x / 2\n\n\n"
                      "def swap(p: Pair) -> Pair:\n    return p[1], p[0]\n\n\n"
                      "def unit():\n    return ONE\n"),
    "tests/__init__.py": "",
    "tests/test_ops.py": ("from calc.ops import Op\n\n\n"
                          "def test_run():\n    assert Op().run('add', 1, 2) == 3\n"),
    "tests/test_bag.py": ("from calc.ops import Bag, convert\n\n\n"
                          "def test_in():\n    assert 1 in Bag([1])\n\n\n"
                          "def test_convert():\n    assert convert([2], Bag).items == [2]\n"),
    "tests/test_cached.py": ("from calc.ops import Cached\n\n\n"
                             "def test_get():\n    assert Cached().get(2) == 4\n"),
    "tests/test_types.py": ("from calc.types import half, unit\n\n\n"
                            "def test_half():\n    assert half(4) == 2\n\n\n"
                            "def test_unit():\n    assert unit() == 1\n"),
    "tests/test_nested.py": ("from calc.ops import Op\n\n\n"
                             "def test_outer():\n    def test_like_helper():\n"
                             "        return Op().run('mul', 2, 3)\n\n"
                             "    assert test_like_helper() == 6\n"),
    "tests/test_sub.py": ("from calc.ops import Base\n\n\n"
                          "def test_inherits():\n    class Small(Base):\n        pass\n\n"
                          "    assert Small([2, 1]).items == [1, 2]\n\n\n"
                          "def test_overrides():\n    class Own(Base):\n"
                          "        def __init__(self):\n            self.items = []\n\n"
                          "    assert Own().items == []\n"),
    "tests/test_other.py": "".join(f"def test_other_{n}():\n    assert True\n\n\n"
                                   for n in range(8)),
}


@pytest.mark.parametrize(("edit", "selected"), [
    pytest.param(("return a + b", "return b + a"),
                 {"tests/test_ops.py::test_run", "tests/test_nested.py::test_outer"},
                 id="looked-up-by-getattr"),
    pytest.param(("return item in self.items", "return self.items.count(item) > 0"),
                 {"tests/test_bag.py::test_in", "tests/test_bag.py::test_convert"},
                 id="dunder-called-by-syntax"),
    pytest.param(("self.items = list(items)", "self.items = [*items]"),
                 {"tests/test_bag.py::test_in", "tests/test_bag.py::test_convert"},
                 id="constructor-of-a-class-passed-as-a-value"),
    pytest.param(("return key * 2", "return key + key"), {"tests/test_cached.py::test_get"},
                 id="object-made-at-import-in-a-class-attribute"),
    pytest.param(("return sorted(items)", "return sorted(items, reverse=False)"),
                 {"tests/test_sub.py::test_inherits"},
                 id="constructor-inherited-by-a-subclass-a-test-makes"),
])
def test_code_the_graph_reaches_without_a_call_by_name(
        make_repo: Callable[..., GitRepo], tmp_path: Path, edit: tuple[str, str],
        selected: set[str]) -> None:
    repo = make_repo(DISPATCH)
    report = select((repo, repo.git("rev-parse", "HEAD").strip()), tmp_path,
                    {"calc/ops.py": DISPATCH["calc/ops.py"].replace(*edit)})
    assert report.run_everything is None
    assert set(report.test_selection) == selected


@pytest.mark.parametrize(("path", "old", "new", "symbol"), [
    pytest.param("calc/types.py", "Union[int, float]", "int | float", "calc.types.Number",
                 id="type-alias-read-only-in-annotations-and-aliases"),
    pytest.param("calc/types.py", "Union[float, int]", "float | int", "calc.types.Ratio",
                 id="type-alias-read-only-as-a-cast-type"),
    pytest.param("calc/types.py", "cast(Ratio, 1)", "cast(float, 1)", "calc.types.ONE",
                 id="only-the-type-given-to-cast"),
    pytest.param("calc/types.py", "Union[int, str]", "int | str", "calc.types.Unused",
                 id="a-variable-nothing-reads"),
    pytest.param("calc/ops.py", "return a * b", "return a * b  # the product",
                 "calc.ops.Op._op_mul", id="comment-only"),
])
def test_a_change_that_runs_nowhere_selects_nothing(
        make_repo: Callable[..., GitRepo], tmp_path: Path, path: str, old: str, new: str,
        symbol: str) -> None:
    repo = make_repo(DISPATCH)
    report = select((repo, repo.git("rev-parse", "HEAD").strip()), tmp_path,
                    {path: DISPATCH[path].replace(old, new)})
    assert [s.qualified_name for s in report.symbols] == [symbol]
    assert report.test_selection == ()


def test_a_parametrized_test_counts_as_its_parametrizations() -> None:
    text = ("import pytest\n\n\n@pytest.mark.parametrize('x', [1, 2, 3])\n"
            "@pytest.mark.parametrize('y', (4, 5))\ndef test_a(x, y):\n    pass\n\n\n"
            "@pytest.mark.parametrize('x', VALUES)\ndef test_b(x):\n    pass\n\n\n"
            "@pytest.mark.parametrize('x', [1, 2])\nclass TestC:\n"
            "    @pytest.mark.parametrize(argnames='y', argvalues=[1, 2, 3])\n"
            "    def test_d(self, x, y):\n        pass\n\n"
            "    def test_e(self, x):\n        pass\n")
    assert parametrized_counts(text) == {"test_a": 6, "TestC.test_d": 6, "TestC.test_e": 2}
    assert parametrized_counts("def broken(:\n") == {}


def test_parametrize_spelled_in_other_unicode_is_still_counted() -> None:
    # Python reads the fullwidth letter as "p": the text never spells "parametrize"
    text = ("import pytest\n\n\n@pytest.mark.\uff50arametrize('x', [1, 2])\n"
            "def test_a(x):\n    pass\n")
    assert parametrized_counts(text) == {"test_a": 2}
    assert parametrized_counts(text.replace("\uff50arametrize", "usefixtures")) == {}


@pytest.mark.parametrize(("values", "count"), [
    ("VALUES", 4),
    ("VALUES + [9] * 3", 7),
    ("[(x, y) for x in VALUES for y in range(1, 4)]", 12),
    ("[x for x in VALUES if x]", 4),  # an if clause counts as keeping everything
    ("itertools.product(VALUES, ('a', 'b'))", 8),
    ("itertools.chain.from_iterable([[(x, x) for x in VALUES], PAIRS])", 6),
    ("itertools.chain.from_iterable([[(x, y) for y in VALUES[i:]] "
     "for i, x in enumerate(VALUES)])", 8),  # a slice at a computed bound: half
    ("list(zip(VALUES, PAIRS))", 2),
    ("sorted(TABLE.items())", 2),
    ("VALUES[1:3]", 2),
    ("imported_elsewhere", 1),
    ("DOUBLY", 1),  # bound twice: which list the decorator sees is unknown
])
def test_computed_parametrizations_are_counted(values: str, count: int) -> None:
    text = ("import itertools\n\nimport pytest\n\nVALUES = [1, 2, 3, 4]\n"
            "PAIRS = [(1, 2), (3, 4)]\nTABLE = {'a': 1, 'b': 2}\nDOUBLY = [1, 2]\n"
            "DOUBLY = [1, 2, 3]\n\n\n"
            f"@pytest.mark.parametrize('x', {values})\ndef test_x(x):\n    pass\n")
    assert parametrized_counts(text).get("test_x", 1) == count


@pytest.mark.parametrize(("lines", "expected"), [
    ({4}, None),  # inside if TYPE_CHECKING: never runs
    ({6}, "code"),  # its else branch does
    ({1}, "imports"),
    ({8}, "code"),
    ({10}, None),  # a function's body is the function's change
])
def test_what_changed_at_module_level(lines: set[int], expected: str | None) -> None:
    text = ("import typing\nif typing.TYPE_CHECKING:\n    from x import S\n"
            "    T = typing.Type[S]\nelse:\n    setup()\n\nprint('loaded')\n\n"
            "def f():\n    return 1\n")
    assert module_level_change(text, lines) == expected


@pytest.mark.parametrize(("read", "selected"), [
    pytest.param("compat.old()", ("tests/test_old.py::test_old",), id="a-served-name-read"),
    pytest.param("compat.current()", (), id="no-served-name-read"),
])
def test_a_module_getattr_selects_the_tests_reading_the_names_it_serves(
        make_repo: Callable[..., GitRepo], tmp_path: Path, read: str,
        selected: tuple[str, ...]) -> None:
    compat = ("def current():\n    return 1\n\n\n"
              "def __getattr__(name):\n    if name == 'old':\n        return current\n"
              "    raise AttributeError(name)\n")
    repo = make_repo({"app/__init__.py": "", "app/compat.py": compat,
                      "tests/test_old.py": "import app.compat as compat\n\n\n"
                                           f"def test_old():\n    assert {read} == 1\n",
                      "tests/test_new.py": "from app.compat import current\n\n\n"
                                           "def test_new():\n    assert current() == 1\n",
                      "tests/test_other.py": "def test_other():\n    assert True\n"})
    report = select((repo, repo.git("rev-parse", "HEAD").strip()), tmp_path,
                    {"app/compat.py": compat.replace("raise AttributeError(name)",
                                                     "raise AttributeError(f'no {name}')")})
    assert report.test_selection == selected


def test_a_value_moved_at_import_is_followed_into_the_variable_it_changes(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    """``LOOPS["auto"] = LOOPS["plain"]`` reads the class at import and keeps it in LOOPS:
    the tests reading LOOPS, not every importer of the module."""
    loops = ("class Loop:\n    def run(self):\n        return self.step()\n\n"
             "    def step(self):\n        return 1\n\n\n"
             "LOOPS = {'plain': Loop}\nLOOPS['auto'] = LOOPS['plain']\n")
    repo = make_repo({"calc/__init__.py": "", "calc/loops.py": loops,
                      "calc/app.py": "import calc.loops\n",
                      "tests/test_loops.py": "from calc.loops import LOOPS\n\n\n"
                                             "def test_auto():\n    assert 'auto' in LOOPS\n",
                      "tests/test_app.py": "import calc.app\n\n\n"
                                           "def test_app():\n    assert calc.app\n",
                      **{f"tests/test_{n}.py": f"def test_{n}():\n    assert True\n"
                         for n in ("a", "b", "c")}})
    report = select((repo, repo.git("rev-parse", "HEAD").strip()), tmp_path,
                    {"calc/loops.py": loops.replace("return 1", "return 2")})
    assert report.test_selection == ("tests/test_loops.py::test_auto",)


@pytest.mark.parametrize(("path", "old", "new", "selected"), [
    pytest.param("shop/money.py", "    def double(self):",
                 "    @property\n    def euros(self):\n        return self.cents / 100\n\n"
                 "    @euros.setter\n    def euros(self, value):\n"
                 "        self.cents = value * 100\n\n"
                 "    def double(self):", set(), id="a-property-nothing-reads"),
    pytest.param("shop/text.py", "def whisper(text):",
                 "@functools.singledispatch\ndef yell(text):\n    return text.upper() + '!'\n\n\n"
                 "def whisper(text):",
                 {"tests/test_text.py", "tests/test_setup.py", "tests/test_plugins.py"},
                 id="a-function-a-decorator-may-register"),
])
def test_a_symbol_nothing_names_selects_nothing_unless_a_decorator_may_register_it(
        project: tuple[GitRepo, str], tmp_path: Path, path: str, old: str, new: str,
        selected: set[str]) -> None:
    text = PROJECT[path].replace(old, new)
    if "functools" in new:
        text = "import functools\n\n\n" + text
    report = select(project, tmp_path, {path: text})
    assert report.run_everything is None
    assert {t.split("::", 1)[0] for t in report.test_selection} == selected


def test_an_autouse_fixture_touching_a_value_made_at_import_selects_no_one(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    """The fixture copies DEFAULTS, made at import by Renderer(): no test runs measure
    through it; the test making a Renderer does."""
    config = ("class Renderer:\n    def __init__(self):\n        self.width = self.measure()\n\n"
              "    def measure(self):\n        return 80\n\n\n"
              "DEFAULTS = [Renderer()]\n\n\ndef reset():\n    return list(DEFAULTS)\n")
    repo = make_repo({
        "app/__init__.py": "", "app/config.py": config,
        "tests/conftest.py": "import pytest\n\nfrom app.config import reset\n\n\n"
                             "@pytest.fixture(autouse=True)\ndef fresh():\n    reset()\n",
        "tests/test_render.py": "from app.config import Renderer\n\n\n"
                                "def test_render():\n    assert Renderer().width == 80\n",
        **{f"tests/test_{n}.py": f"def test_{n}():\n    assert True\n" for n in "abc"}})
    report = select((repo, repo.git("rev-parse", "HEAD").strip()), tmp_path,
                    {"app/config.py": config.replace("return 80", "return 81")})
    assert report.run_everything is None
    assert report.test_selection == ("tests/test_render.py::test_render",)


def test_a_property_setter_decorator_runs_the_property_for_no_test(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    """``@size.setter`` names the property in the class body at import: no test runs the
    getter through it."""
    model = ("class Box:\n    def __init__(self):\n        self._size = 1\n\n"
             "    @property\n    def size(self):\n        return self._size\n\n"
             "    @size.setter\n    def size(self, value):\n        self._size = value\n\n\n"
             "def grow(box: Box):\n    return box.size + 1\n")
    repo = make_repo({"box/__init__.py": "", "box/model.py": model,
                      "tests/test_grow.py": "from box.model import Box, grow\n\n\n"
                                            "def test_grow():\n    assert grow(Box()) == 2\n",
                      "tests/test_import.py": "import box.model\n\n\n"
                                              "def test_import():\n    assert box.model\n",
                      **{f"tests/test_{n}.py": f"def test_{n}():\n    assert True\n"
                         for n in "abc"}})
    report = select((repo, repo.git("rev-parse", "HEAD").strip()), tmp_path,
                    {"box/model.py": model.replace("return self._size", "return self._size * 1")})
    assert report.test_selection == ("tests/test_grow.py::test_grow",)


def test_an_override_of_a_standard_library_method_is_reached_where_its_objects_are(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    """logging calls Short.format for every record a handler holding one emits: no site
    of the repository calls it by name."""
    fmt = ("import logging\n\n\nclass Short(logging.Formatter):\n"
           "    def format(self, record):\n        return record.getMessage()[:10]\n\n"
           "    def tidy(self, text):\n        return text.strip()\n")
    repo = make_repo({"app/__init__.py": "", "app/fmt.py": fmt,
                      "tests/test_log.py": "import logging\n\nfrom app.fmt import Short\n\n\n"
                                           "def test_log():\n"
                                           "    handler = logging.StreamHandler()\n"
                                           "    handler.setFormatter(Short())\n"
                                           "    logging.getLogger('t').addHandler(handler)\n",
                      **{f"tests/test_{n}.py": f"def test_{n}():\n    assert True\n"
                         for n in "abc"}})
    head = {"app/fmt.py": fmt.replace("[:10]", "[:20]")}
    report = select((repo, repo.git("rev-parse", "HEAD").strip()), tmp_path, head)
    assert report.test_selection == ("tests/test_log.py::test_log",)


def test_a_property_is_reached_where_its_name_is_read_on_an_object_of_unknown_class(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    """``thing.area`` in a file that imports the class reads the property; a test that
    only makes a Box does not (the objects of the class no longer stand for its reads)."""
    model = ("class Box:\n    def __init__(self, side):\n        self.side = side\n\n"
             "    @property\n    def area(self):\n        return self.side * self.side\n")
    repo = make_repo({
        "box/__init__.py": "", "box/model.py": model,
        "box/report.py": "from box.model import Box\n\n\ndef describe(thing):\n"
                         "    return f'{thing.area} square units'\n\n\n"
                         "def default():\n    return Box(1)\n",
        "tests/test_report.py": ("from box.model import Box\nfrom box.report import describe"
                                 "\n\n\ndef test_describe():\n"
                                 "    assert describe(Box(2)) == '4 square units'\n"),
        "tests/test_make.py": "from box.model import Box\n\n\n"
                              "def test_make():\n    assert Box(2).side == 2\n",
        **{f"tests/test_{n}.py": f"def test_{n}():\n    assert True\n" for n in "abc"}})
    report = select((repo, repo.git("rev-parse", "HEAD").strip()), tmp_path,
                    {"box/model.py": model.replace("self.side * self.side", "self.side ** 2")})
    assert report.test_selection == ("tests/test_report.py::test_describe",)
