"""Turning mined text (a docstring's first sentence, a heading, a test name) into questions.

Pure string functions used by the case miners. They vary the phrasing the way people
ask (a question, a search phrase, "where is the code that ..."), so that the mined
questions are not all one template; which phrasing a case gets is drawn from a seeded
random generator by the caller. None of this is used by search.
"""

from __future__ import annotations

import random
import re

__all__ = [
    "base_verb",
    "first_sentence",
    "gerund_base",
    "sentence_question",
    "third_person",
]

_ROLE = re.compile(r":[a-z:]+:`~?([^`<]+?)(?:\s*<[^>]*>)?`")
_SENTENCE = re.compile(r"(.+?[.!?])(\s|$)")
MIN_SENTENCE_WORDS = 4
MAX_SENTENCE_WORDS = 30
# First sentences that say what something is *not* about, or point elsewhere, make
# poor behaviour questions.
_POOR_STARTS = ("deprecated", "todo", "see ", "alias", "same as", "like ", "backwards",
                "backward", "compat", "for internal use", "internal", "override", "overrid",
                "implement", "this is", "private", "helper", "called by", "wrapper", "you ",
                "do not", "don't", "note", "used ", "use this", "a no-op", "no-op",
                "placeholder", "dummy", "not ")
# Endings of a first word that is no verb: "Raised if", "Given", "Helpful", "Internal".
_NOT_VERB_ENDINGS = ("ed", "en", "ful", "ible", "able", "al", "ic", "ive", "ous")
# Second words that make the first a modifier: "Context manager that", "Base class for".
_NOUN_HEADS = frozenset("""manager class object function decorator wrapper version
    mixin type exception error helper subclass implementation interface protocol
    container for of""".split())
_DETERMINERS = frozenset("a an the this these those some any each every".split())
# First words that open no imperative: conjunctions, prepositions, adjectives and adverbs
# ("If the key is missing", "Equivalent to", "All items", "Always true").
_NOT_VERBS = frozenset("""if when while unless once since because although though for in
    on at by with without from as after before during all both first last left right
    equivalent similar same true false none only always never often usually also just
    still""".split())
_ADVERBS = frozenset("always never often also just still only".split())
_LY_VERBS = frozenset("apply reply supply multiply rely comply imply tally rally".split())
# Second words that show the first is a verb in the imperative ("Return the ...").
_AFTER_VERB = frozenset("""the a an all any each this that these those its their it them
    whether if to from into with and or true false none self one given current every
    some no up out over back""".split())


def first_sentence(doc: str) -> str | None:
    """A docstring's first sentence, without markup, or None when it makes a poor question."""
    para = " ".join(doc.strip().split("\n\n", 1)[0].split())
    para = _ROLE.sub(lambda m: m.group(1).rsplit(".", 1)[-1], para)
    para = para.replace("``", "").replace("`", "").replace("*", "")
    match = _SENTENCE.match(para)
    sentence = (match.group(1) if match else para).rstrip(".:;,")
    words = sentence.split()
    if not MIN_SENTENCE_WORDS <= len(words) <= MAX_SENTENCE_WORDS:
        return None
    if sentence.startswith((">>>", "..", ":", "(", "[", "{", "-", "#")) or "://" in sentence:
        return None
    if sentence.lower().startswith(_POOR_STARTS):
        return None
    return sentence


def _lower_first(text: str) -> str:
    """Lower-case the first letter, unless the first word is an acronym ("HTTP")."""
    first = text.split(" ", 1)[0]
    return text if len(first) > 1 and first.isupper() else text[:1].lower() + text[1:]


def base_verb(word: str) -> str:
    """``Returns`` -> ``return``, ``Applies`` -> ``apply``; a base form is kept."""
    lower = word.lower()
    if lower in _IRREGULAR_THIRD_PERSON:
        return _IRREGULAR_THIRD_PERSON[lower]
    if lower.endswith("ies") and len(lower) > 4:
        return lower[:-3] + "y"
    if lower.endswith(("sses", "shes", "ches", "xes", "zzes")):
        return lower[:-2]
    if lower.endswith("s") and not lower.endswith(("ss", "us", "is")) and len(lower) > 3:
        return lower[:-1]
    return lower


_IRREGULAR_THIRD_PERSON = {"does": "do", "goes": "go", "has": "have", "is": "be"}


def third_person(verb: str) -> str:
    """``return`` -> ``returns``, ``apply`` -> ``applies``, ``match`` -> ``matches``."""
    if verb.endswith("y") and len(verb) > 2 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    return verb + "s"


def gerund_base(word: str, known: set[str]) -> str:
    """``Creating`` -> ``create``, ``Running`` -> ``run``, ``Testing`` -> ``test``.

    ``known`` is the vocabulary of the package's own text: the base form it uses wins.
    """
    stem = word.lower()[:-3]
    candidates = [stem + "e", stem]
    if len(stem) > 2 and stem[-1] == stem[-2]:
        candidates.insert(0, stem[:-1])
    for candidate in candidates:
        if candidate in known:
            return candidate
    return candidates[0] if candidates[0] != stem + "e" else stem


def _is_adverb(word: str) -> bool:
    return word in _ADVERBS or (word.endswith("ly") and len(word) > 4
                                and word not in _LY_VERBS)


def _is_adverb_before_verb(words: list[str]) -> bool:
    """"Deeply merge", "Always return", "Recursively searches for": an adverb, then a
    verb (one in the third person, whatever follows it)."""
    if len(words) <= 2 or not _is_adverb(words[0].lower()):
        return False
    verb = words[1].lower()
    return _verb_first(words[1:], "function") or (verb.endswith("s")
                                                  and not verb.endswith("ss"))


def _verb_first(words: list[str], kind: str) -> bool:
    """Whether a first sentence starts with its verb ("Return the ...", "Reads ...").

    Function docstrings mostly do (PEP 257's imperative); a class's mostly name a thing.
    """
    first = words[0].lower()
    second = words[1].lower() if len(words) > 1 else ""
    if (first in _DETERMINERS or first in _NOT_VERBS or first.endswith(_NOT_VERB_ENDINGS)
            or _is_adverb(first) or second in _NOUN_HEADS):
        return False
    if second in _AFTER_VERB:
        return True
    return kind in ("function", "method") or (first.endswith("s") and not first.endswith("ss"))


def sentence_question(sentence: str, package: str, kind: str, rng: random.Random) -> str:
    """A question or search phrase asking for what ``sentence`` describes."""
    words = sentence.split()
    # "Deeply merge two dicts": the adverb stays in front of its verb ("deeply merges").
    adverb = f"{words.pop(0).lower()} " if _is_adverb_before_verb(words) else ""
    if adverb or _verb_first(words, kind):
        base, rest = base_verb(words[0]), " ".join(words[1:])
        verb, third = adverb + base, adverb + third_person(base)
        forms = [f"how does {package} {verb} {rest}?",
                 f"where is the code that {third} {rest}?",
                 f"which {'class' if kind == 'class' else 'function'} {third} "
                 f"{rest}?",
                 f"{verb} {rest}"]
    else:
        phrase = _lower_first(sentence)
        forms = [f"where is {phrase} implemented?", phrase,
                 f"which {'class' if kind == 'class' else 'function'} is {phrase}?"]
    return rng.choice(forms)
