"""Errors the evaluation harness raises, as subclasses of pr-context's hierarchy.

PrContextError
 ├── BadInputError (2)
 │    └── ConfigError
 │         ├── CaseFileError        a case file (JSONL) is invalid; names file, line and case
 │         ├── ResultsFileError     a recorded results file is invalid or does not fit the cases
 │         ├── CorporaFileError     evals/corpora.yml is invalid or lacks a corpus
 │         └── GateFileError        a gate file (evals/gate*.yml) is invalid
 ├── CorpusError (1)               a corpus cannot be downloaded, extracted or committed
 │    └── RevisionIntegrityError   a prepared corpus is not the commit corpora.yml pins
 └── GateFailedError (1)           the gate's thresholds were not met (failures printed first)
"""

from __future__ import annotations

from pr_context.errors import ConfigError, PrContextError

__all__ = [
    "CaseFileError",
    "CorporaFileError",
    "CorpusError",
    "GateFailedError",
    "GateFileError",
    "ResultsFileError",
    "RevisionIntegrityError",
]


class CaseFileError(ConfigError):
    pass


class ResultsFileError(ConfigError):
    pass


class CorporaFileError(ConfigError):
    pass


class GateFileError(ConfigError):
    pass


class CorpusError(PrContextError):
    pass


class RevisionIntegrityError(CorpusError):
    pass


class GateFailedError(PrContextError):
    pass
