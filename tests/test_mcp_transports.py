"""The MCP server as a process: stdio (as clients start it) and streamable HTTP."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import StdioServerParameters
from mcp.client import Client
from mcp_types import CallToolResult

from tests.conftest import GitRepo
from tests.mcp_client import items, serve
from tests.test_mcp import FILES

ROOT = Path(__file__).resolve().parents[1]
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"}}}
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
SECURITY_CASES = [
    ("../outside.py", "climbs out of the repository"),
    ("/etc/passwd", "is absolute"),
    ("escape/loot.py", "leads outside the repository"),
    (".env", "looks like a file of secrets"),
    (".git/config", "inside .git"),
    ("node_modules/dep/index.js", "outside the index's path policy"),
]


@pytest.fixture
def repo(make_repo: Callable[..., GitRepo]) -> GitRepo:
    made = make_repo({**FILES, ".env": "TOKEN=supersecretvalue1\n",
                      "node_modules/dep/index.js": "function dep() {}\n"})
    evil = made.path.parent / (made.path.name + "-evil")
    evil.mkdir()
    (evil / "loot.py").write_text("def loot():\n    pass\n", encoding="utf-8")
    (made.path / "escape").symlink_to(evil)
    serve(made)  # builds REPO/.pr-context/index.duckdb, the command's default
    return made


def _calls(server: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[CallToolResult]:
    async def run() -> list[CallToolResult]:
        async with Client(server) as client:
            return [await client.call_tool(name, args) for name, args in calls]
    return anyio.run(run)


def _text(result: CallToolResult) -> str:
    return str(result.content[0].text)  # type: ignore[union-attr]


def _security_calls() -> list[tuple[str, dict[str, Any]]]:
    return [("read_range", {"path": path, "start_line": 1, "end_line": 1})
            for path, _ in SECURITY_CASES]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_stdio_process_serves_every_tool_and_refuses_unsafe_paths(repo: GitRepo) -> None:
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "pr_context", "mcp", "--repo", str(repo.path)],
                                   env=_env(), cwd=str(repo.path))
    repo.write("pkg/extra.py", "def shiny_helper():\n    return 1\n")
    repo.write("pkg/settings.py", 'API_KEY = "sk_live_0123456789abcdefghij"\n')
    ok = [("search_code", {"query": "parse a config text"}),
          ("find_symbol", {"name": "shiny_helper"}),
          ("find_callers", {"symbol": "parse_config"}),
          ("find_tests", {"symbol": "parse_config"}),
          ("find_docs", {"symbol": "parse_config"}),
          ("change_impact", {}),
          ("read_range", {"path": "pkg/core.py", "start_line": 1, "end_line": 3}),
          ("index_status", {}),
          ("read_range", {"path": "pkg/settings.py", "start_line": 1, "end_line": 1})]
    results = _calls(params, [*ok, *_security_calls()])
    for (name, _), result in zip(ok, results, strict=False):
        assert not result.is_error, (name, _text(result))
        if name not in ("read_range", "index_status"):
            assert items(result.structured_content or {}) is not None
    assert items(results[1].structured_content or {})[0]["revision"] == "WORKTREE"
    assert _text(results[len(ok) - 1]).endswith('1| API_KEY = "[REDACTED]"')
    for (_, says), result in zip(SECURITY_CASES, results[len(ok):], strict=True):
        assert result.is_error and says in _text(result)


def _post(port: int, headers: dict[str, str]) -> int:
    """The status of an initialize POST to /mcp with exactly these headers."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", "/mcp", json.dumps(INITIALIZE),
                           {"host": f"127.0.0.1:{port}", **HEADERS, **headers})
        return connection.getresponse().status
    finally:
        connection.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(repo: GitRepo) -> Iterator[tuple[str, int]]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pr_context", "mcp", "--repo", str(repo.path), "--http",
         "--port", str(port)], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(port, proc)
        yield f"http://127.0.0.1:{port}/mcp", port
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def _wait_for(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(proc.communicate()[1].decode())
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError("the server did not start listening")


def test_http_refuses_a_bad_host_or_origin(http_server: tuple[str, int]) -> None:
    _, port = http_server
    assert _post(port, {"host": "evil.example"}) == 421
    assert _post(port, {"host": f"evil.example:{port}"}) == 421
    assert _post(port, {"host": f"localhost:{port}", "origin": "http://evil.example"}) == 403
    assert _post(port, {"origin": f"http://127.0.0.1:{port}"}) == 200


def test_http_tools_refuse_unsafe_paths(http_server: tuple[str, int]) -> None:
    url, _ = http_server
    results = _calls(url, [("find_symbol", {"name": "parse_config"}), *_security_calls()])
    assert not results[0].is_error
    for (_, says), result in zip(SECURITY_CASES, results[1:], strict=True):
        assert result.is_error and says in _text(result)


def test_http_binds_other_hosts_only_with_a_token(repo: GitRepo) -> None:
    env = {k: v for k, v in _env().items() if k != "PR_CONTEXT_MCP_TOKEN"}
    for host, says in (("0.0.0.0", "every interface"), ("192.0.2.1", "PR_CONTEXT_MCP_TOKEN")):
        done = subprocess.run([sys.executable, "-m", "pr_context", "mcp", "--repo",
                               str(repo.path), "--http", "--host", host], env=env,
                              capture_output=True, timeout=60)
        assert done.returncode == 2 and says in done.stderr.decode()


def test_a_token_is_required_when_configured(repo: GitRepo) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pr_context", "mcp", "--repo", str(repo.path), "--http",
         "--port", str(port)], env={**_env(), "PR_CONTEXT_MCP_TOKEN": "s3cret-token"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(port, proc)
        assert _post(port, {}) == 401
        assert _post(port, {"authorization": "Bearer nope"}) == 401
        assert _post(port, {"authorization": "Bearer s3cret-token"}) == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_the_command_refuses_what_it_cannot_serve(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "bare.git")], check=True)
    for target, says in ((tmp_path / "bare.git", "bare repository"),
                         (tmp_path, "not a git repository")):
        done = subprocess.run([sys.executable, "-m", "pr_context", "mcp", "--repo",
                               str(target)], env=_env(), capture_output=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 2 and says in done.stderr.decode()


def _raw_session(repo: GitRepo, lines: list[dict[str, Any] | str]) -> list[dict[str, Any]]:
    """Every message the stdio process writes for ``lines``, sent at once, in order."""
    sent = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n"
                   for line in lines)
    done = subprocess.run([sys.executable, "-m", "pr_context", "mcp", "--repo",
                           str(repo.path)], input=sent.encode(), env=_env(),
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def test_stdio_answers_initialize_once_and_serves_the_session_after_it(repo: GitRepo) -> None:
    answers = _raw_session(repo, [INITIALIZE, INITIALIZED, LIST_TOOLS])
    assert [a["id"] for a in answers] == [1, 2]
    assert answers[0]["result"]["serverInfo"]["name"] == "pr-context"
    assert {t["name"] for t in answers[1]["result"]["tools"]} >= {"search_code", "read_range"}


def test_stdio_leaves_other_first_lines_to_the_sdk(repo: GitRepo) -> None:
    # A malformed first line is the SDK's to judge; the initialize after it is answered
    # by the SDK, once.
    answers = _raw_session(repo, ["{not json", INITIALIZE, INITIALIZED, LIST_TOOLS])
    assert [a["id"] for a in answers] == [1, 2]
    assert answers[0]["result"]["protocolVersion"] == "2025-06-18"


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28",
                                     "1999-01-01"])
def test_the_early_initialize_answer_is_the_sdks(repo: GitRepo, version: str) -> None:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    from pr_context import __version__
    from pr_context.mcp.handshake import HANDSHAKE_VERSIONS, initialize_answer

    assert set(HANDSHAKE_VERSIONS) == set(HANDSHAKE_PROTOCOL_VERSIONS)
    assert HANDSHAKE_VERSIONS[-1] == LATEST_HANDSHAKE_VERSION
    request = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": version}}
    line = json.dumps(request).encode() + b"\n"
    early = initialize_answer(line, __version__)
    assert early is not None and early[1] == 1
    assert json.loads(early[0]) == _sdk_answer(serve(repo), line)


def _sdk_answer(served: Any, line: bytes) -> dict[str, Any]:
    """The SDK's own answer to ``line``, as its stdio transport would write it."""
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    from pr_context.mcp.server import build_server

    lowlevel = build_server(served.workspace)._lowlevel_server

    async def run() -> dict[str, Any]:
        to_server, from_client = anyio.create_memory_object_stream[Any](1)
        to_client, from_server = anyio.create_memory_object_stream[Any](1)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lowlevel.run, from_client, to_client,
                             lowlevel.create_initialization_options())
            await to_server.send(SessionMessage(jsonrpc_message_adapter.validate_json(
                line, by_name=False)))
            answer = await from_server.receive()
            tasks.cancel_scope.cancel()
        return dict(json.loads(answer.message.model_dump_json(by_alias=True,
                                                              exclude_unset=True)))
    return anyio.run(run)


@pytest.mark.parametrize("message", [
    {**INITIALIZE, "id": True},
    {**INITIALIZE, "id": None},
    {**INITIALIZE, "jsonrpc": "1.0"},
    {**INITIALIZE, "method": "ping"},
    {**INITIALIZE, "params": {"protocolVersion": 2025, "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}}},
    {**INITIALIZE, "params": {"protocolVersion": "2025-06-18", "capabilities": {"roots": 1},
                              "clientInfo": {"name": "t", "version": "1"}}},
    {**INITIALIZE, "params": {"protocolVersion": "2025-06-18", "capabilities": {}}},
    [INITIALIZE],
])
def test_only_a_plain_initialize_is_answered_early(message: object) -> None:
    from pr_context.mcp.handshake import initialize_answer

    assert initialize_answer(json.dumps(message).encode() + b"\n", "1") is None
    assert initialize_answer(b"\xff\xfe not json\n", "1") is None
    assert initialize_answer(b"", "1") is None
