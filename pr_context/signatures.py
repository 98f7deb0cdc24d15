"""Parameter lists and return annotations read from declaration text (pure; no I/O).

A small splitter on top-level commas, not a parser: it reads ``Definition.signature``
for Python, TypeScript/JavaScript, Go, Java and Rust well enough to say which
parameters were added, removed, renamed or reordered and which defaults and annotations
changed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CallArguments", "call_arguments", "matching_paren", "parameter_changes",
           "python_call_break"]

_SELF_NAMES = frozenset({"self", "cls", "&self", "&mut self", "mut self", "this"})
_MODIFIERS = re.compile(r"^(?:(?:public|private|protected|readonly|override|mut)\s+)+")
_JAVA_MODIFIERS = re.compile(
    r"@\w+(?:\([^)]*\))?|\b(?:public|private|protected|static|final|abstract|synchronized"
    r"|native|default|strictfp)\b|^\s*<[^>]*>")
_JAVA_PARAM_NOISE = re.compile(r"@\w+(?:\([^)]*\))?\s*|\bfinal\s+")
_MARKERS = frozenset({"*", "/", ""})  # Python's keyword-only and positional-only markers


@dataclass(frozen=True)
class _Param:
    name: str
    annotation: str | None
    default: str | None


def parameter_changes(
    old_signature: str, old_name: str, new_signature: str, new_name: str, language: str
) -> tuple[str, ...]:
    """What changed between two declarations' parameter lists and return annotations.

    Reads the signature text only: ``"added param timeout"``, ``"removed param retries"``,
    ``"renamed param a -> b"``, ``"reordered params"``, ``"default of x: 1 -> 2"``,
    ``"annotation of x: int -> str"``, ``"return annotation: str -> bytes"``. Whitespace
    differences are ignored. Pure.
    """
    old_params, old_return = _split_signature(old_signature, old_name, language)
    new_params, new_return = _split_signature(new_signature, new_name, language)
    changes = _name_changes(old_params, new_params)
    if _shown(old_return) != _shown(new_return) and _key(old_return) != _key(new_return):
        changes.append(f"return annotation: {_shown(old_return)} -> {_shown(new_return)}")
    return tuple(changes)


@dataclass(frozen=True)
class CallArguments:
    """What a call passes: positional count, keyword names, and whether it splats."""

    positional: int
    keywords: frozenset[str]
    splat: bool  # *args or **kwargs: which parameters they fill is unknown


_KEYWORD_ARGUMENT = re.compile(r"^([A-Za-z_]\w*)\s*=(?!=)")
_IDENTIFIER_CHAR = re.compile(r"[\w.]")


def call_arguments(text: str) -> CallArguments | None:
    """The arguments of the call whose callee name starts ``text``; None when no call follows.

    ``text`` runs from the callee's name to (at least) the end of the call, as in source.
    """
    i = 0
    while i < len(text) and _IDENTIFIER_CHAR.match(text[i]):
        i += 1
    while i < len(text) and text[i] in " \t\r\n\\":
        i += 1
    if i >= len(text) or text[i] != "(":
        return None
    closing = matching_paren(text, i)
    positional, keywords, splat = 0, set(), False
    for part in (p.strip() for p in _split_top_level(text[i + 1:closing], ",")):
        if part.startswith("*"):
            splat = True
        elif (keyword := _KEYWORD_ARGUMENT.match(part)) is not None:
            keywords.add(keyword.group(1))
        else:
            positional += 1
    return CallArguments(positional, frozenset(keywords), splat)


@dataclass(frozen=True)
class _PyParam:
    name: str
    kind: str  # positional | keyword | var_positional | var_keyword
    default: str | None


def python_call_break(call: CallArguments, old_signature: str, new_signature: str,
                      name: str) -> str | None:
    """Why a Python call written for ``old_signature`` is wrong for ``new_signature``.

    None when the call still binds the same arguments to the same parameters and relies
    on no default that changed. A call that splats ``*args``/``**kwargs`` cannot be
    checked and is reported as such.
    """
    if call.splat:
        return "passes *args or **kwargs, which may fill a changed parameter"
    old, new = _python_params(old_signature, name), _python_params(new_signature, name)
    old_positional = [p for p in old if p.kind == "positional"]
    new_positional = [p for p in new if p.kind == "positional"]
    new_by_name = {p.name: p for p in new if p.kind in ("positional", "keyword")}
    takes_any_keyword = any(p.kind == "var_keyword" for p in new)
    for keyword in sorted(call.keywords):
        if keyword not in new_by_name and not takes_any_keyword:
            return f"passes {keyword}=, which the new signature does not take"
    for i in range(call.positional):
        if i >= len(new_positional):
            if not any(p.kind == "var_positional" for p in new):
                return (f"passes {call.positional} positional arguments; the new signature "
                        f"takes {len(new_positional)}")
            break
        if i < len(old_positional) and old_positional[i].name != new_positional[i].name:
            return (f"argument {i + 1} now binds {new_positional[i].name}, "
                    f"not {old_positional[i].name}")
    filled = set(call.keywords) | {p.name for p in new_positional[:call.positional]}
    old_defaults = {p.name: p.default for p in old}
    for param in new_by_name.values():
        if param.name in filled:
            continue
        if param.default is None:
            return f"does not pass {param.name}, which is now required"
        if param.name in old_defaults and _key(old_defaults[param.name]) != _key(param.default):
            return f"relies on the default of {param.name}, which changed"
    return None


def _python_params(signature: str, name: str) -> list[_PyParam]:
    found = re.search(rf"\b{re.escape(name)}\b", signature)
    opening = signature.find("(", found.end() if found else 0)
    if opening < 0:
        return []
    closing = matching_paren(signature, opening)
    params, keyword_only = [], False
    for index, part in enumerate(p.strip() for p in
                                 _split_top_level(signature[opening + 1:closing], ",")):
        pieces = _split_top_level(part, "=")
        default = "=".join(pieces[1:]).strip() or None
        raw = _split_first_colon(pieces[0].strip())[0].strip()
        if raw == "/" or (index == 0 and raw in _SELF_NAMES):
            continue
        if raw == "*":
            keyword_only = True
        elif raw.startswith("**"):
            params.append(_PyParam(raw[2:], "var_keyword", None))
        elif raw.startswith("*"):
            keyword_only = True
            params.append(_PyParam(raw[1:], "var_positional", None))
        else:
            params.append(_PyParam(raw, "keyword" if keyword_only else "positional", default))
    return params


def _name_changes(old: Sequence[_Param], new: Sequence[_Param]) -> list[str]:
    old_names, new_names = [p.name for p in old], [p.name for p in new]
    renames = {o: n for o, n in zip(old_names, new_names, strict=False)
               if o not in new_names and n not in old_names}
    changes = [f"renamed param {o} -> {n}" for o, n in renames.items()]
    changes += [f"removed param {o}" for o in old_names if o not in new_names and o not in renames]
    changes += [f"added param {n}" for n in new_names
                if n not in old_names and n not in renames.values()]
    mapped = [renames.get(o, o) for o in old_names]
    common = [n for n in mapped if n in new_names]
    if common != [n for n in new_names if n in common]:
        changes.append("reordered params")
    by_name = {p.name: p for p in new}
    for p in old:
        counterpart = by_name.get(renames.get(p.name, p.name))
        if counterpart is not None:
            changes += _detail_changes(p, counterpart)
    return changes


def _detail_changes(old: _Param, new: _Param) -> list[str]:
    changes = []
    if _key(old.default) != _key(new.default):
        changes.append(f"default of {new.name}: {_shown(old.default)} -> {_shown(new.default)}")
    if _key(old.annotation) != _key(new.annotation):
        changes.append(f"annotation of {new.name}: {_shown(old.annotation)} -> "
                       f"{_shown(new.annotation)}")
    return changes


def _key(text: str | None) -> str | None:
    return None if text is None else re.sub(r"\s+", "", text)


def _shown(text: str | None) -> str:
    return "none" if text is None else " ".join(text.split())


def _split_signature(signature: str, name: str, language: str) -> tuple[list[_Param], str | None]:
    """The parameters and return annotation of a declaration's text."""
    found = re.search(rf"\b{re.escape(name)}\b", signature)
    after_name = found.end() if found else 0
    opening = signature.find("(", after_name)
    if opening < 0:
        return [], None
    closing = matching_paren(signature, opening)
    parts = [p.strip() for p in _split_top_level(signature[opening + 1:closing], ",")]
    params = _params(parts, language)
    head = signature[:found.start()] if found else ""
    return params, _return_annotation(head, signature[closing + 1:], language)


def matching_paren(text: str, opening: int) -> int:
    """Index of the parenthesis closing the one at ``opening`` (len(text) if unclosed)."""
    depth = 0
    for i in range(opening, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return len(text)


def _split_top_level(text: str, separator: str) -> list[str]:
    """Split on ``separator`` outside brackets, braces, generics and string literals."""
    parts, depth, quote, start = [], 0, "", 0
    for i, char in enumerate(text):
        if quote:
            quote = "" if char == quote and text[i - 1] != "\\" else quote
        elif char in "\"'`":
            quote = char
        elif char in "([{" or (char == "<" and i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            depth += 1
        elif char in ")]}" or (char == ">" and depth and text[i - 1] not in "=-"):
            depth -= 1
        elif char == separator and depth == 0 and _lone(text, i):
            parts.append(text[start:i])
            start = i + 1
    return [p for p in [*parts, text[start:]] if p.strip()]


def _lone(text: str, i: int) -> bool:
    """``=`` that is an assignment, not part of ``==``, ``<=``, ``=>``..."""
    if text[i] != "=":
        return True
    return text[i + 1:i + 2] not in ("=", ">") and text[i - 1:i] not in ("=", "<", ">", "!")


def _params(parts: list[str], language: str) -> list[_Param]:
    if language == "go":
        return _go_params(parts)
    if language == "java":
        return [_java_param(p) for p in parts]
    params = [_colon_param(p) for p in parts]
    return [p for p in params if p.name not in _SELF_NAMES and p.name not in _MARKERS]


def _colon_param(part: str) -> _Param:
    """``name: annotation = default`` (Python, TypeScript, JavaScript, Rust)."""
    pieces = _split_top_level(part, "=")
    left = pieces[0].strip()
    default = "=".join(pieces[1:]).strip() or None
    name, _, annotation = (s.strip() for s in _split_first_colon(left))
    name = _MODIFIERS.sub("", name).lstrip("*.").rstrip("?")
    return _Param(name, annotation or None, default)


def _split_first_colon(text: str) -> tuple[str, str, str]:
    pieces = _split_top_level(text, ":")
    if len(pieces) < 2 or text.strip().startswith(":"):
        return text, "", ""
    return pieces[0], ":", ":".join(pieces[1:])


def _go_params(parts: list[str]) -> list[_Param]:
    """``a, b int`` shares one type; without any names the parameters are types only."""
    split = [p.split(None, 1) for p in parts]
    if not any(len(s) == 2 for s in split):
        return [_Param(f"#{i}", p, None) for i, p in enumerate(parts, start=1)]
    params: list[_Param] = []
    pending: list[str] = []
    for pieces in split:
        if len(pieces) == 1:
            pending.append(pieces[0])
            continue
        params += [_Param(n, pieces[1], None) for n in [*pending, pieces[0]]]
        pending = []
    return params + [_Param(n, None, None) for n in pending]


def _java_param(part: str) -> _Param:
    cleaned = _JAVA_PARAM_NOISE.sub("", part).strip()
    type_text, _, name = cleaned.rpartition(" ")
    return _Param(name.strip("[]"), type_text.strip() or None, None)


def _return_annotation(head: str, tail: str, language: str) -> str | None:
    tail = tail.strip()
    if language == "java":
        returned = " ".join(_JAVA_MODIFIERS.sub(" ", head).split())
        return re.sub(r"^<[^>]*>\s*", "", returned) or None
    if language == "go":
        return tail or None
    if language in ("python", "rust"):
        returned = tail[2:] if tail.startswith("->") else ""
        return returned.split(" where ")[0].strip().rstrip(":").strip() or None
    returned = tail[1:] if tail.startswith(":") else ""
    return returned.removesuffix("=>").strip() or None
