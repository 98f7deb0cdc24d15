"""Markdown and reStructuredText: heading sections and symbol mentions (pure; no I/O).

Both formats are read line by line, which is fast and never fails on malformed input.

Sections: every heading starts a section that runs to the line before the next heading
of any level; text before the first heading is a section of its own. Trailing blank
lines are left out of a section's line range. A section longer than
``MAX_SECTION_LINES`` lines or ``MAX_SECTION_CHARS`` characters is split into several
``section`` chunks at blank lines, never inside a code block unless that block alone is
too big (then at line boundaries; a single line is never cut). Every chunk's context
names the file and the heading path (``section: Install > From source``).

Headings: Markdown ATX (``#``) and setext (``===`` / ``---``) headings outside fenced
code blocks, HTML comments and front matter; RST titles with an underline (and optional
overline) at least as long as the title (or at least 4 characters, as docutils accepts),
levels in the order each adornment style first appears.

References (no definitions or imports come from docs):

- ``mention``: an identifier or dotted name alone in inline code (```Client.get(x)```
  → name ``get``, receiver ``Client``), and calls or dotted names in code blocks
  (fenced blocks, RST literal blocks, ``code-block`` directives, ``>>>`` lines); blocks
  in data or shell languages (json, yaml, bash, ...) are skipped;
- ``directive``: autodoc and Python-domain directives (``.. autofunction:: pkg.f``,
  ``.. py:method:: C.m(x)``), cross-reference roles (``:meth:`~pkg.C.m```) in RST and
  MyST, and mkdocstrings ``::: pkg.mod.f``; the name is the full dotted target, the
  receiver None. Module directives (``currentmodule``) are reported too, so a resolver
  can qualify relative targets; targets are not qualified here.

``enclosing`` is the heading path of the section the reference is in (None before the
first heading). Lines longer than ``MAX_SCANNED_LINE_CHARS`` are not searched.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from pr_context.models import Chunk, ParsedFile, Reference, Role

__all__ = [
    "MAX_SCANNED_LINE_CHARS",
    "MAX_SECTION_CHARS",
    "MAX_SECTION_LINES",
    "parse_markdown",
    "parse_rst",
]

MAX_SECTION_LINES = 80
MAX_SECTION_CHARS = 4_000
# Longer lines (an embedded blob, a generated table) are not searched for references:
# the inline-code pattern is quadratic in the number of backticks on a line.
MAX_SCANNED_LINE_CHARS = 2_000

# How a line is read: "text" (headings, inline code, directives), "prose" (inline code
# and directives only: the body of a MyST admonition fence), "code" (calls and dotted
# names), "skip" (nothing: data-language blocks, front matter, comments) and "fence"
# (a code fence delimiter, whose info string may hold a MyST directive).
_Kind = Literal["text", "prose", "code", "skip", "fence"]

_IDENT = r"[A-Za-z_]\w*"
_CHAIN = rf"{_IDENT}(?:(?:\.|::){_IDENT})*"
_SEPARATOR = re.compile(r"\.|::")
_DOTTED_TARGET = re.compile(r"[A-Za-z_][\w.]*")

# Code-block languages whose content holds no symbol calls worth reporting.
_DATA_LANGUAGES = frozenset(
    {"text", "txt", "plaintext", "plain", "output", "json", "json5", "yaml", "yml", "toml",
     "ini", "cfg", "csv", "xml", "html", "bash", "sh", "shell", "zsh", "fish", "powershell",
     "ps1", "bat", "cmd", "diff", "patch", "dockerfile", "make", "makefile", "mermaid",
     "dot", "none", "sql"}
)
_SKIP_NAMES = frozenset(
    {"if", "elif", "else", "for", "while", "with", "return", "yield", "await", "async",
     "not", "and", "or", "in", "is", "lambda", "def", "class", "import", "from", "as",
     "assert", "del", "raise", "try", "except", "finally", "pass", "print", "super",
     "len", "str", "int", "float", "bool", "list", "dict", "set", "tuple", "range",
     "isinstance", "type", "True", "False", "None", "self", "cls", "function", "new",
     "typeof", "switch", "catch", "case", "fn", "func", "let", "var", "const", "match",
     "this", "null", "true", "false", "sizeof", "void"}
)
_FILE_SUFFIXES = frozenset(
    {"py", "pyi", "md", "rst", "txt", "json", "yml", "yaml", "toml", "ini", "cfg", "js",
     "ts", "tsx", "jsx", "go", "rs", "java", "html", "css", "sh", "lock", "com", "org",
     "io", "net", "csv", "png", "svg", "gz", "zip", "whl"}
)

# A chain starts after anything but a name character or a dot that follows one, so the
# method in ``Literal("b").set_name("x")`` is found (with no receiver) but ``b.c`` is one
# chain, not two.
_CODE_NAME = re.compile(
    rf"(?<![\w$@/\\-])(?<![\w$]\.)(?P<chain>{_CHAIN})(?P<call>[ \t]*\()?"
)
_SPAN_SYMBOL = re.compile(rf"[ \t]*@?(?P<chain>{_CHAIN})[ \t]*(?:\(.*\))?[ \t]*")
_ROLE_TARGET = re.compile(r"[^<]*<(?P<target>[^>]+)>[ \t]*")  # ``title <target>``
_XREF_ROLES = r"(?:func|meth|class|attr|exc|mod|data|obj|const|type|property|decorator)"
_DOC_DIRECTIVES = (
    r"(?:auto(?:function|class|method|attribute|property|data|exception|module|decorator)"
    r"|function|class|method|staticmethod|classmethod|attribute|property|data|exception"
    r"|module|currentmodule|decorator)"
)

_MD_FENCE_OPEN = re.compile(r"[ \t]*(?P<marker>`{3,}|~{3,})(?P<info>.*)")
_MD_ATX = re.compile(r" {0,3}(?P<hashes>#{1,6})(?:[ \t]+(?P<title>.*?))?(?:[ \t]+#+)?[ \t]*")
_MD_SETEXT = re.compile(r" {0,3}(?P<bar>=+|-+)[ \t]*")
_MD_NOT_PARAGRAPH = re.compile(r"[ \t]*(?:[-*+][ \t]|[>|<]|\d+[.)][ \t])")
_MD_SPAN = re.compile(r"(?<![`}\\])(?P<ticks>`+)(?!`)(?P<body>.+?)(?<!`)(?P=ticks)(?!`)")
_MD_ROLE = re.compile(rf"\{{(?:py:)?{_XREF_ROLES}\}}`(?P<target>[^`]+)`")
_MD_MKDOCSTRINGS = re.compile(r"^:::[ \t]+(?P<target>[A-Za-z_][\w.]*)")
_MD_FENCE_DIRECTIVE = re.compile(rf"\{{(?:py:)?{_DOC_DIRECTIVES}\}}[ \t]+(?P<target>\S+)")
_MD_CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "code-cell", "ipython"})

_RST_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1*")
_RST_MIN_UNDERLINE = 4  # docutils accepts a shorter-than-title underline from 4 chars
_RST_CODE_DIRECTIVE = re.compile(
    r"(?P<indent>[ \t]*)\.\.[ \t]+(?:code-block|code|sourcecode|doctest|testcode|testsetup"
    r"|ipython|jupyter-execute)::[ \t]*(?P<language>\S*)"
)
_RST_LITERAL = re.compile(r"[^.].*::[ \t]*|::[ \t]*")  # a paragraph ending in ``::``
_RST_SPANS = (
    re.compile(r"``(?P<body>[^`]+?)``"),  # inline literal
    re.compile(r"(?<![`:\w])`(?P<body>[^`]+)`(?![`_])"),  # default role; not a link
)
_RST_ROLE = re.compile(rf":(?:[a-z]+:)?{_XREF_ROLES}:`(?P<target>[^`]+)`")
_RST_DIRECTIVE = re.compile(
    rf"^[ \t]*\.\.[ \t]+(?:py:)?{_DOC_DIRECTIVES}::[ \t]+(?P<target>[A-Za-z_][\w.]*)"
)


@dataclass(frozen=True)
class _Heading:
    line: int  # 0-based index of the heading's first line (an RST overline or the title)
    level: int
    title: str


@dataclass(frozen=True)
class _Layout:
    kinds: list[_Kind]  # one per line
    headings: list[_Heading]


@dataclass(frozen=True)
class _Syntax:
    """The per-format patterns used to find references in a laid-out document."""

    spans: tuple[re.Pattern[str], ...]  # inline code, group "body"
    directives: tuple[re.Pattern[str], ...]  # group "target"; roles and directives
    fence_directive: re.Pattern[str] | None  # on fence lines, group "target"


@dataclass(frozen=True)
class _Section:
    start: int  # 0-based, inclusive
    end: int
    path: str | None  # "Install > From source"


_MARKDOWN = _Syntax((_MD_SPAN,), (_MD_ROLE, _MD_MKDOCSTRINGS), _MD_FENCE_DIRECTIVE)
_RST = _Syntax(_RST_SPANS, (_RST_ROLE, _RST_DIRECTIVE), None)


def parse_markdown(path: str, text: str, role: Role) -> ParsedFile:
    """Sections and mentions of a Markdown (CommonMark, GFM, MyST, MkDocs) file."""
    lines = _lines(text)
    return _parsed(path, "markdown", role, lines, _markdown_layout(lines), _MARKDOWN)


def parse_rst(path: str, text: str, role: Role) -> ParsedFile:
    """Sections and mentions of a reStructuredText file."""
    lines = _lines(text)
    return _parsed(path, "rst", role, lines, _rst_layout(lines), _RST)


def _lines(text: str) -> list[str]:
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def _parsed(
    path: str, language: str, role: Role, lines: list[str], layout: _Layout, syntax: _Syntax
) -> ParsedFile:
    sections = _sections(layout.headings, lines)
    chunks = tuple(
        chunk
        for section in sections
        for chunk in _section_chunks(path, role, lines, layout.kinds, section)
    )
    references = tuple(_references(lines, layout.kinds, syntax, sections))
    return ParsedFile(
        path=path, language=language, role=role, references=references, chunks=chunks
    )


# --- sections and chunks -------------------------------------------------------------


def _sections(headings: list[_Heading], lines: list[str]) -> list[_Section]:
    """One section per heading, plus the text before the first; heading paths resolved."""
    starts: list[tuple[int, str | None]] = []
    if not headings or headings[0].line > 0:
        starts.append((0, None))
    stack: list[_Heading] = []
    for heading in headings:
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
        starts.append((heading.line, " > ".join(h.title for h in stack)))
    ends = [start - 1 for start, _ in starts[1:]] + [len(lines) - 1]
    return [
        _Section(start, _trim_blank_tail(lines, start, end), heading_path)
        for (start, heading_path), end in zip(starts, ends, strict=True)
    ]


def _trim_blank_tail(lines: list[str], start: int, end: int) -> int:
    while end >= start and not lines[end].strip():
        end -= 1
    return end


def _section_chunks(
    path: str, role: Role, lines: list[str], kinds: list[_Kind], section: _Section
) -> Iterator[Chunk]:
    if section.end < section.start:
        return
    context = f"path: {path}"
    if section.path is not None:
        context += f"\nsection: {section.path}"
    for start, end in _pieces(lines, kinds, section.start, section.end):
        text = "\n".join(lines[start : end + 1])
        yield Chunk("section", start + 1, end + 1, text, None, role, context)


def _pieces(lines: list[str], kinds: list[_Kind], start: int, end: int) -> list[tuple[int, int]]:
    """Line ranges of at most the section limits, cut at blank lines outside code."""
    if _fits(lines, start, end):
        return [(start, end)]
    pieces: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    for block in _blocks(lines, kinds, start, end):
        if current is not None and _fits(lines, current[0], block[1]):
            current = (current[0], block[1])
            continue
        if current is not None:
            pieces.append(current)
        current = None
        if _fits(lines, *block):
            current = block
        else:
            pieces.extend(_line_pieces(lines, *block))
    if current is not None:
        pieces.append(current)
    return pieces


def _blocks(
    lines: list[str], kinds: list[_Kind], start: int, end: int
) -> Iterator[tuple[int, int]]:
    """Maximal runs of lines between blank lines that are not inside a code block."""
    block_start: int | None = None
    for index in range(start, end + 1):
        is_break = not lines[index].strip() and kinds[index] in ("text", "prose")
        if is_break and block_start is not None:
            yield block_start, _trim_blank_tail(lines, block_start, index - 1)
            block_start = None
        elif not is_break and block_start is None:
            block_start = index
    if block_start is not None:
        yield block_start, _trim_blank_tail(lines, block_start, end)


def _line_pieces(lines: list[str], start: int, end: int) -> Iterator[tuple[int, int]]:
    """Greedy whole-line pieces of a block too big on its own."""
    piece_start = start
    for index in range(start + 1, end + 1):
        if not _fits(lines, piece_start, index):
            yield piece_start, index - 1
            piece_start = index
    yield piece_start, end


def _fits(lines: list[str], start: int, end: int) -> bool:
    if end - start + 1 > MAX_SECTION_LINES:
        return False
    return sum(len(line) + 1 for line in lines[start : end + 1]) - 1 <= MAX_SECTION_CHARS


# --- Markdown layout -------------------------------------------------------------------


def _markdown_layout(lines: list[str]) -> _Layout:
    kinds: list[_Kind] = ["text"] * len(lines)
    headings: list[_Heading] = []
    index = _skip_front_matter(lines, kinds)
    while index < len(lines):
        line = lines[index]
        fence = _MD_FENCE_OPEN.fullmatch(line)
        if fence is not None and _is_fence(fence):
            index = _mark_fence(lines, kinds, index, fence)
        elif line.lstrip().startswith("<!--"):
            index = _mark_comment(lines, kinds, index)
        else:
            heading = _markdown_heading(lines, kinds, headings, index)
            if heading is not None:
                headings.append(heading)
            index += 1
    return _Layout(kinds, headings)


def _skip_front_matter(lines: list[str], kinds: list[_Kind]) -> int:
    """Mark YAML (``---``) or TOML (``+++``) front matter; return the first line after it."""
    if not lines or lines[0] not in ("---", "+++"):
        return 0
    closers = ("---", "...") if lines[0] == "---" else ("+++",)
    for index in range(1, len(lines)):
        if lines[index] in closers:
            kinds[: index + 1] = ["skip"] * (index + 1)
            return index + 1
    return 0


def _is_fence(opening: re.Match[str]) -> bool:
    """A backtick fence's info string may not contain backticks (that is inline code)."""
    return not (opening.group("marker")[0] == "`" and "`" in opening.group("info"))


def _mark_fence(lines: list[str], kinds: list[_Kind], start: int, fence: re.Match[str]) -> int:
    marker = fence.group("marker")
    closing = re.compile(rf"[ \t]*{re.escape(marker[0])}{{{len(marker)},}}[ \t]*")
    body = _fence_body_kind(fence.group("info"))
    kinds[start] = "fence"
    for index in range(start + 1, len(lines)):
        if closing.fullmatch(lines[index]):
            kinds[index] = "fence"
            return index + 1
        kinds[index] = body
    return len(lines)  # an unclosed fence runs to the end of the document


def _fence_body_kind(info: str) -> _Kind:
    words = info.strip().split()
    if not words:
        return "code"
    first = words[0].lower()
    if first.startswith("{"):  # MyST: ```{directive} argument
        directive = first.strip("{}")
        if directive in _MD_CODE_DIRECTIVES:
            return _code_kind(words[1] if len(words) > 1 else "")
        return "prose" if _MD_FENCE_DIRECTIVE.match(info.strip()) is None else "skip"
    return _code_kind(first)


def _code_kind(language: str) -> _Kind:
    return "skip" if language.lstrip(".").lower() in _DATA_LANGUAGES else "code"


def _mark_comment(lines: list[str], kinds: list[_Kind], start: int) -> int:
    for index in range(start, len(lines)):
        kinds[index] = "skip"
        if "-->" in lines[index]:
            return index + 1
    return len(lines)


def _markdown_heading(
    lines: list[str], kinds: list[_Kind], headings: list[_Heading], index: int
) -> _Heading | None:
    line = lines[index]
    atx = _MD_ATX.fullmatch(line)
    if atx is not None:
        return _Heading(index, len(atx.group("hashes")), (atx.group("title") or "").strip())
    setext = _MD_SETEXT.fullmatch(line)
    if setext is None or index == 0:
        return None
    start = _paragraph_start(lines, kinds, headings, index - 1)
    if start is None:
        return None
    title = " ".join(lines[i].strip() for i in range(start, index))
    return _Heading(start, 1 if setext.group("bar")[0] == "=" else 2, title)


def _paragraph_start(
    lines: list[str], kinds: list[_Kind], headings: list[_Heading], last: int
) -> int | None:
    """First line of the plain paragraph ending at ``last``, or None if there is none."""
    previous_heading = headings[-1].line if headings else -1
    start = last
    if last <= previous_heading or not _is_paragraph_line(lines[last], kinds[last]):
        return None
    start = last
    while start > previous_heading + 1 and _is_paragraph_line(lines[start - 1], kinds[start - 1]):
        start -= 1
    if _MD_NOT_PARAGRAPH.match(lines[start]):
        return None
    if start == last and lines[last].startswith(("    ", "\t")):
        return None  # an indented code line, not a paragraph
    return start


def _is_paragraph_line(line: str, kind: _Kind) -> bool:
    return (
        kind == "text"
        and bool(line.strip())
        and _MD_ATX.fullmatch(line) is None
        and _MD_SETEXT.fullmatch(line) is None
    )


# --- reStructuredText layout -------------------------------------------------------------


def _rst_layout(lines: list[str]) -> _Layout:
    kinds: list[_Kind] = ["text"] * len(lines)
    headings: list[_Heading] = []
    styles: list[tuple[str, bool]] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        code = _RST_CODE_DIRECTIVE.match(line)
        if code is not None:
            block_kind = _code_kind(code.group("language"))
            index = _mark_indented(lines, kinds, index, len(code.group("indent")), block_kind)
            continue
        if _is_doctest(line, kinds[index - 1] if index else "text"):
            kinds[index] = "code"
        elif _RST_LITERAL.fullmatch(line.strip()):
            index = _mark_indented(lines, kinds, index, _indent(line), "code")
            continue
        heading = _rst_heading(lines, kinds, index, styles)
        if heading is not None:
            headings.append(heading)
        index += 1
    return _Layout(kinds, headings)


def _is_doctest(line: str, previous: _Kind) -> bool:
    stripped = line.lstrip()
    return stripped.startswith(">>>") or (stripped.startswith("...") and previous == "code")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _mark_indented(
    lines: list[str], kinds: list[_Kind], marker: int, base: int, kind: _Kind
) -> int:
    """Mark the block indented deeper than ``base`` after line ``marker``; return its end."""
    last_code = marker
    index = marker + 1
    while index < len(lines):
        line = lines[index]
        if line.strip():
            if _indent(line) <= base:
                break
            last_code = index
        index += 1
    for inner in range(marker + 1, last_code + 1):
        kinds[inner] = kind
    return last_code + 1


def _rst_heading(
    lines: list[str], kinds: list[_Kind], index: int, styles: list[tuple[str, bool]]
) -> _Heading | None:
    """The heading whose underline is line ``index``, registering its style's level."""
    under = lines[index].rstrip()
    if index == 0 or not _RST_ADORNMENT.fullmatch(under) or kinds[index - 1] != "text":
        return None
    title_line = lines[index - 1]
    title = title_line.strip()
    if not title or _RST_ADORNMENT.fullmatch(title):
        return None
    overlined = index >= 2 and lines[index - 2].rstrip() == under
    if not overlined and (title_line[0].isspace() or (index >= 2 and lines[index - 2].strip())):
        return None  # an underline must follow a one-line paragraph at the margin
    if len(under) < len(title) and len(under) < _RST_MIN_UNDERLINE:
        return None
    style = (under[0], overlined)
    if style not in styles:
        styles.append(style)
    return _Heading(index - 2 if overlined else index - 1, styles.index(style) + 1, title)


# --- references ----------------------------------------------------------------------


def _references(
    lines: list[str], kinds: list[_Kind], syntax: _Syntax, sections: list[_Section]
) -> Iterator[Reference]:
    starts = [section.start for section in sections]
    for number, (line, kind) in enumerate(zip(lines, kinds, strict=True)):
        if kind == "skip" or len(line) > MAX_SCANNED_LINE_CHARS or not line.strip():
            continue
        section = sections[bisect.bisect_right(starts, number) - 1] if sections else None
        enclosing = section.path if section is not None else None
        found = sorted(_line_references(line, kind, syntax), key=lambda ref: ref[3])
        for name, ref_kind, receiver, column in found:
            yield Reference(name, ref_kind, receiver, number + 1, column, enclosing)


_Found = tuple[str, Literal["mention", "directive"], str | None, int]


def _line_references(line: str, kind: _Kind, syntax: _Syntax) -> Iterator[_Found]:
    if kind == "code":
        yield from _code_mentions(line)
    elif kind == "fence":
        if syntax.fence_directive is not None:
            yield from _directives(line, (syntax.fence_directive,))
    else:
        yield from _span_mentions(line, syntax.spans)
        yield from _directives(line, syntax.directives)


def _code_mentions(line: str) -> Iterator[_Found]:
    for found in _CODE_NAME.finditer(line):
        chain = found.group("chain")
        is_call = found.group("call") is not None
        if not is_call and not _SEPARATOR.search(chain):
            continue
        mention = _mention(chain, found.start("chain"), is_call)
        if mention is not None:
            yield mention


def _span_mentions(line: str, spans: tuple[re.Pattern[str], ...]) -> Iterator[_Found]:
    for pattern in spans:
        for span in pattern.finditer(line):
            symbol = _SPAN_SYMBOL.fullmatch(span.group("body"))
            if symbol is None:
                continue
            is_call = "(" in span.group("body")
            column = span.start("body") + symbol.start("chain")
            mention = _mention(symbol.group("chain"), column, is_call)
            if mention is not None:
                yield mention


def _mention(chain: str, column: int, is_call: bool) -> _Found | None:
    """A mention of the last component of ``chain``, which starts at ``column``."""
    separators = list(_SEPARATOR.finditer(chain))
    if not separators:
        return None if chain in _SKIP_NAMES else (chain, "mention", None, column)
    last = separators[-1]
    name = chain[last.end() :]  # with a receiver, ``obj.type()`` or ``C::new()`` is real
    if not is_call and (len(name) == 1 or name.lower() in _FILE_SUFFIXES):
        return None  # ``setup.py``, ``e.g``: not a symbol
    return name, "mention", chain[: last.start()], column + last.end()


def _directives(line: str, patterns: tuple[re.Pattern[str], ...]) -> Iterator[_Found]:
    for pattern in patterns:
        for found in pattern.finditer(line):
            raw = found.group("target")
            titled = _ROLE_TARGET.fullmatch(raw)
            target = (titled.group("target") if titled else raw).strip().lstrip("~!.")
            target = target.split("(", 1)[0].rstrip(".")
            if _DOTTED_TARGET.fullmatch(target):
                column = line.find(target, found.start("target"))
                yield target, "directive", None, column
