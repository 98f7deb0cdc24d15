"""Plain frozen dataclasses (and one named tuple) passed between pipeline stages.

Lines are 1-based and inclusive; columns are 0-based; paths are repository-relative with
``/``. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple, NewType

__all__ = [
    "Chunk",
    "ChunkKind",
    "DefKind",
    "Definition",
    "FileEntry",
    "Import",
    "MessageTemplate",
    "ParsedFile",
    "RefKind",
    "Reference",
    "Role",
    "Sha",
    "SyntaxUse",
]

Sha = NewType("Sha", str)

Role = Literal[
    "production",
    "test",
    "test_support",
    "docs",
    "example",
    "config",
    "generated",
    "vendored",
    "deprecated",
]

DefKind = Literal[
    "function",
    "method",
    "class",
    "struct",
    "interface",
    "trait",
    "enum",
    "type",
]

RefKind = Literal[
    "call",  # f(), obj.f(), pkg.F()
    "attribute",  # obj.attr read without a call; in Python also a bare name used as a value
    "type",  # annotation, generic argument, extends/implements, Go/Rust type use
    "instantiation",  # new Foo(), Foo{...}, Foo::new() is a call
    "mention",  # identifier in a doc code span or code block
    "directive",  # autodoc / mkdocstrings directive naming a qualified symbol
]

ChunkKind = Literal[
    "definition",  # a whole function or method
    "definition_part",  # one piece of an oversized definition, signature repeated
    "class_header",  # class/struct/interface signature, docstring and fields
    "module",  # grouped module-level statements
    "section",  # a Markdown / reStructuredText section
    "config",  # a bounded line window of a config file
    "text",  # a bounded line window of any other text file
]


@dataclass(frozen=True)
class Definition:
    """A function, method or type defined in a file."""

    name: str
    qualified_name: str  # module path + enclosing classes + name, dot-separated
    kind: DefKind
    signature: str  # the declaration line(s) up to the body, whitespace-normalised
    parameters: tuple[str, ...]  # parameter names in order, without self/cls/receiver
    docstring: str | None
    start_line: int
    end_line: int
    parent: str | None = None  # qualified name of the enclosing definition


class Reference(NamedTuple):
    """A use of a name: a call, attribute access, type use, instantiation or doc mention.

    A named tuple rather than a frozen dataclass: a file holds thousands of references,
    and a tuple is made forty times faster.
    """

    name: str  # the last identifier: ``b`` in ``a.b()``, ``pkg.mod.f`` for directives
    kind: RefKind
    receiver: str | None  # source text left of the name: ``self`` in ``self.b()``
    line: int
    column: int
    enclosing: str | None  # qualified name of the innermost enclosing definition


@dataclass(frozen=True)
class Import:
    """One imported name (or one whole module when ``name`` is None)."""

    module: str  # as written, without leading dots: ``os.path``, ``./util``, ``fmt``
    name: str | None  # ``join`` in ``from os.path import join``; None for ``import os``
    alias: str | None  # ``np`` in ``import numpy as np``
    level: int  # Python relative-import dots; 0 elsewhere
    line: int


@dataclass(frozen=True)
class Chunk:
    """A retrievable unit of text: an AST unit, a doc section or a config window."""

    kind: ChunkKind
    start_line: int
    end_line: int
    text: str  # the source text, secrets redacted
    symbol: str | None  # qualified name of the definition it belongs to
    role: Role
    context: str  # enrichment header (path, enclosing class, signature / heading path)

    @property
    def embed_text(self) -> str:
        """What the embedding model sees: the context header, then the text."""
        return f"{self.context}\n{self.text}"


@dataclass(frozen=True)
class MessageTemplate:
    """A string literal or format template in code, values as ``PLACEHOLDER``s.

    See :mod:`pr_context.parse.code_strings`: what a program raises, logs or prints.
    """

    line: int
    template: str
    name: str | None = None  # the module- or class-level constant holding it, if any


@dataclass(frozen=True)
class SyntaxUse:
    """One operand of a piece of Python syntax that makes Python call one of ``names``.

    See :mod:`pr_context.parse.code_syntax`: ``a in b`` asks ``b`` for ``__contains__``.
    """

    line: int  # 1-based, where the operand starts
    column: int  # 0-based
    operand: str  # its source text, as :func:`pr_context.graph.infer.infer` reads it
    names: tuple[str, ...]  # the methods Python tries, in order
    syntax: str  # for reasons: "`in`", "`==`", "len()", "f-string"
    # a call's callee as written (``len``, ``copy.copy``): ``names`` then depend on what
    # it binds to, decided by :mod:`pr_context.graph.syntax`
    callee: str | None = None


@dataclass(frozen=True)
class ParsedFile:
    """Everything extracted from one file at one revision."""

    path: str
    language: str
    role: Role
    definitions: tuple[Definition, ...] = ()
    references: tuple[Reference, ...] = ()
    imports: tuple[Import, ...] = ()
    chunks: tuple[Chunk, ...] = ()
    messages: tuple[MessageTemplate, ...] = ()
    syntax_uses: tuple[SyntaxUse, ...] = ()  # Python: where syntax calls dunder methods
    syntax_errors: int = 0  # tree-sitter ERROR/MISSING nodes; definitions are still kept


@dataclass(frozen=True)
class FileEntry:
    """A file as git lists it at a revision."""

    path: str
    blob_sha: str
    mode: str  # 100644, 100755, 120000 (symlink), 160000 (submodule)
    size: int = field(default=-1)  # bytes; -1 when unknown (submodules)
