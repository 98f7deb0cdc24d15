"""The class a receiver holds in Java, TypeScript, Go and Rust, from declarations alone.

Static types make most receivers evident without running anything: a parameter's
declared type, a local's declared type or the value it was declared with, a field a
class or struct header declares, what a constructor makes and what a function declares it
returns, step by step along a chain (``ClassName.get(...).annotated(a).box()``).
Declarations are read from signature and source text by :mod:`~pr_context.graph.declared`.
Python receivers are inferred by :mod:`~pr_context.graph.infer` instead.
"""

from __future__ import annotations

import re
from dataclasses import replace

from pr_context.graph.annotations import class_named, split_top_level
from pr_context.graph.declared import (
    Local,
    element_type,
    local_declaration,
    named_type,
    parameter_types,
    result_types,
    return_type,
)
from pr_context.graph.infer import Inferred
from pr_context.graph.names import enclosing_class, method_in, mro, resolve_in
from pr_context.graph.tables import CLASS_KINDS, Def, Site, Tables

__all__ = ["SELF_RECEIVERS", "go_receiver_name", "typed_receiver"]

# Receivers that denote the instance (or class) of the enclosing class, per language.
SELF_RECEIVERS: dict[str, frozenset[str]] = {
    "python": frozenset({"self", "cls"}),
    "javascript": frozenset({"this"}),
    "typescript": frozenset({"this"}),
    "tsx": frozenset({"this"}),
    "java": frozenset({"this"}),
    "rust": frozenset({"self", "Self"}),
}
# A local assigned from another local assigned from ...: typed this many steps deep.
_MAX_DEPTH = 3
# Lines read back from a site for a local's declaration: bounds the cost in huge functions.
_MAX_SCAN = 300
_NAME_SEGMENT = re.compile(r"[A-Za-z_$][\w$]*")
_CALL_SEGMENT = re.compile(r"([A-Za-z_$][\w$]*)\s*(?:<[^()]*>)?\s*\(.*\)", re.DOTALL)
_GO_RECEIVER = re.compile(r"func\s*\(\s*(\w+)\s+\*?\s*\w")
# What a loop over a collection wraps it in: `&xs`, `&mut xs`, `xs.iter()`.
_ITERATION = re.compile(r"^&\s*(?:mut\s+)?|\.(?:iter|iter_mut|into_iter)\(\)$")
# Languages whose functions may leave their return type undeclared (then inferred).
_UNDECLARED_RETURNS = frozenset({"typescript", "tsx", "javascript"})
_RETURN = re.compile(r"\s*return\s+(.+?)\s*$")
_ARROW_VALUE = re.compile(r"=>\s*([^{\s].*?)\s*;?\s*$")


def typed_receiver(tables: Tables, site: Site, scope: Def | None, receiver: str,
                   depth: int = 0) -> Inferred | None:
    """The class a statically typed receiver holds, from declarations alone: a parameter
    (``type`` in ``void f(TypeName type)``), a new instance (``new Money(1)``), what a
    function declares it returns (``ClassName.get(...)``), and so on along a call chain
    (``Foo.builder().name(n)``), a declared field (``this.writer``, ``c.parent``). An
    undeclared step ends it: unknown."""
    segments = [step.strip() for step in split_top_level(receiver, ".")]
    held, how, start = _chain_head(tables, site, scope, segments, depth)
    for segment in segments[start:]:
        if held is None:
            return None
        call = _CALL_SEGMENT.fullmatch(segment)
        if call is None:
            how = f"the field {held.qualified_name}.{segment}"
            held = _field_class(tables, held, segment)
            continue
        method = method_in(tables, held.qualified_name, call.group(1))
        held = _returned_class(tables, tables.definitions[method], depth) if method else None
        how = f"what {method} returns"
    if held is None or held.kind not in CLASS_KINDS:
        return None
    return Inferred("instance", held.qualified_name, how)


def _chain_head(tables: Tables, site: Site, scope: Def | None, segments: list[str],
                depth: int) -> tuple[Def | None, str, int]:
    """The class the first steps of a chain hold, how, and how many steps that took."""
    if not segments:
        return None, "", 0
    if scope is not None and _NAME_SEGMENT.fullmatch(segments[0]):
        if segments[0] in SELF_RECEIVERS.get(site.language, ()) or segments[0] == (
                go_receiver_name(scope)):
            own = enclosing_class(tables, site.enclosing)
            return tables.definitions.get(own or ""), f"{segments[0]}, a {own}", 1
        variable = _variable_class(tables, site, scope, segments[0], depth)
        if variable is not None:
            return variable[0], variable[1], 1
    for end, segment in enumerate(segments):
        call = _CALL_SEGMENT.fullmatch(segment.removeprefix("new "))
        if call is None:
            if not _NAME_SEGMENT.fullmatch(segment):
                break
            continue
        named = ".".join([*segments[:end], call.group(1)])
        d = _definition_named(tables, site.path, site.enclosing, named)
        if d is None or d.kind in CLASS_KINDS:
            return d, f"a new {named}", end + 1
        return _returned_class(tables, d, depth), f"what {d.qualified_name} returns", end + 1
    return None, "", 0


def _variable_class(tables: Tables, site: Site, scope: Def, name: str,
                    depth: int) -> tuple[Def | None, str] | None:
    """What a parameter or local ``name`` holds at the site: its declared class, an item of
    the collection a loop takes it from, or the class of the value it was last declared
    with (None inside: a name it declares but whose class is not evident); None when the
    scope declares no such name."""
    declared = parameter_types(scope.signature, scope.name, scope.language).get(name)
    if declared:
        return (_class_named(tables, site.path, site.enclosing, named_type(declared)),
                f"a parameter declared {declared}")
    found = _local(tables, site, scope, name)
    if found is not None:
        line, local = found
        if local.type:
            return (_class_named(tables, site.path, site.enclosing, named_type(local.type)),
                    f"declared {local.type} on line {line}")
        if depth >= _MAX_DEPTH:
            return None, ""
        if local.iterates:
            return (_item_class(tables, site, scope, local.iterates, depth + 1),
                    f"an item of {local.iterates} (line {line})")
        if local.result is not None:
            return (_result_class(tables, site, scope, local.value or "", local.result,
                                  depth + 1),
                    f"result {local.result + 1} of {local.value} (line {line})")
        held = typed_receiver(tables, site, scope, (local.value or "").replace("::", "."),
                              depth + 1)
        return (tables.definitions.get(held.target) if held else None,
                f"assigned {local.value} on line {line}")
    own = tables.definitions.get(enclosing_class(tables, site.enclosing) or "")
    field = own and site.language == "java" and _field_class(tables, own, name)
    return (field, f"the field {own.qualified_name}.{name}") if field and own else None


def _local(tables: Tables, site: Site, scope: Def, name: str) -> tuple[int, Local] | None:
    """The last line above the site, in its function, that declares the local ``name``."""
    lines = tables.lines.get(site.path, {})
    for line in range(site.line - 1, max(scope.start_line, site.line - _MAX_SCAN), -1):
        text = lines.get(line, "")
        # most lines do not name it: a substring test spares them the regular expression
        local = local_declaration(text, name, site.language) if name in text else None
        if local is not None:
            return line, local
    return None


def _item_class(tables: Tables, site: Site, scope: Def, collection: str,
                depth: int) -> Def | None:
    """The class of the items of ``collection`` (``c.commands``, ``&self.items``,
    ``xs.iter()``), from the declared type of the name, field or result it ends with."""
    text = _ITERATION.sub("", collection.strip()).replace("::", ".")
    *owner_steps, last = [step.strip() for step in split_top_level(text, ".")]
    declared = None
    if not owner_steps and _NAME_SEGMENT.fullmatch(last):
        declared = parameter_types(scope.signature, scope.name, scope.language).get(last)
        local = None if declared else _local(tables, site, scope, last)
        declared = declared or (local[1].type if local else None)
    elif owner_steps:
        owner = typed_receiver(tables, site, scope, ".".join(owner_steps), depth)
        cls = tables.definitions.get(owner.target) if owner else None
        call = _CALL_SEGMENT.fullmatch(last)
        method = cls and call and method_in(tables, cls.qualified_name, call.group(1))
        declared = (_declared_return(tables.definitions[method]) if method
                    else _field_type_text(tables, cls, last) if cls and not call else None)
    return _class_named(tables, site.path, site.enclosing, element_type(declared))


def _result_class(tables: Tables, site: Site, scope: Def, value: str, result: int,
                  depth: int) -> Def | None:
    """The class of result ``result`` of the Go call ``value`` (``a, err := c.Find(x)``)."""
    *owner_steps, last = [step.strip() for step in split_top_level(value, ".")]
    call = _CALL_SEGMENT.fullmatch(last)
    if call is None:
        return None
    owner = (typed_receiver(tables, site, scope, ".".join(owner_steps), depth)
             if owner_steps else None)
    function = (tables.definitions.get(method_in(tables, owner.target, call.group(1)) or "")
                if owner else _definition_named(
                    tables, site.path, site.enclosing, ".".join([*owner_steps, call.group(1)])))
    results = result_types(_declared_return(function)) if function else []
    return (_class_named(tables, function.path, function.qualified_name,
                         named_type(results[result]))
            if function and result < len(results) else None)


def _field_class(tables: Tables, owner: Def, name: str) -> Def | None:
    """The class of field ``name`` that ``owner`` or one of its bases declares."""
    declared = _field_declaration(tables, owner, name)
    return (_class_named(tables, tables.definitions[declared[0]].path, declared[0],
                         named_type(declared[1])) if declared else None)


def _field_declaration(tables: Tables, owner: Def, name: str) -> tuple[str, str] | None:
    """(declaring class, type text) of field ``name`` of ``owner`` or one of its bases."""
    return next(((cls, tables.field_types[cls][name])
                 for cls in mro(tables, owner.qualified_name)
                 if name in tables.field_types.get(cls, {})), None)


def _field_type_text(tables: Tables, owner: Def, name: str) -> str | None:
    declared = _field_declaration(tables, owner, name)
    return declared[1] if declared else None


def _declared_return(function: Def) -> str | None:
    return return_type(function.signature, function.name, function.language)


def _returned_class(tables: Tables, function: Def, depth: int = 0) -> Def | None:
    """The index class a typed function declares it returns (Rust's ``Self``: its own),
    or for a TypeScript or JavaScript function that declares none, the one its returns
    name (:func:`_inferred_return`)."""
    declared = _declared_return(function)
    if declared is None and function.language in _UNDECLARED_RETURNS:
        return _inferred_return(tables, function, depth)
    returned = named_type(declared)
    if returned == "Self":
        return tables.definitions.get(function.parent or "")
    return _class_named(tables, function.path, function.qualified_name, returned)


def _inferred_return(tables: Tables, function: Def, depth: int) -> Def | None:
    """The class every ``return value`` of an undeclared function names, when they agree
    (``return null``/``undefined`` aside; ``return this``: its class), or that an arrow
    function's expression body does (``() => new Store()``). None past ``_MAX_DEPTH``."""
    key = (function.qualified_name, "returns")
    if key in tables.returned:
        known: Def | None = tables.returned[key]
        return known
    tables.returned[key] = None  # a recursive call adds nothing
    if depth >= _MAX_DEPTH:
        return None
    lines = tables.lines.get(function.path, {})
    values = [(n, m.group(1)) for n in range(function.start_line, function.end_line + 1)
              if (m := _RETURN.match(lines.get(n, "")))]
    arrow = _ARROW_VALUE.search(lines.get(function.start_line, ""))
    if arrow and not values:
        values = [(function.start_line, arrow.group(1))]
    site = Site(function.path, function.language, function.name, "call", None,
                function.start_line, 0, function.qualified_name)
    found = set()
    for line, value in values:
        value = value.strip().rstrip(";").strip()
        if value in {"null", "undefined"}:
            continue
        held = (Inferred("instance", enclosing_class(tables, function.qualified_name) or "",
                         "this") if value == "this"
                else typed_receiver(tables, replace(site, line=line), function, value,
                                    depth + 1))
        if held is None or not held.target:
            return None
        found.add(held.target)
    result = tables.definitions.get(found.pop()) if len(found) == 1 else None
    tables.returned[key] = result
    return result


def _definition_named(tables: Tables, path: str, enclosing: str | None,
                      dotted: str) -> Def | None:
    return tables.definitions.get(resolve_in(tables, path, enclosing, dotted) or "")


def _class_named(tables: Tables, path: str, enclosing: str | None,
                 dotted: str | None) -> Def | None:
    cls = class_named(tables, path, enclosing, dotted) if dotted else None
    return tables.definitions[cls] if cls else None


def go_receiver_name(d: Def) -> str | None:
    match = _GO_RECEIVER.match(d.signature) if d.language == "go" else None
    return match.group(1) if match else None
