"""Possibly-stale docs: doc sections and docstrings that describe a changed symbol.

Evidence, strongest first (weights below); a section's score is its strongest evidence
plus a small bonus per further kind, so the tiers never swap:

1. a removed or renamed symbol still mentioned (directive, qualified or distinctive name);
2. a removed or renamed parameter still mentioned in a section that mentions the symbol;
3. a code example calling the old signature (too many arguments, or none of an added one);
4. an autodoc/mkdocstrings directive or cross-reference naming the modified symbol;
   A class directive with ``:members:`` (or an ``automodule`` with ``:members:``) counts
   for a changed public method (or function) it renders: Sphinx pulls the docstring in.
5. a mention of the modified symbol; then the docstring of another symbol mentioning it;
   then a mention of the class of a changed public method (``__init__`` and ``__call__``
   included): prose about a class describes how its methods behave, and projects often
   document methods under the class name only;
6. for an added public module-level symbol, a page that documents its module
   (``.. automodule:: pkg.mod``): module reference pages list their members by hand as
   often as not, so a new member is a likely gap;
7. semantic nearness: a tie-breaker, and at most one section when nothing else links.

A bare name counts only when it is distinctive (an underscore or inner capital, or a
long name defined at most once), or it is not a generic name and the same page names its
class or module (in any section, or as the page's file name: ``docs/markers.rst`` is
about ``markers``); a generic name (``get``) needs the class or module in its own section.
A qualified mention or directive counts when it ends the qualified name, or names it
through a package that re-exports it (``pluggy.HookCaller`` for
``pluggy._hooks.HookCaller``: the public path a project documents, with the private
modules between left out). Changelogs and release notes are history, not descriptions of
current behaviour, and are skipped: every change gets an entry, and their old mentions
would crowd the pages that do describe the symbol out of the first three.
Docs the PR edited are listed with status "updated", the rest "stale". Pure.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pr_context.changes import ChangedSymbol
from pr_context.links.evidence import (
    DocRef,
    Evidence,
    LinkIndex,
    Section,
    nearness_by_path,
    word_pattern,
)
from pr_context.retrieve.corpus import SearchCorpus
from pr_context.signatures import matching_paren

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "CLASS_MENTION_WEIGHT",
    "DIRECTIVE_WEIGHT",
    "DOCSTRING_WEIGHT",
    "MAX_DOCS_PER_SYMBOL",
    "MENTION_WEIGHT",
    "MODULE_PAGE_WEIGHT",
    "OLD_EXAMPLE_WEIGHT",
    "PARAMETER_WEIGHT",
    "REMOVED_MENTION_WEIGHT",
    "SEMANTIC_WEIGHT",
    "stale_docs",
]

# A name that no longer exists at head is wrong wherever the docs still use it.
REMOVED_MENTION_WEIGHT = 1.0
# A parameter that no longer exists, next to the symbol: wrong, but the section may
# be about another overload or an older version.
PARAMETER_WEIGHT = 0.8
# An example whose call shape fits the old signature: likely outdated, may still run.
OLD_EXAMPLE_WEIGHT = 0.65
# A directive renders the symbol's own docstring: the page changes with the code, but
# the prose around it may not.
DIRECTIVE_WEIGHT = 0.5
# Prose about a modified symbol may or may not describe what changed.
MENTION_WEIGHT = 0.4
# Another symbol's docstring naming it: the behaviour it describes may have moved.
DOCSTRING_WEIGHT = 0.35
# Prose about the class of a changed method: it may describe that method's behaviour,
# but more often describes the class as a whole.
CLASS_MENTION_WEIGHT = 0.3
# A reference page of the module that gained a public symbol: it may need an entry.
MODULE_PAGE_WEIGHT = 0.3
# Similar wording is not evidence of staleness: a tie-breaker, times the cosine.
SEMANTIC_WEIGHT = 0.2
# With no lexical evidence at all, one section this close is still worth a look.
SEMANTIC_ONLY_MIN = 0.6
SEMANTIC_ONLY_MAX_ITEMS = 1
# Each further kind of evidence for the same section; small so tiers keep their order.
EXTRA_EVIDENCE_BONUS = 0.05
# Reviewers read three; the project's target is at most three docs per symbol.
MAX_DOCS_PER_SYMBOL = 3
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

_LEXICAL = ("directive", "mention", "docstring", "parameter", "example", "module")
# Changelogs and release notes, by file or folder name (CHANGES.rst, changelog/12.rst).
_HISTORY = re.compile(r"(?:^|/)(?:change(?:s|log)|history|news|release[-_]?notes?"
                      r"|newsfragments)(?:/|\.\w+$|$)", re.IGNORECASE)
# Directive lines that render members, and the option lines that follow them.
_AUTODOC_WITH_MEMBERS = re.compile(r"\.\.\s+auto(?:class|exception|module)::")
_MODULE_DIRECTIVE = re.compile(r"\.\.\s+(?:py:)?(?:automodule|module)::")
_OPTION = re.compile(r"\s+:(?P<name>[\w-]+):(?P<value>.*)")
_NOT_DOCS = frozenset({"test", "test_support", "vendored", "generated"})
# Dunders a caller reaches through the class name: ``C(...)`` and ``c(...)``.
_PUBLIC_DUNDERS = frozenset({"__init__", "__call__"})
_SELF = frozenset({"self", "cls", "this", "&self", "&mut self", "mut self", "*", "/"})


@dataclass(frozen=True)
class _Target:
    """A name to look for: the symbol now, or its old name when removed or renamed."""

    qualified_name: str
    name: str
    qualifiers: tuple[str, ...]  # enclosing class and module names, innermost first
    gone: bool  # no longer exists at head
    bare_ok: bool  # a bare mention may count (False for a moved symbol's same name)
    member: str | None = None  # set on the class of a changed method: that method's name


@dataclass(frozen=True)
class _Finding:
    path: str
    start_line: int
    end_line: int
    symbol: str | None  # the documented definition, for docstrings
    role: str
    heading: str | None
    signal: str
    weight: float
    reason: str


def stale_docs(
    change: ChangedSymbol,
    docs: LinkIndex,
    touched_paths: set[str],
    corpus: SearchCorpus | None = None,
    vector: NDArray[np.float32] | None = None,
    limit: int = MAX_DOCS_PER_SYMBOL,
) -> list[Evidence]:
    """Doc sections and docstrings that may describe ``change`` wrongly, best first.

    ``docs`` and ``corpus`` are of the head revision: only docs that exist at head count.
    ``vector`` is the symbol's vector from the revision that holds it (base for a removed
    symbol; see ``symbol_vector``). Cosmetic changes have no stale docs; for an added
    symbol only docs the PR edited are listed. At most ``limit`` items.
    """
    if change.cosmetic:
        return []
    targets = _targets(change)
    found = list(_section_findings(change, targets, docs))
    found += _docstring_findings(change, [t for t in targets if t.member is None], docs)
    found += _semantic_findings(change, docs, corpus, vector, found)
    items = _merge(found, touched_paths)
    if change.change == "added":  # only a module page can be stale about a new symbol
        items = [i for i in items if i.status == "updated" or "module" in i.signals]
    return sorted(items, key=lambda e: (-e.score, e.path, e.start_line))[:limit]


# -- targets and disambiguation -------------------------------------------------------------


def _targets(change: ChangedSymbol) -> list[_Target]:
    gone = change.change == "removed"
    current = _target(change.qualified_name, gone, True)
    owners = _owner_targets(change)
    if change.old_qualified_name is None:
        return [current, *owners]
    old = _target(change.old_qualified_name, True,
                  change.old_qualified_name.rsplit(".", 1)[-1] != change.symbol)
    return [old, current, *owners]


def _owner_targets(change: ChangedSymbol) -> list[_Target]:
    """The class of a changed public method, or the module of a public top-level symbol."""
    if change.change == "removed" or not _public(change.symbol):
        return []
    owner = change.qualified_name.rsplit(".", 1)[0]
    if change.kind == "method" and change.change != "added":
        return [replace(_target(owner, False, True), member=change.symbol)]
    if change.kind in ("function", "class") and "." in owner:
        return [_Target(owner, owner.rsplit(".", 1)[-1], (), False, False, change.symbol)]
    return []


def _public(name: str) -> bool:
    """Part of the documented surface: no leading underscore, or a constructor or call."""
    return not name.startswith("_") or name in _PUBLIC_DUNDERS


def _target(qualified_name: str, gone: bool, bare_ok: bool) -> _Target:
    parts = qualified_name.split(".")
    qualifiers = tuple(reversed([p for p in parts[:-1] if len(p) > 2]))[:2]
    return _Target(qualified_name, parts[-1], qualifiers, gone, bare_ok)


def _distinctive(name: str, docs: LinkIndex) -> bool:
    """A name unlikely to mean anything else: its bare mention is enough."""
    if name.lower() in GENERIC_NAMES or docs.name_counts.get(name, 0) > MAX_SAME_NAME_DEFINITIONS:
        return False
    core = name.strip("_")
    if "_" in core or any(c.isupper() for c in core[1:]):
        return True
    rare = docs.name_counts.get(name, 0) <= 1
    return rare and (core[:1].isupper() or len(core) >= DISTINCTIVE_MIN_CHARS)


def _qualified(chain: str, target: _Target) -> bool:
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


def _context_names(text: str, target: _Target) -> bool:
    """The text also names the symbol's class or module."""
    return any(word_pattern(q).search(text) for q in target.qualifiers
               if q.lower() not in GENERIC_NAMES)


def _page_names(path: str, target: _Target, docs: LinkIndex) -> bool:
    """The page is about the symbol's class or module: by file name or in any section."""
    stem = path.rsplit("/", 1)[-1].split(".", 1)[0].lower()
    if any(q.lstrip("_").lower() == stem for q in target.qualifiers):
        return True
    return any(_context_names(s.text, target) for s in docs.sections.get(path, ()))


def _history(path: str) -> bool:
    """A changelog or release notes: a record of the past, not a description of now."""
    return bool(_HISTORY.search(path))


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
    """The autodoc directive on ``line`` renders ``member`` (``:members:`` and friends)."""
    if not _AUTODOC_WITH_MEMBERS.search(_line_text(section, line)):
        return False
    options = _directive_options(section, line)
    listed = "special-members" if member.startswith("__") else "members"
    if listed not in options:
        return False
    names = {n.strip() for n in options[listed].split(",") if n.strip()}
    return not names or member in names


def _owner_mention(ref: DocRef, section: Section, target: _Target,
                   docs: LinkIndex, page: dict[str, bool]) -> str | None:
    """How ``ref`` names the class or module that holds the changed symbol."""
    member = target.member or ""
    if ref.kind == "directive" and _names_owner(ref.name, target):
        if _renders(section, ref.line, member):
            return "directive"
        if _MODULE_DIRECTIVE.search(_line_text(section, ref.line)):
            return "module"
    if not target.bare_ok:  # a module: only its directives count
        return None
    return "mention" if _mentions(ref, section, replace(target, member=None), docs,
                                  page) == "mention" else None


def _names_owner(chain: str, target: _Target) -> bool:
    """A directive target names the owner, exactly or through a re-exporting package."""
    if chain == target.qualified_name or _qualified(chain, target):
        return True
    rest = target.qualified_name.removeprefix(chain + ".")
    return rest != target.qualified_name and all(p.startswith("_") for p in rest.split("."))


def _mentions(ref: DocRef, section: Section, target: _Target, docs: LinkIndex,
              page: dict[str, bool]) -> str | None:
    """How ``ref`` names ``target``: "directive", "mention", or None when it does not.

    ``page`` caches, per path, whether the page names the target's class or module.
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
    if _distinctive(target.name, docs) or _context_names(section.text, target):
        return "mention"
    if target.name.lower() in GENERIC_NAMES:
        return None
    if section.path not in page:
        page[section.path] = _page_names(section.path, target, docs)
    return "mention" if page[section.path] else None


# -- sections -------------------------------------------------------------------------------


def _section_findings(change: ChangedSymbol, targets: list[_Target],
                      docs: LinkIndex) -> Iterator[_Finding]:
    seen: set[tuple[str, int, str]] = set()
    pages: dict[str, dict[str, bool]] = defaultdict(dict)  # target -> path -> named
    for ref in docs.doc_refs:
        if docs.roles.get(ref.path) in _NOT_DOCS or _history(ref.path):
            continue
        section = docs.section_at(ref.path, ref.line)
        if section is None:
            continue
        for target in targets:
            how = _mentions(ref, section, target, docs, pages[target.qualified_name])
            key = (section.path, section.start_line, target.qualified_name)
            if how is None or key in seen or (how == "module" and change.change != "added"):
                continue
            seen.add(key)
            if target.member is not None:
                yield _owner_finding(section, ref, target, how)
                continue
            yield _mention_finding(section, ref, target, how)
            yield from _parameter_findings(change, section, target)
            yield from _example_findings(change, section, target)


def _where(section: Section) -> str:
    return f"{section.path} § {section.heading}" if section.heading else section.path


def _line_text(section: Section, line: int) -> str:
    lines = section.text.splitlines()
    index = line - section.start_line
    return lines[index].strip() if 0 <= index < len(lines) else ""


def _finding(section: Section, signal: str, weight: float, reason: str) -> _Finding:
    return _Finding(section.path, section.start_line, section.end_line, None, section.role,
                    section.heading, signal, weight, reason)


def _mention_finding(section: Section, ref: DocRef, target: _Target, how: str) -> _Finding:
    text = _line_text(section, ref.line)
    if target.gone:
        return _finding(section, how, REMOVED_MENTION_WEIGHT,
                        f"{_where(section)} still mentions {target.qualified_name}, which no "
                        f"longer exists at head (line {ref.line}: {text})")
    if how == "directive":
        return _finding(section, how, DIRECTIVE_WEIGHT, f"{_where(section)} has `{text}`")
    return _finding(section, how, MENTION_WEIGHT,
                    f"{_where(section)} mentions {target.name} (line {ref.line})")


def _owner_finding(section: Section, ref: DocRef, target: _Target, how: str) -> _Finding:
    text = _line_text(section, ref.line)
    if how == "directive":
        return _finding(section, how, DIRECTIVE_WEIGHT,
                        f"{_where(section)} has `{text}`, which renders {target.member}")
    if how == "module":
        return _finding(section, how, MODULE_PAGE_WEIGHT,
                        f"{_where(section)} documents {target.qualified_name} (`{text}`), "
                        f"which gains {target.member}")
    return _finding(section, how, CLASS_MENTION_WEIGHT,
                    f"{_where(section)} mentions {target.name}, whose method "
                    f"{target.member} changed (line {ref.line})")


def _old_params(change: ChangedSymbol) -> dict[str, str]:
    """Removed or renamed parameter -> what happened to it."""
    found = {}
    for item in change.parameter_changes:
        if m := re.fullmatch(r"removed param (\S+)", item):
            found[m.group(1)] = "removed"
        elif m := re.fullmatch(r"renamed param (\S+) -> (\S+)", item):
            found[m.group(1)] = f"renamed to {m.group(2)}"
    return found


def _parameter_findings(change: ChangedSymbol, section: Section,
                        target: _Target) -> Iterator[_Finding]:
    if target.gone and change.change == "removed":
        return
    for param, what in _old_params(change).items():
        p = re.escape(param)
        used = re.search(rf"(?<![\w.]){p}\s*=(?!=)|`{p}`|:param\s+(?:\w+\s+)?{p}:"
                         rf"|^\s*[-*]?\s*\**{p}\**\s*[:(]", section.text, re.MULTILINE)
        if used:
            line = section.start_line + section.text.count("\n", 0, used.start())
            yield _finding(section, "parameter", PARAMETER_WEIGHT,
                           f"{_where(section)} still mentions parameter {param} of "
                           f"{change.symbol}, {what} in this PR (line {line})")


# -- examples calling the old signature -----------------------------------------------------


@dataclass(frozen=True)
class _Shape:
    names: tuple[str, ...]
    variadic: bool


def _shape(signature: str | None, name: str) -> _Shape | None:
    if not signature:
        return None
    found = re.search(rf"\b{re.escape(name)}\b", signature)
    opening = signature.find("(", found.end() if found else 0)
    if opening < 0:
        return None
    inner = signature[opening + 1:matching_paren(signature, opening)]
    parts = [p.strip() for p in _split_args(inner)]
    names = tuple(m.group(1) for p in parts if p not in _SELF and not p.startswith("*")
                  if (m := re.match(r"(?:\.\.\.)?(\w+)", p)))
    return _Shape(names, any(p.startswith("*") or "..." in p for p in parts))


def _split_args(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += 1 if char in "([{" else -1 if char in ")]}" else 0
        if char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [p for p in [*parts, text[start:]] if p.strip()]


def _example_findings(change: ChangedSymbol, section: Section,
                      target: _Target) -> Iterator[_Finding]:
    if change.change != "signature_changed" or target.gone:
        return
    old = _shape(change.old_signature, change.symbol)
    new = _shape(change.new_signature, change.symbol)
    if old is None or new is None:
        return
    added = [p for p in new.names if p not in old.names]
    for call in re.finditer(rf"(?<![\w$]){re.escape(change.symbol)}\s*\(", section.text):
        args = _split_args(section.text[call.end():matching_paren(section.text, call.end() - 1)])
        why = _old_shape_reason(args, old, new, added)
        if why:
            shown = section.text[call.start():matching_paren(section.text, call.end() - 1) + 1]
            yield _finding(section, "example", OLD_EXAMPLE_WEIGHT,
                           f"{_where(section)} still calls {' '.join(shown.split())} {why}")
            return


def _old_shape_reason(args: list[str], old: _Shape, new: _Shape,
                      added: list[str]) -> str | None:
    keywords = {m.group(1) for a in args if (m := re.match(r"\s*(\w+)\s*=(?!=)", a))}
    positional = len(args) - len(keywords)
    if not new.variadic and positional > len(new.names):
        return f"with {positional} positional arguments; it now takes {len(new.names)}"
    fits_old = old.variadic or len(args) <= len(old.names)
    missing = [p for i, p in enumerate(new.names)
               if p in added and i >= positional and p not in keywords]
    if fits_old and missing:
        return f"without the new {missing[0]} parameter"
    return None


# -- docstrings of other symbols ------------------------------------------------------------


def _docstring_findings(change: ChangedSymbol, targets: list[_Target],
                        docs: LinkIndex) -> Iterator[_Finding]:
    for doc in docs.docstrings:
        if doc.role in _NOT_DOCS or _own(doc.qualified_name, targets):
            continue
        for target in targets:
            if _docstring_mentions(doc.text, target, docs):
                weight = REMOVED_MENTION_WEIGHT if target.gone else DOCSTRING_WEIGHT
                still = "still " if target.gone else ""
                yield _Finding(doc.path, doc.start_line, doc.end_line, doc.qualified_name,
                               doc.role, None, "docstring", weight,
                               f"docstring of {doc.qualified_name} ({doc.path}:"
                               f"{doc.start_line}) {still}mentions {target.name}")
                break


def _own(qualified_name: str, targets: Iterable[_Target]) -> bool:
    """The symbol itself, or a definition nested in it."""
    return any(qualified_name == t.qualified_name
               or qualified_name.startswith(t.qualified_name + ".") for t in targets)


def _docstring_mentions(text: str, target: _Target, docs: LinkIndex) -> bool:
    qualified = re.search(rf"(?<![\w$])(?:\w+\.)+{re.escape(target.name)}(?![\w$])", text)
    if qualified and _qualified(qualified.group(0), target):
        return True
    if not target.bare_ok or not word_pattern(target.name).search(text):
        return False
    return _distinctive(target.name, docs) or _context_names(text, target)


# -- semantic nearness ----------------------------------------------------------------------


def _semantic_findings(change: ChangedSymbol, docs: LinkIndex, corpus: SearchCorpus | None,
                       vector: NDArray[np.float32] | None,
                       found: list[_Finding]) -> list[_Finding]:
    if corpus is None or vector is None:
        return []
    doc_paths = {p: r for p, r in docs.roles.items()
                 if p in docs.sections and r not in _NOT_DOCS and not _history(p)}
    nearness = nearness_by_path(corpus, vector, doc_paths)
    linked = {(f.path, f.start_line) for f in found}
    extra, alone = [], []
    for (path, start), cosine in nearness.items():
        section = docs.section_at(path, start)
        if section is None or cosine <= 0:
            continue
        item = _finding(section, "semantic", round(SEMANTIC_WEIGHT * cosine, 4),
                        f"{_where(section)} reads like {change.symbol} (cosine {cosine:.2f})")
        if (path, section.start_line) in linked:
            extra.append(item)
        elif cosine >= SEMANTIC_ONLY_MIN:
            alone.append(item)
    alone.sort(key=lambda f: -f.weight)
    return extra + alone[:SEMANTIC_ONLY_MAX_ITEMS]


# -- one item per section -------------------------------------------------------------------


def _merge(found: Iterable[_Finding], touched_paths: set[str]) -> list[Evidence]:
    groups: dict[tuple[str, int], list[_Finding]] = defaultdict(list)
    for f in found:
        groups[(f.path, f.start_line)].append(f)
    return [_evidence(group, touched_paths) for group in groups.values()]


def _evidence(group: list[_Finding], touched_paths: set[str]) -> Evidence:
    signals: dict[str, float] = {}
    for f in group:
        signals[f.signal] = max(signals.get(f.signal, 0.0), f.weight)
    lexical = [v for k, v in signals.items() if k in _LEXICAL]
    if lexical:
        signals["lexical"] = max(lexical)
    best = max(group, key=lambda f: f.weight)
    score = best.weight + EXTRA_EVIDENCE_BONUS * (len({f.signal for f in group}) - 1)
    touched = best.path in touched_paths
    return Evidence(path=best.path, symbol=best.symbol, role=best.role,
                    start_line=best.start_line, end_line=best.end_line,
                    score=round(score, 4), signals=signals, reason=best.reason,
                    touched_in_pr=touched, status="updated" if touched else "stale")
