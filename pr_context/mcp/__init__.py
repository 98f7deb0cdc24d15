"""The MCP server (``pr-context mcp``): read-only tools over the index, fresh with the
working tree. See docs/mcp.md.

Only the defaults live here: the command line reads them without importing the SDK.
"""

from __future__ import annotations

__all__ = ["DEFAULT_BUDGET_CHARS", "DEFAULT_DEADLINE_S", "DEFAULT_MAX_DIRTY_FILES",
           "DEFAULT_PORT"]

DEFAULT_BUDGET_CHARS = 24_000  # about 6,000 tokens: room for the assistant's own work
DEFAULT_DEADLINE_S = 30.0  # work per call; a client waits no longer for an answer
DEFAULT_MAX_DIRTY_FILES = 200  # more dirty files than this: answers say they are stale
DEFAULT_PORT = 8765
