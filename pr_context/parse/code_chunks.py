"""Chunks of a code file: AST units with an enrichment header for embedding.

Units are the module-level sites and the members of unit containers (class-like sites,
Rust ``impl``/``mod``, TypeScript namespaces); functions nested in functions stay inside
their parent's chunk, and so do bodiless members (interface methods, trait signatures,
associated types).

- A function or method unit is one ``definition`` chunk from its leading comments and
  decorators to its end. Over ``MAX_CHUNK_LINES`` or ``MAX_CHUNK_CHARS`` it becomes
  ``definition_part`` chunks cut between body statements; every part after the first
  starts with the signature lines again (they are not counted in its ``start_line``).
  A single statement, or a leading comment, over the limit is cut by lines; a single
  line over ``MAX_CHUNK_CHARS`` is kept whole.
- A container gets ``class_header`` chunks: its lines with each member unit elided to the
  member's signature lines, split like a function when too big, repeating the
  declaration lines. Its ``end_line`` is the last line it keeps.
- Lines outside module-level units are grouped into ``module`` chunks of consecutive
  statements, split between statements when too big; blank edges are trimmed.

``definition`` and ``module`` chunk text is exactly the source lines joined by ``\\n``;
chunks are ordered by start line.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate, compress
from typing import TYPE_CHECKING

from pr_context.models import Chunk, ChunkKind, Role
from pr_context.parse.code_defs import Site, end_row

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["MAX_CHUNK_CHARS", "MAX_CHUNK_LINES", "build_chunks"]

MAX_CHUNK_LINES = 80
MAX_CHUNK_CHARS = 4_000
# A signature repeated on every part may use at most this share of a part's budget.
_MAX_PREFIX_SHARE = 0.5


@dataclass(frozen=True)
class _File:
    path: str
    language: str
    role: Role
    lines: list[str]
    widths: list[int]  # characters per line, without the newline
    offsets: list[int]  # characters before each line, without newlines

    def range_chars(self, first: int, last: int) -> int:
        return self.offsets[last + 1] - self.offsets[first]


@dataclass
class _Piece:
    prefix: int  # how many leading rows repeat the signature
    rows: list[int]
    chars: int  # newlines not included


def build_chunks(
    root: Node, sites: list[Site], lines: list[str], path: str, language: str, role: Role
) -> list[Chunk]:
    """All chunks of one file, ordered by start line."""
    widths = list(map(len, lines))
    file = _File(path, language, role, lines, widths, [0, *accumulate(widths)])
    units = _units(sites)
    chunks: list[Chunk] = []
    for unit in units.values():
        if unit.is_container:
            members = [child for child in unit.children if id(child) in units]
            chunks.extend(_container_chunks(unit, members, file))
        else:
            chunks.extend(_function_chunks(unit, file))
    top_level = [unit for unit in units.values() if unit.parent is None]
    chunks.extend(_module_chunks(root, top_level, file))
    chunks.sort(key=lambda chunk: (chunk.start_line, -chunk.end_line))
    return chunks


def _units(sites: list[Site]) -> dict[int, Site]:
    """Sites that get their own chunks, by ``id``; parents come before their children.

    A member without a body (an interface method, a Rust ``type Error = Error;`` in an
    impl) stays whole in its container's header: a chunk of its own would repeat that
    line, and one-line aliases would crowd out real code for their common names.
    """
    units: dict[int, Site] = {}
    for site in sites:
        parent = site.parent
        if parent is None or (
            parent.is_container and id(parent) in units and site.body is not None
        ):
            units[id(site)] = site
    return units


def _function_chunks(unit: Site, file: _File) -> list[Chunk]:
    first, last = unit.chunk_row, unit.end_row
    if _fits(last - first + 1, file.range_chars(first, last)):
        return [_chunk("definition", _Piece(0, list(range(first, last + 1)), 0), unit, file)]
    return _split(unit, "definition_part", None, file)


def _container_chunks(unit: Site, members: list[Site], file: _File) -> list[Chunk]:
    kept = _kept_rows(unit, members)
    if _fits_rows(kept, file):
        return [_chunk("class_header", _Piece(0, kept, 0), unit, file)]
    return _split(unit, "class_header", set(kept), file)


def _split(unit: Site, kind: ChunkKind, keep: set[int] | None, file: _File) -> list[Chunk]:
    """Chunks of ``unit`` cut between body statements, only ``keep`` rows (None: all)."""

    def kept(first: int, last: int) -> list[int]:
        return [row for row in range(first, last + 1) if keep is None or row in keep]

    statements = _statements(unit.body)
    head_end = statements[0].start_point.row - 1 if statements else unit.signature_end_row
    items, last = _items(statements, head_end + 1, keep)
    if not statements:
        items = [[row] for row in kept(head_end + 1, unit.end_row)]
        last = unit.end_row
    head, prefix = kept(unit.chunk_row, head_end), kept(unit.signature_row, head_end)
    pieces = _pack(head, items, prefix, kept(last + 1, unit.end_row), file)
    return [_chunk(kind, piece, unit, file) for piece in pieces]


def _kept_rows(unit: Site, members: list[Site]) -> list[int]:
    """The container's rows with each member unit reduced to its signature rows."""
    base = unit.chunk_row
    keep = bytearray(b"\x01") * (unit.end_row - base + 1)
    for member in members:
        _mark(keep, member.chunk_row - base, member.end_row - base, 0)
        signature_end = min(member.signature_end_row, member.end_row)
        _mark(keep, member.signature_row - base, signature_end - base, 1)
    return list(compress(range(base, base + len(keep)), keep))


def _mark(flags: bytearray, first: int, last: int, value: int) -> None:
    """Set ``flags[first..last]`` (inclusive, clipped to the array) to ``value``."""
    first, last = max(first, 0), min(last, len(flags) - 1)
    if first <= last:
        flags[first : last + 1] = bytes([value]) * (last - first + 1)


def _statements(body: Node | None) -> list[Node]:
    """The body's statements or members; Go wraps them in a ``statement_list``."""
    if body is None:
        return []
    children = body.named_children
    if len(children) == 1 and children[0].type == "statement_list":
        return children[0].named_children
    return children


def _items(nodes: list[Node], first_row: int, keep: set[int] | None) -> tuple[list[list[int]], int]:
    """Row groups that may not be cut apart: one per statement, with the gap above it.

    Statements sharing a row form one group. Returns the groups and the last row used.
    """
    items: list[list[int]] = []
    last = first_row - 1
    for node in nodes:
        node_end = end_row(node)
        if node_end <= last:
            continue
        rows = [row for row in range(last + 1, node_end + 1) if keep is None or row in keep]
        joins_previous = items and node.start_point.row <= last
        last = node_end
        if joins_previous:
            items[-1].extend(rows)
        elif rows:
            items.append(rows)
    return items, last


def _pack(
    head: list[int], items: list[list[int]], prefix: list[int], tail: list[int], file: _File
) -> list[_Piece]:
    """Greedily fill pieces with whole items; pieces after the head start with ``prefix``.

    The head (leading comments, decorators, signature) is cut by lines only when it
    cannot fit on its own; the tail (closing brackets) stays with the last item.
    """
    prefix_chars = _chars(prefix, file)
    too_long = len(prefix) > MAX_CHUNK_LINES * _MAX_PREFIX_SHARE
    if too_long or prefix_chars > MAX_CHUNK_CHARS * _MAX_PREFIX_SHARE:
        prefix, prefix_chars = [], 0
    if tail:
        items = [*items[:-1], items[-1] + tail] if items else [tail]
    pieces: list[_Piece] = [_Piece(0, [], 0)]
    for part, part_chars in _cut(head, 0, 0, file):
        _add(pieces, part, part_chars, [], 0)
    for item in items:
        for part, part_chars in _cut(item, len(prefix), prefix_chars, file):
            _add(pieces, part, part_chars, prefix, prefix_chars)
    return [piece for piece in pieces if len(piece.rows) > piece.prefix]


def _add(
    pieces: list[_Piece], part: list[int], chars: int, prefix: list[int], prefix_chars: int
) -> None:
    """Append ``part`` to the last piece, or to a new one starting with ``prefix``."""
    piece = pieces[-1]
    has_own_rows = len(piece.rows) > piece.prefix
    if has_own_rows and not _fits(len(piece.rows) + len(part), piece.chars + chars):
        piece = _Piece(len(prefix), list(prefix), prefix_chars)
        pieces.append(piece)
    piece.rows.extend(part)
    piece.chars += chars


def _cut(
    item: list[int], base_lines: int, base_chars: int, file: _File
) -> list[tuple[list[int], int]]:
    """(rows, chars) of ``item`` whole, or cut by lines when it cannot fit a piece alone."""
    chars = _chars(item, file)
    if not item or _fits(base_lines + len(item), base_chars + chars):
        return [(item, chars)] if item else []
    parts: list[tuple[list[int], int]] = []
    rows: list[int] = []
    size = 0
    for row in item:
        width = file.widths[row]
        if rows and not _fits(base_lines + len(rows) + 1, base_chars + size + width):
            parts.append((rows, size))
            rows, size = [], 0
        rows.append(row)
        size += width
    parts.append((rows, size))
    return parts


def _chars(rows: list[int], file: _File) -> int:
    return sum(map(file.widths.__getitem__, rows))


def _fits(lines: int, chars: int) -> bool:
    """Whether ``lines`` lines of ``chars`` characters (newlines aside) make a small chunk."""
    return lines <= MAX_CHUNK_LINES and chars + lines - 1 <= MAX_CHUNK_CHARS


def _fits_rows(rows: list[int], file: _File) -> bool:
    return _fits(len(rows), _chars(rows, file))


def _module_chunks(root: Node, top_level: list[Site], file: _File) -> list[Chunk]:
    """Statements outside module-level units, grouped while no unit comes between."""
    covered = bytearray(len(file.lines))
    for unit in top_level:
        _mark(covered, unit.chunk_row, unit.end_row, 1)
    groups: list[list[list[int]]] = [[]]
    last = -1
    for node in root.named_children:
        node_end = min(end_row(node), len(file.lines) - 1)
        if node_end <= last:
            continue
        if covered.find(1, last + 1, node_end + 1) == -1:
            groups[-1].append(list(range(last + 1, node_end + 1)))
        else:
            _split_at_units(range(last + 1, node_end + 1), covered, groups)
        last = node_end
    chunks: list[Chunk] = []
    for items in groups:
        for piece in _pack([], items, [], [], file):
            chunks.extend(_module_chunk(piece, file))
    return chunks


def _split_at_units(rows: range, covered: bytearray, groups: list[list[list[int]]]) -> None:
    """Add the uncovered ``rows`` to ``groups``, starting a new group after each unit."""
    item: list[int] = []
    for row in rows:
        if not covered[row]:
            item.append(row)
            continue
        if item:
            groups[-1].append(item)
            item = []
        if groups[-1]:
            groups.append([])
    if item:
        groups[-1].append(item)


def _module_chunk(piece: _Piece, file: _File) -> list[Chunk]:
    rows = piece.rows
    while rows and not file.lines[rows[-1]].strip():
        rows = rows[:-1]
    while rows and not file.lines[rows[0]].strip():
        rows = rows[1:]
    if not rows:
        return []
    text = _text(rows, file)
    context = f"path: {file.path}\nlanguage: {file.language}"
    return [Chunk("module", rows[0] + 1, rows[-1] + 1, text, None, file.role, context)]


def _chunk(kind: ChunkKind, piece: _Piece, unit: Site, file: _File) -> Chunk:
    rows = piece.rows
    text = _text(rows, file)
    start = rows[piece.prefix] + 1
    return Chunk(kind, start, rows[-1] + 1, text, unit.qualified, file.role, _context(unit, file))


def _text(rows: list[int], file: _File) -> str:
    if rows[-1] - rows[0] + 1 == len(rows):  # contiguous: slice instead of indexing
        return "\n".join(file.lines[rows[0] : rows[-1] + 1])
    return "\n".join([file.lines[row] for row in rows])


def _context(unit: Site, file: _File) -> str:
    """``path``, ``language``, the enclosing containers, the symbol and its signature."""
    lines = [f"path: {file.path}", f"language: {file.language}"]
    enclosing: list[str] = []
    parent = unit.parent
    while parent is not None:
        enclosing.append(f"{parent.capture}: {parent.name}")
        parent = parent.parent
    lines.extend(reversed(enclosing))
    lines.append(f"symbol: {unit.qualified}")
    lines.append(f"signature: {unit.signature}")
    return "\n".join(lines)
