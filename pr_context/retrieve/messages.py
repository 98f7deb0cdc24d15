"""Matching a pasted message against the string literals and format templates of code.

A template's placeholders (``PLACEHOLDER``, see ``pr_context.parse.code_strings``) are
wildcards: ``"Invalid value for ￼: ￼ is not one of ￼."`` matches "Invalid value for
'--color': 'bleu' is not one of 'red', 'green'." whatever the user's values. Matching
works on words, so quoting, punctuation and a traceback around the message do not
matter, and a message from a slightly different version still matches most of its
words. Two shares decide how well a template matches:

- ``coverage``: of the template, the weight of its words found in the query *in order*
  (each word weighted by how rare it is among all templates, so "invalid value for"
  counts less than "subcommand"); every literal segment found verbatim, in order, is 1;
- ``explained``: of the message the query reports (a traceback's last line, without the
  exception's name; quoted values and numbers left out, since placeholders hold them),
  the share of words the template accounts for: its matched words, and one word per
  placeholder. "must be equal to" found inside "max_value must be equal to or higher
  than initial_value" covers itself whole but explains under half of the message.

``strength`` is their product, scaled down for a template with little to match (fewer
than ``MIN_MATCHED_WORDS`` words, or under ``FULL_INFORMATION`` of weight). Pure: built
once per loaded corpus from (template, chunk index) rows.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from pr_context.parse.code_strings import PLACEHOLDER

__all__ = ["FULL_INFORMATION", "MIN_MATCHED_WORDS", "MessageIndex", "MessageMatch",
           "reported_message"]

_WORD = re.compile(r"[^\W_]{2,}")
# A template needs this many of its words in the query, in order, to count at all.
MIN_MATCHED_WORDS = 2
# Weight (in IDF nats) of matched words that makes a match whole: about three words
# that each occur in one template in twenty.
FULL_INFORMATION = 3 * math.log(20)
# Templates sharing fewer query words than this are not scored (candidate generation).
MIN_SHARED_WORDS = 2
MAX_CANDIDATES = 300  # scored per query, those sharing the most words first
# Words in more than this share of the templates ("the", "is", "not") are too common to
# find candidates by (they still count when a candidate is scored).
COMMON_WORD_SHARE = 0.05


@dataclass(frozen=True)
class _Template:
    words: tuple[str, ...]  # literal words, lower-case, in order
    segments: tuple[str, ...]  # literal text between placeholders, normalised
    chunk: int
    placeholders: int


@dataclass(frozen=True)
class MessageMatch:
    chunk: int
    template: str  # the matched template's literal words, for explanations
    coverage: float
    explained: float
    strength: float
    weight: float  # of the matched words: among equal strengths, more matched wins


@dataclass(frozen=True)
class _Query:
    positions: dict[str, list[int]]  # word -> its positions in the query, ascending
    normalised: str  # lower-case, whitespace collapsed
    message: frozenset[int]  # positions of the reported message's words (not values)


class MessageIndex:
    """The templates of one corpus, with an inverted index of their words."""

    def __init__(self, rows: Sequence[tuple[str, int]],
                 previous: MessageIndex | None = None) -> None:
        """The index of ``rows``; templates ``previous`` compiled are not compiled again
        (an overlay of a few files keeps nearly all of them, at other chunk indexes)."""
        self._by_text: dict[str, _Template] = dict(previous._by_text) if previous else {}
        self._templates = [self._compiled(template, chunk) for template, chunk in rows]
        self._texts = [template for template, _ in rows]
        # The same templates in the same order as ``previous``: only their chunks moved.
        self._postings, self._idf, self._common = (
            previous._word_index if previous is not None and previous._texts == self._texts
            else _word_index(self._templates))

    @property
    def _word_index(self) -> tuple[dict[str, list[int]], dict[str, float], int]:
        return self._postings, self._idf, self._common

    def __len__(self) -> int:
        return len(self._templates)

    def _compiled(self, template: str, chunk: int) -> _Template:
        known = self._by_text.get(template)
        if known is None:
            known = self._by_text[template] = _compile(template, chunk)
        return known if known.chunk == chunk else _Template(
            known.words, known.segments, chunk, known.placeholders)

    def matches(self, query: str) -> list[MessageMatch]:
        """Templates the query holds, strongest first (ties: more matched, chunk index)."""
        parsed = _parse_query(query)
        if not parsed.positions:
            return []
        found = [self._score(self._templates[n], parsed)
                 for n in self._candidates(parsed.positions)]
        best = [m for m in found if m is not None]
        best.sort(key=lambda m: (-m.strength, -m.weight, m.chunk))
        return best

    def _candidates(self, positions: dict[str, list[int]]) -> list[int]:
        shared: Counter[int] = Counter()
        for word in positions:
            ids = self._postings.get(word, ())
            if 0 < len(ids) <= self._common:
                shared.update(ids)
        ranked = sorted((n for n, count in shared.items() if count >= MIN_SHARED_WORDS
                         or count == len(set(self._templates[n].words))),
                        key=lambda n: (-shared[n], n))
        return ranked[:MAX_CANDIDATES]

    def _score(self, template: _Template, query: _Query) -> MessageMatch | None:
        """The better of matching within the reported message and anywhere in the query
        (a traceback repeats the raising line before the message)."""
        in_message = {w: [p for p in places if p in query.message]
                      for w, places in query.positions.items()}
        found = [m for m in (self._aligned(template, in_message, query),
                             self._aligned(template, query.positions, query)) if m]
        return max(found, key=lambda m: (m.strength, m.weight), default=None)

    def _aligned(self, template: _Template, positions: dict[str, list[int]],
                 query: _Query) -> MessageMatch | None:
        total = sum(self._idf[w] for w in template.words)
        matched, weight, at, in_message = 0, 0.0, -1, 0
        for word in template.words:
            places = positions.get(word)
            next_at = bisect_right(places, at) if places else 0
            if places and next_at < len(places):
                at = places[next_at]
                matched += 1
                weight += self._idf[word]
                in_message += at in query.message
        if matched < min(MIN_MATCHED_WORDS, len(template.words)) or total == 0:
            return None
        exact = _in_order(template.segments, query.normalised)
        coverage = 1.0 if exact else weight / total
        explained = min(1.0, (in_message + template.placeholders) / max(len(query.message), 1))
        strength = coverage * explained * min(1.0, weight / FULL_INFORMATION,
                                              matched / MIN_MATCHED_WORDS)
        return MessageMatch(template.chunk, " ".join(template.words), round(coverage, 6),
                            round(explained, 6), round(strength, 6), round(weight, 6))


# A traceback's own lines and a reported exception's name are no part of its message.
_EXCEPTION_PREFIX = re.compile(r"^\s*(?:[A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|"
                               r"Interrupt|[A-Z]\w*)\s*:\s+)")
_VALUE = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`|\b\d[\w.]*")


def _parse_query(query: str) -> _Query:
    lowered = query.lower()
    offsets = []
    positions: dict[str, list[int]] = defaultdict(list)
    for index, match in enumerate(_WORD.finditer(lowered)):
        offsets.append(match.start())
        positions[match.group()].append(index)
    body_start, values = _message_span(query)
    message = frozenset(i for i, offset in enumerate(offsets) if offset >= body_start
                        and not any(a <= offset < b for a, b in values))
    return _Query(dict(positions), " ".join(lowered.split()), message)


def reported_message(query: str) -> str | None:
    """The message of an error the query reports (``Name: message`` on its last line)."""
    last = query.rstrip().rsplit("\n", 1)[-1]
    prefix = _EXCEPTION_PREFIX.match(last)
    return last[prefix.end():] if prefix else None


def _message_span(query: str) -> tuple[int, list[tuple[int, int]]]:
    """Where the reported message starts in ``query``, and the spans of its values.

    The message is the last line (a traceback's, or the only one), after the exception
    name; its quoted strings and numbers are the user's values.
    """
    text = query.rstrip()
    last = text.rsplit("\n", 1)[-1]
    offset = len(text) - len(last)
    prefix = _EXCEPTION_PREFIX.match(last)
    values = [(m.start() + offset, m.end() + offset) for m in _VALUE.finditer(last)]
    return offset + (prefix.end() if prefix else 0), values


def _word_index(templates: Sequence[_Template]
                ) -> tuple[dict[str, list[int]], dict[str, float], int]:
    """word -> numbers of the templates holding it, each word's idf, and how many
    templates make a word too common to find candidates by."""
    postings: dict[str, list[int]] = defaultdict(list)
    for number, template in enumerate(templates):
        for word in set(template.words):
            postings[word].append(number)
    total = max(len(templates), 1)
    idf = {w: math.log(total / len(ids)) + 1.0 for w, ids in postings.items()}
    return dict(postings), idf, max(int(total * COMMON_WORD_SHARE), 50)


def _compile(template: str, chunk: int) -> _Template:
    lowered = template.lower()
    segments = tuple(s for s in (" ".join(p.split()) for p in lowered.split(PLACEHOLDER)) if s)
    return _Template(tuple(_WORD.findall(lowered)), segments, chunk,
                     lowered.count(PLACEHOLDER))


def _in_order(segments: Sequence[str], text: str) -> bool:
    """Every segment occurs in ``text``, each after the one before."""
    at = 0
    for segment in segments:
        found = text.find(segment, at)
        if found < 0:
            return False
        at = found + len(segment)
    return bool(segments)
