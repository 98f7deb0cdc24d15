"""Classes of local names where the source makes them evident (Python only).

A name gets a class from a parameter annotation (``def f(x: C)``), a constructor call
(``x = C(...)``, ``self.x = C(...)``), an annotated assignment (``x: C = ...``) or, for a
parameter of a test or fixture, a pytest fixture of that name whose return annotation or
``return C(...)`` / ``yield C(...)`` names a class. Any other assignment to the name makes
it unknown again from that line on. Nothing here infers through calls, containers or
branches: an untyped name stays unknown, so its calls stay lexical candidates.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import replace

from pr_context.graph.names import bind_name, enclosing_class, resolve_dotted
from pr_context.graph.tables import CLASS_KINDS, Assignment, Def, Tables

__all__ = ["bind_types", "is_local", "variable_class"]

_FUNCTION_KINDS = frozenset({"function", "method"})
_SELF = frozenset({"self", "cls"})
# `x = ...`, `x: T = ...`, `self.x = ...`; not `==`, not keyword arguments (indented
# continuation lines are not told apart, but `f(\n    x=C())` has no space before `=`).
_ASSIGN = re.compile(r"\s*(self\.)?([A-Za-z_]\w*)\s*(?::\s*([^=]+?))?\s+=\s+(\S.*)")
_CALLED = re.compile(r"(?:await\s+)?([A-Za-z_][\w.]*)\(")
_REBOUND = re.compile(r"\s*(?:async\s+)?(?:for\s+(.+?)\s+in\b|with\b.*\bas\s+(\w+)\s*:)"
                      r"|\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)\s*=[^=]")
_RETURNED = re.compile(r"\s*(?:return|yield)\s+(?:await\s+)?([A-Za-z_][\w.]*)(\()?")
_FIXTURE = re.compile(r"\s*@(?:pytest\.)?fixture\b")
_DEF_LINE = re.compile(r"\s*(?:async\s+)?def\s")
_OPTIONAL = re.compile(r"Optional\[(.+)\]|(.+?)\s*\|\s*None|None\s*\|\s*(.+)")
_DEPTH = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}
_DOTTED = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*")


def bind_types(tables: Tables) -> Tables:
    """``tables`` with the variables and ``self`` attributes whose class is evident."""
    variables: dict[tuple[str, str], list[Assignment]] = defaultdict(list)
    attributes: dict[tuple[str, str], list[Assignment]] = defaultdict(list)
    for d in _python_functions(tables):
        for name, annotation in _parameters(d.signature):
            cls = _annotated_class(tables, d, annotation)
            if cls:
                variables[(d.qualified_name, name)].append(
                    Assignment(d.start_line, cls, f"annotated as {cls}"))
    for path, lines in tables.lines.items():
        _bind_lines(tables, path, lines, variables, attributes)
    tables = replace(tables, variables=_sorted(variables),
                     attributes=_agreed(attributes))
    return replace(tables, variables=_sorted(_with_fixtures(tables, variables)))


def variable_class(tables: Tables, scope: str | None, name: str,
                   line: int) -> Assignment | None:
    """What ``name`` holds at ``line`` in ``scope`` or an enclosing function, if known."""
    current = tables.definitions.get(scope or "")
    if current is None or current.kind not in _FUNCTION_KINDS:
        return None
    held = [a for a in tables.variables.get((current.qualified_name, name), ())
            if a.line < line]
    if held or (current.qualified_name, name) in tables.variables:
        return held[-1] if held and held[-1].cls else None
    # A closure runs after its function has bound the name: every binding must agree.
    outer = tables.definitions.get(current.parent or "")
    while outer is not None and outer.kind in _FUNCTION_KINDS:
        every = tables.variables.get((outer.qualified_name, name), ())
        if every:
            return every[0] if len({a.cls for a in every}) == 1 and every[0].cls else None
        outer = tables.definitions.get(outer.parent or "")
    return None


def is_local(tables: Tables, scope: str | None, name: str) -> bool:
    """Whether ``name`` is a parameter or assigned local of ``scope`` or a function around it.

    Such a name hides a module-level definition of the same name (a pytest fixture's
    parameter names the fixture function, but holds its value).
    """
    current = tables.definitions.get(scope or "")
    while current is not None and current.kind in _FUNCTION_KINDS:
        if (current.qualified_name, name) in tables.variables or any(
                p == name for p, _ in _parameters(current.signature)):
            return True
        current = tables.definitions.get(current.parent or "")
    return False


def _python_functions(tables: Tables) -> Iterator[Def]:
    return (d for d in tables.definitions.values()
            if d.language == "python" and d.kind in _FUNCTION_KINDS)


def _bind_lines(tables: Tables, path: str, lines: Mapping[int, str],
                variables: dict[tuple[str, str], list[Assignment]],
                attributes: dict[tuple[str, str], list[Assignment]]) -> None:
    """Record each assignment of a local name or ``self`` attribute in ``path``."""
    owners = _line_owners(tables, path)
    for line, text in lines.items():
        scope = owners.get(line)
        if scope is None:
            continue
        for name, assigned in _assignments(tables, scope, line, text):
            if name.startswith("self."):
                cls = enclosing_class(tables, scope.qualified_name)
                if cls:
                    attributes[(cls, name[5:])].append(assigned)
            else:
                variables[(scope.qualified_name, name)].append(assigned)


def _assignments(tables: Tables, scope: Def, line: int,
                 text: str) -> Iterator[tuple[str, Assignment]]:
    rebound = _REBOUND.match(text)
    if rebound:
        targets = rebound.group(1) or rebound.group(2) or rebound.group(3)
        for name in re.findall(r"[A-Za-z_]\w*", targets):
            yield name, Assignment(line, None, "")
        return
    match = _ASSIGN.match(text)
    if match is None:
        return
    is_self, name, annotation, value = match.groups()
    cls = _annotated_class(tables, scope, annotation) if annotation else None
    called = _CALLED.match(value)
    if cls is None and called:
        cls = _class_named(tables, scope, called.group(1))
    source = (f"annotated as {annotation.strip()}" if annotation
              else f"assigned {called.group(1)}(...)" if called else "assigned")
    how = f"{source} on line {line}"
    if value.strip() != "None":  # `x = None` until set: calling on it would fail anyway
        yield ("self." if is_self else "") + name, Assignment(line, cls, how)


def _line_owners(tables: Tables, path: str) -> dict[int, Def]:
    """line -> the innermost function of ``path`` whose body holds it."""
    owners: dict[int, Def] = {}
    functions = sorted((d for d in _python_functions(tables) if d.path == path),
                       key=lambda d: (d.start_line, -d.end_line))
    for d in functions:  # an inner function comes later and overwrites its lines
        for line in range(d.start_line, d.end_line + 1):
            owners[line] = d
    return owners


def _with_fixtures(tables: Tables, variables: dict[tuple[str, str], list[Assignment]]
                   ) -> dict[tuple[str, str], list[Assignment]]:
    """Parameters of tests and fixtures typed by the fixture of their name.

    Two rounds, so a fixture that returns another fixture (``def f(pm): return pm``)
    is typed too. A nearer fixture of unknown class hides a farther typed one.
    """
    fixtures = [d for d in _python_functions(tables) if _is_fixture(tables, d)]
    requesting = [d for d in _python_functions(tables)
                  if d.name.startswith("test") or d in fixtures]
    typed = dict(variables)
    for _ in range(2):
        by_name: dict[str, list[tuple[Def, Assignment | None]]] = defaultdict(list)
        for d in fixtures:
            by_name[d.name].append((d, _fixture_class(tables, d)))
        for d in requesting:
            for name, annotation in _parameters(d.signature):
                key = (d.qualified_name, name)
                found = None if annotation or key in variables else _visible_fixture(
                    d.path, by_name.get(name, []))
                if found:
                    typed[key] = [replace(found, line=d.start_line)]
        tables = replace(tables, variables=_sorted(typed))
    return typed


def _is_fixture(tables: Tables, d: Def) -> bool:
    lines = tables.lines.get(d.path, {})
    for line in range(d.start_line, d.end_line + 1):
        text = lines.get(line, "")
        if _DEF_LINE.match(text):
            return False
        if _FIXTURE.match(text):
            return True
    return False


def _fixture_class(tables: Tables, d: Def) -> Assignment | None:
    """The class a fixture returns: its return annotation, else its ``return C(...)``."""
    where = f"the fixture {d.name} ({d.path}:{d.start_line}) returning"
    cls = _annotated_class(tables, d, d.signature.rpartition("->")[2].strip()
                           if "->" in d.signature else None)
    if cls:
        return Assignment(d.start_line, cls, f"{where} {cls}")
    lines = tables.lines.get(d.path, {})
    for line in range(d.start_line, d.end_line + 1):
        returned = _RETURNED.match(lines.get(line, ""))
        if returned and returned.group(2):
            cls = _class_named(tables, d, returned.group(1))
        elif returned:
            held = variable_class(tables, d.qualified_name, returned.group(1), line)
            cls = held.cls if held else None
        if returned:
            return Assignment(d.start_line, cls, f"{where} {cls}") if cls else None
    return None


def _visible_fixture(path: str, candidates: list[tuple[Def, Assignment | None]]
                     ) -> Assignment | None:
    """The fixture pytest would pass in ``path``: same file, then the nearest conftest.py."""
    directory = posixpath.dirname(path)
    ranked: list[tuple[tuple[int, int], Assignment | None]] = []
    for d, assigned in candidates:
        if d.path == path:
            ranked.append(((0, 0), assigned))
        elif posixpath.basename(d.path) == "conftest.py":
            home = posixpath.dirname(d.path)
            if home == "" or directory == home or directory.startswith(home + "/"):
                ranked.append(((1, -len(home)), assigned))  # the deepest first
    return min(ranked, key=lambda r: r[0])[1] if ranked else None


def _parameters(signature: str) -> Iterator[tuple[str, str | None]]:
    """(name, annotation) of each parameter in a ``def`` signature, ``self`` left out."""
    inside = signature.partition("(")[2].rpartition(")")[0]
    for part in _top_level_split(inside):
        head, _, _default = _top_level_partition(part, "=")
        name, colon, annotation = head.partition(":")
        name = name.strip().lstrip("*")
        if name.isidentifier() and name not in _SELF:
            yield name, annotation.strip() if colon else None


def _top_level_split(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        depth += _DEPTH.get(char, 0)
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    return [*parts, "".join(current)]


def _top_level_partition(text: str, separator: str) -> tuple[str, str, str]:
    depth = 0
    for i, char in enumerate(text):
        depth += _DEPTH.get(char, 0)
        if char == separator and depth == 0:
            return text[:i], separator, text[i + 1:]
    return text, "", ""


def _annotated_class(tables: Tables, scope: Def, annotation: str | None) -> str | None:
    """The index class an annotation names: ``C``, ``"C"``, ``m.C``, ``C | None``."""
    if not annotation:
        return None
    text = annotation.strip().strip("'\"").strip()
    optional = _OPTIONAL.fullmatch(text)
    if optional:
        text = next(g for g in optional.groups() if g).strip().strip("'\"")
    return _class_named(tables, scope, text) if _DOTTED.fullmatch(text) else None


def _class_named(tables: Tables, scope: Def, dotted: str) -> str | None:
    """The index class ``dotted`` denotes where ``scope`` is, or None."""
    head, _, rest = dotted.partition(".")
    binding = bind_name(tables, scope.path, scope.qualified_name, head)
    target = binding and resolve_dotted(tables, ".".join(
        p for p in (binding.target, rest) if p))
    d = tables.definitions.get(target or "")
    return d.qualified_name if d and d.kind in CLASS_KINDS else None


def _sorted(variables: Mapping[tuple[str, str], list[Assignment]]
            ) -> dict[tuple[str, str], tuple[Assignment, ...]]:
    return {key: tuple(sorted(held, key=lambda a: a.line)) for key, held in variables.items()}


def _agreed(attributes: Mapping[tuple[str, str], list[Assignment]]
            ) -> dict[tuple[str, str], Assignment]:
    """Attributes every assignment of which (``None`` aside) gives the same class."""
    agreed = {}
    for key, held in attributes.items():
        classes = {a.cls for a in held}
        if len(classes) == 1 and None not in classes:
            agreed[key] = min(held, key=lambda a: a.line)
    return agreed
