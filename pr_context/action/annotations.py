"""Findings on the diff: workflow-command annotations for what a reviewer must not miss.

GitHub shows ``::warning file=F,line=L,endLine=E,title=T::message`` on that line of the
pull request's "Files changed" view and in the run's summary. It needs no token, so it
works on a fork's read-only run. It keeps only the first 10 annotations of each level
per step (50 per job) and never clears them, so only high-confidence findings become
annotations:

1. a removed or renamed symbol that callers resolved through the graph still use;
2. a signature change whose graph-resolved callers the PR did not update, on the
   changed definition at head, naming the callers;
3. a doc the PR did not edit that still names a removed or renamed symbol;
4. a doc the PR did not edit that still names a removed or renamed parameter.

Most important first (that order, then the most callers), at most 10 per level with
the run's own notes counted in, and then one notice saying how many more the comment
holds. Pure: a report in, lines out; every value is escaped by ``workflow_command``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pr_context.action.outputs import workflow_command
from pr_context.links.stale_docs import REMOVED_MENTION_WEIGHT
from pr_context.report import EvidenceItem, Report, SymbolReport

__all__ = [
    "MAX_PER_LEVEL",
    "Annotation",
    "annotation_lines",
    "finding_annotations",
]

MAX_PER_LEVEL = 10  # GitHub keeps the first 10 annotations of each level in a step
MAX_CALLERS_NAMED = 10  # per annotation; the comment lists them all
# Priorities, lowest first: a removed or renamed name breaks every use; a changed
# signature breaks the calls that no longer fit; docs mislead but do not break a build.
_GONE, _SIGNATURE, _DOC_SYMBOL, _DOC_PARAMETER = range(4)


@dataclass(frozen=True)
class Annotation:
    """One workflow-command annotation on a file (line None: on the file as a whole)."""

    level: str  # "warning" or "notice"
    path: str
    line: int | None
    end_line: int | None
    title: str
    message: str

    def command(self) -> str:
        properties = {"file": self.path}
        if self.line is not None:
            properties |= {"line": str(self.line), "endLine": str(self.end_line or self.line)}
        properties["title"] = self.title
        return workflow_command(self.level, self.message, properties)


@dataclass(frozen=True)
class _Finding:
    priority: int
    weight: int  # callers named: more first
    annotation: Annotation


def finding_annotations(report: Report, level: str, path_prefix: str = "") -> list[Annotation]:
    """The report's high-confidence findings at ``level``, most important first.

    ``path_prefix`` is the repository's folder inside GITHUB_WORKSPACE ("" at its root):
    annotation paths are relative to the workspace.
    """
    if level == "off":
        return []
    found = [f for symbol in report.symbols if symbol.analysed
             for f in _symbol_findings(symbol, level, path_prefix)]
    found.sort(key=lambda f: (f.priority, -f.weight, f.annotation.path,
                              f.annotation.line or 0))
    return [f.annotation for f in found]


def annotation_lines(notes: Sequence[tuple[str, str]],
                     findings: Sequence[Annotation]) -> list[str]:
    """Every workflow command of the step: the run's notes, then the findings that fit.

    The findings fill what GitHub keeps of their level after the notes; when some are
    left out, a last notice counts them (a notice slot is kept for it).
    """
    used = Counter(level for level, _ in notes)
    lines = [workflow_command(level, message) for level, message in notes]
    if not findings:
        return lines
    level = findings[0].level
    room = max(MAX_PER_LEVEL - used[level], 0)
    if len(findings) > room and level == "notice":
        room = max(room - 1, 0)
    shown = findings[:room]
    lines += [a.command() for a in shown]
    if len(findings) > len(shown):
        lines.append(workflow_command(
            "notice", f"{len(findings) - len(shown)} more in the pr-context comment "
                      f"(GitHub keeps {MAX_PER_LEVEL} annotations of each level per step)"))
    return lines


def _symbol_findings(symbol: SymbolReport, level: str, prefix: str) -> Iterator[_Finding]:
    callers = [c for c in symbol.callers if c.needs_update and "graph" in c.signals]
    if callers:
        yield _caller_finding(symbol, callers, level, prefix)
    for doc in symbol.docs:
        kind = _doc_kind(symbol, doc)
        if kind is not None:
            yield _doc_finding(symbol, doc, kind, level, prefix)


def _caller_finding(symbol: SymbolReport, callers: list[EvidenceItem], level: str,
                    prefix: str) -> _Finding:
    listed = "\n".join(f"- {_site(c)}" for c in callers[:MAX_CALLERS_NAMED])
    if len(callers) > MAX_CALLERS_NAMED:
        listed += f"\n- and {len(callers) - MAX_CALLERS_NAMED} more"
    count = f"{len(callers)} caller{'s' if len(callers) != 1 else ''}"
    if symbol.change == "removed":
        # No definition at head: the call site the PR left alone, whose lines at base are
        # its lines at head; a file the PR edited gets the annotation on the file.
        site = next((c for c in callers if not c.touched_in_pr), None)
        line = None if site is None else (site.line or site.start_line)
        return _Finding(_GONE, len(callers), Annotation(
            level, prefix + (site or callers[0]).path, line, line,
            f"Removed, still used: {_short(symbol)}",
            f"{symbol.qualified_name} was removed; {count} still use it:\n{listed}"))
    if symbol.old_qualified_name and symbol.old_qualified_name != symbol.qualified_name:
        return _Finding(_GONE, len(callers), _on_definition(
            symbol, level, prefix, f"Renamed, still used: {symbol.old_qualified_name}",
            f"{symbol.old_qualified_name} is now {symbol.qualified_name}; {count} still "
            f"use the old name:\n{listed}"))
    changes = "; ".join(symbol.parameter_changes) or f"now {symbol.new_signature or '?'}"
    return _Finding(_SIGNATURE, len(callers), _on_definition(
        symbol, level, prefix, f"Callers not updated: {_short(symbol)}",
        f"{symbol.qualified_name} changed its signature ({changes}); {count} this PR "
        f"did not update:\n{listed}"))


def _on_definition(symbol: SymbolReport, level: str, prefix: str, title: str,
                   message: str) -> Annotation:
    """On the definition's first line at head: where its signature is."""
    return Annotation(level, prefix + symbol.path, symbol.start_line, symbol.start_line,
                      title, message)


def _short(symbol: SymbolReport) -> str:
    """``Schema.__init__`` for a method, ``load`` for a function: a title's name."""
    if symbol.kind == "method":
        return ".".join(symbol.qualified_name.split(".")[-2:])
    return symbol.symbol


def _site(caller: EvidenceItem) -> str:
    where = f"{caller.path}:{caller.line or caller.start_line}"
    return f"{where} in {caller.symbol}" if caller.symbol else where


def _doc_kind(symbol: SymbolReport, doc: EvidenceItem) -> int | None:
    """Which high-confidence doc finding ``doc`` is, if any.

    The stale-docs signals carry their tier's weight: a removed or renamed name still
    mentioned scores ``REMOVED_MENTION_WEIGHT`` (the top tier), a removed or renamed
    parameter still mentioned has the ``parameter`` signal.
    """
    if doc.status != "stale":
        return None
    gone = symbol.change == "removed" or bool(symbol.old_qualified_name)
    if gone and max(doc.signals.values(), default=0.0) >= REMOVED_MENTION_WEIGHT:
        return _DOC_SYMBOL
    if "parameter" in doc.signals:
        return _DOC_PARAMETER
    return None


def _doc_finding(symbol: SymbolReport, doc: EvidenceItem, kind: int, level: str,
                 prefix: str) -> _Finding:
    what = (f"names {symbol.old_qualified_name or symbol.qualified_name}"
            if kind == _DOC_SYMBOL else f"names an old parameter of {_short(symbol)}")
    return _Finding(kind, 1, Annotation(level, prefix + doc.path, doc.start_line,
                                        doc.start_line, f"Stale doc: {what}", doc.reason))
