"""The retrieval-evaluation harness: labelled cases, metrics, reports and a release gate.

Modules, in the order data flows through them:

- ``corpora``: evals/corpora.yml; prepares each corpus as a git repository at a pinned,
  deterministic commit.
- ``cases``: the JSONL case format (documented in evals/README.md), validated on load.
- ``results``: what a retriever returned (``SearchRun``, ``RankedChunk``), and the
  recorded results file format.
- ``metrics``: pure per-case metrics and aggregates with case counts.
- ``report`` / ``markdown``: scoring runs and writing run.json, report.json, report.md.
- ``gate``: thresholds from evals/gate.yml and ``evaluate_gate``.
- ``runner``: ``run_recorded``, ``run_live`` and ``run_mined`` (through the
  ``Retriever`` protocol).
- ``mined`` (with ``mining``, ``mining_raises``, ``mining_docs``, ``phrasing``): the mined
  corpus, cases generated from PyPI packages with their known answers (evals/mined.yml).
- ``errors``: the harness's subclasses of pr-context's error hierarchy.
"""

__all__ = ["LIVE_RETRIEVERS"]

# The retrievers live evaluation compares (pr_context.evals.retrievers builds them).
LIVE_RETRIEVERS = ("hybrid", "bm25", "embedding", "rrf", "naive-windows")
