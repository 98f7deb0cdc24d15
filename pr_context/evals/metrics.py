"""Retrieval metrics: pure functions over a case and the ranked chunks a retriever returned.

Everything is measured at the case's cutoff (the number of results the answer stage
receives), except ``first_relevant_rank``, which looks at the whole list so a failure
says how far away the evidence was. Reciprocal rank is MRR@cutoff: 1/rank when the first
relevant result is inside the cutoff, else 0.

A result matches a target when its path equals the target's file, its symbol (or one of
the definitions it wholly ``contains``, for line-window chunks) equals the target's
symbol or ends with ``"." + symbol`` (a target without a symbol accepts any chunk of the
file), and its role is one of the target's roles (no roles: any role).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields

from pr_context.evals.cases import QUERY_CLASSES, Case, Group, QueryClass, Split, Target
from pr_context.evals.results import CaseRun, RankedChunk

__all__ = [
    "IMPLEMENTATION_ROLES",
    "METRIC_NAMES",
    "TEST_ROLES",
    "CaseMetrics",
    "Measure",
    "SliceMetrics",
    "aggregate",
    "asks_for_implementation",
    "evaluate_case",
    "first_relevant_rank",
    "forbidden_chunk_ids",
    "group_recall",
    "metrics_by_class",
    "metrics_by_repo",
    "metrics_by_split",
    "missing_groups",
    "revision_mismatches",
    "target_matches",
]

# Roles of code that implements behaviour. A case whose every target has only these roles
# asks for an implementation, so a test or test helper ranked first is a known failure mode
# (tests are *more* similar to a query than the code they test).
IMPLEMENTATION_ROLES = frozenset({"production", "generated", "vendored"})
TEST_ROLES = frozenset({"test", "test_support"})
DEPRECATED_ROLE = "deprecated"


def target_matches(chunk: RankedChunk, target: Target) -> bool:
    """Whether ``chunk`` is acceptable evidence for ``target`` (see the module docstring)."""
    return (
        chunk.path == target.file
        and (target.symbol is None
             or any(_symbol_matches(s, target.symbol) for s in _symbols(chunk)))
        and (not target.roles or chunk.role in target.roles)
    )


def _symbols(chunk: RankedChunk) -> tuple[str, ...]:
    return (chunk.symbol, *chunk.contains) if chunk.symbol else chunk.contains


def _symbol_matches(symbol: str, wanted: str) -> bool:
    return symbol == wanted or symbol.endswith("." + wanted)


def _relevant(chunk: RankedChunk, targets: Iterable[Target]) -> bool:
    return any(target_matches(chunk, t) for t in targets)


def first_relevant_rank(chunks: Sequence[RankedChunk], targets: Sequence[Target]) -> int | None:
    """1-based position of the first chunk matching any target, anywhere in the list."""
    return next((i for i, c in enumerate(chunks, start=1) if _relevant(c, targets)), None)


def missing_groups(groups: Sequence[Group], chunks: Sequence[RankedChunk],
                   cutoff: int) -> tuple[str, ...]:
    """Ids of the groups no chunk inside the cutoff covers."""
    visible = chunks[:cutoff]
    return tuple(g.id for g in groups if not any(_relevant(c, g.any_of) for c in visible))


def group_recall(groups: Sequence[Group], chunks: Sequence[RankedChunk], cutoff: int) -> float:
    """Fraction of required groups covered inside the cutoff. :raises ValueError: no groups."""
    if not groups:
        raise ValueError("group recall needs at least one group (negative cases have none)")
    return 1 - len(missing_groups(groups, chunks, cutoff)) / len(groups)


def forbidden_chunk_ids(chunks: Sequence[RankedChunk], prefixes: Sequence[str],
                        cutoff: int) -> tuple[str, ...]:
    """Chunks inside the cutoff whose path starts with a forbidden prefix."""
    return tuple(c.chunk_id for c in chunks[:cutoff]
                 if any(c.path.startswith(p) for p in prefixes))


def revision_mismatches(chunks: Sequence[RankedChunk], revision: str,
                        cutoff: int) -> tuple[str, ...]:
    """Chunks inside the cutoff that come from another revision than the case's."""
    return tuple(c.chunk_id for c in chunks[:cutoff] if c.revision != revision)


def asks_for_implementation(case: Case) -> bool:
    """Whether every target of a non-negative case names implementation roles only."""
    targets = case.targets
    return bool(targets) and all(
        t.roles and set(t.roles) <= IMPLEMENTATION_ROLES for t in targets
    )


@dataclass(frozen=True)
class CaseMetrics:
    """Everything measured for one case of one run, plus the keys it is sliced by."""

    case_id: str
    repo: str
    query_class: QueryClass
    split: Split
    cutoff: int
    negative: bool
    asks_implementation: bool
    passed: bool
    hit: bool  # first relevant result inside the cutoff (always False for negatives)
    first_relevant_rank: int | None  # anywhere in the final list
    candidate_first_relevant_rank: int | None  # anywhere in the pre-re-ranking list
    reciprocal_rank: float  # MRR@cutoff
    group_recall: float | None  # None for negative cases
    missing_groups: tuple[str, ...]
    forbidden_chunk_ids: tuple[str, ...]
    revision_mismatches: tuple[str, ...]  # chunk ids inside the cutoff
    manifest_revision_mismatch: bool  # the index reflects another revision than the case's
    test_at_rank1: bool
    deprecated_in_cutoff: tuple[str, ...]  # deprecated chunks inside the cutoff, not targets
    result_count: int

    @property
    def revision_mismatch(self) -> bool:
        return self.manifest_revision_mismatch or bool(self.revision_mismatches)


def evaluate_case(case: Case, run: CaseRun, manifest: Mapping[str, object]) -> CaseMetrics:
    """Measure one case. ``manifest`` is the index manifest the results came from."""
    results, targets, cutoff = run.results, case.targets, case.cutoff
    first = first_relevant_rank(results, targets)
    hit = first is not None and first <= cutoff
    revision = manifest.get("revision")
    manifest_mismatch = revision is not None and revision != case.revision
    chunk_mismatches = revision_mismatches(results, case.revision, cutoff)
    forbidden = forbidden_chunk_ids(results, case.forbidden, cutoff)
    missing = missing_groups(case.groups, results, cutoff)
    clean = not manifest_mismatch and not chunk_mismatches
    passed = (not results and clean) if case.negative else (not missing and not forbidden
                                                              and clean)
    implementation = asks_for_implementation(case)
    return CaseMetrics(
        case_id=case.id, repo=case.repo, query_class=case.query_class, split=case.split,
        cutoff=cutoff, negative=case.negative, asks_implementation=implementation,
        passed=passed, hit=hit, first_relevant_rank=first,
        candidate_first_relevant_rank=first_relevant_rank(run.candidates, targets),
        reciprocal_rank=1 / first if hit and first else 0.0,
        group_recall=None if case.negative else group_recall(case.groups, results, cutoff),
        missing_groups=missing, forbidden_chunk_ids=forbidden,
        revision_mismatches=chunk_mismatches, manifest_revision_mismatch=manifest_mismatch,
        test_at_rank1=implementation and bool(results) and results[0].role in TEST_ROLES,
        deprecated_in_cutoff=tuple(c.chunk_id for c in results[:cutoff]
                                   if c.role == DEPRECATED_ROLE and not _relevant(c, targets)),
        result_count=len(results),
    )


@dataclass(frozen=True)
class Measure:
    """An aggregate and the number of cases behind it; ``value`` is None when ``n`` is 0."""

    value: float | None
    n: int


@dataclass(frozen=True)
class SliceMetrics:
    """Aggregates over a set of cases; each says over how many cases it was taken.

    hit_at_cutoff, mrr and group_recall are over non-negative cases; negative_empty_rate
    over negative cases; test_at_rank1_rate over cases asking for an implementation;
    the rest over all cases. deprecated_in_cutoff is a count of chunks, not a rate.
    """

    cases: int
    hit_at_cutoff: Measure
    mrr: Measure
    group_recall: Measure
    pass_rate: Measure
    forbidden_rate: Measure
    revision_mismatch_rate: Measure
    test_at_rank1_rate: Measure
    deprecated_in_cutoff: Measure
    negative_empty_rate: Measure

    def measure(self, name: str) -> Measure:
        """The aggregate called ``name`` (one of METRIC_NAMES)."""
        if name not in METRIC_NAMES:
            raise KeyError(name)
        value: Measure = getattr(self, name)
        return value


METRIC_NAMES: tuple[str, ...] = tuple(
    f.name for f in fields(SliceMetrics) if f.name != "cases"
)


def _mean(values: Sequence[float]) -> Measure:
    return Measure(sum(values) / len(values) if values else None, len(values))


def _rate(flags: Sequence[bool]) -> Measure:
    return _mean([1.0 if f else 0.0 for f in flags])


def aggregate(metrics: Sequence[CaseMetrics]) -> SliceMetrics:
    """Aggregate per-case metrics, keeping the case count behind each number."""
    positive = [m for m in metrics if not m.negative]
    negative = [m for m in metrics if m.negative]
    implementation = [m for m in metrics if m.asks_implementation]
    return SliceMetrics(
        cases=len(metrics),
        hit_at_cutoff=_rate([m.hit for m in positive]),
        mrr=_mean([m.reciprocal_rank for m in positive]),
        group_recall=_mean([m.group_recall or 0.0 for m in positive]),
        pass_rate=_rate([m.passed for m in metrics]),
        forbidden_rate=_rate([bool(m.forbidden_chunk_ids) for m in metrics]),
        revision_mismatch_rate=_rate([m.revision_mismatch for m in metrics]),
        test_at_rank1_rate=_rate([m.test_at_rank1 for m in implementation]),
        deprecated_in_cutoff=Measure(float(sum(len(m.deprecated_in_cutoff) for m in metrics)),
                                     len(metrics)),
        negative_empty_rate=_rate([m.result_count == 0 for m in negative]),
    )


def _slices(metrics: Sequence[CaseMetrics], key: Callable[[CaseMetrics], str],
            order: Sequence[str] = ()) -> dict[str, SliceMetrics]:
    position = {k: i for i, k in enumerate(order)}
    keys = sorted({key(m) for m in metrics}, key=lambda k: (position.get(k, len(order)), k))
    return {k: aggregate([m for m in metrics if key(m) == k]) for k in keys}


def metrics_by_class(metrics: Sequence[CaseMetrics]) -> dict[str, SliceMetrics]:
    """Aggregates per query class present, in the documented class order."""
    return _slices(metrics, lambda m: m.query_class, QUERY_CLASSES)


def metrics_by_repo(metrics: Sequence[CaseMetrics]) -> dict[str, SliceMetrics]:
    """Aggregates per corpus, by name."""
    return _slices(metrics, lambda m: m.repo)


def metrics_by_split(metrics: Sequence[CaseMetrics]) -> dict[str, SliceMetrics]:
    """Aggregates per split (tuning before heldout)."""
    return _slices(metrics, lambda m: m.split, ("tuning", "heldout"))
