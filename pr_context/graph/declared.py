"""Declared parameter, return and local variable types of Java, TypeScript, Go and Rust
functions, read from their signature and source text.

A statically typed parameter holds an instance of its declared type (or of a subtype), so
``type.withoutAnnotations()`` inside ``void f(TypeName type)`` calls ``TypeName``'s
method, and ``ClassName.get(...).isBoxedPrimitive()`` calls the method of the class
``get`` declares it returns. Types are kept as written, less a pointer, a reference or a
nullish union (``*Foo``, ``&mut Foo``, ``Foo | undefined``: ``Foo``);
:func:`named_type` tells the class a text names (``Foo<T>``, ``pkg.Foo``) and
:func:`element_type` what a collection holds (``[]*Foo``, ``List<Foo>``).
"""

from __future__ import annotations

import re
from functools import cache
from typing import NamedTuple

__all__ = [
    "Local", "element_type", "field_types", "local_declaration", "named_type",
    "parameter_types", "result_types", "return_type",
]

_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSERS = frozenset(_PAIRS.values())
_GENERIC_ARGUMENTS = re.compile(r"<[^<>]*>")
_JAVA_ANNOTATION = re.compile(r"@[\w.]+(?:\([^)]*\))?\s*")
_JAVA_MODIFIERS = re.compile(r"\b(?:final)\s+")
_TS_MODIFIERS = re.compile(r"^(?:(?:public|private|protected|readonly|override)\s+)+")
_TS_NULLISH = re.compile(r"\s*\|\s*(?:undefined|null)\b|\b(?:undefined|null)\s*\|\s*")
_RUST_REFERENCE = re.compile(r"^&\s*(?:'\w+\s+)?(?:mut\s+)?|^mut\s+")
_NAME = re.compile(r"[A-Za-z_$][\w$]*")
_TYPE = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_LANGUAGES = frozenset({"java", "typescript", "tsx", "go", "rust"})
# The type right before a Java method's name: `List<Money>`, `Money[]`, `Money`.
_JAVA_RETURN = re.compile(r"([\w.$]+(?:<.*>)?(?:\[\])*)\s*$")
_ELEMENT_FORMS = (
    re.compile(r"\[\](?P<item>.+)"),  # Go []T, []*T
    re.compile(r"(?:readonly\s+)?(?P<item>[\w.$]+(?:<.*>)?)\[\]"),  # T[]
    re.compile(r"(?:[\w.$]+\.)?(?:Array|ReadonlyArray|Set|ReadonlySet|List|ArrayList|"
               r"LinkedList|Collection|Iterable|Iterator|Stream|Deque|Queue|SortedSet|Vec|"
               r"VecDeque|HashSet|BTreeSet)<(?P<item>.+)>"),
    re.compile(r"\[(?P<item>[^;\]]+)\]"),  # Rust [T], after & is gone
)


@cache
def parameter_types(signature: str, name: str, language: str) -> dict[str, str]:
    """Parameter name -> its declared type text (pointer, reference and nullish union
    taken off), for ``language``'s function ``name`` with ``signature``; empty for another
    language or an unreadable signature. :func:`named_type` tells what class it names."""
    if language not in _LANGUAGES:
        return {}
    span = _parameter_span(signature, name)
    if span is None:
        return {}
    parameters = [p.strip() for p in _split(signature[span[0] + 1 : span[1]]) if p.strip()]
    if language == "go":
        return _go(parameters)
    read = {"java": _java, "rust": _rust}.get(language, _typescript)
    return dict(pair for pair in map(read, parameters) if pair is not None)


@cache
def return_type(signature: str, name: str, language: str) -> str | None:
    """The type text function ``name`` declares it returns, if it declares one."""
    if language not in _LANGUAGES:
        return None
    span = _parameter_span(signature, name)
    if span is None:
        return None
    if language == "java":
        before = signature[: _name_end(signature, name) - len(name)]
        match = _JAVA_RETURN.search(_JAVA_ANNOTATION.sub("", before))
        return match.group(1) if match else None
    after = signature[span[1] + 1 :].strip()
    if language == "go":
        return after.split("{", 1)[0].strip().removeprefix("*") or None
    if language == "rust":
        match = re.match(r"->\s*([^{]+?)\s*(?:where\b|\{|$)", after)
    else:
        match = re.match(r":\s*([^{=]+?)\s*(?:\{|=>|$)", after)
    return _type_text(match.group(1), language) if match else None


# One statement per line, the usual style: `Type name = value;`, `const name: T = value`,
# `name := value`, `var name T`, `let mut name: T = value;`.
_LOCAL_FORMS = {
    # a value may go on over the next lines; a for-each loop declares its variable too
    "java": r"\s*(?:(?:final\s+)?(?P<type>[\w.$]+(?:<.*>)?)\s+{name}\s*"
            r"(?:=\s*(?P<value>.+?))?;?|.*\bfor\s*\(\s*(?:final\s+)?"
            r"(?P<loop>[\w.$]+(?:<.*>)?)\s+{name}\s*:.*)",
    "typescript": r"\s*(?:(?:const|let|var)\s+{name}\s*(?::\s*(?P<type>[^=]+?))?\s*"
                  r"(?:=\s*(?P<value>.+?))?;?|.*\bfor\s*\(\s*(?:const|let|var)\s+{name}\s+"
                  r"of\s+(?P<iterates>.+?)\)\s*\{?)",
    "go": r"\s*(?:(?P<before>(?:\w+\s*,\s*)*){name}(?P<after>(?:\s*,\s*\w+)*)\s*:=\s*"
          r"(?P<value>.+)|var\s+{name}\s+(?P<type>[^=]+?)"
          r"(?:\s*=\s*(?P<value2>.+))?|for\s+\w+\s*,\s*{name}\s*:=\s*range\s+"
          r"(?P<iterates>.+?)\s*\{?)",
    "rust": r"\s*(?:let\s+(?:mut\s+)?{name}\s*(?::\s*(?P<type>[^=]+?))?\s*="
            r"\s*(?P<value>.+?);|for\s+(?:mut\s+)?{name}\s+in\s+(?P<iterates>.+?)\s*\{?)",
}
_LOCAL_FORMS["tsx"] = _LOCAL_FORMS["javascript"] = _LOCAL_FORMS["typescript"]
_JAVA_NOT_TYPES = frozenset({"return", "new", "throw", "else", "case", "yield"})
# Words a declaring line of these languages must hold (Java declares with a type alone).
# JavaScript declares no types: only a constructed value (`new C(...)`) tells a class.
_LOCAL_HINTS = {"typescript": ("const", "let", "var", "for"), "go": (":=", "var", "range"),
                "rust": ("let", "for"), "javascript": ("new",)}
_LOCAL_HINTS["tsx"] = _LOCAL_HINTS["typescript"]


class Local(NamedTuple):
    """What a line says of a local: its declared type text, the expression assigned to it,
    or the expression a loop takes it from (one item at a time)."""

    type: str | None = None
    value: str | None = None
    iterates: str | None = None
    result: int | None = None  # Go's `a, err := f()`: which of the call's results it takes


def local_declaration(line: str, name: str, language: str) -> Local | None:
    """What ``line`` declares about the local ``name``; None when it declares nothing."""
    form = _LOCAL_FORMS.get(language)
    hints = _LOCAL_HINTS.get(language)
    if hints and not any(hint in line for hint in hints):
        return None  # cheaper than the pattern, which most lines fail
    match = form and _local_pattern(form, name).fullmatch(line.rstrip())
    if not match:
        return None
    groups = match.groupdict()
    declared = groups.get("type") or groups.get("loop")
    if language == "java" and declared in _JAVA_NOT_TYPES:
        return None
    several = bool(groups.get("before") or groups.get("after"))
    return Local(_type_text(declared, language).removeprefix("*") if declared else None,
                 groups.get("value") or groups.get("value2"), groups.get("iterates"),
                 groups["before"].count(",") if several else None)


def result_types(return_text: str | None) -> list[str]:
    """The types of a Go function's results: ``(*Command, []string, error)``."""
    text = (return_text or "").strip()
    if not (text.startswith("(") and text.endswith(")")):
        return [text.removeprefix("*")] if text else []
    return [part.strip().split(" ")[-1].removeprefix("*") for part in _split(text[1:-1])]


@cache
def _local_pattern(form: str, name: str) -> re.Pattern[str]:
    return re.compile(form.replace("{name}", re.escape(name)))


# A field declared on its own line of a class, struct or interface header.
_FIELD_FORMS = {
    "java": re.compile(r"\s*(?:(?:private|public|protected|static|final|transient|volatile)"
                       r"\s+)*(?P<type>[\w.$]+(?:<.*>)?)\s+(?P<name>[\w$]+)\s*(?:=.*)?;"),
    "typescript": re.compile(r"\s*(?:(?:private|public|protected|readonly|static|declare)"
                             r"\s+)*#?(?P<name>[\w$]+)[?!]?\s*:\s*(?P<type>[^=;]+?)\s*"
                             r"(?:=.*)?;?"),
    "go": re.compile(r"\s*(?P<name>\w+)\s+\*?(?P<type>(?:\[\]\*?)?[\w.]+)\s*(?:`.*`)?"
                     r"\s*(?://.*)?"),
    "rust": re.compile(r"\s*(?:pub(?:\([^)]*\))?\s+)?(?P<name>\w+)\s*:\s*(?P<type>.+?),?"
                       r"\s*(?://.*)?"),
}
_FIELD_FORMS["tsx"] = _FIELD_FORMS["typescript"]
# A TypeScript or JavaScript field with no declared type holds what it is created with:
# `private store = new Store();`.
_NEW_FIELD = re.compile(r"\s*(?:(?:private|public|protected|readonly|static|declare|override)"
                        r"\s+)*#?(?P<name>[\w$]+)\s*=\s*new\s+(?P<type>[\w.$]+)\s*"
                        r"(?:<.*>)?\s*\(.*")
_NEW_FIELD_LANGUAGES = frozenset({"typescript", "tsx", "javascript"})


def field_types(header: str, language: str) -> dict[str, str]:
    """Field name -> declared type text, for the fields a class, struct or interface
    header declares one per line (others, and methods, are left out); a TypeScript or
    JavaScript field without a type is of the class it is created with (``= new C()``)."""
    form = _FIELD_FORMS.get(language)
    created = _NEW_FIELD if language in _NEW_FIELD_LANGUAGES else None
    found: dict[str, str] = {}
    for line in header.split("\n")[1:] if form or created else ():
        match = (form and form.fullmatch(line.rstrip())) or (
            created and created.fullmatch(line.rstrip()))
        declared = match and _type_text(match.group("type"), language).rstrip(",;")
        if match and declared and declared not in _JAVA_NOT_TYPES:
            found.setdefault(match.group("name"), declared)
    if language in ("typescript", "tsx"):
        found.update(_parameter_properties(header))
    return found


def _parameter_properties(header: str) -> dict[str, str]:
    """TypeScript's ``constructor(private store: Store)``: a parameter with an access
    modifier is a field too (how dependency injection hands services to a class)."""
    at = re.search(r"(?<![\w$.])constructor\s*\(", header)
    span = _parameter_span(header[at.start():], "constructor") if at else None
    if at is None or span is None:
        return {}
    group = header[at.start() + span[0] + 1 : at.start() + span[1]]
    modified = [p.strip() for p in _split(group) if _TS_MODIFIERS.match(p.strip())]
    return dict(pair for pair in map(_typescript, modified) if pair is not None)


def _type_text(text: str, language: str) -> str:
    """A declared type as written, less Rust's reference and ``::``, TypeScript's nullish
    union."""
    text = text.strip()
    if language == "rust":
        return _RUST_REFERENCE.sub("", text).replace("::", ".")
    if language in ("typescript", "tsx", "javascript"):
        return _TS_NULLISH.sub("", text).strip()
    return text


def _name_end(signature: str, name: str) -> int:
    at = re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", signature)
    return at.end() if at else 0


def _parameter_span(signature: str, name: str) -> tuple[int, int] | None:
    """Where the parentheses that follow ``name`` (after Go's receiver) open and close."""
    start = signature.find("(", _name_end(signature, name))
    if start < 0:
        return None
    depth = 0
    for index in range(start, len(signature)):
        step = _depth_step(signature, index)
        depth += step
        if step < 0 and depth == 0:
            return start, index
    return None


def _depth_step(text: str, index: int) -> int:
    """How the bracket depth changes at ``text[index]``; ``=>`` closes nothing."""
    char = text[index]
    if char in _PAIRS:
        return 1
    return -1 if char in _CLOSERS and (index == 0 or text[index - 1] != "=") else 0


def _split(group: str) -> list[str]:
    """``group`` split at commas outside brackets (``Map<K, V> m``, ``f: (a, b) => c``)."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for index, char in enumerate(group):
        depth += _depth_step(group, index)
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    return [*parts, "".join(current)]


def _java(parameter: str) -> tuple[str, str] | None:
    text = _JAVA_MODIFIERS.sub("", _JAVA_ANNOTATION.sub("", parameter)).strip()
    type_text, _, name = text.rpartition(" ")
    return _pair(name, type_text)


def _typescript(parameter: str) -> tuple[str, str] | None:
    text = re.split(r"=(?!>)", _TS_MODIFIERS.sub("", parameter), maxsplit=1)[0].strip()
    name, colon, type_text = text.partition(":")
    if not colon:
        return None
    return _pair(name.strip().rstrip("?"), _type_text(type_text, "typescript"))


def _rust(parameter: str) -> tuple[str, str] | None:
    pattern, colon, type_text = parameter.partition(":")
    if not colon:
        return None  # self, &self, &mut self
    return _pair(re.sub(r"^mut\s+", "", pattern.strip()), _type_text(type_text, "rust"))


def _go(parameters: list[str]) -> dict[str, str]:
    """Go groups names before their type: ``a, b *Store`` types both."""
    found: dict[str, str] = {}
    waiting: list[str] = []
    for parameter in parameters:
        name, _, type_text = parameter.partition(" ")
        if not type_text.strip():
            waiting.append(name)
            continue
        for each in (*waiting, name):
            pair = _pair(each, type_text.strip().removeprefix("*"))
            if pair is not None:
                found[pair[0]] = pair[1]
        waiting = []
    return found


def _pair(name: str, type_text: str) -> tuple[str, str] | None:
    """(name, declared type text) when ``name`` is a plain name and a type is written."""
    text = type_text.strip()
    return (name, text) if _NAME.fullmatch(name) and text else None


def named_type(type_text: str | None) -> str | None:
    """The dotted name a declared type text names (``Foo<T>``: ``Foo``), if it is one."""
    return _plain_type(type_text) if type_text else None


def element_type(type_text: str | None) -> str | None:
    """The dotted name of what a declared collection holds (``[]*Command``, ``Foo[]``,
    ``List<Foo>``, ``Vec<Foo>``, ``&[Foo]``), if it is one."""
    for form in _ELEMENT_FORMS:
        match = form.fullmatch((type_text or "").strip())
        if match:
            return _plain_type(_RUST_REFERENCE.sub("", match.group("item").strip()).lstrip("*"))
    return None


def _plain_type(type_text: str) -> str | None:
    """``type_text`` without generic arguments, when what is left is a dotted name."""
    bare = type_text.strip()
    while _GENERIC_ARGUMENTS.search(bare):
        bare = _GENERIC_ARGUMENTS.sub("", bare)
    return bare if _TYPE.fullmatch(bare) else None
