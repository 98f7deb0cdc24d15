"""Stack-trace questions mined from ``raise X(message)`` in a package's Python code.

Each raise whose message is a string literal or a format template (an f-string,
``"..." % args``, ``"...".format(...)``, concatenation, a ``_("...")`` translation, or a
local variable assigned one of these before the raise) becomes an error message as a
user would paste it: the placeholders filled with values the package never saw (made-up
words, a user's file name, a number), with the exception's name before it as Python
prints it, or inside a short traceback, or alone. The answer is the function raising
it; where several raise the same template, any of them.
"""

from __future__ import annotations

import ast
import builtins
import random
import re
import string
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pr_context.evals.cases import Group
from pr_context.evals.mining import Draft, SourceFile, definition_target
from pr_context.models import Definition

__all__ = ["Placeholder", "RaiseSite", "raise_sites", "stack_trace_drafts", "template_text"]

MIN_LITERAL_CHARS = 12  # "Invalid value" alone is no question: it could be anywhere
MIN_LITERAL_WORDS = 2
_MESSAGE_KEYWORDS = ("msg", "message", "detail", "reason", "text")
_TRANSLATORS = frozenset({"_", "gettext", "ngettext", "gettext_lazy", "N_"})
_PERCENT = re.compile(r"%(?:\((?P<key>\w+)\))?[#0\- +]*(?:\d+|\*)?(?:\.(?:\d+|\*))?"
                      r"(?P<type>[diouxXeEfFgGcrsa%])")
_BUILTIN_NAMES = frozenset(dir(builtins))


@dataclass(frozen=True)
class Placeholder:
    """A value formatted into a message: its expression, ``!r``-style conversion, spec."""

    expression: str
    conversion: str = ""
    spec: str = ""


Part = str | Placeholder


@dataclass(frozen=True)
class RaiseSite:
    """``raise exception(message)`` at ``line`` inside ``definition``."""

    path: str
    line: int
    source_line: str
    exception: str
    parts: tuple[Part, ...]
    definition: Definition


def template_text(parts: Sequence[Part]) -> str:
    """The literal text with every placeholder as ``{}``: a key for equal templates."""
    return "".join(p if isinstance(p, str) else "{}" for p in parts)


def raise_sites(source: SourceFile) -> list[RaiseSite]:
    """The raises with a message template in one Python file, in line order."""
    try:
        tree = ast.parse(source.text)
    except (SyntaxError, ValueError):
        return []
    lines = source.text.split("\n")
    sites = []
    for function, node in _raises(tree):
        found = _raise_message(node, function)
        definition = _innermost(source, node.lineno)
        if found is None or definition is None:
            continue
        exception, parts = found
        sites.append(RaiseSite(source.path, node.lineno, lines[node.lineno - 1].strip(),
                               exception, parts, definition))
    return sites


def _raises(tree: ast.Module) -> Iterator[tuple[ast.AST | None, ast.Raise]]:
    """Every raise with the function that holds it (None at module level)."""
    stack: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while stack:
        node, function = stack.pop()
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) \
                else function
            if isinstance(child, ast.Raise):
                yield function, child
            stack.append((child, inner))


def _innermost(source: SourceFile, line: int) -> Definition | None:
    """The innermost function holding ``line`` that has a chunk of its own (a nested
    function is part of the one around it)."""
    chunked = {c.symbol for c in source.parsed.chunks if c.role != "deprecated"}
    holding = [d for d in source.parsed.definitions if d.start_line <= line <= d.end_line
               and d.kind in ("function", "method") and d.qualified_name in chunked]
    return min(holding, key=lambda d: d.end_line - d.start_line, default=None)


def _raise_message(node: ast.Raise, function: ast.AST | None
                   ) -> tuple[str, tuple[Part, ...]] | None:
    call = node.exc
    if not isinstance(call, ast.Call):
        return None
    name = call.func.id if isinstance(call.func, ast.Name) else (
        call.func.attr if isinstance(call.func, ast.Attribute) else None)
    message = call.args[0] if call.args else next(
        (k.value for k in call.keywords if k.arg in _MESSAGE_KEYWORDS), None)
    if name is None or message is None:
        return None
    if isinstance(message, ast.Name) and function is not None:
        message = _assigned_before(function, message.id, node.lineno)
    parts = _parts(message) if message is not None else None
    if not parts or not _worth_asking(parts):
        return None
    return name, tuple(parts)


def _assigned_before(function: ast.AST, name: str, line: int) -> ast.expr | None:
    """The value last assigned to local ``name`` before ``line``, if any."""
    value = None
    for node in ast.walk(function):
        if (isinstance(node, ast.Assign) and node.lineno < line and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name
                and (value is None or node.lineno > value[0])):
            value = (node.lineno, node.value)
    return value[1] if value else None


def _parts(node: ast.expr) -> list[Part] | None:
    """The message template of an expression, or None when it builds no message."""
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        return [_formatted(v) if isinstance(v, ast.FormattedValue) else str(
            getattr(v, "value", "")) for v in node.values]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _parts(node.left), _parts(node.right)
        if left is None and right is None:
            return None
        return [*(left or [Placeholder(ast.unparse(node.left))]),
                *(right or [Placeholder(ast.unparse(node.right))])]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        template = _parts(node.left)
        return _percent(template, node.right) if template else None
    if isinstance(node, ast.Call):
        return _call_parts(node)
    return None


def _call_parts(node: ast.Call) -> list[Part] | None:
    func = node.func
    if isinstance(func, ast.Name) and func.id in _TRANSLATORS and node.args:
        return _parts(node.args[0])
    if isinstance(func, ast.Attribute) and func.attr == "format":
        template = _parts(func.value)
        return _format(template, node) if template else None
    return None


def _formatted(value: ast.FormattedValue) -> Placeholder:
    conversion = chr(value.conversion) if value.conversion > 0 else ""
    spec = ast.unparse(value.format_spec)[2:-1] if value.format_spec else ""
    return Placeholder(ast.unparse(value.value), conversion, spec)


def _percent(template: list[Part], args: ast.expr) -> list[Part]:
    values = [ast.unparse(e) for e in args.elts] if isinstance(args, ast.Tuple) else \
        [ast.unparse(args)]
    parts: list[Part] = []
    index = 0
    for piece in template:
        if not isinstance(piece, str):
            parts.append(piece)
            continue
        position = 0
        for match in _PERCENT.finditer(piece):
            parts.append(piece[position:match.start()])
            position = match.end()
            if match["type"] == "%":
                parts.append("%")
                continue
            expression = match["key"] or (values[index] if index < len(values) else "")
            index += 0 if match["key"] else 1
            parts.append(Placeholder(expression, "r" if match["type"] == "r" else "",
                                     match["type"]))
        parts.append(piece[position:])
    return parts


def _format(template: list[Part], call: ast.Call) -> list[Part]:
    positional = [ast.unparse(a) for a in call.args]
    named = {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg}
    parts: list[Part] = []
    auto = 0
    for piece in template:
        if not isinstance(piece, str):
            parts.append(piece)
            continue
        try:
            fields = list(string.Formatter().parse(piece))
        except ValueError:
            return [piece]
        for literal, field, spec, conversion in fields:
            parts.append(literal)
            if field is None:
                continue
            if field == "":
                field, auto = str(auto), auto + 1
            expression = positional[int(field)] if field.isdigit() and int(field) < len(
                positional) else named.get(field.split(".")[0], field)
            parts.append(Placeholder(expression, conversion or "", spec or ""))
    return parts


def _worth_asking(parts: Sequence[Part]) -> bool:
    """A message of words: not an error key such as ``"invalid_utf8"``."""
    literal = " ".join(p for p in parts if isinstance(p, str))
    words = [w for w in literal.split() if re.search(r"[A-Za-z]{2,}", w)]
    return len(literal.strip()) >= MIN_LITERAL_CHARS and len(words) >= MIN_LITERAL_WORDS


# Values a user brings: made-up words, their own names and files, numbers.
_SYLLABLES = ("ba", "do", "fi", "ku", "lo", "mer", "na", "pi", "ro", "sa", "ti", "vel",
              "zan", "qua", "gor", "bin", "tel", "wim")
_USER_FILES = ("settings_local.yaml", "report-2023.csv", "my_app/main.py", "data.json",
               "notes.txt", "build/output.log")
_USER_TYPES = ("int", "dict", "NoneType", "str", "list", "MyConfig", "float")
_NUMBER_HINTS = re.compile(r"len\(|count|num|size|length|index|max|min|limit|line|port|"
                           r"timeout|total|age|\bn\b|\bi\b|seconds|bytes", re.IGNORECASE)
_TYPE_HINTS = re.compile(r"type\(|__name__|__class__|__qualname__")
_FILE_HINTS = re.compile(r"path|file|filename|dir", re.IGNORECASE)


def made_up_word(rng: random.Random) -> str:
    """A word no codebase uses: a user's value, a typo."""
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3)))


def _value(placeholder: Placeholder, rng: random.Random) -> str:
    expression, kind = placeholder.expression, placeholder.spec[-1:] or ""
    if kind in ("d", "i", "x") or (_NUMBER_HINTS.search(expression) and kind != "r"):
        return str(rng.choice((0, 2, 3, 7, 42, 128, 3600)))
    if kind in ("f", "e", "g"):
        return rng.choice(("0.5", "3.14", "2.75"))
    if _TYPE_HINTS.search(expression):
        return rng.choice(_USER_TYPES)
    value = rng.choice(_USER_FILES) if _FILE_HINTS.search(expression) else made_up_word(rng)
    return repr(value) if placeholder.conversion == "r" else value


def filled_message(parts: Sequence[Part], rng: random.Random) -> str:
    text = "".join(p if isinstance(p, str) else _value(p, rng) for p in parts)
    return " ".join(text.split())


def _exception_display(name: str, exceptions: dict[str, str]) -> str:
    """``ValueError`` for a builtin, ``pkg.errors.BadThing`` for the package's own."""
    if name in _BUILTIN_NAMES:
        return name
    return exceptions.get(name, name)


def _installed_path(path: str) -> str:
    """Where an installed package's file lives below site-packages (no ``src/``)."""
    return path.removeprefix("src/")


def _traceback(site: RaiseSite, shown: str, message: str) -> str:
    function = site.definition.name
    return "\n".join([
        "Traceback (most recent call last):",
        '  File "/home/user/project/app.py", line 27, in main',
        "    result = run(config)",
        f'  File "/usr/lib/python3.12/site-packages/{_installed_path(site.path)}", '
        f"line {site.line}, in {function}",
        f"    {site.source_line}",
        f"{shown}: {message}"])


def stack_trace_drafts(files: Sequence[SourceFile], exceptions: dict[str, str],
                       rng: random.Random, limit: int) -> list[Draft]:
    """Error messages raised by the production code, one template per question.

    ``exceptions`` maps the package's exception class names to their qualified names.
    """
    by_template: dict[str, list[RaiseSite]] = defaultdict(list)
    for source in files:
        if source.role == "production" and source.language == "python":
            for site in raise_sites(source):
                by_template[" ".join(template_text(site.parts).split())].append(site)
    templates = sorted(by_template)
    rng.shuffle(templates)
    drafts = []
    for template in templates[:limit]:
        sites = by_template[template]
        site = sites[0]
        message = filled_message(site.parts, rng)
        shown = _exception_display(site.exception, exceptions)
        form = rng.random()
        query = message if form < 0.4 else (f"{shown}: {message}" if form < 0.8
                                            else _traceback(site, shown, message))
        targets = tuple(dict.fromkeys(definition_target(s.path, s.definition) for s in sites))
        drafts.append(Draft("stack_trace", query, (Group("raised-by", targets),),
                            f"{site.exception} raised with this message template in "
                            f"{site.definition.qualified_name} ({site.path}:{site.line})"))
    return drafts
