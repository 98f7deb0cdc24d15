"""The MCP tools' output schemas: what every result and every item holds.

pydantic models, because the SDK publishes each tool's output schema from its return
model and validates the structured content against it. Lines are 1-based and
inclusive; ``revision`` is the commit SHA an item was read at, or ``"WORKTREE"`` for
content of the working tree that differs from it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = [
    "WORKTREE",
    "ChangeImpactResult",
    "DirtyFile",
    "IndexStatusResult",
    "Item",
    "Line",
    "Omitted",
    "RangeResult",
    "ToolResult",
    "wire",
]

WORKTREE = "WORKTREE"
Rendering = Literal["full", "no_snippets", "locations"]


class Item(BaseModel):
    """One place in the repository, with why it is listed."""

    path: str = Field(description="repository-relative path, '/'-separated")
    start_line: int = Field(description="first line, 1-based")
    end_line: int = Field(description="last line, 1-based, inclusive")
    revision: str = Field(description="commit SHA the lines are at, or WORKTREE")
    symbol: str | None = Field(description="qualified name of the definition, if any")
    role: str = Field(description="production, test, test_support, docs, example, config, "
                                  "generated, vendored or deprecated")
    score: float = Field(description="confidence or relevance, higher is better")
    reason: str = Field(description="one line saying why the item is listed")
    kind: str | None = Field(default=None, description="chunk or definition kind")
    line: int | None = Field(default=None, description="callers: the line of the call site")
    how: str | None = Field(default=None, description="callers: graph (resolved through "
                            "imports and scopes) or lexical (a same-name candidate)")
    signature: str | None = Field(default=None, description="definitions: the declaration")
    doc: str | None = Field(default=None, description="definitions: the docstring's first line")
    of: str | None = Field(default=None, description="the definition this item answers for "
                                                     "(several when a name is ambiguous)")
    category: str | None = Field(default=None, description="change_impact: changed, caller, "
                                 "test or doc")
    change: str | None = Field(default=None, description="change_impact: added, modified, "
                               "removed, renamed or signature_changed")
    needs_update: bool | None = Field(default=None, description="callers a breaking change "
                                      "left on the old name or signature")
    snippet: str | None = Field(default=None, description="the first lines of the item "
                                "(at most 20 lines of at most 200 characters)")


class Omitted(BaseModel):
    """What the budget left out."""

    items: int = Field(default=0, description="items dropped from the end")
    snippets: int = Field(default=0, description="snippets dropped")
    details: int = Field(default=0, description="items shown as locations only")


class ToolResult(BaseModel):
    """A ranked list of items, best first, fitted to the response budget."""

    items: list[Item]
    truncated: bool = Field(description="true when anything was left out to fit the budget")
    omitted: Omitted
    rendering: Rendering = Field(description="full; no_snippets; locations (items reduced "
                                             "to where they are and why)")
    revision: str = Field(description="the indexed commit the answer is of")
    stale: bool = Field(description="true when working-tree changes could not be overlaid: "
                                    "results may be out of date")
    notes: list[str] = Field(description="what the reader should know: ambiguity, staleness, "
                                         "limits")


class ChangeImpactResult(ToolResult):
    """A review: changed symbols, callers to update, tests to run, docs to check."""

    base: str = Field(description="the base commit SHA")
    head: str = Field(description="the head commit SHA, or WORKTREE")
    test_selection: list[str] = Field(description="test files (or pytest node ids) to run")


class Line(BaseModel):
    number: int = Field(description="1-based line number")
    text: str


class RangeResult(BaseModel):
    """Numbered lines of one file."""

    path: str
    start_line: int
    end_line: int = Field(description="the last line returned (inclusive)")
    revision: str = Field(description="commit SHA, or WORKTREE for the working tree's file")
    symbol: str | None = Field(description="the innermost definition holding start_line")
    role: str
    score: float
    reason: str
    total_lines: int = Field(description="lines in the file")
    lines: list[Line]
    truncated: bool
    omitted: Omitted
    notes: list[str]


class DirtyFile(BaseModel):
    path: str
    status: Literal["modified", "added", "deleted"]


class IndexStatusResult(BaseModel):
    """Which commit the index holds and how the working tree differs from it."""

    repository: str
    index_path: str
    indexed_commit: str | None
    head: str | None
    dirty_files: list[DirtyFile]
    dirty_count: int
    overlaid: int = Field(description="dirty files answers reflect: re-parsed, or hidden "
                                      "when deleted")
    stale: bool
    counts: dict[str, int]
    embedding_model: str
    model_loaded: bool
    notes: list[str]


_ITEM_REQUIRED = frozenset(name for name, f in Item.model_fields.items() if f.is_required())


def wire(result: BaseModel) -> dict[str, object]:
    """The structured content sent for ``result``: items without their empty fields."""
    data = result.model_dump(mode="json")
    items = data.get("items")
    if isinstance(items, list):
        data["items"] = [{k: v for k, v in item.items() if v is not None or k in _ITEM_REQUIRED}
                         for item in items]
    return data
