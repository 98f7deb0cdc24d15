"""What a changed symbol is called in docs, and whether a doc reference names it (pure).

:func:`targets_of` lists the names to look for: the symbol, its old name when removed or
renamed, the class attributes on a modified class's changed lines, and the class or module
that holds a public symbol. :func:`ref_names` says how one doc reference names a target;
:func:`text_names` whether a docstring does.

A bare name counts only when it is distinctive (an underscore or inner capital, or a
long name defined at most once), or it is not a generic name and the same page names its
class or module (in any section, or as the page's file name: ``docs/markers.rst`` is
about ``markers``); a generic name (``get``) needs the class or module in its own section,
and so does a class attribute (attribute names are shared with parameters). A qualified
mention or directive counts when it ends the qualified name, or names it through a
package that re-exports it (``pluggy.HookCaller`` for ``pluggy._hooks.HookCaller``: the
public path a project documents, with the private modules between left out).

The holder of a changed member is named by a directive that renders the member (a class
or module directive with ``:members:``, mkdocstrings ``::: pkg.mod``), by a module
directive ("module"), or, for a new member of a module, by a directive of another member
of the module or of a package importing the new member ("members").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pr_context.links.doc_pages import (
    changed_attributes,
    directive_line,
    module_directive,
    resolve_target,
)
from pr_context.links.evidence import DocRef, LinkIndex, Section, word_pattern

if TYPE_CHECKING:
    from pr_context.changes import ChangedSymbol
    from pr_context.retrieve.corpus import SearchCorpus

__all__ = [
    "DISTINCTIVE_MIN_CHARS",
    "GENERIC_NAMES",
    "MAX_SAME_NAME_DEFINITIONS",
    "Target",
    "line_text",
    "public_name",
    "ref_names",
    "targets_of",
    "text_names",
]

# A bare name defined more often than this is ambiguous without qualification.
MAX_SAME_NAME_DEFINITIONS = 2
# A lowercase name without underscore counts as distinctive from this length if rare.
DISTINCTIVE_MIN_CHARS = 8
# Names of methods every library has: they need their class or module to count.
GENERIC_NAMES = frozenset({
    "get", "set", "run", "name", "call", "open", "close", "read", "write", "load", "save",
    "update", "create", "delete", "add", "remove", "start", "stop", "init", "main", "parse",
    "render", "send", "items", "keys", "values", "copy", "clear", "reset", "build", "test",
    "setup", "execute", "process", "handle", "apply", "list", "find", "filter", "map"})

# Directive lines that render members, and the option lines that follow them:
# ``.. autoclass::`` in reStructuredText, ```{autoclass}`` in MyST.
_AUTODOC_WITH_MEMBERS = re.compile(r"(?:\.\.\s+|\{)auto(?:class|exception|module)(?:::|\})")
_MKDOCSTRINGS = re.compile(r":::\s")
_OPTION = re.compile(r"\s*:(?P<name>[\w-]+):(?P<value>.*)")
# Dunders a caller reaches through the class name: ``C(...)`` and ``c(...)``.
_PUBLIC_DUNDERS = frozenset({"__init__", "__call__"})


@dataclass(frozen=True)
class Target:
    """A name to look for: the symbol now, or its old name when removed or renamed."""

    qualified_name: str
    name: str
    qualifiers: tuple[str, ...]  # enclosing class and module names, innermost first
    gone: bool  # no longer exists at head
    # a bare mention may count: False for a moved symbol's same name, and for a dunder
    # (a bare ``__init__`` or ``__call__`` names every class's: only qualified ones count)
    bare_ok: bool
    member: str | None = None  # set on the class of a changed method: that method's name
    attribute: bool = False  # a class attribute of a changed class: needs its class named
    member_added: bool = False  # on a module or class: the member is new
    exported_as: frozenset[str] = frozenset()  # on a module: those importing the member


def targets_of(change: ChangedSymbol, corpus: SearchCorpus | None) -> list[Target]:
    """The old name (if any), the symbol, its changed class attributes, then its holder.

    ``corpus`` (head) supplies the class attributes and the modules importing a new
    symbol; without it neither is looked for.
    """
    gone = change.change == "removed"
    current = _target(change.qualified_name, gone, True)
    owners = _owner_targets(change, corpus)
    attributes = [replace(_target(f"{change.qualified_name}.{name}", False, True),
                          attribute=True) for name in changed_attributes(change, corpus)]
    if change.old_qualified_name is None:
        return [current, *attributes, *owners]
    old = _target(change.old_qualified_name, True,
                  change.old_qualified_name.rsplit(".", 1)[-1] != change.symbol)
    return [old, current, *attributes, *owners]


def _owner_targets(change: ChangedSymbol, corpus: SearchCorpus | None) -> list[Target]:
    """The class of a changed public method, or the module of a public top-level symbol."""
    if change.change == "removed" or not public_name(change.symbol):
        return []
    owner = change.qualified_name.rsplit(".", 1)[0]
    if change.kind == "method" and change.change != "added":
        return [replace(_target(owner, False, True), member=change.symbol)]
    if change.kind in ("function", "class") and "." in owner:
        added = change.change == "added"
        return [Target(owner, owner.rsplit(".", 1)[-1], (), False, False, change.symbol,
                        member_added=added,
                        exported_as=_exported_by(change, corpus) if added else frozenset())]
    return []


def _exported_by(change: ChangedSymbol, corpus: SearchCorpus | None) -> frozenset[str]:
    """The modules that import the symbol by name: the public paths it is documented by."""
    if corpus is None:
        return frozenset()
    return frozenset(corpus.module_of_path[path]
                     for path, imported in corpus.imports_by_path.items()
                     if change.qualified_name in imported and path in corpus.module_of_path)


def public_name(name: str) -> bool:
    """Part of the documented surface: no leading underscore, or a constructor or call."""
    return not name.startswith("_") or name in _PUBLIC_DUNDERS


def _target(qualified_name: str, gone: bool, bare_ok: bool) -> Target:
    parts = qualified_name.split(".")
    qualifiers = tuple(reversed([p for p in parts[:-1] if len(p) > 2]))[:2]
    dunder = parts[-1].startswith("__") and parts[-1].endswith("__")
    return Target(qualified_name, parts[-1], qualifiers, gone, bare_ok and not dunder)


def _distinctive(name: str, docs: LinkIndex) -> bool:
    """A name unlikely to mean anything else: its bare mention is enough."""
    if name.lower() in GENERIC_NAMES or docs.name_counts.get(name, 0) > MAX_SAME_NAME_DEFINITIONS:
        return False
    core = name.strip("_")
    if "_" in core or any(c.isupper() for c in core[1:]):
        return True
    rare = docs.name_counts.get(name, 0) <= 1
    return rare and (core[:1].isupper() or len(core) >= DISTINCTIVE_MIN_CHARS)


def _distinctive_target(target: Target, docs: LinkIndex) -> bool:
    """A bare mention is enough: a distinctive name, and not a class attribute.

    Attribute names are shared with parameters and other classes' fields
    (``max_size=`` of a function, ``self.max_size`` of another class).
    """
    return not target.attribute and _distinctive(target.name, docs)


def _qualified(chain: str, target: Target) -> bool:
    """``chain`` (``Session.create``, ``session.create_session``) ends the qualified name.

    Or names it through a re-exporting package: ``pkg.C`` for ``pkg._impl.C``.
    """
    parts, wanted = chain.split("."), target.qualified_name.split(".")
    if len(parts) > 1 and parts == wanted[-len(parts):]:
        return True
    if 1 < len(parts) < len(wanted) and parts[0] == wanted[0] \
            and parts[1:] == wanted[len(wanted) - len(parts) + 1:]:
        return True
    receiver = parts[-2] if len(parts) > 1 else ""
    return bool(receiver) and parts[-1] == target.name and bool(target.qualifiers) \
        and receiver.lower() == target.qualifiers[0].lower()


def _context_names(text: str, target: Target) -> bool:
    """The text also names the symbol's class or module."""
    return any(word_pattern(q).search(text) for q in target.qualifiers
               if q.lower() not in GENERIC_NAMES)


def _page_names(path: str, target: Target, docs: LinkIndex) -> bool:
    """The page is about the symbol's class or module: by file name or in any section."""
    stem = path.rsplit("/", 1)[-1].split(".", 1)[0].lower()
    if any(q.lstrip("_").lower() == stem for q in target.qualifiers):
        return True
    return any(_context_names(s.text, target) for s in docs.sections.get(path, ()))


def _directive_options(section: Section, line: int) -> dict[str, str]:
    """The ``:option: value`` lines right under the directive on ``line``."""
    lines = section.text.splitlines()[line - section.start_line + 1:]
    options = {}
    for text in lines:
        if not (m := _OPTION.match(text)):
            break
        options[m.group("name")] = m.group("value").strip()
    return options


def _renders(section: Section, line: int, member: str) -> bool:
    """The autodoc directive on ``line`` renders ``member`` (``:members:`` and friends).

    mkdocstrings (``::: pkg.mod``) renders public members unless told otherwise.
    """
    text = line_text(section, line)
    if _MKDOCSTRINGS.match(text):
        return True
    if not _AUTODOC_WITH_MEMBERS.search(text):
        return False
    options = _directive_options(section, line)
    listed = "special-members" if member.startswith("__") else "members"
    if listed not in options:
        return False
    names = {n.strip() for n in options[listed].split(",") if n.strip()}
    return not names or member in names


def _owner_mention(ref: DocRef, section: Section, target: Target,
                   docs: LinkIndex, page: dict[str, bool]) -> str | None:
    """How ``ref`` names the class or module that holds the changed symbol."""
    member = target.member or ""
    if ref.kind == "directive" and _names_owner(ref.name, target):
        if _renders(section, ref.line, member):
            return "directive"
        if module_directive(docs.directive_lines.get((ref.path, ref.line), "")):
            return "module"
    if not target.bare_ok:  # a module: only its directives count
        added = target.member_added and _documents_member(ref, target, docs)
        return "members" if added else None
    return "mention" if ref_names(ref, section, replace(target, member=None), docs,
                                  page) == "mention" else None


def _documents_member(ref: DocRef, target: Target, docs: LinkIndex) -> bool:
    """``ref`` is a directive documenting another member of the module ``target``.

    Or of a module that imports the new member (a package re-exporting it): its page
    documents the package's members, the new one among them. Relative targets are
    resolved by the page's current module.
    """
    if ref.kind != "directive":
        return False
    line = docs.directive_lines.get((ref.path, ref.line), "")
    if not directive_line(line) or module_directive(line):
        return False  # a module directive documents that module, not a member
    resolved = resolve_target(ref.name, docs.current_module(ref.path, ref.line))
    if resolved in docs.code_modules:
        return False  # ``::: pkg.mod``: a module of its own
    parent = resolved.rsplit(".", 1)[0] if "." in resolved else ""
    return parent == target.qualified_name or parent in target.exported_as \
        or (bool(parent) and _qualified(parent, target))


def _names_owner(chain: str, target: Target) -> bool:
    """A directive target names the owner, exactly or through a re-exporting package."""
    if chain == target.qualified_name or _qualified(chain, target):
        return True
    rest = target.qualified_name.removeprefix(chain + ".")
    return rest != target.qualified_name and all(p.startswith("_") for p in rest.split("."))


def ref_names(ref: DocRef, section: Section, target: Target, docs: LinkIndex,
              page: dict[str, bool]) -> str | None:
    """How ``ref`` names ``target``: "directive", "mention", or None when it does not.

    For the module or class of the changed symbol also "module" (a module directive) and
    "members" (a directive of another member). ``page`` caches, per path, whether the page
    names the target's class or module.
    """
    if target.member is not None:
        return _owner_mention(ref, section, target, docs, page)
    if ref.kind == "directive":
        if "." in ref.name:
            return "directive" if _qualified(ref.name, target) else None
        chain = ref.name
    else:
        chain = f"{ref.receiver}.{ref.name}" if ref.receiver else ref.name
        if ref.name != target.name:
            return None
    if "." in chain:
        return "mention" if _qualified(chain.replace("::", "."), target) else None
    if chain != target.name or not target.bare_ok:
        return None
    if _distinctive_target(target, docs) or _context_names(section.text, target):
        return "mention"
    if target.name.lower() in GENERIC_NAMES:
        return None
    if section.path not in page:
        page[section.path] = _page_names(section.path, target, docs)
    return "mention" if page[section.path] else None


def line_text(section: Section, line: int) -> str:
    """Line ``line`` of ``section``, stripped; empty when outside it."""
    lines = section.text.splitlines()
    index = line - section.start_line
    return lines[index].strip() if 0 <= index < len(lines) else ""


def text_names(text: str, target: Target, docs: LinkIndex) -> bool:
    """A docstring's ``text`` names ``target``: qualified, or bare as ``ref_names`` allows."""
    if target.name not in text:  # both patterns need it verbatim: no regex for most texts
        return False
    qualified = re.search(rf"(?<![\w$])(?:\w+\.)+{re.escape(target.name)}(?![\w$])", text)
    if qualified and _qualified(qualified.group(0), target):
        return True
    if not target.bare_ok or not word_pattern(target.name).search(text):
        return False
    return _distinctive_target(target, docs) or _context_names(text, target)

