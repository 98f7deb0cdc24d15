"""The action, the workflows and the Dockerfile pass their linters.

The linters are dev dependencies (pyproject.toml) and run offline: check-jsonschema with
its bundled GitHub schemas, zizmor's offline audits, hadolint. A missing tool is a
failure, not a skip: `pip install -e '.[dev]'` installs them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / ".github" / "workflows").glob("*.yml"))
LINT_TIMEOUT_S = 120

COMMANDS = {
    "action-schema": ["check-jsonschema", "--builtin-schema", "vendor.github-actions",
                      "action.yml"],
    "workflow-schema": ["check-jsonschema", "--builtin-schema", "vendor.github-workflows",
                        *WORKFLOWS],
    "zizmor-action": ["zizmor", "--offline", "action.yml"],
    "zizmor-workflows": ["zizmor", "--offline", ".github/workflows"],
    "hadolint": ["hadolint", "Dockerfile"],
}


def tool(name: str) -> str:
    """The tool from this interpreter's environment, else from PATH."""
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    assert found, f"{name} is not installed: pip install -e '.[dev]'"
    return found


def test_there_are_workflows_to_lint() -> None:
    assert {".github/workflows/ci.yml", ".github/workflows/pr-context.yml"} <= set(WORKFLOWS)


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_lint(command: list[str]) -> None:
    done = subprocess.run([tool(command[0]), *command[1:]], cwd=ROOT, capture_output=True,
                          text=True, timeout=LINT_TIMEOUT_S, check=False)
    assert done.returncode == 0, (
        f"{' '.join(command)} exited {done.returncode}\n{done.stdout}\n{done.stderr}")
