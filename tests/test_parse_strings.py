"""Message templates: string literals and format templates of code, values as wildcards."""

from __future__ import annotations

import warnings

import pytest

from pr_context.parse import parse_file
from pr_context.parse.code_strings import PLACEHOLDER

P = PLACEHOLDER

CASES = [
    ("python", "a.py",
     'def f(a, c):\n    """A docstring is no message."""\n'
     '    x = f"bad value {a!r} for this"\n'
     '    y = "a %s b and %(k)d more things" % c\n'
     '    z = "{0} is not valid {name}".format(1, name=2)\n'
     '    w = ("abc def "\n         "ghi jkl")\n'
     '    raise ValueError("Could not " + str(c) + " the thing")\n',
     [(3, f"bad value {P} for this"), (4, f"a {P} b and {P} more things"),
      (5, f"{P} is not valid {P}"), (6, "abc def ghi jkl"),
      (8, f"Could not {P} the thing")]),
    ("javascript", "a.js",
     "'use strict';\nfunction f(a, b) {\n  const m = `bad ${a} here now`;\n"
     '  throw new Error("cannot read " + b + " from disk");\n}\n',
     [(3, f"bad {P} here now"), (4, f"cannot read {P} from disk")]),
    ("typescript", "a.ts",
     "export function f(a: string): never {\n  throw new Error(`no such key: ${a} here`);\n}\n",
     [(2, f"no such key: {P} here")]),
    ("go", "a.go",
     'package x\n\nfunc f() error {\n\treturn fmt.Errorf("bad %s here: %w", a, err)\n}\n',
     [(4, f"bad {P} here: {P}")]),
    ("java", "A.java",
     'class A {\n  void f(int x) {\n    throw new IllegalArgumentException("bad " + x + '
     '" here now");\n  }\n}\n',
     [(3, f"bad {P} here now")]),
    ("rust", "a.rs",
     'fn f(x: u32) {\n    panic!("value {} is out of range", x);\n}\n',
     [(2, f"value {P} is out of range")]),
]


@pytest.mark.parametrize(("language", "path", "source", "expected"), CASES,
                         ids=[c[0] for c in CASES])
def test_literals_and_templates_become_messages_with_placeholders(
        language: str, path: str, source: str, expected: list[tuple[int, str]]) -> None:
    parsed = parse_file(path, source, language, "production")
    assert [(m.line, m.template) for m in parsed.messages] == expected


def test_keys_paths_and_short_literals_are_no_messages() -> None:
    source = ('KEY = "invalid_utf8"\nPATH = "src/pkg/data.json"\nX = "ok"\n'
              'FMT = "%s: %s"\nSQL = {"a": "b"}\n')
    assert parse_file("a.py", source, "python", "production").messages == ()


@pytest.mark.parametrize(("language", "source"), [
    ("python", 'MISSING = "the value is missing"\n'),
    ("python", 'class A:\n    MISSING = "the value is missing"\n'),
    ("javascript", 'const MISSING = "the value is missing";\n'),
    ("go", 'package x\n\nconst MISSING = "the value is missing"\n'),
    ("java", 'class A { static final String MISSING = "the value is missing"; }\n'),
    ("rust", 'const MISSING: &str = "the value is missing";\n'),
])
def test_a_constant_keeps_its_name(language: str, source: str) -> None:
    path = {"python": "a.py", "javascript": "a.js", "go": "a.go", "java": "A.java",
            "rust": "a.rs"}[language]
    messages = parse_file(path, source, language, "production").messages
    assert [(m.template, m.name) for m in messages] == [("the value is missing", "MISSING")]


def test_a_local_variable_names_no_constant() -> None:
    source = 'def f():\n    msg = "the value is missing"\n    raise ValueError(msg)\n'
    messages = parse_file("a.py", source, "python", "production").messages
    assert [(m.template, m.name) for m in messages] == [("the value is missing", None)]


def test_secret_looking_messages_are_redacted() -> None:
    source = 'TOKEN = "use the key ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa please"\n'
    [message] = parse_file("a.py", source, "python", "production").messages
    assert "ghp_aaaa" not in message.template


def test_broken_source_still_yields_its_messages() -> None:
    source = 'def f(:\n    raise ValueError("this message survives the error")\n'
    messages = parse_file("a.py", source, "python", "production").messages
    assert [m.template for m in messages] == ["this message survives the error"]


def test_code_nested_a_hundred_thousand_deep_parses_without_error_or_warning() -> None:
    """Valid Python that no recursive walk survives: a long ``+`` chain, a long run of
    unary minus (ast.parse runs out of memory), and an invalid escape (Python warns)."""
    chain = "x = " + "+".join(["1"] * 100_000) + "\n"
    message = 'y = "the value " + str(x) + " is too large"\n'
    negations = "z = " + "-" * 100_000 + "1\n"
    escape = 'w = "\\d+ matches the digits"\n'
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parsed = parse_file("deep.py", chain + message + negations + escape, "python",
                            "production")
    assert [(m.line, m.template) for m in parsed.messages] == [
        (2, f"the value {PLACEHOLDER} is too large"), (4, "\\d+ matches the digits")]
    assert parsed.syntax_uses == ()  # the module does not parse: none found, none invented
