"""What a retriever produced for each case: the types live mode builds and recorded mode reads.

A results file holds one run ``{"retriever", "manifest", "cases": [...]}`` or several
``{"runs": [run, ...]}`` (a hybrid retriever and its baselines over the same cases). A
case entry may carry its own ``manifest``; it replaces the run's for that case, field for
field, and is never merged with it. The ``run.json`` artifact the evaluator writes is a
valid results file: its derived keys (metrics, validity) are ignored and recomputed.

Structural problems raise ResultsFileError. An incomplete manifest is *not* a structural
problem: it is reported by ``manifest_problems`` and makes the run invalid, so the report
still shows what the run returned.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pr_context.evals.errors import ResultsFileError

__all__ = [
    "REQUIRED_MANIFEST_FIELDS",
    "CaseRun",
    "RankedChunk",
    "Run",
    "SearchRun",
    "case_run_from_search",
    "chunk_to_json",
    "effective_manifest",
    "load_runs",
    "manifest_problems",
    "parse_runs",
]

# Without these a run cannot say which index produced it, so it cannot be scored.
REQUIRED_MANIFEST_FIELDS = ("revision", "build_id", "parser_version", "embedding_model",
                            "path_policy")

_CHUNK_KEYS = frozenset({"rank", "chunk_id", "path", "symbol", "role", "start_line",
                         "end_line", "revision", "score"})
_CHUNK_OPTIONAL = frozenset({"components", "contains"})
_CASE_KEYS = frozenset({"id", "query", "results"})
_CASE_OPTIONAL = frozenset({"rewritten_query", "candidates", "message", "manifest"})
# Written into run.json by the evaluator; recomputed, never trusted, when read back.
_CASE_DERIVED = frozenset({"query_class", "repo", "split", "revision", "cutoff",
                           "path_context", "metrics"})
_RUN_KEYS = frozenset({"retriever", "cases"})
_RUN_OPTIONAL = frozenset({"manifest"})
_RUN_DERIVED = frozenset({"valid", "problems"})


@dataclass(frozen=True)
class RankedChunk:
    """One ranked chunk as a retriever returned it. ``rank`` is 1-based and consecutive."""

    rank: int
    chunk_id: str
    path: str
    symbol: str | None  # dotted qualified name; None for non-symbol chunks
    role: str
    start_line: int
    end_line: int
    revision: str
    score: float  # comparable only within one retriever's run
    components: Mapping[str, float] = field(default_factory=dict)  # bm25, embedding, ...
    # Qualified names of definitions a symbol-less chunk (a line window) wholly contains:
    # the chunk is credited for those symbols, since their whole definition reaches the reader.
    contains: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchRun:
    """What ``Retriever.search`` returns for one query.

    ``candidates`` is the ranked list before re-ranking, ``results`` the final list. A
    retriever that finds nothing above its relevance threshold returns empty ``results``
    and may say why in ``message``.
    """

    manifest: Mapping[str, object]
    rewritten_query: str | None
    candidates: Sequence[RankedChunk]
    results: Sequence[RankedChunk]
    message: str | None = None


@dataclass(frozen=True)
class CaseRun:
    """A retriever's output for one case; ``manifest`` None means the run's applies."""

    case_id: str
    query: str
    rewritten_query: str | None
    candidates: tuple[RankedChunk, ...]
    results: tuple[RankedChunk, ...]
    message: str | None = None
    manifest: Mapping[str, object] | None = None


@dataclass(frozen=True)
class Run:
    """One retriever over a set of cases."""

    retriever: str
    manifest: Mapping[str, object] | None
    cases: tuple[CaseRun, ...]


def case_run_from_search(case_id: str, query: str, search: SearchRun) -> CaseRun:
    """Record a live search: the manifest the retriever reported belongs to the case."""
    return CaseRun(case_id=case_id, query=query, rewritten_query=search.rewritten_query,
                   candidates=tuple(search.candidates), results=tuple(search.results),
                   message=search.message, manifest=dict(search.manifest))


def effective_manifest(run: Run, case_run: CaseRun) -> Mapping[str, object]:
    """The case's own manifest, else the run's, else empty. Never a mix of the two."""
    if case_run.manifest is not None:
        return case_run.manifest
    return run.manifest if run.manifest is not None else {}


def manifest_problems(manifest: Mapping[str, object]) -> tuple[str, ...]:
    """Why a manifest cannot identify its index: missing or empty required fields."""
    missing = [f for f in REQUIRED_MANIFEST_FIELDS if manifest.get(f) in (None, "", {}, [])]
    return (f"manifest lacks {', '.join(missing)}",) if missing else ()


def chunk_to_json(chunk: RankedChunk) -> dict[str, object]:
    """The JSON object for a chunk; ``parse_runs`` reads it back unchanged."""
    data: dict[str, object] = {
        "rank": chunk.rank, "chunk_id": chunk.chunk_id, "path": chunk.path,
        "symbol": chunk.symbol, "role": chunk.role, "start_line": chunk.start_line,
        "end_line": chunk.end_line, "revision": chunk.revision, "score": chunk.score,
        "components": dict(chunk.components),
    }
    if chunk.contains:
        data["contains"] = list(chunk.contains)
    return data


def load_runs(path: Path) -> tuple[Run, ...]:
    """Read a results file. :raises ResultsFileError: unreadable or malformed."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsFileError(f"cannot read results file {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ResultsFileError(f"{path}: invalid JSON: {exc}") from exc
    return parse_runs(data, str(path))


def parse_runs(data: object, source: str = "results") -> tuple[Run, ...]:
    """Validate a decoded results file: one run object or ``{"runs": [...]}``."""
    try:
        runs = _runs(data)
    except ValueError as exc:
        raise ResultsFileError(f"{source}: {exc}") from exc
    names = [r.retriever for r in runs]
    if len(set(names)) != len(names):
        raise ResultsFileError(f"{source}: retriever names must be unique, got {names}")
    return runs


def _runs(data: object) -> tuple[Run, ...]:
    if isinstance(data, dict) and set(data) == {"runs"}:
        runs = data["runs"]
        if not isinstance(runs, list) or not runs:
            raise ValueError("runs must be a non-empty list of run objects")
        return tuple(_run(r, f"runs[{i}]") for i, r in enumerate(runs))
    return (_run(data, "run"),)


def _run(data: object, where: str) -> Run:
    obj = _object(data, where, _RUN_KEYS, _RUN_OPTIONAL | _RUN_DERIVED)
    retriever = _string(obj["retriever"], f"{where}.retriever")
    cases = obj["cases"]
    if not isinstance(cases, list):
        raise ValueError(f"{where}.cases must be a list")
    parsed = tuple(_case_run(c, f"{where} ({retriever}) case {i}") for i, c in enumerate(cases))
    ids = [c.case_id for c in parsed]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"{where} ({retriever}): duplicate case ids {', '.join(duplicates)}")
    return Run(retriever=retriever, manifest=_manifest(obj.get("manifest"), where),
               cases=parsed)


def _case_run(data: object, where: str) -> CaseRun:
    obj = _object(data, where, _CASE_KEYS, _CASE_OPTIONAL | _CASE_DERIVED)
    case_id = _string(obj["id"], f"{where}.id")
    where = f"{where} ({case_id})"
    return CaseRun(
        case_id=case_id,
        query=_string(obj["query"], f"{where}.query"),
        rewritten_query=_optional_string(obj.get("rewritten_query"), f"{where}.rewritten_query"),
        candidates=_chunks(obj.get("candidates", []), f"{where}.candidates"),
        results=_chunks(obj["results"], f"{where}.results"),
        message=_optional_string(obj.get("message"), f"{where}.message"),
        manifest=_manifest(obj.get("manifest"), where),
    )


def _manifest(value: object, where: str) -> Mapping[str, object] | None:
    if value is not None and not isinstance(value, dict):
        raise ValueError(f"{where}.manifest must be an object")
    return value


def _chunks(value: object, where: str) -> tuple[RankedChunk, ...]:
    if not isinstance(value, list):
        raise ValueError(f"{where} must be a list of ranked chunks")
    chunks = tuple(_chunk(c, f"{where}[{i}]") for i, c in enumerate(value))
    ranks = [c.rank for c in chunks]
    if ranks != list(range(1, len(chunks) + 1)):
        raise ValueError(f"{where}: ranks must be 1, 2, 3, ... in list order, got {ranks}")
    return chunks


def _chunk(data: object, where: str) -> RankedChunk:
    obj = _object(data, where, _CHUNK_KEYS, _CHUNK_OPTIONAL)
    start, end = _integer(obj["start_line"], where), _integer(obj["end_line"], where)
    if not 1 <= start <= end:
        raise ValueError(f"{where}: lines must satisfy 1 <= start_line <= end_line, "
                         f"got {start}..{end}")
    return RankedChunk(
        rank=_integer(obj["rank"], f"{where}.rank"),
        chunk_id=_string(obj["chunk_id"], f"{where}.chunk_id"),
        path=_string(obj["path"], f"{where}.path"),
        symbol=_optional_string(obj["symbol"], f"{where}.symbol"),
        role=_string(obj["role"], f"{where}.role"),
        start_line=start,
        end_line=end,
        revision=_string(obj["revision"], f"{where}.revision"),
        score=_number(obj["score"], f"{where}.score"),
        components=_components(obj.get("components", {}), f"{where}.components"),
        contains=_names(obj.get("contains", []), f"{where}.contains"),
    )


def _object(data: object, where: str, required: frozenset[str],
            optional: frozenset[str]) -> dict[str, object]:
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a JSON object")
    missing = sorted(required - data.keys())
    unknown = sorted(data.keys() - required - optional)
    if missing or unknown:
        raise ValueError(f"{where}: missing key(s) {missing}, unknown key(s) {unknown}")
    return data


def _string(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where} must be a non-empty string, got {value!r}")
    return value


def _optional_string(value: object, where: str) -> str | None:
    return None if value is None else _string(value, where)


def _integer(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where} must be an integer, got {value!r}")
    return value


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{where} must be a finite number, got {value!r}")
    return float(value)


def _names(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ValueError(f"{where} must be a list of qualified names")
    return tuple(_string(v, f"{where}[{i}]") for i, v in enumerate(value))


def _components(value: object, where: str) -> dict[str, float]:
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be an object of numbers")
    return {str(k): _number(v, f"{where}.{k}") for k, v in value.items()}
