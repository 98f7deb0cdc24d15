"""Fuse the signal rankings, weigh by role and intent, and decide what is relevant.

Every weight lives here as a named constant with the reason for it. They are tuned on
the tuning half of the gold cases (evals/cases) and reported on the held-out half.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

__all__ = [
    "DEFAULT_ROLE_WEIGHTS",
    "SIGNAL_WEIGHTS",
    "STRENGTH_SIGNALS",
    "Intent",
    "detect_intent",
    "fuse",
    "role_weight",
]

Intent = Literal["implementation", "tests", "docs", "examples"]

# Reciprocal-rank fusion: score = sum(weight / (RRF_K + rank)). K=60 is the customary
# constant: it flattens the head of each list so that agreement between signals counts
# more than one signal's rank 1.
RRF_K = 60
SIGNAL_WEIGHTS = MappingProxyType({
    "bm25": 1.0,
    "embedding": 1.0,
    # An exact definition name in the query is the strongest evidence there is of what
    # the user means; it outweighs one signal's agreement.
    "structure": 2.0,
    # A pasted traceback frame names the exact file and line.
    "traceback": 2.0,
    # A definition whose name is made of the query's words: good evidence, but names
    # are short and shared, so no more than one similarity signal.
    "name": 1.0,
    # For "which tests / where documented" questions: a test or doc that uses the named
    # symbol is what the user asked for, as exact as a definition match.
    "usage": 2.0,
})

# Similar is not relevant: tests, fakes and docs share the implementation's vocabulary
# and outrank it on similarity, so they are down-weighted (never excluded) unless the
# query asks for them. Deprecated code is filtered out unless asked for (see search).
DEFAULT_ROLE_WEIGHTS = MappingProxyType({
    "production": 1.0,
    "config": 0.7,
    "docs": 0.6,
    "example": 0.6,
    "test": 0.45,
    "test_support": 0.35,
    "generated": 0.3,
    "vendored": 0.3,
    "deprecated": 0.2,
})
# When the query asks for a role, that role leads and production steps back a little:
# the implementation is still useful context for a question about its tests.
ASKED_ROLE_WEIGHT = 1.2
PRODUCTION_WHEN_OTHER_ASKED = 0.7
INTENT_ROLES: dict[Intent, tuple[str, ...]] = {
    "implementation": (),
    "tests": ("test", "test_support"),
    "docs": ("docs",),
    "examples": ("example", "docs"),
}

# A chunk inside a file the user is in, or one it imports or is imported by.
NEIGHBOURHOOD_BOOST = 1.25
# "what is X / how does X work": the definition of X beats chunks that only use X.
DEFINITION_KINDS = frozenset({"definition", "definition_part", "class_header"})

_TEST_WORDS = re.compile(
    r"\b(tests?|tested|testing|unit ?tests?|test cases?|covered|coverage|fixtures?|"
    r"mocks?|fakes?|assert(s|ed|ions?)?)\b", re.IGNORECASE)
_DOC_WORDS = re.compile(
    r"\b(documented|documentation|docs?|readme|guide|tutorial|changelog|"
    r"release notes)\b", re.IGNORECASE)
_EXAMPLE_WORDS = re.compile(r"\b(examples?|samples?|demos?|snippets?)\b", re.IGNORECASE)
_DEPRECATED_WORDS = re.compile(r"\b(deprecat\w*|legacy|compat\w*|obsolete)\b",
                               re.IGNORECASE)


@dataclass(frozen=True)
class QueryIntent:
    intent: Intent
    wants_deprecated: bool


def detect_intent(query: str) -> QueryIntent:
    """Which role the query asks for; code written in the query does not count."""
    prose = re.sub(r"`[^`]*`", " ", query)
    if _TEST_WORDS.search(prose):
        intent: Intent = "tests"
    elif _EXAMPLE_WORDS.search(prose):
        intent = "examples"
    elif _DOC_WORDS.search(prose):
        intent = "docs"
    else:
        intent = "implementation"
    return QueryIntent(intent, bool(_DEPRECATED_WORDS.search(prose)))


def role_weight(role: str, intent: QueryIntent) -> float:
    asked = INTENT_ROLES[intent.intent]
    if role in asked:
        return ASKED_ROLE_WEIGHT
    if role == "deprecated" and intent.wants_deprecated:
        return 1.0
    weight = DEFAULT_ROLE_WEIGHTS.get(role, 1.0)
    if asked and role == "production":
        weight = PRODUCTION_WHEN_OTHER_ASKED
    return weight


# Signals whose scores are evidence strengths in [0, 1] (an exact name written as code is
# 1, a plain word that happens to name a definition much less): their reciprocal-rank
# contribution is scaled by that strength, so weak exact evidence stays weak.
STRENGTH_SIGNALS = frozenset({"structure", "usage", "traceback", "name"})


# When the query asks for tests or docs, naming a symbol says what they are about, not
# that its definition is the answer: definition matches count for less.
STRUCTURE_WHEN_OTHER_ASKED = 0.5


def fuse(rankings: dict[str, list[tuple[int, float]]], intent: QueryIntent
         ) -> dict[int, dict[str, float]]:
    """Reciprocal-rank contributions per chunk and signal."""
    contributions: dict[int, dict[str, float]] = {}
    for signal, ranking in rankings.items():
        weight = SIGNAL_WEIGHTS[signal]
        if signal == "structure" and INTENT_ROLES[intent.intent]:
            weight *= STRUCTURE_WHEN_OTHER_ASKED
        for rank, (index, score) in enumerate(ranking, start=1):
            strength = min(score, 1.0) if signal in STRENGTH_SIGNALS else 1.0
            contributions.setdefault(index, {})[signal] = weight * strength / (RRF_K + rank)
    return contributions
