"""The action's inputs and the record of one run, shared by every event's handler."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pr_context.action.annotations import Annotation
from pr_context.defaults import DEFAULT_BACKEND, DEFAULT_TOP_K
from pr_context.errors import BadInputError
from pr_context.policy import CONFIG_PATH

__all__ = [
    "ANNOTATION_CHOICES",
    "FAIL_ON_CHOICES",
    "ActionRun",
    "ActionSettings",
    "AnnotationLevel",
    "parse_fail_on",
]

FAIL_ON_CHOICES = ("stale-docs", "callers-not-updated", "eval-gate")
AnnotationLevel = Literal["warning", "notice", "off"]
ANNOTATION_CHOICES: tuple[AnnotationLevel, ...] = ("warning", "notice", "off")


@dataclass(frozen=True)
class ActionSettings:
    """The action's inputs (CLI options or PR_CONTEXT_* variables)."""

    repo: Path
    db: Path
    out: Path
    config: str = CONFIG_PATH  # path in the repository, read at the base revision
    model: str | None = None  # None: the bundled default
    embeddings: bool = True
    backend: str = DEFAULT_BACKEND  # what runs the model (embed.EMBEDDING_BACKENDS)
    onnx_cache: Path = Path.home() / ".cache" / "pr-context" / "onnx"  # ONNX graphs
    top_k: int = DEFAULT_TOP_K
    comment: Literal["sticky", "off"] = "sticky"
    fail_on: frozenset[str] = frozenset()
    skip_drafts: bool = True
    comment_when_empty: bool = False
    annotations: AnnotationLevel = "warning"  # findings on the diff, at this level
    coverage_file: str = ""  # relative to the repository; "" for none
    coverage_revision: str = ""  # "" for the PR's base


@dataclass
class ActionRun:
    """What one run did: printed as annotations and written as action-report.json."""

    event: str
    outcome: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    annotations: list[tuple[str, str]] = field(default_factory=list)  # (level, message)
    findings: list[Annotation] = field(default_factory=list)  # on files, most important first
    comment_url: str = ""
    failures: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if self.failures else 0

    def note(self, level: Literal["notice", "warning", "error"], message: str) -> None:
        self.annotations.append((level, message))

    def fail(self, message: str) -> None:
        self.failures.append(message)
        self.note("error", message)


def parse_fail_on(text: str) -> frozenset[str]:
    """``"stale-docs, callers-not-updated"`` -> the set; unknown names are an error."""
    names = frozenset(text.replace(",", " ").split())
    unknown = sorted(names - set(FAIL_ON_CHOICES))
    if unknown:
        raise BadInputError(f"unknown fail-on condition {unknown[0]!r} "
                            f"(known: {', '.join(FAIL_ON_CHOICES)})")
    return names
