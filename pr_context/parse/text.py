"""Config and plain-text files as bounded line windows (pure; no I/O).

No symbols are extracted: the windows only make the text searchable. A window holds at
most ``WINDOW_LINES`` lines and ``WINDOW_CHARS`` characters; windows do not overlap. A
line longer than ``WINDOW_CHARS`` (minified JSON, an embedded blob) is cut into slices
of at most ``WINDOW_CHARS`` characters, each reported on that line. Only the first
``MAX_WINDOWS_PER_FILE`` windows of a file are kept: the rest of a huge data file adds
little to search and much to the index. Blank windows are dropped.

Where a window ends is decided by the text, not by counting from the top of the file: past
``MIN_WINDOW_LINES`` lines, a window ends before an *anchor*, a line whose hash falls on
one value in ``ANCHOR_EVERY`` (the bounds still cut where no anchor comes). So a line
added near the top of a ``pyproject.toml`` changes the window it lands in, and the
windows after it are the same text as before: an index update or a review embeds one or
two windows again, not every window below the edit.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from pr_context.models import Chunk, ChunkKind, ParsedFile, Role

__all__ = ["ANCHOR_EVERY", "MAX_WINDOWS_PER_FILE", "MIN_WINDOW_LINES", "WINDOW_CHARS",
           "WINDOW_LINES", "parse_text_windows", "window_texts"]

WINDOW_LINES = 40
WINDOW_CHARS = 4_000
MAX_WINDOWS_PER_FILE = 200
# A window ends before an anchor once it holds this many lines. On django's config and
# text files, 28 and 12 make 9 % more windows than 40-line ones, and a one-line
# insertion changes 1.9 windows instead of 6.7 (evals/bench_windows.py,
# docs/text-windows.md).
MIN_WINDOW_LINES = 28
ANCHOR_EVERY = 12

_CONFIG_LANGUAGES = frozenset({"yaml", "toml", "ini", "json"})
# The heading a window starts under: a top-level YAML key, a TOML table or INI section.
_SECTION_PATTERNS: dict[str, re.Pattern[str]] = {
    "yaml": re.compile(r"(?P<name>[^\s#\-\"'{\[][^:#]*?|\"[^\"]+\"|'[^']+')[ \t]*:(?:[ \t].*)?"),
    "toml": re.compile(r"[ \t]*\[\[?[ \t]*(?P<name>[^\]]+?)[ \t]*\]\]?[ \t]*(?:#.*)?"),
    "ini": re.compile(r"[ \t]*\[(?P<name>[^\]]+)\][ \t]*(?:[#;].*)?"),
}


@dataclass(frozen=True)
class _Window:
    start: int  # 0-based line index
    end: int  # inclusive
    text: str


def parse_text_windows(path: str, text: str, language: str, role: Role) -> ParsedFile:
    """Cut ``text`` into windows: ``config`` chunks for YAML/TOML/INI/JSON, else ``text``."""
    kind: ChunkKind = "config" if language in _CONFIG_LANGUAGES else "text"
    lines = text.split("\n")
    sections = _sections(lines, _SECTION_PATTERNS.get(language))
    chunks: list[Chunk] = []
    for window in _windows(lines):
        if len(chunks) == MAX_WINDOWS_PER_FILE:
            break
        if window.text.strip():
            context = _context(path, sections[window.start])
            chunks.append(
                Chunk(kind, window.start + 1, window.end + 1, window.text, None, role, context)
            )
    return ParsedFile(path=path, language=language, role=role, chunks=tuple(chunks))


def window_texts(text: str, shortest: int = MIN_WINDOW_LINES) -> list[str]:
    """The texts of ``text``'s windows, blank ones included; ``shortest`` lines before an
    anchor may end one (``WINDOW_LINES``: never, the fixed windows evals compare with)."""
    return [window.text for window in _windows(text.split("\n"), shortest)]


def _windows(lines: list[str], shortest: int = MIN_WINDOW_LINES) -> Iterator[_Window]:
    """Windows of whole lines within both bounds, each ending before an anchor once it
    holds ``shortest`` lines; over-long lines are sliced."""
    start, size = 0, 0
    for index, line in enumerate(lines):
        if len(line) > WINDOW_CHARS:
            if index > start:
                yield _Window(start, index - 1, "\n".join(lines[start:index]))
            yield from _slices(index, line)
            start, size = index + 1, 0
            continue
        held = index - start
        if index > start and (held == WINDOW_LINES or size + len(line) > WINDOW_CHARS or (
                held >= shortest and _is_anchor(line))):
            yield _Window(start, index - 1, "\n".join(lines[start:index]))
            start, size = index, 0
        size += len(line) + 1  # the newline joining it to the next line
    if start < len(lines):
        yield _Window(start, len(lines) - 1, "\n".join(lines[start:]))


def _is_anchor(line: str) -> bool:
    """Whether a window may end before ``line``: by its own text alone (stripped; never a
    blank line), with a hash that is the same in every process (crc32, not ``hash``)."""
    text = line.strip()
    return bool(text) and zlib.crc32(text.encode("utf-8", "surrogatepass")) % ANCHOR_EVERY == 0


def _slices(index: int, line: str) -> Iterator[_Window]:
    for offset in range(0, len(line), WINDOW_CHARS):
        yield _Window(index, index, line[offset : offset + WINDOW_CHARS])


def _sections(lines: list[str], pattern: re.Pattern[str] | None) -> list[str | None]:
    """For each line, the nearest section heading at or above it (None without one)."""
    current: str | None = None
    result: list[str | None] = []
    for line in lines:
        if pattern is not None and len(line) <= WINDOW_CHARS:
            found = pattern.fullmatch(line.rstrip("\r"))
            if found is not None:
                current = found.group("name").strip("\"'")
        result.append(current)
    return result


def _context(path: str, section: str | None) -> str:
    return f"path: {path}" if section is None else f"path: {path}\nsection: {section}"
