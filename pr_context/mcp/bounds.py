"""Bounds on every answer: a character budget for what is sent, a deadline for the work.

An answer over budget is rendered shorter, never cut silently and never an error:
snippets are dropped first, then items are reduced to their location and a short
reason, then items are dropped from the end; each step is recorded in ``omitted`` and
sets ``truncated``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from pr_context.mcp import DEFAULT_BUDGET_CHARS, DEFAULT_DEADLINE_S
from pr_context.mcp.schemas import Item, Omitted, ToolResult, wire

__all__ = [
    "DEFAULT_BUDGET_CHARS",
    "DEFAULT_DEADLINE_S",
    "MAX_LIMIT",
    "MAX_SNIPPET_LINES",
    "MAX_SNIPPET_LINE_CHARS",
    "Deadline",
    "cap_line",
    "fit_result",
    "snippet_of",
]

MAX_LIMIT = 100  # items a client may ask for; the budget usually binds first
MAX_SNIPPET_LINES = 20
MAX_SNIPPET_LINE_CHARS = 200
LOCATION_REASON_CHARS = 80  # the reason kept when an item is reduced to its location
_ELLIPSIS = "…"
_R = TypeVar("_R", bound=ToolResult)


@dataclass
class Deadline:
    """Seconds left for one call's work; long loops ask ``expired`` as they go."""

    seconds: float
    started: float = field(default_factory=time.monotonic)

    def remaining(self) -> float:
        return max(0.0, self.seconds - (time.monotonic() - self.started))

    def expired(self) -> bool:
        return self.remaining() <= 0.0


def cap_line(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + _ELLIPSIS


def snippet_of(lines: Iterable[str]) -> str:
    """At most MAX_SNIPPET_LINES lines of at most MAX_SNIPPET_LINE_CHARS characters."""
    taken = []
    for number, line in enumerate(lines):
        if number == MAX_SNIPPET_LINES:
            taken.append(_ELLIPSIS)
            break
        taken.append(cap_line(line, MAX_SNIPPET_LINE_CHARS))
    return "\n".join(taken)


def fit_result(result: _R, render: Callable[[_R], str], budget: int) -> tuple[_R, str]:
    """``result`` and its text rendering, shortened until both fit ``budget`` characters."""
    text = render(result)
    if _size(result, text) <= budget:
        return result, text
    steps: tuple[Callable[[_R], _R], ...] = (_without_snippets, _locations_only)
    for step in steps:
        result = step(result)
        text = render(result)
        if _size(result, text) <= budget:
            return result, text
    while result.items and _size(result, text) > budget:
        keep = max(0, len(result.items) - max(1, len(result.items) // 8))
        result = _dropped(result, len(result.items) - keep)
        text = render(result)
    return result, text


def _size(result: ToolResult, text: str) -> int:
    return len(json.dumps(wire(result), separators=(",", ":"))) + len(text)


def _without_snippets(result: _R) -> _R:
    dropped = sum(1 for item in result.items if item.snippet)
    items = [item.model_copy(update={"snippet": None}) for item in result.items]
    omitted = result.omitted.model_copy(update={"snippets": result.omitted.snippets + dropped})
    return result.model_copy(update={"items": items, "omitted": omitted, "truncated": True,
                                     "rendering": "no_snippets"})


def _locations_only(result: _R) -> _R:
    items = [_location(item) for item in result.items]
    omitted = result.omitted.model_copy(update={"details": len(items)})
    return result.model_copy(update={"items": items, "omitted": omitted, "truncated": True,
                                     "rendering": "locations"})


def _location(item: Item) -> Item:
    return Item(path=item.path, start_line=item.start_line, end_line=item.end_line,
                revision=item.revision, symbol=item.symbol, role=item.role, score=item.score,
                reason=cap_line(item.reason, LOCATION_REASON_CHARS), line=item.line,
                of=item.of, category=item.category)


def _dropped(result: _R, count: int) -> _R:
    items = result.items[: len(result.items) - count]
    omitted: Omitted = result.omitted.model_copy(
        update={"items": result.omitted.items + count,
                "details": min(result.omitted.details, len(items))})
    return result.model_copy(update={"items": items, "omitted": omitted, "truncated": True})
