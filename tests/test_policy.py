from __future__ import annotations

import pathspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pr_context.errors import ConfigError
from pr_context.policy import (
    DEFAULT_EXCLUDES,
    MAX_FILE_BYTES,
    PathPolicy,
    _default_glob,
    decode_text,
    policy_from_config,
    skip_reason_for_content,
    skip_reason_for_path,
)

_DEFAULT = PathPolicy()


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("node_modules/react/index.js", "excluded by default: node_modules/"),
        ("web/node_modules/lodash/lodash.js", "excluded by default: node_modules/"),
        (".venv/lib/python3.11/site-packages/six.py", "excluded by default: .venv/"),
        ("venv/bin/activate_this.py", "excluded by default: /venv/"),
        ("pkg/__pycache__/mod.cpython-311.pyc", "excluded by default: *.pyc"),
        (".tox/py311/log.txt", "excluded by default: .tox/"),
        ("build/lib/pkg/mod.py", "excluded by default: /build/"),
        ("dist/app.js", "excluded by default: dist/"),
        ("target/debug/build.rs", "excluded by default: /target/"),
        ("pkg.egg-info/PKG-INFO", "excluded by default: *.egg-info/"),
        ("docs/_build/html/index.html", "excluded by default: _build/"),
        ("package-lock.json", "excluded by default: package-lock.json"),
        ("frontend/yarn.lock", "excluded by default: yarn.lock"),
        ("poetry.lock", "excluded by default: poetry.lock"),
        ("go.sum", "excluded by default: go.sum"),
        ("Cargo.lock", "excluded by default: Cargo.lock"),
        ("static/vendor.min.js", "excluded by default: *.min.js"),
        ("static/site.min.css", "excluded by default: *.min.css"),
        ("static/app.js.map", "excluded by default: *.map"),
        ("src/__snapshots__/Button.test.tsx.snap", "excluded by default: *.snap"),
        ("tests/__snapshots__/test_api.ambr", "excluded by default: *.ambr"),
        ("tests/cassettes/test_fetch.yaml", "excluded by default: cassettes/"),
        ("spec/fixtures/vcr_cassettes/login.yml", "excluded by default: *_cassettes/"),
        ("docs/logo.png", "excluded by default: *.png"),
        ("fonts/Inter.woff2", "excluded by default: *.woff2"),
        ("release.zip", "excluded by default: *.zip"),
        # not excluded: looks alike but is source
        ("pkg/build/backend.py", None),
        ("src/env/settings.py", None),
        ("vendor/github.com/pkg/errors/errors.go", None),
        ("src/pkg/client.py", None),
        ("README", None),
        # unsupported
        ("assets/diagram.drawio", "unsupported file type"),
    ],
)
def test_default_policy_by_path(path: str, reason: str | None) -> None:
    assert skip_reason_for_path(_DEFAULT, path, 100) == reason


@pytest.mark.parametrize(
    ("policy", "path", "reason"),
    [
        (PathPolicy(include=("src/**",)), "src/a.py", None),
        (PathPolicy(include=("src/**",)), "tests/test_a.py", "not included"),
        (PathPolicy(exclude=("src/legacy/**",)), "src/legacy/a.py",
         "excluded by config: src/legacy/**"),
        (PathPolicy(exclude=("*.py", "!keep.py")), "keep.py", None),
        # a broad include does not pull dependency folders back in ...
        (PathPolicy(include=("web/**",)), "web/node_modules/x/index.js",
         "excluded by default: node_modules/"),
        # ... a targeted one does
        (PathPolicy(include=("web/**", "node_modules/left-pad/**")),
         "node_modules/left-pad/index.js", None),
        (PathPolicy(include=("*.min.js",)), "static/vendor.min.js", None),
        (PathPolicy(use_default_excludes=False), "node_modules/react/index.js", None),
        (PathPolicy(use_default_excludes=False), "docs/logo.png", "unsupported file type"),
        (PathPolicy(include=("src/**",), exclude=("src/gen/**",)), "src/gen/a.py",
         "excluded by config: src/gen/**"),
    ],
)
def test_configured_policy_by_path(policy: PathPolicy, path: str, reason: str | None) -> None:
    assert skip_reason_for_path(policy, path, 100) == reason


@pytest.mark.parametrize(
    ("size", "reason"),
    [
        (MAX_FILE_BYTES, None),
        (MAX_FILE_BYTES + 1, f"too large: {MAX_FILE_BYTES + 1} bytes > {MAX_FILE_BYTES}"),
        (-1, None),  # unknown size is judged after reading
    ],
)
def test_size_limit(size: int, reason: str | None) -> None:
    assert skip_reason_for_path(_DEFAULT, "src/big.py", size) == reason


@pytest.mark.parametrize(
    ("path", "data", "reason"),
    [
        ("src/a.py", b"def f():\n    return 1\n", None),
        ("src/blob.py", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        ("data/x.json", bytes(range(1, 32)) * 50, "binary"),
        ("model.json", b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12\n",
         "git-lfs pointer"),
        ("src/app.js", b"function a(){return 1}" * 500, "minified"),
        ("src/style.css", b"a{color:red}" * 1000, "minified"),
        ("src/app.js", b"/*! license */\n" + b"x" * 6_000 + b"\n" + b"var a = 1;\n" * 700,
         "minified"),
        ("src/app.js", b"const a = 1;\n" * 1000, None),
        ("src/long.py", b"x = '" + b"a" * 9000 + b"'\n", None),  # only JS/CSS/JSON are judged
        ("src/tiny.js", b"var a=1;" * 100, None),  # too small to bother
        ("src/utf8.md", "Überschrift — ünïcödé\n".encode() * 50, None),
    ],
)
def test_skip_reason_for_content(path: str, data: bytes, reason: str | None) -> None:
    assert skip_reason_for_content(_DEFAULT, path, data) == reason


def test_five_megabyte_minified_bundle_is_skipped() -> None:
    # Under the size limit, so only the content test can reject it.
    bundle = b"!function(e){var t={};function n(r){return t[r]}}(this);" * 90_000
    assert len(bundle) > 5_000_000
    policy = PathPolicy(max_file_bytes=10 * len(bundle))
    assert skip_reason_for_content(policy, "static/app.js", bundle) == "minified"


@pytest.mark.parametrize(
    ("data", "text", "replaced"),
    [
        (b"plain\n", "plain\n", False),
        (b"\xef\xbb\xbfwith bom\n", "with bom\n", False),
        ("ünïcödé".encode(), "ünïcödé", False),
        (b"caf\xe9 latin-1\n", "caf\ufffd latin-1\n", True),
        (b"\xef\xbb\xbfbad \xff\n", "bad \ufffd\n", True),
    ],
)
def test_decode_text(data: bytes, text: str, replaced: bool) -> None:
    assert decode_text(data) == (text, replaced)


_FULL_CONFIG = """
review:
  max_symbols: 20          # another section: ignored here
index:
  include: ["src/**", "docs/**"]
  exclude:
    - src/legacy/**
  max_file_kb: 250
  default_excludes: false
"""


def test_policy_from_config_reads_the_index_section() -> None:
    policy = policy_from_config(_FULL_CONFIG, include=("tools/**",), exclude=("*.snap",))
    assert policy == PathPolicy(
        include=("src/**", "docs/**", "tools/**"),
        exclude=("src/legacy/**", "*.snap"),
        max_file_bytes=250_000,
        use_default_excludes=False,
    )


@pytest.mark.parametrize("text", [None, "", "# only a comment\n", "review: {}\n", "index:\n"])
def test_policy_from_config_defaults(text: str | None) -> None:
    assert policy_from_config(text) == PathPolicy()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("index: [src]\n", "index must be a mapping"),
        ("- a\n- b\n", "top level must be a mapping"),
        ("index:\n  include: src/**\n", "index.include must be a list of glob strings"),
        ("index:\n  exclude: [1, 2]\n", "index.exclude must be a list of glob strings"),
        ("index:\n  max_file_kb: big\n", "index.max_file_kb must be a positive integer"),
        ("index:\n  max_file_kb: 0\n", "index.max_file_kb must be a positive integer"),
        ("index:\n  max_file_kb: true\n", "index.max_file_kb must be a positive integer"),
        ("index:\n  default_excludes: maybe\n", "index.default_excludes must be true or false"),
        ("index:\n  includes: [src]\n", "unknown key index.includes"),
        ("index:\n  include: [src\n", "invalid YAML"),
        ("index:\n  exclude: ['!']\n", "invalid glob '!'"),
    ],
)
def test_policy_from_config_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        policy_from_config(text)
    assert str(caught.value).startswith(".github/pr-context.yml: ")
    assert "\n" not in str(caught.value)


def test_fingerprint_is_stable_and_sensitive() -> None:
    assert PathPolicy().fingerprint() == PathPolicy().fingerprint()
    variants = {
        PathPolicy().fingerprint(),
        PathPolicy(include=("src/**",)).fingerprint(),
        PathPolicy(exclude=("src/**",)).fingerprint(),
        PathPolicy(max_file_bytes=10).fingerprint(),
        PathPolicy(use_default_excludes=False).fingerprint(),
    }
    assert len(variants) == 5
    assert PathPolicy(include=("a",)).describe()["include"] == ["a"]


_GLOB_WORDS = sorted({w for g in DEFAULT_EXCLUDES for w in g.replace("*", "x").split("/") if w})
_SEGMENTS = st.sampled_from([*_GLOB_WORDS, *(w.upper() for w in _GLOB_WORDS), "src", "a",
                             "pkg.py", "x.min.js.txt", "venvx", "build"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_SEGMENTS, min_size=1, max_size=4), st.sampled_from(["", "z", "/f.py"]))
def test_default_exclusion_agrees_with_gitignore_over_all_globs(segments: list[str],
                                                                 tail: str) -> None:
    # Only the default globs whose fixed text a path holds are tried: the decision must
    # stay the one gitignore takes over the whole list, the glob it names included.
    path = "/".join(segments) + tail
    spec = pathspec.GitIgnoreSpec.from_lines(DEFAULT_EXCLUDES)
    result = spec.check_file(path)
    expected = DEFAULT_EXCLUDES[result.index] if result.include and result.index is not None \
        else None
    assert _default_glob(path) == expected

