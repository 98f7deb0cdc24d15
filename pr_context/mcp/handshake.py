"""The client's ``initialize``, answered before the MCP SDK is imported.

Importing the SDK costs about a second of CPU (its protocol types are pydantic models
built at import), more than the whole handshake should take. On stdio,
``pr-context mcp`` therefore reads the client's first line itself and, when it is a
well-formed ``initialize`` request, answers it at once with the result the SDK would
send (the tests hold the two equal). The server then replays the line into the SDK,
which sets up the session as usual, and drops the SDK's own answer to it. Any other
first line (a 2026-era request without handshake, a malformed one) is only replayed,
and the SDK answers it.

This module imports nothing heavy: it runs before everything else.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

__all__ = ["CAPABILITIES", "HANDSHAKE_VERSIONS", "INSTRUCTIONS", "SERVER_NAME", "FirstLine",
           "initialize_answer", "read_first_line", "take_first_line"]

SERVER_NAME = "pr-context"
INSTRUCTIONS = (
    "pr-context answers from an index of the repository's last commit with the working "
    "tree's changes overlaid (items from uncommitted content say revision WORKTREE). "
    "Lines are 1-based and inclusive. Start with search_code or find_symbol, follow with "
    "find_callers, find_tests, find_docs and read_range; change_impact reviews your "
    "uncommitted changes. Every answer fits a budget: 'truncated' says when something "
    "was left out.")
# What the SDK (mcp 2.x) offers, checked against it by the tests: the handshake-era
# protocol versions, oldest first (an unknown request gets the newest), and the
# capabilities an MCPServer with tools declares.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
CAPABILITIES: dict[str, dict[str, bool]] = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}


@dataclass(frozen=True)
class FirstLine:
    """What the client sent first, to replay into the SDK."""

    line: bytes
    answered: int | str | None = None  # the id of an initialize answered here


def read_first_line(fd: int) -> bytes:
    """Bytes up to and including the first newline (or EOF), read one at a time so that
    nothing after it is taken from the stream the SDK reads next."""
    line = bytearray()
    while not line.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte:
            break
        line += byte
    return bytes(line)


def initialize_answer(line: bytes, version: str) -> tuple[bytes, int | str] | None:
    """The response line to ``line`` and its id when ``line`` is a well-formed
    ``initialize`` request; None for anything the SDK should judge itself."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not _is_initialize(message):
        return None
    requested = message["params"]["protocolVersion"]
    result = {
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
        "protocolVersion": requested if requested in HANDSHAKE_VERSIONS
        else HANDSHAKE_VERSIONS[-1],
        "serverInfo": {"name": SERVER_NAME, "version": version},
    }
    answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    return json.dumps(answer, separators=(",", ":")).encode() + b"\n", message["id"]


def take_first_line(version: str, stdin: int = 0, stdout: int = 1) -> FirstLine:
    """Read the client's first line and answer it here when it is ``initialize``."""
    line = read_first_line(stdin)
    found = initialize_answer(line, version)
    if found is None:
        return FirstLine(line)
    answer, request_id = found
    while answer:
        answer = answer[os.write(stdout, answer):]
    return FirstLine(line, request_id)


def _is_initialize(message: Any) -> bool:
    """Only the plain shape is answered early; anything unusual goes to the SDK."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or (
            message.get("method") != "initialize"):
        return False
    request_id, params = message.get("id"), message.get("params")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return False
    if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
        return False
    info, capabilities = params.get("clientInfo"), params.get("capabilities")
    return (isinstance(info, dict) and isinstance(info.get("name"), str)
            and isinstance(info.get("version"), str) and isinstance(capabilities, dict)
            and all(isinstance(v, dict) for v in capabilities.values()))
