"""Helpers for the MCP tests: a served repository and calls through the SDK's client."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp_types import CallToolResult

from pr_context.embed import Embedder
from pr_context.git import open_repository
from pr_context.index.build import IndexOptions, build_index
from pr_context.mcp.server import build_server
from pr_context.mcp.workspace import ServerSettings, Workspace
from pr_context.progress import SilentProgress
from tests.conftest import GitRepo

REQUIRED_ITEM_FIELDS = ("path", "start_line", "end_line", "revision", "symbol", "role",
                        "score", "reason")


@dataclass
class Served:
    """A repository, its index and a workspace serving it."""

    repo: GitRepo
    db: Path
    workspace: Workspace

    def call(self, tool: str, /, **arguments: Any) -> CallToolResult:
        return self.calls([(tool, arguments)])[0]

    def calls(self, calls: Sequence[tuple[str, dict[str, Any]]]) -> list[CallToolResult]:
        """Each call in order through one in-memory client session."""
        server = build_server(self.workspace)

        async def run() -> list[CallToolResult]:
            async with Client(server) as client:
                return [await client.call_tool(name, args) for name, args in calls]
        return anyio.run(run)

    def structured(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        result = self.call(tool, **arguments)
        assert not result.is_error, result.content
        assert result.structured_content is not None
        return result.structured_content

    def error(self, tool: str, /, **arguments: Any) -> str:
        result = self.call(tool, **arguments)
        assert result.is_error, result.structured_content
        return str(result.content[0].text)  # type: ignore[union-attr]


def serve(repo: GitRepo, embedder: Embedder | None = None,
          settings: ServerSettings | None = None) -> Served:
    """Index ``repo`` at HEAD (into a git-ignored folder) and serve it."""
    exclude = repo.path / ".git" / "info" / "exclude"
    exclude.write_text(".pr-context/\n", encoding="utf-8")
    db = repo.path / ".pr-context" / "index.duckdb"
    repository = open_repository(repo.path)
    build_index(repository, "HEAD", db, IndexOptions(), embedder, SilentProgress())
    workspace = Workspace(repository, db, settings or ServerSettings(), embedder)
    return Served(repo, db, workspace)


def items(result: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = result["items"]
    for item in found:
        assert all(field in item for field in REQUIRED_ITEM_FIELDS), item
        assert 1 <= item["start_line"] <= item["end_line"], item
    return found
