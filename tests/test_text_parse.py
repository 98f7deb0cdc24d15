from __future__ import annotations

import zlib

import pytest

from pr_context.parse.text import (
    ANCHOR_EVERY,
    MAX_WINDOWS_PER_FILE,
    MIN_WINDOW_LINES,
    WINDOW_CHARS,
    WINDOW_LINES,
    parse_text_windows,
)

_WORKFLOW = """name: CI
on:
  push:
    branches: [main]
jobs:
""" + "".join(f"  job{i}:\n    runs-on: ubuntu-latest\n" for i in range(30))


def _ranges(text: str, language: str = "text") -> list[tuple[int, int]]:
    parsed = parse_text_windows("x", text, language, "config")
    return [(c.start_line, c.end_line) for c in parsed.chunks]


@pytest.mark.parametrize(
    ("language", "kind"),
    [("yaml", "config"), ("toml", "config"), ("ini", "config"), ("json", "config"),
     ("text", "text")],
)
def test_chunk_kind_by_language(language: str, kind: str) -> None:
    parsed = parse_text_windows("f", "a = 1\n", language, "config")
    assert parsed.language == language
    assert [c.kind for c in parsed.chunks] == [kind]
    assert parsed.definitions == parsed.references == parsed.imports == ()


def _anchor(text: str) -> bool:
    return zlib.crc32(text.encode()) % ANCHOR_EVERY == 0


def _lines(count: int, anchors: bool) -> list[str]:
    """``count`` distinct lines, all anchors or none."""
    found = (f"key{i} = {i}" for i in range(100_000))
    return [line for line in found if _anchor(line) == anchors][:count]


def test_windows_of_forty_lines_without_an_anchor() -> None:
    text = "\n".join(_lines(100, anchors=False))
    assert _ranges(text) == [(1, 40), (41, 80), (81, 100)]


def test_a_window_ends_before_an_anchor_once_long_enough() -> None:
    lines = _lines(100, anchors=False)
    anchor = _lines(1, anchors=True)[0]
    # too early in the first window to end it; ends the second, past its minimum
    lines[10] = lines[40 + MIN_WINDOW_LINES] = anchor
    assert _ranges("\n".join(lines)) == [(1, 40), (41, 40 + MIN_WINDOW_LINES),
                                          (41 + MIN_WINDOW_LINES, 100)]


def test_a_line_added_near_the_top_leaves_the_later_windows_as_they_were() -> None:
    lines = [f'    "package-{i}>={i % 7}.{i % 11}",' for i in range(400)]
    before = [c.text for c in parse_text_windows("pyproject.toml", "\n".join(lines), "toml",
                                                 "config").chunks]
    lines.insert(3, '    "ipython>=9.6.0",')
    after = [c.text for c in parse_text_windows("pyproject.toml", "\n".join(lines), "toml",
                                                "config").chunks]
    assert len(before) >= 10
    assert len(set(after) - set(before)) <= 2  # 40-line windows: every one of them


def test_window_text_is_the_exact_lines() -> None:
    lines = _lines(50, anchors=False)
    text = "\n".join(lines) + "\n"
    first, second = parse_text_windows("notes.txt", text, "text", "docs").chunks
    assert first.text == "\n".join(lines[:40])
    assert second.text == "\n".join(lines[40:]) + "\n"
    assert (first.role, first.symbol, first.context) == ("docs", None, "path: notes.txt")


def test_character_cap_splits_a_window_of_long_lines() -> None:
    line = "x" * 1_500
    text = "\n".join([line] * 10)
    ranges = _ranges(text)
    assert ranges == [(1, 2), (3, 4), (5, 6), (7, 8), (9, 10)]
    assert all(len(c.text) <= WINDOW_CHARS for c in parse_text_windows("x", text, "text",
                                                                      "config").chunks)


def test_enormous_line_is_cut_into_slices() -> None:
    minified = '{"items": [' + ",".join(['{"id": 1}'] * 2_000) + "]}"
    text = "{\n" + minified + "\n}"
    chunks = parse_text_windows("data.json", text, "json", "config").chunks
    slices = [c for c in chunks if c.start_line == c.end_line == 2]
    assert len(slices) == -(-len(minified) // WINDOW_CHARS)
    assert "".join(c.text for c in slices) == minified
    assert [(c.start_line, c.end_line) for c in chunks if c not in slices] == [(1, 1), (3, 3)]


def test_window_count_is_capped() -> None:
    text = "\n".join("x" for _ in range(WINDOW_LINES * (MAX_WINDOWS_PER_FILE + 50)))
    chunks = parse_text_windows("big.txt", text, "text", "docs").chunks
    assert len(chunks) == MAX_WINDOWS_PER_FILE
    assert chunks[-1].end_line == WINDOW_LINES * MAX_WINDOWS_PER_FILE


@pytest.mark.parametrize("text", ["", "\n\n\n", "   \n\t\n"])
def test_blank_file_has_no_chunks(text: str) -> None:
    assert parse_text_windows("empty.yml", text, "yaml", "config").chunks == ()


@pytest.mark.parametrize(
    ("path", "language", "text", "contexts"),
    [
        (".github/workflows/ci.yml", "yaml", _WORKFLOW,
         ["path: .github/workflows/ci.yml\nsection: name",
          "path: .github/workflows/ci.yml\nsection: jobs",
          "path: .github/workflows/ci.yml\nsection: jobs"]),
        ("pyproject.toml", "toml",
         '[project]\nname = "x"\n' + "\n" * 40 + "[tool.ruff]\nline-length = 100\n",
         ["path: pyproject.toml\nsection: project", "path: pyproject.toml\nsection: project"]),
        ("setup.cfg", "ini", "# comment\n" * 40 + "[metadata]\nname = x\n",
         ["path: setup.cfg", "path: setup.cfg\nsection: metadata"]),
        ("data.json", "json", '{\n  "a": 1\n}\n', ["path: data.json"]),
    ],
)
def test_context_names_the_section_a_window_starts_in(
    path: str, language: str, text: str, contexts: list[str]
) -> None:
    chunks = parse_text_windows(path, text, language, "config").chunks
    assert [c.context for c in chunks] == contexts
