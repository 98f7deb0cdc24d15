"""The test selection for CI, through ``review`` on real git repositories and indexes.

One project with enough independent tests that a narrow change selects a small part of
the suite; each test edits it one way and checks what is selected, and why.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pr_context.git import open_repository
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
