"""Callers through the symbol graph: references resolved to definitions.

Built once per index by :func:`load_graph` (read back from the index when
:func:`store_graph` kept it there); :func:`callers_of` then answers per symbol.
A caller is ``graph`` when its reference resolves to the definition through imports
(absolute, relative, aliased, ``*``, re-exports in ``__init__.py``, ``index.ts`` barrels
and Rust ``pub use``), enclosing scopes (a Python class body included), the same module or
package, ``self``/``cls``/``this`` (and a Go method's receiver) with inherited methods,
``super()``, a constructed receiver (``Client().get()``), a Python receiver whose class
is evident (annotations, constructors, ``self.x`` and module-level assignments that
agree, functions' return annotations through attribute chains, ``__getattr__``, loops
over annotated iterables, pytest fixtures; see :mod:`pr_context.graph.infer` and
:mod:`pr_context.graph.types`), or instantiation of a class (which calls its
constructor). A Python function named as a value (passed, assigned, returned, a
decorator's object) is a reference too. A caller is ``lexical`` when only its name
matches: a method called on a receiver of unknown class, a bare name nothing binds, or
``self.m()`` in a base class that may dispatch to an override. Nothing here reads files
or the index except :func:`load_graph` and :func:`store_graph`.
"""

from __future__ import annotations

from pr_context.graph.callers import Caller, SymbolGraph, build_graph, callers_of
from pr_context.graph.stored import load_graph, store_graph

__all__ = ["Caller", "SymbolGraph", "build_graph", "callers_of", "load_graph", "store_graph"]
