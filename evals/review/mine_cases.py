"""Mine review-evaluation cases from the first-parent history of public repositories.

Writes labels only (repository, SHAs, paths), never code: one JSON object per line.
A case is a first-parent commit (a squash merge, or a merge commit taken as its
first-parent diff) that changes Python source under the project's source directory
(``src/`` unless ``--source-dir`` names another, such as a top-level package) and
touches test or documentation files, with at most ``MAX_FILES`` files. Re-run it
against local clones:

    python evals/review/mine_cases.py \\
        --clone pytest-dev/pluggy=/path/to/pluggy.git \\
        --clone Textualize/rich=/path/to/rich.git --source-dir Textualize/rich=rich \\
        --per-repo 10 --doc-cases 5 --until-date 2026-01-01 --out evals/review/cases.jsonl

Each clone is read at its ``HEAD``. ``--until-date`` keeps the walk reproducible: only
commits committed before it are considered, newest first.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

__all__ = ["Case", "classify", "is_changelog", "mine"]

DEFAULT_SOURCE_DIR = "src"
MAX_FILES = 30  # a larger commit is a sweep (rename, reformat), not a reviewable change
# Messages of commits that only restyle code: their diffs carry no behaviour to review.
# Branch syncs ("Merge branch 'stable'") bundle several changes; sweeps (dropping a Python
# version, typing or typo passes) touch many tests for no behaviour change.
_SKIPPED = re.compile(r"\b(black|ruff|isort|pre-commit|reformat|formatting|lint|pyupgrade|"
                      r"flake8|typos?|codespell|whitespace|chore|drop(ping)? (support|python)|"
                      r"drop-py\d*|mypy|typing|type hints?|merge branch)\b", re.IGNORECASE)
_TEST_MODULE = re.compile(r"^(test_.*|.*_test)\.py$")
_TEST_DIRS = frozenset({"tests", "testing", "test"})
_DOC_SUFFIXES = frozenset({".rst", ".md", ".txt"})
_CHANGELOG = re.compile(r"^(changes|changelog|history|news)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    """One real change: its parent, itself, and the paths it touched by kind.

    ``*_added`` paths did not exist at ``base``: no tool can list them at a head whose
    tests and docs are withheld, so they are recorded but not scored.
    """

    id: str
    repo: str
    base: str
    head: str
    subject: str
    source_files: list[str]
    tests_touched: list[str]
    tests_added: list[str]
    docs_touched: list[str]
    docs_added: list[str]
    changelog_files: list[str]
    source_dir: str = DEFAULT_SOURCE_DIR


def is_changelog(path: str) -> bool:
    """Release notes and changelog fragments: edited by nearly every change, so unscored."""
    parts = PurePosixPath(path).parts
    return (any(p.lower() in {"changelog", "changes", "newsfragments"} for p in parts[:-1])
            or bool(_CHANGELOG.match(parts[-1])))


def classify(path: str, source_dir: str = DEFAULT_SOURCE_DIR) -> str | None:
    """``source`` (a Python file under ``source_dir``), ``test``, ``doc``, ``changelog``
    or None for anything else."""
    pure = PurePosixPath(path)
    if any(p in _TEST_DIRS for p in pure.parts[:-1]) or _TEST_MODULE.match(pure.name):
        # conftest.py, helpers and data under tests/ support tests; only test modules count
        return "test" if _TEST_MODULE.match(pure.name) else None
    if pure.parts[0] == source_dir:
        return "source" if pure.suffix == ".py" else None
    if pure.suffix.lower() not in _DOC_SUFFIXES:
        return None
    if is_changelog(path):
        return "changelog"
    if pure.parts[0] in {"docs", "doc"} or pure.name.upper().startswith("README"):
        return "doc"
    return None


def _git(clone: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(clone), *args], check=True,
                          capture_output=True, text=True).stdout


def _candidates(clone: Path, until_date: str) -> Iterator[tuple[str, str, str]]:
    """(sha, first parent, subject) of first-parent commits, newest first."""
    log = _git(clone, "log", "--first-parent", f"--before={until_date}",
               "--format=%H %P%x00%s", "HEAD")
    for line in log.splitlines():
        shas, _, subject = line.partition("\0")
        sha, *parents = shas.split()
        if parents:
            yield sha, parents[0], subject


def _changes(clone: Path, base: str, head: str) -> list[tuple[str, str]]:
    """(status letter, path) of every path changed, renames split into delete + add."""
    out = _git(clone, "diff", "--no-renames", "--name-status", base, head)
    return [(s[0], p) for s, p in (line.split("\t", 1) for line in out.splitlines())]


def _only_whitespace(clone: Path, base: str, head: str, paths: list[str]) -> bool:
    out = _git(clone, "diff", "-w", "--ignore-blank-lines", base, head, "--", *paths)
    return not out.strip()


def _case(repo: str, clone: Path, sha: str, base: str, subject: str,
          source_dir: str) -> Case | None:
    changes = _changes(clone, base, sha)
    if len(changes) > MAX_FILES or _SKIPPED.search(subject):
        return None
    kinds: dict[str, list[tuple[str, str]]] = {}
    for status, path in changes:
        kinds.setdefault(classify(path, source_dir) or "other", []).append((status, path))
    sources = sorted(p for _, p in kinds.get("source", []))
    tests, docs = kinds.get("test", []), kinds.get("doc", [])
    if not sources or not (tests or docs) or _only_whitespace(clone, base, sha, sources):
        return None
    return Case(
        id=f"{repo.split('/')[1]}-{sha[:10]}", repo=repo, base=base, head=sha,
        subject=subject, source_files=sources,
        tests_touched=sorted(p for s, p in tests if s != "A"),
        tests_added=sorted(p for s, p in tests if s == "A"),
        docs_touched=sorted(p for s, p in docs if s != "A"),
        docs_added=sorted(p for s, p in docs if s == "A"),
        changelog_files=sorted(p for _, p in kinds.get("changelog", [])),
        source_dir=source_dir)


def mine(repo: str, clone: Path, per_repo: int, doc_cases: int,
         until_date: str, source_dir: str = DEFAULT_SOURCE_DIR) -> list[Case]:
    """The newest ``per_repo`` cases of ``repo`` that score at least one existing file.

    Docs are edited far less often than tests, so the walk goes on past ``per_repo``,
    keeping only cases that touch docs, until ``doc_cases`` of them are found.
    """
    found: list[Case] = []
    for sha, base, subject in _candidates(clone, until_date):
        case = _case(repo, clone, sha, base, subject, source_dir)
        if case is None:
            continue
        if case.docs_touched or (len(found) < per_repo and case.tests_touched):
            found.append(case)
        if len(found) >= per_repo and sum(bool(c.docs_touched) for c in found) >= doc_cases:
            break
    return found


def _labels(case: Case) -> dict[str, object]:
    """A case as written: ``source_dir`` only where it is not the default."""
    labels = asdict(case)
    if case.source_dir == DEFAULT_SOURCE_DIR:
        del labels["source_dir"]
    return labels


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clone", action="append", required=True,
                        help="OWNER/NAME=PATH of a local clone (repeatable)")
    parser.add_argument("--source-dir", action="append", default=[],
                        help="OWNER/NAME=DIR: the top-level directory holding that "
                             f"project's Python source (default {DEFAULT_SOURCE_DIR})")
    parser.add_argument("--per-repo", type=int, default=12)
    parser.add_argument("--doc-cases", type=int, default=5,
                        help="walk on until this many cases per repository touch docs")
    parser.add_argument("--until-date", default="2026-01-01")
    parser.add_argument("--out", type=Path, default=Path("evals/review/cases.jsonl"))
    args = parser.parse_args(argv)
    source_dirs = dict(s.split("=", 1) for s in args.source_dir)
    lines = []
    for spec in args.clone:
        repo, _, path = spec.partition("=")
        lines += [json.dumps(_labels(c)) for c in
                  mine(repo, Path(path), args.per_repo, args.doc_cases, args.until_date,
                       source_dirs.get(repo, DEFAULT_SOURCE_DIR))]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
