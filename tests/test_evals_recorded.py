"""Recorded mode end to end through the CLI, input validation, and live mode with a fake."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from pr_context.cli import cli
from pr_context.evals.cases import SPLITS, load_cases
from pr_context.evals.corpora import load_corpora, parse_corpora
from pr_context.evals.errors import CaseFileError, CorpusError, ResultsFileError
from pr_context.evals.report import report_json
from pr_context.evals.results import (
    RankedChunk,
    SearchRun,
    chunk_to_json,
    load_runs,
    parse_runs,
)
from pr_context.evals.runner import DIAGNOSTIC_DEPTH, index_path, run_live, run_recorded
from pr_context.git import list_files, open_repository, read_blob
from pr_context.models import Sha
from tests.conftest import GitRepo

ROOT = Path(__file__).resolve().parent.parent
EVALS = ROOT / "evals"
CASES = EVALS / "recorded" / "example-cases.jsonl"
RESULTS = EVALS / "recorded" / "example-results.json"
CORPORA = EVALS / "corpora.yml"
WERKZEUG = "1debd354c06577fc8a9731f01c288f2fcfc6d2af"


def run_eval(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["eval", "--corpora", str(CORPORA), *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def test_example_passes_its_gate_through_the_cli(tmp_path: Path) -> None:
    code, out, err = run_eval("--cases", CASES, "--recorded", RESULTS, "--out", tmp_path,
                              "--gate", EVALS / "gate-example.yml")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "hybrid: 9/11 cases pass; hit@cutoff 0.889 (n=9), MRR@cutoff 0.778 (n=9), "
        "negative empty rate 0.500 (n=2); valid",
        "bm25: 4/11 cases pass; hit@cutoff 0.889 (n=9), MRR@cutoff 0.648 (n=9), "
        "negative empty rate 0.000 (n=2); valid",
        f"wrote {tmp_path / 'report.md'}, report.json, run.json",
        f"gate {EVALS / 'gate-example.yml'}: passed",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "report.md", "run.json"]


def test_example_artifacts_hold_aggregates_with_counts_and_every_chunk(tmp_path: Path) -> None:
    run_recorded(CASES, RESULTS, tmp_path, CORPORA)
    report = json.loads((tmp_path / "report.json").read_text())
    hybrid, bm25 = report["runs"]
    assert hybrid["by_split"]["heldout"]["pass_rate"] == {"value": 1.0, "n": 7}
    assert hybrid["by_split"]["heldout"]["mrr"] == {"value": pytest.approx(5.5 / 6), "n": 6}
    assert bm25["by_class"]["behavior"]["forbidden_rate"] == {"value": 0.75, "n": 4}
    assert bm25["overall"]["test_at_rank1_rate"] == {"value": pytest.approx(4 / 7), "n": 7}
    assert hybrid["by_repo"]["werkzeug"]["cases"] == 6
    run = json.loads((tmp_path / "run.json").read_text())
    case = run["runs"][0]["cases"][4]
    assert case["id"] == "werkzeug-005" and case["manifest"]["revision"] == WERKZEUG
    assert case["metrics"]["first_relevant_rank"] == 6
    assert case["metrics"]["candidate_first_relevant_rank"] == 1
    assert case["candidates"][0]["path"] == "tests/middleware/test_proxy_fix.py"
    assert set(case["results"][0]) == {"rank", "chunk_id", "path", "symbol", "role",
                                       "start_line", "end_line", "revision", "score",
                                       "components"}


def test_report_md_has_every_table_with_counts_and_the_failing_cases(tmp_path: Path) -> None:
    run_recorded(CASES, RESULTS, tmp_path, CORPORA)
    text = (tmp_path / "report.md").read_text()
    for heading in ("## Overall", "## Per query class", "## Per repository", "## Per split",
                    "## Failing cases: hybrid (2 of 11)", "## Failing cases: bm25 (7 of 11)"):
        assert heading in text
    assert "| hit@cutoff | 0.889 (n=9) | 0.889 (n=9) |" in text
    assert "| heldout | 7 | 1 | 1.000 | 0.917 | 1.000 | 1.000 | 0.000 |" in text
    assert re.search(r"\| werkzeug-005 \| test_lookup \| tuning \| .* \| 6 \(cutoff 5\) \| 1 \| "
                     r"g1 \| src/werkzeug/middleware/proxy_fix.py:126-183 ProxyFix.__call__ "
                     r"\(production\) \| - \|", text)
    assert "forbidden: rank 1 tests/test_routing.py, rank 2 tests/test_routing.py" in text


def test_run_json_is_a_results_file_that_scores_the_same(tmp_path: Path) -> None:
    first = run_recorded(CASES, RESULTS, tmp_path / "one", CORPORA)
    again = run_recorded(CASES, tmp_path / "one" / "run.json", tmp_path / "two", CORPORA)
    assert report_json(again) == report_json(first)


def test_chunks_round_trip_through_json_with_their_contained_definitions() -> None:
    chunk = {"rank": 1, "chunk_id": "w1", "path": "src/a.py", "symbol": None, "role": "production",
             "start_line": 1, "end_line": 400, "revision": WERKZEUG, "score": 0.5,
             "components": {"embedding": 0.5}, "contains": ["a.f", "a.C.g"]}
    run = parse_runs({"retriever": "naive-windows", "cases": [
        {"id": "x", "query": "q", "results": [chunk]}]})[0]
    assert run.cases[0].results[0].contains == ("a.f", "a.C.g")
    assert chunk_to_json(run.cases[0].results[0]) == chunk
    assert "contains" not in chunk_to_json(replace(run.cases[0].results[0], contains=()))


def test_split_selects_the_cases_evaluated(tmp_path: Path) -> None:
    code, out, _ = run_eval("--cases", CASES, "--recorded", RESULTS, "--out", tmp_path,
                            "--split", "tuning")
    assert code == 0 and out.startswith("hybrid: 2/4 cases pass")
    assert json.loads((tmp_path / "report.json").read_text())["split"] == "tuning"


def test_failing_gate_prints_one_failure_per_line_and_exits_1(tmp_path: Path) -> None:
    gate = tmp_path / "gate.yml"
    gate.write_text((EVALS / "gate.yml").read_text().replace("retriever: hybrid",
                                                             "retriever: bm25"))
    code, out, err = run_eval("--cases", CASES, "--recorded", RESULTS, "--out", tmp_path / "o",
                              "--gate", gate)
    assert code == 1
    assert out.splitlines()[3:] == [
        f"gate {gate}: 7 failure(s):",
        "hit_at_cutoff 0.833 < min 0.900 (heldout, n=6)",
        "mrr 0.556 < min 0.750 (heldout, n=6)",
        "negative_empty_rate 0.000 < min 0.900 (heldout, n=1)",
        "forbidden_rate 0.429 > max 0.000 (heldout, n=7)",
        "test_at_rank1_rate 0.600 > max 0.050 (heldout, n=5)",
        "hit_at_cutoff[behavior] 0.667 < min 0.800 (heldout, n=3)",
        "forbidden sources inside the cutoff: werkzeug-001 (34b1d5e84ebb11a4, 3b0cc5dce48b9916), "
        "werkzeug-004 (0be8af6492e30c05, 78f2c100039a8e8a), packaging-001 (cf7863f8514c48eb)",
    ]
    assert err == f"pr-context: error: gate {gate} failed with 7 failure(s)\n"


def test_incomplete_manifest_is_reported_and_fails_the_gate(tmp_path: Path) -> None:
    data = json.loads(RESULTS.read_text())
    del data["runs"][0]["cases"][2]["manifest"]["build_id"]
    results = tmp_path / "results.json"
    results.write_text(json.dumps(data))
    code, out, _ = run_eval("--cases", CASES, "--recorded", results, "--out", tmp_path / "o",
                            "--gate", EVALS / "gate-example.yml")
    assert code == 1
    assert "invalid run 'hybrid': case werkzeug-003: manifest lacks build_id" in out.splitlines()
    assert "INVALID (1 problem(s))" in out.splitlines()[0]
    assert "**Run `hybrid` is INVALID**" in (tmp_path / "o" / "report.md").read_text()
    code, _, err = run_eval("--cases", CASES, "--recorded", results, "--out", tmp_path / "p")
    assert code == 0 and "warning: run 'hybrid' is invalid" in err


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d["runs"][0]["cases"].pop(3), "run 'hybrid' has no results for case werkzeug-004"),
    (lambda d: d["runs"][1]["cases"][0].update(id="werkzeug-999"),
     "run 'bm25' has results for cases the case file does not define: werkzeug-999"),
    (lambda d: d["runs"][0]["cases"][0].update(query="another question"),
     "results were recorded for query 'another question'"),
    (lambda d: d["runs"][0]["cases"][0]["results"][1].update(rank=3),
     "ranks must be 1, 2, 3, ... in list order"),
    (lambda d: d["runs"][0]["cases"][0]["results"][0].pop("revision"),
     "missing key(s) ['revision']"),
    (lambda d: d["runs"][0]["cases"][0]["results"][0].update(start_line=0),
     "1 <= start_line <= end_line"),
    (lambda d: d["runs"][0]["cases"][0].update(ranked=[]), "unknown key(s) ['ranked']"),
    (lambda d: d["runs"][1].update(retriever="hybrid"), "retriever names must be unique"),
])
def test_invalid_results_files_exit_2(tmp_path: Path, edit: Callable[[dict[str, Any]], object],
                                      message: str) -> None:
    data = json.loads(RESULTS.read_text())
    edit(data)
    results = tmp_path / "results.json"
    results.write_text(json.dumps(data))
    with pytest.raises(ResultsFileError, match=re.escape(message)):
        run_recorded(CASES, results, tmp_path / "o", CORPORA)
    code, _, err = run_eval("--cases", CASES, "--recorded", results, "--out", tmp_path / "o")
    assert code == 2 and err.startswith("pr-context: error: ") and message in err


def test_results_file_that_is_not_json_exits_2(tmp_path: Path) -> None:
    broken = tmp_path / "results.json"
    broken.write_text("{")
    code, _, err = run_eval("--cases", CASES, "--recorded", broken, "--out", tmp_path / "o")
    assert code == 2 and f"{broken}: invalid JSON" in err


VALID_CASE = json.loads(CASES.read_text().splitlines()[0])


@pytest.mark.parametrize(("changes", "message"), [
    ({"query_class": "lookup"}, "query_class must be one of identifier, behavior"),
    ({"split": "train"}, "split must be one of tuning, heldout"),
    ({"cutoff": 0}, "cutoff must be an integer >= 1"),
    ({"cutoff": True}, "cutoff must be an integer >= 1"),
    ({"query_class": "negative"}, "query_class negative and empty groups go together"),
    ({"groups": []}, "query_class negative and empty groups go together"),
    ({"revision": "f" * 40},
     f"revision {'f' * 40} is not the revision corpora.yml pins for werkzeug ({WERKZEUG})"),
    ({"revision": "HEAD"}, "revision must be a full 40-hex commit SHA"),
    ({"repo": "no-such-corpus"}, "repo 'no-such-corpus' is not in corpora.yml"),
    ({"cutof": 5}, "case has unknown key(s) cutof"),
    ({"rationale": None}, "rationale must be a non-empty string"),
    ({"forbidden": ["src/werkzeug/routing/"]},
     "target src/werkzeug/routing/map.py is under forbidden prefix 'src/werkzeug/routing/'"),
    ({"groups": [{"anyOf": []}]}, "group 1: anyOf must be a non-empty list"),
    ({"groups": [{"anyof": [{"file": "a.py"}]}]}, "group 1 lacks anyOf"),
    ({"groups": [{"anyOf": [{"file": "a.py", "roles": ["implementation"]}]}]},
     "group 1 target role must be one of production, test"),
    ({"groups": [{"anyOf": [{"file": "../a.py"}]}]},
     "group 1 target file must be a normalised repository-relative path with '/', got '../a.py'"),
    ({"groups": [{"anyOf": [{"path": "a.py"}]}]}, "group 1 target lacks file"),
    ({"path_context": "/abs/x.py"}, "path_context must be a normalised repository-relative"),
    ({"path_context": "src//x.py"}, "path_context must be a normalised repository-relative"),
])
def test_invalid_cases_name_file_line_and_case(tmp_path: Path, changes: dict[str, object],
                                               message: str) -> None:
    cases = tmp_path / "cases.jsonl"
    lines = [json.dumps({**VALID_CASE, "id": "ok-1"}), "",
             json.dumps({**VALID_CASE, "id": "bad-1", **changes})]
    cases.write_text("\n".join(lines) + "\n")
    with pytest.raises(CaseFileError, match=re.escape(f"{cases}:3: case bad-1: {message}")):
        load_cases(cases, load_corpora(CORPORA))


@pytest.mark.parametrize(("lines", "message"), [
    ([json.dumps(VALID_CASE), json.dumps(VALID_CASE)],
     ":2: case werkzeug-001: duplicate id (first on line 1)"),
    (["{not json"], ":1: invalid JSON"),
    (["[1, 2]"], ":1: expected a JSON object, got list"),
    ([json.dumps({**VALID_CASE, "id": "has space"})], ":1: id must be a string of letters"),
    ([""], ": no cases"),
])
def test_invalid_case_files(tmp_path: Path, lines: list[str], message: str) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text("\n".join(lines) + "\n")
    with pytest.raises(CaseFileError, match=re.escape(message)):
        load_cases(cases, load_corpora(CORPORA))


def test_invalid_case_file_exits_2_through_the_cli(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({**VALID_CASE, "split": "train"}) + "\n")
    code, out, err = run_eval("--cases", cases, "--recorded", RESULTS, "--out", tmp_path / "o")
    assert (code, out) == (2, "")
    assert err == (f"pr-context: error: {cases}:1: case werkzeug-001: split must be one of "
                   "tuning, heldout; got 'train'\n")


def test_cli_split_choices_are_the_case_splits() -> None:
    command = cli.commands["eval"]
    split = next(p for p in command.params if p.name == "split")
    assert isinstance(split.type, click.Choice) and tuple(split.type.choices) == SPLITS
    assert command.help and all(p.help for p in command.params if isinstance(p, click.Option))


# Live mode: a fake retriever over a real git repository, through the Retriever seam.

class GrepRetriever:
    """Ranks the files at the revision by how many query words they contain."""

    def __init__(self, manifest_extra: dict[str, object] | None = None) -> None:
        self.calls: list[tuple[Path, str, Path, str, int, str | None]] = []
        self.manifest_extra = manifest_extra or {}

    def search(self, repo: Path, revision: str, db: Path, query: str, k: int,
               path_context: str | None) -> SearchRun:
        self.calls.append((repo, revision, db, query, k, path_context))
        git_repo = open_repository(repo)
        words = set(query.lower().split())
        scored = []
        for entry in list_files(git_repo, Sha(revision)):
            text = read_blob(git_repo, entry.blob_sha).decode()
            score = sum(1 for w in words if w in text.lower())
            if score:
                scored.append((-score, entry.path, text.count("\n")))
        chunks = [RankedChunk(rank=i, chunk_id=f"{path}#1", path=path, symbol=None,
                              role="test" if path.startswith("tests/") else "production",
                              start_line=1, end_line=max(lines, 1), revision=revision,
                              score=float(-neg))
                  for i, (neg, path, lines) in enumerate(sorted(scored)[:k], start=1)]
        manifest = {"revision": revision, "build_id": f"fake-{revision[:7]}",
                    "parser_version": "fake", "embedding_model": "none",
                    "path_policy": "{}", **self.manifest_extra}
        return SearchRun(manifest=manifest, rewritten_query=None, candidates=chunks,
                         results=chunks, message=None if chunks else "nothing relevant")


def live_setup(tmp_path: Path, make_repo: Callable[..., GitRepo]) -> tuple[Path, Path, str]:
    repo = make_repo({"src/shop/cart.py": "def add_item(cart, item):\n    cart.append(item)\n",
                      "tests/test_cart.py": "def test_add_item():\n    add_item([], 1)\n"})
    head = repo.git("rev-parse", "HEAD").strip()
    corpora = tmp_path / "corpora.yml"
    corpora.write_text(f"shop: {{git: {repo.path.name}}}\n")
    case: dict[str, object] = {
        "query_class": "behavior", "repo": "shop", "revision": head, "path_context": None,
        "forbidden": ["tests/"], "cutoff": 1, "split": "heldout", "rationale": "r"}
    cases = tmp_path / "cases.jsonl"
    entries: list[dict[str, object]] = [
        {"id": "cart-1", "query": "append item to cart",
         "groups": [{"anyOf": [{"file": "src/shop/cart.py", "roles": ["production"]}]}]},
        {"id": "cart-2", "query": "kafka offsets", "query_class": "negative", "groups": []},
    ]
    cases.write_text("\n".join(json.dumps({**case, **c}) for c in entries) + "\n")
    return cases, corpora, head


def test_run_live_searches_each_case_with_each_retriever(
        tmp_path: Path, make_repo: Callable[..., GitRepo]) -> None:
    cases, corpora, head = live_setup(tmp_path, make_repo)
    hybrid, baseline = GrepRetriever(), GrepRetriever()
    cache = tmp_path / "cache"
    report = run_live(cases, tmp_path / "out", {"hybrid": hybrid, "bm25": baseline}, cache,
                      corpora_path=corpora)
    assert [r.retriever for r in report.runs] == ["hybrid", "bm25"]
    assert all(r.valid for r in report.runs)
    assert [(c.case.id, c.metrics.passed) for c in report.runs[0].cases] == [
        ("cart-1", True), ("cart-2", True)]
    repo_path, revision, db, query, k, context = hybrid.calls[0]
    assert (revision, query, k, context) == (head, "append item to cart", DIAGNOSTIC_DEPTH, None)
    assert repo_path == (tmp_path / "repo0").resolve()
    assert db == index_path(cache, "hybrid", "shop") == cache / "indexes" / "hybrid" / "shop.duckdb"
    assert baseline.calls[0][2] == cache / "indexes" / "bm25" / "shop.duckdb"
    runs = load_runs(tmp_path / "out" / "run.json")  # the artifact records every manifest
    assert runs[0].cases[0].manifest == {"revision": head, "build_id": f"fake-{head[:7]}",
                                         "parser_version": "fake", "embedding_model": "none",
                                         "path_policy": "{}"}


def test_run_live_reports_a_retriever_that_omits_manifest_fields(
        tmp_path: Path, make_repo: Callable[..., GitRepo]) -> None:
    cases, corpora, _ = live_setup(tmp_path, make_repo)
    report = run_live(cases, tmp_path / "out", {"hybrid": GrepRetriever({"build_id": ""})},
                      tmp_path / "cache", corpora_path=corpora, split="heldout")
    assert report.runs[0].problems == ("case cart-1: manifest lacks build_id",
                                       "case cart-2: manifest lacks build_id")


def test_run_live_refuses_a_case_revision_the_repository_lacks(
        tmp_path: Path, make_repo: Callable[..., GitRepo]) -> None:
    cases, corpora, head = live_setup(tmp_path, make_repo)
    cases.write_text(cases.read_text().replace(head, "0" * 40))
    with pytest.raises(CorpusError, match=f"case cart-1: revision {'0' * 40} is not a commit"):
        run_live(cases, tmp_path / "out", {"hybrid": GrepRetriever()}, tmp_path / "cache",
                 corpora_path=corpora)


def test_git_corpus_cases_are_not_checked_against_a_pinned_revision(tmp_path: Path) -> None:
    corpora = parse_corpora({"self": {"git": "."}}, tmp_path)
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({**VALID_CASE, "repo": "self", "revision": "e" * 40}) + "\n")
    assert load_cases(cases, corpora)[0].revision == "e" * 40


def test_the_shipped_gold_cases_load_as_one_directory() -> None:
    cases = load_cases(EVALS / "cases", load_corpora(EVALS / "corpora.yml"))
    assert len(cases) >= 60
    assert {c.split for c in cases} == {"tuning", "heldout"}
    assert {c.query_class for c in cases} == {
        "identifier", "behavior", "stack_trace", "how_to_use", "test_lookup", "negative"}
    assert len({c.repo for c in cases}) >= 3


def test_a_case_directory_rejects_ids_repeated_across_files(tmp_path: Path) -> None:
    source = (EVALS / "recorded" / "example-cases.jsonl").read_text().splitlines()[0]
    (tmp_path / "a.jsonl").write_text(source + "\n")
    (tmp_path / "b.jsonl").write_text(source + "\n")
    with pytest.raises(CaseFileError, match="duplicate case ids across files"):
        load_cases(tmp_path, load_corpora(EVALS / "corpora.yml"))


def test_ci_recorded_heldout_run_passes_the_regression_gate(tmp_path: Path) -> None:
    outcome = CliRunner().invoke(cli, [
        "eval", "--cases", str(EVALS / "cases"), "--split", "heldout",
        "--recorded", str(EVALS / "recorded" / "live-heldout.json"),
        "--out", str(tmp_path / "out"), "--gate", str(EVALS / "gate-regression.yml")])
    assert outcome.exit_code == 0, outcome.output
    assert "gate" in outcome.stdout and "passed" in outcome.stdout
