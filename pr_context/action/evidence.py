"""``evidence.json`` from another run, validated against a strict schema into a Report.

The file comes from an artifact a fork's run may have forged, so nothing in it is used
before it is checked: every contract key (DESIGN.md) must be there with its type; texts
have a length cap and names and paths no control characters; paths are relative and
normalised (``a/b.py``: no ``/`` at the start, no ``\\``, ``..``, ``.`` or empty
segment); SHAs are 40 or 64 lowercase hex digits; lines are 1-based with end >= start;
counts are capped. The additive keys the comment shows (why each test is selected, why
everything should run, what the user's coverage data says of each symbol, the nested
functions a change was in) are checked the same way when present; other keys beyond
the contract are ignored, never read.
The report's repository and head must be the ones the caller expects (from the event).

The result is only data for pr-context's own templates: no text of the file is posted
as Markdown, and the report's ``top_k`` and ``link_base`` come from the caller.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, get_args

from pr_context.coverage import CoverageStatus, SymbolCoverage
from pr_context.errors import ArtifactError
from pr_context.links.selection import SelectedTest
from pr_context.models import Role
from pr_context.report import EVIDENCE_SCHEMA_VERSION, EvidenceItem, IndexInfo, Report, SymbolReport

__all__ = ["MAX_SYMBOLS", "parse_evidence", "report_from_evidence"]

MAX_SYMBOLS = 10_000
MAX_ITEMS = 2_000  # callers, tests or docs of one symbol
MAX_LIST = 100_000  # test selection, excluded and skipped files
MAX_NOTES = 100
MAX_NAME_CHARS = 2_000  # symbol and qualified names, node ids
MAX_PATH_CHARS = 4_096  # PATH_MAX
MAX_REASON_CHARS = 2_000  # the producer cuts reasons at 1,000 (review.MAX_REASON_CHARS)
MAX_SIGNATURE_CHARS = 20_000
MAX_LINE = 10_000_000
MAX_SIGNALS = 16
MAX_REASONS = 100  # why one test is selected
_CHANGES = frozenset({"added", "modified", "removed", "renamed", "signature_changed"})
_ROLES = frozenset(get_args(Role))
_STATUSES = frozenset({"stale", "updated"})
_COVERAGE_STATUSES = frozenset(get_args(CoverageStatus))
_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_WORD = re.compile(r"[a-z][a-z0-9_]{0,31}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_FREE_TEXT_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # tabs and newlines ok

T = TypeVar("T")


def parse_evidence(raw: bytes) -> Any:
    """The JSON value of ``raw``: strict UTF-8, no NaN or Infinity, no duplicate keys."""
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_no_constant,
                          object_pairs_hook=_unique_keys)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ArtifactError(f"evidence.json is not valid JSON ({type(exc).__name__}: "
                            f"{str(exc)[:120]})") from exc


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("an object has a key twice")
    return found


def report_from_evidence(data: Any, repository: str, head: str) -> Report:
    """The Report that ``data`` describes, when it is valid and about ``repository`` at
    ``head``; ``top_k`` and ``link_base`` are left at their defaults for the caller.

    :raises ArtifactError: naming the first key that is missing, mistyped or out of range
        (never quoting its value), or the repository or head that does not match.
    """
    top = _Fields(data, "")
    version = top.integer("schema_version", 1, 1_000)
    if version != EVIDENCE_SCHEMA_VERSION:
        raise ArtifactError(f"evidence.json has schema_version {version}; this pr-context "
                            f"reads {EVIDENCE_SCHEMA_VERSION}")
    found_repository = top.text("repository", 200, pattern=r"[\w.-]+/[\w.-]+")
    if found_repository.casefold() != repository.casefold():
        raise ArtifactError(f"evidence.json is about another repository, not {repository}")
    if top.sha("head") != head:
        raise ArtifactError(f"evidence.json is about another head commit, not {head[:12]}")
    return Report(
        repository=repository, base=top.sha("base"), head=head,
        index=_index(top.object("index")),
        symbols=tuple(top.each("changed_symbols", MAX_SYMBOLS, _symbol)),
        test_selection=tuple(top.each("test_selection", MAX_LIST, _test_target)),
        timings_ms=top.counts("timings_ms"),
        excluded_files=tuple(top.each("excluded_files", MAX_LIST, _path, required=False)),
        skipped_files=tuple(top.each("skipped_files", MAX_LIST, _path, required=False)),
        notes=tuple(top.each("notes", MAX_NOTES, _note, required=False)),
        selection_details=tuple(top.each("test_selection_details", MAX_LIST, _selected,
                                         required=False)),
        run_everything=_run_everything(top))


def _run_everything(top: _Fields) -> str | None:
    """Why the whole suite should run, or None; the flag and the reason must agree."""
    flag = top.flag("run_everything", default=False)
    reason = top.text("run_everything_reason", MAX_REASON_CHARS, free=True, nullable=True)
    if flag != (reason is not None):
        raise _invalid("run_everything_reason", "a reason exactly when run_everything is true")
    return reason  # type: ignore[no-any-return]


def _selected(value: Any, where: str) -> SelectedTest:
    fields = _Fields(value, where)
    return SelectedTest(fields.test_target("target"),
                        tuple(fields.each("reasons", MAX_REASONS, _note)))


def _coverage(value: Any, where: str) -> SymbolCoverage | None:
    """What the user's coverage data said of a symbol, or None (no coverage given)."""
    if value is None:
        return None
    fields = _Fields(value, where)
    return SymbolCoverage(fields.choice("status", _COVERAGE_STATUSES),
                          tuple(fields.each("tests", MAX_LIST, _node_id)),
                          fields.text("reason", MAX_REASON_CHARS, free=True))


def _index(fields: _Fields) -> IndexInfo:
    """The index description; its path policy is checked to be an object and dropped."""
    fields.object("path_policy")
    return IndexInfo(
        build_id=fields.text("build_id", 200), revision=fields.sha("revision"),
        base_revision=fields.text("base_revision", 64), parser_version=fields.text(
            "parser_version", 200), embedding_model=fields.text("embedding_model", 500),
        path_policy={}, incremental=fields.flag("incremental"),
        files=fields.integer("files", 0, 100_000_000),
        chunks=fields.integer("chunks", 0, 1_000_000_000))


def _symbol(value: Any, where: str) -> SymbolReport:
    fields = _Fields(value, where)
    start, end = fields.lines("start_line", "end_line")
    return SymbolReport(
        path=fields.path("path"), symbol=fields.name("symbol"),
        qualified_name=fields.name("qualified_name"),
        kind=fields.text("kind", 32, pattern=_WORD.pattern),
        change=fields.choice("change", _CHANGES), start_line=start, end_line=end,
        callers=tuple(fields.each("callers", MAX_ITEMS, _item)),
        tests=tuple(fields.each("tests", MAX_ITEMS, _item)),
        docs=tuple(fields.each("docs", MAX_ITEMS, _item)),
        old_path=fields.path("old_path", nullable=True),
        old_qualified_name=fields.name("old_qualified_name", nullable=True),
        old_signature=fields.text("old_signature", MAX_SIGNATURE_CHARS, nullable=True,
                                  free=True),
        new_signature=fields.text("new_signature", MAX_SIGNATURE_CHARS, nullable=True,
                                  free=True),
        parameter_changes=tuple(fields.each("parameter_changes", 500, _parameter_change,
                                            required=False)),
        cosmetic=fields.flag("cosmetic", default=False),
        analysed=fields.flag("analysed", default=True),
        changed_inside=tuple(fields.each("changed_inside", MAX_ITEMS, _qualified_name,
                                         required=False)),
        coverage=fields.optional("coverage", _coverage))


def _item(value: Any, where: str) -> EvidenceItem:
    fields = _Fields(value, where)
    start, end = fields.lines("start_line", "end_line")
    updated = fields.flag("updated_in_pr", nullable=True)
    return EvidenceItem(
        rank=fields.integer("rank", 1, MAX_LIST), path=fields.path("path"),
        symbol=fields.name("symbol", nullable=True), role=fields.choice("role", _ROLES),
        start_line=start, end_line=end, revision=fields.sha("revision"),
        score=fields.number("score"), signals=fields.signals("signals"),
        reason=fields.text("reason", MAX_REASON_CHARS, free=True),
        touched_in_pr=fields.flag("touched_in_pr"),
        line=fields.integer("line", 1, MAX_LINE, nullable=True),
        updated_in_pr=updated,
        needs_update=fields.flag("needs_update", default=False),
        status=fields.choice("status", _STATUSES, nullable=True),
        node_ids=tuple(fields.each("node_ids", MAX_ITEMS, _node_id, required=False)))


def _path(value: Any, where: str) -> str:
    text = _text(value, where, MAX_PATH_CHARS)
    if text.startswith("/") or "\\" in text or re.match(r"[A-Za-z]:", text) or any(
            part in ("", ".", "..") for part in text.split("/")):
        raise _invalid(where, "a relative, normalised path (a/b.py)")
    return text


def _test_target(value: Any, where: str) -> str:
    """A test file or a pytest node id (``path::name``): its path part is a path."""
    text = _text(value, where, MAX_PATH_CHARS + MAX_NAME_CHARS)
    path, _, rest = text.partition("::")
    _path(path, where)
    return text if not rest else f"{path}::{_text(rest, where, MAX_NAME_CHARS)}"


def _node_id(value: Any, where: str) -> str:
    return _test_target(value, where)


def _qualified_name(value: Any, where: str) -> str:
    return _text(value, where, MAX_NAME_CHARS)


def _note(value: Any, where: str) -> str:
    return _text(value, where, MAX_REASON_CHARS, free=True)


def _parameter_change(value: Any, where: str) -> str:
    return _text(value, where, 500)


def _text(value: Any, where: str, max_chars: int, *, pattern: str | None = None,
          free: bool = False) -> str:
    if not isinstance(value, str):
        raise _invalid(where, "a string")
    if len(value) > max_chars:
        raise _invalid(where, f"at most {max_chars:,} characters")
    if (_FREE_TEXT_CONTROL if free else _CONTROL).search(value):
        raise _invalid(where, "text without control characters")
    if pattern is not None and not re.fullmatch(pattern, value):
        raise _invalid(where, "in the expected form")
    return value


def _invalid(where: str, expected: str) -> ArtifactError:
    return ArtifactError(f"evidence.json is refused: {where or 'the file'} must be {expected}")


_MISSING = object()


class _Fields:
    """One JSON object being validated; ``where`` names it in errors (never its values)."""

    def __init__(self, value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise _invalid(where, "an object")
        self._data: dict[str, Any] = value
        self._where = where

    def _get(self, key: str, required: bool = True) -> Any:
        value = self._data.get(key, _MISSING)
        if value is _MISSING and required:
            raise _invalid(self._at(key), "present")
        return value

    def _at(self, key: str) -> str:
        return f"{self._where}.{key}" if self._where else key

    def object(self, key: str) -> _Fields:
        return _Fields(self._get(key), self._at(key))

    def text(self, key: str, max_chars: int, *, pattern: str | None = None,
             free: bool = False, nullable: bool = False) -> Any:
        value = self._get(key, required=not nullable)
        if nullable and value in (None, _MISSING):
            return None
        return _text(value, self._at(key), max_chars, pattern=pattern, free=free)

    def name(self, key: str, *, nullable: bool = False) -> Any:
        return self.text(key, MAX_NAME_CHARS, nullable=nullable)

    def path(self, key: str, *, nullable: bool = False) -> Any:
        value = self._get(key, required=not nullable)
        return None if nullable and value in (None, _MISSING) else _path(value, self._at(key))

    def test_target(self, key: str) -> str:
        return _test_target(self._get(key), self._at(key))

    def sha(self, key: str) -> str:
        return str(self.text(key, 64, pattern=_SHA.pattern))

    def choice(self, key: str, choices: frozenset[str], *, nullable: bool = False) -> Any:
        value = self._get(key, required=not nullable)
        if nullable and value in (None, _MISSING):
            return None
        if not isinstance(value, str) or value not in choices:
            raise _invalid(self._at(key), f"one of {', '.join(sorted(choices))}")
        return value

    def integer(self, key: str, low: int, high: int, *, nullable: bool = False) -> Any:
        value = self._get(key, required=not nullable)
        if nullable and value in (None, _MISSING):
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise _invalid(self._at(key), f"an integer from {low:,} to {high:,}")
        return value

    def lines(self, start_key: str, end_key: str) -> tuple[int, int]:
        start = self.integer(start_key, 1, MAX_LINE)
        end = self.integer(end_key, 1, MAX_LINE)
        if end < start:
            raise _invalid(self._at(end_key), f"at least {start_key}")
        return int(start), int(end)

    def number(self, key: str) -> float:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value) or abs(value) > 1e9:
            raise _invalid(self._at(key), "a finite number")
        return float(value)

    def flag(self, key: str, *, default: bool | None = None, nullable: bool = False) -> Any:
        value = self._get(key, required=default is None and not nullable)
        if value is _MISSING or (nullable and value is None):
            return default
        if not isinstance(value, bool):
            raise _invalid(self._at(key), "true or false")
        return value

    def signals(self, key: str) -> dict[str, float]:
        fields = self.object(key)
        if len(fields._data) > MAX_SIGNALS:
            raise _invalid(self._at(key), f"at most {MAX_SIGNALS} signals")
        for name in fields._data:
            _text(name, f"{self._at(key)} key", 32, pattern=_WORD.pattern)
        return {name: fields.number(name) for name in fields._data}

    def counts(self, key: str) -> Mapping[str, int]:
        """An object of names to non-negative integers (timings): checked, then dropped."""
        fields = self.object(key) if self._get(key, required=False) is not _MISSING else None
        if fields is not None:
            if len(fields._data) > 100:
                raise _invalid(self._at(key), "at most 100 entries")
            for name in fields._data:
                _text(name, f"{self._at(key)} key", 64, pattern=r"[\w.-]+")
                fields.integer(name, 0, 10**12)
        return {}

    def optional(self, key: str, parse: Callable[[Any, str], T | None]) -> T | None:
        """``parse`` of the value at ``key``; None when it is missing."""
        value = self._get(key, required=False)
        return None if value is _MISSING else parse(value, self._at(key))

    def each(self, key: str, max_items: int, parse: Callable[[Any, str], T], *,
             required: bool = True) -> list[T]:
        value = self._get(key, required=required)
        if value is _MISSING:
            return []
        if not isinstance(value, list):
            raise _invalid(self._at(key), "a list")
        if len(value) > max_items:
            raise _invalid(self._at(key), f"a list of at most {max_items:,} items")
        return [parse(item, f"{self._at(key)}[{n}]") for n, item in enumerate(value)]
