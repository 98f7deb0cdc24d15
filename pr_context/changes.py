"""Which functions, methods, classes and module-level variables a diff changed, and how.

``changed_symbols`` is pure: it maps the lines a unified diff touched onto the
definition spans of both revisions. ``changed_symbols_between`` is the I/O edge: it asks
git for the diff and the blobs, parses the changed code files and calls it.

Rules, per file pair (base path -> head path, following git renames):

- Counterparts are matched by qualified name, then by the name relative to the file
  (enclosing classes + name), which follows a moved file whose module path changed.
- A definition's span is extended upward over the comment lines directly above it, so
  an edited doc comment belongs to the symbol it documents.
- A matched definition is touched when a removed base line or an added head line falls in
  its own span: its span minus the spans of definitions nested in it. So an edit inside a
  method reports the method, not its class; blank lines never make a class touched.
- Change kinds, first match wins: ``signature_changed`` (parameters, defaults, annotations
  or return annotation differ), ``renamed`` (qualified name differs: a moved file, or a
  removed and an added definition whose text is equal modulo the name), ``modified``
  (touched and its own text differs), ``added``, ``removed``. A definition whose text
  did not change is not listed, even if the diff moved it within the file.
- Across files: a definition removed from one file and added to another under the same
  file-relative name, with code at least ``MOVE_SIMILARITY`` alike, moved: ``renamed``
  (or ``signature_changed``) with ``old_path`` and ``old_qualified_name``.
- ``cosmetic`` marks a modification of comments, docstrings or whitespace only; for
  Python the code is compared as an AST, so re-indenting a statement into a block is not
  cosmetic. ``types_only`` marks a module-level variable whose annotation or ``cast``
  type alone changed: the value it holds is the same.
- A change inside a definition nested in a function (the closure a decorator returns, a
  helper or generator defined in a method, a local class) is a change of the outermost
  function around it, which is what callers call: that function is reported
  (``modified`` unless its own change says more), with the nested definitions named in
  ``changed_inside``; the nested ones are not reported on their own.
- Python ``@overload`` stubs and TypeScript overload signatures declare one function:
  however many of them changed, it is one symbol spanning them all, with the
  implementation's signature (Java's overloads are distinct methods and stay apart).
- Python module-level variables of production files (``variables.module_variables``:
  constants, settings, ``__all__``) are symbols of kind ``variable``: ``added``,
  ``removed``, or ``modified`` when the diff touched an assignment to the name and the
  assigned code differs as an AST (reformatting one is no change).
"""

from __future__ import annotations

import ast
import difflib
import re
import textwrap
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from pr_context.diff import FileDiff, parse_patch
from pr_context.git import BlobReader, PathChange, Repository, changed_paths, unified_diff
from pr_context.languages import CODE_LANGUAGES, language_for_path
from pr_context.models import Definition, ParsedFile, Sha
from pr_context.parse import parse_file
from pr_context.parse.code_paths import module_path
from pr_context.policy import PathPolicy, decode_text, skip_reason_for_content
from pr_context.roles import classify_path
from pr_context.signatures import parameter_changes
from pr_context.variables import ModuleVariable, module_variables, parse_python

__all__ = [
    "MAX_CHANGED_FILES",
    "MOVE_SIMILARITY",
    "ChangeKind",
    "ChangedSymbol",
    "SourceFile",
    "SymbolChanges",
    "changed_symbols",
    "changed_symbols_between",
]

ChangeKind = Literal["added", "modified", "removed", "renamed", "signature_changed"]

# A PR touching more code files than this is a vendoring or reformatting sweep; parsing
# both sides of every file would dominate the run for symbols nobody reviews one by one.
MAX_CHANGED_FILES = 500
# Code this alike (after comments and whitespace) under the same name in another file is
# the same definition moved, maybe touched up on the way.
MOVE_SIMILARITY = 0.75

_LINE_COMMENT = {"python": "#"}
_C_LINE_COMMENT = "//"
_C_COMMENT_STARTS = ("//", "/*", "*")
_PLACEHOLDER = "..."  # stands for a nested definition; a valid Python statement too
_PYTHON_CODE = re.compile(
    r'(?P<s>[rbuRBUfF]*(?:"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:\\.|[^"\\\n])*"'
    r"|'(?:\\.|[^'\\\n])*'))|(?P<c>#[^\n]*)|(?P<w>\s+)")
_C_CODE = re.compile(
    r'(?P<s>"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`|\'(?:\\.|[^\'\\\n])*\')'
    r"|(?P<c>//[^\n]*|/\*[\s\S]*?\*/)|(?P<w>\s+)")
_WORD_CHAR = re.compile(r"\w")
# Module-level variables are reported in library code only: the globals of an example
# script, a test module or docs/conf.py are settings of that file alone.
_VARIABLE_ROLES = frozenset({"production"})
# Languages whose overloads are declarations of one implementation (see _merged_overloads).
_ONE_IMPLEMENTATION_LANGUAGES = frozenset({"python", "typescript", "tsx"})
_NAME_SLOT = "\0"
_FUNCTION_KINDS = frozenset({"function", "method"})


@dataclass(frozen=True)
class SourceFile:
    """One revision of a file: its text and what the parser found in it."""

    parsed: ParsedFile
    text: str


@dataclass(frozen=True)
class ChangedSymbol:
    """A definition the diff added, removed, renamed or changed.

    Lines are 1-based and inclusive, at head; at base for a removed symbol.
    """

    path: str  # head path (base path for removed)
    old_path: str | None  # base path when git renamed the file
    symbol: str  # short name
    qualified_name: str  # at head (at base for removed)
    old_qualified_name: str | None  # set when the qualified name changed
    kind: str  # DefKind
    change: ChangeKind
    cosmetic: bool  # only comments, docstrings or whitespace changed
    start_line: int
    end_line: int
    old_signature: str | None
    new_signature: str | None
    parameter_changes: tuple[str, ...]  # "added param timeout", "default of x: 1 -> 2", ...
    changed_lines: tuple[int, ...]  # added head lines in its own span (base lines for removed)
    removed_lines: tuple[int, ...] = ()  # removed base lines in its own base span
    # qualified names of the nested definitions whose change this function stands for
    changed_inside: tuple[str, ...] = ()
    # only what never runs changed: a variable's annotation or the type given to cast
    types_only: bool = False


@dataclass(frozen=True)
class SymbolChanges:
    """The result of ``changed_symbols_between``."""

    symbols: list[ChangedSymbol]
    skipped_files: tuple[str, ...]  # changed code files not analysed, sorted
    reason: str | None  # why files were skipped, for people; None when none were


@dataclass(frozen=True)
class _Side:
    """One revision of a file pair, ready for span arithmetic."""

    path: str
    language: str
    definitions: tuple[Definition, ...]
    lines: tuple[str, ...]
    touched: frozenset[int]  # removed lines at base, added lines at head


@dataclass(frozen=True)
class _Pair:
    base: Definition | None
    head: Definition | None


def changed_symbols(
    patch_text: str,
    base_files: Mapping[str, SourceFile],
    head_files: Mapping[str, SourceFile],
) -> list[ChangedSymbol]:
    """The symbols ``patch_text`` (``git diff -M``, ideally ``-U0``) changed.

    ``base_files`` and ``head_files`` map paths to their parsed text at each revision;
    files the patch names but the mappings lack (binary, no grammar) are left out. Pure.
    """
    found: list[ChangedSymbol] = []
    gone: list[tuple[Definition, _Side]] = []
    new: list[tuple[Definition, _Side]] = []
    for diff in parse_patch(patch_text):
        symbols, removed, added = _file_symbols(diff, base_files.get(diff.base_path),
                                                head_files.get(diff.path))
        found += symbols
        gone += removed
        new += added
    found += _moved_or_one_sided(gone, new)
    return sorted(_merged_overloads(_folded_into_functions(found, base_files, head_files)),
                  key=lambda s: (s.path, s.start_line, s.end_line, s.qualified_name))


def _folded_into_functions(symbols: list[ChangedSymbol], base_files: Mapping[str, SourceFile],
                           head_files: Mapping[str, SourceFile]) -> list[ChangedSymbol]:
    """Changes inside definitions nested in a function, reported on that function.

    Nobody calls a closure or a local helper by name: the outermost function around it
    is what its callers call, so its callers are the ones the change reaches. A nested
    definition whose function the head no longer has stays as it is.
    """
    kept: list[ChangedSymbol] = []
    nested: dict[tuple[str, str], list[ChangedSymbol]] = {}
    for symbol in symbols:
        files = base_files if symbol.change == "removed" else head_files
        source = files.get(symbol.path)
        outer = _outer_function(source.parsed.definitions, symbol.qualified_name) \
            if source else None
        if outer is None:
            kept.append(symbol)
        else:
            nested.setdefault((symbol.path, outer), []).append(symbol)
    for (path, outer), inside in nested.items():
        index = next((i for i, s in enumerate(kept) if s.path == path
                      and outer in (s.qualified_name, s.old_qualified_name)), None)
        if index is not None:
            kept[index] = _changed_inside(kept[index], inside)
            continue
        head = head_files.get(path)
        definition = next((d for d in head.parsed.definitions if d.qualified_name == outer),
                          None) if head else None
        if definition is None:
            kept += inside
        else:
            kept.append(_changed_inside(_enclosing_change(path, definition, inside), inside))
    return kept


def _outer_function(definitions: Sequence[Definition], qualified_name: str) -> str | None:
    """The outermost function or method ``qualified_name`` is nested in, at any depth."""
    by_name = {d.qualified_name: d for d in definitions}
    current, outer, seen = by_name.get(qualified_name), None, {qualified_name}
    while current is not None and current.parent is not None and current.parent not in seen:
        seen.add(current.parent)
        current = by_name.get(current.parent)
        if current is not None and current.kind in _FUNCTION_KINDS:
            outer = current.qualified_name
    return outer


def _enclosing_change(path: str, d: Definition, inside: list[ChangedSymbol]) -> ChangedSymbol:
    """A ``modified`` function whose only change is inside its nested definitions."""
    return ChangedSymbol(
        path=path, old_path=inside[0].old_path, symbol=d.name, qualified_name=d.qualified_name,
        old_qualified_name=None, kind=d.kind, change="modified",
        cosmetic=True, start_line=d.start_line, end_line=d.end_line,
        old_signature=d.signature, new_signature=d.signature, parameter_changes=(),
        changed_lines=())


def _changed_inside(symbol: ChangedSymbol, inside: list[ChangedSymbol]) -> ChangedSymbol:
    """``symbol`` standing for the changes of its nested definitions ``inside`` too."""
    names = [*symbol.changed_inside,
             *(n for s in inside for n in (s.qualified_name, *s.changed_inside))]
    live = symbol.change != "removed"
    return replace(
        symbol, changed_inside=tuple(dict.fromkeys(names)),
        cosmetic=symbol.cosmetic and all(s.cosmetic for s in inside),
        changed_lines=tuple(sorted({*symbol.changed_lines, *(
            n for s in inside if (s.change != "removed") == live for n in s.changed_lines)})),
        removed_lines=tuple(sorted({*symbol.removed_lines,
                                    *(n for s in inside for n in s.removed_lines)})))


def _merged_overloads(symbols: list[ChangedSymbol]) -> list[ChangedSymbol]:
    """One symbol per Python or TypeScript function whose overload declarations changed.

    ``@overload`` stubs and TypeScript overload signatures declare one function, which
    callers reach by one name: reported once, spanning them all, with the
    implementation's (the last) signature. Java's overloads are distinct methods: kept.
    """
    groups: dict[tuple[str, str], list[ChangedSymbol]] = {}
    for symbol in symbols:
        groups.setdefault((symbol.path, symbol.qualified_name), []).append(symbol)
    merged: list[ChangedSymbol] = []
    for (path, _name), group in groups.items():
        if len(group) > 1 and language_for_path(path) in _ONE_IMPLEMENTATION_LANGUAGES:
            merged.append(_one_function(group))
        else:
            merged += group
    return merged


def _one_function(group: list[ChangedSymbol]) -> ChangedSymbol:
    live = [s for s in group if s.change != "removed"] or group
    last = max(live, key=lambda s: s.start_line)
    kinds = {s.change for s in group}
    change: ChangeKind = (group[0].change if len(kinds) == 1 else
                          "signature_changed" if "signature_changed" in kinds else "modified")
    return replace(
        last, change=change, cosmetic=all(s.cosmetic for s in group),
        start_line=min(s.start_line for s in live), end_line=max(s.end_line for s in live),
        old_signature=last.old_signature or next(
            (s.old_signature for s in reversed(group) if s.old_signature), None),
        parameter_changes=tuple(dict.fromkeys(p for s in group for p in s.parameter_changes)),
        changed_lines=tuple(sorted({line for s in live for line in s.changed_lines})),
        removed_lines=tuple(sorted({line for s in group for line in s.removed_lines})),
        changed_inside=tuple(dict.fromkeys(n for s in group for n in s.changed_inside)))


def _file_symbols(
    diff: FileDiff, base: SourceFile | None, head: SourceFile | None
) -> tuple[list[ChangedSymbol], list[tuple[Definition, _Side]],
           list[tuple[Definition, _Side]]]:
    """Matched changes in one file pair, and its definitions only one side has."""
    if base is None and head is None:
        return [], [], []
    base_side = _side(diff.base_path, base if diff.status != "added" else None,
                      diff.removed_lines)
    head_side = _side(diff.path, head if diff.status != "deleted" else None, diff.added_lines)
    old_path = diff.old_path if diff.status == "renamed" else None
    symbols, removed, added = [], [], []
    for pair in _pair_definitions(base_side, head_side):
        if pair.head is None and pair.base is not None:
            removed.append((pair.base, base_side))
        elif pair.base is None and pair.head is not None:
            added.append((pair.head, head_side))
        elif (symbol := _pair_symbol(pair, base_side, head_side, old_path)) is not None:
            symbols.append(symbol)
    return symbols + _variable_symbols(diff, base, head), removed, added


# -- module-level variables -----------------------------------------------------------------


def _variable_symbols(diff: FileDiff, base: SourceFile | None,
                      head: SourceFile | None) -> list[ChangedSymbol]:
    """The module-level variables of a Python file pair that the diff changed."""
    if "python" not in (language_for_path(diff.path), language_for_path(diff.base_path)):
        return []
    if not any(f is not None and f.parsed.role in _VARIABLE_ROLES for f in (base, head)):
        return []  # a script's, a test's or a Sphinx conf.py's globals are no API
    before = module_variables(base.text) if base and diff.status != "added" else {}
    after = module_variables(head.text) if head and diff.status != "deleted" else {}
    if before is None or after is None:  # a side does not parse: definitions only
        return []
    old_module, module = module_path(diff.base_path, "python"), module_path(diff.path, "python")
    found = []
    for name, new in after.items():
        old = before.get(name)
        touched = bool(new.lines & diff.added_lines or (old and old.lines & diff.removed_lines))
        if touched and (old is None or old.value != new.value):
            renamed = old is not None and old_module != module
            found.append(_variable_symbol(
                diff.path, diff.old_path if diff.status == "renamed" else None, module, new,
                "added" if old is None else "modified",
                f"{old_module}.{name}" if renamed else None, diff.added_lines,
                types_only=old is not None and old.runtime == new.runtime))
    found += [_variable_symbol(diff.base_path, None, old_module, old, "removed", None,
                               diff.removed_lines)
              for name, old in before.items()
              if name not in after and old.lines & diff.removed_lines]
    return found


def _variable_symbol(path: str, old_path: str | None, module: str, variable: ModuleVariable,
                     change: ChangeKind, old_qualified_name: str | None,
                     touched: frozenset[int], types_only: bool = False) -> ChangedSymbol:
    lines = tuple(sorted(variable.lines & touched))
    return ChangedSymbol(
        path=path, old_path=old_path, symbol=variable.name,
        qualified_name=f"{module}.{variable.name}" if module else variable.name,
        old_qualified_name=old_qualified_name, kind="variable", change=change,
        cosmetic=False, start_line=variable.start_line, end_line=variable.end_line,
        old_signature=None, new_signature=None, parameter_changes=(), changed_lines=lines,
        removed_lines=lines if change == "removed" else (), types_only=types_only)


def _moved_or_one_sided(gone: list[tuple[Definition, _Side]],
                        new: list[tuple[Definition, _Side]]) -> list[ChangedSymbol]:
    """Pair definitions removed from one file and added to another: a move is a rename.

    A pair has the same kind and file-relative name (``Class.method``), unique on both
    sides, and code at least ``MOVE_SIMILARITY`` alike; everything else is a plain
    removal or addition.
    """
    local_keys: dict[int, dict[Definition, str]] = {}  # per side, computed once

    def keyed(items: list[tuple[Definition, _Side]]) -> dict[str, list[tuple[Definition, _Side]]]:
        groups: dict[str, list[tuple[Definition, _Side]]] = {}
        for d, side in items:
            keys = local_keys.setdefault(id(side), _local_keys(side.definitions))
            groups.setdefault(keys[d], []).append((d, side))
        return groups

    removed, added = keyed(gone), keyed(new)
    symbols: list[ChangedSymbol] = []
    paired: set[int] = set()
    for key, olds in removed.items():
        news = added.get(key, [])
        if len(olds) != 1 or len(news) != 1:
            continue
        (b, base), (h, head) = olds[0], news[0]
        if base.path == head.path or base.language != head.language:
            continue
        if _similarity(_own_text(base, b), _own_text(head, h), head.language) < MOVE_SIMILARITY:
            continue
        symbol = _matched(b, h, base, head, base.path)
        if symbol is not None:
            symbols.append(symbol)
        paired.update((id(b), id(h)))
    symbols += [_one_sided(d, side, "removed") for d, side in gone if id(d) not in paired]
    symbols += [_one_sided(d, side, "added") for d, side in new if id(d) not in paired]
    return symbols


def _similarity(old: str, new: str, language: str) -> float:
    a, b = _normalised_code(old, language), _normalised_code(new, language)
    return 1.0 if a == b else difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _side(path: str, source: SourceFile | None, touched: frozenset[int]) -> _Side:
    if source is None:
        return _Side(path, "", (), (), touched)
    return _Side(path, source.parsed.language, source.parsed.definitions,
                 tuple(source.text.splitlines()), touched)


# -- matching -------------------------------------------------------------------------------


def _pair_definitions(base: _Side, head: _Side) -> list[_Pair]:
    """Counterparts by qualified name, then by file-relative name, then by equal text."""
    pairs: list[_Pair] = []
    left, right = list(base.definitions), list(head.definitions)
    for keys in (_qualified_keys, _local_keys):
        matched, left, right = _match_by(left, right, keys(base.definitions),
                                         keys(head.definitions))
        pairs.extend(matched)
    renamed, left, right = _match_renamed(left, right, base, head)
    pairs.extend(renamed)
    pairs.extend(_Pair(d, None) for d in left)
    pairs.extend(_Pair(None, d) for d in right)
    return pairs


def _qualified_keys(defs: Sequence[Definition]) -> dict[Definition, str]:
    return {d: f"{d.kind}:{d.qualified_name}" for d in defs}


def _local_keys(defs: Sequence[Definition]) -> dict[Definition, str]:
    """Enclosing definitions in this file plus the name: survives a module path change."""
    by_name = {d.qualified_name: d for d in defs}
    return {d: _local_key(d, by_name) for d in defs}


def _local_key(d: Definition, by_name: Mapping[str, Definition]) -> str:
    names, current, seen = [d.name], d, {d.qualified_name}
    while current.parent is not None and current.parent not in seen:
        parent = by_name.get(current.parent)
        if parent is None:  # a Go receiver type declared in another file
            names.append(current.parent.rsplit(".", 1)[-1])
            break
        seen.add(parent.qualified_name)
        names.append(parent.name)
        current = parent
    return f"{d.kind}:{'.'.join(reversed(names))}"


def _match_by(
    left: list[Definition],
    right: list[Definition],
    left_keys: Mapping[Definition, str],
    right_keys: Mapping[Definition, str],
) -> tuple[list[_Pair], list[Definition], list[Definition]]:
    """Pair equal keys; among repeats (overloads) equal signatures first, then in order."""
    groups: dict[str, list[Definition]] = {}
    for d in right:
        groups.setdefault(right_keys[d], []).append(d)
    pairs = []
    for prefer_signature in (True, False):
        for b in list(left):
            candidates = groups.get(left_keys[b], [])
            h = next((c for c in candidates
                      if not prefer_signature or c.signature == b.signature), None)
            if h is not None:
                pairs.append(_Pair(b, h))
                left.remove(b)
                candidates.remove(h)
    matched = {id(p.head) for p in pairs}
    return pairs, left, [h for h in right if id(h) not in matched]


def _match_renamed(
    left: list[Definition], right: list[Definition], base: _Side, head: _Side
) -> tuple[list[_Pair], list[Definition], list[Definition]]:
    """Pair a removed and an added definition whose code is equal modulo the name."""
    pairs = []
    codes = {id(h): _code_without_name(head, h) for h in right}
    for b in list(left):
        b_code = _code_without_name(base, b)
        h = next((h for h in right if h.kind == b.kind and codes[id(h)] == b_code), None)
        if h is not None:
            pairs.append(_Pair(b, h))
            left.remove(b)
            right.remove(h)
    return pairs, left, right


def _code_without_name(side: _Side, d: Definition) -> str:
    text = re.sub(rf"\b{re.escape(d.name)}\b", _NAME_SLOT, _own_text(side, d))
    return _normalised_code(text, side.language)


# -- classification -------------------------------------------------------------------------


def _pair_symbol(
    pair: _Pair, base: _Side, head: _Side, old_path: str | None
) -> ChangedSymbol | None:
    if pair.head is None:
        return _one_sided(pair.base, base, "removed") if pair.base else None
    if pair.base is None:
        return _one_sided(pair.head, head, "added")
    return _matched(pair.base, pair.head, base, head, old_path)


def _one_sided(d: Definition, side: _Side, change: ChangeKind) -> ChangedSymbol:
    lines = _lines_in(side.touched, _span(side, d))
    removed = change == "removed"
    return ChangedSymbol(
        path=side.path, old_path=None, symbol=d.name, qualified_name=d.qualified_name,
        old_qualified_name=None, kind=d.kind, change=change, cosmetic=False,
        start_line=d.start_line, end_line=d.end_line,
        old_signature=d.signature if removed else None,
        new_signature=None if removed else d.signature, parameter_changes=(),
        changed_lines=lines, removed_lines=lines if removed else ())


def _matched(
    b: Definition, h: Definition, base: _Side, head: _Side, old_path: str | None
) -> ChangedSymbol | None:
    if _untouched(b, h, base, head):
        return None
    removed = _lines_in(base.touched, _own_lines(base, b))
    added = _lines_in(head.touched, _own_lines(head, h))
    params = parameter_changes(b.signature, b.name, h.signature, h.name, head.language)
    renamed = b.qualified_name != h.qualified_name
    edited = bool(removed or added) and _own_text(base, b) != _own_text(head, h)
    if not (params or renamed or edited):
        return None
    cosmetic = edited and not params and _same_code(_own_text(base, b), _own_text(head, h),
                                                    head.language)
    change: ChangeKind = ("signature_changed" if params
                          else "renamed" if renamed else "modified")
    return ChangedSymbol(
        path=head.path, old_path=old_path, symbol=h.name, qualified_name=h.qualified_name,
        old_qualified_name=b.qualified_name if renamed else None, kind=h.kind, change=change,
        cosmetic=cosmetic, start_line=h.start_line, end_line=h.end_line,
        old_signature=b.signature, new_signature=h.signature, parameter_changes=params,
        changed_lines=added, removed_lines=removed)


def _untouched(b: Definition, h: Definition, base: _Side, head: _Side) -> bool:
    """A cheap test that skips the span arithmetic for the many definitions a diff misses."""
    return (b.qualified_name == h.qualified_name and b.signature == h.signature
            and not any(n in base.touched for n in _span(base, b))
            and not any(n in head.touched for n in _span(head, h)))


# -- spans ----------------------------------------------------------------------------------


def _span(side: _Side, d: Definition) -> range:
    """The definition's lines, extended upward over the comment lines right above it."""
    start = d.start_line
    while start > 1 and _is_comment_line(side.lines[start - 2], side.language):
        start -= 1
    return range(start, d.end_line + 1)


def _is_comment_line(line: str, language: str) -> bool:
    starts = (_LINE_COMMENT[language],) if language in _LINE_COMMENT else _C_COMMENT_STARTS
    return line.lstrip().startswith(starts)


def _children(side: _Side, d: Definition) -> list[Definition]:
    """Definitions nested in ``d``, outermost only."""
    inner = [c for c in side.definitions if c is not d and _nested(c, d)]
    return [c for c in inner if not any(o is not c and _nested(c, o) for o in inner)]


def _nested(inner: Definition, outer: Definition) -> bool:
    same = (inner.start_line, inner.end_line) == (outer.start_line, outer.end_line)
    return not same and outer.start_line <= inner.start_line <= inner.end_line <= outer.end_line


def _own_lines(side: _Side, d: Definition) -> list[int]:
    """The span minus nested spans; blank lines do not count for a definition with any."""
    children = _children(side, d)
    nested = {n for c in children for n in _span(side, c)}
    return [n for n in _span(side, d) if n not in nested
            and (not children or side.lines[n - 1].strip())]


def _own_text(side: _Side, d: Definition) -> str:
    """The definition's text with each nested definition replaced by a placeholder line."""
    spans = [_span(side, c) for c in _children(side, d)]
    out = []
    for n in _span(side, d):
        line = side.lines[n - 1] if n <= len(side.lines) else ""
        inside = next((s for s in spans if n in s), None)
        if inside is None:
            out.append(line)
        elif n == inside.start:
            out.append(re.sub(r"\S.*", _PLACEHOLDER, line))
    return "\n".join(out)


def _lines_in(lines: Iterable[int], span: Iterable[int]) -> tuple[int, ...]:
    wanted = frozenset(span)
    return tuple(sorted(n for n in lines if n in wanted))


# -- cosmetic comparison --------------------------------------------------------------------


def _same_code(old: str, new: str, language: str) -> bool:
    """Equal once comments, docstrings and whitespace that does not matter are gone."""
    if language == "python":
        old_tree, new_tree = _python_dump(old), _python_dump(new)
        if old_tree is not None and new_tree is not None:
            return old_tree == new_tree
    return _normalised_code(old, language) == _normalised_code(new, language)


def _python_dump(text: str) -> str | None:
    """The AST without docstrings, or None when the fragment does not parse."""
    tree = parse_python(textwrap.dedent(text))
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def _normalised_code(text: str, language: str) -> str:
    """Comments dropped, whitespace dropped except one space between two word characters."""
    pattern = _PYTHON_CODE if language == "python" else _C_CODE
    return pattern.sub(lambda m: _replacement(m, text), text)


def _replacement(match: re.Match[str], text: str) -> str:
    if match.group("s") is not None:
        return match.group(0)
    before = text[match.start() - 1] if match.start() > 0 else ""
    after = text[match.end()] if match.end() < len(text) else ""
    keeps_words_apart = bool(_WORD_CHAR.match(before) and _WORD_CHAR.match(after))
    return " " if keeps_words_apart else ""


# -- I/O edge -------------------------------------------------------------------------------


def changed_symbols_between(
    repo: Repository, base: Sha, head: Sha, max_files: int = MAX_CHANGED_FILES
) -> SymbolChanges:
    """The symbols changed from ``base`` to ``head``; reads git, never the work tree.

    Only code files are analysed, at most ``max_files`` of them (by path); the rest, and
    files whose content is binary or too large, come back in ``skipped_files``.
    :raises GitError: git failed.
    """
    code = sorted((c for c in changed_paths(repo, base, head) if _is_code(c)),
                  key=lambda c: c.path)
    selected, over_cap = code[:max_files], code[max_files:]
    if not selected:
        return SymbolChanges([], (), None)
    paths = sorted({p for c in selected for p in (c.path, c.old_path) if p})
    patch = unified_diff(repo, base, head, paths=paths, context=0)
    with BlobReader(repo) as reader:
        base_files, base_skipped = _read_side(reader, base, _base_paths(selected))
        head_files, head_skipped = _read_side(reader, head, _head_paths(selected))
    skipped = sorted({*base_skipped, *head_skipped})
    symbols = changed_symbols(patch, base_files, head_files)
    return SymbolChanges(symbols, tuple(sorted([*skipped, *(c.path for c in over_cap)])),
                         _skip_reason(len(code), len(over_cap), len(skipped), max_files))


def _is_code(change: PathChange) -> bool:
    return any(language_for_path(p) in CODE_LANGUAGES
               for p in (change.path, change.old_path) if p)


def _base_paths(changes: Iterable[PathChange]) -> list[str]:
    return [c.old_path or c.path for c in changes if c.status != "added"]


def _head_paths(changes: Iterable[PathChange]) -> list[str]:
    return [c.path for c in changes if c.status != "deleted"]


def _read_side(
    reader: BlobReader, sha: Sha, paths: Iterable[str]
) -> tuple[dict[str, SourceFile], list[str]]:
    files, skipped = {}, []
    for path, data in _blobs(reader, sha, paths):
        language = language_for_path(path)
        if language not in CODE_LANGUAGES or language is None:
            continue
        if skip_reason_for_content(PathPolicy(), path, data) is not None:
            skipped.append(path)
            continue
        text, _replaced = decode_text(data)
        parsed = parse_file(path, text, language, classify_path(path, text))
        files[path] = SourceFile(parsed, text)
    return files, skipped


def _blobs(reader: BlobReader, sha: Sha, paths: Iterable[str]) -> Iterator[tuple[str, bytes]]:
    for path in paths:
        yield path, reader.read(f"{sha}:{path}")


def _skip_reason(code_files: int, over_cap: int, unreadable: int, cap: int) -> str | None:
    reasons = []
    if over_cap:
        reasons.append(f"analysed {code_files - over_cap} of {code_files} changed code files "
                       f"(at most {cap})")
    if unreadable:
        reasons.append(f"{unreadable} binary or oversized file(s) not parsed")
    return "; ".join(reasons) or None
