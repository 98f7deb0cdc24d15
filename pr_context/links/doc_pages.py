"""How doc pages are laid out around a module, and which class attributes a change touched.

Helpers for stale docs (pure; no I/O):

- :func:`directive_line` tells a directive (``.. autoclass:: pkg.C``, mkdocstrings
  ``::: pkg.C``, a MyST ```{autofunction} pkg.f`` fence) from a cross-reference role in
  running text: a directive is where a page documents a member, a role only points at it.
- :func:`module_directive` tells the directives that set a page's current module
  (``automodule``, ``module``, ``currentmodule``); :func:`resolve_target` qualifies a
  directive target by it (``.. currentmodule:: pkg.mod`` then ``.. class:: C`` documents
  ``pkg.mod.C``), as Sphinx does for targets that do not start from the current module's
  top-level package.
- :func:`toctree_entries` lists the page names of the tables of contents (``.. toctree::``
  in reStructuredText, ```{toctree}`` in MyST) in a section, and
  :func:`sibling_modules` names the modules next to a code file, so a page listing the
  pages of a module's siblings is where a new module's page belongs.
- :func:`changed_attributes` names the class-level attributes on a modified class's
  changed lines (``max_size: int = 10``), read from the class's first header chunk.
  Lines after the class's first member are elided in that chunk and are not read.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pr_context.changes import ChangedSymbol
    from pr_context.retrieve.corpus import SearchCorpus

__all__ = [
    "changed_attributes",
    "directive_line",
    "module_directive",
    "resolve_target",
    "sibling_modules",
    "toctree_entries",
]

# ``.. name::`` (reStructuredText), ``::: target`` (mkdocstrings) and a MyST directive fence.
_MODULE_DIRECTIVE = re.compile(
    r"(?:\.\.\s+|\{)(?:py:)?(?:automodule|module|currentmodule)(?:::|\})")
_DIRECTIVE_LINE = re.compile(r"\s*(?:\.\.\s+[\w:-]+::|:::\s|(?:`{3,}|~{3,}|:{3,})\s*\{)")
_TOCTREE = re.compile(r"(?P<indent>\s*)(?:\.\.\s+toctree::|(?P<fence>`{3,}|:{3,})\s*\{toctree\})")
_TOC_OPTION = re.compile(r"\s*:[\w-]+:")
_TOC_TITLED = re.compile(r".*<(?P<target>[^>]+)>\s*")
_PACKAGE_FILES = frozenset({"__init__", "index", "mod", "lib"})
# ``name = value``, ``name: type = value`` and ``name: type`` at the start of a statement,
# after the modifiers class fields take in TypeScript and friends.
_ATTRIBUTE = re.compile(r"\s*(?:(?:public|private|protected|static|readonly|final)\s+)*"
                        r"(?P<name>[A-Za-z_$][\w$]*)\s*(?::(?P<type>[^=]*))?(?P<eq>=(?!=))?")
_COMMENT = ("#", "//", "/*", "*")
_HEADER_KIND = "class_header"


def directive_line(text: str) -> bool:
    """``text`` (one line) is a directive, not running text with a role in it."""
    return _DIRECTIVE_LINE.match(text) is not None


def module_directive(text: str) -> bool:
    """``text`` (one line) holds a directive that names the page's module."""
    return _MODULE_DIRECTIVE.search(text) is not None


def resolve_target(target: str, current_module: str | None) -> str:
    """``target`` qualified by the page's current module, unless it starts from its package."""
    if current_module is None or target.split(".", 1)[0] == current_module.split(".", 1)[0]:
        return target
    return f"{current_module}.{target}"


def toctree_entries(text: str) -> list[str]:
    """The page names (last path component, no suffix) listed by the toctrees in ``text``."""
    lines = text.splitlines()
    found: list[str] = []
    for index, line in enumerate(lines):
        if (opening := _TOCTREE.fullmatch(line.rstrip())) is not None:
            found += _entries(lines[index + 1:], len(opening.group("indent")),
                              opening.group("fence"))
    return found


def _entries(lines: list[str], indent: int, fence: str | None) -> list[str]:
    entries = []
    for line in lines:
        stripped = line.strip()
        if fence is not None and stripped.startswith(fence[0] * len(fence)):
            break
        if not stripped or _TOC_OPTION.match(line):
            continue
        if fence is None and len(line) - len(line.lstrip()) <= indent:
            break
        titled = _TOC_TITLED.fullmatch(stripped)
        name = posixpath.basename((titled.group("target") if titled else stripped).rstrip("/"))
        entries.append(name.rsplit(".", 1)[0] if "." in name else name)
    return entries


def sibling_modules(path: str, paths: Iterable[str]) -> set[str]:
    """Names of the modules and packages in the folder that holds ``path``'s module.

    A package's own file (``pkg/sub/__init__.py``) is the module ``sub``, so its siblings
    are in ``pkg/``. Only files with ``path``'s suffix count; the module itself is left out.
    """
    folder, name = posixpath.split(path)
    stem, suffix = posixpath.splitext(name)
    own = stem
    if stem in _PACKAGE_FILES:
        folder, own = posixpath.split(folder)
    names: set[str] = set()
    prefix = f"{folder}/" if folder else ""
    for other in paths:
        if not other.startswith(prefix) or not other.endswith(suffix):
            continue
        parts = other[len(prefix):].split("/")
        if len(parts) == 1:
            names.add(posixpath.splitext(parts[0])[0])
        elif len(parts) == 2 and posixpath.splitext(parts[1])[0] in _PACKAGE_FILES:
            names.add(parts[0])
    return {n for n in names if n not in _PACKAGE_FILES and n != own}


def changed_attributes(change: ChangedSymbol, corpus: SearchCorpus | None) -> tuple[str, ...]:
    """Public class-level attributes on the changed lines of a modified class, in order.

    Read from the class's first header chunk, whose lines are the source's up to the first
    member; a changed comment line belongs to the statement under it.
    """
    if corpus is None or change.kind != "class" or change.change != "modified":
        return ()
    header = _first_header(change.qualified_name, change.path, corpus)
    if header is None:
        return ()
    start, lines = header
    last = min([start + len(lines) - 1,
                *_member_starts(change.qualified_name, change.path, corpus)])
    names: list[str] = []
    for line in change.changed_lines:
        if start < line < last + 1 and (name := _attribute_at(lines, line - start)):
            names.append(name)
    return tuple(dict.fromkeys(n for n in names if not n.startswith("_")))


def _first_header(qualified_name: str, path: str,
                  corpus: SearchCorpus) -> tuple[int, list[str]] | None:
    rows = [i for i in corpus.chunk_by_symbol.get(qualified_name, ())
            if corpus.chunks[i].kind == _HEADER_KIND and corpus.chunks[i].path == path]
    if not rows:
        return None
    first = min(rows, key=lambda i: corpus.chunks[i].start_line)
    body = corpus.texts[first].split("\n")
    # The context header (path, language, containers, symbol) ends with the signature line.
    text_at = next((i + 1 for i, line in enumerate(body) if line.startswith("signature: ")), 0)
    return corpus.chunks[first].start_line, body[text_at:]


def _member_starts(qualified_name: str, path: str, corpus: SearchCorpus) -> list[int]:
    """The line before each member's first chunk (its comments and decorators included)."""
    prefix = qualified_name + "."
    return [corpus.chunks[i].start_line - 1
            for symbol, rows in corpus.chunk_by_symbol.items() if symbol.startswith(prefix)
            for i in rows[:1] if corpus.chunks[i].path == path]


def _attribute_at(lines: list[str], index: int) -> str | None:
    """The attribute the statement at ``lines[index]`` (or the one under a comment) sets.

    Only statements at the class body's indentation count, outside string literals: not
    a continuation line, nor a docstring line that happens to read ``Note: ...``.
    """
    while index < len(lines) and lines[index].strip().startswith(_COMMENT):
        index += 1
    if index >= len(lines) or _indent(lines[index]) != _body_indent(lines):
        return None
    if sum(lines[i].count('"""') + lines[i].count("'''") for i in range(index)) % 2:
        return None
    found = _ATTRIBUTE.match(lines[index])
    if found is None or not (found.group("eq") or (found.group("type") or "").strip()):
        return None
    return found.group("name")


def _body_indent(lines: list[str]) -> int:
    """The indentation of the class body: the least that is deeper than the first line's."""
    outer = _indent(lines[0]) if lines else 0
    deeper = [_indent(line) for line in lines if line.strip() and _indent(line) > outer]
    return min(deeper, default=-1)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
