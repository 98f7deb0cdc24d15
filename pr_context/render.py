"""Render a review :class:`Report` as the PR comment and the step summary (Markdown).

Pure: data in, text out. Templates live in ``pr_context/templates`` (package data, so
they load the same from a checkout and from a wheel). Every value a template prints is
escaped by the environment's ``finalize`` unless it was built here as ``Markup``:
repository text can raise no HTML, ping nobody and show no image. The comment starts
with the hidden marker that identifies it and never exceeds ``MAX_COMMENT_CHARS``:
whole symbol blocks are left out, and counted, until it fits.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from pr_context.report import EvidenceItem, Report, SymbolReport

if TYPE_CHECKING:
    from pr_context.retrieve import SearchHit

__all__ = [
    "COMMANDS_HELP",
    "COMMENT_MARKER",
    "EXPLAIN_MAX_ITEMS",
    "MAX_COMMENT_CHARS",
    "REPLY_MARKER",
    "escape_html",
    "escape_markdown",
    "headline",
    "render_comment",
    "render_explain",
    "render_help",
    "render_message",
    "render_refusal",
    "render_search",
    "render_summary",
]

COMMENT_MARKER = "<!-- pr-context:v1 -->"
REPLY_MARKER = "<!-- pr-context:reply -->"  # replies are never taken for the sticky comment
MAX_COMMENT_CHARS = 65_000  # GitHub rejects comment bodies over 65,536 characters
MAX_TEXT_CHARS = 300  # one reason or name: longer text is cut, evidence.json has it all
SUMMARY_MAX_SYMBOLS = 50  # the step summary is an overview, not the full list
EXPLAIN_MAX_ITEMS = 100  # per category in an explain reply: "in full", within reason

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")  # "![", "](" die with "["
_ZWJ = "\u200d"  # after "@" it stops GitHub from reading a mention
_CHANGE_WORDS = {"added": "added", "modified": "modified", "removed": "removed",
                 "renamed": "renamed", "signature_changed": "signature changed"}


def escape_markdown(text: str) -> Markup:
    """``text`` as inert inline Markdown: one line, no HTML, no mention, no image or link."""
    line = html.escape(_one_line(text), quote=False)
    return Markup(_no_mentions(_MARKDOWN_SPECIAL.sub(r"\\\1", line)))


def escape_html(text: str) -> Markup:
    """``text`` for an HTML block (``<summary>``), where Markdown escapes would show."""
    escaped = html.escape(_one_line(text), quote=True)
    # Inert in an HTML block already; numeric references keep them inert if it ever isn't.
    return Markup(_no_mentions(escaped.replace("[", "&#91;").replace("`", "&#96;")))


def _one_line(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= MAX_TEXT_CHARS else line[: MAX_TEXT_CHARS - 1] + "…"


def _no_mentions(text: str) -> str:
    return text.replace("@", "@" + _ZWJ)


def _finalize(value: object) -> object:
    return value if isinstance(value, Markup) else escape_markdown(str(value))


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("pr_context", "templates"),
                      undefined=StrictUndefined, autoescape=False, finalize=_finalize,
                      keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["code"] = lambda v: Markup(f"<code>{escape_markdown(str(v))}</code>")
    env.filters["html"] = lambda v: escape_html(str(v))
    env.filters["html_code"] = lambda v: Markup(f"<code>{escape_html(str(v))}</code>")
    return env


_ENV = _environment()


# -- headline -------------------------------------------------------------------------------


def headline(report: Report) -> str:
    """"3 changed symbols · 2 callers not updated · 1 possibly-stale doc · 4 tests to run"
    (or "all tests to run"), and how many changed symbols no test runs, when known."""
    parts = [_count(len(report.symbols), "changed symbol"),
             _count(report.callers_not_updated, "caller") + " not updated",
             _count(report.stale_docs, "possibly-stale doc"),
             "all tests to run" if report.run_everything is not None
             else _count(len(report.test_selection), "test") + " to run"]
    if report.no_test_runs:
        parts.append(f"{report.no_test_runs} run by no test")
    return " · ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# -- comment --------------------------------------------------------------------------------


def render_comment(report: Report) -> str:
    """The sticky PR comment: marker, headline, a collapsed block per changed symbol.

    Shows ``report.top_k`` items per category; when the whole text would exceed
    ``MAX_COMMENT_CHARS``, the last symbol blocks are left out and counted.
    """
    blocks = [_symbol_view(report, s) for s in report.symbols]
    low, high = 0, len(blocks)
    text = _comment_text(report, blocks, high)
    if len(text) <= MAX_COMMENT_CHARS:
        return text
    while low < high:  # the most blocks that fit
        middle = (low + high + 1) // 2
        if len(_comment_text(report, blocks, middle)) <= MAX_COMMENT_CHARS:
            low = middle
        else:
            high = middle - 1
    return _comment_text(report, blocks, low)[:MAX_COMMENT_CHARS]


def _comment_text(report: Report, blocks: Sequence[dict[str, Any]], shown: int) -> str:
    shown_tests = report.top_k * 4
    return _ENV.get_template("comment.md.j2").render(
        marker=Markup(COMMENT_MARKER), headline=headline(report), report=report,
        notes=report.notes, symbols=blocks[:shown], omitted=len(blocks) - shown,
        selection=_selection_view(report)[:shown_tests],
        selection_more=max(len(report.test_selection) - shown_tests, 0))


def _selection_view(report: Report) -> list[dict[str, str]]:
    """The tests to run, each with the first reason it is there."""
    reasons = {i.target: i.reasons[0] for i in report.selection_details if i.reasons}
    return [{"target": t, "reason": reasons.get(t, "")} for t in report.test_selection]


def _symbol_view(report: Report, symbol: SymbolReport) -> dict[str, Any]:
    return _block(symbol, report.top_k, _Where(report.base, report.head, report.link_base))


@dataclass(frozen=True)
class _Where:
    """Revisions and the repository URL that locations link to."""

    base: str
    head: str
    link_base: str | None


def _block(symbol: SymbolReport, top_k: int, where: _Where) -> dict[str, Any]:
    """One changed symbol's view: location, counts, top ``top_k`` items per category."""
    categories = [("Callers", symbol.callers), ("Linked tests", symbol.tests),
                  ("Possibly-stale docs", symbol.docs)]
    return {
        "symbol": symbol, "change": _CHANGE_WORDS.get(symbol.change, symbol.change),
        "location": _location(where, symbol.path, symbol.start_line,
                              where.base if symbol.change == "removed" else where.head),
        "counts": _symbol_counts(symbol),
        "inside": [n.removeprefix(symbol.qualified_name + ".") for n in symbol.changed_inside],
        "categories": [{"title": title, "entries": [_item_view(where, i)
                                                   for i in items[:top_k]],
                        "more": max(len(items) - top_k, 0)}
                       for title, items in categories if items],
    }


def _symbol_counts(symbol: SymbolReport) -> str:
    if not symbol.analysed:
        return "not analysed (time budget)"
    callers = _count(len(symbol.callers), "caller")
    if symbol.callers_not_updated:
        callers += f" ({symbol.callers_not_updated} not updated)"
    parts = [callers, _count(len(symbol.tests), "test"), _count(len(symbol.docs), "doc")]
    if symbol.no_test_runs:
        parts.append("no test runs this")
    return " · ".join(parts)


def _item_view(where: _Where, item: EvidenceItem) -> dict[str, Any]:
    line = item.line if item.line is not None else item.start_line
    return {"location": _location(where, item.path, line, item.revision),
            "reason": item.reason, "flag": item.needs_update,
            "edited": item.status == "updated"}


def _location(where: _Where, path: str, line: int, revision: str | None) -> Markup:
    code = Markup(f"<code>{escape_markdown(f'{path}:{line}')}</code>")
    if where.link_base is None:
        return code
    url = (f"{where.link_base.rstrip('/')}/blob/{revision or where.head}/"
           f"{quote(path, safe='/')}#L{line}")
    return Markup(f"[{code}]({html.escape(url, quote=True)})")


# -- step summary ---------------------------------------------------------------------------


def render_summary(report: Report) -> str:
    """The job step summary: the headline and one line per changed symbol."""
    return _ENV.get_template("summary.md.j2").render(
        headline=headline(report), report=report, notes=report.notes,
        symbols=[{"symbol": s, "change": _CHANGE_WORDS.get(s.change, s.change),
                  "counts": _symbol_counts(s)}
                 for s in report.symbols[:SUMMARY_MAX_SYMBOLS]],
        omitted=max(len(report.symbols) - SUMMARY_MAX_SYMBOLS, 0),
        selection=_selection_view(report))


# -- slash-command replies ------------------------------------------------------------------

COMMANDS_HELP = (
    ("/pr-context refresh", "review the PR's current head again and update the comment"),
    ("/pr-context search <query>", "search the code, tests and docs at the PR's head"),
    ("/pr-context explain <symbol>", "every caller, linked test and doc of one symbol"),
    ("/pr-context help", "this list"),
)


def render_help(unknown: str | None = None) -> str:
    """The command list; ``unknown`` is the command that was not understood, if any."""
    return _fit(_ENV.get_template("help.md.j2").render(
        marker=Markup(REPLY_MARKER), unknown=unknown, commands=COMMANDS_HELP))


def render_message(text: str) -> str:
    """A one-line reply, escaped like everything else."""
    return f"{REPLY_MARKER}\n{escape_markdown(text)}\n"


def render_refusal(login: str, permission: str) -> str:
    """A visible, polite no for a commenter without write access."""
    return _fit(_ENV.get_template("refusal.md.j2").render(
        marker=Markup(REPLY_MARKER), login=login, permission=permission))


def render_search(query: str, hits: Sequence[SearchHit], message: str | None, head: str,
                  link_base: str | None) -> str:
    """The reply to ``/pr-context search``: ranked hits at the PR's head."""
    where = _Where(head, head, link_base)
    return _fit(_ENV.get_template("search.md.j2").render(
        marker=Markup(REPLY_MARKER), query=query, head=head, message=message,
        hits=[{"hit": h, "location": _location(where, h.path, h.start_line, h.revision)}
              for h in hits]))


def render_explain(symbol: SymbolReport, base: str, head: str, link_base: str | None,
                   others: Sequence[str] = ()) -> str:
    """The reply to ``/pr-context explain``: one symbol's evidence in full."""
    block = _block(symbol, EXPLAIN_MAX_ITEMS, _Where(base, head, link_base))
    return _fit(_ENV.get_template("explain.md.j2").render(
        marker=Markup(REPLY_MARKER), block=block, head=head, others=others[:10],
        others_more=max(len(others) - 10, 0)))


def _fit(text: str) -> str:
    """``text`` cut at a line boundary to GitHub's comment limit, saying so."""
    if len(text) <= MAX_COMMENT_CHARS:
        return text
    cut = text.rfind("\n", 0, MAX_COMMENT_CHARS - 200)
    return text[:cut] + "\n\n(cut to fit GitHub's comment size limit)\n"
