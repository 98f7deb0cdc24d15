"""Resolve one call site to the definition it calls, or say why it cannot be resolved."""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass
from typing import Literal

from pr_context.graph.declared import local_declaration, parameter_types, return_type
from pr_context.graph.infer import Inferred, infer, is_local
from pr_context.graph.names import (
    bind_name,
    enclosing_class,
    method_in,
    mro,
    resolve_dotted,
)
from pr_context.graph.tables import CLASS_KINDS, Def, Site, Tables

__all__ = ["Resolution", "resolve_site"]

State = Literal["resolved", "external", "dynamic", "unbound"]

# Receivers that denote the instance (or class) of the enclosing class, per language.
_SELF_RECEIVERS: dict[str, frozenset[str]] = {
    "python": frozenset({"self", "cls"}),
    "javascript": frozenset({"this"}),
    "typescript": frozenset({"this"}),
    "tsx": frozenset({"this"}),
    "java": frozenset({"this"}),
    "rust": frozenset({"self", "Self"}),
}
# Bare names Python binds without an import; a call to one is outside the index.
_PYTHON_BUILTINS = frozenset(dir(builtins))
_SUPER = re.compile(r"super(\(.*\))?")
_CONSTRUCTED = re.compile(r"(?:new\s+)?([A-Za-z_$][\w$.]*)\(.*\)")
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
# A local assigned from another local assigned from ...: typed this many steps deep.
_MAX_DEPTH = 3
# Lines read back from a site for a local's declaration: bounds the cost in huge functions.
_MAX_SCAN = 300
_NAME_SEGMENT = re.compile(r"[A-Za-z_$][\w$]*")
_CALL_SEGMENT = re.compile(r"([A-Za-z_$][\w$]*)\s*(?:<[^()]*>)?\s*\(.*\)", re.DOTALL)
_GO_RECEIVER = re.compile(r"func\s*\(\s*(\w+)\s+\*?\s*\w")


@dataclass(frozen=True)
class Resolution:
    """Where a site leads.

    ``resolved``: to ``target``, a definition of the index. ``external``: to something
    bound but outside the index (``os.path.join``, ``fmt.Println``). ``dynamic``: a method
    called on a receiver whose class is unknown. ``unbound``: a bare name nothing binds.
    """

    state: State
    target: str | None = None
    reason: str = ""
    self_class: str | None = None  # the class of a self/this receiver, for dispatch


def resolve_site(tables: Tables, site: Site) -> Resolution:
    """Resolve ``site`` through scopes, imports, re-exports, self/super and bases."""
    if site.receiver is None:
        binding = bind_name(tables, site.path, site.enclosing, site.name)
        if binding is None and site.language == "python" and site.name in _PYTHON_BUILTINS:
            return Resolution("external", reason=f"calls the builtin {site.name}()")
        if binding is None:
            return Resolution("unbound", reason=f"nothing in {site.path} binds {site.name}")
        return _finish(tables, binding.target, f"{_call_text(site)} {binding.how}")
    receiver = site.receiver.replace("::", ".")
    if receiver in _SELF_RECEIVERS.get(site.language, ()) or _is_go_receiver(tables, site):
        return _resolve_self(tables, site, receiver)
    if _SUPER.fullmatch(receiver):
        return _resolve_super(tables, site, receiver)
    held = _held_class(tables, site, receiver)
    if held is not None:
        return _resolve_typed(tables, site, held)
    constructed = _CONSTRUCTED.fullmatch(receiver)
    if constructed and _closes_at_end(receiver, constructed.end(1)):
        return _resolve_on_instance(tables, site, constructed.group(1))
    if _DOTTED.fullmatch(receiver):
        return _resolve_qualified(tables, site, receiver)
    return _dynamic(site)


def _finish(tables: Tables, target: str, reason: str) -> Resolution:
    resolved = resolve_dotted(tables, target)
    if resolved is None or resolved not in tables.definitions:
        return Resolution("external", reason=reason)
    suffix = "" if resolved == target else f" (defined at {resolved})"
    return Resolution("resolved", resolved, reason + suffix)


def _resolve_self(tables: Tables, site: Site, receiver: str) -> Resolution:
    cls = enclosing_class(tables, site.enclosing)
    method = cls and method_in(tables, cls, site.name)
    if not cls or not method:
        return _dynamic(site)
    inherited = "" if method.startswith(cls + ".") else " (inherited)"
    return Resolution("resolved", method,
                      f"{_call_text(site)} inside {cls} resolves to {method}{inherited}", cls)


def _resolve_super(tables: Tables, site: Site, receiver: str) -> Resolution:
    cls = enclosing_class(tables, site.enclosing)
    for base in tables.bases.get(cls or "", ()):
        method = method_in(tables, base, site.name)
        if method:
            return Resolution("resolved", method,
                              f"{_call_text(site)} inside {cls} resolves to base {method}")
    return Resolution("external", reason=f"{receiver} of {cls} is outside the index")


def _resolve_on_instance(tables: Tables, site: Site, class_text: str) -> Resolution:
    """``Client().get()`` and ``new Money(1).value()``: a method of a known class."""
    head, _, rest = class_text.partition(".")
    binding = bind_name(tables, site.path, site.enclosing, head)
    cls = binding and resolve_dotted(tables, ".".join(p for p in (binding.target, rest) if p))
    d = tables.definitions.get(cls or "")
    if d is None or d.kind not in CLASS_KINDS:
        return _dynamic(site)
    method = method_in(tables, d.qualified_name, site.name)
    if method is None:
        return Resolution("external", reason=f"{d.qualified_name} has no method {site.name}")
    return Resolution("resolved", method,
                      f"{_call_text(site)} on a new {d.qualified_name} resolves to {method}")


def _closes_at_end(text: str, opening: int) -> bool:
    """Whether the parenthesis at ``opening`` closes at the end of ``text``: one call,
    ``Money.of(1)``, not a chain ``Money.of(1).plus(2)`` whose last call sets the class."""
    depth = 0
    for index in range(opening, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return index == len(text) - 1
    return False


def _returned_class(tables: Tables, function: Def) -> Def | None:
    """The index class a typed function declares it returns (Rust's ``Self``: its own)."""
    returned = return_type(function.signature, function.name, function.language)
    if returned is None:
        return None
    if returned == "Self":
        return tables.definitions.get(function.parent or "")
    return _class_named(tables, function.path, function.qualified_name, returned)


def _held_class(tables: Tables, site: Site, receiver: str) -> Inferred | None:
    """The instance a receiver evidently holds: in Python, ``x``, ``self.a.b``, ``f().g``;
    in a statically typed language, see :func:`_typed_receiver`."""
    scope = tables.definitions.get(site.enclosing or "")
    if site.language != "python":
        return _typed_receiver(tables, site, scope, receiver)
    held = infer(tables, site.path, scope, site.line, receiver)
    return held if held is not None and held.kind == "instance" else None


def _typed_receiver(tables: Tables, site: Site, scope: Def | None, receiver: str,
                    depth: int = 0) -> Inferred | None:
    """The class a statically typed receiver holds, from declarations alone: a parameter
    (``type`` in ``void f(TypeName type)``), a new instance (``new Money(1)``), what a
    function declares it returns (``ClassName.get(...)``), and so on along a call chain
    (``Foo.builder().name(n)``), a declared field (``this.writer``, ``c.parent``). An
    undeclared step ends it: unknown."""
    segments = _segments(receiver)
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
        held = _returned_class(tables, tables.definitions[method]) if method else None
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
        if segments[0] in _SELF_RECEIVERS.get(site.language, ()) or segments[0] == (
                _go_receiver_name(scope)):
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
        return _returned_class(tables, d), f"what {d.qualified_name} returns", end + 1
    return None, "", 0


def _variable_class(tables: Tables, site: Site, scope: Def, name: str,
                    depth: int) -> tuple[Def | None, str] | None:
    """What a parameter or local ``name`` holds at the site: its declared class, or the
    class of the value it was last declared with (None inside: a name it declares but
    whose class is not evident); None when the scope declares no such name."""
    declared = parameter_types(scope.signature, scope.name, scope.language).get(name)
    if declared:
        return (_class_named(tables, site.path, site.enclosing, declared),
                f"a parameter declared {declared}")
    lines = tables.lines.get(site.path, {})
    for line in range(site.line - 1, max(scope.start_line, site.line - _MAX_SCAN), -1):
        declared, value = local_declaration(lines.get(line, ""), name, site.language)
        if declared:
            return (_class_named(tables, site.path, site.enclosing, declared),
                    f"declared {declared} on line {line}")
        if value is not None:
            held = (_typed_receiver(tables, site, scope, value.replace("::", "."), depth + 1)
                    if depth < _MAX_DEPTH else None)
            found = tables.definitions.get(held.target) if held else None
            return found, f"assigned {value} on line {line}"
    own = tables.definitions.get(enclosing_class(tables, site.enclosing) or "")
    field = own and site.language == "java" and _field_class(tables, own, name)
    return (field, f"the field {own.qualified_name}.{name}") if field and own else None


def _field_class(tables: Tables, owner: Def, name: str) -> Def | None:
    """The class of field ``name`` that ``owner`` or one of its bases declares."""
    for cls in mro(tables, owner.qualified_name):
        declared = tables.field_types.get(cls, {}).get(name)
        if declared:
            d = tables.definitions[cls]
            return _class_named(tables, d.path, cls, declared)
    return None


def _segments(receiver: str) -> list[str]:
    """``receiver`` split at the dots outside brackets, each step stripped."""
    steps: list[str] = []
    current: list[str] = []
    depth = 0
    for char in receiver:
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(char, 0)
        if char == "." and depth == 0:
            steps.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    return [*steps, "".join(current).strip()]


def _definition_named(tables: Tables, path: str, enclosing: str | None,
                      dotted: str) -> Def | None:
    head, _, rest = dotted.partition(".")
    binding = bind_name(tables, path, enclosing, head)
    found = binding and resolve_dotted(tables, ".".join(p for p in (binding.target, rest) if p))
    return tables.definitions.get(found or "")


def _class_named(tables: Tables, path: str, enclosing: str | None, dotted: str) -> Def | None:
    d = _definition_named(tables, path, enclosing, dotted)
    return d if d is not None and d.kind in CLASS_KINDS else None


def _resolve_typed(tables: Tables, site: Site, held: Inferred) -> Resolution:
    """``x.m()`` where ``x`` evidently holds a ``C``: ``C.m`` or the base's ``m``."""
    method = method_in(tables, held.target, site.name)
    if method is None:
        return Resolution("external", reason=f"{held.target} has no method {site.name}")
    return Resolution("resolved", method, f"{_call_text(site)} where {site.receiver} is "
                                          f"{held.how}, resolves to {method}")


def _resolve_qualified(tables: Tables, site: Site, receiver: str) -> Resolution:
    """``mod.f()``, ``pkg.mod.f()``, ``ns.f()``, ``store.New()``, ``Money.of()``."""
    head, _, rest = receiver.partition(".")
    binding = bind_name(tables, site.path, site.enclosing, head)
    if binding is None or (site.language == "python" and is_local(tables, site.enclosing,
                                                                   head)):
        return _dynamic(site)
    target = ".".join(p for p in (binding.target, rest, site.name) if p)
    return _finish(tables, target, f"{_call_text(site)} where {head} is {binding.target} "
                                   f"{binding.how}")


def _is_go_receiver(tables: Tables, site: Site) -> bool:
    """``s.M()`` inside ``func (s *Store) ...``: ``s`` is the method's receiver."""
    if site.language != "go" or not site.receiver:
        return False
    d = tables.definitions.get(site.enclosing or "")
    return d is not None and _go_receiver_name(d) == site.receiver


def _go_receiver_name(d: Def) -> str | None:
    match = _GO_RECEIVER.match(d.signature) if d.language == "go" else None
    return match.group(1) if match else None


def _dynamic(site: Site) -> Resolution:
    return Resolution("dynamic", reason=f"{_call_text(site)}: the class of {site.receiver} "
                                        "is not known statically")


def _call_text(site: Site) -> str:
    called = f"{site.receiver}.{site.name}" if site.receiver else site.name
    if site.kind == "instantiation":
        return f"instantiates {called}"
    return f"calls {called}()" if site.kind == "call" else f"uses {called}"
