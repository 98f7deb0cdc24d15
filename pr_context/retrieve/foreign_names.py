"""Names written as code that a codebase never mentions: a question about something else.

A question naming ``event_dict`` or ``PoolManager`` asks about the code that has them.
When the codebase mentions none of the names a question writes as code, anywhere (code,
tests, docs), nor anything spelled nearly like them (a typo), it does not have what the
question is about. Quoted text is a value (a user's file name, a bad option value) and a
dotted name is a path or a qualified name the structure signal judges, so neither counts;
nor do the language's own names (``NoneType``, ``RuntimeError``).
"""

from __future__ import annotations

import builtins
import re
import types
from difflib import get_close_matches
from typing import TYPE_CHECKING

from pr_context.retrieve.tokens import identifiers, tokenize

if TYPE_CHECKING:
    from pr_context.retrieve.corpus import SearchCorpus

__all__ = ["LANGUAGE_NAMES", "NAME_TYPO_RATIO", "unknown_names"]

# difflib's similarity at or above which a known token is the name mistyped: one wrong
# letter in a name of seven or more.
NAME_TYPO_RATIO = 0.85
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
LANGUAGE_NAMES = frozenset(dir(builtins)) | frozenset(dir(types))


def unknown_names(corpus: SearchCorpus, query: str) -> list[str]:
    """The names ``query`` writes as code, when the codebase mentions none of them."""
    names = sorted({n for n in identifiers(_QUOTED.sub(" ", query))
                    if "." not in n and n not in LANGUAGE_NAMES})
    if not names or any(_mentioned(corpus, n) for n in names):
        return []
    return names


def _mentioned(corpus: SearchCorpus, name: str) -> bool:
    """Whether the codebase has the name (its whole-identifier token) or a near spelling."""
    tokens = tokenize(name)
    if not tokens:
        return True  # nothing to judge it by
    key = tokens[-1]  # the whole identifier, or a one-part name's stem
    if key in corpus.vocabulary:
        return True
    near = [w for w in corpus.vocabulary if abs(len(w) - len(key)) <= 2]
    return bool(get_close_matches(key, near, n=1, cutoff=NAME_TYPO_RATIO))
