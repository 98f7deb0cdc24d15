"""The short text renderings sent beside each tool's structured content."""

from __future__ import annotations

from pr_context.mcp.schemas import IndexStatusResult, Item, RangeResult, ToolResult

__all__ = ["render_range", "render_result", "render_status"]


def render_result(result: ToolResult) -> str:
    """One line per item, then the notes; snippets stay in the structured content."""
    state = [f"{len(result.items)} items at {result.revision[:12]}"]
    if result.stale:
        state.append("STALE")
    if result.truncated:
        o = result.omitted
        state.append(f"truncated to fit ({o.items} items, {o.snippets} snippets left out, "
                     f"{o.details} shown as locations)")
    lines = [", ".join(state)]
    lines += [f"{n}. {_item_line(item)}" for n, item in enumerate(result.items, 1)]
    lines += [f"note: {note}" for note in result.notes]
    return "\n".join(lines)


def _item_line(item: Item) -> str:
    where = f"{item.path}:{item.line or item.start_line}"
    span = f" ({item.start_line}-{item.end_line})" if item.line else f"-{item.end_line}"
    head = " ".join(p for p in (item.category, item.symbol) if p)
    at = " @WORKTREE" if item.revision == "WORKTREE" else ""
    return f"{where}{span} {head} [{item.role}, {item.score:g}]{at}: {item.reason}"


def render_range(found: RangeResult) -> str:
    width = len(str(found.end_line))
    header = f"{found.path} lines {found.start_line}-{found.end_line} of {found.total_lines} " \
             f"at {found.revision[:12]}"
    body = [f"{line.number:>{width}}| {line.text}" for line in found.lines]
    return "\n".join([header, *body, *(f"note: {n}" for n in found.notes)])


def render_status(status: IndexStatusResult) -> str:
    indexed = (status.indexed_commit or "none")[:12]
    lines = [f"index {status.index_path} holds {indexed}; HEAD {(status.head or '?')[:12]}",
             f"{status.dirty_count} dirty files, {status.overlaid} overlaid"
             + ("; STALE" if status.stale else ""),
             ", ".join(f"{k} {v}" for k, v in status.counts.items()),
             f"model {status.embedding_model} "
             f"({'loaded' if status.model_loaded else 'not loaded'})"]
    return "\n".join(lines + [f"note: {n}" for n in status.notes])
