"""Possibly-stale docs: doc sections and docstrings that describe a changed symbol.

Evidence, strongest first (weights below); a section's score is its strongest evidence
plus a small bonus per further kind, so the tiers never swap:

1. a removed or renamed symbol still mentioned (directive, qualified or distinctive name);
2. a removed or renamed parameter still mentioned in a section that mentions the symbol;
3. a code example calling the old signature (too many arguments, or none of an added one);
4. an autodoc/mkdocstrings directive or cross-reference naming the modified symbol;
   A class directive with ``:members:`` (or an ``automodule`` with ``:members:``, or
   mkdocstrings ``::: pkg.mod``) counts for a changed public method (or function) it
   renders: the tool pulls the docstring in.
5. a mention of a class attribute on the changed lines of a modified class
   (``:attr:`Request.max_size```: more specific than the class name; it needs the class
   named, as attribute names are shared with parameters); then a mention of the modified
   symbol; then the docstring of another symbol mentioning it; then a mention of the
   class of a changed public method (``__init__`` and ``__call__`` included): prose about
   a class describes how its methods behave, and projects often document methods under
   the class name only;
6. for an added public module-level symbol, a page that documents its module
   (``.. automodule:: pkg.mod``, ``.. currentmodule:: pkg.mod``): module reference pages
   list their members by hand as often as not, so a new member is a likely gap; less
   sure, a page with directives for other members of the module (``.. class:: C`` under
   its current module) or of a package that imports the new symbol (``.. autoclass::
   pkg.Other`` when ``pkg/__init__.py`` imports it); failing both, when no page
   documents the module nor is named after it, the table of contents (``toctree``)
   listing the pages of at least two of its sibling modules, where its page belongs;
7. semantic nearness: a tie-breaker, and at most one section when nothing else links,
   but never alone for an added symbol (a section the PR edited that reads like the new
   code says nothing about the new code) or for a test's symbol (docs describe the code,
   not its tests).

Which names are looked for, and when a reference or docstring names one, is decided in
``doc_names`` (bare names need to be distinctive or have their class or module nearby;
qualified names may go through a re-exporting package); page layout (current module,
tables of contents, sibling modules) comes from ``doc_pages``.

Changelogs and release notes are history, not descriptions of current behaviour, and are
skipped: every change gets an entry, and their old mentions would crowd the pages that
do describe the symbol out of the first three.
Docs the PR edited are listed with status "updated", the rest "stale". Pure.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pr_context.changes import ChangedSymbol
from pr_context.links.doc_names import (
    Target,
    line_text,
    public_name,
    ref_names,
    targets_of,
    text_names,
)
from pr_context.links.doc_pages import sibling_modules
from pr_context.links.evidence import (
    DocRef,
    Evidence,
    LinkIndex,
    Section,
    nearness_by_path,
)
from pr_context.retrieve.corpus import SearchCorpus
from pr_context.roles import is_history
from pr_context.signatures import matching_paren

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "ATTRIBUTE_MENTION_WEIGHT",
    "CLASS_MENTION_WEIGHT",
    "CONTENTS_WEIGHT",
    "DIRECTIVE_WEIGHT",
    "DOCSTRING_WEIGHT",
    "MAX_DOCS_PER_SYMBOL",
    "MEMBER_PAGE_WEIGHT",
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
# A class attribute on the changed lines of a modified class, named in the docs: more
# specific than a mention of the class, still prose that may not state what changed.
ATTRIBUTE_MENTION_WEIGHT = 0.45
# Prose about a modified symbol may or may not describe what changed.
MENTION_WEIGHT = 0.4
# Another symbol's docstring naming it: the behaviour it describes may have moved.
DOCSTRING_WEIGHT = 0.35
# Prose about the class of a changed method: it may describe that method's behaviour,
# but more often describes the class as a whole.
CLASS_MENTION_WEIGHT = 0.3
# A reference page of the module that gained a public symbol: it may need an entry.
MODULE_PAGE_WEIGHT = 0.3
# A page documenting other members of that module one directive each: it lists members
# by hand, so a new one is a likely gap; less sure than the module's own directive.
MEMBER_PAGE_WEIGHT = 0.25
# The table of contents listing the pages of a new symbol's sibling modules, when its
# module has no page: the page the new module needs would be listed there.
CONTENTS_WEIGHT = 0.2
# How many sibling modules' pages a table of contents lists to be the module index.
MIN_LISTED_SIBLINGS = 2
# Similar wording is not evidence of staleness: a tie-breaker, times the cosine.
SEMANTIC_WEIGHT = 0.2
# With no lexical evidence at all, one section this close is still worth a look.
SEMANTIC_ONLY_MIN = 0.6
SEMANTIC_ONLY_MAX_ITEMS = 1
# Each further kind of evidence for the same section; small so tiers keep their order.
EXTRA_EVIDENCE_BONUS = 0.05
# Reviewers read three; the project's target is at most three docs per symbol.
MAX_DOCS_PER_SYMBOL = 3

_LEXICAL = ("directive", "mention", "docstring", "parameter", "example", "module")
_FENCE = re.compile(r"^(?:`{3,}|~{3,})\s*")
_NOT_DOCS = frozenset({"test", "test_support", "vendored", "generated"})
# How a page names a module that are evidence for a symbol the PR added only.
_PAGE_ONLY = frozenset({"module", "members"})
_SELF = frozenset({"self", "cls", "this", "&self", "&mut self", "mut self", "*", "/"})


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
    targets = targets_of(change, corpus)
    found = _best_module_finding_per_page(_section_findings(change, targets, docs))
    found += _contents_findings(change, docs, found)
    found += _docstring_findings(change, [t for t in targets if t.member is None], docs)
    found += _semantic_findings(change, docs, corpus, vector, found,
                                alone=change.change != "added"
                                and docs.roles.get(change.path) not in _NOT_DOCS)
    items = _merge(found, touched_paths)
    if change.change == "added":  # only a module page can be stale about a new symbol
        items = [i for i in items if i.status == "updated" or "module" in i.signals]
    return sorted(items, key=lambda e: (-e.score, e.path, e.start_line))[:limit]


# -- sections -------------------------------------------------------------------------------


def _section_findings(change: ChangedSymbol, targets: list[Target],
                      docs: LinkIndex) -> Iterator[_Finding]:
    seen: set[tuple[str, int, str]] = set()
    pages: dict[str, dict[str, bool]] = defaultdict(dict)  # target -> path -> named
    for ref, section in docs.ref_sections():
        if section is None or docs.roles.get(ref.path) in _NOT_DOCS or is_history(ref.path):
            continue
        for target in targets:
            how = ref_names(ref, section, target, docs, pages[target.qualified_name])
            key = (section.path, section.start_line, target.qualified_name)
            if how is None or key in seen or (how in _PAGE_ONLY and change.change != "added"):
                continue
            seen.add(key)
            if target.member is not None:
                yield _owner_finding(section, ref, target, how)
            elif target.attribute:
                yield _attribute_finding(section, ref, target)
            else:
                yield _mention_finding(section, ref, target, how)
                yield from _parameter_findings(change, section, target)
                yield from _example_findings(change, section, target)


def _best_module_finding_per_page(found: Iterable[_Finding]) -> list[_Finding]:
    """One "module" finding per page, its strongest: a page is listed once as a module's."""
    kept: list[_Finding] = []
    best: dict[str, _Finding] = {}
    for f in found:
        if f.signal != "module":
            kept.append(f)
        elif f.path not in best or f.weight > best[f.path].weight:
            best[f.path] = f
    return kept + list(best.values())


def _where(section: Section) -> str:
    return f"{section.path} § {section.heading}" if section.heading else section.path


def _finding(section: Section, signal: str, weight: float, reason: str) -> _Finding:
    return _Finding(section.path, section.start_line, section.end_line, None, section.role,
                    section.heading, signal, weight, reason)


def _shown(text: str) -> str:
    """A directive line fit for inline code: without a MyST fence's backticks."""
    return _FENCE.sub("", text)


def _mention_finding(section: Section, ref: DocRef, target: Target, how: str) -> _Finding:
    text = line_text(section, ref.line)
    if target.gone:
        return _finding(section, how, REMOVED_MENTION_WEIGHT,
                        f"{_where(section)} still mentions {target.qualified_name}, which no "
                        f"longer exists at head (line {ref.line}: {text})")
    if how == "directive":
        return _finding(section, how, DIRECTIVE_WEIGHT,
                        f"{_where(section)} has `{_shown(text)}`")
    return _finding(section, how, MENTION_WEIGHT,
                    f"{_where(section)} mentions {target.name} (line {ref.line})")


def _attribute_finding(section: Section, ref: DocRef, target: Target) -> _Finding:
    owner = target.qualified_name.rsplit(".", 2)[-2]
    return _finding(section, "mention", ATTRIBUTE_MENTION_WEIGHT,
                    f"{_where(section)} mentions {owner}.{target.name}, a class attribute "
                    f"this PR changed (line {ref.line})")


def _exporter(ref: DocRef, target: Target) -> str:
    """The module ``ref`` documents a member of: a re-exporting package, or the module."""
    parent = ref.name.rsplit(".", 1)[0]
    return parent if parent in target.exported_as else target.qualified_name


def _owner_finding(section: Section, ref: DocRef, target: Target, how: str) -> _Finding:
    text = _shown(line_text(section, ref.line))
    if how == "directive":
        return _finding(section, how, DIRECTIVE_WEIGHT,
                        f"{_where(section)} has `{text}`, which renders {target.member}")
    if how == "module":
        return _finding(section, how, MODULE_PAGE_WEIGHT,
                        f"{_where(section)} documents {target.qualified_name} (`{text}`), "
                        f"which gains {target.member}")
    if how == "members":
        return _finding(section, "module", MEMBER_PAGE_WEIGHT,
                        f"{_where(section)} documents members of {_exporter(ref, target)} "
                        f"one by one (`{text}`); {target.member} is new there")
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
                        target: Target) -> Iterator[_Finding]:
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
                      target: Target) -> Iterator[_Finding]:
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


# -- the table of contents a new module's page belongs in ------------------------------------


def _contents_findings(change: ChangedSymbol, docs: LinkIndex,
                       found: list[_Finding]) -> list[_Finding]:
    """The toctree listing the pages of the module's siblings, when the module has none.

    For a public symbol added at module level to a public module no page documents (no
    module or member directive for it, no page named after it).
    """
    module = _new_symbol_module(change)
    if module is None or any(f.signal in ("module", "directive") for f in found):
        return []  # the module has a page (``::: pkg.mod`` renders its members)
    name = module.rsplit(".", 1)[-1]
    pages = [p for p in docs.sections if _is_doc_page(p, docs)]
    if any(_stem(p) == name.lower() for p in pages):
        return []
    siblings = sibling_modules(change.path, docs.roles)
    listed = [(key, sorted(set(entries) & siblings)) for key, entries in docs.toctrees.items()
              if _is_doc_page(key[0], docs)]
    return [_contents_finding(docs, key, module, names, change.symbol)
            for key, names in listed if len(names) >= MIN_LISTED_SIBLINGS]


def _new_symbol_module(change: ChangedSymbol) -> str | None:
    """The public module an added public function or class was defined at the top of."""
    if change.change != "added" or change.kind not in ("function", "class") \
            or not public_name(change.symbol) or "." not in change.qualified_name:
        return None
    module = change.qualified_name.rsplit(".", 1)[0]
    own = change.path.rsplit("/", 1)[-1].split(".", 1)[0]
    if own in ("__init__", "index", "mod", "lib"):
        own = change.path.rsplit("/", 2)[-2] if change.path.count("/") else own
    last = module.rsplit(".", 1)[-1]
    if last != own or any(p.startswith("_") for p in module.split(".")):
        return None
    return module


def _is_doc_page(path: str, docs: LinkIndex) -> bool:
    return docs.roles.get(path) not in _NOT_DOCS and not is_history(path)


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].split(".", 1)[0].lower()


def _contents_finding(docs: LinkIndex, key: tuple[str, int], module: str,
                      names: list[str], symbol: str) -> _Finding:
    path, start = key
    section = docs.section_at(path, start)
    assert section is not None
    shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    return _finding(section, "module", CONTENTS_WEIGHT,
                    f"{_where(section)} lists the pages of {len(names)} sibling modules "
                    f"({shown}); {module}, which gains {symbol}, has no page")


# -- docstrings of other symbols ------------------------------------------------------------


def _docstring_findings(change: ChangedSymbol, targets: list[Target],
                        docs: LinkIndex) -> Iterator[_Finding]:
    for doc in docs.docstrings:
        if doc.role in _NOT_DOCS or _own(doc.qualified_name, targets):
            continue
        for target in targets:
            if text_names(doc.text, target, docs):
                weight = REMOVED_MENTION_WEIGHT if target.gone else DOCSTRING_WEIGHT
                still = "still " if target.gone else ""
                yield _Finding(doc.path, doc.start_line, doc.end_line, doc.qualified_name,
                               doc.role, None, "docstring", weight,
                               f"docstring of {doc.qualified_name} ({doc.path}:"
                               f"{doc.start_line}) {still}mentions {target.name}")
                break


def _own(qualified_name: str, targets: Iterable[Target]) -> bool:
    """The symbol itself, or a definition nested in it."""
    return any(qualified_name == t.qualified_name
               or qualified_name.startswith(t.qualified_name + ".") for t in targets)


# -- semantic nearness ----------------------------------------------------------------------


def _semantic_findings(change: ChangedSymbol, docs: LinkIndex, corpus: SearchCorpus | None,
                       vector: NDArray[np.float32] | None,
                       found: list[_Finding], alone: bool) -> list[_Finding]:
    """Sections near the symbol in meaning: a tie-breaker among the linked ones, and,
    when ``alone``, the closest one when it is close enough."""
    if corpus is None or vector is None:
        return []
    doc_paths = {p: r for p, r in docs.roles.items()
                 if p in docs.sections and r not in _NOT_DOCS and not is_history(p)}
    nearness = nearness_by_path(corpus, vector, doc_paths)
    linked = {(f.path, f.start_line) for f in found}
    extra, only = [], []
    for (path, start), cosine in nearness.items():
        section = docs.section_at(path, start)
        if section is None or cosine <= 0:
            continue
        item = _finding(section, "semantic", round(SEMANTIC_WEIGHT * cosine, 4),
                        f"{_where(section)} reads like {change.symbol} (cosine {cosine:.2f})")
        if (path, section.start_line) in linked:
            extra.append(item)
        elif alone and cosine >= SEMANTIC_ONLY_MIN:
            only.append(item)
    only.sort(key=lambda f: -f.weight)
    return extra + only[:SEMANTIC_ONLY_MAX_ITEMS]


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
