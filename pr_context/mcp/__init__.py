"""The MCP server (``pr-context mcp``): read-only tools over the index, fresh with the
working tree. See docs/mcp.md."""
