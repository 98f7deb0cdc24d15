"""The files and log lines GitHub Actions reads back from a step.

``GITHUB_OUTPUT`` gets ``name<<DELIMITER`` blocks with a random delimiter, so no value,
whatever text a PR put in it, can end its block early and set another output. Workflow
commands (``::warning::``) are kept on one line by GitHub's own escapes.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from pathlib import Path

from pr_context.errors import BadInputError

__all__ = ["append_summary", "workflow_command", "write_outputs"]


def write_outputs(path: Path | None, outputs: Mapping[str, str]) -> None:
    """Append ``outputs`` to the ``GITHUB_OUTPUT`` file (nothing when it is not set)."""
    if path is None or not outputs:
        return
    delimiter = f"pr_context_{secrets.token_hex(8)}"
    text = "".join(f"{name}<<{delimiter}\n{value}\n{delimiter}\n"
                   for name, value in outputs.items())
    _append(path, text, "GITHUB_OUTPUT")


def append_summary(path: Path | None, markdown: str) -> None:
    """Append ``markdown`` to the job's step summary (nothing when it is not set)."""
    if path is not None:
        _append(path, markdown if markdown.endswith("\n") else markdown + "\n",
                "GITHUB_STEP_SUMMARY")


def workflow_command(level: str, message: str) -> str:
    """``::warning::message`` with the message's ``%``, CR and LF escaped as GitHub wants."""
    escaped = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return f"::{level}::{escaped}"


def _append(path: Path, text: str, variable: str) -> None:
    try:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise BadInputError(f"cannot write {variable} file {path}: {exc}") from exc
