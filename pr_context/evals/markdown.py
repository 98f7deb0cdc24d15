"""``report.md``: the evaluation as Markdown tables, retrievers side by side.

Pure: takes a Report, returns text. Every table carries case counts, because a mean over
three cases and a mean over three hundred read the same otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from pr_context.evals.metrics import METRIC_NAMES, CaseMetrics, Measure, SliceMetrics
from pr_context.evals.results import REQUIRED_MANIFEST_FIELDS, RankedChunk

if TYPE_CHECKING:
    from pr_context.evals.report import CaseEvaluation, EvaluatedRun, Report

__all__ = ["render_markdown", "summary_lines"]

METRIC_LABELS = {
    "hit_at_cutoff": "hit@cutoff",
    "mrr": "MRR@cutoff",
    "group_recall": "group recall@cutoff",
    "pass_rate": "pass rate",
    "forbidden_rate": "forbidden-source rate",
    "revision_mismatch_rate": "revision-mismatch rate",
    "test_at_rank1_rate": "test at rank 1 rate",
    "deprecated_in_cutoff": "deprecated chunks in cutoff",
    "negative_empty_rate": "negative empty rate",
}
# The columns of the per-class / per-repo / per-split tables, for each retriever.
SLICE_COLUMNS = (("hit_at_cutoff", "hit"), ("mrr", "MRR"), ("group_recall", "recall"),
                 ("pass_rate", "pass"), ("forbidden_rate", "forbidden"))
MAX_CELL_CHARS = 60  # long queries and path policies are cut in tables; run.json has them
_COUNTS = frozenset({"deprecated_in_cutoff"})
_NONE = "-"  # an empty cell: nothing to measure


def render_markdown(report: Report) -> str:
    """The whole report.md."""
    runs = report.runs
    sections = [
        _heading(report),
        _manifests(runs),
        _overall(runs),
        _slice_table("Per query class", "class", runs, lambda r: r.by_class()),
        _slice_table("Per repository", "repo", runs, lambda r: r.by_repo()),
        _slice_table("Per split", "split", runs, lambda r: r.by_split()),
        *(_failing(r) for r in runs),
    ]
    return "\n\n".join(s for s in sections if s) + "\n"


def summary_lines(report: Report) -> list[str]:
    """One line per run for a terminal: validity, pass count and the headline metrics."""
    lines = []
    for run in report.runs:
        overall = run.overall()
        passed = sum(1 for m in run.metrics if m.passed)
        headline = ", ".join(
            f"{METRIC_LABELS[name]} {_measure(overall.measure(name), name, with_n=True)}"
            for name in ("hit_at_cutoff", "mrr", "negative_empty_rate")
        )
        state = "valid" if run.valid else f"INVALID ({len(run.problems)} problem(s))"
        lines.append(f"{run.retriever}: {passed}/{overall.cases} cases pass; {headline}; {state}")
    return lines


def _heading(report: Report) -> str:
    cases = report.runs[0].cases if report.runs else ()
    negatives = sum(1 for c in cases if c.case.negative)
    split = report.split or "all splits"
    names = ", ".join(r.retriever for r in report.runs)
    lines = [
        "# Retrieval evaluation",
        "",
        f"{len(cases)} cases ({negatives} negative) from {split}; retrievers: {names}. "
        "Metrics are taken at each case's cutoff; MRR is MRR@cutoff.",
    ]
    for run in report.runs:
        if not run.valid:
            lines += ["", f"**Run `{run.retriever}` is INVALID** and cannot pass a gate:"]
            lines += [f"- {_cell(p, 200)}" for p in run.problems]
    return "\n".join(lines)


def _manifests(runs: Sequence[EvaluatedRun]) -> str:
    header = ["retriever", "repos", *REQUIRED_MANIFEST_FIELDS]
    rows = []
    for run in runs:
        for manifest, repos in _distinct_manifests(run).items():
            fields = json.loads(manifest)
            rows.append([run.retriever, ", ".join(repos),
                         *(_manifest_value(fields.get(f)) for f in REQUIRED_MANIFEST_FIELDS)])
    return "## Index manifests\n\n" + _table(header, rows)


def _distinct_manifests(run: EvaluatedRun) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for evaluation in run.cases:
        key = json.dumps(dict(evaluation.manifest), sort_keys=True, default=str)
        repos = found.setdefault(key, [])
        if evaluation.case.repo not in repos:
            repos.append(evaluation.case.repo)
    return found


def _manifest_value(value: object) -> str:
    if value in (None, "", {}, []):
        return "**missing**"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return _cell(text)


def _overall(runs: Sequence[EvaluatedRun]) -> str:
    overall = [r.overall() for r in runs]
    header = ["metric", *(r.retriever for r in runs)]
    rows = [[METRIC_LABELS[name], *(_measure(o.measure(name), name, with_n=True)
                                    for o in overall)]
            for name in METRIC_NAMES]
    rows.append(["cases", *(str(o.cases) for o in overall)])
    return "## Overall\n\n" + _table(header, rows)


def _slice_table(title: str, label: str, runs: Sequence[EvaluatedRun],
                 slices_of: Callable[[EvaluatedRun], Mapping[str, SliceMetrics]]) -> str:
    slices = [slices_of(r) for r in runs]
    keys = list(dict.fromkeys(k for s in slices for k in s))
    header = [label, "cases", "negative"]
    header += [f"{r.retriever} {short}" for r in runs for _, short in SLICE_COLUMNS]
    rows = []
    for key in keys:
        first = slices[0][key]
        row = [key, str(first.cases), str(first.negative_empty_rate.n)]
        row += [_measure(s[key].measure(name), name) for s in slices for name, _ in SLICE_COLUMNS]
        rows.append(row)
    note = ("hit, MRR and recall are over non-negative cases, pass over all cases, "
            "forbidden is the share of cases with a forbidden source inside the cutoff.")
    return f"## {title}\n\n{_table(header, rows)}\n\n{note}"


def _failing(run: EvaluatedRun) -> str:
    failing = [c for c in run.cases if not c.metrics.passed]
    title = f"## Failing cases: {run.retriever} ({len(failing)} of {len(run.cases)})"
    if not failing:
        return f"{title}\n\nNone."
    header = ["case", "class", "split", "query", "first relevant", "in candidates",
              "missing groups", "rank 1", "problems"]
    return f"{title}\n\n" + _table(header, [_failing_row(c) for c in failing])


def _failing_row(evaluation: CaseEvaluation) -> list[str]:
    case, metrics, results = evaluation.case, evaluation.metrics, evaluation.run.results
    first = _NONE if case.negative else _rank(metrics.first_relevant_rank, case.cutoff)
    candidates = _NONE if case.negative else _rank(metrics.candidate_first_relevant_rank, None)
    rank1 = _cell(_describe(results[0]), MAX_CELL_CHARS + 30) if results else "(no results)"
    return [case.id, case.query_class, case.split, _cell(case.query), first, candidates,
            ", ".join(metrics.missing_groups) or _NONE, rank1,
            _cell(_problems(metrics, results[: case.cutoff]), 300)]


def _describe(chunk: RankedChunk) -> str:
    """``path:12-40 Class.method (role)``: the symbol's last two dotted parts suffice here."""
    tail = ".".join(chunk.symbol.split(".")[-2:]) + " " if chunk.symbol else ""
    return f"{chunk.path}:{chunk.start_line}-{chunk.end_line} {tail}({chunk.role})"


def _rank(rank: int | None, cutoff: int | None) -> str:
    if rank is None:
        return "not found"
    return f"{rank} (cutoff {cutoff})" if cutoff is not None else str(rank)


def _located(chunk_ids: Sequence[str], visible: Sequence[RankedChunk]) -> str:
    """Chunk ids as ``rank N path``, which a reader can find without run.json."""
    where: dict[str, str] = {}
    for chunk in visible:
        where.setdefault(chunk.chunk_id, f"rank {chunk.rank} {chunk.path}")
    return ", ".join(where.get(i, i) for i in chunk_ids)


def _problems(metrics: CaseMetrics, visible: Sequence[RankedChunk]) -> str:
    problems = []
    if metrics.negative and metrics.result_count:
        problems.append(f"{metrics.result_count} results, expected none")
    if metrics.forbidden_chunk_ids:
        problems.append("forbidden: " + _located(metrics.forbidden_chunk_ids, visible))
    if metrics.manifest_revision_mismatch:
        problems.append("index built from another revision")
    if metrics.revision_mismatches:
        problems.append("other revision: " + _located(metrics.revision_mismatches, visible))
    if metrics.test_at_rank1:
        problems.append("test at rank 1")
    if metrics.deprecated_in_cutoff:
        problems.append("deprecated: " + _located(metrics.deprecated_in_cutoff, visible))
    return "; ".join(problems) or _NONE


def _measure(measure: Measure, name: str, with_n: bool = False) -> str:
    if measure.value is None:
        text = _NONE
    elif name in _COUNTS:
        text = str(int(measure.value))
    else:
        text = f"{measure.value:.3f}"
    return f"{text} (n={measure.n})" if with_n else text


def _cell(text: str, limit: int = MAX_CELL_CHARS) -> str:
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return flat.replace("\\", "\\\\").replace("|", "\\|")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
