"""The role of a file, and of a chunk within it, from conventions and content markers.

Roles are metadata that retrieval uses to down-weight (never to drop) tests, fakes,
archived docs, vendored and generated code. ``classify_path`` looks only at the path and
at the head of the file; the import graph ("unreferenced") is decided later, elsewhere.

Precedence, strongest first, when several conventions apply to one path::

    vendored > generated > deprecated > test_support > test > example > docs > config
    > production

Why this order: a vendored or generated file is never code the reviewer owns, even
inside ``tests/``; ``legacy/tests/test_x.py`` tests code on its way out; ``tests/fixtures/``
and ``conftest.py`` support tests rather than being tests; ``examples/tests/test_x.py`` is
a test; ``docs/examples/`` and ``docs_src/`` hold examples; a YAML file under ``docs/`` is
documentation build input. History files (CHANGELOG, CHANGES, HISTORY) are docs, not
deprecated, while documents under ``docs/archive/`` or ``docs/legacy/`` are deprecated.
Compat shims (``compat.py``, ``_compat.py``, ``compat/``) count as deprecated even where
they are live code, because a reviewer rarely wants them ranked above the implementation.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import PurePosixPath

from pr_context.models import Role

__all__ = ["MARKER_SCAN_BYTES", "MARKER_SCAN_LINES", "chunk_role", "classify_path",
           "is_history", "may_mark_deprecated"]

MARKER_SCAN_LINES = 30  # generated-code markers sit in a file's header comment
MARKER_SCAN_BYTES = 2_048

_VENDORED_DIRS = frozenset(
    {"vendor", "vendored", "_vendor", "third_party", "third-party", "thirdparty",
     "external", "extern", "node_modules", "site-packages"}
)
_GENERATED_DIRS = frozenset({"generated", "__generated__"})
_GENERATED_NAME = re.compile(
    r".*(?:_pb2(?:_grpc)?\.pyi?|\.pb\.(?:gw\.)?go|_pb\.(?:js|d\.ts|ts)|_grpc_pb\.(?:js|d\.ts)"
    r"|\.generated\.[^/]+|\.g\.dart|\.g\.cs|\.designer\.cs)"
    r"|zz_generated\..*"
)
_DEPRECATED_DIRS = frozenset(
    {"legacy", "deprecated", "archive", "archived", "old", "compat", "_compat"}
)
_DEPRECATED_NAME = re.compile(r".*compat\.py")  # compat.py, _compat.py, py2compat.py
_TEST_DIRS = frozenset({"tests", "test", "__tests__", "spec", "specs", "testing"})
_TEST_SUPPORT_DIRS = frozenset(
    {"fixtures", "fixture", "__fixtures__", "mocks", "__mocks__", "fakes", "factories",
     "testdata", "testutils", "test_utils", "test_helpers"}
)
_TEST_NAME = re.compile(
    r"test_.*\.py|.*_test\.py|tests\.py|.*_test\.go|.*\.(?:test|spec)\.[cm]?[jt]sx?"
    r"|.*(?:Test|Tests|IT)\.(?:java|kt)|Test[A-Z].*\.(?:java|kt)|.*_spec\.rb|.*_test\.rs"
)
_TEST_SUPPORT_NAME = re.compile(
    r"conftest\.py|.*_mocks?\.go|mocks?_.*\.(?:go|py)|fakes?_.*\.py|.*_fakes?\.py"
    r"|factories\.py|.*(?:Fake|Mock|Stub).*\.(?:java|kt)|.*\.mocks?\.[cm]?[jt]sx?"
    r"|(?:test_?|testing_?)(?:utils?|helpers?|support|fixtures)\.[a-z]+|setupTests\.[jt]s"
)
# JavaScript and TypeScript files in a test directory are tests by the runners'
# conventions (Jest ``__tests__``, mocha ``test/``) unless named like helpers; elsewhere a
# file in a test directory that is not named like a test (``helpers.py``) supports tests.
_TESTS_BY_LOCATION = frozenset({".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx"})
_HELPER_STEM = re.compile(r"(?i).*(?:helper|util|setup|support|fixture|mock|fake|stub|common).*")
# Changelogs and release notes, by file or folder name (CHANGES.rst, changelog/12.rst).
_HISTORY = re.compile(r"(?:^|/)(?:change(?:s|log)|history|news|release[-_]?notes?"
                      r"|newsfragments)(?:/|\.\w+$|$)", re.IGNORECASE)
_TEST_FRAMEWORK = re.compile(
    r"^[ \t]*(?:import|from)[ \t]+(?:unittest|pytest|nose2?|django\.test|hypothesis)\b"
    r"|\bTestCase\b", re.MULTILINE)
_PYTHON_TEST_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def test|^[ \t]*class Test",
                              re.MULTILINE)
# #[test], #[tokio::test], #[async_std::test]
_RUST_TEST_ATTRIBUTE = re.compile(r"^[ \t]*#\[(?:\w+::)*test\]", re.MULTILINE)
_EXAMPLE_DIRS = frozenset(
    {"examples", "example", "samples", "sample", "demo", "demos", "docs_src", "cookbook"}
)
_DOCS_DIRS = frozenset({"docs", "doc", "documentation"})
_DOC_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".rst", ".adoc"})
_DOC_NAME = re.compile(
    r"(?i)(?:readme|changes|changelog|history|news|authors|contributing|license|notice"
    r"|code_of_conduct|security)(?:\.(?:txt|md|rst|markdown|adoc))?"
)
_CONFIG_SUFFIXES = frozenset({".yml", ".yaml", ".toml", ".ini", ".cfg", ".json", ".conf"})
_CONFIG_NAME = re.compile(  # dotfiles, dependency lists and build files
    r"\..+|requirements.*\.txt|constraints.*\.txt|Makefile|Dockerfile.*|Justfile"
    r"|Procfile|CODEOWNERS|go\.mod|pom\.xml|build\.gradle(?:\.kts)?"
)

# Searched only in the comment lines of a file's header, so a docstring saying "returns
# an auto-generated id" does not make a file generated.
_GENERATED_MARKER = re.compile(r"@generated|DO NOT EDIT")  # Go: "Code generated ... DO NOT EDIT."
_GENERATED_HEADER = re.compile(
    r"(?i)(?:(?:this|the) (?:file|code|module) (?:is |was |has been )?)?"
    r"(?:auto[- ]?generated|automatically generated|generated (?:by|from|using|with))\b"
)
_COMMENT_START = ("#", "//", "/*", "*", "<!--", "--", ";", '"""', "'''", "%", "..")
_COMMENT_CHARS = " \t#/*;%-<!\"'."

_DEPRECATION_MARKER = re.compile(
    r"@deprecated\b|@Deprecated\b|#\[deprecated\b|^[ \t]*//[ \t]*Deprecated:|\.\. deprecated::",
    re.MULTILINE,
)
_DEPRECATION_WARNING = re.compile(
    r"^(?P<indent>[ \t]*)(?:warnings\.)?warn\((?s:.{0,400}?)"
    r"\b(?:(?:Pending)?DeprecationWarning|FutureWarning)\b",
    re.MULTILINE,
)
# Every marker and warning above contains one of these.
_DEPRECATION_WORDS = ("eprecat", "FutureWarning")
_PYTHON_DEF = re.compile(r"^(?P<indent>[ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]", re.MULTILINE)


def classify_path(path: str, text: str) -> Role:
    """The role of the file at ``path`` (repository-relative), given its decoded text.

    Only the first ``MARKER_SCAN_LINES`` lines within ``MARKER_SCAN_BYTES`` characters of
    ``text`` are read for markers, and the whole of it for a test framework in a file
    named like a test outside a test directory (pass ``""`` when the content is unknown).
    Pure.
    """
    pure = PurePosixPath(path)
    dirs = frozenset(part.lower() for part in pure.parts[:-1])
    if dirs & _VENDORED_DIRS:
        return "vendored"
    if _is_generated(pure.name, dirs, text):
        return "generated"
    if dirs & _DEPRECATED_DIRS or _DEPRECATED_NAME.fullmatch(pure.name):
        return "deprecated"
    return _test_role(pure, dirs, text) or _plain_role(pure, dirs)


def chunk_role(file_role: Role, chunk_text: str) -> Role:
    """``deprecated`` for a production or example chunk marked deprecated, else ``file_role``.

    Markers: ``@deprecated`` (Python decorator, JSDoc), ``@Deprecated`` (Java), Rust
    ``#[deprecated``, Go ``// Deprecated:``, ``.. deprecated::`` in a docstring, and a
    ``warnings.warn(..., DeprecationWarning | PendingDeprecationWarning | FutureWarning)``
    at the top level of the body. A warning issued inside an ``if`` (a deprecated
    *parameter* of a live function) does not make the whole chunk deprecated.
    """
    if file_role not in ("production", "example"):
        return file_role
    if _DEPRECATION_MARKER.search(chunk_text) or _warns_unconditionally(chunk_text):
        return "deprecated"
    return file_role


@lru_cache(maxsize=4_096)  # asked for every doc mention, by every changed symbol
def is_history(path: str) -> bool:
    """A changelog or release notes (docs role): a record of the past, not a description
    of what the code does now."""
    return bool(_HISTORY.search(path))


def may_mark_deprecated(text: str) -> bool:
    """False when no chunk cut from ``text`` can carry a deprecation marker: one cheap
    scan of a whole file spares the per-chunk scans of ``chunk_role``."""
    return any(word in text for word in _DEPRECATION_WORDS)


def _is_generated(name: str, dirs: frozenset[str], text: str) -> bool:
    if dirs & _GENERATED_DIRS or _GENERATED_NAME.fullmatch(name):
        return True
    head = text[:MARKER_SCAN_BYTES].split("\n", MARKER_SCAN_LINES)[:MARKER_SCAN_LINES]
    return any(_is_generated_comment(line.lstrip()) for line in head)


def _is_generated_comment(line: str) -> bool:
    if not line.startswith(_COMMENT_START):
        return False
    comment = line.lstrip(_COMMENT_CHARS)
    return bool(_GENERATED_MARKER.search(comment) or _GENERATED_HEADER.match(comment))


def _test_role(pure: PurePosixPath, dirs: frozenset[str], text: str) -> Role | None:
    name = pure.name
    if dirs & _TEST_SUPPORT_DIRS:
        return "test_support"
    if _TEST_SUPPORT_NAME.fullmatch(name):
        return "test" if _defines_python_tests(name, text) else "test_support"
    if _TEST_NAME.fullmatch(name) and _named_test_is_test(name, dirs, text):
        return "test"
    if not dirs & _TEST_DIRS:
        return None
    if pure.suffix == ".rs":
        # Each file directly in tests/ is an integration-test crate; deeper files are its
        # modules: tests themselves when they hold #[test] functions, else helpers.
        is_test = pure.parent.name == "tests" or _RUST_TEST_ATTRIBUTE.search(text)
        return "test" if is_test else "test_support"
    if pure.suffix in _TESTS_BY_LOCATION and not _HELPER_STEM.fullmatch(pure.stem):
        return "test"
    return "test_support"


def _named_test_is_test(name: str, dirs: frozenset[str], text: str) -> bool:
    """A Python file named like a test outside a test directory, read for evidence.

    ``tests.py`` is Django's test module, which imports ``django.test`` or ``unittest``;
    elsewhere it is a module *of* tests in another sense (jinja's template tests behind
    ``is defined``). A ``test_*.py`` among examples may be a script that prints a result.
    Both are tests only when the whole text imports a test framework, or, among examples,
    defines a test.
    """
    if dirs & _TEST_DIRS or not name.endswith(".py"):
        return True
    if name == "tests.py":
        return bool(_TEST_FRAMEWORK.search(text))
    if dirs & _EXAMPLE_DIRS:
        return bool(_TEST_FRAMEWORK.search(text) or _PYTHON_TEST_DEF.search(text))
    return True


def _defines_python_tests(name: str, text: str) -> bool:
    """``test_utils.py`` is often the tests *of* a ``utils`` module: pytest collects it."""
    return name.startswith("test_") and name.endswith(".py") and "def test_" in text


def _plain_role(pure: PurePosixPath, dirs: frozenset[str]) -> Role:
    if dirs & _EXAMPLE_DIRS:
        return "example"
    suffix = pure.suffix.lower()
    # Go builds every .go file of a folder into one package: cobra's doc/man_docs.go is
    # the code of package doc, the man page generator, not documentation.
    in_docs_folder = bool(dirs & _DOCS_DIRS) and suffix != ".go"
    if in_docs_folder or suffix in _DOC_SUFFIXES or _DOC_NAME.fullmatch(pure.name):
        return "docs"
    if suffix in _CONFIG_SUFFIXES or _CONFIG_NAME.fullmatch(pure.name):
        return "config"
    return "production"


def _warns_unconditionally(chunk_text: str) -> bool:
    """A deprecation warning at the top level of the innermost enclosing body."""
    warning = _DEPRECATION_WARNING.search(chunk_text)
    if warning is None:
        return False
    indent = warning.group("indent")
    enclosing = [
        found
        for found in _PYTHON_DEF.finditer(chunk_text, 0, warning.start())
        if len(found.group("indent")) < len(indent)
    ]
    if not enclosing:
        return indent == ""
    return indent == _body_indent(chunk_text[enclosing[-1].end() :])


def _body_indent(after_keyword: str) -> str | None:
    """The indentation of the first body line of the ``def``/``class`` just begun."""
    lines = iter(after_keyword.split("\n"))
    for line in lines:  # skip the rest of the signature, up to its closing colon
        if line.split("#", 1)[0].rstrip().endswith(":"):
            break
    for line in lines:
        stripped = line.lstrip()
        if stripped and not stripped.startswith("#"):
            return line[: len(line) - len(stripped)]
    return None
