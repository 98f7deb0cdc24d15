"""A code-aware tokenizer for lexical search.

``HTTPResponseError`` and ``http_response_error`` both yield ``http``, ``response`` and
``error`` plus the whole identifier (``httpresponseerror``), so a query can match either
the exact name or its parts, in any naming convention.
"""

from __future__ import annotations

import re

__all__ = [
    "STOPWORDS",
    "TECHNOLOGY_NAMES",
    "identifier_words",
    "identifiers",
    "plain_words",
    "proper_names",
    "run_together_names",
    "stem",
    "technology_names",
    "tokenize",
]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Boundaries inside an identifier: lower->Upper, UPPER->Upper+lower, letter<->digit.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
MIN_TOKEN_CHARS = 2
# A word in prose: letters (an optional capital) and digits, not touching code punctuation.
_PLAIN_WORD = re.compile(r"(?<![\w.`])[A-Za-z][a-z0-9]+(?![\w.`(])")
# (suffix, replacement, shortest stem kept): longest suffixes first.
_SUFFIXES = (("ations", "at", 4), ("ation", "at", 4), ("ions", "", 4), ("ion", "", 4),
             ("ings", "", 4), ("ing", "", 4),
             ("ies", "y", 2), ("ied", "y", 2), ("ed", "", 4), ("es", "", 4), ("e", "", 4),
             ("s", "", 3))

# English words that carry no meaning in a code question; identifiers are never dropped
# for being here when they are written as code (snake_case, CamelCase, dotted).
STOPWORDS = frozenset(
    """a an and are as at be by can do does for from how i if in into is it its me my of
    on or so that the their then there these this to was we what when where which who
    why will with you your should would could get gets show find tell use used using
    code function method class file files""".split()
)


def tokenize(text: str, drop_stopwords: bool = False) -> list[str]:
    """Lower-case tokens: each identifier's parts (stemmed), then the whole identifier."""
    tokens: list[str] = []
    known = _WORD_TOKENS
    for word in _IDENTIFIER.findall(text):
        if drop_stopwords and word.lower().strip("_") in STOPWORDS:
            continue
        found = known.get(word)
        if found is None:
            found = _word_tokens(word)
        tokens.extend(found)
    return tokens


# Each identifier's tokens, worked out once: code repeats its names (an index build
# tokenizes every chunk), and splitting and stemming a name costs far more than a look-up.
_WORD_TOKENS: dict[str, tuple[str, ...]] = {}
_WORD_TOKENS_KEPT = 1 << 18  # names; emptied when full (a long-lived server)


def _word_tokens(word: str) -> tuple[str, ...]:
    parts = [p.lower() for p in _CAMEL.findall(word)]
    whole = word.lower().strip("_")
    tokens = [stem(p) for p in parts if len(p) >= MIN_TOKEN_CHARS]
    if len(parts) > 1 and len(whole) >= MIN_TOKEN_CHARS:
        tokens.append(whole.replace("_", ""))
    if len(_WORD_TOKENS) >= _WORD_TOKENS_KEPT:
        _WORD_TOKENS.clear()
    found = _WORD_TOKENS[word] = tuple(tokens)
    return found


def run_together_names(text: str) -> list[str]:
    """The one-part lower-case words of ``text`` that stemming would change.

    Such a word may be a name typed run together (``tokentype``); ``tokenize`` keeps a
    whole identifier only for names of several parts, so only the index can tell.
    """
    return [word for word in (m.group() for m in _IDENTIFIER.finditer(text))
            if word.islower() and len(_CAMEL.findall(word)) == 1 and stem(word) != word
            and word not in STOPWORDS]


def stem(word: str) -> str:
    """A light suffix stemmer: ``evaluated``/``evaluates``/``evaluating`` -> ``evaluat``.

    Prose says "registered", code says ``register``: both must meet. Deliberately crude
    and applied identically to queries and chunks; whole identifiers are not stemmed.
    """
    for suffix, replacement, keep in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= keep and not word.endswith("ss"):
            return word[: len(word) - len(suffix)] + replacement
    return word


def plain_words(text: str, min_chars: int = 5) -> list[str]:
    """Prose words of ``text`` (not code, not stopwords), in order, without repeats."""
    seen: list[str] = []
    for match in _PLAIN_WORD.finditer(text):
        word = match.group()
        if len(word) >= min_chars and word.lower() not in STOPWORDS and word not in seen:
            seen.append(word)
    return seen


# A capitalised compound in prose ("PostgreSQL", "GraphQL", "WebSocket"): a product or
# protocol name, unless the codebase defines it; not one reported as "Name: message".
_PROPER_NAME = re.compile(r"(?<![\w.`])[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+(?![\w.`(:])")


def proper_names(text: str) -> list[str]:
    """Capitalised compounds of ``text`` written in prose, in order, without repeats.

    They look like class names, so ``plain_words`` leaves them out; whether one is a name
    the codebase defines is for the caller to decide.
    """
    return list(dict.fromkeys(m.group() for m in _PROPER_NAME.finditer(text)))


# File formats, data stores, protocols and services a question may ask the code to work
# with. A codebase that never names one does not work with it, however common the word
# is: the embedding tokenizer knows "pdf" or "kafka" whole, so the rare-word test misses
# them. Not everyday English words, and not where code runs (docker, nginx, aws, gpu):
# those are named as context ("behind nginx, how do I...") as often as asked for.
TECHNOLOGY_NAMES = frozenset("""
    pdf csv tsv xml xlsx xls docx pptx odt epub latex protobuf avro parquet hdf5 msgpack
    bson sql sqlite mysql postgres postgresql mariadb mongodb redis memcached cassandra
    dynamodb elasticsearch opensearch neo4j couchdb influxdb clickhouse bigquery kafka
    rabbitmq amqp mqtt zeromq zmq celery sqs s3 gcs smtp imap pop3 ftp sftp ldap saml
    oauth oauth2 openid jwt grpc graphql websocket websockets soap webdav prometheus
    grafana opentelemetry statsd datadog sentry bcrypt argon2 scrypt pbkdf2 totp hotp 2fa
    sms llm openai chatgpt twilio
""".split())
_PROSE_WORD = re.compile(r"(?<![\w.`])[A-Za-z0-9][A-Za-z0-9]+(?![\w.`(])")


def technology_names(text: str) -> list[str]:
    """The ``TECHNOLOGY_NAMES`` written in ``text``'s prose, in order, without repeats."""
    return list(dict.fromkeys(m.group() for m in _PROSE_WORD.finditer(text)
                              if m.group().lower() in TECHNOLOGY_NAMES))


def identifier_words(name: str) -> list[str]:
    """The words of an identifier, lower-case and whole: ``test_parseHTTPDate`` -> test
    parse http date."""
    return [w.lower() for part in name.split("_") for w in _CAMEL.findall(part)]


def identifiers(text: str) -> list[str]:
    """Tokens of ``text`` written as code: snake_case, camelCase, dotted or backticked."""
    found: list[str] = []
    for match in re.finditer(r"`([^`]+)`|([A-Za-z_][\w.]*[A-Za-z0-9_])", text):
        candidate = (match.group(1) or match.group(2)).strip("()")
        if match.group(1) or _looks_like_code(candidate):
            found.append(candidate)
    return found


def _looks_like_code(word: str) -> bool:
    return (
        "_" in word.strip("_")
        or "." in word
        or bool(re.search(r"[a-z][A-Z]", word))
        or bool(re.fullmatch(r"[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+", word))
    )
