"""parse_code against real grammars and realistic fixtures in tests/fixtures/languages/."""

from __future__ import annotations

from functools import cache
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pr_context.models import ParsedFile, Reference
from pr_context.parse.code import MAX_CHUNK_CHARS, MAX_CHUNK_LINES, module_path, parse_code
from pr_context.parse.code_lang import tag_query

FIXTURES = Path(__file__).parent / "fixtures" / "languages"
# Fixture paths relative to their language directory, which stands in for a repository root.
FILES = {
    "python": "src/shop/client.py",
    "javascript": "src/lib/cart.js",
    "typescript": "src/api/users.ts",
    "tsx": "src/components/UserCard.tsx",
    "go": "internal/store/store.go",
    "java": "src/main/java/com/acme/shop/OrderService.java",
    "rust": "src/geometry/shapes.rs",
}
LANGS = list(FILES)


def fixture_text(language: str) -> str:
    return (FIXTURES / language / FILES[language]).read_text("utf-8")


@cache
def parsed(language: str) -> ParsedFile:
    return parse_code(FILES[language], fixture_text(language), language, "production")


# (qualified_name, kind, start_line, end_line, parent) for every definition, in order.
DEFINITIONS = {
    "python": [
        ("shop.client.cached", "function", 19, 27, None),
        ("shop.client.cached.wrapper", "function", 22, 25, "shop.client.cached"),
        ("shop.client.Client", "class", 30, 77, None),
        ("shop.client.Client.Error", "class", 40, 44, "shop.client.Client"),
        ("shop.client.Client.Error.describe", "method", 43, 44, "shop.client.Client.Error"),
        ("shop.client.Client.__init__", "method", 46, 48, "shop.client.Client"),
        ("shop.client.Client.get", "method", 50, 51, "shop.client.Client"),
        ("shop.client.Client.get", "method", 53, 54, "shop.client.Client"),
        ("shop.client.Client.get", "method", 56, 60, "shop.client.Client"),
        ("shop.client.Client.fetch_all", "method", 62, 67, "shop.client.Client"),
        ("shop.client.Client.host", "method", 69, 71, "shop.client.Client"),
        ("shop.client.Client.iter_pages", "method", 73, 77, "shop.client.Client"),
        ("shop.client.load_config", "function", 80, 83, None),
    ],
    "javascript": [
        ("src.lib.cart.total", "function", 13, 16, None),
        ("src.lib.cart.Cart", "class", 19, 44, None),
        ("src.lib.cart.Cart.constructor", "method", 23, 26, "src.lib.cart.Cart"),
        ("src.lib.cart.Cart.add", "method", 28, 34, "src.lib.cart.Cart"),
        ("src.lib.cart.Cart.onRemove", "method", 36, 39, "src.lib.cart.Cart"),
        ("src.lib.cart.Cart.[Symbol.iterator]", "method", 41, 43, "src.lib.cart.Cart"),
        ("src.lib.cart.checkout", "function", 46, 49, None),
        ("src.lib.cart.ids", "function", 51, 54, None),
    ],
    "typescript": [
        ("src.api.users.User", "interface", 8, 13, None),
        ("src.api.users.User.greet", "method", 12, 12, "src.api.users.User"),
        ("src.api.users.UserId", "type", 15, 15, None),
        ("src.api.users.Status", "enum", 17, 20, None),
        ("src.api.users.UserService", "class", 25, 49, None),
        ("src.api.users.UserService.constructor", "method", 29, 29, "src.api.users.UserService"),
        ("src.api.users.UserService.find", "method", 32, 39, "src.api.users.UserService"),
        ("src.api.users.UserService.handle", "method", 41, 44, "src.api.users.UserService"),
        ("src.api.users.UserService.create", "method", 46, 48, "src.api.users.UserService"),
        ("src.api.users.parseUser", "function", 51, 51, None),
        ("src.api.users.parseUser", "function", 52, 52, None),
        ("src.api.users.parseUser", "function", 53, 56, None),
        ("src.api.users.toDto", "function", 58, 58, None),
        ("src.api.users.Legacy.oldFind", "function", 61, 63, "src.api.users.Legacy"),
    ],
    "tsx": [
        ("src.components.UserCard.Props", "interface", 5, 8, None),
        ("src.components.UserCard.UserCard", "function", 11, 20, None),
        ("src.components.UserCard.UserList", "function", 22, 28, None),
        ("src.components.UserCard.Panel", "class", 30, 34, None),
        ("src.components.UserCard.Panel.render", "method", 31, 33, "src.components.UserCard.Panel"),
    ],
    "go": [
        ("internal.store.Store", "struct", 21, 25, None),
        ("internal.store.Getter", "interface", 28, 31, None),
        ("internal.store.Getter.Get", "method", 29, 29, "internal.store.Getter"),
        ("internal.store.ID", "type", 33, 33, None),
        ("internal.store.Alias", "type", 36, 36, None),
        ("internal.store.Item", "struct", 37, 40, None),
        ("internal.store.New", "function", 44, 50, None),
        ("internal.store.Store.Get", "method", 54, 63, "internal.store.Store"),
        ("internal.store.Item.String", "method", 65, 67, "internal.store.Item"),
        ("internal.store.defaultItem", "function", 69, 71, None),
    ],
    "java": [
        ("com.acme.shop.OrderService", "class", 13, 72, None),
        ("com.acme.shop.OrderService.OrderService", "method", 20, 22, "com.acme.shop.OrderService"),
        ("com.acme.shop.OrderService.place", "method", 25, 33, "com.acme.shop.OrderService"),
        ("com.acme.shop.OrderService.run", "method", 35, 39, "com.acme.shop.OrderService"),
        ("com.acme.shop.OrderService.compareTo", "method", 41, 44, "com.acme.shop.OrderService"),
        ("com.acme.shop.OrderService.Summary", "class", 46, 56, "com.acme.shop.OrderService"),
        ("com.acme.shop.OrderService.Summary.Summary", "method", 49, 51,
         "com.acme.shop.OrderService.Summary"),
        ("com.acme.shop.OrderService.Summary.count", "method", 53, 55,
         "com.acme.shop.OrderService.Summary"),
        ("com.acme.shop.OrderService.Listener", "interface", 58, 60, "com.acme.shop.OrderService"),
        ("com.acme.shop.OrderService.Listener.onOrder", "method", 59, 59,
         "com.acme.shop.OrderService.Listener"),
        ("com.acme.shop.OrderService.State", "enum", 62, 69, "com.acme.shop.OrderService"),
        ("com.acme.shop.OrderService.State.isFinal", "method", 66, 68,
         "com.acme.shop.OrderService.State"),
        ("com.acme.shop.OrderService.Line", "class", 71, 71, "com.acme.shop.OrderService"),
    ],
    "rust": [
        ("geometry.shapes.Point", "struct", 10, 14, None),
        ("geometry.shapes.Shape", "enum", 17, 20, None),
        ("geometry.shapes.Area", "trait", 23, 30, None),
        ("geometry.shapes.Area.area", "method", 24, 24, "geometry.shapes.Area"),
        ("geometry.shapes.Area.double_area", "method", 27, 29, "geometry.shapes.Area"),
        ("geometry.shapes.Registry", "type", 32, 32, None),
        ("geometry.shapes.Point.new", "method", 35, 37, "geometry.shapes.Point"),
        ("geometry.shapes.Shape.area", "method", 41, 46, "geometry.shapes.Shape"),
        ("geometry.shapes.Shape.fmt", "method", 50, 52, "geometry.shapes.Shape"),
        ("geometry.shapes.load", "function", 55, 61, None),
        ("geometry.shapes.tests.point_new", "function", 67, 71, "geometry.shapes.tests"),
    ],
}


@pytest.mark.parametrize("language", LANGS)
def test_definitions(language: str) -> None:
    got = [
        (d.qualified_name, d.kind, d.start_line, d.end_line, d.parent)
        for d in parsed(language).definitions
    ]
    assert got == DEFINITIONS[language]


@pytest.mark.parametrize("language", LANGS)
def test_definition_name_is_last_part_of_qualified_name(language: str) -> None:
    for definition in parsed(language).definitions:
        assert definition.qualified_name.endswith("." + definition.name)


# (language, index into definitions, signature, parameters, docstring)
DETAILS = [
    ("python", 0, "def cached(func)", ("func",), "Memoise ``func`` by its first argument."),
    ("python", 1, "def wrapper(key, *args, **kwargs)", ("key", "args", "kwargs"), None),
    ("python", 2, "class Client(CoreBase, metaclass=retry.Meta)", (),
     "Talks to the shop.\n\nHolds one session."),
    ("python", 5,
     "def __init__(self, session: Session, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None",
     ("session", "timeout_s"), None),
    ("python", 7, "def get(self, url: str, default: bytes) -> bytes", ("url", "default"), None),
    ("python", 9, "async def fetch_all(urls: list[str], **options: Any) -> list[bytes]",
     ("urls", "options"), None),
    ("javascript", 0, "export function total(items, { currency = 'EUR' } = {}, ...extra)",
     ("items", "{ currency = 'EUR' }", "extra"), "Sums line items.\nIgnores empty ones."),
    ("javascript", 1, "export class Cart extends EventEmitter", (),
     "Shopping cart with change events."),
    ("javascript", 4, "onRemove = (item) =>", ("item",), None),
    ("javascript", 6, "export const checkout = async (cart, gateway) =>", ("cart", "gateway"),
     None),
    ("javascript", 7, "function* ids(start = 0)", ("start",), None),
    ("typescript", 0, "export interface User extends Entity", (), "A user as stored."),
    ("typescript", 4, "export class UserService<T extends User = User> implements Service<T>", (),
     "Loads and caches users."),
    ("typescript", 5, "constructor(private readonly repo: Repository<T>, private http: Http)",
     ("repo", "http"), None),
    ("typescript", 6, "async find(id: UserId): Promise<T | undefined>", ("id",), "Finds one user."),
    ("typescript", 7, "public handle = async (req: Request, res: Response): Promise<void> =>",
     ("req", "res"), None),
    ("typescript", 8, "static create<U extends User>(repo: Repository<U>): UserService<U>",
     ("repo",), None),
    ("typescript", 9, "export function parseUser(input: unknown): User", ("input",), None),
    ("typescript", 12,
     "export const toDto = <T extends User>({ id, email }: T, ...fields: string[]): Dto =>",
     ("{ id, email }", "fields"), None),
    ("tsx", 1, "export function UserCard({ user, onSelect }: Props): JSX.Element",
     ("{ user, onSelect }",), "Shows one user."),
    ("tsx", 3, "export default class Panel extends React.Component<Props>", (), None),
    ("go", 0, "type Store[K comparable, V any] struct", (), "Store is a concurrency-safe map."),
    ("go", 2, "Get(ctx context.Context, key string) (Item, error)", ("ctx", "key"), None),
    ("go", 6, "func New[K comparable, V any](log Logger, opts ...Option) *Store[K, V]",
     ("log", "opts"), "New makes an empty store."),
    ("go", 7, "func (s *Store[K, V]) Get(ctx context.Context, key K) (V, error)",
     ("ctx", "key"), "Get returns the value for key.\nIt locks the store."),
    ("go", 8, "func (i Item) String() string", (), None),
    ("java", 0, "public class OrderService<T extends Order> extends BaseService implements "
     "Runnable, Comparable<OrderService<T>>", (), "Places and lists orders."),
    ("java", 1, "public OrderService(OrderRepository repository)", ("repository",), None),
    ("java", 2, "public <R extends T> R place(R order, String... tags) throws OrderException",
     ("order", "tags"), "Places one order."),
    ("java", 9, "void onOrder(Order order)", ("order",), None),
    ("java", 12, "record Line(String sku, int qty)", (), None),
    ("rust", 0, "pub struct Point<T>", (), "A point in the plane."),
    ("rust", 2, "pub trait Area: fmt::Debug", (), "Something with an area."),
    ("rust", 4, "fn double_area(&self) -> f64", (), "Twice the area."),
    ("rust", 8, "fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result", ("f",), None),
    ("rust", 9, "pub async fn load(registry: &mut Registry, name: &str) -> Result<f64, Error>",
     ("registry", "name"), None),
]


@pytest.mark.parametrize(("language", "index", "signature", "parameters", "docstring"), DETAILS)
def test_definition_details(
    language: str, index: int, signature: str, parameters: tuple[str, ...], docstring: str | None
) -> None:
    definition = parsed(language).definitions[index]
    assert (definition.signature, definition.parameters, definition.docstring) == (
        signature,
        parameters,
        docstring,
    )


@pytest.mark.parametrize(("language", "path", "source", "signature"), [
    ("python", "pkg/ctx.py",
     "def call(\n    __self,  # the context\n    *args: t.Any,\n"
     "    **kwargs: t.Any,  # noqa: B902\n) -> t.Any:\n    return 1\n",
     "def call( __self, *args: t.Any, **kwargs: t.Any, ) -> t.Any"),
    ("python", "pkg/ctx.py", "def f(sep='#', n=1):  # type: ignore\n    return sep\n",
     "def f(sep='#', n=1)"),
    ("typescript", "src/ctx.ts",
     "export function call(a: number, /* legacy */ b: string, // trailing\n c = 1): void {}\n",
     "export function call(a: number, b: string, c = 1): void"),
    ("java", "src/Ctx.java",
     "class Ctx {\n  int call(int a, // count\n           String b /* name */) { return a; }\n}\n",
     "int call(int a, String b )"),
])
def test_comments_are_left_out_of_signatures(language: str, path: str, source: str,
                                             signature: str) -> None:
    # Joined into one line, a comment would swallow the rest of the signature, and the
    # review would read the comment as a parameter the callers do not pass.
    definitions = parse_code(path, source, language, "production").definitions
    assert definitions[-1].signature == signature


# (module, name, alias, level, line) for every import, in order.
IMPORTS = {
    "python": [
        ("__future__", "annotations", None, 0, 3),
        ("os.path", None, "osp", 0, 5),
        ("typing", "TYPE_CHECKING", None, 0, 6),
        ("typing", "Any", None, 0, 6),
        ("typing", "overload", None, 0, 6),
        ("core", "Base", "CoreBase", 2, 8),
        ("core", "Session", None, 2, 8),
        ("", "retry", None, 1, 9),
        ("models", "*", None, 1, 10),
        ("collections.abc", "Iterator", None, 0, 13),
    ],
    "javascript": [
        ("events", "default", "EventEmitter", 0, 1),
        ("./money.js", "formatPrice", "fmt", 0, 2),
        ("./money.js", "round", None, 0, 2),
        ("../log.js", "*", "log", 0, 3),
        ("./polyfills.js", None, None, 0, 4),
        ("./cart-impl.js", "Cart", "default", 0, 5),
        ("./discounts.js", "*", None, 0, 6),
        ("path", None, "path", 0, 7),
    ],
    "typescript": [
        ("express", "Request", None, 0, 1),
        ("express", "Response", None, 0, 1),
        ("axios", "default", "axios", 0, 2),
        ("axios", "AxiosInstance", "Http", 0, 2),
        ("zod", "*", "z", 0, 3),
        ("../db/repository", "Repository", None, 0, 4),
        ("./roles", "Role", None, 0, 5),
    ],
    "tsx": [
        ("react", "default", "React", 0, 1),
        ("react", "useState", None, 0, 1),
        ("./Avatar", "Avatar", None, 0, 2),
        ("../api/users", "User", None, 0, 3),
    ],
    "go": [
        ("context", None, None, 0, 5),
        ("fmt", None, None, 0, 6),
        ("strings", None, "str", 0, 7),
        ("sync", None, None, 0, 8),
        ("embed", None, "_", 0, 10),
        ("math", None, ".", 0, 13),
    ],
    "java": [
        ("java.util", "ArrayList", None, 0, 3),
        ("java.util", "List", None, 0, 4),
        ("java.util.concurrent", "*", None, 0, 5),
        ("java.util.Objects", "requireNonNull", None, 0, 6),
        ("com.acme.shop.model", "Order", None, 0, 8),
    ],
    "rust": [
        ("std::collections", "HashMap", None, 0, 3),
        ("std::collections::hash_map", "Entry", "MapEntry", 0, 3),
        ("std", "fmt", None, 0, 4),
        ("super::units", "*", None, 0, 5),
        ("crate::error", "Error", None, 0, 6),
        ("serde", None, None, 0, 7),
        ("super", "*", None, 0, 65),
    ],
}


@pytest.mark.parametrize("language", LANGS)
def test_imports(language: str) -> None:
    got = [(i.module, i.name, i.alias, i.level, i.line) for i in parsed(language).imports]
    assert got == IMPORTS[language]


@pytest.mark.parametrize(
    ("language", "source", "expected"),
    [
        ("python", "import a, b.c\nfrom . import (x as y, z)\n",
         [("a", None, None, 0, 1), ("b.c", None, None, 0, 1), ("", "x", "y", 1, 2),
          ("", "z", None, 1, 2)]),
        ("javascript", "const {a, b: c} = require('m');\nexport * as ns from './d';\n",
         [("m", "a", None, 0, 1), ("m", "b", "c", 0, 1), ("./d", "*", "ns", 0, 2)]),
        ("typescript", "import fs = require('fs');\nconst m = await import('./lazy');\n",
         [("fs", None, "fs", 0, 1), ("./lazy", None, None, 0, 2)]),
        ("rust", "use a::{self, b::{c, d as e}, f::*};\nextern crate g as h;\n",
         [("a", None, None, 0, 1), ("a::b", "c", None, 0, 1), ("a::b", "d", "e", 0, 1),
          ("a::f", "*", None, 0, 1), ("g", None, "h", 0, 2)]),
        ("java", "import Foo;\nimport static a.B.*;\n",
         [("", "Foo", None, 0, 1), ("a.B", "*", None, 0, 2)]),
    ],
)
def test_import_forms(language: str, source: str, expected: list[tuple[object, ...]]) -> None:
    parsed_file = parse_code("x", source, language, "production")
    got = [(i.module, i.name, i.alias, i.level, i.line) for i in parsed_file.imports]
    assert got == expected


ORDERS = "com.acme.shop.OrderService"
# A sample of the references each fixture must yield, exactly.
REFERENCES = {
    "python": [
        Reference("policy", "call", "retry", 30, 7, None),
        Reference("CoreBase", "type", None, 31, 13, "shop.client.Client"),
        Reference("Meta", "type", "retry", 31, 39, "shop.client.Client"),
        Reference("code", "attribute", "self", 44, 33, "shop.client.Client.Error.describe"),
        Reference("request", "call", "self.session", 57, 32, "shop.client.Client.get"),
        Reference("join", "call", "osp", 57, 51, "shop.client.Client.get"),
        Reference("Error", "call", "Client", 59, 25, "shop.client.Client.get"),
        Reference("Iterator", "type", None, 73, 44, "shop.client.Client.iter_pages"),
        Reference("Page", "call", None, 76, 18, "shop.client.Client.iter_pages"),
        Reference("cached", "call", None, 80, 1, None),
        Reference("environ", "attribute", "os", 87, 25, None),
    ],
    "javascript": [
        Reference("reduce", "call", "items", 14, 20, "src.lib.cart.total"),
        Reference("fmt", "call", None, 15, 9, "src.lib.cart.total"),
        Reference("EventEmitter", "type", None, 19, 26, "src.lib.cart.Cart"),
        Reference("CartFullError", "instantiation", None, 30, 16, "src.lib.cart.Cart.add"),
        Reference("push", "call", "this.items", 32, 15, "src.lib.cart.Cart.add"),
        Reference("info", "call", "log", 38, 8, "src.lib.cart.Cart.onRemove"),
        Reference("Receipt", "instantiation", None, 48, 13, "src.lib.cart.checkout"),
    ],
    "typescript": [
        Reference("Entity", "type", None, 8, 30, "src.api.users.User"),
        Reference("Injectable", "call", None, 25, 1, None),
        Reference("Map", "instantiation", None, 27, 22, "src.api.users.UserService"),
        Reference("Repository", "type", None, 29, 37, "src.api.users.UserService.constructor"),
        Reference("findOne", "call", "this.repo", 35, 35, "src.api.users.UserService.find"),
        Reference("UserService", "instantiation", None, 47, 15, "src.api.users.UserService.create"),
        Reference("email", "call", "z.string()", 54, 62, "src.api.users.parseUser"),
        Reference("User", "type", None, 61, 39, "src.api.users.Legacy.oldFind"),
    ],
    "tsx": [
        Reference("Element", "type", "JSX", 11, 57, "src.components.UserCard.UserCard"),
        Reference("Avatar", "call", None, 15, 7, "src.components.UserCard.UserCard"),
        Reference("Row", "call", "Layout", 16, 14, "src.components.UserCard.UserCard"),
        Reference("UserCard", "call", None, 25, 7, "src.components.UserCard.UserList"),
        Reference("Component", "type", "React", 30, 41, "src.components.UserCard.Panel"),
    ],
    "go": [
        Reference("Errorf", "call", "fmt", 16, 21, None),
        Reference("Mutex", "type", "sync", 22, 12, "internal.store.Store"),
        Reference("Store", "instantiation", None, 45, 7, "internal.store.New"),
        Reference("Lock", "call", "s.mu", 55, 6, "internal.store.Store.Get"),
        Reference("TrimSpace", "call", "str", 66, 37, "internal.store.Item.String"),
        Reference("Item", "instantiation", None, 70, 8, "internal.store.defaultItem"),
    ],
    "java": [
        Reference("Service", "type", None, 13, 1, "com.acme.shop.OrderService"),
        Reference("BaseService", "type", None, 15, 51, "com.acme.shop.OrderService"),
        Reference("ArrayList", "instantiation", None, 17, 39, "com.acme.shop.OrderService"),
        Reference("requireNonNull", "call", None, 21, 26, f"{ORDERS}.OrderService"),
        Reference("OrderException", "instantiation", None, 28, 22, f"{ORDERS}.place"),
        Reference("join", "call", "repository.save(order)", 31, 31, f"{ORDERS}.place"),
        Reference("repository", "attribute", "this", 38, 31, "com.acme.shop.OrderService.run"),
    ],
    "rust": [
        Reference("Debug", "type", "fmt", 23, 21, "geometry.shapes.Area"),
        Reference("area", "call", "self", 28, 13, "geometry.shapes.Area.double_area"),
        Reference("Point", "instantiation", None, 36, 8, "geometry.shapes.Point.new"),
        Reference("Area", "type", None, 40, 5, "geometry.shapes.Shape"),
        Reference("ok_or", "call", "registry.get(name)", 56, 35, "geometry.shapes.load"),
        Reference("new", "call", "Point", 69, 23, "geometry.shapes.tests.point_new"),
    ],
}


@pytest.mark.parametrize("language", LANGS)
def test_references(language: str) -> None:
    references = parsed(language).references
    missing = [ref for ref in REFERENCES[language] if ref not in references]
    assert missing == []


@pytest.mark.parametrize("language", LANGS)
def test_references_are_in_source_order(language: str) -> None:
    positions = [(ref.line, ref.column) for ref in parsed(language).references]
    assert positions == sorted(positions)


@pytest.mark.parametrize("language", LANGS)
def test_no_references_on_import_lines_or_definition_names(language: str) -> None:
    result = parsed(language)
    import_lines = {i.line for i in result.imports}
    names = {(d.start_line, d.name) for d in result.definitions}
    assert [r for r in result.references if r.line in import_lines] == []
    assert [r for r in result.references if (r.line, r.name) in names and r.kind == "type"] == []


def test_reference_column_counts_bytes() -> None:
    result = parse_code("m.py", 's = "é€"; f()\n', "python", "production")
    assert result.references == (Reference("f", "call", None, 1, 13, None),)


def test_python_names_read_as_values_are_references_unless_local() -> None:
    source = (
        "from m import helper\n"
        "alias = helper\n"  # module level: a reference
        "def f(a, cb=helper):\n"  # a default value
        "    x = a\n"
        "    g(x, a, cb, helper)\n"  # locals and parameters are not references
        "    h(key=f, items=[helper], pair={'k': helper})\n"
        "    print([y for y in a], lambda z: z)\n"  # comprehension and lambda locals
        "    return inner\n"  # a nested function, resolved by the graph
        "    def inner(): return x\n"
        "class C:\n"
        "    field = 1\n"
        "    def m(self): return field\n"  # a class body's names are not the method's
        "    other = (field, m)\n"  # ... but are the class body's own
        "    @m.setter\n"  # the object of a decorator
        "    def n(self): pass\n"
    )
    refs = parse_code("m.py", source, "python", "production").references
    assert [(r.line, r.name, r.enclosing) for r in refs
            if r.kind == "attribute" and r.receiver is None] == [
        (2, "helper", None), (3, "helper", "m.f"), (5, "helper", "m.f"), (6, "f", "m.f"),
        (6, "helper", "m.f"), (6, "helper", "m.f"), (8, "inner", "m.f"),
        (12, "field", "m.C.m"), (13, "m", "m.C"), (14, "m", "m.C"),
    ]


@pytest.mark.parametrize(("language", "path", "source", "expected"), [
    pytest.param("go", "cmd/root.go", (
        "package cmd\n"
        "var root = &Command{Args: NoArgs, Run: func(c *Command, args []string) {\n"
        "\trun(c, args, handler)\n"  # parameters are locals
        "}}\n"
        "func f(a int) error {\n"
        "\tx := a\n"
        "\tfor _, it := range items {\n\t\tuse(it, x)\n\t}\n"
        "\treturn wrap\n"
        "}\n"), [(2, "NoArgs"), (3, "handler"), (10, "wrap")], id="go"),
    pytest.param("javascript", "web/app.jsx", (
        "const routes = [home, about]\n"
        "export const actions = { save, load: fetchAll }\n"
        "function App({ user }, [first], ...rest) {\n"
        "  const sorted = rest\n"
        "  items.map(render).forEach((row) => show(row, user, first))\n"
        "  try { run(sorted) } catch (err) { report(err) }\n"
        "  return <Button onClick={onClick} user={user} />\n"
        "}\n"), [(1, "home"), (1, "about"), (2, "save"), (2, "fetchAll"), (5, "render"),
                  (7, "onClick")], id="javascript"),
    pytest.param("typescript", "web/app.ts", (
        "export function sortBy(key: string, compare?: Compare) {\n"
        "  return items.sort(compare ?? byName).map(key ? pick : identity)\n"
        "}\n"
        "export const handlers = [sortBy]\n"), [(2, "pick"), (2, "identity"), (4, "sortBy")],
        id="typescript"),
])
def test_names_read_as_values_are_references_unless_local(
        language: str, path: str, source: str, expected: list[tuple[int, str]]) -> None:
    refs = parse_code(path, source, language, "production").references
    assert [(r.line, r.name) for r in refs
            if r.kind == "attribute" and r.receiver is None] == expected


def test_multiline_receiver_is_collapsed() -> None:
    source = "x = (a\n     .b(1)\n     .c)\n"
    result = parse_code("m.py", source, "python", "production")
    assert Reference("c", "attribute", "(a .b(1)", 3, 6, None) not in result.references
    assert Reference("c", "attribute", "a .b(1)", 3, 6, None) in result.references


# (kind, start_line, end_line, symbol) for every chunk, in order.
CHUNKS = {
    "python": [
        ("module", 1, 16, None),
        ("definition", 19, 27, "shop.client.cached"),
        ("class_header", 30, 73, "shop.client.Client"),
        ("class_header", 40, 43, "shop.client.Client.Error"),
        ("definition", 43, 44, "shop.client.Client.Error.describe"),
        ("definition", 46, 48, "shop.client.Client.__init__"),
        ("definition", 50, 51, "shop.client.Client.get"),
        ("definition", 53, 54, "shop.client.Client.get"),
        ("definition", 56, 60, "shop.client.Client.get"),
        ("definition", 62, 67, "shop.client.Client.fetch_all"),
        ("definition", 69, 71, "shop.client.Client.host"),
        ("definition", 73, 77, "shop.client.Client.iter_pages"),
        ("definition", 80, 83, "shop.client.load_config"),
        ("module", 86, 87, None),
    ],
    "javascript": [
        ("module", 1, 7, None),
        ("definition", 9, 16, "src.lib.cart.total"),
        ("class_header", 18, 44, "src.lib.cart.Cart"),
        ("definition", 23, 26, "src.lib.cart.Cart.constructor"),
        ("definition", 28, 34, "src.lib.cart.Cart.add"),
        ("definition", 36, 39, "src.lib.cart.Cart.onRemove"),
        ("definition", 41, 43, "src.lib.cart.Cart.[Symbol.iterator]"),
        ("definition", 46, 49, "src.lib.cart.checkout"),
        ("definition", 51, 54, "src.lib.cart.ids"),
        ("module", 56, 56, None),
    ],
    "typescript": [
        ("module", 1, 5, None),
        ("class_header", 7, 13, "src.api.users.User"),
        ("class_header", 15, 15, "src.api.users.UserId"),
        ("class_header", 17, 20, "src.api.users.Status"),
        ("class_header", 22, 49, "src.api.users.UserService"),
        ("definition", 29, 29, "src.api.users.UserService.constructor"),
        ("definition", 31, 39, "src.api.users.UserService.find"),
        ("definition", 41, 44, "src.api.users.UserService.handle"),
        ("definition", 46, 48, "src.api.users.UserService.create"),
        ("definition", 51, 51, "src.api.users.parseUser"),
        ("definition", 52, 52, "src.api.users.parseUser"),
        ("definition", 53, 56, "src.api.users.parseUser"),
        ("definition", 58, 58, "src.api.users.toDto"),
        ("class_header", 60, 64, "src.api.users.Legacy"),
        ("definition", 61, 63, "src.api.users.Legacy.oldFind"),
    ],
    "tsx": [
        ("module", 1, 3, None),
        ("class_header", 5, 8, "src.components.UserCard.Props"),
        ("definition", 10, 20, "src.components.UserCard.UserCard"),
        ("definition", 22, 28, "src.components.UserCard.UserList"),
        ("class_header", 30, 34, "src.components.UserCard.Panel"),
        ("definition", 31, 33, "src.components.UserCard.Panel.render"),
    ],
    "go": [
        ("module", 1, 18, None),
        ("class_header", 20, 25, "internal.store.Store"),
        ("class_header", 27, 31, "internal.store.Getter"),
        ("class_header", 33, 33, "internal.store.ID"),
        ("module", 35, 35, None),
        ("class_header", 36, 36, "internal.store.Alias"),
        ("class_header", 37, 40, "internal.store.Item"),
        ("module", 41, 41, None),
        ("definition", 43, 50, "internal.store.New"),
        ("definition", 52, 63, "internal.store.Store.Get"),
        ("definition", 65, 67, "internal.store.Item.String"),
        ("definition", 69, 71, "internal.store.defaultItem"),
    ],
    "java": [
        ("module", 1, 8, None),
        ("class_header", 10, 72, "com.acme.shop.OrderService"),
        ("definition", 20, 22, "com.acme.shop.OrderService.OrderService"),
        ("definition", 24, 33, "com.acme.shop.OrderService.place"),
        ("definition", 35, 39, "com.acme.shop.OrderService.run"),
        ("definition", 41, 44, "com.acme.shop.OrderService.compareTo"),
        ("class_header", 46, 56, "com.acme.shop.OrderService.Summary"),
        ("definition", 49, 51, "com.acme.shop.OrderService.Summary.Summary"),
        ("definition", 53, 55, "com.acme.shop.OrderService.Summary.count"),
        ("class_header", 58, 60, "com.acme.shop.OrderService.Listener"),
        ("class_header", 62, 69, "com.acme.shop.OrderService.State"),
        ("definition", 66, 68, "com.acme.shop.OrderService.State.isFinal"),
        ("class_header", 71, 71, "com.acme.shop.OrderService.Line"),
    ],
    "rust": [
        ("module", 1, 7, None),
        ("class_header", 9, 14, "geometry.shapes.Point"),
        ("class_header", 16, 20, "geometry.shapes.Shape"),
        ("class_header", 22, 30, "geometry.shapes.Area"),
        ("definition", 26, 29, "geometry.shapes.Area.double_area"),
        ("class_header", 32, 32, "geometry.shapes.Registry"),
        ("class_header", 34, 38, "geometry.shapes.Point"),
        ("definition", 35, 37, "geometry.shapes.Point.new"),
        ("class_header", 40, 47, "geometry.shapes.Shape"),
        ("definition", 41, 46, "geometry.shapes.Shape.area"),
        ("class_header", 49, 53, "geometry.shapes.Shape"),
        ("definition", 50, 52, "geometry.shapes.Shape.fmt"),
        ("definition", 55, 61, "geometry.shapes.load"),
        ("class_header", 63, 72, "geometry.shapes.tests"),
        ("definition", 67, 71, "geometry.shapes.tests.point_new"),
    ],
}


@pytest.mark.parametrize("language", LANGS)
def test_chunks(language: str) -> None:
    got = [(c.kind, c.start_line, c.end_line, c.symbol) for c in parsed(language).chunks]
    assert got == CHUNKS[language]


@pytest.mark.parametrize("language", LANGS)
def test_definition_and_module_chunks_are_exact_source_lines(language: str) -> None:
    lines = fixture_text(language).split("\n")
    for chunk in parsed(language).chunks:
        if chunk.kind in {"definition", "module"}:
            assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


@pytest.mark.parametrize("language", LANGS)
def test_every_code_line_is_in_a_chunk(language: str) -> None:
    lines = fixture_text(language).split("\n")
    covered = {
        line for c in parsed(language).chunks for line in range(c.start_line, c.end_line + 1)
    }
    missing = [n for n, text in enumerate(lines, 1) if text.strip() and n not in covered]
    assert missing == []


@pytest.mark.parametrize("language", LANGS)
def test_chunks_carry_role_and_context(language: str) -> None:
    result = parse_code(FILES[language], fixture_text(language), language, "test")
    for chunk in result.chunks:
        assert chunk.role == "test"
        assert chunk.context.startswith(f"path: {FILES[language]}\nlanguage: {language}")
    method = next(c for c in result.chunks if c.kind == "definition" and c.symbol)
    signature = next(d.signature for d in result.definitions if d.qualified_name == method.symbol)
    assert method.context.endswith(f"\nsignature: {signature}")


def test_method_context_names_the_enclosing_class() -> None:
    symbol = "shop.client.Client.Error.describe"
    chunk = next(c for c in parsed("python").chunks if c.symbol == symbol)
    assert chunk.context == (
        "path: src/shop/client.py\nlanguage: python\nclass: Client\nclass: Error\n"
        "symbol: shop.client.Client.Error.describe\nsignature: def describe(self) -> str"
    )


def test_class_header_keeps_fields_and_signatures_but_not_method_bodies() -> None:
    header = next(c for c in parsed("python").chunks if c.symbol == "shop.client.Client")
    assert header.kind == "class_header"
    assert '    base_url: str = "https://shop.example"' in header.text
    assert "    def get(self, url, default=None):" in header.text
    assert "    class Error(Exception):" in header.text
    assert "self.session.request" not in header.text
    assert "code: int = 500" not in header.text  # belongs to the nested class's header
    assert header.text.startswith("@retry.policy(attempts=3)\nclass Client(")


def test_trailing_comment_stays_with_its_line() -> None:
    source = "class A {\n  int x = 1; // why\n  void m() {}\n  // Runs.\n  void n() {}\n}\n"
    result = parse_code("A.java", source, "java", "production")
    assert [(d.name, d.start_line, d.docstring) for d in result.definitions] == [
        ("A", 1, None), ("m", 3, None), ("n", 5, "Runs.")
    ]
    assert [(c.kind, c.start_line, c.text) for c in result.chunks] == [
        ("class_header", 1, "class A {\n  int x = 1; // why\n  void m() {}\n  void n() {}\n}"),
        ("definition", 3, "  void m() {}"),
        ("definition", 4, "  // Runs.\n  void n() {}"),
    ]


def test_commonjs_assignments_and_ambient_modules_define_functions() -> None:
    source = (
        "exports.load = function load(a) {\n  return a;\n};\n"
        "Cart.prototype.add = (item) => item;\n"
        "declare module 'store' { export function open(): void; }\n"
    )
    result = parse_code("lib/cart.ts", source, "typescript", "production")
    assert [(d.qualified_name, d.parameters, d.parent) for d in result.definitions] == [
        ("lib.cart.load", ("a",), None),
        ("lib.cart.add", ("item",), None),
        ("lib.cart.store.open", (), "lib.cart.store"),
    ]
    assert [r.name for r in result.references] == ["prototype"]


def test_functions_wrapped_in_a_call_or_a_type_assertion_are_definitions() -> None:
    source = (
        "export const createStore = ((init) => init) as CreateStore\n"
        "const Button = React.forwardRef<HTMLButtonElement, Props>((props, ref) => {\n"
        "  const label = () => props.label\n"
        "  return <button ref={ref}>{label()}</button>\n"
        "})\n"
        "export const useStore = create<State>()((set) => ({ count: 0 }))\n"
        "const Row = memo(function Row(row) { return <tr /> })\n"
        "const check = ((value) => true) satisfies Check\n"
        "function render() {\n  const cell = wrap(() => 1)\n  return cell\n}\n"
    )
    result = parse_code("src/ui.tsx", source, "tsx", "production")
    assert [(d.qualified_name, d.parameters, d.start_line, d.end_line)
            for d in result.definitions] == [
        ("src.ui.createStore", ("init",), 1, 1),
        ("src.ui.Button", ("props", "ref"), 2, 5),
        ("src.ui.Button.label", (), 3, 3),
        ("src.ui.useStore", ("set",), 6, 6),
        ("src.ui.Row", ("row",), 7, 7),
        ("src.ui.check", ("value",), 8, 8),
        ("src.ui.render", (), 9, 12),  # a call inside a function is no definition
    ]


def test_interface_methods_without_bodies_stay_in_the_header() -> None:
    header = next(c for c in parsed("java").chunks if (c.symbol or "").endswith("Listener"))
    assert header.text == (
        "    interface Listener {\n        void onOrder(Order order);\n    }"
    )


# Oversized functions: (language, source head, statement template, source tail, signature line)
# Each statement spans three lines, so a cut inside one would show up as a misaligned start.
BIG_FUNCTIONS = [
    ("python", "def big(a, b):\n", "    x{i} = compute(\n        a, {i}\n    )\n", "",
     "def big(a, b):"),
    ("javascript", "function big(a, b) {\n", "  const x{i} = compute(\n    a, {i}\n  );\n", "}\n",
     "function big(a, b) {"),
    ("typescript", "export function big(a: number, b: number): number {\n",
     "  const x{i} = compute(\n    a, {i}\n  );\n", "  return a;\n}\n",
     "export function big(a: number, b: number): number {"),
    ("tsx", "export const Big = ({ a }: Props) => {\n",
     "  const x{i} = compute(\n    a, {i}\n  );\n", "  return <div />;\n};\n",
     "export const Big = ({ a }: Props) => {"),
    ("go", "package big\n\nfunc Big(a int, b int) int {\n",
     "\tx{i} := compute(\n\t\ta, {i},\n\t)\n", "\treturn a\n}\n", "func Big(a int, b int) int {"),
    ("java", "class Big {\n    int big(int a, int b) {\n",
     "        int x{i} = compute(\n            a, {i}\n        );\n",
     "        return a;\n    }\n}\n", "    int big(int a, int b) {"),
    ("rust", "fn big(a: i32, b: i32) -> i32 {\n",
     "    let x{i} = compute(\n        a, {i},\n    );\n", "    a\n}\n",
     "fn big(a: i32, b: i32) -> i32 {"),
]
BIG_STATEMENTS = 70


@pytest.mark.parametrize(("language", "head", "statement", "tail", "signature"), BIG_FUNCTIONS)
def test_oversized_function_is_split_between_statements(
    language: str, head: str, statement: str, tail: str, signature: str
) -> None:
    body = "".join(statement.format(i=i) for i in range(BIG_STATEMENTS))
    source = head + body + tail
    result = parse_code("big/big.src", source, language, "production")
    definition = next(d for d in result.definitions if d.kind in {"function", "method"})
    parts = [c for c in result.chunks if c.kind == "definition_part"]
    first_statement = source.split("\n").index(statement.format(i=0).split("\n")[0]) + 1

    assert len(parts) >= 3
    assert {c.symbol for c in parts} == {definition.qualified_name}
    assert parts[0].start_line == definition.start_line
    assert parts[-1].end_line == definition.end_line
    for previous, part in pairwise(parts):
        assert part.start_line == previous.end_line + 1
        assert (part.start_line - first_statement) % 3 == 0
        assert part.text.split("\n")[0] == signature
    for part in parts:
        assert len(part.text.split("\n")) <= MAX_CHUNK_LINES
        assert len(part.text) <= MAX_CHUNK_CHARS


def test_a_single_huge_statement_is_cut_by_lines() -> None:
    items = "".join(f"        {i},\n" for i in range(200))
    source = f"def table():\n    return [\n{items}    ]\n"
    parts = parse_code("t.py", source, "python", "production").chunks
    assert [c.kind for c in parts] == ["definition_part"] * len(parts)
    assert len(parts) == 3
    assert [(c.start_line, c.end_line) for c in parts] == [(1, 80), (81, 159), (160, 203)]
    assert all(c.text.startswith("def table():\n") for c in parts)


def test_long_doc_comment_is_cut_so_every_chunk_fits() -> None:
    doc = "".join(f"     * Line {i} of a very long explanation.\n" for i in range(150))
    body = "".join(f"        total += {i};\n" for i in range(100))
    method = f"    int sum(int total) {{\n{body}        return total;\n    }}\n"
    source = f"class A {{\n    /**\n{doc}     */\n{method}}}\n"
    result = parse_code("A.java", source, "java", "production")
    parts = [c for c in result.chunks if c.kind == "definition_part"]
    assert parts[0].start_line == 2
    assert parts[-1].end_line == len(source.split("\n")) - 2
    for chunk in result.chunks:
        assert len(chunk.text.split("\n")) <= MAX_CHUNK_LINES
    assert result.definitions[1].docstring is not None
    assert result.definitions[1].docstring.startswith("Line 0 of a very long explanation.\nLine 1")


def test_long_module_is_split_between_statements() -> None:
    source = "".join(f"VALUE_{i} = compute(\n    {i},\n)\n" for i in range(100))
    chunks = parse_code("m.py", source, "python", "production").chunks
    assert [c.kind for c in chunks] == ["module"] * 4
    assert [(c.start_line, c.end_line) for c in chunks] == [
        (1, 78), (79, 156), (157, 234), (235, 300)
    ]


def test_oversized_class_header_repeats_the_declaration() -> None:
    fields = "".join(f"    field_{i}: int = {i}\n" for i in range(150))
    source = f"class Config:\n{fields}\n    def method(self):\n        return 1\n"
    chunks = parse_code("c.py", source, "python", "production").chunks
    headers = [c for c in chunks if c.kind == "class_header"]
    assert len(headers) == 2
    assert [(c.start_line, c.end_line) for c in headers] == [(1, 80), (81, 153)]
    assert headers[1].text.startswith("class Config:\n    field_79: int = 79\n")
    assert headers[1].text.endswith("    def method(self):")


def test_module_statements_are_grouped_between_definitions() -> None:
    source = "import os\nX = 1\n\ndef f():\n    return X\n\nY = 2\nprint(Y)\n"
    chunks = parse_code("m.py", source, "python", "production").chunks
    assert [(c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("module", 1, 2),
        ("definition", 4, 5),
        ("module", 7, 8),
    ]
    assert chunks[0].context == "path: m.py\nlanguage: python"


# (language, source with a broken definition between two good ones, the good names)
BROKEN = [
    ("python", "def good_one():\n    return 1\n\ndef broken(:\n    return 2\n\n"
     "def good_two():\n    return 3\n", {"good_one", "good_two"}),
    ("javascript", "function goodOne() {\n  return 1;\n}\nfunction broken(a b) {\n  return 2;\n}\n"
     "function goodTwo() {\n  return 3;\n}\n", {"goodOne", "goodTwo"}),
    ("typescript", "function goodOne(): number {\n  return 1;\n}\nfunction broken(a: number b) {\n"
     "  return 2;\n}\nfunction goodTwo(): number {\n  return 3;\n}\n", {"goodOne", "goodTwo"}),
    ("tsx", "function GoodOne() {\n  return <div>;\n}\nfunction GoodTwo() {\n  return 2;\n}\n",
     {"GoodOne"}),
    ("go", "package p\n\nfunc GoodOne() int {\n\treturn 1\n}\n\nfunc Broken( int {\n\treturn 2\n"
     "}\n\nfunc GoodTwo() int {\n\treturn 3\n}\n", {"GoodOne", "GoodTwo"}),
    ("java", "class A {\n  int goodOne() { return 1; }\n  int broken( { return 2; }\n"
     "  int goodTwo() { return 3; }\n}\n", {"goodOne", "goodTwo"}),
    ("rust", "fn good_one() -> i32 {\n    1\n}\n\nfn broken( -> i32 {\n    2\n}\n\n"
     "fn good_two() -> i32 {\n    3\n}\n", {"good_one", "good_two"}),
]


@pytest.mark.parametrize(("language", "source", "good"), BROKEN)
def test_syntax_errors_are_counted_and_good_definitions_kept(
    language: str, source: str, good: set[str]
) -> None:
    result = parse_code("broken.src", source, language, "production")
    assert result.syntax_errors > 0
    assert good <= {d.name for d in result.definitions}


@pytest.mark.parametrize("language", LANGS)
def test_every_query_pattern_has_a_role(language: str) -> None:
    roles = tag_query(language).patterns
    assert [index for index, role in enumerate(roles) if role.role == "none"] == []
    assert {role.role for role in roles} >= {"definition", "reference", "import"}


@pytest.mark.parametrize("language", LANGS)
def test_fixtures_have_no_syntax_errors(language: str) -> None:
    assert parsed(language).syntax_errors == 0


@pytest.mark.parametrize("language", LANGS)
def test_empty_file(language: str) -> None:
    result = parse_code("empty", "", language, "production")
    assert result == ParsedFile(path="empty", language=language, role="production")


COMMENTS = {
    "python": "# one\n# two\n",
    "javascript": "// one\n/* two */\n",
    "typescript": "// one\n/* two */\n",
    "tsx": "// one\n/* two */\n",
    "go": "// one\n/* two */\n",
    "java": "// one\n/* two */\n",
    "rust": "// one\n/// two\n",
}


@pytest.mark.parametrize("language", LANGS)
def test_file_of_only_comments(language: str) -> None:
    result = parse_code("c", COMMENTS[language], language, "docs")
    assert (result.definitions, result.references, result.imports) == ((), (), ())
    assert [(c.kind, c.start_line, c.end_line, c.text) for c in result.chunks] == [
        ("module", 1, 2, COMMENTS[language].rstrip("\n"))
    ]


@pytest.mark.parametrize("language", LANGS)
@pytest.mark.parametrize(
    "text",
    [
        "\ud800 lone surrogate",
        "\x00\x00\x00",
        "emoji 🎉 " * 50,
        "a\r\nb\r\n",
        "}{)(][" * 10,
        "\n" * 5,
        "def f(:\n\tclass {{\n" * 20,
    ],
)
def test_odd_text_never_raises(language: str, text: str) -> None:
    result = parse_code("odd", text, language, "production")
    assert result.path == "odd"


MUTATION_ALPHABET = "{}()[]<>:;,.=\"'`#/*\\ \n\tab@$\u00e9\U0001f389"


@pytest.mark.parametrize("language", LANGS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_mutated_fixtures_never_raise_and_stay_in_bounds(
    language: str, data: st.DataObject
) -> None:
    text = fixture_text(language)
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, min(len(text), start + 200)))
    insert = data.draw(st.text(alphabet=MUTATION_ALPHABET, max_size=20))
    mutated = text[:start] + insert + text[end:]
    result = parse_code(FILES[language], mutated, language, "production")
    line_count = len(mutated.split("\n"))
    assert all(1 <= c.start_line <= c.end_line <= line_count for c in result.chunks)
    assert all(1 <= d.start_line <= d.end_line <= line_count for d in result.definitions)
    positions = [(r.line, r.column) for r in result.references]
    assert positions == sorted(positions)


@pytest.mark.parametrize(
    ("path", "language", "package", "expected"),
    [
        ("src/shop/client.py", "python", None, "shop.client"),
        ("lib/shop/client.pyi", "python", None, "shop.client"),
        ("pkg/__init__.py", "python", None, "pkg"),
        ("__init__.py", "python", None, ""),
        ("tools/src/run.py", "python", None, "tools.src.run"),
        ("src/util/index.ts", "typescript", None, "src.util"),
        ("types/globals.d.ts", "typescript", None, "types.globals"),
        ("web/App.tsx", "tsx", None, "web.App"),
        ("index.js", "javascript", None, "index"),
        ("internal/store/store.go", "go", "store", "internal.store"),
        ("main.go", "go", "main", "main"),
        ("src/main/java/com/acme/A.java", "java", "com.acme", "com.acme"),
        ("src/main/java/com/acme/A.java", "java", None, "src.main.java.com.acme"),
        ("src/lib.rs", "rust", None, ""),
        ("src/geometry/mod.rs", "rust", None, "geometry"),
        ("src/geometry/shapes.rs", "rust", None, "geometry.shapes"),
        ("crates/core/src/net/tcp.rs", "rust", None, "crates.core.net.tcp"),
        ("tests/it.rs", "rust", None, "tests.it"),
    ],
)
def test_module_path(path: str, language: str, package: str | None, expected: str) -> None:
    assert module_path(path, language, package) == expected


def test_go_file_at_the_root_is_qualified_by_its_package() -> None:
    result = parse_code("main.go", "package main\n\nfunc Run() {}\n", "go", "production")
    assert [d.qualified_name for d in result.definitions] == ["main.Run"]


def test_java_without_package_falls_back_to_directory() -> None:
    result = parse_code("app/Main.java", "class Main { void run() {} }\n", "java", "production")
    assert [d.qualified_name for d in result.definitions] == ["app.Main", "app.Main.run"]


def test_associated_types_stay_in_their_impl_header() -> None:
    source = (
        "struct Keys;\n\n"
        "impl Iterator for Keys {\n"
        "    type Item = String;\n\n"
        "    fn next(&mut self) -> Option<String> {\n"
        "        None\n"
        "    }\n"
        "}\n"
    )
    result = parse_code("src/keys.rs", source, "rust", "production")
    chunks = [(c.kind, c.start_line, c.end_line, c.symbol) for c in result.chunks]
    header = next(c for c in result.chunks if c.kind == "class_header" and c.start_line == 3)

    assert chunks == [
        ("class_header", 1, 1, "keys.Keys"),
        ("class_header", 3, 9, "keys.Keys"),
        ("definition", 6, 8, "keys.Keys.next"),
    ]
    assert "    type Item = String;" in header.text.split("\n")
    assert "keys.Keys.Item" in {d.qualified_name for d in result.definitions}
