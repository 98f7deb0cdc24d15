"""The gate: what fails it, what never does, and how gate files are validated."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pr_context.evals.cases import Case, Group, Target
from pr_context.evals.errors import GateFileError
from pr_context.evals.gate import Gate, evaluate_gate, load_gate, parse_gate
from pr_context.evals.report import Report, build_report
from pr_context.evals.results import CaseRun, RankedChunk, Run
from pr_context.models import Sha

REPO_ROOT = Path(__file__).resolve().parent.parent
REV = Sha("a" * 40)
MANIFEST: dict[str, object] = {"revision": REV, "build_id": "b1", "parser_version": "p1",
            "embedding_model": "m1", "path_policy": "{}"}
MAP = "src/werkzeug/routing/map.py"


def chunk(path: str, symbol: str | None = None, role: str = "production",
          revision: str = REV) -> RankedChunk:
    return RankedChunk(rank=0, chunk_id=f"{path}:{symbol}", path=path, symbol=symbol,
                       role=role, start_line=1, end_line=9, revision=revision, score=0.0)


def make_case(case_id: str, groups: tuple[Group, ...], split: str = "heldout",
              query_class: str = "behavior") -> Case:
    return Case(id=case_id, query=f"query {case_id}", query_class=query_class,  # type: ignore[arg-type]
                repo="werkzeug", revision=REV, groups=groups, cutoff=3,
                split=split, rationale="r", forbidden=("tests/",))  # type: ignore[arg-type]


CASES = (
    make_case("bind", (Group("g1", (Target(MAP, "Map.bind"),
                                    Target(MAP, "Map.bind_to_environ"))),)),
    make_case("build", (Group("g1", (Target(MAP, "MapAdapter.build"),)),), split="tuning",
              query_class="stack_trace"),
    make_case("kafka", (), query_class="negative"),
)
GOOD = {
    "bind": [chunk(MAP, "werkzeug.routing.map.Map.bind"),
             chunk(MAP, "werkzeug.routing.map.Map.bind_to_environ"), chunk("docs/routing.rst")],
    "build": [chunk(MAP, "werkzeug.routing.map.MapAdapter.build")],
    "kafka": [],
}


def case_run(case_id: str, results: list[RankedChunk],
             manifest: dict[str, object] | None = None) -> CaseRun:
    numbered = tuple(RankedChunk(**{**c.__dict__, "rank": i}) for i, c in enumerate(results, 1))
    return CaseRun(case_id=case_id, query=f"query {case_id}", rewritten_query=None,
                   candidates=numbered, results=numbered, manifest=manifest)


def run_of(*case_ids: str) -> Run:
    return Run("hybrid", MANIFEST, tuple(case_run(i, GOOD[i]) for i in case_ids))


def report_of(results: dict[str, list[RankedChunk]], manifest: dict[str, object] | None = None,
              name: str = "hybrid") -> Report:
    run = Run(retriever=name, manifest=MANIFEST if manifest is None else manifest,
              cases=tuple(case_run(i, r) for i, r in results.items()))
    return build_report(CASES, [run])


STRICT = Gate(split="heldout", min={"hit_at_cutoff": 1.0, "mrr": 0.75,
                                    "negative_empty_rate": 1.0},
              per_class_min={"hit_at_cutoff": 1.0},
              max={"forbidden_rate": 0.0, "test_at_rank1_rate": 0.0, "deprecated_in_cutoff": 0})


def test_gate_passes_a_clean_run() -> None:
    assert evaluate_gate(report_of(GOOD), STRICT).failures == ()
    assert evaluate_gate(report_of(GOOD), STRICT).passed is True


def test_rank_movement_between_acceptable_chunks_never_fails() -> None:
    swapped = {**GOOD, "bind": [GOOD["bind"][1], GOOD["bind"][0], GOOD["bind"][2]]}
    first, second = report_of(GOOD), report_of(swapped)
    top = [r.runs[0].cases[0].run.results[0].symbol for r in (first, second)]
    assert top == ["werkzeug.routing.map.Map.bind", "werkzeug.routing.map.Map.bind_to_environ"]
    assert evaluate_gate(first, STRICT).passed and evaluate_gate(second, STRICT).passed
    assert first.runs[0].overall() == second.runs[0].overall()


@pytest.mark.parametrize("missing", ["build_id", "revision", "parser_version",
                                     "embedding_model", "path_policy"])
def test_incomplete_manifest_invalidates_the_run_and_fails_the_gate(missing: str) -> None:
    manifest = {k: v for k, v in MANIFEST.items() if k != missing}
    result = evaluate_gate(report_of(GOOD, manifest), Gate())
    assert result.passed is False
    assert f"invalid run 'hybrid': run manifest: manifest lacks {missing}" in result.failures


def test_a_case_manifest_replaces_the_run_manifest_and_is_never_completed_from_it() -> None:
    run = Run(retriever="hybrid", manifest=MANIFEST, cases=(
        case_run("bind", GOOD["bind"], manifest={"revision": REV, "build_id": "b2"}),
        case_run("build", GOOD["build"]), case_run("kafka", [])))
    report = build_report(CASES, [run])
    assert report.runs[0].valid is False
    assert evaluate_gate(report, Gate()).failures == (
        "invalid run 'hybrid': case bind: manifest lacks parser_version, embedding_model, "
        "path_policy",)


def test_revision_mismatch_fails_whatever_the_thresholds() -> None:
    stale = {**GOOD, "bind": [chunk(MAP, "Map.bind", revision="b" * 40)]}
    result = evaluate_gate(report_of(stale), Gate())
    assert result.failures == ("revision integrity broken: case bind: chunks from another "
                               "revision inside the cutoff: src/werkzeug/routing/map.py:Map.bind",)
    other_index = evaluate_gate(report_of(GOOD, {**MANIFEST, "revision": "c" * 40}), Gate())
    assert "revision integrity broken: case bind: the index reflects another revision " \
           "than the case's" in other_index.failures


def test_forbidden_source_fails_by_default_and_can_be_tolerated_explicitly() -> None:
    leaky = {**GOOD, "bind": [*GOOD["bind"][:2], chunk("tests/test_routing.py", role="test")]}
    result = evaluate_gate(report_of(leaky), parse_gate({"split": "heldout"}))
    assert result.failures == (
        "forbidden_rate 0.500 > max 0.000 (heldout, n=2)",
        "forbidden sources inside the cutoff: bind (tests/test_routing.py:None)",
    )
    tolerant = parse_gate({"split": "heldout", "max": {"forbidden_rate": 0.5}})
    assert evaluate_gate(report_of(leaky), tolerant).passed


def test_threshold_failures_name_metric_slice_and_count() -> None:
    missed = {**GOOD, "bind": [chunk("docs/routing.rst"), chunk("src/x.py")], "kafka": [
        chunk("docs/kafka.rst")]}
    assert evaluate_gate(report_of(missed), STRICT).failures == (
        "hit_at_cutoff 0.000 < min 1.000 (heldout, n=1)",
        "mrr 0.000 < min 0.750 (heldout, n=1)",
        "negative_empty_rate 0.000 < min 1.000 (heldout, n=1)",
        "hit_at_cutoff[behavior] 0.000 < min 1.000 (heldout, n=1)",
    )


def test_only_the_gated_split_counts() -> None:
    tuning_miss = {**GOOD, "build": [chunk("src/x.py")]}
    assert evaluate_gate(report_of(tuning_miss), STRICT).passed
    all_splits = Gate(min={"hit_at_cutoff": 1.0})
    assert evaluate_gate(report_of(tuning_miss), all_splits).failures == (
        "hit_at_cutoff 0.500 < min 1.000 (all splits, n=2)",)


def test_min_on_nothing_to_measure_fails_max_passes_per_class_skips() -> None:
    positives_only = build_report(CASES[:1], [run_of("bind")])
    gate = Gate(min={"negative_empty_rate": 0.9}, max={"test_at_rank1_rate": 0.0},
                per_class_min={"negative_empty_rate": 0.9})
    assert evaluate_gate(positives_only, gate).failures == (
        "negative_empty_rate: no cases to measure, needs min 0.900 (all splits, n=0)",)


def test_gate_picks_the_named_retriever_or_the_first_run() -> None:
    baseline = Run("bm25", MANIFEST, tuple(case_run(i, [chunk("src/x.py")]) for i in GOOD))
    hybrid = Run("hybrid", MANIFEST, tuple(case_run(i, r) for i, r in GOOD.items()))
    report = build_report(CASES, [hybrid, baseline])
    assert evaluate_gate(report, STRICT).passed
    assert not evaluate_gate(report, Gate(retriever="bm25", min={"hit_at_cutoff": 1.0})).passed
    assert evaluate_gate(report, Gate(retriever="dense")).failures == (
        "the report has no run for retriever 'dense' (runs: hybrid, bm25)",)


def test_no_cases_in_the_gated_split_fails() -> None:
    only_tuning = build_report(CASES[1:2], [run_of("build")])
    assert evaluate_gate(only_tuning, Gate(split="heldout")).failures == (
        "no heldout cases were evaluated for run 'hybrid'",)


@pytest.mark.parametrize(("data", "message"), [
    ([], "expected a mapping"),
    ({"mins": {}}, "unknown key(s) mins"),
    ({"split": "test"}, "split must be one of tuning, heldout"),
    ({"min": {"hit_at_5": 0.9}}, "unknown metric 'hit_at_5'"),
    ({"min": {"mrr": "high"}}, "min.mrr must be a number"),
    ({"min": {"mrr": 1.5}}, "must be a rate in [0, 1]"),
    ({"max": {"revision_mismatch_rate": 0.1}}, "revision_mismatch_rate can only be 0"),
    ({"per_class_min": ["hit_at_cutoff"]}, "must map metric names to numbers"),
])
def test_invalid_gate_files_are_refused(data: object, message: str) -> None:
    with pytest.raises(GateFileError, match=re.escape(message)):
        parse_gate(data, "gate.yml")


def test_deprecated_count_threshold_is_not_a_rate() -> None:
    assert parse_gate({"max": {"deprecated_in_cutoff": 3}}).max["deprecated_in_cutoff"] == 3.0


@pytest.mark.parametrize("name", ["gate.yml", "gate-example.yml"])
def test_shipped_gate_files_are_valid(name: str) -> None:
    gate = load_gate(REPO_ROOT / "evals" / name)
    assert gate.split == "heldout" and gate.retriever == "hybrid"
    assert gate.max["forbidden_rate"] == 0.0 and gate.min["hit_at_cutoff"] == 0.9
