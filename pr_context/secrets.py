"""Redact secret-looking strings before text is stored, embedded or quoted.

One combined regular expression finds, in a single pass:

- private key blocks (``-----BEGIN ... PRIVATE KEY-----`` to the matching END line);
- well-known token formats: AWS access key ids, GitHub, Slack, Google API, Stripe live
  keys, JSON Web Tokens;
- credentials in URLs (``scheme://user:password@host``: only the password goes);
- literal values assigned to secret-looking names (``password``, ``secret``,
  ``api_key``, ``token``, ``access_key``, ``client_secret``, ...) with ``=`` or ``:``,
  when the value is a literal of at least ``MIN_SECRET_CHARS`` characters. Values that
  look like code (``getpass()``, ``request.headers["x"]``, ``settings.token``) or
  placeholders (``${VAR}``, ``<token>``, ``{{ secrets.X }}``, ``changeme``) are kept.

Replacements never add or remove a newline, so line numbers stay valid. Redaction is a
best effort over heuristics: it errs towards redacting, and it does not promise to catch
every secret (a random string assigned to an innocently named variable survives).
"""

from __future__ import annotations

import re

__all__ = ["MIN_SECRET_CHARS", "REDACTED", "contains_secrets", "redact_secrets"]

REDACTED = "[REDACTED]"
MIN_SECRET_CHARS = 8  # shorter literal values are too weak to be worth hiding

# Cheap pre-check: text containing none of these cannot match the full pattern. Each
# word is spelled with a literal first letter, for the reason _assignment_alternatives
# gives: a leading (?i:...) group made this check four times slower on Python sources.
_TRIGGER_WORDS = ("pass", "pwd", "secret", "key", "token")
_TRIGGERS = re.compile(
    r"PRIVATE KEY|AKIA|ASIA|gh[pousr]_|github_pat_|xox[baprs]-|AIza|_live_|eyJ|://|"
    + "|".join(f"{first}(?i:{word[1:]})"
               for word in _TRIGGER_WORDS for first in (word[0], word[0].upper()))
)

_TOKENS = (
    # A private key block; an unterminated one runs to the end of the text.
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)"
    r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    r"A(?:KIA|SIA)(?<![A-Z0-9]....)[0-9A-Z]{16}(?![0-9A-Za-z])",  # AWS access key id
    r"gh(?<!\wgh)[pousr]_[A-Za-z0-9]{36,255}",  # GitHub classic tokens
    r"github_pat_(?<!\wgithub_pat_)\w{22,255}",  # GitHub fine-grained tokens
    r"xox(?<!\wxox)[baprs]-[A-Za-z0-9-]{10,}",  # Slack
    r"AIza(?<![\w-]AIza)[0-9A-Za-z_-]{35}",  # Google API key
    r"rk_live_(?<!\wrk_live_)[0-9A-Za-z]{16,}",  # Stripe restricted key
    r"sk_live_(?<!\wsk_live_)[0-9A-Za-z]{16,}",  # Stripe secret key
    r"eyJ(?<![\w-]eyJ)[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,}",  # JSON Web Token
    r"://[^\s:/@'\"]+:[^\s@/'\"]+(?=@)",  # URL credentials; the password is redacted
)

# Names whose assigned literal is a secret; the name must end there, so ``token_type``
# and ``max_tokens`` do not count while ``db_password`` and ``GITHUB_TOKEN`` do.
_SECRET_NAMES = (
    "pass(?:word|wd|phrase)", "pwd", "private[_-]?key", "secret", "secret[_-]?key",
    "api[_-]?key", "apikey", "token", "auth[_-]?token", "access[_-]?token",
    "access[_-]?key", "client[_-]?secret",
)
_AT_LEAST = f"{{{MIN_SECRET_CHARS},}}"
_ASSIGNED_VALUE = (
    r"(?![A-Za-z0-9])[\"']?[ \t]*(?::=|=>|=|:)[ \t]*"
    r"(?:[\"'](?P<quoted>[^\"'\s]" + _AT_LEAST + r")[\"']"
    r"|(?P<bare>[^\s\"'`,;()\[\]{}<>]" + _AT_LEAST + r")(?=[ \t\r]*(?:#|$)))"
)
_ASSIGNMENT = re.compile("(?i:" + "|".join(_SECRET_NAMES) + ")" + _ASSIGNED_VALUE, re.M)


def _assignment_alternatives() -> list[str]:
    """One alternative per name and case of its first letter, value pattern repeated.

    Every alternative of the combined pattern starts with a plain literal character, so
    the regex engine skips, in C, each position that cannot start a match; a shared
    ``(?i:...)`` group in front defeats that and made a pass over 1 MB of Python six
    times slower (measured: 115 ms against 19 ms).
    """
    # Repeated per alternative, the value pattern may not define named groups.
    value = re.sub(r"\(\?P<\w+>", "(?:", _ASSIGNED_VALUE)
    return [
        f"{first}(?i:{name[1:]}){value}"
        for name in _SECRET_NAMES
        for first in (name[0], name[0].upper())
    ]


_PATTERN = re.compile("|".join([*_TOKENS, *_assignment_alternatives()]), re.M)

_PLACEHOLDERS = frozenset(
    {"changeme", "password", "passwd", "secret", "example", "placeholder", "redacted",
     "xxxxxxxx", "********", "none", "null", "true", "false", "required", "optional"}
)
# A bare dotted identifier is a variable reference in code (``token = settings.token``);
# with a digit in it, it is far more likely a literal credential in a config file.
_IDENTIFIER_CHAIN = re.compile(r"[A-Za-z_][A-Za-z_.]*")


def contains_secrets(text: str) -> bool:
    """Whether ``redact_secrets`` would change ``text``: one scan, for a whole file."""
    return bool(_TRIGGERS.search(text) and _PATTERN.search(text))


def redact_secrets(text: str) -> str:
    """Return ``text`` with secret-looking strings replaced by ``[REDACTED]``.

    The result has exactly as many lines as ``text``. Pure; never raises.
    """
    if not _TRIGGERS.search(text):
        return text
    return _PATTERN.sub(_replacement, text)


def _replacement(match: re.Match[str]) -> str:
    found = match.group(0)
    if found.startswith("-----"):
        return _redact_block(found)
    if found.startswith("://"):
        user, _, password = found[3:].partition(":")
        if _is_placeholder(password, bare=False):
            return found
        return f"://{user}:{REDACTED}"
    assignment = _ASSIGNMENT.match(found)
    if assignment is None:
        return REDACTED
    return _redact_assignment(assignment)


def _redact_assignment(assignment: re.Match[str]) -> str:
    found = assignment.group(0)
    bare = assignment.group("bare") is not None
    group = "bare" if bare else "quoted"
    if _is_placeholder(assignment.group(group), bare=bare):
        return found
    return found[: assignment.start(group)] + REDACTED + found[assignment.end(group) :]


def _redact_block(block: str) -> str:
    """Keep the BEGIN and END lines; the key body becomes one marker plus empty lines."""
    lines = block.split("\n")
    end = [lines[-1]] if len(lines) > 1 and "-----END" in lines[-1] else []
    body_lines = len(lines) - 1 - len(end)
    if body_lines < 1:
        return REDACTED
    body = [REDACTED] + [""] * (body_lines - 1)
    return "\n".join([lines[0], *body, *end])


def _is_placeholder(value: str, *, bare: bool) -> bool:
    lowered = value.lower()
    return (
        lowered in _PLACEHOLDERS
        or lowered.startswith(("$", "%", "your", "{{", "<"))
        or (bare and _IDENTIFIER_CHAIN.fullmatch(value) is not None)
    )
