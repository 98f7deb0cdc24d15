"""Linked tests and possibly-stale docs of a changed symbol (the "analyze" stage).

Load a :class:`LinkIndex` once per index with :func:`load_link_index`, then per
changed symbol call :func:`linked_tests` (with the symbol graph and index of the
revision that holds the symbol: base for a removed one) and :func:`stale_docs` (with
the head index: only docs that exist at head count). :func:`test_selection` turns
every symbol's linked tests into the files and pytest node ids to run.
"""

from __future__ import annotations

from pr_context.links.evidence import Evidence, LinkIndex, load_link_index, symbol_vector
from pr_context.links.linked_tests import linked_tests, test_selection
from pr_context.links.stale_docs import stale_docs

__all__ = ["Evidence", "LinkIndex", "linked_tests", "load_link_index", "stale_docs",
           "symbol_vector", "test_selection"]
