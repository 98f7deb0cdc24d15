"""Which language a path is written in, and the tree-sitter parser for it."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from tree_sitter import Parser

__all__ = ["CODE_LANGUAGES", "Language", "language_for_path", "parser_for"]

Language = Literal[
    "python",
    "javascript",
    "typescript",
    "tsx",
    "go",
    "java",
    "rust",
    "markdown",
    "rst",
    "yaml",
    "toml",
    "ini",
    "json",
    "text",
]

CODE_LANGUAGES: frozenset[str] = frozenset(
    {"python", "javascript", "typescript", "tsx", "go", "java", "rust"}
)

_BY_SUFFIX: dict[str, Language] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".java": "java",
    ".rs": "rust",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".yml": "yaml",
    ".yaml": "yaml",
    ".toml": "toml",
    ".ini": "ini",
    ".cfg": "ini",
    ".json": "json",
}

# Readable files without a grammar here: indexed as bounded line windows so search
# still finds them, but no symbols are extracted.
_TEXT_SUFFIXES = frozenset(
    {
        ".txt", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".rb", ".php", ".kt", ".kts",
        ".swift", ".scala", ".sh", ".bash", ".sql", ".html", ".css", ".scss", ".vue",
        ".svelte", ".proto", ".graphql", ".tf", ".lua", ".pl", ".r", ".jl", ".ex", ".exs",
    }
)
_TEXT_NAMES = frozenset(
    {"Makefile", "Dockerfile", "Justfile", "Procfile", "CODEOWNERS", ".gitignore",
     ".gitattributes", ".editorconfig", "LICENSE", "NOTICE"}
)


def language_for_path(path: str) -> Language | None:
    """The language of ``path`` by its name, or None for a file type we do not index."""
    # PurePosixPath's name and suffix, without building one: this runs for every file
    # listed, and a sharded build lists every file once per shard.
    name = path.rpartition("/")[2]
    dot = name.rfind(".")
    suffix = name[dot:] if 0 < dot < len(name) - 1 else ""
    lowered = suffix.lower()
    if lowered in _BY_SUFFIX:
        return _BY_SUFFIX[lowered]
    if lowered in _TEXT_SUFFIXES or name in _TEXT_NAMES:
        return "text"
    if suffix == "" and name.upper() in {"README", "CHANGES", "HISTORY", "AUTHORS"}:
        return "markdown"
    return None


@cache
def parser_for(language: str) -> Parser:
    """A tree-sitter parser for ``language``; grammars come bundled with the wheel."""
    from tree_sitter_language_pack import get_parser

    return get_parser(language)  # type: ignore[arg-type]
