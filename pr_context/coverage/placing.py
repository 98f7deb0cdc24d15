"""Place coverage data in a repository: its paths, its lines, its test labels (pure).

- :func:`match_paths`: the paths coverage.py recorded (absolute on the machine that ran
  the tests, or relative) to repository paths, by their longest common tail, ties
  settled by the root most files agree on (``/home/runner/work/x/x/src/pkg/a.py`` and
  ``/venv/.../site-packages/pkg/a.py`` both become ``src/pkg/a.py``).
- :func:`line_map`: old line -> new line for the lines a zero-context diff left alone.
- :func:`misfit`: a recorded line that cannot have run in the given text (blank, a
  comment, past the end): proof that the data was measured at another commit.
- :func:`test_id`: a context label to a pytest node id: pytest-cov's
  ``NODEID|run``/``|setup``/``|teardown`` (after any static context), or coverage.py's
  own ``dynamic_context = test_function`` label ``tests.test_x.TestA.test_b``.
"""

from __future__ import annotations

import ast
import re
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

__all__ = ["SuiteFiles", "body_lines", "context_node_id", "line_map", "match_paths", "misfit",
           "suite_files"]

_PHASES = ("|run", "|setup", "|teardown")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_COMMENT = re.compile(r"^\s*(#.*)?$")


def _parts(path: str) -> tuple[str, ...]:
    return tuple(p for p in PurePosixPath(path.replace("\\", "/")).parts if p not in ("/", "."))


def _common_tail(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def match_paths(measured: Iterable[str], repo_paths: Collection[str]) -> dict[str, str]:
    """measured path -> repository path, for the measured paths some file's tail matches."""
    by_name: dict[str, list[tuple[str, ...]]] = defaultdict(list)
    for path in repo_paths:
        parts = _parts(path)
        if parts:
            by_name[parts[-1]].append(parts)
    candidates: dict[str, list[_Placing]] = {}
    votes: Counter[tuple[str, ...]] = Counter()  # repository roots the unique matches use
    for path in measured:
        parts = _parts(path)
        scored = [(_common_tail(parts, r), r) for r in by_name.get(parts[-1] if parts else "", ())]
        best = max((n for n, _ in scored), default=0)
        found = [_Placing(parts[: len(parts) - best], r[: len(r) - best], r)
                 for n, r in scored if n == best and n > 0]
        candidates[path] = found
        if len(found) == 1:
            votes[found[0].added] += 1
    return {path: "/".join(min(found, key=lambda c: (-votes[c.added], c.repo)).repo)
            for path, found in candidates.items() if found}


@dataclass(frozen=True)
class _Placing:
    """A measured path read as a repository path: the prefix dropped, the one added."""

    dropped: tuple[str, ...]
    added: tuple[str, ...]
    repo: tuple[str, ...]


def body_lines(text: str, start_line: int, end_line: int) -> frozenset[int]:
    """Lines of the Python definition spanning ``start_line``..``end_line`` that run when it
    is called: a function's body after its docstring (nested functions included), or the
    bodies of a class's methods. Empty when the text holds no such definition.

    Its ``def`` and decorator lines, and a class's own statements, run at import, which
    coverage records outside any test.
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return frozenset()
    spans = [n for n in ast.walk(tree) if isinstance(n, _DEFINITIONS)
             and n.end_lineno == end_line and start_line <= n.lineno <= end_line]
    if not spans:
        return frozenset()
    node = min(spans, key=lambda n: n.lineno)
    functions = [node] if isinstance(node, _FUNCTIONS) else [
        n for n in ast.walk(node) if isinstance(n, _FUNCTIONS)]
    return frozenset(line for f in functions for line in _function_body(f))


def _function_body(node: ast.FunctionDef | ast.AsyncFunctionDef) -> range:
    body = node.body
    first = body[0] if body else None
    if (len(body) > 1 and isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        first = body[1]
    return range(first.lineno if first else 0, (node.end_lineno or 0) + 1 if first else 0)


def line_map(removed: Collection[int], added: Collection[int], upto: int) -> dict[int, int]:
    """old line -> new line, for old lines 1..``upto`` a ``-U0`` diff did not touch.

    The untouched lines of both sides correspond one to one, in order.
    """
    mapping: dict[int, int] = {}
    old = new = 1
    while old <= upto:
        while old in removed:
            old += 1
        while new in added:
            new += 1
        if old > upto:
            break
        mapping[old] = new
        old += 1
        new += 1
    return mapping


def misfit(lines: Iterable[int], text: str) -> tuple[int, str] | None:
    """The first recorded line that cannot have run in ``text``, and what it is there."""
    source = text.splitlines()
    for line in sorted(lines):
        if line > len(source):
            return line, f"past the end ({len(source)} lines)"
        if _COMMENT.match(source[line - 1]):
            return line, "blank" if not source[line - 1].strip() else "a comment"
    return None


@dataclass(frozen=True)
class SuiteFiles:
    """The repository's test files, looked up by a path's tail or a module's tail."""

    paths: frozenset[str]
    by_tail: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    by_module: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def suite_files(modules: Mapping[str, str]) -> SuiteFiles:
    """Index test files (repository path -> dotted module, ``tests.test_x``)."""
    tails: dict[str, list[str]] = defaultdict(list)
    dotted: dict[str, list[str]] = defaultdict(list)
    for path, module in modules.items():
        parts, names = path.split("/"), module.split(".")
        for i in range(1, len(parts)):
            tails["/".join(parts[i:])].append(path)
        for i in range(len(names)):
            dotted[".".join(names[i:])].append(path)
    return SuiteFiles(frozenset(modules), {k: tuple(v) for k, v in tails.items()},
                     {k: tuple(v) for k, v in dotted.items()})


def context_node_id(context: str, tests: SuiteFiles) -> str | None:
    """The pytest node id a context label names, repository-relative; None for none."""
    label = context
    for phase in _PHASES:
        if label.endswith(phase):
            label = label[: -len(phase)]
            break
    if not label:
        return None
    if "::" in label:
        start = label.rfind("|", 0, label.index("::")) + 1  # after a static context
        return _node_path(label[start:], tests)
    return _dotted(label.rsplit("|", 1)[-1], tests)


def _node_path(node: str, tests: SuiteFiles) -> str | None:
    """``tests/x.py::t`` relative to pytest's rootdir, made repository-relative."""
    file, _, rest = node.partition("::")
    if file in tests.paths:
        return node
    found = tests.by_tail.get(file, ())
    return f"{found[0]}::{rest}" if len(found) == 1 else None


def _dotted(label: str, tests: SuiteFiles) -> str | None:
    """``tests.test_x.TestA.test_b`` (module, then qualified name) as a node id."""
    parts = label.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        found = tests.by_module.get(".".join(parts[:cut]), ())
        if len(found) == 1:
            return "::".join([found[0], *parts[cut:]])
    return None
