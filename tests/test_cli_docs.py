"""Every command and option of the CLI is documented in docs/cli.md and has help text."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from pr_context.cli import cli

DOC = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_command_is_documented_with_its_options(name: str) -> None:
    command = cli.commands[name]
    assert command.help, f"{name} has no help text"
    assert f"## `pr-context {name}`" in DOC
    section = DOC.split(f"## `pr-context {name}`", 1)[1].split("\n## ", 1)[0]
    for param in command.params:
        if isinstance(param, click.Option):
            long_names = [o for o in param.opts if o.startswith("--")]
            assert any(o in section for o in long_names), f"{name}: {long_names} undocumented"
            assert param.help, f"{name}: {long_names} has no help"
