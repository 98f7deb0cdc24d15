"""Callers through the symbol graph, on real git repositories and real DuckDB indexes."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pr_context.graph import SymbolGraph, callers_of, load_graph
from pr_context.index.store import IndexStore
from tests.conftest import GitRepo
from tests.test_index import index

PY_FILES = {
    "shop/__init__.py": "from .session import create_session\n",
    "shop/session.py": (
        "def create_session(user):\n"
        "    return _token(user)\n"
        "\n"
        "\n"
        "def _token(user):\n"
        "    return user\n"
    ),
    "shop/legacy.py": "def create_session(user):\n    return None\n",
    "shop/views.py": (
        "from shop.session import create_session as make\n"
        "from . import session\n"
        "\n"
        "\n"
        "def login(user):\n"
        "    return make(user)\n"
        "\n"
        "\n"
        "def relogin(user):\n"
        "    return session.create_session(user)\n"
    ),
    "shop/models.py": (
        "class Base:\n"
        "    def __init__(self, name):\n"
        "        self.name = name\n"
        "\n"
        "    def save(self):\n"
        "        return self.validate()\n"
        "\n"
        "    def validate(self):\n"
        "        return True\n"
        "\n"
        "\n"
        "class Order(Base):\n"
        "    def validate(self):\n"
        "        return super().validate()\n"
        "\n"
        "    def submit(self):\n"
        "        return self.save()\n"
        "\n"
        "\n"
        "def new_order():\n"
        "    return Order('x')\n"
    ),
    "shop/sub/report.py": (
        "from ..models import Base\n"
        "from .. import session as s\n"
        "import shop.legacy\n"
        "\n"
        "\n"
        "def build(thing):\n"
        "    s.create_session(1)\n"
        "    shop.legacy.create_session(2)\n"
        "    thing.validate()\n"
        "    return Base('r')\n"
    ),
    "tests/test_views.py": (
        "from shop import create_session\n"
        "\n"
        "\n"
        "def _logged_in(user):\n"
        "    return create_session(user)\n"
        "\n"
        "\n"
        "def test_login():\n"
        "    assert _logged_in('u')\n"
    ),
}

# Receivers whose class is evident: annotations, constructors, self attributes, fixtures.
TYPED_FILES = {
    "app/core.py": (
        "class Hook:\n"
        "    def call(self):\n"
        "        return 1\n"
        "\n"
        "\n"
        "class Manager:\n"
        "    def __init__(self, name):\n"
        "        self.hook = Hook()\n"
        "        self.name = name\n"
        "\n"
        "    def get(self):\n"
        "        return self.hook.call()\n"
        "\n"
        "\n"
        "class Special(Manager):\n"
        "    pass\n"
    ),
    "app/use.py": (
        "from typing import Optional\n"
        "\n"
        "from app import core\n"
        "from app.core import Manager, Special\n"
        "\n"
        "\n"
        "def annotated(m: Manager, o: Optional['core.Manager'] = None, *, k: int = 1):\n"
        "    m.get()\n"
        "    o.get()\n"
        "\n"
        "\n"
        "def constructed(thing):\n"
        "    x = Special('a')\n"
        "    x.get()\n"
        "    x = thing.make()\n"
        "    x.get()\n"
        "    thing.get()\n"
        "    def inner():\n"
        "        return y.get()\n"
        "    y = Manager('b')\n"
        "    return inner\n"
    ),
    "tests/conftest.py": (
        "import pytest\n"
        "\n"
        "from app.core import Manager\n"
        "\n"
        "\n"
        "@pytest.fixture\n"
        "def pm() -> Manager:\n"
        "    return Manager('x')\n"
        "\n"
        "\n"
        "@pytest.fixture(scope='module')\n"
        "def built(request):\n"
        "    return Manager(\n"
        "        request.param)\n"
        "\n"
        "\n"
        "def helper():\n"
        "    return Manager('not a fixture')\n"
        "\n"
        "\n"
        "@pytest.fixture\n"
        "def shadowed() -> Manager:\n"
        "    return Manager('far')\n"
    ),
    "tests/unit/test_core.py": (
        "import pytest\n"
        "\n"
        "\n"
        "@pytest.fixture\n"
        "def built(pm):\n"
        "    return pm\n"
        "\n"
        "\n"
        "def test_get(pm, built, helper, other):\n"
        "    pm.get()\n"
        "    built.get()\n"
        "    helper.get()\n"
        "    other.get()\n"
        "\n"
        "\n"
        "@pytest.fixture\n"
        "def shadowed():\n"
        "    return object()\n"
        "\n"
        "\n"
        "def test_shadowed(shadowed):\n"
        "    shadowed.get()\n"
    ),
    "elsewhere/test_far.py": "def test_far(pm):\n    pm.get()\n",
}

TS_FILES = {
    "web/lib/util.ts": (
        "export function format(a: number): string { return String(a); }\n"
        "export default function parse(s: string): number { return Number(s); }\n"
        "export class Cart {\n"
        "  total(): number { return this.sum(); }\n"
        "  sum(): number { return 0; }\n"
        "}\n"
    ),
    "web/lib/index.ts": "export { format } from './util';\nexport * from './util';\n",
    "web/old/util.ts": "export function format(a: number): string { return ''; }\n",
    "web/app.ts": (
        "import { format, Cart } from './lib';\n"
        "import { format as fmt } from './lib/util';\n"
        "import * as u from './lib/util';\n"
        "import parse from './lib/util';\n"
        "export function main(): void {\n"
        "  format(1);\n"
        "  fmt(2);\n"
        "  u.format(3);\n"
        "  parse('4');\n"
        "  const c = new Cart();\n"
        "}\n"
    ),
}

GO_FILES = {
    "go.mod": "module example.com/app\n",
    "internal/store/store.go": (
        "package store\n"
        "\n"
        "type Store struct{}\n"
        "\n"
        "func Open() *Store { return &Store{} }\n"
        "\n"
        "func (s *Store) Get(k string) string { return s.key(k) }\n"
        "\n"
        "func (s *Store) key(k string) string { return normalize(k) }\n"
        "\n"
        "func normalize(k string) string { return k }\n"
    ),
    "internal/legacy/store.go": "package legacy\n\nfunc Open() int { return 0 }\n",
    "cmd/app/main.go": (
        "package main\n"
        "\n"
        "import (\n"
        "\t\"fmt\"\n"
        "\tdb \"example.com/app/internal/store\"\n"
        ")\n"
        "\n"
        "func main() {\n"
        "\ts := db.Open()\n"
        "\tfmt.Println(s.Get(\"a\"))\n"
        "}\n"
    ),
}

JAVA_FILES = {
    "src/com/acme/util/Money.java": (
        "package com.acme.util;\n"
        "\n"
        "public class Money {\n"
        "    public Money(int cents) {}\n"
        "    public static Money of(int cents) { return new Money(cents); }\n"
        "}\n"
    ),
    "src/com/acme/legacy/Money.java": (
        "package com.acme.legacy;\n\npublic class Money {\n    public Money(int c) {}\n}\n"
    ),
    "src/com/acme/shop/Cart.java": (
        "package com.acme.shop;\n"
        "\n"
        "import com.acme.util.Money;\n"
        "\n"
        "public class Cart {\n"
        "    Money total() {\n"
        "        Pricing.check();\n"
        "        return new Money(this.sum());\n"
        "    }\n"
        "    int sum() { return 0; }\n"
        "}\n"
    ),
    "src/com/acme/shop/Pricing.java": (
        "package com.acme.shop;\n\npublic class Pricing {\n    static void check() {}\n}\n"
    ),
}

RUST_FILES = {
    "Cargo.toml": "[package]\nname = \"geo\"\n",
    "src/shapes.rs": (
        "pub struct Square;\n"
        "impl Square {\n"
        "    pub fn new() -> Square { Square }\n"
        "}\n"
        "pub fn area(x: i32) -> i32 { x }\n"
    ),
    "src/lib.rs": (
        "mod shapes;\n"
        "use crate::shapes::{area as surface, Square};\n"
        "pub fn run() {\n"
        "    surface(1);\n"
        "    Square::new();\n"
        "}\n"
    ),
}

Site = tuple[str, int, str | None, str]  # (path, line, enclosing, how)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory
           ) -> Callable[[dict[str, str]], SymbolGraph]:
    """A real index of a repository with ``files``, and its graph; built once per file set."""
    built: dict[int, SymbolGraph] = {}

    def build(files: dict[str, str]) -> SymbolGraph:
        if id(files) not in built:
            root = tmp_path_factory.mktemp("graph")
            repo = GitRepo(root / "repo")
            for relpath, content in files.items():
                repo.write(relpath, content)
            repo.commit("initial")
            index(repo, root / "index.duckdb")
            with IndexStore.open_existing(root / "index.duckdb") as store:
                built[id(files)] = load_graph(store)
        return built[id(files)]
    return build


def sites(graph: SymbolGraph, qualified_name: str) -> list[Site]:
    return [(c.path, c.line, c.enclosing, c.how) for c in callers_of(graph, qualified_name)]


@pytest.mark.parametrize(("files", "symbol", "expected"), [
    pytest.param(PY_FILES, "shop.session.create_session", [
        ("shop/sub/report.py", 7, "shop.sub.report.build", "graph"),  # from .. import session
        ("shop/views.py", 6, "shop.views.login", "graph"),  # aliased import
        ("shop/views.py", 10, "shop.views.relogin", "graph"),  # from . import session
        ("tests/test_views.py", 5, "tests.test_views._logged_in", "graph"),  # re-export
    ], id="python-function-imports-aliases-reexport-test-helper"),
    pytest.param(PY_FILES, "shop.legacy.create_session", [
        ("shop/sub/report.py", 8, "shop.sub.report.build", "graph"),  # import shop.legacy
    ], id="python-legacy-copy-only-its-own-caller"),
    pytest.param(PY_FILES, "shop.session._token", [
        ("shop/session.py", 2, "shop.session.create_session", "graph"),
    ], id="python-same-module"),
    pytest.param(PY_FILES, "shop.models.Base.validate", [
        ("shop/models.py", 6, "shop.models.Base.save", "graph"),  # self.validate()
        ("shop/models.py", 14, "shop.models.Order.validate", "graph"),  # super().validate()
        ("shop/sub/report.py", 9, "shop.sub.report.build", "lexical"),  # thing.validate()
    ], id="python-self-super-and-unknown-receiver"),
    pytest.param(PY_FILES, "shop.models.Order.validate", [
        ("shop/models.py", 6, "shop.models.Base.save", "lexical"),  # dispatch to override
        ("shop/sub/report.py", 9, "shop.sub.report.build", "lexical"),
    ], id="python-override"),
    pytest.param(PY_FILES, "shop.models.Base.save", [
        ("shop/models.py", 17, "shop.models.Order.submit", "graph"),  # inherited, not overridden
    ], id="python-inherited-self-call"),
    pytest.param(PY_FILES, "shop.models.Base.__init__", [
        ("shop/sub/report.py", 10, "shop.sub.report.build", "graph"),  # relative import
    ], id="python-instantiation-runs-constructor"),
    pytest.param(PY_FILES, "shop.models.Order", [
        ("shop/models.py", 21, "shop.models.new_order", "graph"),
    ], id="python-instantiation-same-module"),
    pytest.param(TYPED_FILES, "app.core.Manager.get", [
        ("app/use.py", 8, "app.use.annotated", "graph"),  # m: Manager
        ("app/use.py", 9, "app.use.annotated", "graph"),  # Optional['core.Manager']
        ("app/use.py", 14, "app.use.constructed", "graph"),  # x = Special(...), inherited
        ("app/use.py", 19, "app.use.constructed.inner", "graph"),  # closure over y
        ("tests/unit/test_core.py", 10, "tests.unit.test_core.test_get", "graph"),  # -> Manager
        ("tests/unit/test_core.py", 11, "tests.unit.test_core.test_get", "graph"),  # return pm
        ("app/use.py", 16, "app.use.constructed", "lexical"),  # x rebound to thing.make()
        ("app/use.py", 17, "app.use.constructed", "lexical"),  # untyped parameter
        ("elsewhere/test_far.py", 2, "elsewhere.test_far.test_far", "lexical"),  # no conftest
        ("tests/unit/test_core.py", 12, "tests.unit.test_core.test_get", "lexical"),  # no fixture
        ("tests/unit/test_core.py", 13, "tests.unit.test_core.test_get", "lexical"),
        # the file's own untyped fixture hides conftest's typed one
        ("tests/unit/test_core.py", 22, "tests.unit.test_core.test_shadowed", "lexical"),
    ], id="python-typed-receivers-and-untyped-traps"),
    pytest.param(TYPED_FILES, "app.core.Hook.call", [
        ("app/core.py", 12, "app.core.Manager.get", "graph"),  # self.hook = Hook() in __init__
    ], id="python-self-attribute"),
    pytest.param(TS_FILES, "web.lib.util.format", [
        ("web/app.ts", 6, "web.app.main", "graph"),  # through the index.ts barrel
        ("web/app.ts", 7, "web.app.main", "graph"),  # import { format as fmt }
        ("web/app.ts", 8, "web.app.main", "graph"),  # import * as u
    ], id="ts-barrel-alias-namespace"),
    pytest.param(TS_FILES, "web.old.util.format", [], id="ts-legacy-copy"),
    pytest.param(TS_FILES, "web.lib.util.parse", [
        ("web/app.ts", 9, "web.app.main", "graph"),
    ], id="ts-default-import"),
    pytest.param(TS_FILES, "web.lib.util.Cart", [
        ("web/app.ts", 10, "web.app.main", "graph"),
    ], id="ts-new-through-export-star"),
    pytest.param(TS_FILES, "web.lib.util.Cart.sum", [
        ("web/lib/util.ts", 4, "web.lib.util.Cart.total", "graph"),
    ], id="ts-this-method"),
    pytest.param(GO_FILES, "internal.store.Open", [
        ("cmd/app/main.go", 9, "cmd.app.main", "graph"),
    ], id="go-package-qualified-with-alias"),
    pytest.param(GO_FILES, "internal.legacy.Open", [], id="go-other-package-same-name"),
    pytest.param(GO_FILES, "internal.store.normalize", [
        ("internal/store/store.go", 9, "internal.store.Store.key", "graph"),
    ], id="go-same-package"),
    pytest.param(GO_FILES, "internal.store.Store.key", [
        ("internal/store/store.go", 7, "internal.store.Store.Get", "graph"),
    ], id="go-method-on-own-receiver"),
    pytest.param(GO_FILES, "internal.store.Store.Get", [
        ("cmd/app/main.go", 10, "cmd.app.main", "lexical"),
    ], id="go-method-on-unknown-receiver"),
    pytest.param(JAVA_FILES, "com.acme.util.Money.Money", [
        ("src/com/acme/shop/Cart.java", 8, "com.acme.shop.Cart.total", "graph"),
        ("src/com/acme/util/Money.java", 5, "com.acme.util.Money.of", "graph"),
    ], id="java-import-new"),
    pytest.param(JAVA_FILES, "com.acme.legacy.Money", [], id="java-legacy-copy"),
    pytest.param(JAVA_FILES, "com.acme.shop.Pricing.check", [
        ("src/com/acme/shop/Cart.java", 7, "com.acme.shop.Cart.total", "graph"),
    ], id="java-same-package"),
    pytest.param(JAVA_FILES, "com.acme.shop.Cart.sum", [
        ("src/com/acme/shop/Cart.java", 8, "com.acme.shop.Cart.total", "graph"),
    ], id="java-this-method"),
    pytest.param(RUST_FILES, "shapes.area", [
        ("src/lib.rs", 4, "run", "graph"),
    ], id="rust-use-alias"),
    pytest.param(RUST_FILES, "shapes.Square.new", [
        ("src/lib.rs", 5, "run", "graph"),
    ], id="rust-associated-function"),
])
def test_callers(graphs: Callable[[dict[str, str]], SymbolGraph], files: dict[str, str],
                 symbol: str, expected: list[Site]) -> None:
    assert sites(graphs(files), symbol) == expected


def test_reasons_and_confidence_say_how_a_caller_was_found(
        graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    graph = graphs(PY_FILES)
    by_line = {(c.path, c.line): c for c in callers_of(graph, "shop.session.create_session")}
    helper = by_line[("tests/test_views.py", 5)]
    assert (helper.confidence, helper.column) == (1.0, 11)
    assert helper.reason == ("calls create_session() imported from shop (line 1) "
                             "(defined at shop.session.create_session)")
    aliased = by_line[("shop/views.py", 6)]
    assert aliased.reason == "calls make() imported from shop.session (line 1)"
    [lexical] = [c for c in callers_of(graph, "shop.models.Order.validate")
                 if c.path == "shop/sub/report.py"]
    assert lexical.confidence == 0.25  # DYNAMIC_CONFIDENCE shared by two `validate` methods
    assert "class of thing unknown; one of 2 methods named validate" in lexical.reason


def test_reasons_say_where_a_receiver_type_comes_from(
        graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    by_line = {(c.path, c.line): c.reason
               for c in callers_of(graphs(TYPED_FILES), "app.core.Manager.get")}
    assert by_line[("app/use.py", 14)] == (
        "calls x.get() where x is assigned Special(...) on line 13, "
        "resolves to app.core.Manager.get")
    assert by_line[("tests/unit/test_core.py", 10)] == (
        "calls pm.get() where pm is the fixture pm (tests/conftest.py:6) returning "
        "app.core.Manager, resolves to app.core.Manager.get")


def test_unknown_symbol_has_no_callers(graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    assert callers_of(graphs(PY_FILES), "shop.nowhere") == []
