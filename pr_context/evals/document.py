"""docs/evaluation.md: hand-written cases (held-out in full, tuning in brief), then the
mined corpus (held-out packages, then tuning packages), retrievers side by side.

Written from one live run, so hybrid and baselines are measured together on the same
indexes; regenerate it rather than editing it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from pr_context.evals.cases import Case, Split
from pr_context.evals.markdown import render_markdown
from pr_context.evals.metrics import SliceMetrics
from pr_context.evals.report import EvaluatedRun, Report, build_report
from pr_context.evals.results import Run

__all__ = ["REGENERATE", "evaluation_document"]

REGENERATE = ("pr-context eval --cases evals/cases --mined evals/mined.yml --live "
              "--out evals/out/live --doc docs/evaluation.md")
_HEADLINE = (("hit_at_cutoff", "hit@5"), ("mrr", "MRR"), ("negative_empty_rate",
                                                          "negatives empty"))


def evaluation_document(cases: Sequence[Case], runs: Sequence[EvaluatedRun],
                        mined: Report | None = None) -> str:
    """The document: how it was made, the hand-written cases, then the mined corpus."""
    plain = [_as_run(r) for r in runs]
    heldout = [c for c in cases if c.split == "heldout"]
    tuning = [c for c in cases if c.split == "tuning"]
    held_report = render_markdown(build_report(heldout, plain, "heldout"))
    tuning_report = build_report(tuning, plain, "tuning")
    return "\n".join([
        "# Retrieval evaluation",
        "",
        f"Generated on {time.strftime('%Y-%m-%d')} by `{REGENERATE}` (once the corpora "
        "are cached and indexed; the first run downloads them and embeds every chunk: "
        "36 minutes on 2 cores, measured 2026-12-03). Do not edit: regenerate.",
        "",
        "Two sets of cases: the hand-written cases below, and a mined corpus of cases "
        "generated from 22 more PyPI packages with their answers known by construction "
        "([Mined corpus](#mined-corpus)). Every weight in "
        "`pr_context/retrieve/fusion.py` and the thresholds in "
        "`pr_context/retrieve/__init__.py` were tuned on tuning cases and tuning "
        "packages only.",
        "",
        "Retrievers, all over the same chunks and the same model (all-MiniLM-L6-v2):",
        "",
        "- `hybrid`: `pr-context search`.",
        "- `bm25`: BM25 alone over the same code-aware tokens.",
        "- `embedding`: cosine similarity alone.",
        "- `rrf`: BM25 and embedding fused by reciprocal rank (K=60), the textbook hybrid.",
        "- `naive-windows` (hand-written cases only): files cut into 400-line windows, "
        "embedded, ranked by cosine (credited for a symbol when a window holds its whole "
        "definition).",
        "",
        "The baselines have no relevance threshold, so they never answer a negative "
        "query with nothing.",
        "",
        "## Hand-written cases",
        "",
        f"{len(cases)} gold cases on five PyPI source distributions no one here wrote "
        "and on this repository (evals/cases; how they were labelled and split: "
        "evals/cases/LABELLING.md). The held-out cases were all labelled before any "
        "tuning; cases written later went to the tuning half only. "
        f"{len(tuning)} tuning cases, {len(heldout)} held-out cases (this page lists "
        "their failures, so it is not read while tuning).",
        "",
        _demote(held_report),
        "### Tuning split (for comparison)",
        "",
        *_overall_lines(tuning_report),
        "",
        *(_mined_section(mined) if mined is not None else []),
    ])


def _as_run(run: EvaluatedRun) -> Run:
    return Run(retriever=run.retriever, manifest=run.manifest,
               cases=tuple(e.run for e in run.cases))


def _demote(markdown: str) -> str:
    """Nest the report under this document's section: '# X' becomes '### Held-out ...'."""
    lines = markdown.splitlines()
    if lines and lines[0].startswith("# "):
        lines[0] = "### Held-out split"
    return "\n".join("##" + line if line.startswith("## ") and i else line
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


def _mined_section(report: Report) -> list[str]:
    cases = [e.case for e in report.runs[0].cases] if report.runs else []
    plain = [_as_run(r) for r in report.runs]
    lines = [
        "## Mined corpus",
        "",
        "Cases generated by the harness from the PyPI packages of `evals/mined.yml` "
        "(pinned in `evals/corpora.yml`, downloaded at run time; nothing of theirs is "
        "committed), each with its answer known by construction "
        "(`pr_context/evals/mined.py`):",
        "",
        "- `behavior`: a docstring's first sentence, rephrased as a question, asks for "
        "its definition; the index is built from an eval copy of the package from which "
        "exactly those docstrings are removed, so the answer does not repeat the "
        "question;",
        "- `stack_trace`: the message of a `raise X(...)` with its placeholders filled "
        "with values the package never saw (made-up words, file names, numbers), alone, "
        "after the exception's name, or in a short traceback; the raising function "
        "answers;",
        "- `how_to_use`: a docs section heading that teaches a task and names the API, as "
        "\"how do I ...\"; the page or a definition it names answers;",
        "- `test_lookup`: a test's name in words; the test answers;",
        "- `doc_lookup` / `example_lookup`: \"where is X documented\" / \"show me an "
        "example of X\" for a public definition the docs / examples name;",
        "- `negative`: a question mined from a package of another domain, with its "
        "package name replaced.",
        "",
        "Split by package, drawn not chosen (the names sorted by SHA-256, every second "
        "one held out); weights are tuned on the tuning packages only. Cutoff 5.",
        "",
        _count_table(cases),
        "",
    ]
    splits: tuple[tuple[Split, str], ...] = (("heldout", "Held-out packages"),
                                             ("tuning", "Tuning packages"))
    for split, title in splits:
        selected = [c for c in cases if c.split == split]
        if selected:
            lines += _mined_split(build_report(selected, plain, split), title)
    return lines


def _count_table(cases: Sequence[Case]) -> str:
    classes = list(dict.fromkeys(c.query_class for c in cases))
    rows = ["| split | packages | " + " | ".join(classes) + " | total |",
            "|---|---|" + "---|" * (len(classes) + 1)]
    for split in ("tuning", "heldout"):
        chosen = [c for c in cases if c.split == split]
        packages = sorted({c.repo for c in chosen})
        counts = [str(sum(1 for c in chosen if c.query_class == k)) for k in classes]
        rows.append(f"| {split} | {', '.join(packages)} | {' | '.join(counts)} | "
                    f"{len(chosen)} |")
    return "\n".join(rows)


def _mined_split(report: Report, title: str) -> list[str]:
    return [f"### {title}", "",
            *_headline_table(report.runs, lambda r: {"overall": r.overall()}, "", False),
            "", f"#### {title}: per query class", "",
            *_headline_table(report.runs, EvaluatedRun.by_class, "class", True),
            "", f"#### {title}: per package", "",
            *_headline_table(report.runs, EvaluatedRun.by_repo, "package", True), ""]


def _headline_table(runs: Sequence[EvaluatedRun],
                    slices_of: Callable[[EvaluatedRun], Mapping[str, SliceMetrics]],
                    label: str, keyed: bool) -> list[str]:
    """hit@5, MRR and negatives answered empty per retriever, with case counts."""
    slices = [slices_of(r) for r in runs]
    keys = list(dict.fromkeys(k for s in slices for k in s))
    header = ([label] if keyed else []) + ["cases"] + [
        f"{r.retriever} {short}" for r in runs for _, short in _HEADLINE]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for key in keys:
        first = slices[0][key]
        cells = ([key] if keyed else []) + [
            f"{first.cases} ({first.negative_empty_rate.n} negative)"]
        cells += [_value(s[key], name) for s in slices for name, _ in _HEADLINE]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _value(metrics: SliceMetrics, name: str) -> str:
    measure = metrics.measure(name)
    return "-" if measure.value is None else f"{measure.value:.3f}"
