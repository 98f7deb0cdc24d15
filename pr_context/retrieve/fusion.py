"""Fuse the signal rankings, weigh by role and intent, and decide what is relevant.

Every weight lives here as a named constant with the reason for it. They are tuned on
the tuning half of the gold cases (evals/cases) and reported on the held-out half.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from pr_context.graph.infer import FUNCTION_KINDS
from pr_context.graph.tables import CLASS_KINDS
from pr_context.retrieve.tokens import tokenize

__all__ = [
    "DEFAULT_ROLE_WEIGHTS",
    "ROLE_NAME_TOKENS",
    "SIGNAL_WEIGHTS",
    "STRENGTH_SIGNALS",
    "Intent",
    "detect_intent",
    "fuse",
    "intent_words",
    "prose_of",
    "role_weight",
]

Intent = Literal["implementation", "how_to", "tests", "docs", "examples"]

# Reciprocal-rank fusion: score = sum(weight / (RRF_K + rank)). The customary K=60 flattens
# the head of each list so much that a top hit of one signal barely beats rank 20; on the
# tuning cases K in {5, 10, 20, 40, 60} gave MRR 0.728, 0.714, 0.709, 0.699, 0.689: 10.
RRF_K = 10
SIGNAL_WEIGHTS = MappingProxyType({
    "bm25": 1.0,
    "embedding": 1.0,
    # An exact definition name in the query is the strongest evidence there is of what
    # the user means; it outweighs one signal's agreement.
    "structure": 2.0,
    # A pasted traceback frame names the exact file and line.
    "traceback": 2.0,
    # A pasted message matching a string literal or format template: the code that
    # raises, logs or prints it, as exact as a name (scaled by the match's strength).
    "message": 2.0,
    # A definition whose name is made of the query's words: good evidence, but names
    # are short and shared, so no more than one similarity signal.
    "name": 1.0,
    # What the docs say around a definition's name, in the query's words: as good as
    # a similarity signal, no better (docs mention names in passing too).
    "anchor": 0.5,
    # For "which tests / where documented" questions: a test or doc that uses the named
    # symbol is what the user asked for, as exact as a definition match.
    "usage": 2.0,
    # Exception classes the best candidates raise (signals.raised_ranking): as good as
    # a similarity signal, no better.
    "raised": 1.0,
    # Classes several of the best candidates are members of (signals.owner_ranking):
    # half a similarity signal, so that a class follows the member a question names
    # rather than leading it (1.0: hand tuning MRR 0.768 -> 0.736; 0.5: 0.761, with
    # the same mined tuning behaviour hit@5, 0.70).
    "owner": 0.5,
    # The best candidates' names read by the embedding model (name_meaning.py), for
    # questions about the implementation: as good as a similarity signal (mined tuning
    # behaviour hit@5 0.715 -> 0.731; at 1.5, 0.721; for every intent, how-to questions
    # lost 0.837 -> 0.767 to definitions named like the task).
    "name_meaning": 1.0,
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
# When the query asks for a role, that role leads and every other steps back by one
# factor, keeping its order: the implementation is still useful context for a question
# about its tests, more than a config file or a guide that mentions them.
ASKED_ROLE_WEIGHT = 1.2
OTHER_ROLES_WHEN_ASKED = 0.5
INTENT_ROLES: dict[Intent, tuple[str, ...]] = {
    "implementation": (),
    "how_to": (),
    "tests": ("test", "test_support"),
    "docs": ("docs",),
    "examples": ("example", "docs"),
}

# "how do I ...": the answer is a public entry point or the page documenting it, not
# the private helper doing the work.
HOW_TO_ROLE_WEIGHTS = MappingProxyType({"docs": 0.95, "example": 0.95})
HOW_TO_PRIVATE_WEIGHT = 0.7

# A chunk inside a file the user is in, or one it imports or is imported by.
NEIGHBOURHOOD_BOOST = 1.25
# A definition the user's file imports by name is what that name means there.
IMPORTED_NAME_BOOST = 1.5
# "what is X / how does X work": the definition of X beats chunks that only use X.
DEFINITION_KINDS = frozenset({"definition", "definition_part", "class_header"})

# "which class holds a secret", "what function parses dates": the question names the kind
# of definition it asks for, and a definition of that kind leads its members or callers.
# Mined tuning behaviour hit@5 0.731 -> 0.740 (1.6 to 2.5 alike), every other class the same.
ASKED_KIND_BOOST = 2.0
_ASKED_KIND = re.compile(
    r"\b(?:which|what)\s+(class|type|exception|function|method)\b"
    r"|\b(?:a|an|the)\s+(class|function|method)\s+(?:that|which)\b", re.IGNORECASE)
_KINDS_ASKED = MappingProxyType({
    "class": CLASS_KINDS, "type": CLASS_KINDS, "exception": CLASS_KINDS,
    "function": FUNCTION_KINDS, "method": FUNCTION_KINDS})

# "which tests cover X" asks for tests; "how do I test my app" asks how to use a testing
# utility, so a bare singular "test" counts only after a determiner.
_TEST_WORDS = re.compile(
    r"\b(tests|tested|unit ?tests?|test ?cases?|test suites?|covered|coverage|fixtures?|"
    r"mocks?|fakes?|(the|a|which|what|any) test)\b", re.IGNORECASE)
_HOW_TO = re.compile(r"^\W*(how (do|can|could|should|would) (i|we|you|one)|how to|"
                     r"what is the (best |right )?way to|is there a way to)\b", re.IGNORECASE)
_DEPRECATED_WORDS = re.compile(r"\b(deprecat\w*|legacy|compat\w*|obsolete)\b",
                               re.IGNORECASE)
# Docs and examples are asked for by their own names ("documented", "documentation",
# "docs"; "example", "examples"), as tokens (stemmed), and by the names of the folders
# holding them in the codebase searched (``role_markers``: "tutorial", "demo", "samples").
ROLE_NAME_TOKENS: dict[Intent, frozenset[str]] = {
    "docs": frozenset({"doc", "document", "documentat"}),
    "examples": frozenset({"exampl"}),
}


_CODE_OR_QUOTED = re.compile(r"`[^`]*`|'[^'\n]*'|\"[^\"\n]*\"|\S*[._/:]\S*")


def prose_of(query: str) -> str:
    """``query`` without code and quoted text: the words a user chose, not the values
    (a mistyped command name, a file name) or names they pasted."""
    return _CODE_OR_QUOTED.sub(" ", query)


def asked_kinds(query: str) -> frozenset[str]:
    """The definition kinds the query's prose asks for by name ("which class ..."):
    classes, or functions and methods; empty when it names none."""
    found = _ASKED_KIND.search(prose_of(query))
    return _KINDS_ASKED[(found.group(1) or found.group(2)).lower()] if found else frozenset()


@dataclass(frozen=True)
class QueryIntent:
    intent: Intent
    wants_deprecated: bool


def detect_intent(query: str, markers: Mapping[str, frozenset[str]] | None = None
                  ) -> QueryIntent:
    """Which role the query asks for; code and quoted text in the query do not count.

    A how-to question asks for the API and its docs whatever role words it uses ("how
    do I test my app" is answered by the testing utility and the page about testing,
    not by the project's own tests). ``markers`` are the codebase's own folder names of
    each role (``role_markers``), asked for like the role's name.
    """
    prose = prose_of(query)
    wants_deprecated = bool(_DEPRECATED_WORDS.search(prose))
    if _HOW_TO.search(prose):
        return QueryIntent("how_to", wants_deprecated)
    if _TEST_WORDS.search(prose):
        return QueryIntent("tests", wants_deprecated)
    tokens = set(tokenize(prose))
    for intent in _ASKED_BY_NAME:
        if tokens & _role_tokens(intent, markers):
            return QueryIntent(intent, wants_deprecated)
    return QueryIntent("implementation", wants_deprecated)


_ASKED_BY_NAME: tuple[Intent, ...] = ("examples", "docs")


def _role_tokens(intent: Intent, markers: Mapping[str, frozenset[str]] | None
                 ) -> frozenset[str]:
    """The role's name tokens and its folder markers, less another role's name (typer's
    examples live in ``docs_src/``: "docs" still asks for the docs)."""
    others = frozenset().union(*(v for k, v in ROLE_NAME_TOKENS.items() if k != intent))
    return ROLE_NAME_TOKENS[intent] | ((markers or {}).get(intent, frozenset()) - others)


def intent_words(query: str, markers: Mapping[str, frozenset[str]] | None = None
                 ) -> set[str]:
    """The words that expressed an intent ("documented", "tests"): not concepts sought."""
    words: set[str] = set()
    for pattern in (_TEST_WORDS, _DEPRECATED_WORDS, _HOW_TO):
        for match in pattern.finditer(query):
            words.update(match.group().lower().split())
    asked = frozenset().union(*(_role_tokens(i, markers) for i in _ASKED_BY_NAME))
    words.update(w.lower() for w in re.findall(r"[A-Za-z]+", query)
                 if set(tokenize(w)) & asked)
    return words


def role_weight(role: str, intent: QueryIntent, symbol: str | None = None,
                path: str = "") -> float:
    """How much a chunk of ``role`` (defining ``symbol``, in ``path``) is worth."""
    asked = INTENT_ROLES[intent.intent]
    if role in asked:
        return ASKED_ROLE_WEIGHT
    if role == "deprecated" and intent.wants_deprecated:
        return 1.0
    weight = DEFAULT_ROLE_WEIGHTS.get(role, 1.0)
    if intent.intent == "how_to":
        weight = HOW_TO_ROLE_WEIGHTS.get(role, weight)
        parts = [*(symbol or "").split("."), *path.split("/")]
        if any(p.startswith("_") and not p.startswith("__") for p in parts):
            weight *= HOW_TO_PRIVATE_WEIGHT
    if asked:  # every role not asked for steps back, keeping its order among the rest
        weight *= OTHER_ROLES_WHEN_ASKED
    return weight


# Signals whose scores are evidence strengths in [0, 1] (an exact name written as code is
# 1, a plain word that happens to name a definition much less): their reciprocal-rank
# contribution is scaled by that strength, so weak exact evidence stays weak.
STRENGTH_SIGNALS = frozenset({"structure", "usage", "traceback", "name", "message"})


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
