"""How-to questions mined from documentation sections that name the package's API.

A section whose heading says what it teaches ("Creating custom fields", "Testing",
"Error handling") and whose text names at least one public definition as code becomes
"how do I create custom fields?"; the answer is the page or any definition it names.
Headings that only organise a page (Installation, API, Changelog) and headings that are
themselves a code name are left out. Pure, like ``mining``.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Sequence

from pr_context.evals.cases import Group, Target
from pr_context.evals.mining import (
    Draft,
    SourceFile,
    definition_target,
    public_definitions,
)
from pr_context.evals.phrasing import gerund_base
from pr_context.roles import is_history

__all__ = ["how_to_drafts", "section_headings"]

MAX_API_TARGETS = 6
MAX_DEFINITIONS_PER_NAME = 2  # a name defined more often than this says little
MIN_GERUND_CHARS = 5
MIN_HEADING_WORD_CHARS = 3  # "TL;DR" says nothing to ask about
_DOC_REF_KINDS = frozenset({"directive", "mention"})
# Headings that organise a page rather than teach a task (a filter for mining only).
_STRUCTURAL = frozenset("""api reference references changelog changes history license
    installation install introduction intro contents index overview parameters returns
    example examples usage notes note credits authors contributing features requirements
    release releases glossary faq summary indices tables table of and quickstart tutorial
    guide documentation docs about welcome what's new news versions version support
    deprecations see also attributes methods classes functions modules exceptions
    arguments options""".split())
_CODE_LIKE = re.compile(r"[._()]|[a-z][A-Z]|::")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_NP_FORMS = ("how do I use {np}?", "how do I set up {np} with {package}?",
             "how do I work with {np} in {package}?")


def section_headings(source: SourceFile) -> dict[str, tuple[int, int]]:
    """heading path -> (first line, last line) of each section of a docs file."""
    spans: dict[str, tuple[int, int]] = {}
    for chunk in source.parsed.chunks:
        heading = next((line[len("section: "):] for line in chunk.context.split("\n")
                        if line.startswith("section: ")), None)
        if chunk.kind != "section" or heading is None:
            continue
        start, end = spans.get(heading, (chunk.start_line, chunk.end_line))
        spans[heading] = (min(start, chunk.start_line), max(end, chunk.end_line))
    return spans


def _question(heading: str, package: str, known: set[str], rng: random.Random) -> str | None:
    if _CODE_LIKE.search(heading):
        return None
    if heading.endswith("?"):  # "Which exceptions exist?" is already a question
        return heading[:1].lower() + heading[1:]
    words = _WORD.findall(heading)
    lowered = [w.lower() for w in words]
    if not words or all(w in _STRUCTURAL or len(w) < MIN_HEADING_WORD_CHARS
                        for w in lowered):
        return None
    first = lowered[0]
    if first.endswith("ing") and len(first) >= MIN_GERUND_CHARS:
        rest = " ".join(lowered[1:])
        verb = gerund_base(first, known)
        return f"how do I {verb} {rest}?" if rest else f"how do I {verb} with {package}?"
    phrase = " ".join(w if w.isupper() else w.lower() for w in words)
    return rng.choice(_NP_FORMS).format(np=phrase, package=package)


def how_to_drafts(files: Sequence[SourceFile], package: str, known: set[str],
                  rng: random.Random, limit: int) -> list[Draft]:
    """Docs sections that name the API, as "how do I ..." questions."""
    public = public_definitions(files)
    found: list[Draft] = []
    seen: set[str] = set()
    for source in files:
        if source.role != "docs" or is_history(source.path):
            continue
        names_by_line: dict[int, set[str]] = defaultdict(set)
        for ref in source.parsed.references:
            if ref.kind in _DOC_REF_KINDS:
                names_by_line[ref.line].add(ref.name.rsplit(".", 1)[-1])
        for heading, (start, end) in sorted(section_headings(source).items()):
            title = heading.rsplit(" > ", 1)[-1]
            named = sorted({n for line in range(start, end + 1)
                            for n in names_by_line.get(line, ())
                            if 0 < len(public.get(n, ())) <= MAX_DEFINITIONS_PER_NAME})
            question = _question(title, package, known, rng) if named else None
            if question is None or question in seen:
                continue
            seen.add(question)
            apis = [definition_target(path, d) for n in named for path, d in public[n]]
            targets = (Target(file=source.path, roles=("docs",)), *apis[:MAX_API_TARGETS])
            found.append(Draft("how_to_use", question, (Group("answer", targets),),
                               f"the heading of the docs section '{heading}' in "
                               f"{source.path}, which names {', '.join(named[:6])}"))
    rng.shuffle(found)
    return found[:limit]
