"""The callers check's sample, read from the diff, and why a caller was missed.

Pure functions over text; ``run_review_eval.py`` feeds them git's output. The sample is
taken from the diff itself, not from what pr-context reported, so a function pr-context
fails to report counts as missed callers instead of leaving the sample:

- :func:`touched_lines` reads a ``git diff -U0``: the added head lines and the removed
  base lines of each file.
- :func:`changed_functions` parses both sides with Python's ``ast`` and lists the head's
  functions whose span (decorators included) holds an added line, or whose base
  counterpart's span holds a removed line. A change inside a
  nested function (a closure a decorator returns, a helper defined in a method) belongs
  to the outermost function around it: that is what callers call. A class body starts
  afresh: a method of a class defined inside a function is its own function.
- :func:`miss_kind` says, from the site's source, what kind of receiver or binding the
  call site had that pr-context's graph did not resolve.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["ChangedFunction", "changed_functions", "miss_kind", "touched_lines"]

_FILE = re.compile(r"^\+\+\+ (?:b/)?(.+)$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_PROPERTIES = frozenset({"property", "cached_property"})
_Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class ChangedFunction:
    """A function the diff changed, or whose nested functions it changed."""

    path: str
    local_name: str  # enclosing classes and the name: ``Client.send``
    line: int  # the ``def`` line
    column: int  # the name's column on it
    start: int  # first line, decorators included
    nested: tuple[str, ...]  # nested functions the change was in (local names)
    is_property: bool


def touched_lines(patch: str) -> dict[str, tuple[set[int], set[int]]]:
    """Path -> (head lines added, base lines removed), from a ``git diff -U0 --no-renames``."""
    touched: dict[str, tuple[set[int], set[int]]] = {}
    base_path = ""
    for line in patch.splitlines():
        if line.startswith("--- "):
            base_path = line[4:].removeprefix("a/")
            continue
        named = _FILE.match(line)
        if named:
            path = base_path if named.group(1) == "/dev/null" else named.group(1)
            current = touched.setdefault(path, (set(), set()))
            continue
        hunk = _HUNK.match(line)
        if hunk:
            old_start, old_count, new_start, new_count = (
                int(hunk.group(1)), int(hunk.group(2) or 1), int(hunk.group(3)),
                int(hunk.group(4) or 1))
            current[0].update(range(new_start, new_start + new_count))
            current[1].update(range(old_start, old_start + old_count))
    return touched


def changed_functions(path: str, head: str, added: set[int], base: str | None = None,
                      removed: frozenset[int] | set[int] = frozenset()
                      ) -> list[ChangedFunction]:
    """The functions of ``head`` that the ``added`` head lines, or the ``removed`` lines of
    ``base``, fall in, in file order. Left out: a function the head no longer has, and one
    whose text equals its base counterpart's (moved within the file, not changed). A file
    that does not parse has none.
    """
    head_tree = _parse(head)
    if head_tree is None:
        return []
    lines = head.splitlines()
    functions = list(_functions(head_tree, (), None))
    at_head = {local: (node, reach) for node, local, reach in functions}
    touched = [(node, local, reach) for node, local, reach in functions
               if _holds(node, added)]
    base_tree = _parse(base)
    at_base = {local: node for node, local, _ in _functions(base_tree, (), None)} \
        if base_tree is not None else {}
    touched += [(at_head[local][0], local, at_head[local][1])
                for local, node in at_base.items()
                if _holds(node, removed) and local in at_head]
    found: dict[str, ChangedFunction] = {}
    base_lines = (base or "").splitlines()
    for node, local, reach in touched:
        own = reach or (node, local)
        if own[1] in at_base and _text(lines, own[0]) == _text(base_lines, at_base[own[1]]):
            continue
        previous = found.get(own[1]) or _changed(path, own[0], own[1], lines)
        nested = previous.nested + ((local,) if reach and local not in previous.nested
                                    else ())
        found[own[1]] = ChangedFunction(path, own[1], previous.line, previous.column,
                                        previous.start, nested, previous.is_property)
    return sorted(found.values(), key=lambda f: f.start)


def _text(lines: list[str], node: _Function) -> list[str]:
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return [line.strip() for line in lines[start - 1:node.end_lineno or node.lineno]]


def _parse(text: str | None) -> ast.Module | None:
    try:
        return ast.parse(text) if text is not None else None
    except (SyntaxError, ValueError):
        return None


def _holds(node: _Function, lines: set[int] | frozenset[int]) -> bool:
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return any(start <= n <= (node.end_lineno or node.lineno) for n in lines)


def _functions(node: ast.AST, prefix: tuple[str, ...],
               reach: tuple[_Function, str] | None
               ) -> Iterator[tuple[_Function, str, tuple[_Function, str] | None]]:
    """(function, local name, the outermost function around it or None) for each one."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            yield from _functions(child, (*prefix, child.name), None)
        elif isinstance(child, _Function):
            local = ".".join((*prefix, child.name))
            yield child, local, reach
            yield from _functions(child, (*prefix, child.name), reach or (child, local))
        else:
            yield from _functions(child, prefix, reach)


def _changed(path: str, node: _Function, local: str, lines: list[str]) -> ChangedFunction:
    text = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
    name = re.search(rf"\bdef\s+({re.escape(node.name)})\b", text)
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    decorators = {_last_name(d) for d in node.decorator_list}
    return ChangedFunction(path, local, node.lineno, name.start(1) if name else 0, start, (),
                           bool(decorators & _PROPERTIES))


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


# -- why a site was missed ------------------------------------------------------------------


def miss_kind(tree: ast.Module | None, line: int, name: str) -> str:
    """What the site on ``line`` of ``tree`` naming ``name`` calls it on, as a failure kind.

    ``return-type receiver``: a call's result (``f().name``, or a local assigned one);
    ``enum member``: an upper-case member of a class (``Color.RED.name``); ``module
    global``: a name assigned at module level or imported from a module; ``parameter``:
    a parameter of the enclosing function; ``attribute``: ``self.x.name`` or another
    attribute chain; ``bare name``: ``name`` itself; ``other``: anything else.
    """
    if tree is None:
        return "other"
    site = next((n for n in ast.walk(tree) if _names_at(n, name, line)), None)
    if isinstance(site, ast.Name):
        return "bare name"
    if not isinstance(site, ast.Attribute):
        return "other"
    return _receiver_kind(tree, site.value, line)


def _names_at(node: ast.AST, name: str, line: int) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == name and node.end_lineno == line
    return isinstance(node, ast.Name) and node.id == name and node.lineno == line


def _receiver_kind(tree: ast.Module, receiver: ast.expr, line: int) -> str:
    if isinstance(receiver, ast.Await):
        receiver = receiver.value
    if isinstance(receiver, ast.Call):
        return "return-type receiver"
    if isinstance(receiver, ast.Attribute):
        member = receiver.attr
        if member.isupper() and isinstance(receiver.value, ast.Name | ast.Attribute):
            return "enum member"
        return "attribute"
    if not isinstance(receiver, ast.Name):
        return "other"
    function = _innermost_function(tree, line)
    if function is not None:
        if receiver.id in _parameter_names(function):
            return "parameter"
        value = _assigned_value(function, receiver.id)
        if value is not None:
            return "return-type receiver" if isinstance(value, ast.Call | ast.Await) \
                else "other"
    return "module global" if _module_binds(tree, receiver.id) else "other"


def _innermost_function(tree: ast.Module, line: int) -> _Function | None:
    found = None
    for node in ast.walk(tree):
        if isinstance(node, _Function) and node.lineno <= line <= (node.end_lineno or 0) \
                and (found is None or node.lineno >= found.lineno):
            found = node
    return found


def _parameter_names(function: _Function) -> set[str]:
    args = function.args
    return {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg,
                            args.kwarg) if a is not None}


def _assigned_value(function: _Function, name: str) -> ast.expr | None:
    """The value last assigned to ``name`` in ``function``: ``x = ...``, ``with ... as x``."""
    value = None
    for node in ast.walk(function):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None and any(
                isinstance(t, ast.Name) and t.id == name for t in _targets(node)):
            value = node.value
        elif isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name) \
                and node.optional_vars.id == name:
            value = node.context_expr
    return value


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return node.targets if isinstance(node, ast.Assign) else [node.target]


def _module_binds(tree: ast.Module, name: str) -> bool:
    """Whether the module assigns ``name`` at top level or imports it from a module."""
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            if any(isinstance(t, ast.Name) and t.id == name for t in _targets(node)):
                return True
        elif isinstance(node, ast.ImportFrom) and any(
                (a.asname or a.name) == name for a in node.names):
            return not name[:1].isupper()  # an imported class is no instance
    return False
