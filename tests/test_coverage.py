"""Coverage evidence (``review --coverage``): real coverage.py data files, real git repos.

Data files are written by coverage.py itself: through its ``CoverageData`` API for the
reader's unit tests, and by a real ``pytest --cov --cov-context=test`` run of a small
project's own tests (standing in for the user's CI) for the end-to-end tests.
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from coverage import CoverageData
from coverage.numbits import nums_to_numbits
from hypothesis import given
from hypothesis import strategies as st

from pr_context.cli import cli
from pr_context.coverage.data import CoverageReader, lines_to_numbits, numbits_to_lines
from pr_context.coverage.placing import (
    body_lines,
    context_node_id,
    line_map,
    match_paths,
    misfit,
    suite_files,
)
from pr_context.errors import CoverageFileError
from tests.conftest import GitRepo

CALC = (
    "def add(a, b):\n"
    "    return a + b\n"
    "\n"
    "\n"
    "def mul(a, b):\n"
    "    total = 0\n"
    "    for _ in range(b):\n"
    "        total = add(total, a)\n"
    "    return total\n"
    "\n"
    "\n"
    "def unused():\n"
    "    return 0\n"
)
PROJECT = {
    "pkg/__init__.py": "",
    "pkg/calc.py": CALC,
    "pkg/words.py": "def shout(text):\n    return text.upper()\n",
    "tests/__init__.py": "",
    "tests/test_add.py": "from pkg.calc import add\n\n\ndef test_add():\n"
                         "    assert add(1, 2) == 3\n",
    "tests/test_mul.py": "import pytest\n\nfrom pkg.calc import mul\n\n\n"
                         "@pytest.mark.parametrize('n', [1, 2])\ndef test_mul(n):\n"
                         "    assert mul(3, n) == 3 * n\n",
    "tests/test_words.py": "from pkg.words import shout\n\n\ndef test_shout():\n"
                           "    assert shout('a') == 'A'\n",
}


# -- the data file ----------------------------------------------------------------------------


@given(st.sets(st.integers(min_value=1, max_value=5000), max_size=200))
def test_numbits_agree_with_coverage_py(lines: set[int]) -> None:
    assert lines_to_numbits(lines) == nums_to_numbits(lines)
    assert numbits_to_lines(nums_to_numbits(lines)) == lines


def write_data(path: Path, by_context: dict[str, dict[str, list[int]]],
               arcs: bool = False) -> Path:
    data = CoverageData(basename=str(path))
    for context, files in by_context.items():
        data.set_context(context)
        if arcs:
            data.add_arcs({f: [(-1, lines[0]), *itertools.pairwise(lines), (lines[-1], -1)]
                           for f, lines in files.items()})
        else:
            data.add_lines(files)
    data.write()
    return path


@pytest.mark.parametrize("arcs", [False, True], ids=["lines", "arcs"])
def test_reader_reads_lines_and_contexts(tmp_path: Path, arcs: bool) -> None:
    path = write_data(tmp_path / ".coverage", {
        "": {"/ci/src/pkg/a.py": [1, 4]},
        "tests/test_a.py::test_one|run": {"/ci/src/pkg/a.py": [2, 3]},
        "tests/test_a.py::test_two|run": {"/ci/src/pkg/a.py": [5], "/ci/src/pkg/b.py": [1]},
    }, arcs)
    with CoverageReader(path) as reader:
        assert reader.has_arcs is arcs
        assert reader.measured_paths == ("/ci/src/pkg/a.py", "/ci/src/pkg/b.py")
        assert reader.executed_lines("/ci/src/pkg/a.py") == {1, 2, 3, 4, 5}
        labels = {i: c for i, c in reader.contexts.items()}
        found = {labels[i] for i in reader.contexts_executing("/ci/src/pkg/a.py", {3, 9})}
        assert found == {"tests/test_a.py::test_one|run"}
        assert reader.contexts_executing("/ci/src/pkg/a.py", set()) == set()
        assert reader.contexts_executing("/elsewhere.py", {1}) == set()


def _file(tmp: Path, data: bytes) -> Path:
    path = tmp / "data.coverage"
    path.write_bytes(data)
    return path


def _truncated(tmp: Path) -> Path:
    whole = write_data(tmp / "whole", {"t.py::t|run": {"/a.py": list(range(1, 500))}})
    cut = tmp / "truncated"
    cut.write_bytes(whole.read_bytes()[:600])
    return cut


def _sqlite(tmp: Path, sql: str) -> Path:
    path = tmp / "db.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(sql)
    return path


def _other_schema(tmp: Path) -> Path:
    path = write_data(tmp / "old", {"t.py::t|run": {"/a.py": [1]}})
    with sqlite3.connect(path) as db:
        db.execute("UPDATE coverage_schema SET version = 6")
    return path


def _bad_numbits(tmp: Path) -> Path:
    path = write_data(tmp / "bad", {"t.py::t|run": {"/a.py": [1]}})
    with sqlite3.connect(path) as db:
        db.execute("UPDATE line_bits SET numbits = 'not bytes'")
    return path


@pytest.mark.parametrize(("make", "message"), [
    pytest.param(lambda t: t / "missing", "cannot read coverage data", id="missing"),
    pytest.param(lambda t: _file(t, b""), "not SQLite", id="empty"),
    pytest.param(lambda t: _file(t, b"!coverage.py: This is a private format, don't read it "
                                    b"directly!{}"), "coverage.py 4 data", id="coverage-4-json"),
    pytest.param(lambda t: _file(t, os.urandom(2000)), "not SQLite", id="random-bytes"),
    pytest.param(_truncated, "truncated or corrupted", id="truncated"),
    pytest.param(lambda t: _sqlite(t, "CREATE TABLE x (a);"), "no table", id="other-sqlite"),
    pytest.param(_other_schema, "schema 6", id="other-schema"),
    pytest.param(lambda t: t, "cannot read coverage data", id="a-directory"),
])
def test_unusable_files_are_errors_that_name_them(tmp_path: Path,
                                                  make: Callable[[Path], Path],
                                                  message: str) -> None:
    path = make(tmp_path)
    with pytest.raises(CoverageFileError, match=message) as raised, \
            CoverageReader(path) as reader:
        reader.executed_lines(reader.measured_paths[0])
    assert str(path) in str(raised.value)


def test_rows_that_do_not_decode_are_an_error_naming_the_file(tmp_path: Path) -> None:
    path = _bad_numbits(tmp_path)
    with CoverageReader(path) as reader, pytest.raises(CoverageFileError, match=str(path)):
        reader.contexts_executing("/a.py", {1})


def test_the_reader_writes_nothing(tmp_path: Path) -> None:
    path = write_data(tmp_path / ".coverage", {"t.py::t|run": {"/a.py": [1]}})
    before = sorted(p.name for p in tmp_path.iterdir()), path.read_bytes()
    with CoverageReader(path) as reader:
        reader.executed_lines("/a.py")
    assert (sorted(p.name for p in tmp_path.iterdir()), path.read_bytes()) == before


# -- placing ----------------------------------------------------------------------------------


def test_measured_paths_become_repository_paths() -> None:
    found = match_paths(["/home/runner/work/x/x/src/pkg/a.py",
                         "/venv/lib/python3.11/site-packages/pkg/b.py",
                         "C:\\runner\\src\\pkg\\c.py", "src/pkg/d.py", "/tmp/other.py"],
                        ["src/pkg/a.py", "src/pkg/b.py", "vendor/pkg/b.py", "src/pkg/c.py",
                         "src/pkg/d.py", "docs/conf.py"])
    assert found == {"/home/runner/work/x/x/src/pkg/a.py": "src/pkg/a.py",
                     "/venv/lib/python3.11/site-packages/pkg/b.py": "src/pkg/b.py",
                     "C:\\runner\\src\\pkg\\c.py": "src/pkg/c.py",
                     "src/pkg/d.py": "src/pkg/d.py"}


@given(st.lists(st.sampled_from("abcde"), max_size=30),
       st.lists(st.sampled_from("abcde"), max_size=30))
def test_line_map_follows_a_real_diff(old: list[str], new: list[str]) -> None:
    """Every line the diff left alone maps to an equal line on the other side."""
    import difflib

    removed, added = set(), set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new,
                                                       autojunk=False).get_opcodes():
        if tag != "equal":
            removed.update(range(i1 + 1, i2 + 1))
            added.update(range(j1 + 1, j2 + 1))
    mapping = line_map(removed, added, len(old))
    assert set(mapping) == set(range(1, len(old) + 1)) - removed
    assert all(old[o - 1] == new[n - 1] for o, n in mapping.items())


@pytest.mark.parametrize(("lines", "expected"), [
    ({1, 2}, None),
    ({3}, (3, "blank")),
    ({4}, (4, "a comment")),
    ({9}, (9, "past the end (5 lines)")),
])
def test_misfit_finds_lines_that_cannot_have_run(lines: set[int],
                                                 expected: tuple[int, str] | None) -> None:
    text = "def f():\n    return 1\n\n    # note\nx = f()\n"
    assert misfit(lines, text) == expected


@pytest.mark.parametrize(("context", "expected"), [
    ("tests/test_a.py::TestA::test_b[1|2]|run", "tests/test_a.py::TestA::test_b[1|2]"),
    ("tests/test_a.py::test_b|setup", "tests/test_a.py::test_b"),
    ("ci-build|tests/test_a.py::test_b|teardown", "tests/test_a.py::test_b"),
    ("tests/test_c.py::test_d|run", "python/tests/test_c.py::test_d"),  # rootdir python/
    ("tests.test_a.TestA.test_b", "tests/test_a.py::TestA::test_b"),  # test_function
    ("test_c.test_d", "python/tests/test_c.py::test_d"),
    ("", None),
    ("docs/conf.py::x|run", None),
    ("some.module.function", None),
])
def test_contexts_become_node_ids(context: str, expected: str | None) -> None:
    tests = suite_files({"tests/test_a.py": "tests.test_a",
                        "python/tests/test_c.py": "python.tests.test_c"})
    assert context_node_id(context, tests) == expected


def test_body_lines_are_what_runs_when_called() -> None:
    text = ("import x\n\n\n@decorate\ndef f(a):\n    '''Doc.'''\n    b = 1\n"
            "    def g():\n        return 2\n    return b\n\n\n"
            "class C:\n    X = 1\n\n    def m(self):\n        return 1\n")
    assert body_lines(text, 4, 10) == set(range(7, 11))
    assert body_lines(text, 13, 17) == {17}
    assert body_lines(text, 1, 1) == set()
    assert body_lines("def broken(:\n", 1, 1) == set()


# -- review --coverage, end to end ------------------------------------------------------------


def run_tests_with_coverage(repo: GitRepo, data: Path) -> Path:
    """The user's CI: the project's own tests under pytest-cov, one context per test."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--cov=pkg",
         "--cov-context=test", "--cov-report=", "tests"],
        cwd=repo.path, capture_output=True, text=True, check=False,
        env={**os.environ, "COVERAGE_FILE": str(data)})
    assert done.returncode == 0, done.stdout + done.stderr
    return data


def review_json(repo: GitRepo, base: str, head: str, tmp: Path, *extra: str
                ) -> tuple[int, str, dict[str, Any]]:
    out = tmp / "out"
    result = CliRunner().invoke(cli, [
        "review", "--repo", str(repo.path), "--base", base, "--head", head,
        "--db", str(tmp / "base.duckdb"), "--out", str(out), "--no-embeddings", "--quiet",
        *extra])
    evidence = json.loads((out / "evidence.json").read_text()) if result.exit_code == 0 else {}
    return result.exit_code, result.output, evidence


def symbol(evidence: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in evidence["changed_symbols"]
                                 if s["qualified_name"] == name)
    return found


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[GitRepo, str, Path]:
    """A project, its coverage data at its first commit, and that commit."""
    tmp = tmp_path_factory.mktemp("measured")
    repo = GitRepo(tmp / "repo")
    for path, text in PROJECT.items():
        repo.write(path, text)
    measured_at = repo.commit("initial")
    return repo, measured_at, run_tests_with_coverage(repo, tmp / "ci.coverage")


def edit(repo: GitRepo, base: str, files: dict[str, str], branch: str) -> str:
    repo.git("checkout", "-q", "-B", branch, base)
    for path, text in files.items():
        repo.write(path, text)
    head = repo.commit(branch)
    repo.git("checkout", "-q", "main")
    return head


def test_coverage_names_the_tests_that_ran_each_changed_symbol(
        measured: tuple[GitRepo, str, Path], tmp_path: Path) -> None:
    repo, base, data = measured
    head = edit(repo, base, {"pkg/calc.py": CALC.replace("return total", "return total or 0")
                             .replace("return 0\n", "return None\n")}, "edit-mul")

    code, output, evidence = review_json(repo, base, head, tmp_path, "--coverage", str(data))

    assert code == 0, output
    mul = symbol(evidence, "pkg.calc.mul")
    assert mul["coverage"]["status"] == "executed"
    assert mul["coverage"]["tests"] == ["tests/test_mul.py::test_mul[1]",
                                        "tests/test_mul.py::test_mul[2]"]
    first = mul["tests"][0]
    assert first["path"] == "tests/test_mul.py" and "coverage" in first["signals"]
    assert first["node_ids"] == mul["coverage"]["tests"]
    unused = symbol(evidence, "pkg.calc.unused")
    assert unused["coverage"]["status"] == "not_executed"
    assert evidence["summary"]["no_test_runs"] == 1
    assert evidence["test_selection"] == mul["coverage"]["tests"]
    assert evidence["run_everything"] is False
    details = {d["target"]: d["reasons"] for d in evidence["test_selection_details"]}
    assert any("ran mul" in r for r in details["tests/test_mul.py::test_mul[1]"])
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert "no test runs this" in comment and "1 run by no test" in comment


def test_what_coverage_cannot_see_is_selected_from_the_graph(
        measured: tuple[GitRepo, str, Path], tmp_path: Path) -> None:
    repo, base, data = measured
    head = edit(repo, base, {
        "pkg/calc.py": CALC + "\n\ndef square(a):\n    return mul(a, a)\n",
        "tests/test_square.py": "from pkg.calc import square\n\n\ndef test_square():\n"
                                "    assert square(2) == 4\n",
    }, "add-square")

    code, output, evidence = review_json(repo, base, head, tmp_path, "--coverage", str(data))

    assert code == 0, output
    assert symbol(evidence, "pkg.calc.square")["coverage"] is None  # new code
    assert "tests/test_square.py" in evidence["test_selection"]


def test_coverage_from_an_older_commit_is_remapped(measured: tuple[GitRepo, str, Path],
                                                   tmp_path: Path) -> None:
    repo, measured_at, data = measured
    # Three lines above everything: every measured line moves down by three.
    base = edit(repo, measured_at, {"pkg/calc.py": "# arithmetic\n\n\n" + CALC}, "shifted")
    head = edit(repo, base, {"pkg/calc.py": "# arithmetic\n\n\n" + CALC.replace(
        "return a + b", "return b + a")}, "edit-add")

    code, output, evidence = review_json(repo, base, head, tmp_path, "--coverage", str(data),
                                         "--coverage-rev", measured_at)

    assert code == 0, output
    add = symbol(evidence, "pkg.calc.add")
    assert add["coverage"]["status"] == "executed"
    assert "tests/test_add.py::test_add" in add["coverage"]["tests"]
    assert evidence["coverage"]["revision"] == measured_at


def test_coverage_from_another_revision_is_refused_without_its_commit(
        measured: tuple[GitRepo, str, Path], tmp_path: Path) -> None:
    repo, measured_at, data = measured
    base = edit(repo, measured_at, {"pkg/calc.py": "# arithmetic\n\n\n" + CALC}, "shifted2")
    head = edit(repo, base, {"pkg/calc.py": "# arithmetic\n\n\n" + CALC.replace(
        "return a + b", "return b + a")}, "edit-add2")

    code, output, _ = review_json(repo, base, head, tmp_path, "--coverage", str(data))

    assert code == 2
    assert "does not fit" in output and "pkg/calc.py" in output
    assert "--coverage-rev" in output and "Traceback" not in output


@pytest.mark.parametrize(("extra", "message"), [
    pytest.param(["--coverage-rev", "no-such-rev"], "no-such-rev", id="unknown-revision"),
    pytest.param(["--coverage-rev", "HEAD", "--no-coverage"], "no such option",
                 id="bad-option"),
])
def test_bad_coverage_options_exit_2(measured: tuple[GitRepo, str, Path], tmp_path: Path,
                                     extra: list[str], message: str) -> None:
    repo, base, data = measured
    head = edit(repo, base, {"pkg/words.py": "def shout(text):\n    return text.upper()"
                                             " + '!'\n"}, "edit-words")
    code, output, _ = review_json(repo, base, head, tmp_path, "--coverage", str(data), *extra)
    assert code == 2 and message in output.lower()


def test_a_corrupt_coverage_file_is_an_error_that_names_it(
        measured: tuple[GitRepo, str, Path], tmp_path: Path) -> None:
    repo, base, _ = measured
    head = edit(repo, base, {"pkg/words.py": "def shout(text):\n    return text\n"}, "e3")
    broken = tmp_path / "broken.coverage"
    broken.write_bytes(b"SQLite format 3\0" + os.urandom(3000))

    code, output, _ = review_json(repo, base, head, tmp_path, "--coverage", str(broken))

    assert code == 2 and str(broken) in output and "Traceback" not in output


def test_coverage_without_test_contexts_says_how_to_record_them(
        measured: tuple[GitRepo, str, Path], tmp_path: Path) -> None:
    repo, base, _ = measured
    head = edit(repo, base, {"pkg/words.py": "def shout(text):\n    return text\n"}, "e4")
    plain = write_data(tmp_path / "plain.coverage",
                       {"": {str(repo.path / "pkg" / "words.py"): [1, 2]}})

    code, output, _ = review_json(repo, base, head, tmp_path, "--coverage", str(plain))

    assert code == 2 and "--cov-context=test" in output
