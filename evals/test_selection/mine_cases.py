"""Mine test-selection cases from the first-parent history of public repositories.

Writes labels only (repository, SHAs, paths), never code: one JSON object per line. A
case is a first-parent commit (a squash merge, or a merge commit taken as its
first-parent diff) that changes the body of at least one Python function or method
under ``src/`` that existed at its parent (so the parent's test suite can execute it),
with at most ``MAX_FILES`` files and not a sweep (the review evaluation's rules, shared
from ``evals/review/mine_cases.py``). Re-run it against local clones:

    python evals/test_selection/mine_cases.py \\
        --clone pypa/packaging=/path/to/packaging.git ... \\
        --per-repo 8 --until-date 2026-01-01 --out evals/test_selection/cases.jsonl

Each clone is read at its ``HEAD``; only commits committed before ``--until-date`` are
considered, newest first.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType

__all__ = ["SelectionCase", "mine"]

_HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


review_mining = _load("review_mine_cases", _HERE.parent / "review" / "mine_cases.py")
functions = _load("selection_functions", _HERE / "functions.py")


@dataclass(frozen=True)
class SelectionCase:
    """One real change; ``tests_*`` are withheld from the head the evaluation reviews."""

    id: str
    repo: str
    base: str
    head: str
    subject: str
    source_files: list[str]
    tests_touched: list[str]
    tests_added: list[str]


def _show(clone: Path, rev: str, path: str) -> str | None:
    done = subprocess.run(["git", "-C", str(clone), "show", f"{rev}:{path}"],
                          capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else None


def _changes_a_base_function(clone: Path, base: str, head: str, sources: list[str]) -> bool:
    for path in sources:
        before = _show(clone, base, path)
        if before is not None and functions.changed_functions(
                path, before, _show(clone, head, path)):
            return True
    return False


def _case(repo: str, clone: Path, sha: str, base: str, subject: str) -> SelectionCase | None:
    changes = review_mining._changes(clone, base, sha)
    if len(changes) > review_mining.MAX_FILES or review_mining._SKIPPED.search(subject):
        return None
    sources = sorted(p for s, p in changes if review_mining.classify(p) == "source")
    tests = [(s, p) for s, p in changes if review_mining.classify(p) == "test"]
    if not sources or not _changes_a_base_function(clone, base, sha, sources):
        return None
    return SelectionCase(
        id=f"{repo.split('/')[1]}-{sha[:10]}", repo=repo, base=base, head=sha,
        subject=subject, source_files=sources,
        tests_touched=sorted(p for s, p in tests if s != "A"),
        tests_added=sorted(p for s, p in tests if s == "A"))


def mine(repo: str, clone: Path, per_repo: int, until_date: str) -> list[SelectionCase]:
    """The newest ``per_repo`` cases of ``repo``."""
    found: list[SelectionCase] = []
    for sha, base, subject in review_mining._candidates(clone, until_date):
        case = _case(repo, clone, sha, base, subject)
        if case is not None:
            found.append(case)
        if len(found) >= per_repo:
            break
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clone", action="append", required=True,
                        help="OWNER/NAME=PATH of a local clone (repeatable)")
    parser.add_argument("--per-repo", type=int, default=8)
    parser.add_argument("--until-date", default="2026-01-01")
    parser.add_argument("--out", type=Path, default=_HERE / "cases.jsonl")
    args = parser.parse_args(argv)
    lines = []
    for spec in args.clone:
        repo, _, path = spec.partition("=")
        lines += [json.dumps(asdict(c)) for c in
                  mine(repo, Path(path), args.per_repo, args.until_date)]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
