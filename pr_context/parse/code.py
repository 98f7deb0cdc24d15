"""Source code → definitions, references, imports and chunks, with tree-sitter (pure).

One parse and one run of the language's tag query (``pr_context/queries/*.scm``) per
file; the helpers in ``code_defs``, ``code_refs``, ``code_imports`` and ``code_chunks``
read the matches. Tree-sitter recovers from syntax errors, so broken files still yield
what can be found; ``syntax_errors`` counts the ERROR and MISSING nodes.

Conventions: lines are 1-based; reference columns are 0-based **byte** offsets into the
UTF-8 encoded line (tree-sitter's points). Qualified names are the module path (rules in
:mod:`pr_context.parse.code_paths`) plus enclosing definitions, joined with ``.``.
Every chunk carries the ``role`` given; other stages refine it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tree_sitter import QueryCursor

from pr_context.languages import parser_for
from pr_context.models import Import, ParsedFile, Role
from pr_context.parse.code_chunks import MAX_CHUNK_CHARS, MAX_CHUNK_LINES, build_chunks
from pr_context.parse.code_defs import DefinitionTag, collect_sites, first_named_child, node_text
from pr_context.parse.code_imports import imports_from
from pr_context.parse.code_lang import LANGUAGE_SPECS, LanguageSpec, TagQuery, tag_query
from pr_context.parse.code_paths import module_path
from pr_context.parse.code_refs import ReferenceTag, collect_references
from pr_context.parse.code_scopes import Scopes
from pr_context.parse.code_strings import message_templates
from pr_context.parse.code_syntax import syntax_uses

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["MAX_CHUNK_CHARS", "MAX_CHUNK_LINES", "module_path", "parse_code"]

_RECEIVER_CAPTURE = "receiver"
_PACKAGE_NODES = frozenset({"package_clause", "package_declaration"})
_PACKAGE_LANGUAGES = frozenset({"go", "java"})


@dataclass
class _Tags:
    """The query's matches sorted by what they tag."""

    definitions: list[DefinitionTag] = field(default_factory=list)
    references: list[ReferenceTag] = field(default_factory=list)
    imports: list[Node] = field(default_factory=list)
    skipped: set[int] = field(default_factory=set)  # start bytes that are not references
    wrappers: dict[int, Node] = field(default_factory=dict)  # by the wrapped node's id
    scopes: list[Node] = field(default_factory=list)  # nodes that open a naming scope
    bound: list[Node] = field(default_factory=list)  # names a scope binds (locals)


def parse_code(path: str, text: str, language: str, role: Role) -> ParsedFile:
    """Parse one source file; never raises on malformed or unusual text.

    :raises KeyError: for a language outside :data:`~pr_context.languages.CODE_LANGUAGES`.
    """
    spec = LANGUAGE_SPECS[language]
    src = text.encode("utf-8", "surrogatepass")
    root = parser_for(language).parse(src).root_node
    tags = _tags(tag_query(language), root)
    package = _declared_package(root, src, spec) if language in _PACKAGE_LANGUAGES else None
    module = module_path(path, language, package)
    sites = collect_sites(tags.definitions, tags.wrappers, src, spec, module)
    return ParsedFile(
        path=path,
        language=language,
        role=role,
        definitions=tuple(site.definition for site in sites if site.definition is not None),
        references=tuple(collect_references(tags.references, tags.skipped, src, sites,
                                            Scopes(tags.scopes, tags.bound, src))),
        imports=tuple(_imports(tags.imports, src, language)),
        chunks=tuple(build_chunks(root, sites, text.split("\n"), path, language, role)),
        messages=tuple(message_templates(root, src, language)),
        syntax_uses=syntax_uses(text) if language == "python" else (),
        syntax_errors=_count_errors(root),
    )


def _tags(query: TagQuery, root: Node) -> _Tags:
    """Run the query once and sort its matches by the role of their pattern."""
    tags = _Tags()
    roles = query.patterns
    for pattern, captures in QueryCursor(query.query).matches(root):
        role = roles[pattern]
        if role.role == "reference":
            receiver = captures.get(_RECEIVER_CAPTURE)
            tagged = captures[role.capture][0]
            tags.references.append((role.kind, tagged, receiver[0] if receiver else None))
        elif role.role == "definition":
            name = captures[role.name_capture][0]
            tags.definitions.append((pattern, role.kind, captures[role.capture][0], name))
        elif role.role == "wrapper":
            tags.wrappers[captures[role.name_capture][0].id] = captures[role.capture][0]
        elif role.role == "import":
            nodes = captures[role.capture]
            tags.imports.extend(nodes)
            # An import starts with a keyword, or with ``require`` that is no reference.
            tags.skipped.update(node.start_byte for node in nodes)
        elif role.role == "skip":
            tags.skipped.update(node.start_byte for node in captures[role.capture])
        elif role.role == "scope":
            tags.scopes.extend(captures[role.capture])
        elif role.role == "local":
            tags.bound.extend(captures[role.capture])
    tags.imports.sort(key=_start)
    return tags


def _start(node: Node) -> int:
    return node.start_byte


def _imports(nodes: list[Node], src: bytes, language: str) -> list[Import]:
    return [item for node in nodes for item in imports_from(node, src, language)]


def _declared_package(root: Node, src: bytes, spec: LanguageSpec) -> str | None:
    """The Go or Java ``package`` name, if the file starts with one (after comments)."""
    for child in root.named_children:
        if child.type in _PACKAGE_NODES:
            name = first_named_child(child)
            return node_text(name, src) if name is not None else None
        if child.type not in spec.comments:
            break
    return None


def _count_errors(root: Node) -> int:
    """ERROR and MISSING nodes, visiting only subtrees that contain an error."""
    if not root.has_error:
        return 0
    count = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            count += 1
        stack.extend(child for child in node.children if child.has_error or child.is_missing)
    return count
