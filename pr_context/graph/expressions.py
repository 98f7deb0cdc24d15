"""Python expression forms read as text, for :mod:`pr_context.graph.infer`.

Pure string functions: which operands an expression may evaluate to
(``a if c else b``, ``a or b``), a call's callee and arguments, and the iterable a
comprehension takes a name from. Brackets and string literals are skipped over, so a
keyword or comma inside them does not count.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache

__all__ = ["alternatives", "call_parts", "closing_bracket", "comprehension_source"]

_OPENING = frozenset("([{")
_CLOSING = frozenset(")]}")
_QUOTES = frozenset("'\"")
_CALLEE = re.compile(r"(?:await\s+)?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*\(")


def alternatives(text: str) -> list[str] | None:
    """The operands ``text`` evaluates to one of: ``[a, b]`` for ``a if c else b`` and
    for ``a or b``; None when it is neither."""
    text = text.strip()
    if " if " not in text and " or " not in text:
        return None  # most expressions: no need to scan them
    conditional = list(_top_level(text, " if "))
    if conditional:
        otherwise = list(_top_level(text, " else "))
        if otherwise and otherwise[0] > conditional[0]:
            return [text[:conditional[0]], text[otherwise[0] + len(" else "):]]
        return None
    places = list(_top_level(text, " or "))
    if not places:
        return None
    bounds = [0, *(p + len(" or ") for p in places)]
    ends = [*places, len(text)]
    return [text[start:end] for start, end in zip(bounds, ends, strict=True)]


def call_parts(text: str, names: frozenset[str]) -> tuple[str, list[str]] | None:
    """``("copy.deepcopy", ["x"])`` for ``copy.deepcopy(x)``: a dotted callee whose last
    name is one of ``names``, and its top-level arguments, when ``text`` is that one call
    and nothing more."""
    text = text.strip()
    callee = _CALLEE.match(text)
    if callee is None or callee.group(1).rpartition(".")[2] not in names or not (
            text.endswith(")")) or closing_bracket(text, callee.end() - 1) != len(text) - 1:
        return None
    inside = text[callee.end():-1]
    cuts = list(_top_level(inside, ","))
    bounds = [0, *(c + 1 for c in cuts)]
    ends = [*cuts, len(inside)]
    return callee.group(1), [inside[s:e].strip() for s, e in zip(bounds, ends, strict=True)]


def comprehension_source(line: str, name: str) -> str | None:
    """The iterable a comprehension or generator expression on ``line`` takes ``name``
    from: ``self._specs`` in ``any(s.ok for s in self._specs)``."""
    marker = f"for {name} in "
    at = line.find(marker)
    if at < 0 or (at > 0 and (line[at - 1].isalnum() or line[at - 1] == "_")):
        return None
    rest = line[at + len(marker):].lstrip()
    for index, token, depth in _tokens(rest, 0, (" if ", " for ")):
        if depth < 0 or (depth == 0 and token in {" if ", " for "}):
            return rest[:index].strip() or None
    return None  # the comprehension goes on past the line: not evident


def closing_bracket(text: str, start: int) -> int | None:
    """The index of the bracket closing ``text[start]``, skipping strings; None if open.

    A character loop: it runs for every bracket of every receiver of a repository, mostly
    on a few characters, where it is faster than :func:`_tokens`.
    """
    depth, quote, index = 0, "", start
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in _QUOTES:
            quote = char
        elif char in _OPENING:
            depth += 1
        elif char in _CLOSING:
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return None


def _top_level(text: str, word: str) -> Iterator[int]:
    """Where ``word`` occurs in ``text`` outside brackets and string literals."""
    return (index for index, token, depth in _tokens(text, 0, (word,))
            if depth == 0 and token == word)


def _tokens(text: str, start: int, words: tuple[str, ...]
            ) -> Iterator[tuple[int, str, int]]:
    """(index, token, bracket depth after it) for each bracket and each of ``words`` from
    ``start`` that is not inside a string literal. A regular expression skips over the
    rest: this runs for most receivers of a large repository."""
    depth = 0
    for match in _token_pattern(words).finditer(text, start):
        token = match.group()
        if token[0] in _QUOTES:
            continue
        depth += 1 if token in _OPENING else -1 if token in _CLOSING else 0
        yield match.start(), token, depth


@cache
def _token_pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    # An unterminated string runs to the end of the text (it goes on past the line).
    strings = r"""'(?:\\.|[^'\\])*'?|"(?:\\.|[^"\\])*"?"""
    return re.compile("|".join([strings, r"[()\[\]{}]", *map(re.escape, words)]))
