"""The release gate: which evaluated cases count and the thresholds they must meet.

A gate file (``evals/gate.yml``)::

    split: heldout                 # which cases count; omit for all
    retriever: hybrid              # which run is gated; omit for the first run
    min: {hit_at_cutoff: 0.90, mrr: 0.75, negative_empty_rate: 0.90}
    per_class_min: {hit_at_cutoff: 0.80}
    max: {forbidden_rate: 0.0, test_at_rank1_rate: 0.05, deprecated_in_cutoff: 0}
    per_class_max: {}

The gate always fails on an invalid run (an incomplete manifest) and on any revision
mismatch, whatever the thresholds say: such a run cannot decide anything about ranking
at the pinned revision. A forbidden source inside the cutoff fails it unless
``max.forbidden_rate`` is set above 0. Otherwise only thresholds fail it: rank movements
among acceptable chunks that keep every metric above its threshold never do.

A ``min`` threshold on a metric with no cases to measure (n = 0) fails, since nothing
shows it is met; a ``max`` threshold on one passes, since nothing exceeds it. Per-class
thresholds apply to the classes present, each skipped where the metric has n = 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import yaml

from pr_context.evals.cases import SPLITS, Split
from pr_context.evals.errors import GateFileError
from pr_context.evals.metrics import (
    METRIC_NAMES,
    CaseMetrics,
    SliceMetrics,
    aggregate,
    metrics_by_class,
)
from pr_context.evals.report import EvaluatedRun, Report

__all__ = ["Gate", "GateResult", "evaluate_gate", "load_gate", "parse_gate"]

_KEYS = frozenset({"split", "retriever", "min", "max", "per_class_min", "per_class_max"})
_COUNT_METRICS = frozenset({"deprecated_in_cutoff"})
# Forbidden sources fail the gate unless the gate file explicitly tolerates a rate.
DEFAULT_MAX = {"forbidden_rate": 0.0}
_TOLERANCE = 1e-9  # 0.1 + 0.8 must still meet a 0.9 threshold
_MAX_LISTED = 5  # cases named in one failure line before "and N more"

Bound = Literal["min", "max"]


@dataclass(frozen=True)
class Gate:
    """Thresholds over one run's cases of one split. Metric names are METRIC_NAMES."""

    split: Split | None = None
    retriever: str | None = None
    min: Mapping[str, float] = field(default_factory=dict)
    max: Mapping[str, float] = field(default_factory=dict)
    per_class_min: Mapping[str, float] = field(default_factory=dict)
    per_class_max: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class GateResult:
    """``failures`` has one line per reason, empty exactly when ``passed``."""

    passed: bool
    failures: tuple[str, ...]


def load_gate(path: Path) -> Gate:
    """Read a gate file. :raises GateFileError: unreadable or invalid."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise GateFileError(f"cannot read gate file {path}: {exc}") from exc
    return parse_gate(data, str(path))


def parse_gate(data: object, source: str = "gate") -> Gate:
    """Validate a decoded gate file. :raises GateFileError: naming the bad key."""
    if not isinstance(data, dict):
        raise GateFileError(f"{source}: expected a mapping with min/max thresholds")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise GateFileError(f"{source}: unknown key(s) {', '.join(unknown)} "
                            f"(allowed: {', '.join(sorted(_KEYS))})")
    split = data.get("split")
    if split is not None and split not in SPLITS:
        raise GateFileError(f"{source}: split must be one of {', '.join(SPLITS)}, got {split!r}")
    retriever = data.get("retriever")
    if retriever is not None and not isinstance(retriever, str):
        raise GateFileError(f"{source}: retriever must be a name, got {retriever!r}")
    thresholds = {key: _thresholds(data.get(key), f"{source}: {key}")
                  for key in ("min", "max", "per_class_min", "per_class_max")}
    if thresholds["max"].get("revision_mismatch_rate", 0.0) != 0.0:
        raise GateFileError(f"{source}: max.revision_mismatch_rate can only be 0: a run at "
                            "the wrong revision cannot be scored")
    return Gate(split=split, retriever=retriever, min=thresholds["min"],
                max={**DEFAULT_MAX, **thresholds["max"]},
                per_class_min=thresholds["per_class_min"],
                per_class_max=thresholds["per_class_max"])


def _thresholds(value: object, where: str) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise GateFileError(f"{where} must map metric names to numbers")
    result = {}
    for name, threshold in value.items():
        if name not in METRIC_NAMES:
            raise GateFileError(f"{where}: unknown metric {name!r} "
                                f"(known: {', '.join(METRIC_NAMES)})")
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise GateFileError(f"{where}.{name} must be a number, got {threshold!r}")
        if threshold < 0 or (name not in _COUNT_METRICS and threshold > 1):
            raise GateFileError(f"{where}.{name} must be a rate in [0, 1], got {threshold}")
        result[str(name)] = float(threshold)
    return result


def evaluate_gate(report: Report, gate: Gate) -> GateResult:
    """Check the gated run of ``report`` against ``gate``; collect every failure."""
    run = _gated_run(report, gate)
    if isinstance(run, str):
        return GateResult(passed=False, failures=(run,))
    metrics = [m for m in run.metrics if gate.split is None or m.split == gate.split]
    scope = gate.split or "all splits"
    failures = [f"invalid run {run.retriever!r}: {p}" for p in run.problems]
    if not metrics:
        failures.append(f"no {scope} cases were evaluated for run {run.retriever!r}")
    else:
        failures += _revision_failures(metrics)
        failures += _threshold_failures(metrics, gate, scope)
    return GateResult(passed=not failures, failures=tuple(failures))


def _gated_run(report: Report, gate: Gate) -> EvaluatedRun | str:
    if not report.runs:
        return "the report has no runs"
    if gate.retriever is None:
        return report.runs[0]
    found = next((r for r in report.runs if r.retriever == gate.retriever), None)
    return found or (f"the report has no run for retriever {gate.retriever!r} "
                     f"(runs: {', '.join(r.retriever for r in report.runs)})")


def _revision_failures(metrics: Sequence[CaseMetrics]) -> list[str]:
    failures = []
    for m in metrics:
        if m.manifest_revision_mismatch:
            failures.append(f"revision integrity broken: case {m.case_id}: the index "
                            "reflects another revision than the case's")
        if m.revision_mismatches:
            failures.append(f"revision integrity broken: case {m.case_id}: chunks from "
                            f"another revision inside the cutoff: {_listed(m.revision_mismatches)}")
    return failures


def _threshold_failures(metrics: Sequence[CaseMetrics], gate: Gate, scope: str) -> list[str]:
    overall = aggregate(metrics)
    failures = _check(overall, gate.min, "min", "", scope, strict_empty=True)
    failures += _check(overall, gate.max, "max", "", scope, strict_empty=True)
    for query_class, sliced in metrics_by_class(metrics).items():
        label = f"[{query_class}]"
        failures += _check(sliced, gate.per_class_min, "min", label, scope, strict_empty=False)
        failures += _check(sliced, gate.per_class_max, "max", label, scope, strict_empty=False)
    forbidden = [f"{m.case_id} ({_listed(m.forbidden_chunk_ids)})"
                 for m in metrics if m.forbidden_chunk_ids]
    if any(f.startswith("forbidden_rate") for f in failures):
        failures.append(f"forbidden sources inside the cutoff: {_listed(forbidden)}")
    return failures


def _check(metrics: SliceMetrics, thresholds: Mapping[str, float], bound: Bound,
           label: str, scope: str, strict_empty: bool) -> list[str]:
    failures = []
    for name, threshold in thresholds.items():
        measure = metrics.measure(name)
        where = f"({scope}, n={measure.n})"
        if measure.value is None:
            if strict_empty and bound == "min":
                failures.append(f"{name}{label}: no cases to measure, needs min "
                                f"{threshold:.3f} {where}")
            continue
        if bound == "min" and measure.value + _TOLERANCE < threshold:
            failures.append(f"{name}{label} {measure.value:.3f} < min {threshold:.3f} {where}")
        if bound == "max" and measure.value - _TOLERANCE > threshold:
            failures.append(f"{name}{label} {measure.value:.3f} > max {threshold:.3f} {where}")
    return failures


def _listed(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_MAX_LISTED])
    return shown + (f" and {len(items) - _MAX_LISTED} more" if len(items) > _MAX_LISTED else "")
