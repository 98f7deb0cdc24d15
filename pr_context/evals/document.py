"""docs/evaluation.md: the held-out results in full, the tuning results in brief.

Written from one live run over both splits, so hybrid and baselines are measured
together on the same indexes; regenerate it rather than editing it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from pr_context.evals.cases import Case
from pr_context.evals.markdown import render_markdown
from pr_context.evals.report import EvaluatedRun, Report, build_report
from pr_context.evals.results import Run

__all__ = ["evaluation_document"]

REGENERATE = ("pr-context eval --cases evals/cases --live --out evals/out/live "
              "--doc docs/evaluation.md")


def evaluation_document(cases: Sequence[Case], runs: Sequence[EvaluatedRun]) -> str:
    """The document: how it was made, then the held-out report, then tuning in brief."""
    plain = [_as_run(r) for r in runs]
    heldout = [c for c in cases if c.split == "heldout"]
    tuning = [c for c in cases if c.split == "tuning"]
    held_report = render_markdown(build_report(heldout, plain, "heldout"))
    tuning_report = build_report(tuning, plain, "tuning")
    return "\n".join([
        "# Retrieval evaluation",
        "",
        f"Generated on {time.strftime('%Y-%m-%d')} by `{REGENERATE}` (about ten minutes "
        "on a 2-core machine once the corpora are cached; the first run downloads them "
        "and embeds every chunk). Do not edit: regenerate.",
        "",
        f"{len(cases)} gold cases on five PyPI source distributions no one here wrote "
        "and on this repository (evals/cases; how they were labelled and split: "
        "evals/cases/LABELLING.md). The held-out cases were all labelled before any "
        "tuning; cases written later went to the tuning half only. Every weight in "
        "`pr_context/retrieve/fusion.py` and the thresholds in "
        f"`pr_context/retrieve/__init__.py` were tuned on the {len(tuning)} tuning cases "
        f"only; the {len(heldout)} held-out cases count only as the aggregate below "
        "(this page lists their failures, so it is not read while tuning).",
        "",
        "Retrievers, all over the same chunks and the same model (all-MiniLM-L6-v2):",
        "",
        "- `hybrid`: `pr-context search`.",
        "- `bm25`: BM25 alone over the same code-aware tokens.",
        "- `embedding`: cosine similarity alone.",
        "- `naive-windows`: files cut into 400-line windows, embedded, ranked by cosine "
        "(credited for a symbol when a window holds its whole definition).",
        "",
        "The baselines have no relevance threshold, so they never answer a negative "
        "query with nothing.",
        "",
        _demote(held_report),
        "## Tuning split (for comparison)",
        "",
        *_overall_lines(tuning_report),
    ])


def _as_run(run: EvaluatedRun) -> Run:
    return Run(retriever=run.retriever, manifest=run.manifest,
               cases=tuple(e.run for e in run.cases))


def _demote(markdown: str) -> str:
    """Nest the report under this document's title: '# X' becomes '## Held-out: X'."""
    lines = markdown.splitlines()
    if lines and lines[0].startswith("# "):
        lines[0] = "## Held-out split"
    return "\n".join("#" + line if line.startswith("## ") and i else line
                     for i, line in enumerate(lines)) + "\n"


def _overall_lines(report: Report) -> list[str]:
    rows = ["| retriever | hit@cutoff | MRR@cutoff | negative empty rate | cases |",
            "|---|---|---|---|---|"]
    for run in report.runs:
        overall = run.overall()
        values = [overall.measure(n) for n in ("hit_at_cutoff", "mrr", "negative_empty_rate")]
        cells = [f"{m.value:.3f} (n={m.n})" if m.value is not None else "-" for m in values]
        rows.append(f"| {run.retriever} | {' | '.join(cells)} | {overall.cases} |")
    return rows
