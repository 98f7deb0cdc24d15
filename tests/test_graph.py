"""Callers through the symbol graph, on real git repositories and real DuckDB indexes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from pr_context.graph import SymbolGraph, callers_of
from pr_context.graph.class_lines import class_level_lines
from pr_context.graph.declared import (
    Local,
    element_type,
    field_types,
    local_declaration,
    named_type,
    parameter_types,
    return_type,
)
from pr_context.graph.names import method_in, mro
from pr_context.graph.tables import Def
from pr_context.parse import parse_file

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
        "    def lookup(self):\n"
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
        "    m.lookup()\n"
        "    o.lookup()\n"
        "\n"
        "\n"
        "def constructed(thing):\n"
        "    x = Special('a')\n"
        "    x.lookup()\n"
        "    x = thing.make()\n"
        "    x.lookup()\n"
        "    thing.lookup()\n"
        "    def inner():\n"
        "        return y.lookup()\n"
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
        "def test_lookup(pm, built, helper, other):\n"
        "    pm.lookup()\n"
        "    built.lookup()\n"
        "    helper.lookup()\n"
        "    other.lookup()\n"
        "\n"
        "\n"
        "@pytest.fixture\n"
        "def shadowed():\n"
        "    return object()\n"
        "\n"
        "\n"
        "def test_shadowed(shadowed):\n"
        "    shadowed.lookup()\n"
    ),
    "elsewhere/test_far.py": "def test_far(pm):\n    pm.lookup()\n",
}

# Functions used as values: passed, assigned, returned, aliased in a class body, decorators.
VALUE_FILES = {
    "jobs/engine.py": (
        "def run(x):\n"
        "    return x\n"
        "\n"
        "\n"
        "class Engine:\n"
        "    def start(self):\n"
        "        return 1\n"
        "\n"
        "    begin = start\n"  # 9: a class-body alias
        "\n"
        "    @property\n"
        "    def speed(self) -> int:\n"
        "        return 1\n"
        "\n"
        "    @speed.setter\n"  # 15: the decorator names the property
        "    def speed(self, value):\n"
        "        pass\n"
    ),
    "jobs/use.py": (
        "from jobs.engine import run\n"
        "\n"
        "runner = run\n"  # 3
        "\n"
        "\n"
        "def schedule(pool):\n"
        "    pool.submit(run, 1)\n"  # 7
        "    handlers = {'run': run}\n"  # 8
        "    return run\n"  # 9
        "\n"
        "\n"
        "def shadowed(run):\n"
        "    return run\n"  # 13: the parameter, not the function
        "\n"
        "\n"
        "def local(items):\n"
        "    print([run for run in items], lambda run: run)\n"  # 17: locals
        "    run = items[0]\n"
        "    return run\n"  # 19: the local
        "\n"
        "\n"
        "def factory():\n"
        "    def inner():\n"
        "        return 1\n"
        "    return inner\n"  # 25
    ),
}

# Receivers whose class follows from annotations through attribute chains and calls.
INFER_FILES = {
    "hooks/core.py": (
        "from typing import Final, overload\n"
        "\n"
        "\n"
        "class Caller:\n"
        "    def fire(self):\n"
        "        return 1\n"
        "\n"
        "\n"
        "class Relay:\n"
        "    known = None\n"
        "\n"
        "    def __getattr__(self, name: str) -> Caller:\n"
        "        raise AttributeError(name)\n"
        "\n"
        "\n"
        "class Tracer:\n"
        "    def trace(self):\n"
        "        return 1\n"
        "\n"
        "\n"
        "class Manager:\n"
        "    def __init__(self, tracer: Tracer) -> None:\n"
        "        self.relay: Final = Relay()\n"
        "        self.tracer = tracer\n"
        "\n"
        "    def subset(self, name: str) -> Caller:\n"
        "        return getattr(self.relay, name)\n"
        "\n"
        "    def log(self):\n"
        "        self.tracer.trace()\n"  # 30: self.tracer = an annotated parameter
        "\n"
        "    @overload\n"
        "    def pick(self, key: int) -> Caller: ...\n"
        "    @overload\n"
        "    def pick(self, key: str) -> Tracer: ...\n"
        "    def pick(self, key):\n"
        "        found: list[Caller]\n"
        "        found = self.lookup(key)\n"
        "        for c in found:\n"
        "            c.fire()\n"  # 40: an overload's body; the declared type holds
        "        return found[0]\n"
        "\n"
        "\n"
        "def wrap(f):\n"
        "    return f\n"
        "\n"
        "\n"
        "@wrap\n"
        "def made() -> Caller:\n"
        "    return Caller()\n"
        "\n"
        "\n"
        "class Panel:\n"
        "    @property\n"
        "    def caller(self) -> Caller:\n"
        "        return Caller()\n"
        "\n"
        "    def again(self) -> 'Self':\n"
        "        return self\n"
    ),
    "tests/test_hooks.py": (
        "from hooks.core import Caller, Manager, Panel, made\n"
        "\n"
        "\n"
        "def test_fire(m: Manager, callers: list[Caller]) -> None:\n"
        "    m.relay.anything.fire()\n"  # 5: Relay.__getattr__ -> Caller
        "    m.relay.known.fire()\n"  # 6: a class field, not __getattr__
        "    sub = m.subset('x')\n"
        "    sub.fire()\n"  # 8: Manager.subset -> Caller
        "    hook = m.relay.other\n"
        "    hook.fire()\n"  # 10: assigned a chain
        "    for c in callers:\n"
        "        c.fire()\n"  # 12: an item of list[Caller]
        "    m.pick(1).fire()\n"  # 13: which overload is not evident
        "    m.tracer.trace()\n"  # 14
        "    made().fire()\n"  # 15: a decorator may change what a call returns
        "    Panel().caller.fire()\n"  # 16: a property's return annotation
        "    Panel().again().caller.fire()\n"  # 17: -> Self
        "    either = Caller() if m else Panel()\n"
        "    either.fire()\n"  # 19: either class
        "    print(\n"
        "        Caller, Panel, sep=' ')\n"  # a call's continuation, not `a, b = ...`
        "    fresh = Caller()\n"
        "    fresh.fire()\n"  # 23
    ),
}

# Module-level instances: read by the module's functions, imported, re-exported.
GLOBAL_FILES = {
    "plugins/core.py": (
        "class Registry:\n"
        "    def register(self, f):\n"
        "        return f\n"
        "\n"
        "\n"
        "registry = Registry()\n"
        "maybe = Registry()\n"
        "\n"
        "\n"
        "@registry.register\n"  # 10
        "def first():\n"
        "    return 1\n"
        "\n"
        "\n"
        "def reset():\n"
        "    global maybe\n"
        "    maybe = object()\n"
        "\n"
        "\n"
        "def use():\n"
        "    registry.register(use)\n"  # 21
        "    maybe.register(use)\n"  # 22: rebound through `global` to something else
        "    lazy().register(use)\n"  # 23: a lazily made module-level instance
        "\n"
        "\n"
        "_made = None\n"
        "\n"
        "\n"
        "def lazy():\n"
        "    global _made\n"
        "    if _made is None:\n"
        "        _made = Registry()\n"
        "    return _made\n"
    ),
    "plugins/__init__.py": "from plugins.core import registry\n",
    "plugins/other.py": (
        "import plugins.core\n"
        "from plugins import registry\n"
        "\n"
        "\n"
        "@registry.register\n"  # 5: through the package's re-export
        "def second():\n"
        "    plugins.core.registry.register(second)\n"  # 7: a module attribute
    ),
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
    pytest.param(TYPED_FILES, "app.core.Manager.lookup", [
        ("app/use.py", 8, "app.use.annotated", "graph"),  # m: Manager
        ("app/use.py", 9, "app.use.annotated", "graph"),  # Optional['core.Manager']
        ("app/use.py", 14, "app.use.constructed", "graph"),  # x = Special(...), inherited
        ("app/use.py", 19, "app.use.constructed.inner", "graph"),  # closure over y
        ("tests/unit/test_core.py", 10, "tests.unit.test_core.test_lookup", "graph"),  # -> Manager
        ("tests/unit/test_core.py", 11, "tests.unit.test_core.test_lookup", "graph"),  # return pm
        ("app/use.py", 16, "app.use.constructed", "lexical"),  # x rebound to thing.make()
        ("app/use.py", 17, "app.use.constructed", "lexical"),  # untyped parameter
        ("elsewhere/test_far.py", 2, "elsewhere.test_far.test_far", "lexical"),  # no conftest
        # no fixture
        ("tests/unit/test_core.py", 12, "tests.unit.test_core.test_lookup", "lexical"),
        ("tests/unit/test_core.py", 13, "tests.unit.test_core.test_lookup", "lexical"),
        # the file's own untyped fixture hides conftest's typed one
        ("tests/unit/test_core.py", 22, "tests.unit.test_core.test_shadowed", "lexical"),
    ], id="python-typed-receivers-and-untyped-traps"),
    pytest.param(TYPED_FILES, "app.core.Hook.call", [
        ("app/core.py", 12, "app.core.Manager.lookup", "graph"),  # self.hook = Hook() in __init__
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
        ("cmd/app/main.go", 10, "cmd.app.main", "graph"),  # s := db.Open(), a *Store
    ], id="go-method-on-a-returned-receiver"),
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


TYPE_USE_FILES = {
    "web/store.ts": (
        "export interface StoreApi {\n  get(): number\n}\n"
        "export function create(): StoreApi {\n  return { get: () => 1 }\n}\n"),
    "web/app.ts": (
        "import { StoreApi } from './store';\n"
        "export function wrap<T>(api: StoreApi, extra: T): number {\n  return api.get();\n}\n"),
}


@pytest.mark.parametrize(("files", "symbol", "expected"), [
    pytest.param(TYPE_USE_FILES, "web.store.StoreApi", [
        ("web/app.ts", 2, "web.app.wrap", "graph"),
        ("web/store.ts", 4, "web.store.create", "graph"),
    ], id="ts-interface"),
    # Its methods' receivers (s *Store) are the struct's own, not uses.
    pytest.param(GO_FILES, "internal.store.Store", [
        ("internal/store/store.go", 5, "internal.store.Open", "graph"),
        ("internal/store/store.go", 5, "internal.store.Open", "graph"),
    ], id="go-struct"),
    pytest.param(JAVA_FILES, "com.acme.util.Money", [
        ("src/com/acme/shop/Cart.java", 6, "com.acme.shop.Cart.total", "graph"),  # type
        ("src/com/acme/shop/Cart.java", 8, "com.acme.shop.Cart.total", "graph"),  # new
        ("src/com/acme/util/Money.java", 5, "com.acme.util.Money.of", "graph"),  # new
    ], id="java-class"),
])
def test_type_uses_are_callers_of_the_type(
        graphs: Callable[[dict[str, str]], SymbolGraph], files: dict[str, str], symbol: str,
        expected: list[Site]) -> None:
    graph = graphs(files)
    assert sites(graph, symbol) == expected
    assert {(c.kind, c.reason.split(" ", 1)[0]) for c in callers_of(graph, symbol)
            if c.kind == "type"} == {("type", "uses")}


DECLARED_FILES = {
    "src/com/acme/Money.java": (
        "package com.acme;\n\npublic class Money {\n"
        "    public static Money of(int c) { return new Money(); }\n"
        "    public Money plus(Money other) { return this; }\n"
        "    public int cents() { return 0; }\n}\n"),
    "src/com/acme/Coin.java": (
        "package com.acme;\n\nclass Coin {\n    int cents() { return 1; }\n}\n"),
    "src/com/acme/Till.java": (
        "package com.acme;\n\nclass Till {\n    int total(final Money m) {\n"
        "        return m.cents();\n    }\n    int chain() {\n"
        "        return Money.of(1).plus(null).cents();\n    }\n}\n"),
    "src/com/acme/Bank.java": (
        "package com.acme;\n\nclass Bank {\n    int count() {\n"
        "        Money held = Money.of(2);\n        int n = held.cents();\n"
        "        final Money other;\n        return n + other.cents();\n    }\n}\n"),
    "src/com/acme/Wallet.java": (
        "package com.acme;\n\nclass Wallet {\n    private final Money money;\n"
        "    int a() {\n        return money.cents() + this.money.cents();\n    }\n}\n"),
    "go.mod": "module example.com/app\n",
    "store/cached.go": (
        "package store\n\ntype Cached struct {\n\tinner *Store\n}\n\n"
        "func (c *Cached) Get() string {\n\treturn c.inner.Get()\n}\n"),
    "web/holder.ts": (
        "import { Api } from './api'\nexport class Holder {\n  private api?: Api\n"
        "  read(): number {\n    return this.api.get()\n  }\n}\n"
        "export class Injected {\n  constructor(private readonly api: Api) {}\n"
        "  read(): number {\n    return this.api.get()\n  }\n}\n"),
    "src/keeper.rs": (
        "use crate::shop::Cart;\npub struct Keeper {\n    cart: Cart,\n}\nimpl Keeper {\n"
        "    pub fn sum(&self) -> i32 {\n        self.cart.total()\n    }\n}\n"),
    "store/loop.go": (
        "package store\n\ntype Shelf struct {\n\tstores []*Store\n}\n\n"
        "func (s *Shelf) All() string {\n\tfor _, st := range s.stores {\n"
        "\t\treturn st.Get()\n\t}\n\treturn \"\"\n}\n"),
    "web/loop.ts": (
        "import { Api } from './api'\nexport function each(apis: readonly Api[]): void {\n"
        "  for (const a of apis) {\n    a.get()\n  }\n}\n"),
    "src/loop.rs": (
        "use crate::shop::Cart;\npub fn each(carts: &[Cart]) {\n"
        "    for c in carts.iter() {\n        c.total();\n    }\n}\n"),
    "store/multi.go": (
        "package store\n\nfunc Find(k string) (*Store, error) { return nil, nil }\n\n"
        "func Lookup() string {\n\ts, err := Find(\"k\")\n\t_ = err\n\treturn s.Get()\n}\n"),
    "store/use.go": (
        "package store\n\nfunc Use() string {\n\ts := Open()\n\tvar t *Store\n"
        "\treturn s.Get() + t.Get()\n}\n"),
    "web/use.ts": (
        "import { Api, make } from './api'\nexport function run(): number {\n"
        "  const a = make()\n  let b: Api | undefined = undefined\n"
        "  return a.get() + b.get()\n}\n"),
    "src/till.rs": (
        "use crate::shop::Cart;\npub fn run() -> i32 {\n    let mut c = Cart::new();\n"
        "    let d: &Cart = &c;\n    c.total() + d.total()\n}\n"),
    "store/store.go": (
        "package store\n\ntype Store struct{}\n\nfunc Open() *Store { return &Store{} }\n\n"
        "func (s *Store) Get() string { return \"\" }\n\ntype Cache struct{}\n\n"
        "func (c *Cache) Get() string { return \"\" }\n\n"
        "func Read(a, s *Store) string {\n\treturn s.Get()\n}\n\n"
        "func First() string {\n\treturn Open().Get()\n}\n"),
    "web/api.ts": (
        "export class Api {\n  get(): number { return 1 }\n}\n"
        "export class Other {\n  get(): number { return 2 }\n}\n"
        "export function make(): Api { return new Api() }\n"
        "export function use(api?: Api): number {\n  return api.get() + make().get()\n}\n"),
    "Cargo.toml": "[package]\nname = \"shop\"\n",
    "src/shop.rs": (
        "pub struct Cart;\nimpl Cart {\n    pub fn new() -> Self { Cart }\n"
        "    pub fn total(&self) -> i32 { 0 }\n}\npub struct Till;\nimpl Till {\n"
        "    pub fn total(&self) -> i32 { 1 }\n}\npub fn sum(c: &Cart) -> i32 {\n"
        "    c.total() + Cart::new().total()\n}\n"),
}


@pytest.mark.parametrize(("symbol", "expected"), [
    pytest.param("com.acme.Money.cents", [
        ("src/com/acme/Bank.java", 6, "com.acme.Bank.count", "graph"),  # assigned Money.of
        ("src/com/acme/Bank.java", 8, "com.acme.Bank.count", "graph"),  # declared Money
        ("src/com/acme/Till.java", 5, "com.acme.Till.total", "graph"),  # a parameter
        ("src/com/acme/Till.java", 8, "com.acme.Till.chain", "graph"),  # along the chain
        ("src/com/acme/Wallet.java", 6, "com.acme.Wallet.a", "graph"),  # a field
        ("src/com/acme/Wallet.java", 6, "com.acme.Wallet.a", "graph"),  # this.field
    ], id="java"),
    pytest.param("com.acme.Coin.cents", [], id="java-other-class"),
    pytest.param("store.Store.Get", [
        ("store/cached.go", 8, "store.Cached.Get", "graph"),  # the receiver's field
        ("store/loop.go", 9, "store.Shelf.All", "graph"),  # an item of a []*Store field
        ("store/multi.go", 8, "store.Lookup", "graph"),  # the first of (*Store, error)
        ("store/store.go", 14, "store.Read", "graph"),
        ("store/store.go", 18, "store.First", "graph"),
        ("store/use.go", 6, "store.Use", "graph"),
        ("store/use.go", 6, "store.Use", "graph"),
    ], id="go"),
    pytest.param("store.Cache.Get", [], id="go-other-struct"),
    pytest.param("web.api.Api.get", [
        ("web/api.ts", 9, "web.api.use", "graph"),
        ("web/api.ts", 9, "web.api.use", "graph"),
        ("web/holder.ts", 5, "web.holder.Holder.read", "graph"),
        ("web/holder.ts", 11, "web.holder.Injected.read", "graph"),  # a parameter property
        ("web/loop.ts", 4, "web.loop.each", "graph"),  # for ... of an Api[]
        ("web/use.ts", 5, "web.use.run", "graph"),
        ("web/use.ts", 5, "web.use.run", "graph"),
    ], id="typescript"),
    pytest.param("web.api.Other.get", [], id="typescript-other-class"),
    pytest.param("shop.Cart.total", [
        ("src/keeper.rs", 7, "keeper.Keeper.sum", "graph"),  # self's field
        ("src/loop.rs", 4, "loop.each", "graph"),  # for c in carts.iter()
        ("src/shop.rs", 11, "shop.sum", "graph"),
        ("src/shop.rs", 11, "shop.sum", "graph"),
        ("src/till.rs", 5, "till.run", "graph"),
        ("src/till.rs", 5, "till.run", "graph"),
    ], id="rust-self"),
    pytest.param("shop.Till.total", [], id="rust-other-struct"),
])
def test_receivers_typed_by_declarations(
        graphs: Callable[[dict[str, str]], SymbolGraph], symbol: str,
        expected: list[Site]) -> None:
    assert sites(graphs(DECLARED_FILES), symbol) == expected


@pytest.mark.parametrize(("language", "signature", "name", "parameters", "returned"), [
    ("java", "public static <T> Money of(@Nullable final Cents c, int n, Money... more)",
     "of", {"c": "Cents", "n": "int", "more": "Money..."}, "Money"),
    ("java", "void put(Map<String, List<Money>> byName, com.acme.Money m)", "put",
     {"byName": "Map<String, List<Money>>", "m": "com.acme.Money"}, "void"),
    ("go", "func (s *Store) Copy(a, b *Store, keys []string, f func(int) error) (*Store, error)",
     "Copy", {"a": "Store", "b": "Store", "keys": "[]string", "f": "func(int) error"},
     "(*Store, error)"),
    ("go", "func Open(path string) *db.Store", "Open", {"path": "string"}, "db.Store"),
    ("typescript", "export function wrap<T>(api?: StoreApi<T> | undefined, "
     "cb: (a: number, b: string) => void, { x }: Props): Wrapped<T> {",
     "wrap", {"api": "StoreApi<T>", "cb": "(a: number, b: string) => void"}, "Wrapped<T>"),
    ("tsx", "constructor(private readonly store: Store, n = 1)", "constructor",
     {"store": "Store"}, None),
    ("rust", "pub fn merge<'a>(&mut self, other: &'a mut Cart, mut n: u8) -> Result<Self, E>",
     "merge", {"other": "Cart", "n": "u8"}, "Result<Self, E>"),
    ("rust", "fn new() -> Self where T: Clone", "new", {}, "Self"),
    ("python", "def f(x: Cart) -> Cart", "f", {}, None),
])
def test_declared_parameter_and_return_types(
        language: str, signature: str, name: str, parameters: dict[str, str],
        returned: str | None) -> None:
    assert parameter_types(signature, name, language) == parameters
    assert return_type(signature, name, language) == returned


@pytest.mark.parametrize(("language", "header", "fields"), [
    ("java", "class P extends T {\n  private final ClassName rawType;\n  int n = 3;\n"
     "  P(ClassName rawType) {", {"rawType": "ClassName", "n": "int"}),
    ("typescript", "export class S {\n  private api: Api | null = null\n  get(): number {",
     {"api": "Api"}),
    ("tsx", "export class S {\n  constructor(\n    private readonly http: Http,\n"
     "    plain: Other,\n  ) {}\n}", {"http": "Http", "plain": "Other"}),
    ("go", "type C struct {\n\tparent *C\n\tflags *flag.FlagSet `json:\"f\"`\n"
     "\tchildren []*C\n}", {"parent": "C", "flags": "flag.FlagSet", "children": "[]*C"}),
    ("rust", "pub struct D<'a> {\n    read: R,\n    pub(crate) map: &'a mut Map<K, V>,\n}",
     {"read": "R", "map": "Map<K, V>"}),
])
def test_declared_fields(language: str, header: str, fields: dict[str, str]) -> None:
    assert field_types(header, language) == fields


@pytest.mark.parametrize(("text", "named", "item"), [
    ("Money", "Money", None),
    ("StoreApi<T>", "StoreApi", None),
    ("[]*Command", None, "Command"),
    ("readonly Api[]", None, "Api"),
    ("List<Money>", "List", "Money"),
    ("Vec<shop.Cart>", "Vec", "shop.Cart"),
    ("[Cart]", None, "Cart"),
    ("Map<K, V>", "Map", None),
    ("func(int) error", None, None),
])
def test_what_a_declared_type_names(text: str, named: str | None, item: str | None) -> None:
    assert (named_type(text), element_type(text)) == (named, item)


@pytest.mark.parametrize(("language", "line", "name", "declared"), [
    ("java", "        final Map<String, X> held = new HashMap<>();", "held",
     Local("Map<String, X>", "new HashMap<>()")),
    ("java", "        return held;", "held", None),
    ("typescript", "  const store: StoreApi<T> | null = create(init)", "store",
     Local("StoreApi<T>", "create(init)")),
    ("tsx", "  let api = make();", "api", Local(None, "make()")),
    ("javascript", "  const cart = new Cart(1)", "cart", Local(None, "new Cart(1)")),
    ("javascript", "  const cart = make()", "cart", None),  # untyped: nothing to learn
    ("go", "\tcmd := NewCommand(\"x\")", "cmd", Local(None, 'NewCommand("x")')),
    ("go", "\tvar c *Command", "c", Local("Command")),
    ("go", "\tcmd, flags, err := c.Find(args)", "flags", Local(value="c.Find(args)", result=1)),
    ("go", "\tfor _, cmd := range c.commands {", "cmd", Local(iterates="c.commands")),
    ("typescript", "  for (const item of this.items) {", "item", Local(iterates="this.items")),
    ("rust", "    for x in &self.items {", "x", Local(iterates="&self.items")),
    ("rust", "    let v: &mut Value = &x;", "v", Local("Value", "&x")),
    ("rust", "    let other = 1;", "v", None),
])
def test_local_declarations(language: str, line: str, name: str,
                            declared: Local | None) -> None:
    assert local_declaration(line, name, language) == declared


OTHER_VALUE_FILES = {
    "src/com/acme/Jobs.java": (
        "package com.acme;\n\nclass Jobs {\n    void handle(String s) {}\n"
        "    void all(java.util.List<String> xs) {\n        xs.forEach(this::handle);\n"
        "        xs.forEach(Printer::show);\n    }\n}\n"),
    "src/com/acme/Printer.java": (
        "package com.acme;\n\nclass Printer {\n    static void show(String s) {}\n}\n"),
    "cmd/root.go": (
        "package cmd\n\nfunc NoArgs(args []string) error { return nil }\n\n"
        "var root = &Command{Args: NoArgs}\n\nfunc run(NoArgs func()) {\n\tuse(NoArgs)\n}\n"),
    "web/app.ts": (
        "export function onSave() {}\nexport const handlers = { onSave }\n"
        "export function wire(run: (f: () => void) => void, onSave: number) {\n"
        "  run(onSave)\n}\nrun(onSave)\n"),
    "Cargo.toml": "[package]\nname = \"jobs\"\n",
    "src/jobs.rs": (
        "fn parse_item(s: &str) -> i32 { 0 }\n\n"
        "pub fn all(xs: Vec<&str>) -> Vec<i32> {\n"
        "    xs.into_iter().map(parse_item).collect()\n}\n\n"
        "pub fn with(parse_item: fn(&str) -> i32) -> i32 {\n    run(parse_item)\n}\n\n"
        "pub fn each(xs: Vec<(i32, &str)>) {\n"
        "    for (n, &parse_item) in xs.iter() {\n        run(parse_item);\n    }\n}\n"),
}


@pytest.mark.parametrize(("symbol", "expected"), [
    pytest.param("com.acme.Jobs.handle", [
        ("src/com/acme/Jobs.java", 6, "com.acme.Jobs.all", "graph")], id="java-this-reference"),
    pytest.param("com.acme.Printer.show", [
        ("src/com/acme/Jobs.java", 7, "com.acme.Jobs.all", "graph")], id="java-class-reference"),
    pytest.param("cmd.NoArgs", [("cmd/root.go", 5, None, "graph")], id="go-field-value"),
    pytest.param("jobs.parse_item", [
        ("src/jobs.rs", 4, "jobs.all", "graph")], id="rust-argument"),
    pytest.param("web.app.onSave", [
        ("web/app.ts", 2, None, "graph"), ("web/app.ts", 6, None, "graph")], id="ts-values"),
])
def test_functions_used_as_values_in_other_languages(
        graphs: Callable[[dict[str, str]], SymbolGraph], symbol: str,
        expected: list[Site]) -> None:
    # The parameters named like the function (run's NoArgs, wire's onSave, with's
    # parse_item) and each's loop pattern shadow it.
    assert sites(graphs(OTHER_VALUE_FILES), symbol) == expected


@pytest.mark.parametrize(("symbol", "expected"), [
    pytest.param("jobs.engine.run", [
        ("jobs/use.py", 3, None, "graph"),  # runner = run
        ("jobs/use.py", 7, "jobs.use.schedule", "graph"),  # an argument
        ("jobs/use.py", 8, "jobs.use.schedule", "graph"),  # a dict value
        ("jobs/use.py", 9, "jobs.use.schedule", "graph"),  # returned
    ], id="passed-assigned-returned-not-shadowed"),
    pytest.param("jobs.use.factory.inner", [
        ("jobs/use.py", 25, "jobs.use.factory", "graph"),
    ], id="nested-function-returned"),
    pytest.param("jobs.engine.Engine.start", [
        ("jobs/engine.py", 9, "jobs.engine.Engine", "graph"),
    ], id="class-body-alias"),
    pytest.param("jobs.engine.Engine.speed", [
        ("jobs/engine.py", 15, "jobs.engine.Engine", "graph"),
    ], id="property-setter-decorator"),
])
def test_functions_used_as_values_are_callers(
        graphs: Callable[[dict[str, str]], SymbolGraph], symbol: str,
        expected: list[Site]) -> None:
    assert sites(graphs(VALUE_FILES), symbol) == expected


@pytest.mark.parametrize(("path", "line", "how"), [
    pytest.param("tests/test_hooks.py", 5, "graph", id="getattr-return-annotation"),
    pytest.param("tests/test_hooks.py", 6, "lexical", id="getattr-not-for-a-class-field"),
    pytest.param("tests/test_hooks.py", 8, "graph", id="method-return-annotation"),
    pytest.param("tests/test_hooks.py", 10, "graph", id="local-assigned-a-chain"),
    pytest.param("tests/test_hooks.py", 12, "graph", id="loop-over-annotated-list"),
    pytest.param("tests/test_hooks.py", 13, "lexical", id="overloaded-return-unknown"),
    pytest.param("hooks/core.py", 40, "graph", id="declared-type-in-overloaded-body"),
    pytest.param("tests/test_hooks.py", 15, "lexical", id="decorated-return-unknown"),
    pytest.param("tests/test_hooks.py", 16, "graph", id="property-return-annotation"),
    pytest.param("tests/test_hooks.py", 17, "graph", id="method-returning-self"),
    pytest.param("tests/test_hooks.py", 19, "lexical", id="conditional-value-unknown"),
    pytest.param("tests/test_hooks.py", 23, "graph", id="call-continuation-binds-nothing"),
])
def test_receivers_inferred_through_annotations(
        graphs: Callable[[dict[str, str]], SymbolGraph], path: str, line: int,
        how: str) -> None:
    found = {(c.path, c.line): c.how for c in callers_of(graphs(INFER_FILES),
                                                         "hooks.core.Caller.fire")}
    assert found.get((path, line)) == how


def test_self_attribute_assigned_an_annotated_parameter(
        graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    assert sites(graphs(INFER_FILES), "hooks.core.Tracer.trace") == [
        ("hooks/core.py", 30, "hooks.core.Manager.log", "graph"),
        ("tests/test_hooks.py", 14, "tests.test_hooks.test_fire", "graph"),
    ]


def test_module_level_instances_are_typed_receivers(
        graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    assert sites(graphs(GLOBAL_FILES), "plugins.core.Registry.register") == [
        ("plugins/core.py", 10, None, "graph"),
        ("plugins/core.py", 21, "plugins.core.use", "graph"),
        ("plugins/core.py", 23, "plugins.core.use", "graph"),
        ("plugins/other.py", 5, None, "graph"),
        ("plugins/other.py", 7, "plugins.other.second", "graph"),
        ("plugins/core.py", 22, "plugins.core.use", "lexical"),
    ]


def test_reasons_say_how_a_receiver_was_inferred(
        graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    by_line = {c.line: c.reason for c in callers_of(graphs(INFER_FILES),
                                                    "hooks.core.Caller.fire")
               if c.path == "tests/test_hooks.py"}
    assert by_line[5] == (
        "calls m.relay.anything.fire() where m.relay.anything is what "
        "hooks.core.Relay.__getattr__ returns for .anything, a hooks.core.Caller, "
        "resolves to hooks.core.Caller.fire")
    assert by_line[8] == ("calls sub.fire() where sub is assigned m.subset(...) on line 7, "
                          "resolves to hooks.core.Caller.fire")
    assert by_line[12] == ("calls c.fire() where c is an item of callers (line 11), "
                           "resolves to hooks.core.Caller.fire")


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
               for c in callers_of(graphs(TYPED_FILES), "app.core.Manager.lookup")}
    assert by_line[("app/use.py", 14)] == (
        "calls x.lookup() where x is assigned Special(...) on line 13, "
        "resolves to app.core.Manager.lookup")
    assert by_line[("tests/unit/test_core.py", 10)] == (
        "calls pm.lookup() where pm is the fixture pm (tests/conftest.py:6) returning "
        "app.core.Manager, resolves to app.core.Manager.lookup")


def test_remembered_bases_answers_follow_the_bases_they_were_made_for(
        graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    tables = graphs(PY_FILES).tables
    assert mro(tables, "shop.models.Order") == ("shop.models.Order", "shop.models.Base")
    assert method_in(tables, "shop.models.Order", "save") == "shop.models.Base.save"
    unbased = replace(tables, bases={})  # shares the memo of the tables it was made from
    assert mro(unbased, "shop.models.Order") == ("shop.models.Order",)
    assert method_in(unbased, "shop.models.Order", "save") is None
    assert method_in(tables, "shop.models.Order", "save") == "shop.models.Base.save"


def test_unknown_symbol_has_no_callers(graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    assert callers_of(graphs(PY_FILES), "shop.nowhere") == []


def test_builtin_method_names_give_no_same_name_candidates(
        graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/multidict.py": ("class MultiDict:\n"
                             "    def items(self):\n        return []\n\n"
                             "    def merge(self, other):\n        return other\n"),
        "pkg/use.py": ("from pkg.multidict import MultiDict\n\n\n"
                       "def walk(mapping, thing):\n"
                       "    for key, value in mapping.items():\n        print(key, value)\n"
                       "    thing.merge(mapping)\n"
                       "    return MultiDict().items()\n"),
    }
    graph = graphs(files)
    assert sites(graph, "pkg.multidict.MultiDict.items") == [
        ("pkg/use.py", 8, "pkg.use.walk", "graph")]  # mapping.items() is a dict's, likely
    assert sites(graph, "pkg.multidict.MultiDict.merge") == [
        ("pkg/use.py", 7, "pkg.use.walk", "lexical")]


# What unannotated functions return, read from their return statements.
RETURN_FILES = {
    "net/__init__.py": "",
    "net/client.py": (
        "class Response:\n"
        "    @property\n"
        "    def body(self):\n"
        "        return self.unpack()\n"
        "\n"
        "    def unpack(self):\n"
        "        return b''\n"
        "\n"
        "\n"
        "class Other:\n"
        "    def unpack(self):\n"
        "        return ''\n"
        "\n"
        "\n"
        "class Session:\n"
        "    def fetch(self, url):\n"
        "        if not url:\n"
        "            return None\n"
        "        return Response()\n"
        "\n"
        "    def again(self):\n"
        "        return self\n"
        "\n"
        "    def either(self, x):\n"
        "        if x:\n"
        "            return Response()\n"
        "        return Other()\n"
        "\n"
        "    def stream(self):\n"
        "        yield Response()\n"
        "\n"
        "    def loop(self):\n"
        "        return self.loop()\n"
        "\n"
        "\n"
        "def open_session():\n"
        "    return Session()\n"
    ),
    "net/use.py": (
        "from net.client import open_session\n"
        "\n"
        "\n"
        "def get(url):\n"
        "    session = open_session()\n"
        "    resp = session.fetch(url)\n"
        "    resp.unpack()\n"  # 7: open_session() -> Session, fetch -> Response
        "    data = resp.body\n"  # 8: a property read through the returned receiver
        "    session.again().fetch(url).unpack()\n"  # 9: return self, then Response
        "    session.either(1).unpack()\n"  # 10: two classes returned: unknown
        "    for r in session.stream():\n"
        "        r.unpack()\n"  # 12: a generator's items are not evident
        "    session.loop().unpack()\n"  # 13: recursion returns nothing known
        "    return data\n"
    ),
}


@pytest.mark.parametrize(("line", "how"), [
    pytest.param(7, "graph", id="returned-instance-through-two-calls"),
    pytest.param(9, "graph", id="return-self-then-instance"),
    pytest.param(10, "lexical", id="two-classes-returned"),
    pytest.param(12, "lexical", id="generator"),
    pytest.param(13, "lexical", id="recursion"),
])
def test_receivers_typed_by_what_an_unannotated_function_returns(
        graphs: Callable[[dict[str, str]], SymbolGraph], line: int, how: str) -> None:
    found = {(c.path, c.line): c.how for c in callers_of(graphs(RETURN_FILES),
                                                         "net.client.Response.unpack")}
    assert found.get(("net/use.py", line)) == how


def test_property_read_through_a_returned_receiver_is_a_caller(
        graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    [caller] = callers_of(graphs(RETURN_FILES), "net.client.Response.body")
    assert (caller.path, caller.line, caller.how, caller.kind) == (
        "net/use.py", 8, "graph", "attribute")
    assert caller.reason == (
        "uses resp.body where resp is assigned session.fetch(...) on line 6, "
        "resolves to net.client.Response.body")


# Class attributes, dataclass-style fields and enum members hold instances.
MEMBER_FILES = {
    "app/__init__.py": "",
    "app/kinds.py": (
        "import enum\n"
        "from enum import Enum\n"
        "\n"
        "\n"
        "class Source(Enum):\n"
        "    DEFAULT = 'default'\n"
        "    OTHER = enum.auto()\n"
        "\n"
        "    def label(self):\n"
        "        return self.value\n"
        "\n"
        "\n"
        "class Plain:\n"
        "    DEFAULT = 'default'\n"
        "\n"
        "    def label(self):\n"
        "        return ''\n"
    ),
    "app/store.py": (
        "from app.kinds import Source\n"
        "\n"
        "\n"
        "class Registry:\n"
        "    def add(self, item):\n"
        "        return item\n"
        "\n"
        "\n"
        "class Config:\n"
        "    registry = Registry()\n"
        "    spare: Registry\n"
        "    source: Source = Source.DEFAULT\n"
        "\n"
        "    def fill(self):\n"
        "        self.registry.add(1)\n"  # 15: a class attribute read through self
        "        self.spare.add(2)\n"  # 16: a declared field
        "        return self.source.label()\n"  # 17: an enum-typed field
        "\n"
        "\n"
        "def use():\n"
        "    Config.registry.add(3)\n"  # 21: a class attribute read on the class
        "    Source.OTHER.label()\n"  # 22: an enum member is an instance
        "    return Source.DEFAULT\n"  # 23: reading a member uses the enum
    ),
    "app/other.py": (
        "from app.kinds import Plain\n"
        "\n"
        "\n"
        "def plain():\n"
        "    return Plain.DEFAULT.label()\n"  # 5: a str, not a Plain
    ),
}


@pytest.mark.parametrize(("symbol", "expected"), [
    pytest.param("app.store.Registry.add", [
        ("app/store.py", 15, "app.store.Config.fill", "graph"),
        ("app/store.py", 16, "app.store.Config.fill", "graph"),
        ("app/store.py", 21, "app.store.use", "graph"),
    ], id="class-attributes-and-fields"),
    pytest.param("app.kinds.Source.label", [
        ("app/store.py", 17, "app.store.Config.fill", "graph"),
        ("app/store.py", 22, "app.store.use", "graph"),
    ], id="enum-members-are-instances"),
    # a str, not a Plain: a same-name candidate, of Plain's method (other.py imports Plain)
    pytest.param("app.kinds.Plain.label", [
        ("app/other.py", 5, "app.other.plain", "lexical"),
    ], id="unknown-class-member"),
])
def test_receivers_typed_by_class_members(
        graphs: Callable[[dict[str, str]], SymbolGraph], symbol: str,
        expected: list[Site]) -> None:
    assert sites(graphs(MEMBER_FILES), symbol) == expected


def test_reading_a_class_member_uses_the_class(
        graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    reads = {(c.path, c.line): c for c in callers_of(graphs(MEMBER_FILES), "app.kinds.Source")
             if c.kind == "attribute"}
    assert sorted(reads) == [("app/store.py", 12), ("app/store.py", 22), ("app/store.py", 23)]
    assert reads[("app/store.py", 23)].reason == (
        "uses Source.DEFAULT where Source is app.kinds.Source imported from app.kinds "
        "(line 1), reads DEFAULT, a member of app.kinds.Source")


# TypeScript and JavaScript without declared types: created fields, inferred returns.
UNDECLARED_TS_FILES = {
    "web/store.ts": (
        "export class Store {\n  get(): number { return 1 }\n}\n"
        "export class Cache {\n  get(): number { return 2 }\n}\n"
        "export function open() {\n  if (!ready) {\n    return null\n  }\n"
        "  return new Store()\n}\n"  # 7-12
        "export const make = () => new Store()\n"  # 13
        "export function either(x: boolean) {\n  if (x) {\n    return new Store()\n  }\n"
        "  return new Cache()\n}\n"  # 14-19
    ),
    "web/app.ts": (
        "import { Store, open, make, either } from './store'\n"
        "export class App {\n  private store = new Store()\n"
        "  self() {\n    return this\n  }\n"
        "  run(): number {\n"
        "    return this.store.get() + open().get() + make().get() + this.self().store.get()\n"
        "  }\n"  # 8
        "  other(): number {\n    return either(true).get()\n  }\n}\n"  # 11
    ),
}


def test_typescript_receivers_typed_by_created_fields_and_undeclared_returns(
        graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    graph = graphs(UNDECLARED_TS_FILES)
    either = ("web/app.ts", 11, "web.app.App.other", "lexical")  # two classes returned
    assert sites(graph, "web.store.Store.get") == [
        *[("web/app.ts", 8, "web.app.App.run", "graph")] * 4, either]
    assert sites(graph, "web.store.Cache.get") == [either]
    reasons = {c.reason for c in callers_of(graph, "web.store.Store.get")}
    assert any("the field web.app.App.store" in r for r in reasons)
    assert any("what web.store.open returns" in r for r in reasons)


# Expressions whose value is evident from the language or the standard library.
EXPRESSION_FILES = {
    "kit/__init__.py": "",
    "kit/core.py": (
        "import copy\n"
        "import typing as t\n"
        "from typing import Optional, cast\n"
        "\n"
        "\n"
        "class Tool:\n"
        "    def run(self):\n"
        "        return 1\n"
        "\n"
        "    def __enter__(self):\n"
        "        return self\n"
        "\n"
        "    def __exit__(self, *exc):\n"
        "        return None\n"
        "\n"
        "\n"
        "class Other:\n"
        "    def run(self):\n"
        "        return 2\n"
        "\n"
        "\n"
        "def default() -> Tool:\n"
        "    return Tool()\n"
        "\n"
        "\n"
        "def use(tool: Optional[Tool], tools: list[Tool], thing):\n"
        "    chosen = tool if tool is not None else default()\n"
        "    chosen.run()\n"  # 28: both operands are Tools
        "    (tool or default()).run()\n"  # 29
        "    cast('Tool', thing).run()\n"  # 30
        "    t.cast(Tool, thing).run()\n"  # 31
        "    copy.deepcopy(chosen).run()\n"  # 32
        "    with Tool() as entered:\n"
        "        entered.run()\n"  # 34: what __enter__ returns (self)
        "    any(x.run() for x in tools)\n"  # 35: a generator expression's item
        "    mixed = Tool() if thing else Other()\n"
        "    mixed.run()\n"  # 37: two classes: unknown
        "    return cast(thing, 1).run()\n"  # 38: not a type
    ),
}


@pytest.mark.parametrize(("line", "how"), [
    pytest.param(28, "graph", id="conditional-expression"),
    pytest.param(29, "graph", id="or-expression"),
    pytest.param(30, "graph", id="cast-with-a-string"),
    pytest.param(31, "graph", id="cast-through-a-module-alias"),
    pytest.param(32, "graph", id="deepcopy"),
    pytest.param(34, "graph", id="with-as"),
    pytest.param(35, "graph", id="generator-expression-item"),
    pytest.param(37, "lexical", id="two-classes"),
    pytest.param(38, "lexical", id="cast-to-no-type"),
])
def test_receivers_typed_by_evident_expressions(
        graphs: Callable[[dict[str, str]], SymbolGraph], line: int, how: str) -> None:
    found = {c.line: c.how for c in callers_of(graphs(EXPRESSION_FILES), "kit.core.Tool.run")
             if c.path == "kit/core.py"}
    assert found.get(line) == how


def test_a_with_target_says_where_it_came_from(
        graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    [caller] = [c for c in callers_of(graphs(EXPRESSION_FILES), "kit.core.Tool.run")
                if c.line == 34]
    assert caller.reason == ("calls entered.run() where entered is what `with Tool()` gives "
                             "on line 33, resolves to kit.core.Tool.run")


# Same-name candidates: the calling file's imports and language say which is likelier.
HOMONYM_FILES = {
    "rep/__init__.py": "",
    "rep/reports.py": ("class Report:\n    def to_json(self):\n        return {}\n\n\n"
                       "class TestReport(Report):\n    pass\n"),
    "rep/subtests.py": ("class Context:\n    def to_json(self):\n        return {}\n"),
    "rep/base.py": ("class Base:\n    def to_json(self):\n        return {}\n\n\n"
                    "class Derived(Base):\n    def to_json(self):\n        return {'d': 1}\n"),
    "rep/use.py": ("from rep.reports import Report\n\n\n"
                   "def dump(report):\n    return report.to_json()\n"),  # 5
    "rep/plain.py": "def dump(thing):\n    return thing.to_json()\n",  # 2: imports nothing
    # 5: a subclass that inherits Report's method
    "rep/use_sub.py": ("from rep.reports import TestReport\n\n\n"
                       "def dump(report):\n    return report.to_json()\n"),
    "rep/derived.py": ("from rep.base import Base\n\n\n"
                       "def dump(item):\n    return item.to_json()\n"),  # 5: Base or Derived
    "web/page.js": "export function log(x) {\n  return x.to_json()\n}\n",
}


@pytest.mark.parametrize(("symbol", "expected"), [
    pytest.param("rep.reports.Report.to_json", [
        ("rep/plain.py", 2, "rep.plain.dump", "lexical"),
        ("rep/use.py", 5, "rep.use.dump", "lexical"),  # not derived.py: it imports Base
        ("rep/use_sub.py", 5, "rep.use_sub.dump", "lexical"),
    ], id="the-imported-class"),
    pytest.param("rep.subtests.Context.to_json", [
        ("rep/plain.py", 2, "rep.plain.dump", "lexical"),  # nor use_sub.py: a Report
    ], id="not-where-another-homonym-is-imported"),
    pytest.param("rep.base.Derived.to_json", [
        ("rep/derived.py", 5, "rep.derived.dump", "lexical"),  # a Base may be a Derived
        ("rep/plain.py", 2, "rep.plain.dump", "lexical"),
    ], id="a-subclass-of-the-imported-class"),
])
def test_same_name_candidates_follow_what_the_file_can_name(
        graphs: Callable[[dict[str, str]], SymbolGraph], symbol: str,
        expected: list[Site]) -> None:
    assert sites(graphs(HOMONYM_FILES), symbol) == expected  # never page.js


# A fixture a plugin module defines (a project's own pytest plugin, pytester).
PLUGIN_FIXTURE_FILES = {
    "kit/__init__.py": "",
    "kit/config.py": ("class Config:\n    def parse(self, args):\n        return args\n\n\n"
                      "def get_config() -> Config:\n    return Config()\n"),
    "kit/plugin.py": ("from collections.abc import Generator\n\nimport pytest\n\n"
                      "from kit.config import Config, get_config\n\n\n"
                      "@pytest.fixture\n"
                      "def fresh_config() -> Generator[Config]:\n"
                      "    config = get_config()\n    yield config\n\n\n"
                      "@pytest.fixture\n"
                      "def twice() -> Config:\n    return get_config()\n"),
    "kit/other_plugin.py": ("import pytest\n\nfrom kit.config import get_config\n\n\n"
                            "@pytest.fixture\ndef twice():\n    return get_config()\n"),
    "tests/test_config.py": ("def test_parse(fresh_config, twice):\n"
                             "    fresh_config.parse([])\n"  # 2: the only such fixture
                             "    twice.parse([])\n"),  # 3: two plugins define it
}


def test_parameters_typed_by_the_only_plugin_fixture_of_their_name(
        graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    found = {c.line: c.how for c in callers_of(graphs(PLUGIN_FIXTURE_FILES),
                                               "kit.config.Config.parse")}
    assert found == {2: "graph", 3: "lexical"}


# Fixture methods of a test class: visible to its tests and its subclasses' only.
CLASS_FIXTURE_FILES = {
    "kit/__init__.py": "",
    "kit/shapes.py": ("class Circle:\n    def area(self):\n        return 3\n\n\n"
                      "class Square:\n    def area(self):\n        return 4\n"),
    "tests/test_shapes.py": ("import pytest\n\nfrom kit.shapes import Circle, Square\n\n\n"
                             "class TestCircle:\n"
                             "    @pytest.fixture\n"
                             "    def shape(self):\n        return Circle()\n\n"
                             "    def test_area(self, shape):\n"
                             "        shape.area()\n\n\n"  # 12
                             "class TestSquare:\n"
                             "    @pytest.fixture\n"
                             "    def shape(self):\n        return Square()\n\n"
                             "    def test_area(self, shape):\n"
                             "        shape.area()\n\n\n"  # 21
                             "class TestBigSquare(TestSquare):\n"
                             "    def test_big(self, shape):\n"
                             "        shape.area()\n\n\n"  # 26: the base's fixture
                             "def test_loose(shape):\n"
                             "    shape.area()\n"),  # 30: no fixture it can see
}


@pytest.mark.parametrize(("symbol", "lines"), [
    ("kit.shapes.Circle.area", {12: "graph", 30: "lexical"}),
    ("kit.shapes.Square.area", {21: "graph", 26: "graph", 30: "lexical"}),
])
def test_fixture_methods_are_visible_in_their_class_and_its_subclasses(
        graphs: Callable[[dict[str, str]], SymbolGraph], symbol: str,
        lines: dict[int, str]) -> None:
    found = {c.line: c.how for c in callers_of(graphs(CLASS_FIXTURE_FILES), symbol)
             if c.path == "tests/test_shapes.py"}
    assert found == lines


# Another name for a class or function, assigned at module level.
ALIAS_FILES = {
    "ma/__init__.py": "from ma.fields import Str\n",
    "ma/fields.py": ("class String:\n    def __init__(self, n=0):\n        self.n = n\n\n"
                     "    def load(self, v):\n        return v\n\n\n"
                     "Str = String\n"
                     "Either = String\n"
                     "Either = int\n"),  # 11: two values, no alias
    "ma/use.py": ("import ma\nfrom ma import fields\n\n\n"
                  "def use():\n"
                  "    fields.Str().load(1)\n"  # 6: module attribute, then its instance
                  "    s = ma.Str(2)\n"  # 7: through the package's re-export
                  "    s.load(2)\n"
                  "    fields.Either().load(3)\n"),  # 9: not an alias
}


def test_a_module_level_alias_names_the_same_class(
        graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    graph = graphs(ALIAS_FILES)
    assert [(c.line, c.how) for c in callers_of(graph, "ma.fields.String.load")
            if c.path == "ma/use.py"] == [(6, "graph"), (8, "graph"), (9, "lexical")]
    assert [(c.line, c.how) for c in callers_of(graph, "ma.fields.String.__init__")
            if c.path == "ma/use.py"] == [(6, "graph"), (7, "graph")]


GETATTR_FILES = {
    "app/__init__.py": "",
    "app/compat.py": (
        "import warnings\n"
        "\n"
        "\n"
        "def current():\n"
        "    return 1\n"
        "\n"
        "\n"
        "def __getattr__(name):\n"
        "    if name == 'old':\n"
        "        warnings.warn('old is deprecated')\n"
        "        return current\n"
        "    if name in ('older', 'current'):\n"
        "        return current\n"
        "    raise AttributeError(name)\n"
    ),
    "app/use.py": (
        "import app.compat as compat\n"
        "from app.compat import older\n"
        "\n"
        "\n"
        "def run(other):\n"
        "    from app.compat import old\n"
        "    other.old()\n"
        "    compat.current()\n"
        "    return compat.old() + older() + old()\n"
    ),
}


def test_a_module_getattr_is_called_where_the_names_it_serves_are_read(
        graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    """``other.old()`` is another object's; ``current`` is defined, found without it."""
    graph = graphs(GETATTR_FILES)
    found = [(c.path, c.line, c.enclosing, c.how) for c in
             callers_of(graph, "app.compat.__getattr__")]
    assert found == [("app/use.py", 2, None, "graph"), ("app/use.py", 6, "app.use.run", "graph"),
                     ("app/use.py", 9, "app.use.run", "graph")]
    assert callers_of(graph, "app.compat.__getattr__")[0].reason == (
        "reads older from app.compat, which its __getattr__ serves")


LIBRARY_FILES = {
    "logs/__init__.py": "",
    "logs/loggers.py": (
        "import logging\n"                                                  # 1
        "\n"
        "\n"
        "class Fixed(logging.Logger):\n"                                    # 4
        "    def findCaller(self, stack_info=False, stacklevel=1):\n"
        "        return ('f', 1, 'g', None)\n"
        "\n"
        "\n"
        "class Wrapper:\n"                                                  # 9
        "    _logger: logging.Logger\n"
        "\n"
        "    def __init__(self, logger):\n"
        "        self._logger = logger\n"
        "\n"
        "    def findCaller(self, stack_info=False):\n"
        "        return self._logger.findCaller(stack_info=stack_info)\n"    # 16
        "\n"
        "\n"
        "def where(log: logging.Logger):\n"
        "    return log.findCaller()\n"                                     # 20
        "\n"
        "\n"
        "def anything(obj):\n"
        "    return obj.findCaller()\n"                                     # 24
    ),
}


def test_a_receiver_declared_as_a_library_class_calls_its_subclasses_methods_only(
        graphs: Callable[[dict[str, str]], SymbolGraph]) -> None:
    """self._logger and log are declared logging.Logger: their findCaller() is that
    class's or its subclass Fixed's, not Wrapper's; obj's class is not declared."""
    graph = graphs(LIBRARY_FILES)
    lines = {name: [c.line for c in callers_of(graph, f"logs.loggers.{name}.findCaller")]
             for name in ("Fixed", "Wrapper")}
    assert lines == {"Fixed": [16, 20, 24], "Wrapper": [24]}


CLASS_BODY = '''\
import typing as t


# Registry of things.
@decorated
class Registry:
    """Holds things.

    size = not an attribute, a docstring line
    """

    default = Thing()
    # a comment about add
    @t.overload
    def add(self, x: int) -> int: ...
    @t.overload
    def add(self, x: str) -> str: ...
    def add(
        self,
        x,
    ):
        size = 0

        return x

    class Meta:
        fields = ("a",)

    name: str = "r"

    @property
    def count(self):

        return 1
    last = Thing()
'''


def _class_lines(text: str) -> dict[int, str]:
    parsed = parse_file("m.py", text, "python", "production")
    chunks = [("m.py", c.start_line, c.end_line, c.text, c.symbol) for c in parsed.chunks
              if c.kind in {"definition", "definition_part", "module"}]
    headers = [(c.symbol, c.text, "python", "m.py", c.start_line, c.end_line)
               for c in parsed.chunks if c.kind == "class_header"]
    defs = [Def("m.py", "python", d.name, d.qualified_name, d.kind, d.signature, d.parent,
                d.start_line, d.end_line) for d in parsed.definitions]
    verbatim = {"m.py": {n: line for _p, start, end, body, _s in chunks
                         for n, line in zip(range(start, end + 1), body.split("\n"),
                                            strict=False)}}
    return class_level_lines(verbatim, chunks, headers, defs).get("m.py", {})


def test_class_level_lines_are_read_back_with_their_numbers() -> None:
    rows = _class_lines(CLASS_BODY)
    source = CLASS_BODY.split("\n")
    assert all(source[n - 1] == text for n, text in rows.items())  # each at its own line
    assigned = {n for n, text in rows.items() if "=" in text or ":" in text.split("#")[0]}
    assert {source[n - 1].strip() for n in assigned} >= {
        'default = Thing()', 'name: str = "r"', "last = Thing()", 'fields = ("a",)'}
    # member lines (overloads, the multi-line signature, bodies) are never the class's
    assert not {n for n in rows if "size = 0" in source[n - 1] or "return" in source[n - 1]}


def test_class_level_lines_of_a_class_split_into_parts() -> None:
    body = "".join(f"    field_{i} = Thing()\n" for i in range(120))
    text = "class Big:\n    def first(self):\n        return 1\n\n" + body
    rows = _class_lines(text)
    source = text.split("\n")
    assert all(source[n - 1] == line for n, line in rows.items())
    assert {line.strip() for line in rows.values() if "field_" in line} == {
        f"field_{i} = Thing()" for i in range(120)}
