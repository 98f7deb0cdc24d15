"""Evaluation cases mined from a package's own files, each with its known answer.

The miners read a package as pr-context parses it (``SourceFile``: path, role and the
parser's definitions, references and chunks) and draft questions whose answer is fixed
by where the question came from:

- behaviour: a docstring's first sentence asks for the definition it documents (the
  eval copy of the package removes that docstring, so the answer is not a copy of the
  question: ``HiddenDocstring``);
- test lookup: a test's name, in words, asks for that test;
- docs lookup: "where is X documented" for a public definition the docs name;
- example lookup: "show me an example of X" for one the examples use.

Stack traces (``mining_raises``) and how-to questions from docs sections
(``mining_docs``) have their own modules. Everything here is pure: reading the files is
``mined``'s job, and a seeded ``random.Random`` decides every choice.
"""

from __future__ import annotations

import ast
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pr_context.evals.cases import Group, QueryClass, Target
from pr_context.evals.phrasing import first_sentence, sentence_question
from pr_context.models import Definition, ParsedFile, Role
from pr_context.retrieve.tokens import identifier_words
from pr_context.roles import is_history

__all__ = [
    "Draft",
    "HiddenDocstring",
    "SourceFile",
    "behaviour_drafts",
    "definition_target",
    "doc_lookup_drafts",
    "example_lookup_drafts",
    "named_test_drafts",
    "public_definitions",
    "strip_docstrings",
]

MIN_TEST_NAME_WORDS = 2
MAX_ANSWER_FILES = 8  # a name documented on more pages than this is too common to ask
MIN_LOOKUP_NAME_CHARS = 4
_DOC_REF_KINDS = frozenset({"directive", "mention"})
_USE_REF_KINDS = frozenset({"call", "instantiation", "attribute", "type"})


@dataclass(frozen=True)
class SourceFile:
    """One indexed file of the package, as the index would hold it."""

    path: str
    language: str
    role: Role
    text: str
    parsed: ParsedFile


@dataclass(frozen=True)
class Draft:
    """A mined question and its answer, before it is numbered and pinned to a revision."""

    query_class: QueryClass
    query: str
    groups: tuple[Group, ...]
    rationale: str


@dataclass(frozen=True)
class HiddenDocstring:
    """A docstring the eval copy removes: the definition named ``name`` at these lines."""

    path: str
    name: str
    start_line: int
    end_line: int


def definition_target(path: str, definition: Definition) -> Target:
    return Target(file=path, symbol=definition.qualified_name)


def _has_chunk(source: SourceFile, definition: Definition) -> bool:
    """Whether search can return the definition: it has a chunk, and not one search
    leaves out unless asked (deprecated code)."""
    return any(c.symbol == definition.qualified_name and c.role != "deprecated"
               for c in source.parsed.chunks)


def behaviour_drafts(files: Sequence[SourceFile], package: str, rng: random.Random,
                     limit: int) -> list[tuple[Draft, HiddenDocstring]]:
    """Docstring first sentences as questions for their definitions.

    A sentence two definitions share (an override repeating its base's docstring) is
    left out: it does not say which one is meant.
    """
    by_sentence: dict[str, list[tuple[SourceFile, Definition, str]]] = defaultdict(list)
    for source in files:
        if source.role != "production" or source.language != "python":
            continue
        for definition in source.parsed.definitions:
            sentence = first_sentence(definition.docstring) if definition.docstring else None
            if sentence and not definition.name.startswith("__") and _has_chunk(
                    source, definition):
                by_sentence[sentence.lower()].append((source, definition, sentence))
    unique = [found[0] for _, found in sorted(by_sentence.items()) if len(found) == 1]
    rng.shuffle(unique)
    drafts = []
    for source, definition, sentence in unique[:limit]:
        query = sentence_question(sentence, package, definition.kind, rng)
        draft = Draft("behavior", query, (Group("definition", (
            definition_target(source.path, definition),)),),
            f"the first sentence of {definition.qualified_name}'s docstring, which the "
            "eval copy removes; the answer is the definition it documents")
        hidden = HiddenDocstring(source.path, definition.name, definition.start_line,
                                 definition.end_line)
        drafts.append((draft, hidden))
    return drafts


_TEST_FORMS = ("which tests check {}?", "is there a test for {}?", "tests for {}",
               "where is the test that checks {}?")


def named_test_drafts(files: Sequence[SourceFile], rng: random.Random, limit: int
                       ) -> list[Draft]:
    """Test names in words ("tests for parse empty string") asking for those tests."""
    by_phrase: dict[str, list[Target]] = defaultdict(list)
    for source in files:
        if source.role != "test":
            continue
        for definition in source.parsed.definitions:
            phrase = _test_phrase(definition)
            if phrase:
                by_phrase[phrase].append(definition_target(source.path, definition))
    phrases = sorted(by_phrase)
    rng.shuffle(phrases)
    return [Draft("test_lookup", rng.choice(_TEST_FORMS).format(phrase),
                  (Group("test", tuple(by_phrase[phrase])),),
                  f"the words of a test's name ({by_phrase[phrase][0].symbol}); any test "
                  "of that name answers it")
            for phrase in phrases[:limit]]


def _test_phrase(definition: Definition) -> str | None:
    words = identifier_words(definition.name)
    if definition.kind not in ("function", "method") or words[:1] != ["test"]:
        return None
    words = words[1:]
    owner = (definition.parent or "").rsplit(".", 1)[-1]
    owner_words = [w for w in identifier_words(owner) if w != "test"] if owner else []
    if len(words) < MIN_TEST_NAME_WORDS + 1 and owner_words:
        words = owner_words + words
    if len(words) < MIN_TEST_NAME_WORDS or all(w.isdigit() for w in words[1:]):
        return None
    return " ".join(words)


def public_definitions(files: Iterable[SourceFile]) -> dict[str, list[tuple[str, Definition]]]:
    """Public production definitions by name (no part of the name or path private)."""
    found: dict[str, list[tuple[str, Definition]]] = defaultdict(list)
    for source in files:
        if source.role != "production" or any(
                p.startswith("_") and p != "__init__.py" for p in source.path.split("/")):
            continue
        for definition in source.parsed.definitions:
            if not any(p.startswith("_") for p in definition.qualified_name.split(".")):
                found[definition.name].append((source.path, definition))
    return found


def _files_referring(files: Sequence[SourceFile], roles: frozenset[str],
                     kinds: frozenset[str]) -> dict[str, set[str]]:
    """name -> paths of files of ``roles`` whose references of ``kinds`` name it."""
    paths: dict[str, set[str]] = defaultdict(set)
    for source in files:
        if source.role not in roles or is_history(source.path):
            continue
        for ref in source.parsed.references:
            if ref.kind in kinds:
                paths[ref.name.rsplit(".", 1)[-1]].add(source.path)
    return paths


_DOC_FORMS = ("where is {} documented?", "which page of the docs describes {}?",
              "is {} documented anywhere?", "docs for {}")
_EXAMPLE_FORMS = ("show me an example of {}", "is there an example that uses {}?",
                  "example code using {}", "how is {} used in the examples?")


def doc_lookup_drafts(files: Sequence[SourceFile], rng: random.Random, limit: int
                      ) -> list[Draft]:
    """"Where is X documented" for public definitions the docs name; the docs answer."""
    documented = _files_referring(files, frozenset({"docs"}), _DOC_REF_KINDS)
    return _lookup_drafts(files, documented, {}, "doc_lookup", _DOC_FORMS, rng, limit)


def example_lookup_drafts(files: Sequence[SourceFile], rng: random.Random, limit: int
                          ) -> list[Draft]:
    """"Show me an example of X" for public definitions the examples use.

    Examples and the docs' code blocks both answer it.
    """
    examples = _files_referring(files, frozenset({"example"}), _USE_REF_KINDS)
    docs = _files_referring(files, frozenset({"docs"}), _DOC_REF_KINDS)
    return _lookup_drafts(files, examples, docs, "example_lookup", _EXAMPLE_FORMS, rng,
                          limit)


def _lookup_drafts(files: Sequence[SourceFile], answers: dict[str, set[str]],
                   also: dict[str, set[str]], query_class: QueryClass,
                   forms: Sequence[str], rng: random.Random, limit: int) -> list[Draft]:
    roles: dict[str, Role] = {s.path: s.role for s in files}
    public = public_definitions(files)
    # Module-level names only: a method's name in a doc ("write") is as often another's.
    names = sorted(n for n, defs in public.items() if len(defs) == 1 and n in answers
                   and defs[0][1].parent is None
                   and len(n) >= MIN_LOOKUP_NAME_CHARS
                   and len(answers[n] | also.get(n, set())) <= MAX_ANSWER_FILES)
    rng.shuffle(names)
    drafts = []
    for name in names[:limit]:
        definition = public[name][0][1]
        shown = f"`{name}`" if rng.random() < 0.5 else name
        paths = sorted(answers[name] | also.get(name, set()))
        targets = tuple(Target(file=p, roles=(roles[p],)) for p in paths)
        drafts.append(Draft(query_class, rng.choice(forms).format(shown),
                            (Group("answer", targets),),
                            f"{definition.qualified_name} is named by "
                            f"{', '.join(paths)}"))
    return drafts


def strip_docstrings(text: str, hidden: Sequence[HiddenDocstring]) -> str:
    """``text`` without the docstrings of the ``hidden`` definitions (one file's).

    A body that was only its docstring keeps ``...`` in its place, so the file still
    parses. A docstring sharing a line with other code is left alone.
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text
    lines = text.split("\n")
    cuts = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if not any(h.name == node.name and h.start_line <= node.lineno <= h.end_line
                   for h in hidden):
            continue
        doc = node.body[0]
        if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
                and isinstance(doc.value.value, str)) or doc.lineno == node.lineno:
            continue
        end = doc.end_lineno or doc.lineno
        if lines[end - 1][doc.end_col_offset or 0:].strip() or \
                lines[doc.lineno - 1][:doc.col_offset].strip():
            continue
        filler = [" " * doc.col_offset + "..."] if len(node.body) == 1 else []
        cuts.append((doc.lineno, end, filler))
    for start, end, filler in sorted(cuts, reverse=True):
        lines[start - 1:end] = filler
    return "\n".join(lines)
