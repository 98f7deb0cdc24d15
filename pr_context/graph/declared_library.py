"""Receivers declared as a library class: ``def f(log: logging.Logger)`` or a class-level
``_logger: logging.Logger``. ``log.findCaller()`` then calls ``logging.Logger``'s method,
or an override of it in a subclass: a same-name method of an index class that does not
derive from ``logging.Logger`` is no candidate. Pure: reads the tables' signatures and
source lines.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pr_context.graph.annotations import parameters
from pr_context.graph.names import bind_name, enclosing_class, mro, outside_bases, resolve_dotted
from pr_context.graph.tables import Site, Tables

__all__ = ["declared_library_class", "derives_from"]

_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_SELF_ATTRIBUTE = re.compile(r"self\.([A-Za-z_]\w*)")


def declared_library_class(tables: Tables, site: Site) -> str | None:
    """The dotted class outside the index (``logging.Logger``) that the receiver of a
    Python call is declared as: a parameter's annotation in the enclosing function, or
    ``self.name``'s annotation in the class body (of the class or an index base). None
    when it is declared as nothing, as an index class or as something else than a plain
    dotted name (``Optional[X]``, a union)."""
    if site.language != "python" or not site.receiver:
        return None
    text = _declared(tables, site)
    if not text or not _DOTTED.fullmatch(text):
        return None
    head, _, rest = text.partition(".")
    binding = bind_name(tables, site.path, site.enclosing, head)
    if binding is None:
        return None
    full = f"{binding.target}.{rest}" if rest else binding.target
    return None if resolve_dotted(tables, full) in tables.definitions else full


def derives_from(tables: Tables, cls: str, library_class: str) -> bool:
    """Whether the index class ``cls`` (or an index base of it) names ``library_class``
    among its bases."""
    return any(library_class in outside_bases(tables, c) for c in mro(tables, cls)
               if c in tables.definitions)


def _declared(tables: Tables, site: Site) -> str | None:
    receiver = site.receiver or ""
    attribute = _SELF_ATTRIBUTE.fullmatch(receiver)
    if attribute is not None:
        cls = enclosing_class(tables, site.enclosing)
        return _class_annotation(tables, cls, attribute.group(1)) if cls else None
    scope = tables.definitions.get(site.enclosing or "")
    if scope is None or not receiver.isidentifier():
        return None
    return dict(parameters(scope.signature)).get(receiver)


def _class_annotation(tables: Tables, cls: str, name: str) -> str | None:
    """``name: T`` in the body of ``cls`` or of an index base, at the body's own depth."""
    pattern = re.compile(rf"^(\s+){re.escape(name)}\s*:\s*([^=#]+?)\s*(?:=.*)?$")
    for current in mro(tables, cls):
        d = tables.definitions.get(current)
        if d is None:
            continue
        lines = tables.lines.get(d.path, {})
        body = _body_indent(lines, d.start_line, d.end_line)
        for number in range(d.start_line + 1, d.end_line + 1):
            found = pattern.match(lines.get(number, ""))
            if found is not None and len(found.group(1)) == body:
                return found.group(2)
    return None


def _body_indent(lines: Mapping[int, str], start: int, end: int) -> int:
    """The indentation of a class body: its first line below the header that is code."""
    header = lines.get(start, "")
    header_indent = len(header) - len(header.lstrip())
    for number in range(start + 1, end + 1):
        line = lines.get(number, "")
        indent = len(line) - len(line.lstrip())
        if line.strip() and indent > header_indent and not line.lstrip().startswith("@"):
            return indent
    return header_indent + 4
