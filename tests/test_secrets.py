from __future__ import annotations

from pathlib import Path

import pytest

from pr_context.secrets import REDACTED, contains_secrets, redact_secrets

# Assembled at run time so this file does not itself trip secret scanners.
_GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
_AWS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"
_JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (f"aws_key = {_AWS_KEY_ID}", f"aws_key = {REDACTED}"),
        (f"ASIA{'Q' * 16} in a log", f"{REDACTED} in a log"),
        (f"GH={_GITHUB_TOKEN}", f"GH={REDACTED}"),
        ("token github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuv", f"token {REDACTED}"),
        ("SLACK_HOOK xoxb-" + "1234567890-abcdefghijkl", f"SLACK_HOOK {REDACTED}"),
        ("key: AIza" + "SyA1234567890abcdefghijklmnopqrstuv", f"key: {REDACTED}"),
        ("stripe.api_key = sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", f"stripe.api_key = {REDACTED}"),
        (f"Authorization: Bearer {_JWT}", f"Authorization: Bearer {REDACTED}"),
        ('DB = "postgres://admin:pa55w0rd@db:5432/app"', f'DB = "postgres://admin:{REDACTED}@db:5432/app"'),
        ('db_password = "hunter2hunter2"', f'db_password = "{REDACTED}"'),
        ("  password: s3cr3tP4ss", f"  password: {REDACTED}"),
        ('"client_secret": "a8f7d6e5c4b3a2"', f'"client_secret": "{REDACTED}"'),
        ("API_KEY=abc123def456ghi", f"API_KEY={REDACTED}"),
        ('Db_PassWord = "hunter2hunter2"', f'Db_PassWord = "{REDACTED}"'),
        ("ApiToKen: x9y8z7w6v5u4", f"ApiToKen: {REDACTED}"),
        ("SECRET_KEY = 'django-insecure-0a9s8d7f'", f"SECRET_KEY = '{REDACTED}'"),
        ('login(user, password="correcthorse99")', f'login(user, password="{REDACTED}")'),
        ("auth_token: x9y8z7w6v5u4  # rotate monthly", f"auth_token: {REDACTED}  # rotate monthly"),
    ],
)
def test_secret_is_redacted(line: str, expected: str) -> None:
    assert redact_secrets(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        "password = getpass()",
        'token = request.headers["x"]',
        "token = settings.auth_token",
        'secret_key = os.environ["SECRET_KEY"]',
        "token: ${{ secrets.GITHUB_TOKEN }}",
        "password: ${DB_PASSWORD}",
        'api_key = "<your-api-key>"',
        'password = "changeme"',
        'password = "short"',
        'token_type = "bearer_token"',
        "max_tokens = 100000000",
        'prompt = "Enter your password"',
        "url = 'https://example.com:8080/path'",
        "url = 'https://user:${TOKEN}@example.com'",
        "def check_password(password: str) -> bool:",
        "if token == expected_token:",
    ],
)
def test_ordinary_code_is_untouched(line: str) -> None:
    assert redact_secrets(line) == line


def test_private_key_block_keeps_line_count_and_markers() -> None:
    text = "\n".join(
        [
            "KEY = '''",
            "-----BEGIN RSA PRIVATE KEY-----",
            "MIIEowIBAAKCAQEAv1x0+abc",
            "qH7nSuvQ4ssDe5ly3sSUoNE",
            "zq1KeLLrVh8O/pSGMw==",
            "-----END RSA PRIVATE KEY-----",
            "'''",
            "x = 1",
        ]
    )
    redacted = redact_secrets(text).split("\n")
    assert redacted == [
        "KEY = '''",
        "-----BEGIN RSA PRIVATE KEY-----",
        REDACTED,
        "",
        "",
        "-----END RSA PRIVATE KEY-----",
        "'''",
        "x = 1",
    ]


def test_unterminated_private_key_is_redacted_to_the_end() -> None:
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\nAAAAB3NzaC1yc2E"
    assert redact_secrets(text) == f"-----BEGIN OPENSSH PRIVATE KEY-----\n{REDACTED}\n"


def test_line_count_is_preserved_in_a_mixed_file() -> None:
    text = (
        f"a = '{_GITHUB_TOKEN}'\n"
        "-----BEGIN PRIVATE KEY-----\nAAA\nBBB\n-----END PRIVATE KEY-----\n"
        'password = "hunter2hunter2"\n'
        "plain line\n"
    )
    redacted = redact_secrets(text)
    assert redacted.count("\n") == text.count("\n")
    assert _GITHUB_TOKEN not in redacted
    assert "hunter2hunter2" not in redacted
    assert redacted.endswith("plain line\n")


def test_a_megabyte_of_code_without_secrets_is_left_alone() -> None:
    # Speed is measured by evals/bench_index.py, not here; this guards the result.
    source = Path(__file__).resolve().parents[1] / "pr_context" / "policy.py"
    code = source.read_text(encoding="utf-8")
    text = (code * (1_000_000 // len(code) + 1))[:1_000_000]
    assert not contains_secrets(text)
    assert redact_secrets(text) == text
