"""The MCP server: read-only tools over the index, on stdio or streamable HTTP.

A thin layer: each tool validates its arguments (the SDK checks the input schema),
takes the workspace's lock, gets the current :class:`View` under a deadline, calls the
library through ``tools``, fits the answer to the budget and sends structured content
with a short text rendering. ``PrContextError`` becomes a tool error with its message.
Nothing here writes to the repository or runs a command it names.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage
from mcp_types import (
    CallToolResult,
    JSONRPCError,
    JSONRPCResponse,
    TextContent,
    ToolAnnotations,
    jsonrpc_message_adapter,
)
from pydantic import BaseModel, Field, ValidationError

from pr_context import __version__
from pr_context.errors import BadInputError, PrContextError
from pr_context.mcp.bounds import MAX_LIMIT, Deadline, cap_line, fit_result
from pr_context.mcp.handshake import INSTRUCTIONS, SERVER_NAME, FirstLine
from pr_context.mcp.render import render_range, render_result, render_status
from pr_context.mcp.schemas import (
    ChangeImpactResult,
    IndexStatusResult,
    Line,
    RangeResult,
    ToolResult,
    wire,
)

if TYPE_CHECKING:
    from pr_context.mcp.workspace import View, Workspace
    from pr_context.pipeline import Searcher

# The tools, the index and the model are imported and loaded on the first call, not at
# start: a client's `initialize` is answered once the SDK itself is imported.

__all__ = ["LOOPBACK_HOSTS", "build_server", "http_app", "serve_http", "serve_stdio"]

_log = logging.getLogger(__name__)
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False,
                             idempotent_hint=True, open_world_hint=False)
_M = TypeVar("_M", bound=BaseModel)
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description="most items to return")]
SymbolName = Annotated[str, Field(min_length=1, max_length=500,
                                  description="qualified name (pkg.mod.Class.method) or "
                                              "short name")]


class _Server(MCPServer):
    """MCPServer that starts loading the index when a client first lists the tools.

    Clients list the tools right after ``initialize`` and then spend seconds before the
    first call; the search corpus loads in that time instead of in the first call's.
    """

    def __init__(self, workspace: Workspace) -> None:
        super().__init__(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__,
                         log_level="WARNING")
        self._workspace = workspace
        self._warming: threading.Thread | None = None

    async def list_tools(self) -> list[Any]:
        if self._warming is None:
            self._warming = threading.Thread(target=_warm_up, args=(self._workspace,),
                                             name="index-warm-up", daemon=True)
            self._warming.start()
        return await super().list_tools()


def _warm_up(workspace: Workspace) -> None:
    """Load the search corpus of the current view; a failure is the first call's to say."""
    with workspace.lock:
        try:
            workspace.view(Deadline(workspace.settings.deadline_s)).corpus.prepare()
        except PrContextError:
            pass  # best effort: the first tool call meets the same error and reports it
        finally:
            workspace.release()


def build_server(workspace: Workspace) -> MCPServer:
    """An MCP server whose tools read ``workspace``."""
    server = _Server(workspace)
    searchers: list[Searcher] = []

    def run(work: Callable[[View, Deadline], ToolResult]) -> CallToolResult:
        def fitted(view: View, deadline: Deadline) -> tuple[BaseModel, str]:
            return fit_result(work(view, deadline), render_result,
                              workspace.settings.budget_chars)
        return _call(workspace, fitted)

    @server.tool(annotations=_READ_ONLY)
    def search_code(
        query: Annotated[str, Field(min_length=1, max_length=2000,
                                    description="words, a name written as code, or a "
                                                "pasted stack trace")],
        limit: Limit = 10,
        path_prefix: Annotated[str | None, Field(description="only under this folder")] = None,
        role: Annotated[str | None, Field(description="only this role: production, test, "
                                                      "test_support, docs, example, config, "
                                                      "generated, vendored, deprecated")] = None,
    ) -> Annotated[CallToolResult, ToolResult]:
        """Hybrid search (BM25, embeddings, structure): the implementation above tests,
        fakes and docs unless the query asks for those. Each item has a snippet."""
        def work(view: View, deadline: Deadline) -> ToolResult:
            from pr_context.mcp import tools

            searcher = _searcher(searchers)
            searcher.embedder = workspace.embedder(view.manifest)
            return tools.search_code(view, searcher, query, limit, path_prefix, role)
        return run(work)

    @server.tool(annotations=_READ_ONLY)
    def find_symbol(name: SymbolName, limit: Limit = 10) -> Annotated[CallToolResult, ToolResult]:
        """Definitions by qualified or short name, with signature and docstring summary."""
        return run(lambda view, deadline: _tools().find_symbol(view, name, limit))

    @server.tool(annotations=_READ_ONLY)
    def find_callers(symbol: SymbolName,
                     limit: Limit = 25) -> Annotated[CallToolResult, ToolResult]:
        """Call sites (``line``) of a definition and the definitions holding them, resolved
        through imports and scopes (how=graph) or same-name candidates (how=lexical). An
        ambiguous short name is answered for each definition it names."""
        return run(lambda view, deadline: _tools().find_callers(view, symbol, limit, deadline))

    @server.tool(annotations=_READ_ONLY)
    def find_tests(symbol: SymbolName, limit: Limit = 10) -> Annotated[CallToolResult, ToolResult]:
        """Tests linked to a definition: calls through the graph, naming conventions,
        co-change history; each says why."""
        return run(lambda view, deadline: _tools().find_tests(view, symbol, limit, deadline))

    @server.tool(annotations=_READ_ONLY)
    def find_docs(symbol: SymbolName, limit: Limit = 10) -> Annotated[CallToolResult, ToolResult]:
        """Documentation sections that mention a definition (directives, code, prose)."""
        return run(lambda view, deadline: _tools().find_docs(view, symbol, limit, deadline))

    @server.tool(annotations=_READ_ONLY)
    def change_impact(
        base: Annotated[str, Field(max_length=200, description="base revision")] = "HEAD",
        head: Annotated[str, Field(max_length=200, description="head revision, or WORKTREE "
                                                               "for uncommitted changes")]
        = "WORKTREE",
        limit_per_symbol: Annotated[int, Field(ge=1, le=50)] = 5,
    ) -> Annotated[CallToolResult, ChangeImpactResult]:
        """The review of a change: changed symbols (category=changed), callers not
        updated first (caller), tests to run (test, and test_selection), possibly-stale
        docs (doc)."""
        def work(view: View, deadline: Deadline) -> ToolResult:
            from pr_context.mcp import impact

            return impact.change_impact(workspace, view, base, head, limit_per_symbol,
                                        deadline)
        return run(work)

    @server.tool(annotations=_READ_ONLY)
    def read_range(
        path: Annotated[str, Field(min_length=1, max_length=1000,
                                   description="repository-relative path")],
        start_line: Annotated[int, Field(ge=1)],
        end_line: Annotated[int, Field(ge=1)],
        revision: Annotated[str | None, Field(max_length=200, description="a commit; "
                                              "default: the working tree's file")] = None,
    ) -> Annotated[CallToolResult, RangeResult]:
        """Numbered lines of one file (at most 400), secrets redacted."""
        def work(view: View, deadline: Deadline) -> tuple[BaseModel, str]:
            from pr_context.mcp import ranges

            found = ranges.read_range(workspace, view, path, start_line, end_line, revision)
            return _fit_range(found, workspace.settings.budget_chars)
        return _call(workspace, work)

    @server.tool(annotations=_READ_ONLY)
    def index_status() -> Annotated[CallToolResult, IndexStatusResult]:
        """Indexed commit, HEAD, dirty files, counts, model, and whether answers are stale."""
        def work(view: View, deadline: Deadline) -> tuple[BaseModel, str]:
            from pr_context.mcp import ranges

            status = ranges.index_status(workspace, view)
            return status, render_status(status)
        return _call(workspace, work)

    return server


def _call(workspace: Workspace,
          work: Callable[[View, Deadline], tuple[BaseModel, str]]) -> CallToolResult:
    """One tool call's work under the lock and a deadline; errors become tool errors."""
    with workspace.lock:
        try:
            deadline = Deadline(workspace.settings.deadline_s)
            result, text = work(workspace.view(deadline), deadline)
        except PrContextError as exc:
            raise ToolError(str(exc)) from exc
        finally:
            workspace.release()
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=wire(result))


def _tools() -> Any:
    from pr_context.mcp import tools

    return tools


def _searcher(made: list[Searcher]) -> Searcher:
    """One searcher per server, made on the first search."""
    if not made:
        from pr_context.pipeline import Searcher
        from pr_context.progress import SilentProgress

        made.append(Searcher(None, SilentProgress()))
    return made[0]


def _fit_range(found: RangeResult, budget: int) -> tuple[RangeResult, str]:
    text = render_range(found)
    while len(found.lines) > 1 and len(found.model_dump_json()) + len(text) > budget:
        keep = max(1, len(found.lines) * 3 // 4)
        lines: list[Line] = found.lines[:keep]
        found = found.model_copy(update={
            "lines": lines, "end_line": lines[-1].number, "truncated": True,
            "omitted": found.omitted.model_copy(update={
                "items": found.omitted.items + len(found.lines) - keep}),
            "notes": [*found.notes, cap_line(
                f"lines after {lines[-1].number} left out to fit the response budget", 200)]})
        text = render_range(found)
    return found, text


def serve_stdio(workspace: Workspace, first: FirstLine | None = None) -> None:
    """Serve on stdin/stdout until the client closes them; ``first``, the line the
    client sent first when it was read (and perhaps answered) before the SDK loaded."""
    server = build_server(workspace)
    if first is None:
        server.run("stdio")
    else:
        anyio.run(_serve_stdio, server, first)


async def _serve_stdio(server: MCPServer, first: FirstLine) -> None:
    """``MCPServer.run_stdio_async`` with ``first`` replayed ahead of the client's next
    lines and the SDK's answer to an initialize answered early left out."""
    lowlevel = server._lowlevel_server  # private: what run_stdio_async drives
    async with stdio_server() as (from_client, to_client):
        feed, fed = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        answers, answered = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_replay, first.line, from_client, feed)
            tasks.start_soon(_forward, answered, to_client, first.answered)
            await lowlevel.run(fed, answers, lowlevel.create_initialization_options())


async def _replay(line: bytes, source: Any, sink: Any) -> None:
    """``line`` parsed as the SDK's stdio reader parses a line, then everything else."""
    async with sink:
        if line:
            try:
                await sink.send(SessionMessage(jsonrpc_message_adapter.validate_json(
                    line.decode("utf-8", errors="replace"), by_name=False)))
            except ValidationError as exc:
                await sink.send(exc)
        async for item in source:
            await sink.send(item)


async def _forward(source: Any, sink: Any, answered: int | str | None) -> None:
    """The SDK's messages to the client, less its answer to the early initialize."""
    async with sink:
        async for item in source:
            message = item.message
            if answered is not None and isinstance(message, JSONRPCResponse | JSONRPCError) \
                    and message.id == answered:
                answered = None
                if isinstance(message, JSONRPCError):
                    _log.warning("the SDK refused the initialize answered early: %s",
                                 message.error.message)
                continue
            await sink.send(item)


def http_app(workspace: Workspace, host: str, port: int, token: str | None) -> Any:
    """The streamable HTTP app, with Host/Origin checks and, given a token, bearer auth.

    :raises BadInputError: a host other than loopback without a token, or a wildcard.
    """
    _check_host(host, token)
    names = {host, *LOOPBACK_HOSTS} if token else set(LOOPBACK_HOSTS)
    hosts = sorted({f"[{h}]:{port}" if ":" in h else f"{h}:{port}" for h in names})
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts,
        allowed_origins=[f"http://{h}" for h in hosts])
    app = build_server(workspace).streamable_http_app(transport_security=security, host=host)
    return _BearerAuth(app, token) if token else app


def serve_http(workspace: Workspace, host: str, port: int, token: str | None) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until interrupted."""
    import uvicorn

    app = http_app(workspace, host, port, token)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def _check_host(host: str, token: str | None) -> None:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None and address.is_unspecified:
        raise BadInputError(f"--host {host} would listen on every interface: give the one "
                            "address to listen on")
    loopback = host in LOOPBACK_HOSTS or (address is not None and address.is_loopback)
    if not loopback and not token:
        raise BadInputError(f"--host {host} is not loopback: set PR_CONTEXT_MCP_TOKEN to a "
                            "secret that clients send as 'Authorization: Bearer <token>'")


class _BearerAuth:
    """ASGI middleware: HTTP requests must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"),
                                        (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"missing or wrong token"})
                return
        await self._app(scope, receive, send)
