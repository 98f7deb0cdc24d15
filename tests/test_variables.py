"""Module-level variables: found by Python's parser, reported as changed, read by whom."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pr_context.changes import changed_symbols_between
from pr_context.git import open_repository
from pr_context.graph import SymbolGraph
from pr_context.graph.readers import readers_of
from pr_context.models import Sha
from pr_context.progress import SilentProgress
from pr_context.review import ReviewOptions, review
from pr_context.variables import module_variables
from tests.conftest import GitRepo
from tests.fakes import FakeEmbedder

SETTINGS = (
    '"""Settings."""\n'
    "import os\n"
    "\n"
    "__version__ = '1.0'\n"
    "__all__ = ['LIMIT', 'hash_password']\n"
    "LIMIT = 10\n"
    "ITERATIONS: int = 600_000\n"
    "WIDTH, HEIGHT = 80, 24\n"
    "if os.name == 'nt':\n"
    "    SEP = '\\\\'\n"
    "else:\n"
    "    SEP = '/'\n"
    "try:\n"
    "    import fast\n"
    "except ImportError:\n"
    "    FAST = False\n"
    "__all__ += ['SEP']\n"
    "\n"
    "\n"
    "def hash_password(password, rounds=None):\n"
    '    """Hash with ITERATIONS rounds unless told otherwise."""\n'
    "    local = 1\n"
    "    return password * (rounds or ITERATIONS) * local\n"
    "\n"
    "\n"
    "def shadowed(ITERATIONS):\n"
    "    return ITERATIONS\n"
    "\n"
    "\n"
    "class Box:\n"
    "    size = LIMIT\n"
)


def test_module_variables_are_module_level_assignments() -> None:
    found = module_variables(SETTINGS)
    assert found is not None
    assert sorted(found) == ["FAST", "HEIGHT", "ITERATIONS", "LIMIT", "SEP", "WIDTH", "__all__"]
    assert (found["__all__"].start_line, found["__all__"].end_line) == (5, 17)
    assert found["SEP"].lines == frozenset({10, 12})
    assert found["ITERATIONS"].lines == frozenset({7})


def test_module_variables_compare_code_not_formatting() -> None:
    before = module_variables("LIMIT = 10  # items\nNAMES = ['a', 'b']\n")
    after = module_variables("LIMIT = (10)\nNAMES = [\n    'a',\n    'b',\n]\n")
    assert before is not None and after is not None
    assert before["LIMIT"].value == after["LIMIT"].value
    assert before["NAMES"].value == after["NAMES"].value
    assert module_variables("LIMIT = 11\n")["LIMIT"].value != before["LIMIT"].value  # type: ignore[index]


def test_module_variables_of_invalid_python_are_none() -> None:
    assert module_variables("LIMIT = (\n") is None


def _changes(repo: GitRepo, base: str) -> dict[str, tuple[str, str, tuple[int, ...]]]:
    head = repo.commit("head")
    result = changed_symbols_between(open_repository(repo.path), Sha(base), Sha(head))
    return {s.qualified_name: (s.kind, s.change, s.changed_lines) for s in result.symbols}


def test_changed_constants_are_variable_symbols(make_repo: Callable[..., GitRepo]) -> None:
    repo = make_repo({"pkg/__init__.py": "", "pkg/settings.py": SETTINGS})
    base = repo.git("rev-parse", "HEAD").strip()
    text = (SETTINGS.replace("ITERATIONS: int = 600_000", "ITERATIONS: int = 1_000_000")
            .replace("LIMIT = 10", "LIMIT = (10)  # same value")
            .replace("FAST = False", "FAST = None")
            .replace("WIDTH, HEIGHT = 80, 24\n", "")
            .replace("__version__ = '1.0'", "__version__ = '1.1'")
            .replace("__all__ += ['SEP']\n", "__all__ += ['SEP']\nRETRIES = 3\n"))
    repo.write("pkg/settings.py", text)
    assert _changes(repo, base) == {
        "pkg.settings.ITERATIONS": ("variable", "modified", (7,)),
        "pkg.settings.FAST": ("variable", "modified", (15,)),
        "pkg.settings.WIDTH": ("variable", "removed", (8,)),
        "pkg.settings.HEIGHT": ("variable", "removed", (8,)),
        "pkg.settings.RETRIES": ("variable", "added", (17,)),
    }  # LIMIT only reformatted, __version__ is metadata


def test_a_file_that_does_not_parse_reports_definitions_only(
        make_repo: Callable[..., GitRepo]) -> None:
    repo = make_repo({"pkg/settings.py": "LIMIT = 1\n\n\ndef f():\n    return 1\n"})
    base = repo.git("rev-parse", "HEAD").strip()
    repo.write("pkg/settings.py", "LIMIT = (2\n\n\ndef f():\n    return 2\n")
    kinds = {kind for kind, _change, _lines in _changes(repo, base).values()}
    assert kinds == {"function"}


READER_FILES = {
    "pkg/__init__.py": "",
    "pkg/settings.py": SETTINGS,
    "pkg/auth.py": (
        "from pkg.settings import ITERATIONS as ROUNDS\n"
        "\n"
        "\n"
        "def check(password):\n"
        "    return len(password) > ROUNDS\n"
    ),
    "pkg/cli.py": (
        "import pkg.settings as conf\n"
        "from pkg import settings\n"
        "\n"
        "\n"
        "def main():\n"
        "    return conf.ITERATIONS + settings.ITERATIONS\n"
    ),
    "pkg/other.py": (
        "ITERATIONS = 3\n"
        "\n"
        "\n"
        "def run():\n"
        "    return ITERATIONS\n"
    ),
    "tests/test_settings.py": (
        "from pkg.settings import ITERATIONS\n"
        "\n"
        "\n"
        "def test_default():\n"
        "    assert ITERATIONS > 1000\n"
    ),
}


def test_readers_are_the_loads_of_each_files_spelling(
        graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    tables = graphs(READER_FILES).tables
    readers = readers_of(tables, "pkg.settings.ITERATIONS", READER_FILES.get)
    assert [(c.path, c.line, c.enclosing, c.how) for c in readers] == [
        ("pkg/auth.py", 5, "pkg.auth.check", "graph"),  # from-import under an alias
        ("pkg/cli.py", 6, "pkg.cli.main", "graph"),  # conf.ITERATIONS
        ("pkg/cli.py", 6, "pkg.cli.main", "graph"),  # settings.ITERATIONS
        ("pkg/settings.py", 23, "pkg.settings.hash_password", "graph"),
        ("tests/test_settings.py", 5, "tests.test_settings.test_default", "graph"),
    ]  # not the docstring, not the parameter that shadows it, not pkg.other's own
    assert readers[0].reason == "reads ROUNDS, imported from pkg.settings (line 1)"
    assert readers[3].reason == "reads ITERATIONS, defined in the same module"
    class_body = readers_of(tables, "pkg.settings.LIMIT", READER_FILES.get)
    assert [(c.line, c.enclosing) for c in class_body] == [(31, "pkg.settings.Box")]


def test_review_of_a_changed_constant_lists_its_readers_and_tests(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(READER_FILES)
    base = repo.git("rev-parse", "HEAD").strip()
    repo.write("pkg/settings.py", SETTINGS.replace("600_000", "1_000_000"))
    head = repo.commit("more iterations")
    report = review(open_repository(repo.path), base, head, tmp_path / "base.duckdb",
                    tmp_path / "out", FakeEmbedder(), SilentProgress(), ReviewOptions())
    [symbol] = report.symbols
    assert (symbol.qualified_name, symbol.kind, symbol.change) == (
        "pkg.settings.ITERATIONS", "variable", "modified")
    assert {(c.path, c.symbol) for c in symbol.callers} == {
        ("pkg/auth.py", "pkg.auth.check"), ("pkg/cli.py", "pkg.cli.main"),
        ("pkg/settings.py", "pkg.settings.hash_password"),
        ("tests/test_settings.py", "tests.test_settings.test_default")}
    assert "tests/test_settings.py" in {t.path for t in symbol.tests}


@pytest.mark.parametrize("name", ["__version__", "__author__"])
def test_dunder_metadata_is_no_variable(name: str) -> None:
    assert module_variables(f"{name} = 'x'\n") == {}


@pytest.mark.parametrize("path", ["docs/conf.py", "examples/app.py", "tests/test_app.py",
                                  "tests/conftest.py"])
def test_globals_outside_library_code_are_no_symbols(make_repo: Callable[..., GitRepo],
                                                     path: str) -> None:
    repo = make_repo({path: "project = 'demo'\nLIMIT = 1\n"})
    base = repo.git("rev-parse", "HEAD").strip()
    repo.write(path, "project = 'demo2'\nLIMIT = 2\n")
    assert _changes(repo, base) == {}


@pytest.mark.parametrize(("old", "new", "same_runtime"), [
    ("X = cast(Dict[str, int], {})\n", "X = cast(dict[str, int], {})\n", True),
    ("X: Dict[str, int] = {}\n", "X: dict[str, int] = {}\n", True),
    ("X = cast(Dict[str, int], {})\n", "X = cast(Dict[str, int], {1: 2})\n", False),
    ("X: int = 1\n", "X: int = 2\n", False),
])
def test_a_variable_whose_types_alone_changed_holds_the_same_value(
        old: str, new: str, same_runtime: bool) -> None:
    before, after = module_variables(old), module_variables(new)
    assert before is not None and after is not None
    assert before["X"].value != after["X"].value
    assert (before["X"].runtime == after["X"].runtime) is same_runtime
