"""The files and log lines GitHub Actions reads back from a step.

``GITHUB_OUTPUT`` gets ``name<<DELIMITER`` blocks with a random delimiter, so no value,
whatever text a PR put in it, can end its block early and set another output. Workflow
commands (``::warning file=F,title=T::message``) are kept on one line by GitHub's own
escapes, so no text a PR put into a message or a property can end it early or start a
workflow command of its own.
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


def workflow_command(level: str, message: str,
                     properties: Mapping[str, str] | None = None) -> str:
    """``::level name=value,...::message``, escaped as the runner unescapes it.

    In the message ``%``, CR and LF; in property values also ``:`` and ``,``, which
    would otherwise end the value or the property list.
    """
    listed = ",".join(f"{name}={_escape_property(value)}"
                      for name, value in (properties or {}).items())
    return f"::{level}{' ' + listed if listed else ''}::{_escape_data(message)}"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _append(path: Path, text: str, variable: str) -> None:
    try:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise BadInputError(f"cannot write {variable} file {path}: {exc}") from exc
