"""Source text -> chunks, definitions, references, imports and messages (pure; no I/O).

``parse_file`` picks the parser for the language, then applies what holds for every
language: secret-looking strings are redacted from chunk text and message templates, and
chunks carrying an explicit deprecation marker get the ``deprecated`` role.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from pr_context.languages import CODE_LANGUAGES
from pr_context.models import Chunk, ParsedFile, Role
from pr_context.parse.code import parse_code
from pr_context.parse.docs import parse_markdown, parse_rst
from pr_context.parse.text import parse_text_windows
from pr_context.roles import chunk_role, may_mark_deprecated
from pr_context.secrets import contains_secrets, redact_secrets

__all__ = ["PARSER_VERSION", "parse_file"]

# Bump whenever parsing, chunking, roles, redaction or the per-file digests change what
# lands in the index: indexes built by another parser version are rebuilt, not mixed.
PARSER_VERSION = "15"
_CONSTRUCTORS = frozenset({"__init__", "__new__", "constructor"})
PARSED_FILES = 64  # files whose parse is remembered: more than a pull request changes


@lru_cache(maxsize=PARSED_FILES)
def parse_file(path: str, text: str, language: str, role: Role) -> ParsedFile:
    """Parse one decoded file. Never raises on malformed input.

    Remembered by its arguments (the result is immutable): a review parses the head's
    changed files to index them, then again to find the changed symbols.
    """
    if language in CODE_LANGUAGES:
        parsed = parse_code(path, text, language, role)
    elif language == "markdown":
        parsed = parse_markdown(path, text, role)
    elif language == "rst":
        parsed = parse_rst(path, text, role)
    else:
        parsed = parse_text_windows(path, text, language, role)
    # Scanning the whole file once spares the per-chunk scans in the common case.
    redact = contains_secrets(text) or contains_secrets(path)
    marked = may_mark_deprecated(text)
    chunks = [_finish_chunk(c, redact, marked) for c in parsed.chunks]
    messages = tuple(replace(m, template=redact_secrets(m.template))
                     for m in parsed.messages) if redact else parsed.messages
    uses = tuple(replace(u, operand=redact_secrets(u.operand))
                 for u in parsed.syntax_uses) if redact else parsed.syntax_uses
    return replace(parsed, chunks=tuple(_inherit_deprecation(chunks)), messages=messages,
                   syntax_uses=uses)


def _finish_chunk(chunk: Chunk, redact: bool, marked: bool) -> Chunk:
    if redact:
        chunk = replace(chunk, text=redact_secrets(chunk.text),
                        context=redact_secrets(chunk.context))
    if marked:
        chunk = replace(chunk, role=chunk_role(chunk.role, chunk.text))
    return chunk


def _inherit_deprecation(chunks: list[Chunk]) -> list[Chunk]:
    """Methods of a deprecated class are deprecated too, whatever their own text says.

    A class is deprecated when its header is, or when constructing it warns.
    """
    deprecated = tuple(sorted(
        {f"{c.symbol}." for c in chunks
         if c.kind == "class_header" and c.role == "deprecated" and c.symbol}
        | {f"{c.symbol.rsplit('.', 1)[0]}." for c in chunks
           if c.role == "deprecated" and c.symbol
           and c.symbol.rsplit(".", 1)[-1] in _CONSTRUCTORS}))
    if not deprecated:
        return chunks
    return [replace(c, role="deprecated")
            if c.symbol and c.symbol.startswith(deprecated) else c for c in chunks]
