"""Linked tests, the test selection and possibly-stale docs of changed symbols (the
"analyze" stage).

Load a :class:`LinkIndex` once per index with :func:`load_link_index`; walk each changed
symbol's callers to the tests with a :class:`Reacher` (with the symbol graph and index of
the revision that holds the symbol: base for a removed one); then :func:`linked_tests`
ranks a reviewer's short list, :func:`select_tests` chooses for CI what to run instead of
the whole suite, and :func:`stale_docs` (with the head index: only docs that exist at
head count) finds the docs that may now be wrong.
"""

from __future__ import annotations

from pr_context.links.evidence import Evidence, LinkIndex, load_link_index, symbol_vector
from pr_context.links.imports import ImportGraph, import_graph
from pr_context.links.linked_tests import linked_tests
from pr_context.links.module_code import module_level_change
from pr_context.links.reach import Reach, Reacher
from pr_context.links.selection import SelectedTest, SymbolTests, TestSelection, select_tests
from pr_context.links.stale_docs import stale_docs

__all__ = ["Evidence", "ImportGraph", "LinkIndex", "Reach", "Reacher", "SelectedTest",
           "SymbolTests", "TestSelection", "import_graph", "linked_tests", "load_link_index",
           "module_level_change", "select_tests", "stale_docs", "symbol_vector"]
