"""Resolve one call site to the definition it calls, or say why it cannot be resolved."""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass
from typing import Literal

from pr_context.graph.infer import Inferred, infer, is_local
from pr_context.graph.names import (
    bind_name,
    enclosing_class,
    method_in,
    mro,
    resolve_dotted,
    resolve_in,
)
from pr_context.graph.tables import CLASS_KINDS, Site, Tables
from pr_context.graph.typed import SELF_RECEIVERS, go_receiver_name, typed_receiver

__all__ = ["Resolution", "resolve_site"]

State = Literal["resolved", "external", "dynamic", "unbound"]

# Bare names Python binds without an import; a call to one is outside the index.
_PYTHON_BUILTINS = frozenset(dir(builtins))
_SUPER = re.compile(r"super(\(.*\))?")
_CONSTRUCTED = re.compile(r"(?:new\s+)?([A-Za-z_$][\w$.]*)\(.*\)")
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")


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
    if receiver in SELF_RECEIVERS.get(site.language, ()) or _is_go_receiver(tables, site):
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
    d = tables.definitions.get(resolve_in(tables, site.path, site.enclosing, class_text) or "")
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


def _held_class(tables: Tables, site: Site, receiver: str) -> Inferred | None:
    """The instance a receiver evidently holds: in Python, ``x``, ``self.a.b``, ``f().g``;
    in a statically typed language, see :func:`~pr_context.graph.typed.typed_receiver`."""
    scope = tables.definitions.get(site.enclosing or "")
    if site.language != "python":
        return typed_receiver(tables, site, scope, receiver)
    held = infer(tables, site.path, scope, site.line, receiver)
    return held if held is not None and held.kind == "instance" else None


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
    reason = f"{_call_text(site)} where {head} is {binding.target} {binding.how}"
    found = _finish(tables, target, reason)
    if found.state != "external":
        return found
    owner = target.rpartition(".")[0]
    member = _class_member(tables, owner, site.name, reason)
    if member is not None and site.kind == "attribute":
        return member
    holder, _, attribute = owner.rpartition(".")
    if member is None and site.language == "python" and _class_member(
            tables, holder, attribute, reason):
        # ``Config.value.strip()``: a member of unknown class (a typed language declares
        # it, and a declared class outside the index is external)
        return _dynamic(site)
    return found


def _class_member(tables: Tables, owner: str, name: str, reason: str) -> Resolution | None:
    """``Color.RED``, ``Config.timeout``: a read of a data member of an index class (an
    enum member, a class attribute, a declared field) is a use of the class."""
    cls = resolve_dotted(tables, owner)
    d = tables.definitions.get(cls or "")
    if d is None or d.kind not in CLASS_KINDS or cls is None:
        return None
    holder = next((c for c in mro(tables, cls) if name in tables.members.get(c, ())
                   or name in tables.field_types.get(c, {})), None)
    if holder is None:
        return None
    return Resolution("resolved", cls, f"{reason}, reads {name}, a member of {holder}")


def _is_go_receiver(tables: Tables, site: Site) -> bool:
    """``s.M()`` inside ``func (s *Store) ...``: ``s`` is the method's receiver."""
    if site.language != "go" or not site.receiver:
        return False
    d = tables.definitions.get(site.enclosing or "")
    return d is not None and go_receiver_name(d) == site.receiver


def _dynamic(site: Site) -> Resolution:
    return Resolution("dynamic", reason=f"{_call_text(site)}: the class of {site.receiver} "
                                        "is not known statically")


def _call_text(site: Site) -> str:
    called = f"{site.receiver}.{site.name}" if site.receiver else site.name
    if site.kind == "instantiation":
        return f"instantiates {called}"
    return f"calls {called}()" if site.kind == "call" else f"uses {called}"
