"""Retrieval metrics on hand-computed examples."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pr_context.evals.cases import Case, Group, Target
from pr_context.evals.metrics import (
    METRIC_NAMES,
    CaseMetrics,
    Measure,
    aggregate,
    asks_for_implementation,
    evaluate_case,
    first_relevant_rank,
    forbidden_chunk_ids,
    group_recall,
    metrics_by_class,
    metrics_by_split,
    missing_groups,
    revision_mismatches,
    target_matches,
)
from pr_context.evals.results import CaseRun, RankedChunk
from pr_context.models import Sha

REV = Sha("a" * 40)
OTHER_REV = "b" * 40
MAP = "src/werkzeug/routing/map.py"
BIND = Target(MAP, "Map.bind", ("production",))
ENVIRON = Target(MAP, "Map.bind_to_environ", ("production",))


def chunk(rank: int, path: str = MAP, symbol: str | None = None, role: str = "production",
          revision: str = REV, chunk_id: str | None = None,
          contains: tuple[str, ...] = ()) -> RankedChunk:
    return RankedChunk(rank=rank, chunk_id=chunk_id or f"c{rank}", path=path, symbol=symbol,
                       role=role, start_line=1, end_line=2, revision=revision, score=1 / rank,
                       contains=contains)


def ranked(*chunks: RankedChunk) -> tuple[RankedChunk, ...]:
    return tuple(replace(c, rank=i, chunk_id=c.chunk_id) for i, c in enumerate(chunks, 1))


def make_case(groups: tuple[Group, ...] = (Group("g1", (BIND, ENVIRON)),), cutoff: int = 3,
              forbidden: tuple[str, ...] = (), query_class: str = "behavior") -> Case:
    return Case(id="c", query="q", query_class=query_class, repo="werkzeug",  # type: ignore[arg-type]
                revision=REV, groups=groups, cutoff=cutoff, split="heldout", rationale="r",
                forbidden=forbidden)


def run_of(*results: RankedChunk, candidates: tuple[RankedChunk, ...] = ()) -> CaseRun:
    return CaseRun(case_id="c", query="q", rewritten_query=None, candidates=candidates,
                   results=results)


MANIFEST = {"revision": REV}


@pytest.mark.parametrize(("chunk_path", "chunk_symbol", "role", "target", "expected"), [
    (MAP, "werkzeug.routing.map.Map.bind", "production", BIND, True),  # dotted suffix
    (MAP, "Map.bind", "production", BIND, True),  # exact
    (MAP, "werkzeug.routing.map.Map.bind_to_environ", "production", BIND, False),
    (MAP, "werkzeug.routing.map.XMap.bind", "production", BIND, False),  # not at a dot
    (MAP, None, "production", BIND, False),  # the target needs a symbol
    ("src/other.py", "werkzeug.routing.map.Map.bind", "production", BIND, False),
    (MAP, "werkzeug.routing.map.Map.bind", "test", BIND, False),  # role not accepted
    (MAP, None, "docs", Target(MAP), True),  # no symbol, no roles: any chunk of the file
    (MAP, "anything", "test", Target(MAP, roles=("test", "test_support")), True),
])
def test_target_matches(chunk_path: str, chunk_symbol: str | None, role: str, target: Target,
                        expected: bool) -> None:
    assert target_matches(chunk(1, chunk_path, chunk_symbol, role), target) is expected


@pytest.mark.parametrize(("contains", "expected"), [
    (("werkzeug.routing.map.Map.__init__", "werkzeug.routing.map.Map.bind"), True),
    (("werkzeug.routing.map.Map.bind_to_environ",), False),
    ((), False),
])
def test_a_window_is_credited_for_the_definitions_it_contains(
        contains: tuple[str, ...], expected: bool) -> None:
    window = chunk(1, MAP, None, contains=contains)
    assert target_matches(window, BIND) is expected


def test_first_relevant_rank_looks_past_the_cutoff() -> None:
    results = ranked(chunk(1, "a.py"), chunk(2, "b.py"), chunk(3, MAP, "Map.bind"))
    assert first_relevant_rank(results, [BIND]) == 3
    assert first_relevant_rank(results[:2], [BIND]) is None


def test_multi_group_recall_counts_groups_inside_the_cutoff() -> None:
    groups = (Group("contract", (BIND,)), Group("config", (Target("config/routes.py"),)),
              Group("docs", (Target("docs/routing.rst", roles=("docs",)),)))
    results = ranked(chunk(1, "config/routes.py"), chunk(2, MAP, "x.Map.bind"),
                     chunk(3, "docs/routing.rst", role="docs"))
    assert group_recall(groups, results, cutoff=2) == pytest.approx(2 / 3)
    assert missing_groups(groups, results, cutoff=2) == ("docs",)
    assert group_recall(groups, results, cutoff=3) == 1.0
    assert group_recall(groups, (), cutoff=3) == 0.0


def test_group_recall_needs_groups() -> None:
    with pytest.raises(ValueError, match="at least one group"):
        group_recall((), ranked(chunk(1)), cutoff=1)


def test_forbidden_and_revision_checks_stop_at_the_cutoff() -> None:
    results = ranked(chunk(1, "tests/test_map.py", chunk_id="t1"),
                     chunk(2, "src/werkzeug/_compat.py", chunk_id="compat"),
                     chunk(3, "tests/test_x.py", revision=OTHER_REV, chunk_id="t3"))
    prefixes = ("tests/", "src/werkzeug/_compat")
    assert forbidden_chunk_ids(results, prefixes, cutoff=2) == ("t1", "compat")
    assert forbidden_chunk_ids(results, prefixes, cutoff=3) == ("t1", "compat", "t3")
    assert revision_mismatches(results, REV, cutoff=2) == ()
    assert revision_mismatches(results, REV, cutoff=3) == ("t3",)


def test_evaluate_case_hand_computed() -> None:
    case = make_case(cutoff=3, forbidden=("tests/",))
    results = ranked(chunk(1, "src/legacy.py", "legacy.bind", role="deprecated", chunk_id="old"),
                     chunk(2, MAP, "werkzeug.routing.map.Map.bind_to_environ"),
                     chunk(3, "docs/x.rst", role="docs"),
                     chunk(4, "tests/test_routing.py", role="test", chunk_id="late-test"))
    candidates = ranked(chunk(1, MAP, "Map.bind"))
    m = evaluate_case(case, run_of(*results, candidates=candidates), MANIFEST)
    assert (m.first_relevant_rank, m.hit, m.reciprocal_rank) == (2, True, 0.5)
    assert m.candidate_first_relevant_rank == 1
    assert m.group_recall == 1.0 and m.missing_groups == ()
    assert m.forbidden_chunk_ids == ()  # the test is at rank 4, outside the cutoff
    assert m.deprecated_in_cutoff == ("old",)
    assert m.test_at_rank1 is False
    assert m.passed is True  # a deprecated chunk is reported, it does not fail the case


def test_evaluate_case_relevant_beyond_cutoff_is_a_miss_with_its_rank() -> None:
    results = ranked(chunk(1, "a.py"), chunk(2, "b.py"), chunk(3, MAP, "Map.bind"))
    m = evaluate_case(make_case(cutoff=2), run_of(*results), MANIFEST)
    assert (m.first_relevant_rank, m.hit, m.reciprocal_rank, m.group_recall) == (3, False, 0, 0)
    assert m.missing_groups == ("g1",) and m.passed is False


def test_forbidden_inside_cutoff_fails_a_case_with_full_recall() -> None:
    results = ranked(chunk(1, MAP, "Map.bind"), chunk(2, "tests/test_routing.py", role="test"))
    m = evaluate_case(make_case(forbidden=("tests/",)), run_of(*results), MANIFEST)
    assert m.group_recall == 1.0 and m.forbidden_chunk_ids == ("c2",) and m.passed is False


@pytest.mark.parametrize(("chunk_revision", "manifest_revision", "chunk_ids", "manifest_flag"), [
    (OTHER_REV, REV, ("c1",), False),
    (REV, OTHER_REV, (), True),
])
def test_revision_mismatch_fails_the_case(chunk_revision: str, manifest_revision: str,
                                          chunk_ids: tuple[str, ...], manifest_flag: bool) -> None:
    results = ranked(chunk(1, MAP, "Map.bind", revision=chunk_revision))
    m = evaluate_case(make_case(), run_of(*results), {"revision": manifest_revision})
    assert m.revision_mismatches == chunk_ids
    assert m.manifest_revision_mismatch is manifest_flag
    assert m.revision_mismatch is True and m.hit is True and m.passed is False


def test_test_at_rank1_only_for_cases_asking_for_an_implementation() -> None:
    results = ranked(chunk(1, "tests/test_routing.py", role="test_support"),
                     chunk(2, MAP, "Map.bind"))
    implementation = evaluate_case(make_case(), run_of(*results), MANIFEST)
    any_role = make_case(groups=(Group("g1", (Target(MAP, "Map.bind"),)),))
    assert implementation.test_at_rank1 is True and implementation.passed is True
    assert evaluate_case(any_role, run_of(*results), MANIFEST).test_at_rank1 is False


@pytest.mark.parametrize(("roles", "expected"), [
    (("production",), True),
    (("production", "generated"), True),
    (("production", "docs"), False),
    ((), False),  # no roles: any role is acceptable, so it does not ask for code only
])
def test_asks_for_implementation(roles: tuple[str, ...], expected: bool) -> None:
    case = make_case(groups=(Group("g1", (Target(MAP, "Map.bind", roles),)),))  # type: ignore[arg-type]
    assert asks_for_implementation(case) is expected


@pytest.mark.parametrize(("results", "manifest_revision", "passed"), [
    ((), REV, True),
    ((chunk(1, "docs/kafka.rst", role="docs"),), REV, False),
    ((), OTHER_REV, False),
])
def test_negative_cases_pass_only_when_empty_at_the_right_revision(
        results: tuple[RankedChunk, ...], manifest_revision: str, passed: bool) -> None:
    case = make_case(groups=(), query_class="negative")
    m = evaluate_case(case, run_of(*results), {"revision": manifest_revision})
    assert m.passed is passed
    assert (m.group_recall, m.hit, m.first_relevant_rank, m.reciprocal_rank) == (
        None, False, None, 0.0)


def _metrics(case_id: str, **changes: object) -> CaseMetrics:
    base = CaseMetrics(
        case_id=case_id, repo="werkzeug", query_class="behavior", split="heldout", cutoff=5,
        negative=False, asks_implementation=True, passed=True, hit=True,
        first_relevant_rank=1, candidate_first_relevant_rank=1, reciprocal_rank=1.0,
        group_recall=1.0, missing_groups=(), forbidden_chunk_ids=(), revision_mismatches=(),
        manifest_revision_mismatch=False, test_at_rank1=False, deprecated_in_cutoff=(),
        result_count=5)
    return replace(base, **changes)  # type: ignore[arg-type]


AGGREGATE_INPUT = [
    _metrics("a"),
    _metrics("b", first_relevant_rank=2, reciprocal_rank=0.5, test_at_rank1=True,
             deprecated_in_cutoff=("d1", "d2")),
    _metrics("c", hit=False, first_relevant_rank=None, reciprocal_rank=0.0, group_recall=0.5,
             passed=False, forbidden_chunk_ids=("f",), asks_implementation=False,
             query_class="how_to_use", repo="rich", split="tuning"),
    _metrics("n1", negative=True, asks_implementation=False, hit=False, reciprocal_rank=0.0,
             group_recall=None, first_relevant_rank=None, result_count=0,
             query_class="negative"),
    _metrics("n2", negative=True, asks_implementation=False, hit=False, reciprocal_rank=0.0,
             group_recall=None, first_relevant_rank=None, result_count=2, passed=False,
             manifest_revision_mismatch=True, query_class="negative"),
]


def test_aggregate_hand_computed_with_counts() -> None:
    s = aggregate(AGGREGATE_INPUT)
    assert s.cases == 5
    assert s.hit_at_cutoff == Measure(2 / 3, 3)
    assert s.mrr == Measure(0.5, 3)  # (1 + 0.5 + 0) / 3
    assert s.group_recall == Measure(2.5 / 3, 3)
    assert s.pass_rate == Measure(3 / 5, 5)
    assert s.forbidden_rate == Measure(1 / 5, 5)
    assert s.revision_mismatch_rate == Measure(1 / 5, 5)
    assert s.test_at_rank1_rate == Measure(0.5, 2)  # over the two implementation cases
    assert s.deprecated_in_cutoff == Measure(2, 5)  # a count of chunks
    assert s.negative_empty_rate == Measure(0.5, 2)


def test_aggregate_of_nothing_has_no_values() -> None:
    s = aggregate([])
    assert s.cases == 0
    assert all(s.measure(name).value in (None, 0.0) for name in METRIC_NAMES)
    assert s.hit_at_cutoff.value is None and s.hit_at_cutoff.n == 0


def test_slices_keep_the_documented_order_and_counts() -> None:
    by_class = metrics_by_class(AGGREGATE_INPUT)
    assert list(by_class) == ["behavior", "how_to_use", "negative"]
    assert [s.cases for s in by_class.values()] == [2, 1, 2]
    assert by_class["negative"].hit_at_cutoff.n == 0
    assert list(metrics_by_split(AGGREGATE_INPUT)) == ["tuning", "heldout"]
