"""Methods the standard library calls: overrides of its classes' methods.

``class ProcessorFormatter(logging.Formatter)`` overrides ``format``, which ``logging``
calls whenever a handler emits a record: no site of the repository calls it, yet every
test that logs through such a handler runs it. Whether a method overrides one of a
standard-library base class is asked of Python's own classes: the module is imported
(the interpreter's standard library, never the repository's code) and the class looked
up; nothing is called. Other libraries' classes are not imported (they may not be
installed, and importing runs their code): their methods stay unknown.
"""

from __future__ import annotations

import importlib
import sys
from functools import lru_cache

from pr_context.graph.names import mro, outside_bases
from pr_context.graph.tables import Def, Tables

__all__ = ["overrides_library"]

# Standard-library modules that do something when imported (print, open a browser).
_NOT_IMPORTED = frozenset({"this", "antigravity", "idlelib", "turtledemo"})


def overrides_library(tables: Tables, d: Def) -> bool:
    """Whether the Python method ``d`` overrides a method of a standard-library class its
    class (or an index base of it) derives from."""
    if d.kind != "method" or d.parent is None or d.language != "python":
        return False
    return any(_has_method(base, d.name) for cls in mro(tables, d.parent)
               if cls in tables.definitions for base in outside_bases(tables, cls))


@lru_cache(maxsize=4096)
def _has_method(dotted: str, name: str) -> bool:
    module, _, cls_name = dotted.rpartition(".")
    top = module.partition(".")[0]
    if not module or top not in sys.stdlib_module_names or top in _NOT_IMPORTED:
        return False
    try:
        found = getattr(importlib.import_module(module), cls_name, None)
    except ImportError:  # another platform's module (winreg, msvcrt)
        return False
    return isinstance(found, type) and callable(getattr(found, name, None))
