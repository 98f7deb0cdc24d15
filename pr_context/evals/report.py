"""Scoring runs against cases, and the artifacts every evaluation writes.

``build_report`` pairs each run's entries with the cases and measures them; a report may
hold several named runs (a hybrid retriever and its baselines) over the same cases.
``write_report`` writes, into one directory:

- ``run.json``: per run its manifest, validity, and per case the raw and rewritten query,
  the candidates before re-ranking, the final ranked chunks with every field, and the
  case's metrics. It is itself a valid results file for recorded mode.
- ``report.json``: the aggregates, overall and per query class, repo and split, each
  with the number of cases behind it.
- ``report.md``: the same as Markdown tables, retrievers side by side, and the failing
  cases with where their first relevant result was and what came first.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pr_context.evals.cases import Case, Split
from pr_context.evals.errors import ResultsFileError
from pr_context.evals.markdown import render_markdown
from pr_context.evals.metrics import (
    CaseMetrics,
    SliceMetrics,
    aggregate,
    evaluate_case,
    metrics_by_class,
    metrics_by_repo,
    metrics_by_split,
)
from pr_context.evals.results import (
    CaseRun,
    Run,
    chunk_to_json,
    effective_manifest,
    manifest_problems,
)

__all__ = [
    "CaseEvaluation",
    "EvaluatedRun",
    "Report",
    "build_report",
    "evaluate_run",
    "report_json",
    "run_json",
    "slice_json",
    "write_report",
]

RUN_FILE = "run.json"
REPORT_FILE = "report.json"
MARKDOWN_FILE = "report.md"


@dataclass(frozen=True)
class CaseEvaluation:
    """One case, what the retriever returned for it, under which manifest, and the score."""

    case: Case
    run: CaseRun
    manifest: Mapping[str, object]
    metrics: CaseMetrics


@dataclass(frozen=True)
class EvaluatedRun:
    """A scored run. ``problems`` non-empty means invalid: it cannot pass a gate."""

    retriever: str
    manifest: Mapping[str, object] | None
    problems: tuple[str, ...]
    cases: tuple[CaseEvaluation, ...]

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def metrics(self) -> tuple[CaseMetrics, ...]:
        return tuple(c.metrics for c in self.cases)

    def overall(self) -> SliceMetrics:
        return aggregate(self.metrics)

    def by_class(self) -> dict[str, SliceMetrics]:
        return metrics_by_class(self.metrics)

    def by_repo(self) -> dict[str, SliceMetrics]:
        return metrics_by_repo(self.metrics)

    def by_split(self) -> dict[str, SliceMetrics]:
        return metrics_by_split(self.metrics)


@dataclass(frozen=True)
class Report:
    """Every run evaluated over the same cases; ``split`` is the selection, None for all."""

    runs: tuple[EvaluatedRun, ...]
    split: Split | None = None


def evaluate_run(cases: Sequence[Case], run: Run) -> EvaluatedRun:
    """Score ``run`` on ``cases``; entries for other cases are ignored.

    An incomplete manifest (the run's or a case's) does not stop scoring: it is recorded
    in ``problems`` and makes the run invalid. Missing metadata is never filled in.

    :raises ResultsFileError: the run has no entry for a case, or one recorded for
        another query than the case's.
    """
    entries = {c.case_id: c for c in run.cases}
    evaluations = tuple(_evaluate(case, run, entries) for case in cases)
    return EvaluatedRun(retriever=run.retriever, manifest=run.manifest,
                        problems=_run_problems(run, evaluations), cases=evaluations)


def _evaluate(case: Case, run: Run, entries: Mapping[str, CaseRun]) -> CaseEvaluation:
    entry = entries.get(case.id)
    if entry is None:
        raise ResultsFileError(f"run {run.retriever!r} has no results for case {case.id}: "
                               "a results file must cover every case evaluated")
    if entry.query != case.query:
        raise ResultsFileError(f"run {run.retriever!r}, case {case.id}: results were recorded "
                               f"for query {entry.query!r}, but the case asks {case.query!r}")
    manifest = effective_manifest(run, entry)
    return CaseEvaluation(case=case, run=entry, manifest=manifest,
                          metrics=evaluate_case(case, entry, manifest))


def _run_problems(run: Run, evaluations: Sequence[CaseEvaluation]) -> tuple[str, ...]:
    problems = ([f"run manifest: {p}" for p in manifest_problems(run.manifest)]
                if run.manifest is not None else [])
    for evaluation in evaluations:
        problems += [f"case {evaluation.case.id}: {p}"
                     for p in manifest_problems(evaluation.manifest)]
    return tuple(dict.fromkeys(problems))


def build_report(cases: Sequence[Case], runs: Sequence[Run], split: Split | None = None
                 ) -> Report:
    """Evaluate every run on ``cases`` (already selected to ``split``)."""
    return Report(runs=tuple(evaluate_run(cases, r) for r in runs), split=split)


def slice_json(metrics: SliceMetrics) -> dict[str, object]:
    """``{"cases": n, metric: {"value": v, "n": n}, ...}``."""
    return {
        "cases": metrics.cases,
        **{f.name: dataclasses.asdict(getattr(metrics, f.name))
           for f in dataclasses.fields(metrics) if f.name != "cases"},
    }


def _slices_json(slices: Mapping[str, SliceMetrics]) -> dict[str, object]:
    return {key: slice_json(value) for key, value in slices.items()}


def report_json(report: Report) -> dict[str, object]:
    """The aggregates of every run, overall and per class, repo and split."""
    return {
        "split": report.split,
        "runs": [
            {"retriever": r.retriever, "valid": r.valid, "problems": list(r.problems),
             "overall": slice_json(r.overall()), "by_class": _slices_json(r.by_class()),
             "by_repo": _slices_json(r.by_repo()), "by_split": _slices_json(r.by_split())}
            for r in report.runs
        ],
    }


def run_json(report: Report) -> dict[str, object]:
    """Everything each retriever returned, per case, with the case's metrics."""
    return {"runs": [_evaluated_run_json(r) for r in report.runs]}


def _evaluated_run_json(run: EvaluatedRun) -> dict[str, object]:
    data: dict[str, object] = {"retriever": run.retriever, "valid": run.valid,
                               "problems": list(run.problems)}
    if run.manifest is not None:
        data["manifest"] = dict(run.manifest)
    data["cases"] = [_case_json(c) for c in run.cases]
    return data


def _case_json(evaluation: CaseEvaluation) -> dict[str, object]:
    case, entry = evaluation.case, evaluation.run
    metrics = dataclasses.asdict(evaluation.metrics)
    for key in ("case_id", "repo", "query_class", "split", "cutoff"):
        del metrics[key]  # already on the case
    return {
        "id": case.id, "query": entry.query, "rewritten_query": entry.rewritten_query,
        "query_class": case.query_class, "repo": case.repo, "split": case.split,
        "revision": case.revision, "cutoff": case.cutoff, "path_context": case.path_context,
        "manifest": dict(evaluation.manifest), "message": entry.message,
        "candidates": [chunk_to_json(c) for c in entry.candidates],
        "results": [chunk_to_json(c) for c in entry.results],
        "metrics": metrics,
    }


def write_report(report: Report, out_dir: Path) -> None:
    """Write run.json, report.json and report.md into ``out_dir`` (created if needed)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_json(out_dir / RUN_FILE, run_json(report))
    _write_json(out_dir / REPORT_FILE, report_json(report))
    (out_dir / MARKDOWN_FILE).write_text(render_markdown(report), encoding="utf-8")


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
