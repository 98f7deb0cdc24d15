from __future__ import annotations

from collections.abc import Callable

import pytest

from pr_context.changes import ChangedSymbol, SymbolChanges, changed_symbols_between
from pr_context.diff import FileDiff, parse_patch
from pr_context.git import open_repository
from pr_context.models import Sha
from pr_context.signatures import call_arguments, parameter_changes, python_call_break
from tests.conftest import GitRepo

MakeRepo = Callable[..., GitRepo]

PY_BASE = '''\
def keep(a):
    return a + 1


def gone():
    return 0


def sig(a):
    return a


def doc(a):
    # add one
    return a + 1


def oldName(x):
    total = x * 2
    return total


class Box:
    def method(self):
        return 1

    def other(self):
        return 2
'''
PY_HEAD = '''\
def keep(a):
    return a + 2


def sig(a, timeout):
    return a


def doc(a):
    # add one to a
    return a + 1


def newName(x):
    total = x * 2
    return total


class Box:
    def method(self):
        return 10

    def other(self):
        return 2


def fresh():
    return 3
'''

TS_BASE = '''\
export function keep(a: number): number {
  return a + 1;
}

export function gone(): number {
  return 0;
}

export function sig(a: number): number {
  return a;
}

export function doc(a: number): number {
  // add one
  return a + 1;
}

export function oldName(x: number): number {
  const total = x * 2;
  return total;
}

export class Box {
  method(): number {
    return 1;
  }

  other(): number {
    return 2;
  }
}
'''
TS_HEAD = '''\
export function keep(a: number): number {
  return a + 2;
}

export function sig(a: number, timeout: number): number {
  return a;
}

export function doc(a: number): number {
  // add one to a
  return a + 1;
}

export function newName(x: number): number {
  const total = x * 2;
  return total;
}

export class Box {
  method(): number {
    return 10;
  }

  other(): number {
    return 2;
  }
}

export function fresh(): number {
  return 3;
}
'''

GO_BASE = '''\
package pkg

func keep(a int) int {
	return a + 1
}

func gone() int {
	return 0
}

func sig(a int) int {
	return a
}

func doc(a int) int {
	// add one
	return a + 1
}

func oldName(x int) int {
	total := x * 2
	return total
}

type Box struct{}

func (b *Box) method() int {
	return 1
}

func (b *Box) other() int {
	return 2
}
'''
GO_HEAD = '''\
package pkg

func keep(a int) int {
	return a + 2
}

func sig(a int, timeout int) int {
	return a
}

func doc(a int) int {
	// add one to a
	return a + 1
}

func newName(x int) int {
	total := x * 2
	return total
}

type Box struct{}

func (b *Box) method() int {
	return 10
}

func (b *Box) other() int {
	return 2
}

func fresh() int {
	return 3
}
'''

JAVA_BASE = '''\
package p;

public class Mod {
    static int keep(int a) {
        return a + 1;
    }

    static int gone() {
        return 0;
    }

    static int sig(int a) {
        return a;
    }

    static int doc(int a) {
        // add one
        return a + 1;
    }

    static int oldName(int x) {
        int total = x * 2;
        return total;
    }

    static class Box {
        int method() {
            return 1;
        }

        int other() {
            return 2;
        }
    }
}
'''
JAVA_HEAD = '''\
package p;

public class Mod {
    static int keep(int a) {
        return a + 2;
    }

    static int sig(int a, int timeout) {
        return a;
    }

    static int doc(int a) {
        // add one to a
        return a + 1;
    }

    static int newName(int x) {
        int total = x * 2;
        return total;
    }

    static class Box {
        int method() {
            return 10;
        }

        int other() {
            return 2;
        }
    }

    static int fresh() {
        return 3;
    }
}
'''

# language -> (path, base text, head text, qualified-name prefix, Box's qualified name)
SCENARIOS = {
    "python": ("pkg/mod.py", PY_BASE, PY_HEAD, "pkg.mod.", "pkg.mod.Box"),
    "typescript": ("src/mod.ts", TS_BASE, TS_HEAD, "src.mod.", "src.mod.Box"),
    "go": ("pkg/mod.go", GO_BASE, GO_HEAD, "pkg.", "pkg.Box"),
    "java": ("src/main/java/p/Mod.java", JAVA_BASE, JAVA_HEAD, "p.Mod.", "p.Mod.Box"),
}
LANGS = sorted(SCENARIOS)
SIGNATURES = {
    "python": ("def sig(a)", "def sig(a, timeout)"),
    "typescript": ("export function sig(a: number): number",
                   "export function sig(a: number, timeout: number): number"),
    "go": ("func sig(a int) int", "func sig(a int, timeout int) int"),
    "java": ("static int sig(int a)", "static int sig(int a, int timeout)"),
}


def _between(repo: GitRepo, base: str, head: str, max_files: int = 500) -> SymbolChanges:
    return changed_symbols_between(open_repository(repo.path), Sha(base), Sha(head), max_files)


def _edit(make_repo: MakeRepo, base: dict[str, str | bytes],
          head: dict[str, str | bytes | None]) -> SymbolChanges:
    repo = make_repo(base)
    first = repo.commit("base") if not base else repo.git("rev-parse", "HEAD").strip()
    for path, content in head.items():
        if content is None:
            repo.remove(path)
        else:
            repo.write(path, content)
    return _between(repo, first, repo.commit("head"))


def _scenario(make_repo: MakeRepo, lang: str) -> tuple[dict[str, ChangedSymbol], str]:
    path, base, head, prefix, _box = SCENARIOS[lang]
    result = _edit(make_repo, {path: base}, {path: head})
    assert result.skipped_files == ()
    return {s.qualified_name: s for s in result.symbols}, prefix


@pytest.mark.parametrize("lang", LANGS)
def test_scenario_reports_exactly_the_changed_symbols(make_repo: MakeRepo, lang: str) -> None:
    symbols, prefix = _scenario(make_repo, lang)
    box = SCENARIOS[lang][4]
    assert {q: s.change for q, s in symbols.items()} == {
        f"{prefix}keep": "modified",
        f"{prefix}gone": "removed",
        f"{prefix}sig": "signature_changed",
        f"{prefix}doc": "modified",
        f"{prefix}newName": "renamed",
        f"{box}.method": "modified",
        f"{prefix}fresh": "added",
    }


@pytest.mark.parametrize("lang", LANGS)
def test_body_edit_is_a_behaviour_change_on_the_edited_line(
    make_repo: MakeRepo, lang: str
) -> None:
    symbols, prefix = _scenario(make_repo, lang)
    keep = symbols[f"{prefix}keep"]
    assert (keep.cosmetic, keep.parameter_changes) == (False, ())
    assert keep.changed_lines == (keep.start_line + 1,)
    # git may also list the closing brace of the removed function below as removed here
    assert keep.removed_lines[0] == keep.start_line + 1


@pytest.mark.parametrize("lang", LANGS)
def test_added_and_removed_symbols(make_repo: MakeRepo, lang: str) -> None:
    symbols, prefix = _scenario(make_repo, lang)
    fresh, gone = symbols[f"{prefix}fresh"], symbols[f"{prefix}gone"]
    assert fresh.changed_lines == tuple(range(fresh.start_line, fresh.end_line + 1))
    assert (fresh.old_signature, fresh.new_signature is not None) == (None, True)
    # git may keep a closing brace of the removed function and drop the one above it
    assert gone.start_line in gone.changed_lines
    assert set(gone.changed_lines) <= set(range(gone.start_line, gone.end_line + 1))
    assert (gone.old_signature is not None, gone.new_signature) == (True, None)


@pytest.mark.parametrize("lang", LANGS)
def test_parameter_added_is_a_signature_change(make_repo: MakeRepo, lang: str) -> None:
    symbols, prefix = _scenario(make_repo, lang)
    sig = symbols[f"{prefix}sig"]
    assert (sig.old_signature, sig.new_signature) == SIGNATURES[lang]
    assert sig.parameter_changes == ("added param timeout",)
    assert sig.cosmetic is False


@pytest.mark.parametrize("lang", LANGS)
def test_comment_only_edit_is_cosmetic(make_repo: MakeRepo, lang: str) -> None:
    symbols, prefix = _scenario(make_repo, lang)
    doc = symbols[f"{prefix}doc"]
    assert (doc.change, doc.cosmetic) == ("modified", True)
    assert doc.changed_lines == (doc.start_line + 1,)


@pytest.mark.parametrize("lang", LANGS)
def test_method_edit_reports_the_method_not_the_class(make_repo: MakeRepo, lang: str) -> None:
    symbols, _prefix = _scenario(make_repo, lang)
    box = SCENARIOS[lang][4]
    assert box not in symbols
    assert f"{box}.other" not in symbols
    method = symbols[f"{box}.method"]
    assert (method.symbol, method.kind, method.cosmetic) == ("method", "method", False)


@pytest.mark.parametrize("lang", LANGS)
def test_same_body_under_a_new_name_is_a_rename(make_repo: MakeRepo, lang: str) -> None:
    symbols, prefix = _scenario(make_repo, lang)
    renamed = symbols[f"{prefix}newName"]
    assert renamed.old_qualified_name == f"{prefix}oldName"
    assert (renamed.symbol, renamed.old_path, renamed.parameter_changes) == ("newName", None, ())
    assert f"{prefix}oldName" not in symbols


@pytest.mark.parametrize("lang", LANGS)
def test_symbols_are_sorted_by_path_then_line(make_repo: MakeRepo, lang: str) -> None:
    path, base, head, _prefix, _box = SCENARIOS[lang]
    symbols = _edit(make_repo, {path: base}, {path: head}).symbols
    keys = [(s.path, s.start_line) for s in symbols]
    assert keys == sorted(keys)
    assert {s.path for s in symbols} == {path}


MOVES = {
    "python": ("pkg/a.py", "lib/b.py",
               "def f(a):\n    return a\n\n\ndef g(b):\n    x = b * 2\n    y = x + 1\n"
               "    z = y - 3\n    return z\n", "x = b * 2", "x = b * 5",
               [("b.f", "renamed", "pkg.a.f", ()), ("b.g", "renamed", "pkg.a.g", (6,))]),
    "typescript": ("src/a.ts", "lib/b.ts",
                   "export function f(a: number): number {\n  return a;\n}\n\n"
                   "export function g(b: number): number {\n  const x = b * 2;\n"
                   "  const y = x + 1;\n  const z = y - 3;\n  return z;\n}\n",
                   "b * 2", "b * 5",
                   [("lib.b.f", "renamed", "src.a.f", ()),
                    ("lib.b.g", "renamed", "src.a.g", (6,))]),
    "go": ("pkg/a.go", "pkg/b.go",
           "package pkg\n\nfunc f(a int) int {\n\treturn a\n}\n\nfunc g(b int) int {\n"
           "\tx := b * 2\n\ty := x + 1\n\tz := y - 3\n\treturn z\n}\n", "b * 2", "b * 5",
           [("pkg.g", "modified", None, (8,))]),
    "java": ("src/p/Util.java", "src/q/Util.java",
             "package p;\n\nclass Util {\n    int f(int a) {\n        return a;\n    }\n\n"
             "    int g(int b) {\n        int x = b * 2;\n        int y = x + 1;\n"
             "        int z = y - 3;\n        return z;\n    }\n}\n",
             "b * 2", "b * 5",
             [("q.Util", "renamed", "p.Util", ()), ("q.Util.f", "renamed", "p.Util.f", ()),
              ("q.Util.g", "renamed", "p.Util.g", (9,))]),
}


@pytest.mark.parametrize("lang", LANGS)
def test_moved_file_with_an_edit(make_repo: MakeRepo, lang: str) -> None:
    old, new, text, before, after, expected = MOVES[lang]
    head = text.replace(before, after)
    if lang == "java":
        head = head.replace("package p;", "package q;")
    result = _edit(make_repo, {old: text}, {old: None, new: head})
    assert [(s.qualified_name, s.change, s.old_qualified_name, s.changed_lines)
            for s in result.symbols] == expected
    assert {(s.path, s.old_path) for s in result.symbols} == {(new, old)}


HELPERS = ("import os\n\n\n"
           "def render_mode(options):\n"
           "    if options.get('raw'):\n"
           "        return 'raw'\n"
           "    return os.environ.get('MODE', 'html')\n\n\n"
           "def keep():\n    return 1\n")


def test_a_function_moved_to_another_file_is_a_rename(make_repo: MakeRepo) -> None:
    moved = "def render_mode(options):\n    if options.get('raw'):\n        return 'raw'\n" \
            "    return os.environ.get('MODE', 'html')\n"
    result = _edit(make_repo, {"pkg/documenters.py": HELPERS, "pkg/generate.py": "X = 1\n"},
                   {"pkg/documenters.py": "def keep():\n    return 1\n",
                    "pkg/generate.py": "import os\n\nX = 1\n\n\n" + moved})
    [symbol] = result.symbols
    assert (symbol.qualified_name, symbol.change) == ("pkg.generate.render_mode", "renamed")
    assert (symbol.old_qualified_name, symbol.old_path) == ("pkg.documenters.render_mode",
                                                            "pkg/documenters.py")
    assert symbol.path == "pkg/generate.py" and symbol.start_line == 6


def test_a_different_function_of_the_same_name_elsewhere_is_no_move(
        make_repo: MakeRepo) -> None:
    other = "def render_mode(config, fallback):\n    return fallback if config is None " \
            "else config.mode\n"
    result = _edit(make_repo, {"pkg/documenters.py": HELPERS, "pkg/generate.py": "X = 1\n"},
                   {"pkg/documenters.py": "def keep():\n    return 1\n",
                    "pkg/generate.py": "X = 1\n\n\n" + other})
    assert [(s.qualified_name, s.change) for s in result.symbols] == [
        ("pkg.documenters.render_mode", "removed"), ("pkg.generate.render_mode", "added")]


@pytest.mark.parametrize(
    ("before", "after", "changes"),
    [
        ("def f(a, retries=3):", "def f(a, retries=5):", ("default of retries: 3 -> 5",)),
        ("def f(a) -> str:", "def f(a) -> bytes:", ("return annotation: str -> bytes",)),
        ("def f(a, b):", "def f(a, count):", ("renamed param b -> count",)),
        ("def f(a, b):", "def f(b, a):", ("reordered params",)),
        ("def f(a, retries=3):", "def f(a):", ("removed param retries",)),
        ("def f(a: int):", "def f(a: str):", ("annotation of a: int -> str",)),
        ("def f(a):", "def f(a, timeout=None) -> None:",
         ("added param timeout", "return annotation: none -> None")),
    ],
)
def test_python_signature_changes(
    make_repo: MakeRepo, before: str, after: str, changes: tuple[str, ...]
) -> None:
    body = "\n    return a\n"
    [symbol] = _edit(make_repo, {"m.py": before + body}, {"m.py": after + body}).symbols
    assert (symbol.qualified_name, symbol.change) == ("m.f", "signature_changed")
    assert (symbol.old_signature, symbol.new_signature) == (before[:-1], after[:-1])
    assert symbol.parameter_changes == changes


PY_FUNC = 'def f(a):\n    """Add one."""\n    if a:\n        a += 1\n    return a\n'


@pytest.mark.parametrize(
    ("head", "cosmetic"),
    [
        ('def f(a):\n    """Add one."""\n\n    if a:\n        a += 1   \n    return a\n', True),
        ('def f(a):\n    """Add one to a."""\n    if a:\n        a += 1\n    return a\n', True),
        ('def f(a):\n    """Add one."""\n    if a:  # odd\n        a += 1\n    return a\n', True),
        ('def f(a):\n    """Add one."""\n    if a:\n        a += 1\n        return a\n', False),
        ('def f(a):\n    """Add one."""\n    if a:\n        a += 1\n    return -a\n', False),
    ],
    ids=["whitespace", "docstring", "comment", "indentation-moves-a-statement", "code"],
)
def test_python_cosmetic_edits(make_repo: MakeRepo, head: str, cosmetic: bool) -> None:
    [symbol] = _edit(make_repo, {"m.py": PY_FUNC}, {"m.py": head}).symbols
    assert (symbol.change, symbol.cosmetic) == ("modified", cosmetic)


def test_empty_diff_reports_nothing(make_repo: MakeRepo) -> None:
    repo = make_repo({"m.py": PY_FUNC})
    head = repo.git("rev-parse", "HEAD").strip()
    assert _between(repo, head, head) == SymbolChanges([], (), None)


def test_binary_files_are_ignored(make_repo: MakeRepo) -> None:
    result = _edit(
        make_repo,
        {"logo.png": b"\x89PNG\x00\x01", "blob.py": b"\x00\x01\x02" * 10, "m.py": PY_FUNC},
        {"logo.png": b"\x89PNG\x00\x02", "blob.py": b"\x00\x01\x03" * 10,
         "m.py": PY_FUNC.replace("+= 1", "+= 2")},
    )
    assert [(s.path, s.qualified_name, s.change) for s in result.symbols] == [
        ("m.py", "m.f", "modified")]
    assert result.skipped_files == ("blob.py",)
    assert result.reason == "1 binary or oversized file(s) not parsed"


def test_syntax_error_at_head_still_reports_what_parses(make_repo: MakeRepo) -> None:
    base = PY_FUNC + "\n\ndef g():\n    return 1\n"
    head = PY_FUNC.replace("+= 1", "+= 2") + "\n\ndef g(:\n    return 1\n"
    symbols = _edit(make_repo, {"m.py": base}, {"m.py": head}).symbols
    f = next(s for s in symbols if s.qualified_name == "m.f")
    assert (f.change, f.changed_lines) == ("modified", (4,))


def test_whole_file_added_and_deleted(make_repo: MakeRepo) -> None:
    result = _edit(make_repo, {"old.py": "def a():\n    return 1\n"},
                   {"old.py": None, "new.py": "def b():\n    return 2\n"})
    assert [(s.path, s.qualified_name, s.change, s.changed_lines) for s in result.symbols] == [
        ("new.py", "new.b", "added", (1, 2)), ("old.py", "old.a", "removed", (1, 2))]


def test_files_over_the_cap_are_skipped_with_a_reason(make_repo: MakeRepo) -> None:
    repo = make_repo({"a.py": "def a():\n    return 1\n", "b.py": "def b():\n    return 1\n"})
    base = repo.git("rev-parse", "HEAD").strip()
    repo.write("a.py", "def a():\n    return 2\n")
    repo.write("b.py", "def b():\n    return 2\n")
    result = _between(repo, base, repo.commit(), max_files=1)
    assert [s.qualified_name for s in result.symbols] == ["a.a"]
    assert result.skipped_files == ("b.py",)
    assert result.reason == "analysed 1 of 2 changed code files (at most 1)"


def test_moving_a_method_in_the_file_without_editing_it_reports_nothing(
    make_repo: MakeRepo,
) -> None:
    base = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
    head = "def b():\n    return 2\n\n\ndef a():\n    return 1\n"
    assert _edit(make_repo, {"m.py": base}, {"m.py": head}).symbols == []


def test_edited_doc_comment_belongs_to_the_function_below_it(make_repo: MakeRepo) -> None:
    base = "package p\n\n// F adds.\nfunc F(a int) int {\n\treturn a\n}\n"
    head = base.replace("adds.", "adds one.")
    [symbol] = _edit(make_repo, {"p/f.go": base}, {"p/f.go": head}).symbols
    assert (symbol.qualified_name, symbol.cosmetic, symbol.changed_lines) == ("p.F", True, (3,))


NESTED_PY = '''\
import functools


def deco(f):
    @functools.wraps(f)
    def wrapper(*args):
        return f(*args)
    return wrapper


class Box:
    def items(self):
        def gen():
            yield 1
        return list(gen())

    def other(self):
        class Local:
            def value(self):
                return 1
        return Local().value()
'''


@pytest.mark.parametrize(("old", "new", "outer", "inside", "lines"), [
    # the closure a decorator returns: its callers call deco
    ("return f(*args)", "return f(*args) + 1", "m.deco", ("m.deco.wrapper",), (7,)),
    # a generator defined in a method
    ("yield 1", "yield 2", "m.Box.items", ("m.Box.items.gen",), (14,)),
    # a method of a class local to a method, at any depth
    ("return 1\n", "return 2\n", "m.Box.other",
     ("m.Box.other.Local.value",), (20,)),
    # a new nested helper
    ("    return wrapper\n", "    def spare():\n        return 0\n    return wrapper\n",
     "m.deco", ("m.deco.spare",), (8, 9)),
])
def test_a_change_inside_a_nested_function_is_reported_on_the_enclosing_function(
    make_repo: MakeRepo, old: str, new: str, outer: str, inside: tuple[str, ...],
    lines: tuple[int, ...],
) -> None:
    head = NESTED_PY.replace(old, new, 1)
    [symbol] = _edit(make_repo, {"m.py": NESTED_PY}, {"m.py": head}).symbols
    assert (symbol.qualified_name, symbol.change, symbol.changed_inside) == (
        outer, "modified", inside)
    assert symbol.changed_lines == lines
    assert symbol.kind in {"function", "method"}


def test_a_nested_change_adds_to_the_enclosing_functions_own_change(
        make_repo: MakeRepo) -> None:
    head = NESTED_PY.replace("def deco(f):", "def deco(f, extra=None):").replace(
        "return f(*args)", "return f(*args) + 1")
    [symbol] = _edit(make_repo, {"m.py": NESTED_PY}, {"m.py": head}).symbols
    assert (symbol.qualified_name, symbol.change) == ("m.deco", "signature_changed")
    assert symbol.parameter_changes == ("added param extra",)
    assert symbol.changed_inside == ("m.deco.wrapper",)


def test_a_removed_nested_function_is_a_change_of_its_function(make_repo: MakeRepo) -> None:
    head = NESTED_PY.replace("        def gen():\n            yield 1\n", "").replace(
        "list(gen())", "[1]")
    [symbol] = _edit(make_repo, {"m.py": NESTED_PY}, {"m.py": head}).symbols
    assert (symbol.qualified_name, symbol.change) == ("m.Box.items", "modified")
    assert symbol.changed_inside == ("m.Box.items.gen",)
    assert symbol.removed_lines == (13, 14, 15)


@pytest.mark.parametrize(("path", "base", "old", "new", "outer"), [
    ("src/m.ts", "export function outer(a: number): number {\n"
                 "  const inner = (x: number) => x + 1;\n  return inner(a);\n}\n",
     "x + 1", "x + 2", "src.m.outer"),
    ("src/m.rs", "fn outer(a: i32) -> i32 {\n    fn helper(y: i32) -> i32 { y * 2 }\n"
                 "    helper(a)\n}\n", "y * 2", "y * 3", "m.outer"),
])
def test_nested_functions_fold_into_their_function_in_other_languages(
    make_repo: MakeRepo, path: str, base: str, old: str, new: str, outer: str,
) -> None:
    [symbol] = _edit(make_repo, {path: base}, {path: base.replace(old, new)}).symbols
    assert (symbol.qualified_name, symbol.change, len(symbol.changed_inside)) == (
        outer, "modified", 1)


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ("", []),
        ("diff --git a/m.py b/n.py\nsimilarity index 100%\nrename from m.py\nrename to n.py\n",
         [FileDiff("n.py", "m.py", "renamed", frozenset(), frozenset())]),
        ("diff --git a/x.png b/x.png\nindex 1..2 100644\n"
         "Binary files a/x.png and b/x.png differ\n",
         [FileDiff("x.png", None, "modified", frozenset(), frozenset(), binary=True)]),
        ("diff --git a/m.py b/m.py\nindex 1..2 100644\n--- a/m.py\n+++ b/m.py\n"
         "@@ -2 +2,2 @@\n-    return a\n+    return b\n+    # done\n",
         [FileDiff("m.py", None, "modified", frozenset({2}), frozenset({2, 3}))]),
        ("diff --git a/m.py b/m.py\ndeleted file mode 100644\nindex 1..0\n--- a/m.py\n"
         "+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n",
         [FileDiff("m.py", None, "deleted", frozenset({1}), frozenset())]),
    ],
    ids=["empty", "pure-rename", "binary", "modified", "deleted"],
)
def test_parse_patch(patch: str, expected: list[FileDiff]) -> None:
    assert parse_patch(patch) == expected


@pytest.mark.parametrize(
    ("lang", "old", "new", "name", "changes"),
    [
        ("typescript", "function f(a: number, b = 2): string",
         "function f(a: number, b = 3): number", "f",
         ("default of b: 2 -> 3", "return annotation: string -> number")),
        ("typescript", "const g = (a: number) =>",
         "const g = (a: number, cb: (x: number) => void) =>", "g", ("added param cb",)),
        ("go", "func F(a, b int) (int, error)", "func F(a int, b int) (int, error)", "F", ()),
        ("go", "func (c *C) M(x int) int", "func (c *C) M(x int64) int", "M",
         ("annotation of x: int -> int64",)),
        ("java", "public int m(int x, String y)",
         "public long m(final int x, @Nullable String y, Map<String, Integer> z)", "m",
         ("added param z", "return annotation: int -> long")),
        ("rust", "pub fn f(&self, x: u8) -> u8", "pub fn f(&mut self, x: u8) -> Option<u8>", "f",
         ("return annotation: u8 -> Option<u8>",)),
        ("python", "def f(self, a: dict[str, int] = {}, *, k=1)",
         "def f(self, a: dict[str,int] = {}, *, k=1)", "f", ()),
    ],
)
def test_parameter_changes_across_languages(
    lang: str, old: str, new: str, name: str, changes: tuple[str, ...]
) -> None:
    assert parameter_changes(old, name, new, name, lang) == changes


def test_java_overloads_pair_by_signature(make_repo: MakeRepo) -> None:
    base = ("class A {\n    int m(int a) {\n        return a;\n    }\n\n"
            "    int m(String s) {\n        return 1;\n    }\n}\n")
    head = base.replace("m(String s)", "m(String s, int n)")
    [symbol] = _edit(make_repo, {"A.java": base}, {"A.java": head}).symbols
    assert (symbol.qualified_name, symbol.change, symbol.start_line) == (
        "A.m", "signature_changed", 6)
    assert symbol.parameter_changes == ("added param n",)


@pytest.mark.parametrize(("path", "base", "head", "name", "lines"), [
    ("pkg/m.py",
     "from typing import overload\n\n\n@overload\ndef f(x: int) -> int: ...\n\n\n"
     "@overload\ndef f(x: str) -> str: ...\n\n\ndef f(x):\n    return x\n",
     "from typing import overload\n\n\n@overload\ndef f(x: int, y: int = 0) -> int: ...\n\n\n"
     "@overload\ndef f(x: str, y: int = 0) -> str: ...\n\n\ndef f(x, y=0):\n    return x\n",
     "pkg.m.f", (4, 13)),
    ("src/g.ts",
     "export function g(a: number): number;\nexport function g(a: string): string;\n"
     "export function g(a: any): any {\n  return a;\n}\n",
     "export function g(a: number, b?: number): number;\n"
     "export function g(a: string, b?: number): string;\n"
     "export function g(a: any, b?: number): any {\n  return a;\n}\n",
     "src.g.g", (1, 5)),
])
def test_overloads_of_one_function_are_one_symbol(
        make_repo: MakeRepo, path: str, base: str, head: str, name: str,
        lines: tuple[int, int]) -> None:
    [symbol] = _edit(make_repo, {path: base}, {path: head}).symbols
    assert (symbol.qualified_name, symbol.change) == (name, "signature_changed")
    assert (symbol.start_line, symbol.end_line) == lines
    assert symbol.parameter_changes == ("added param y",) if path.endswith(".py") else (
        "added param b",)


# -- the breaking-change radar: does a call still fit the new signature? ---------------------

OLD_SESSION = "def create_session(self, user, token, retries=3, *, timeout=10):"


@pytest.mark.parametrize(("call", "new", "problem"), [
    ("create_session(u, t)", "def create_session(self, user, token):", None),
    ("create_session(u, t, retries=5)", "def create_session(self, user, token):",
     "passes retries=, which the new signature does not take"),
    ("create_session(u, t, 5)", "def create_session(self, user, token):",
     "passes 3 positional arguments; the new signature takes 2"),
    ("create_session(u, t)", "def create_session(self, token, user, retries=3):",
     "argument 1 now binds token, not user"),
    ("create_session(user=u, token=t)", "def create_session(self, token, user, retries=3):",
     None),
    ("create_session(u, t)", "def create_session(self, user, token, retries=3, *, scope):",
     "does not pass scope, which is now required"),
    ("create_session(u, t)", "def create_session(self, user, token, retries=1):",
     "relies on the default of retries, which changed"),
    ("create_session(u, t, retries=2)", "def create_session(self, user, token, retries=1):",
     None),
    ("create_session(u, t, timeout=1)", "def create_session(self, user, token, **options):",
     None),
    ("create_session(*args)", "def create_session(self, user, token):",
     "passes *args or **kwargs, which may fill a changed parameter"),
    ("create_session(\n    u,\n    t,\n    retries=f(a, b=1),\n)",
     "def create_session(self, user, token):",
     "passes retries=, which the new signature does not take"),
])
def test_python_call_break(call: str, new: str, problem: str | None) -> None:
    arguments = call_arguments(call)
    assert arguments is not None
    assert python_call_break(arguments, OLD_SESSION, new, "create_session") == problem


def test_call_arguments_of_a_reference_that_is_not_a_call() -> None:
    assert call_arguments("create_session, other)") is None
    assert call_arguments("create_session") is None
    assert call_arguments("obj.create_session (1, x == 2, k=v)") is not None


def test_a_hunk_that_empties_the_top_of_a_file_is_no_deletion(make_repo: MakeRepo) -> None:
    result = _edit(make_repo, {"pkg/m.py": "import os\n\n\ndef gone():\n    return os\n\n\n"
                                           "def keep():\n    return 1\n"},
                   {"pkg/m.py": "def keep():\n    return 1\n"})
    assert [(s.qualified_name, s.change) for s in result.symbols] == [("pkg.m.gone", "removed")]
