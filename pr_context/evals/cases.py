"""Labelled retrieval cases: one JSON object per line, validated on load.

The format is documented with an example in ``evals/README.md``. Loading checks everything
that can be checked without an index: unique ids, known query classes and roles, splits,
cutoffs, that a case is negative exactly when it has no evidence groups, that no target
sits under one of its own forbidden prefixes, and that the revision is the one
corpora.yml pins for the case's corpus. Errors name the file, the line and the case id.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal, TypeVar, cast, get_args

from pr_context.evals.corpora import Corpus, GitCorpus, is_full_sha
from pr_context.evals.errors import CaseFileError
from pr_context.models import Role, Sha

__all__ = [
    "QUERY_CLASSES",
    "ROLES",
    "SPLITS",
    "Case",
    "Group",
    "QueryClass",
    "Split",
    "Target",
    "load_cases",
    "parse_case",
    "select_split",
]

QueryClass = Literal[
    "identifier", "behavior", "stack_trace", "how_to_use", "test_lookup", "doc_lookup",
    "example_lookup", "negative",
]
Split = Literal["tuning", "heldout"]

QUERY_CLASSES: tuple[QueryClass, ...] = get_args(QueryClass)
SPLITS: tuple[Split, ...] = get_args(Split)
ROLES: tuple[Role, ...] = get_args(Role)

_REQUIRED_KEYS = frozenset(
    {"id", "query", "query_class", "repo", "revision", "groups", "cutoff", "split",
     "rationale"}
)
_OPTIONAL_KEYS = frozenset({"path_context", "forbidden"})
_GROUP_KEYS = frozenset({"anyOf", "id"})
_TARGET_KEYS = frozenset({"file", "symbol", "roles"})
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_Choice = TypeVar("_Choice", bound=str)


@dataclass(frozen=True)
class Target:
    """One acceptable piece of evidence: a file, optionally a symbol and roles in it."""

    file: str
    symbol: str | None = None  # matched exactly or as a dotted suffix of the chunk's symbol
    roles: tuple[Role, ...] = ()  # empty: any role


@dataclass(frozen=True)
class Group:
    """Required evidence: covered when any one of its targets is inside the cutoff."""

    id: str
    any_of: tuple[Target, ...]


@dataclass(frozen=True)
class Case:
    """A query, the evidence it needs, and what must not reach the answer stage."""

    id: str
    query: str
    query_class: QueryClass
    repo: str
    revision: Sha
    groups: tuple[Group, ...]  # empty exactly for negative cases
    cutoff: int  # how many results the answer stage receives
    split: Split
    rationale: str
    path_context: str | None = None  # the path the user is in, when reliably known
    forbidden: tuple[str, ...] = ()  # path prefixes that must not appear inside the cutoff

    @property
    def negative(self) -> bool:
        return not self.groups

    @property
    def targets(self) -> tuple[Target, ...]:
        return tuple(t for g in self.groups for t in g.any_of)


def load_cases(path: Path, corpora: Mapping[str, Corpus]) -> tuple[Case, ...]:
    """Read and validate a JSONL case file, or every ``*.jsonl`` in a directory.

    Blank lines are skipped; ids must be unique across all files.

    :raises CaseFileError: unreadable file, invalid JSON or an invalid case.
    """
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise CaseFileError(f"{path}: no *.jsonl case files")
        merged = [case for file in files for case in load_cases(file, corpora)]
        counts = Counter(case.id for case in merged)
        duplicates = sorted(case_id for case_id, n in counts.items() if n > 1)
        if duplicates:
            raise CaseFileError(f"{path}: duplicate case ids across files: "
                                f"{', '.join(duplicates)}")
        return tuple(merged)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseFileError(f"cannot read case file {path}: {exc}") from exc
    cases: list[Case] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        case = parse_case(_decode(line, f"{path}:{number}"), corpora, f"{path}:{number}")
        if case.id in first_line:
            raise CaseFileError(f"{path}:{number}: case {case.id}: duplicate id "
                                f"(first on line {first_line[case.id]})")
        first_line[case.id] = number
        cases.append(case)
    if not cases:
        raise CaseFileError(f"{path}: no cases")
    return tuple(cases)


def select_split(cases: Iterable[Case], split: Split | None) -> tuple[Case, ...]:
    """The cases of ``split``; all of them when ``split`` is None."""
    return tuple(c for c in cases if split is None or c.split == split)


def _decode(line: str, where: str) -> object:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise CaseFileError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from exc


def parse_case(data: object, corpora: Mapping[str, Corpus], where: str = "case") -> Case:
    """Validate one decoded case object. :raises CaseFileError: naming ``where`` and the id."""
    if not isinstance(data, dict):
        raise CaseFileError(f"{where}: expected a JSON object, got {type(data).__name__}")
    case_id = data.get("id")
    if not isinstance(case_id, str) or _ID.fullmatch(case_id) is None:
        raise CaseFileError(f"{where}: id must be a string of letters, digits, '.', '_', '-'; "
                            f"got {case_id!r}")
    try:
        return _build_case(data, corpora)
    except ValueError as exc:
        raise CaseFileError(f"{where}: case {case_id}: {exc}") from exc


def _build_case(data: dict[str, object], corpora: Mapping[str, Corpus]) -> Case:
    _check_keys(data, _REQUIRED_KEYS, _OPTIONAL_KEYS, "case")
    query_class = _choice(data["query_class"], QUERY_CLASSES, "query_class")
    case = Case(
        id=str(data["id"]),
        query=_text(data["query"], "query"),
        query_class=query_class,
        repo=_text(data["repo"], "repo"),
        revision=Sha(_text(data["revision"], "revision")),
        groups=_groups(data["groups"]),
        cutoff=_cutoff(data["cutoff"]),
        split=_choice(data["split"], SPLITS, "split"),
        rationale=_text(data["rationale"], "rationale"),
        path_context=_optional_path(data.get("path_context"), "path_context"),
        forbidden=_strings(data.get("forbidden", []), "forbidden"),
    )
    _check_negative(case)
    _check_forbidden_targets(case)
    _check_revision(case, corpora)
    return case


def _check_keys(data: Mapping[str, object], required: frozenset[str],
                optional: frozenset[str], what: str) -> None:
    missing = sorted(required - data.keys())
    unknown = sorted(data.keys() - required - optional)
    if missing:
        raise ValueError(f"{what} lacks {', '.join(missing)}")
    if unknown:
        raise ValueError(f"{what} has unknown key(s) {', '.join(unknown)} "
                         f"(allowed: {', '.join(sorted(required | optional))})")


def _text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


def _choice(value: object, allowed: Sequence[_Choice], name: str) -> _Choice:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return cast(_Choice, value)


def _cutoff(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"cutoff must be an integer >= 1, got {value!r}")
    return value


def _strings(value: object, name: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{name} must be a list of non-empty strings, got {value!r}")
    return tuple(value)


def _optional_path(value: object, name: str) -> str | None:
    return None if value is None else _relative_path(value, name)


def _relative_path(value: object, name: str) -> str:
    path = _text(value, name)
    parts = PurePosixPath(path).parts
    if path.startswith("/") or "\\" in path or ".." in parts or path != "/".join(parts):
        raise ValueError(f"{name} must be a normalised repository-relative path with '/', "
                         f"got {value!r}")
    return path


def _groups(value: object) -> tuple[Group, ...]:
    if not isinstance(value, list):
        raise ValueError(f"groups must be a list, got {value!r}")
    groups = tuple(_group(g, i) for i, g in enumerate(value, start=1))
    ids = [g.id for g in groups]
    if len(set(ids)) != len(ids):
        raise ValueError(f"group ids must be unique, got {ids}")
    return groups


def _group(value: object, number: int) -> Group:
    if not isinstance(value, dict):
        raise ValueError(f"group {number} must be an object with anyOf, got {value!r}")
    _check_keys(value, frozenset({"anyOf"}), _GROUP_KEYS - {"anyOf"}, f"group {number}")
    targets = value["anyOf"]
    if not isinstance(targets, list) or not targets:
        raise ValueError(f"group {number}: anyOf must be a non-empty list of targets")
    group_id = value.get("id", f"g{number}")
    return Group(id=_text(group_id, f"group {number} id"),
                 any_of=tuple(_target(t, f"group {number} target") for t in targets))


def _target(value: object, where: str) -> Target:
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be an object with file, got {value!r}")
    _check_keys(value, frozenset({"file"}), _TARGET_KEYS - {"file"}, where)
    symbol = value.get("symbol")
    roles = _strings(value.get("roles", []), f"{where} roles")
    return Target(
        file=_relative_path(value["file"], f"{where} file"),
        symbol=None if symbol is None else _text(symbol, f"{where} symbol"),
        roles=tuple(_choice(r, ROLES, f"{where} role") for r in roles),
    )


def _check_negative(case: Case) -> None:
    if (case.query_class == "negative") != case.negative:
        raise ValueError("query_class negative and empty groups go together: a negative "
                         "case has groups [] and every other case at least one group")


def _check_forbidden_targets(case: Case) -> None:
    for target in case.targets:
        prefix = next((p for p in case.forbidden if target.file.startswith(p)), None)
        if prefix is not None:
            raise ValueError(f"target {target.file} is under forbidden prefix {prefix!r}")


def _check_revision(case: Case, corpora: Mapping[str, Corpus]) -> None:
    corpus = corpora.get(case.repo)
    if corpus is None:
        raise ValueError(f"repo {case.repo!r} is not in corpora.yml "
                         f"(known: {', '.join(sorted(corpora))})")
    if not is_full_sha(case.revision):
        raise ValueError(f"revision must be a full 40-hex commit SHA, got {case.revision!r}")
    if not isinstance(corpus, GitCorpus) and case.revision != corpus.revision:
        raise ValueError(f"revision {case.revision} is not the revision corpora.yml pins "
                         f"for {case.repo} ({corpus.revision})")
