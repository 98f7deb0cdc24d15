"""Linked tests and possibly-stale docs, on real git repositories and real DuckDB indexes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest

from pr_context.changes import ChangedSymbol, changed_symbols_between
from pr_context.git import changed_paths, open_repository
from pr_context.graph import SymbolGraph, load_graph
from pr_context.index.store import IndexStore
from pr_context.links import (
    Evidence,
    LinkIndex,
    Reacher,
    SymbolTests,
    import_graph,
    linked_tests,
    load_link_index,
    select_tests,
    stale_docs,
    symbol_vector,
)
from pr_context.links.doc_pages import changed_attributes, sibling_modules, toctree_entries
from pr_context.links.linked_tests import naming_strength
from pr_context.links.stale_docs import (
    ATTRIBUTE_MENTION_WEIGHT,
    CLASS_MENTION_WEIGHT,
    DIRECTIVE_WEIGHT,
    MEMBER_PAGE_WEIGHT,
    MENTION_WEIGHT,
)
from pr_context.models import Sha
from pr_context.retrieve.corpus import SearchCorpus, load_corpus
from tests.conftest import GitRepo
from tests.fakes import FakeEmbedder
from tests.test_index import index

SESSION = (
    "def create_session(user, token, retries=3):\n"
    "    return {'user': user, 'token': token}\n"
    "\n"
    "\n"
    "def legacy_login(user):\n"
    "    return create_session(user, 'x')\n"
    "\n"
    "\n"
    "class Client:\n"
    "    def get(self, url):\n"
    "        return url\n"
)
SESSION_HEAD = (
    "def create_session(user, token, timeout):\n"
    "    return {'user': user, 'token': token, 'timeout': timeout}\n"
    "\n"
    "\n"
    "class Client:\n"
    "    def get(self, url):\n"
    "        return url.strip()\n"
)

TEST_FILES = {
    "shop/__init__.py": "",
    "shop/session.py": SESSION,
    "shop/cart.py": "def total(items):\n    return sum(items)\n",
    "tests/__init__.py": "",
    "tests/test_api.py": (
        "from shop.session import create_session\n"
        "\n"
        "\n"
        "def test_create():\n"
        "    assert create_session('u', 't')\n"
        "\n"
        "\n"
        "class TestApi:\n"
        "    def test_method(self):\n"
        "        assert create_session('v', 't')\n"
    ),
    "tests/conftest.py": (
        "import pytest\n"
        "from shop.session import create_session\n"
        "\n"
        "\n"
        "@pytest.fixture\n"
        "def logged_in():\n"
        "    return create_session('f', 't')\n"
    ),
    "tests/test_fixture_user.py": "def test_uses_fixture(logged_in):\n    assert logged_in\n",
    "tests/helpers.py": (
        "from shop.session import create_session\n"
        "\n"
        "\n"
        "def login_helper(user):\n"
        "    return create_session(user, 'h')\n"
    ),
    "tests/test_helper_user.py": (
        "from tests.helpers import login_helper\n"
        "\n"
        "\n"
        "def test_via_helper():\n"
        "    assert login_helper('u')\n"
    ),
    "tests/test_session.py": "def test_nothing_linked():\n    assert True\n",
    "tests/test_history.py": "def test_history():\n    assert 1\n",
    "tests/test_words.py": (
        "def test_words():\n    user = token = 'user token return'\n    assert user\n"),
    "tests/test_cart.py": "from shop.cart import total\n\n\ndef test_total():\n"
                          "    assert total([1]) == 1\n",
}

DOC_FILES = {
    "shop/__init__.py": "",
    "shop/session.py": SESSION,
    "shop/other.py": (
        "def batch():\n"
        "    \"\"\"Wraps create_session for batch jobs.\"\"\"\n"
        "    return 1\n"
        "\n"
        "\n"
        "def fetch_all():\n"
        "    \"\"\"Calls get on each item.\"\"\"\n"
        "    return 2\n"
    ),
    "shop/http.py": "class Other:\n    def get(self):\n        return 1\n\n\n"
                    "def get():\n    return 0\n",
    "docs/api.md": (
        "# API\n"
        "\n"
        "## Sessions\n"
        "\n"
        "::: shop.session.create_session\n"
        "\n"
        "## Retries\n"
        "\n"
        "Pass `retries=5` to `create_session` to retry.\n"
        "\n"
        "## Legacy\n"
        "\n"
        "Use `legacy_login` to log in.\n"
        "\n"
        "## Fetching\n"
        "\n"
        "Call `get()` to fetch.\n"
        "\n"
        "## Client usage\n"
        "\n"
        "Use `Client.get` to fetch a URL.\n"
    ),
    "README.md": (
        "# Shop\n"
        "\n"
        "## Usage\n"
        "\n"
        "```python\n"
        "s = create_session(user, token)\n"
        "```\n"
    ),
    "docs/guide.md": "# Guide\n\n## Start\n\nCall `create_session` first.\n",
}


@dataclass(frozen=True)
class Analysis:
    changes: dict[str, ChangedSymbol]
    graph: SymbolGraph
    head: LinkIndex
    corpus: SearchCorpus
    base_corpus: SearchCorpus
    touched: set[str]


def analyse(repo: GitRepo, base: str, head: str, tmp: Path) -> Analysis:
    """Index base and head (fake embeddings) and read everything the link finders need."""
    git = open_repository(repo.path)
    loaded = {}
    for name, rev in (("base", base), ("head", head)):
        db = tmp / f"{name}.duckdb"
        index(repo, db, rev=rev, embedder=FakeEmbedder())
        with IndexStore.open_existing(db) as store:
            loaded[name] = (load_graph(store), load_link_index(store), load_corpus(store))
    changes = changed_symbols_between(git, Sha(base), Sha(head)).symbols
    touched = {c.path for c in changed_paths(git, Sha(base), Sha(head))}
    return Analysis({c.qualified_name: c for c in changes}, loaded["head"][0],
                    loaded["head"][1], loaded["head"][2], loaded["base"][2], touched)


def analyse_edit(tmp: Path, files: dict[str, str], edits: dict[str, str]) -> Analysis:
    """A repository of ``files``, then one commit writing ``edits``, analysed."""
    repo = GitRepo(tmp / "repo")
    for path, text in files.items():
        repo.write(path, text)
    base = repo.commit("initial")
    for path, text in edits.items():
        repo.write(path, text)
    head = repo.commit("head")
    return analyse(repo, base, head, tmp)


@pytest.fixture(scope="module")
def tests_case(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    tmp = tmp_path_factory.mktemp("links_tests")
    repo = GitRepo(tmp / "repo")
    for path, text in TEST_FILES.items():
        repo.write(path, text)
    repo.commit("initial")
    for n in range(3):  # history: session.py and test_history.py change together
        repo.write("shop/session.py", SESSION + f"\n\nVERSION = {n}\n")
        repo.write("tests/test_history.py", f"def test_history():\n    assert {n}\n")
        repo.commit(f"together {n}")
    base = repo.commit("base")
    repo.write("shop/session.py", SESSION.replace("return {'user'", "return {'who'")
               .replace("create_session(user, 'x')", "create_session(user, 'y')") +
               "\n\nVERSION = 2\n")
    repo.write("tests/test_api.py", TEST_FILES["tests/test_api.py"] + "# touched\n")
    head = repo.commit("head")
    return analyse(repo, base, head, tmp)


def linked(case: Analysis, qualified_name: str) -> list[Evidence]:
    return linked_tests(case.changes[qualified_name], case.graph, case.head, case.touched,
                        case.corpus)


def selection(case: Analysis, *qualified_names: str) -> list[str]:
    """The test selection for the changed symbols ``qualified_names`` (no module code)."""
    reacher = Reacher(case.graph, case.head)
    symbols = [SymbolTests(case.changes[q].symbol, case.changes[q].path,
                           reacher.reach(q)) for q in qualified_names]
    return list(select_tests(symbols, case.head, import_graph(case.graph.tables), [], [],
                             {}, everything_share=None).targets)


def by_path(items: list[Evidence]) -> dict[str, Evidence]:
    return {e.path: e for e in items}


# -- linked tests -------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "reason"), [
    pytest.param("tests/test_api.py",
                 "tests/test_api.py::test_create calls create_session (line 5)", id="direct-call"),
    pytest.param("tests/test_helper_user.py",
                 "tests/test_helper_user.py::test_via_helper calls login_helper (line 5), "
                 "which calls create_session", id="helper-hop"),
    pytest.param("tests/test_fixture_user.py",
                 "tests/test_fixture_user.py::test_uses_fixture takes fixture logged_in, "
                 "which calls create_session", id="fixture-hop"),
])
def test_call_paths_link_a_test_file(tests_case: Analysis, path: str, reason: str) -> None:
    item = by_path(linked(tests_case, "shop.session.create_session"))[path]
    assert item.signals["graph"] > 0
    assert item.reason == reason
    assert item.role == "test"


def test_next_to_call_paths_nothing_weaker_is_listed(tests_case: Analysis) -> None:
    """Naming, co-change and similarity would crowd the list with files that never run it."""
    items = linked(tests_case, "shop.session.create_session")
    assert {e.path for e in items} == {"tests/test_api.py", "tests/test_helper_user.py",
                                       "tests/test_fixture_user.py"}


@pytest.mark.parametrize(("path", "signal", "reason_part"), [
    pytest.param("tests/test_session.py", "naming", "named after shop/session.py", id="naming"),
    pytest.param("tests/test_history.py", "cochange",
                 "statistical: tests/test_history.py changed together", id="cochange"),
    pytest.param("tests/test_words.py", "semantic",
                 "statistical: tests/test_words.py::test_words reads like legacy_login",
                 id="semantic-fallback"),
])
def test_without_a_call_path_structure_and_statistics_link(
        tests_case: Analysis, path: str, signal: str, reason_part: str) -> None:
    item = by_path(linked(tests_case, "shop.session.legacy_login"))[path]
    assert item.signals[signal] > 0
    assert reason_part in item.reason


def test_a_test_helper_links_only_the_tests_that_use_it(tmp_path: Path) -> None:
    case = analyse_edit(tmp_path, {
        "tests/helpers.py": "def build_order(items):\n    return {'items': items}\n",
        "tests/test_orders.py": ("from tests.helpers import build_order\n\n\n"
                                 "def test_total():\n    assert build_order([1])\n"),
        "tests/test_helpers.py": "def test_build_order_items():\n    assert {'items': 1}\n",
    }, {"tests/helpers.py": "def build_order(items):\n    return {'items': list(items)}\n"})
    # test_helpers.py is named after helpers.py and reads like it, but never uses it.
    assert [e.path for e in linked(case, "tests.helpers.build_order")] == [
        "tests/test_orders.py"]


def test_a_test_passing_the_function_as_a_value_uses_it(tmp_path: Path) -> None:
    hooks = "def on_save(record):\n    return record\n"
    case = analyse_edit(tmp_path, {
        "shop/hooks.py": hooks,
        "tests/test_hooks.py": ("from shop.hooks import on_save\n\n\n"
                                "def test_registry():\n    assert register(on_save)\n"),
    }, {"shop/hooks.py": hooks.replace("return record", "return dict(record)")})
    [item] = linked(case, "shop.hooks.on_save")
    assert item.reason == "tests/test_hooks.py::test_registry uses on_save (line 5)"


def test_signal_strengths(tests_case: Analysis) -> None:
    items = by_path(linked(tests_case, "shop.session.create_session"))
    assert items["tests/test_api.py"].signals["graph"] == 1.0
    assert items["tests/test_helper_user.py"].signals["graph"] == pytest.approx(0.7)
    weaker = by_path(linked(tests_case, "shop.session.legacy_login"))
    assert weaker["tests/test_history.py"].signals["cochange"] == pytest.approx(0.667)
    assert weaker["tests/test_session.py"].signals["naming"] == 1.0
    assert set(weaker["tests/test_session.py"].signals) <= {"naming", "semantic"}
    assert "graph" not in weaker["tests/test_words.py"].signals


def test_semantic_fallback_lists_only_the_closest_unlinked_file(tests_case: Analysis
                                                                 ) -> None:
    items = linked(tests_case, "shop.session.legacy_login")
    assert [e.path for e in items if set(e.signals) == {"semantic"}] == ["tests/test_words.py"]
    words = by_path(items)["tests/test_words.py"]
    assert (words.symbol, words.start_line) == ("tests.test_words.test_words", 1)


def test_ranking_orders_kinds_of_evidence(tests_case: Analysis) -> None:
    order = [e.path for e in linked(tests_case, "shop.session.create_session")]
    assert order[0] == "tests/test_api.py"  # a direct call before one through a helper
    weaker = [e.path for e in linked(tests_case, "shop.session.legacy_login")]
    rank = {path: weaker.index(path) for path in weaker}
    assert rank["tests/test_session.py"] < rank["tests/test_history.py"]  # structure first
    assert rank["tests/test_history.py"] < rank["tests/test_words.py"]


def test_touched_in_pr(tests_case: Analysis) -> None:
    items = by_path(linked(tests_case, "shop.session.create_session"))
    assert items["tests/test_api.py"].touched_in_pr is True
    assert items["tests/test_helper_user.py"].touched_in_pr is False


def test_selection_runs_the_tests_that_reach_the_symbol(tests_case: Analysis) -> None:
    assert sorted(selection(tests_case, "shop.session.create_session")) == [
        "tests/test_api.py::TestApi::test_method", "tests/test_api.py::test_create",
        "tests/test_fixture_user.py::test_uses_fixture",
        "tests/test_helper_user.py::test_via_helper"]


def test_selection_of_a_function_nothing_names_is_empty(tests_case: Analysis) -> None:
    """Nothing names legacy_login (no call, read or attribute anywhere): only a lookup by
    a computed name could run it, and the tests importing its module are no evidence of
    one. (A decorator that may register it keeps them: tests/test_selection.py.)"""
    assert selection(tests_case, "shop.session.legacy_login") == []


def test_deleted_tests_are_dropped_with_head_paths(tests_case: Analysis) -> None:
    change = tests_case.changes["shop.session.create_session"]
    items = linked_tests(change, tests_case.graph, tests_case.head, tests_case.touched,
                         head_paths={"tests/test_session.py"})
    assert [e.path for e in items] == ["tests/test_session.py"]


@pytest.mark.parametrize(("source", "test", "expected"), [
    ("shop/session.py", "tests/test_session.py", 1.0),
    ("shop/session.py", "shop/session_test.py", 1.0),
    ("shop/session.py", "tests/test_session_extra.py", 0.5),
    ("shop/session.py", "tests/test_sessions.py", 0.0),
    ("internal/store/store.go", "internal/store/store_test.go", 1.0),
    ("src/com/acme/Money.java", "test/com/acme/MoneyTest.java", 1.0),
    ("src/com/acme/Money.java", "test/com/acme/TestMoney.java", 1.0),
    ("src/com/acme/Money.java", "test/com/acme/WalletTest.java", 0.0),
    ("web/cart.ts", "web/cart.test.ts", 1.0),
    ("web/cart.ts", "web/__tests__/cart.spec.tsx", 1.0),
    ("web/cart.js", "web/cart.spec.js", 1.0),
    ("web/cart.ts", "web/carts.test.ts", 0.0),
    ("README.md", "tests/test_README.py", 0.0),
])
def test_naming_conventions(source: str, test: str, expected: float) -> None:
    assert naming_strength(PurePosixPath(source), PurePosixPath(test)) == expected


@pytest.mark.parametrize(("files", "source", "test", "selected"), [
    pytest.param({"internal/store/store.go": "package store\n\nfunc Open() int {\n"
                  "\treturn 1\n}\n",
                  "internal/store/store_test.go": "package store\n\nimport \"testing\"\n\n"
                  "func TestNothing(t *testing.T) {}\n"},
                 "internal/store/store.go", "internal/store/store_test.go", True, id="go"),
    pytest.param({"src/com/acme/Money.java": "package com.acme;\n\npublic class Money {\n"
                  "    public int of() {\n        return 1;\n    }\n}\n",
                  "test/com/acme/MoneyTest.java": "package com.acme;\n\n"
                  "public class MoneyTest {\n    void testNothing() {}\n}\n"},
                 "src/com/acme/Money.java", "test/com/acme/MoneyTest.java", True, id="java"),
    pytest.param({"web/cart.ts": "export function total(): number {\n  return 1;\n}\n",
                  "web/cart.spec.ts": "it('works', () => {});\n"},
                 "web/cart.ts", "web/cart.spec.ts", False, id="ts"),
])
def test_naming_links_on_real_indexes(make_repo: Callable[..., GitRepo], tmp_path: Path,
                                      files: dict[str, str], source: str, test: str,
                                      selected: bool) -> None:
    """Named after it, the test is linked; it is selected where it can run the code: a Go
    or Java test shares its package's scope, a TypeScript one that imports nothing not."""
    repo = make_repo(files)
    base = repo.git("rev-parse", "HEAD").strip()
    repo.write(source, files[source].replace("1", "2"))
    head = repo.commit("edit")
    case = analyse(repo, base, head, tmp_path)
    change = next(iter(case.changes.values()))
    items = linked_tests(change, case.graph, case.head, case.touched)
    assert [(e.path, e.signals) for e in items] == [(test, {"naming": 1.0})]
    assert selection(case, change.qualified_name) == ([test] if selected else [])


# -- stale docs ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def docs_case(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    return analyse_edit(tmp_path_factory.mktemp("links_docs"), DOC_FILES, {
        "shop/session.py": SESSION_HEAD,
        "docs/guide.md": DOC_FILES["docs/guide.md"] + "\nNow with a timeout.\n",
    })


def docs(case: Analysis, qualified_name: str, limit: int = 10) -> list[Evidence]:
    change = case.changes[qualified_name]
    corpus = case.base_corpus if change.change == "removed" else case.corpus
    return stale_docs(change, case.head, case.touched, case.corpus,
                      symbol_vector(corpus, qualified_name), limit=limit)


def summary(items: list[Evidence]) -> list[tuple[str, int, str | None, str]]:
    return [(e.path, e.start_line, e.status, max(e.signals, key=lambda k: e.signals[k]))
            for e in items]


def test_docs_ordered_by_evidence_strength(docs_case: Analysis) -> None:
    items = docs(docs_case, "shop.session.create_session")
    assert [s for s in summary(items) if s[3] != "semantic"] == [
        ("docs/api.md", 7, "stale", "parameter"),  # `retries=5` was removed
        ("README.md", 3, "stale", "example"),  # create_session(user, token): no timeout
        ("docs/api.md", 3, "stale", "directive"),
        ("docs/guide.md", 3, "updated", "mention"),  # the PR edited this file
        ("shop/other.py", 1, "stale", "docstring"),
    ]


@pytest.mark.parametrize(("qualified_name", "path", "line", "reason"), [
    pytest.param("shop.session.create_session", "docs/api.md", 7,
                 "docs/api.md § API > Retries still mentions parameter retries of "
                 "create_session, renamed to timeout in this PR (line 9)", id="removed-parameter"),
    pytest.param("shop.session.create_session", "README.md", 3,
                 "README.md § Shop > Usage still calls create_session(user, token) "
                 "without the new timeout parameter", id="old-signature-example"),
    pytest.param("shop.session.create_session", "docs/api.md", 3,
                 "docs/api.md § API > Sessions has `::: shop.session.create_session`",
                 id="directive"),
    pytest.param("shop.session.create_session", "shop/other.py", 1,
                 "docstring of shop.other.batch (shop/other.py:1) mentions create_session",
                 id="docstring-of-another-symbol"),
    pytest.param("shop.session.legacy_login", "docs/api.md", 11,
                 "docs/api.md § API > Legacy still mentions shop.session.legacy_login, which "
                 "no longer exists at head (line 13: Use `legacy_login` to log in.)",
                 id="removed-symbol-distinctive-bare-name"),
    pytest.param("shop.session.Client.get", "docs/api.md", 19,
                 "docs/api.md § API > Client usage mentions get (line 21)",
                 id="generic-name-qualified-by-class"),
])
def test_doc_reasons(docs_case: Analysis, qualified_name: str, path: str, line: int,
                     reason: str) -> None:
    found = {(e.path, e.start_line): e for e in docs(docs_case, qualified_name)}
    assert found[(path, line)].reason == reason


def test_generic_bare_name_needs_qualification(docs_case: Analysis) -> None:
    items = docs(docs_case, "shop.session.Client.get")
    lexical = [(e.path, e.start_line) for e in items if "lexical" in e.signals]
    assert lexical == [("docs/api.md", 19)]  # not § Fetching's bare `get()`, nor fetch_all
    assert all(e.start_line != 15 or "lexical" not in e.signals for e in items)


def test_removed_symbol_ranks_first(docs_case: Analysis) -> None:
    items = docs(docs_case, "shop.session.legacy_login")
    assert items[0].score >= 1.0
    assert items[0].signals["mention"] == 1.0
    assert items[0].status == "stale"


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_at_most_limit_docs_per_symbol(docs_case: Analysis, limit: int) -> None:
    items = docs(docs_case, "shop.session.create_session", limit=limit)
    assert [(e.path, e.start_line) for e in items] == [
        ("docs/api.md", 7), ("README.md", 3), ("docs/api.md", 3)][:limit]


def test_default_limit_is_three(docs_case: Analysis) -> None:
    change = docs_case.changes["shop.session.create_session"]
    assert len(stale_docs(change, docs_case.head, docs_case.touched)) == 3


# -- stale docs: owners, re-exports, module pages, history --------------------------------

OWNER_FILES = {
    "pkg/__init__.py": "from pkg._impl import Widget\n",
    "pkg/_impl.py": (
        "class Widget:\n"
        "    def resize(self, size):\n"
        "        return size\n"
        "\n"
        "    def _hidden(self):\n"
        "        return 1\n"
    ),
    "pkg/shapes.py": "def area(side):\n    return side * side\n",
    "docs/api.rst": (
        "API\n===\n\n"
        ".. autoclass:: pkg.Widget\n"
        "    :members:\n"
    ),
    "docs/guide.rst": "Guide\n=====\n\nMake a ``Widget`` and show it.\n",
    "docs/shapes.rst": (
        "Shapes\n======\n\n"
        ".. automodule:: pkg.shapes\n\n"
        "Sizes\n-----\n\n"
        "Call ``area`` for the size of a square.\n"
    ),
    "CHANGELOG.rst": "Changelog\n=========\n\n1.0\n---\n\n- ``Widget`` and ``area`` added.\n",
}


@pytest.fixture(scope="module")
def owner_case(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    return analyse_edit(tmp_path_factory.mktemp("links_owner_docs"), OWNER_FILES, {
        "pkg/_impl.py": OWNER_FILES["pkg/_impl.py"].replace("return size", "return size * 2")
                        .replace("return 1", "return 2"),
        "pkg/shapes.py": "def area(side):\n    return side ** 2\n\n\n"
                         "def circle(radius):\n    return 3 * radius ** 2\n",
    })


def reasons(case: Analysis, qualified_name: str) -> dict[str, str]:
    return {e.path: e.reason for e in docs(case, qualified_name) if "lexical" in e.signals}


def test_members_directive_through_reexport_renders_changed_method(owner_case: Analysis) -> None:
    assert reasons(owner_case, "pkg._impl.Widget.resize")["docs/api.rst"] == (
        "docs/api.rst § API has `.. autoclass:: pkg.Widget`, which renders resize")


def test_class_mention_counts_for_public_method(owner_case: Analysis) -> None:
    item = by_path(docs(owner_case, "pkg._impl.Widget.resize"))["docs/guide.rst"]
    assert item.reason == ("docs/guide.rst § Guide mentions Widget, whose method resize "
                           "changed (line 4)")
    assert item.signals["mention"] == CLASS_MENTION_WEIGHT


def test_private_method_gets_no_class_docs(owner_case: Analysis) -> None:
    assert reasons(owner_case, "pkg._impl.Widget._hidden") == {}


def test_page_named_after_module_qualifies_bare_name(owner_case: Analysis) -> None:
    assert reasons(owner_case, "pkg.shapes.area") == {
        "docs/shapes.rst": "docs/shapes.rst § Shapes > Sizes mentions area (line 9)"}


def test_added_symbol_lists_its_module_page(owner_case: Analysis) -> None:
    items = docs(owner_case, "pkg.shapes.circle")
    assert [(e.path, e.status, e.reason) for e in items] == [
        ("docs/shapes.rst", "stale", "docs/shapes.rst § Shapes documents pkg.shapes "
                                     "(`.. automodule:: pkg.shapes`), which gains circle")]


def test_changelogs_are_not_stale_docs(owner_case: Analysis) -> None:
    for name in ("pkg._impl.Widget.resize", "pkg.shapes.area", "pkg.shapes.circle"):
        assert all(e.path != "CHANGELOG.rst" for e in docs(owner_case, name))


# -- stale docs: page layout (current module, re-exports, toctrees), class attributes -----

LAYOUT_FILES = {
    "pkg/__init__.py": "from pkg._impl import Widget\n",
    "pkg/_impl.py": "class Widget:\n    pass\n",
    "pkg/colors.py": "def red():\n    return 1\n",
    "pkg/shapes.py": "def area(side):\n    return side * side\n",
    "pkg/config.py": (
        "class Settings:\n"
        "    \"\"\"Settings.\n"
        "\n"
        "    Note: read once.\n"
        "    \"\"\"\n"
        "\n"
        "    #: Seconds to wait.\n"
        "    timeout: int = 10\n"
        "    retries = 3\n"
        "\n"
        "    def load(self):\n"
        "        return 1\n"
    ),
    "pkg/net.py": (
        "def connect(timeout=5):\n"
        "    \"\"\"Open a connection.\n"
        "\n"
        "    :param timeout: seconds before giving up.\n"
        "    \"\"\"\n"
        "    return timeout\n"
    ),
    "docs/index.rst": (
        "Docs\n====\n\n"
        ".. toctree::\n"
        "   :maxdepth: 1\n\n"
        "   shapes\n"
        "   Colours <colors>\n"
        "   guide\n"
    ),
    "docs/api.rst": "API\n===\n\n.. autoclass:: pkg.Widget\n",
    "docs/colors.rst": (
        "Colours\n=======\n\n"
        ".. currentmodule:: pkg.colors\n\n"
        ".. function:: red()\n\n"
        "   The red one.\n"
    ),
    "docs/shapes.rst": "Shapes\n======\n\n.. function:: pkg.shapes.area(side)\n",
    "docs/reference.md": "# Reference\n\n::: pkg.shapes\n",
    "docs/myst.md": "# MyST\n\n```{automodule} pkg.shapes\n:members:\n```\n",
    "docs/guide.rst": (
        "Guide\n=====\n\n"
        "General\n-------\n\n"
        "Make a ``Settings`` first.\n\n"
        "Limits\n------\n\n"
        "Raise :attr:`Settings.timeout` on slow networks.\n"
    ),
}


@pytest.fixture(scope="module")
def layout_case(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    return analyse_edit(tmp_path_factory.mktemp("links_layout_docs"), LAYOUT_FILES, {
        "pkg/__init__.py": "from pkg._impl import Gadget, Widget\n",
        "pkg/_impl.py": "class Widget:\n    pass\n\n\nclass Gadget:\n    pass\n\n\n"
                        "def helper():\n    return 1\n",
        "pkg/colors.py": "def red():\n    return 1\n\n\ndef blue():\n    return 2\n",
        "pkg/sizes.py": "def small():\n    return 1\n",
        "pkg/shapes.py": "def area(side):\n    return side ** 2\n",
        "pkg/_cache.py": "def lookup():\n    return 1\n",
        "pkg/config.py": LAYOUT_FILES["pkg/config.py"]
        .replace("#: Seconds to wait.", "#: Seconds to wait, 30 by default.")
        .replace("timeout: int = 10", "timeout: int = 30")
        .replace("Note: read once.", "Note: read at start."),
    })


def test_current_module_directive_is_the_module_page(layout_case: Analysis) -> None:
    assert [(e.path, e.reason) for e in docs(layout_case, "pkg.colors.blue")] == [
        ("docs/colors.rst", "docs/colors.rst § Colours documents pkg.colors "
                            "(`.. currentmodule:: pkg.colors`), which gains blue")]


def test_page_of_reexported_members_lists_new_reexported_class(layout_case: Analysis) -> None:
    items = docs(layout_case, "pkg._impl.Gadget")
    assert [(e.path, e.signals["module"], e.reason) for e in items] == [
        ("docs/api.rst", MEMBER_PAGE_WEIGHT,
         "docs/api.rst § API documents members of pkg one by one "
         "(`.. autoclass:: pkg.Widget`); Gadget is new there")]


def test_member_page_needs_the_new_symbol_exported(layout_case: Analysis) -> None:
    assert docs(layout_case, "pkg._impl.helper") == []  # pkg does not import it


@pytest.mark.parametrize(("path", "reason"), [
    pytest.param("docs/reference.md",
                 "docs/reference.md § Reference has `::: pkg.shapes`, which renders area",
                 id="mkdocstrings"),
    pytest.param("docs/myst.md",
                 "docs/myst.md § MyST has `{automodule} pkg.shapes`, which renders area",
                 id="myst-automodule"),
])
def test_module_directive_rendering_members_counts_for_changed_function(
        layout_case: Analysis, path: str, reason: str) -> None:
    item = by_path(docs(layout_case, "pkg.shapes.area"))[path]
    assert (item.reason, item.signals["directive"]) == (reason, DIRECTIVE_WEIGHT)


def test_new_module_without_page_lists_the_toctree_of_its_siblings(
        layout_case: Analysis) -> None:
    assert [(e.path, e.start_line, e.reason) for e in docs(layout_case, "pkg.sizes.small")] == [
        ("docs/index.rst", 1, "docs/index.rst § Docs lists the pages of 2 sibling modules "
                              "(colors, shapes); pkg.sizes, which gains small, has no page")]


def test_new_private_module_gets_no_toctree(layout_case: Analysis) -> None:
    assert docs(layout_case, "pkg._cache.lookup") == []


def test_changed_class_attribute_outranks_class_mentions(layout_case: Analysis) -> None:
    items = docs(layout_case, "pkg.config.Settings")
    assert [(e.path, e.start_line, e.signals["mention"]) for e in items
            if "lexical" in e.signals] == [
        ("docs/guide.rst", 9, ATTRIBUTE_MENTION_WEIGHT), ("docs/guide.rst", 4, MENTION_WEIGHT)]
    assert items[0].reason == ("docs/guide.rst § Guide > Limits mentions Settings.timeout, "
                               "a class attribute this PR changed (line 12)")


def test_changed_attributes_skip_docstring_lines(layout_case: Analysis) -> None:
    # the PR changed the comment and value of timeout, and a docstring line "Note: ..."
    change = layout_case.changes["pkg.config.Settings"]
    assert changed_attributes(change, layout_case.corpus) == ("timeout",)
    assert changed_attributes(change, None) == ()


def test_attribute_name_alone_is_not_the_class_attribute(layout_case: Analysis) -> None:
    # pkg/net.py's docstring names a timeout parameter, not Settings.timeout
    assert all(e.path != "pkg/net.py" for e in docs(layout_case, "pkg.config.Settings"))


@pytest.mark.parametrize(("text", "entries"), [
    pytest.param(".. toctree::\n   :hidden:\n\n   api/version\n   Tags <tags>\n\nAfter\n",
                 ["version", "tags"], id="rst"),
    pytest.param("```{toctree}\n:maxdepth: 2\n\nversion.md\nmarkers\n```\nmarkers2\n",
                 ["version", "markers"], id="myst"),
    pytest.param("Text with toctree in it.\n", [], id="prose"),
])
def test_toctree_entries(text: str, entries: list[str]) -> None:
    assert toctree_entries(text) == entries


@pytest.mark.parametrize(("path", "siblings"), [
    pytest.param("src/pkg/new.py", {"a", "sub", "_private"}, id="module"),
    pytest.param("src/pkg/sub/__init__.py", {"a", "new", "_private"}, id="package"),
])
def test_sibling_modules(path: str, siblings: set[str]) -> None:
    paths = ["src/pkg/__init__.py", "src/pkg/a.py", "src/pkg/new.py", "src/pkg/_private.py",
             "src/pkg/sub/__init__.py", "src/pkg/sub/deep.py", "src/pkg/notes.md", "README.md"]
    assert sibling_modules(path, paths) == siblings


def test_a_bare_dunder_in_a_docstring_names_no_constructor(tmp_path: Path) -> None:
    # "__init__" in prose names every class's constructor; "Loader.__init__" names one.
    loader = ('class Loader:\n'
              '    def __init__(self, path):\n'
              '        self.path = path\n')
    base = ('"""Loaders."""\n\n\n'
            'class Base:\n'
            '    """Subclass it and call super().__init__ first, as loaders do."""\n\n\n'
            'class Cache:\n'
            '    """Wraps a Loader; see Loader.__init__ for the path."""\n\n\n' + loader)
    case = analyse_edit(tmp_path, {"pkg/__init__.py": "", "pkg/loaders.py": base},
                        {"pkg/loaders.py": base.replace("(self, path)", "(self, path, ttl)")})
    found = docs(case, "pkg.loaders.Loader.__init__")
    assert [(e.path, e.symbol) for e in found if "docstring" in e.signals] == [
        ("pkg/loaders.py", "pkg.loaders.Cache")]


PRICES = "def total(items):\n    return sum(item.price for item in items)\n"
PRICES_DOC = ("# Prices\n\n## Totals\n\nThe shop prices:\n\n```python\n"
              "def price_of(items, rate):\n"
              "    return sum(item.price for item in items) * (1 - rate)\n```\n\n"
              "## Tests\n\n```python\ndef test_prices():\n    items = []\n"
              "    assert total(items) == 0 + sum(item.price for item in items)\n```\n")
PRICES_TEST = ("from shop.prices import total\n\n\ndef test_total():\n"
               "    items = []\n    assert total(items) == sum(item.price for item in items)\n")


def test_semantic_nearness_alone_links_no_doc_to_an_added_symbol(tmp_path: Path) -> None:
    # The PR edits the page, so every section of it is "updated", but § Totals, which
    # reads like the new function, does not mention it; a changed function gets it.
    added = "\n\ndef discounted_total(items, rate):\n" \
            "    return sum(item.price for item in items) * (1 - rate)\n"
    case = analyse_edit(tmp_path, {"shop/prices.py": PRICES, "docs/prices.md": PRICES_DOC},
                        {"shop/prices.py": PRICES + added,
                         "docs/prices.md": PRICES_DOC + "\n## Rounding\n\nCents.\n"})
    assert docs(case, "shop.prices.discounted_total") == []
    changed = analyse_edit(tmp_path / "changed", {"shop/prices.py": PRICES,
                                                  "docs/prices.md": PRICES_DOC},
                           {"shop/prices.py": PRICES.replace("sum(", "round(sum(") + ")"})
    assert ("docs/prices.md", 3, {"semantic"}) in [
        (e.path, e.start_line, set(e.signals)) for e in docs(changed, "shop.prices.total")]


def test_semantic_nearness_links_no_doc_to_a_test(tmp_path: Path) -> None:
    case = analyse_edit(tmp_path, {"shop/prices.py": PRICES, "docs/prices.md": PRICES_DOC,
                                   "tests/test_prices.py": PRICES_TEST},
                        {"tests/test_prices.py": PRICES_TEST.replace("== sum", "== 0 + sum")})
    assert docs(case, "tests.test_prices.test_total") == []



@pytest.mark.parametrize(("test_body", "verb"), [
    ("    assert Order(1)\n", "calls Order (line 5)"),  # Python instantiates by a call
    ("    order: Order = make()\n    assert order\n", "uses Order (line 5)"),
])
def test_a_linked_tests_reason_says_what_it_does_with_a_class(
        tmp_path: Path, test_body: str, verb: str) -> None:
    order = "class Order:\n    def __init__(self, id):\n        self.id = id\n"
    case = analyse_edit(tmp_path, {
        "shop/models.py": order,
        "tests/test_models.py": ("from shop.models import Order\n\n\n"
                                 "def test_order():\n" + test_body),
    }, {"shop/models.py": order.replace("Order:\n", "Order:\n    kind = 'order'\n")})
    [item] = linked(case, "shop.models.Order")
    assert item.reason == f"tests/test_models.py::test_order {verb}"
