"""Which paths and contents are indexed: default exclusions, config globs, size, content.

Glob semantics are gitignore's (``pathspec``'s ``GitIgnoreSpec``): a pattern without a
slash matches a name at any depth (``*.min.js``), one with a leading or inner slash is
anchored at the repository root (``/build/``, ``docs/*.md``), a trailing slash matches a
directory and everything under it, ``**`` spans directories.

Decisions, in order (the first that applies wins):

1. ``include`` is not empty and no include glob matches → ``"not included"``.
2. An ``exclude`` glob matches → ``"excluded by config: <glob>"``.
3. A ``DEFAULT_EXCLUDES`` glob matches (when ``use_default_excludes``) →
   ``"excluded by default: <glob>"``, unless a *targeted* include glob matches the path:
   an include glob that itself names a default-excluded location, such as
   ``node_modules/left-pad/**`` or ``*.min.js``. A broad include like ``src/**`` does not
   pull ``src/node_modules/`` back in. Explicit beats default, but only when explicit.
4. The file is larger than ``max_file_bytes`` → ``"too large: N bytes > M"``.
5. ``languages.language_for_path`` knows no language for it → ``"unsupported file type"``.

After the blob is read, ``skip_reason_for_content`` adds ``"binary"``,
``"git-lfs pointer"`` and ``"minified"``.

Repository configuration lives in ``CONFIG_PATH`` under a top-level ``index:`` mapping::

    index:
      include: ["src/**", "docs/**"]
      exclude: ["src/legacy/**"]
      max_file_kb: 1000
      default_excludes: true

Other top-level keys belong to other parts of pr-context and are ignored here; unknown
keys *inside* ``index`` are errors, so a typo does not silently change what is indexed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

import pathspec
import yaml

from pr_context.errors import ConfigError
from pr_context.languages import language_for_path

__all__ = [
    "CONFIG_PATH",
    "DEFAULT_EXCLUDES",
    "MAX_FILE_BYTES",
    "PathPolicy",
    "decode_text",
    "policy_from_config",
    "skip_reason_for_content",
    "skip_reason_for_path",
]

CONFIG_PATH = ".github/pr-context.yml"
MAX_FILE_BYTES = 1_000_000
MAX_CONFIG_BYTES = 65_536  # a config file is a few lines; refuse anything absurd
POLICY_VERSION = 1  # bump when a rule below changes what is indexed

BINARY_SNIFF_BYTES = 8_192
BINARY_CONTROL_RATIO = 0.3  # share of control bytes in the sniffed head that means binary
LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/"
MINIFIED_MIN_BYTES = 4_096  # smaller files are cheap to index whatever they look like
MINIFIED_MEAN_LINE_CHARS = 300
MINIFIED_LONGEST_LINE_CHARS = 5_000
MINIFIED_SNIFF_BYTES = 65_536  # the longest-line test reads only this much of the head
_MINIFIABLE_SUFFIXES = frozenset({".js", ".mjs", ".cjs", ".css", ".json"})

DEFAULT_EXCLUDES: tuple[str, ...] = (
    # dependency folders and virtual environments
    "node_modules/", "bower_components/", "jspm_packages/", "site-packages/",
    ".venv/", "/venv/", "/env/", "__pypackages__/",
    # caches
    "__pycache__/", ".tox/", ".nox/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/",
    ".hypothesis/", ".gradle/", ".cache/", ".parcel-cache/", ".turbo/",
    # build output (``build/`` and ``out/`` only at the root: ``pkg/build/`` is often code)
    "/build/", "/out/", "/target/", "dist/", "_build/", ".next/", ".nuxt/", ".svelte-kit/",
    "coverage/", "htmlcov/", "*.egg-info/", ".eggs/",
    # lockfiles
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock",
    "Pipfile.lock", "pdm.lock", "uv.lock", "Cargo.lock", "go.sum", "composer.lock",
    "Gemfile.lock", "bun.lockb", "packages.lock.json",
    # minified and bundled code, source maps
    "*.min.js", "*.min.mjs", "*.min.css", "*.bundle.js", "*-bundle.js", "*.chunk.js", "*.map",
    # snapshots and recorded HTTP cassettes
    "__snapshots__/", "*.snap", "*.ambr", "cassettes/", "*_cassettes/", "*.cassette.yaml",
    # binary file types
    "*.png", "*.jpg", "*.jpeg", "*.gif", "*.bmp", "*.ico", "*.webp", "*.tif", "*.tiff",
    "*.psd", "*.woff", "*.woff2", "*.ttf", "*.otf", "*.eot", "*.pdf", "*.zip", "*.gz",
    "*.tgz", "*.bz2", "*.xz", "*.7z", "*.rar", "*.tar", "*.jar", "*.war", "*.whl", "*.egg",
    "*.pyc", "*.pyo", "*.so", "*.dylib", "*.dll", "*.exe", "*.o", "*.a", "*.class",
    "*.mp3", "*.mp4", "*.wav", "*.mov", "*.avi", "*.sqlite", "*.db", "*.npy", "*.npz",
    "*.pkl", "*.parquet",
)

_INDEX_KEY = "index"
_KNOWN_KEYS = frozenset({"include", "exclude", "max_file_kb", "default_excludes"})
_CONTROL_BYTES = bytes(range(32)).translate(None, b"\t\n\r\f\b\x1b") + b"\x7f"


@dataclass(frozen=True)
class PathPolicy:
    """Which paths are indexed; see the module docstring for how the fields combine."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_file_bytes: int = MAX_FILE_BYTES
    use_default_excludes: bool = True

    def describe(self) -> dict[str, Any]:
        """A JSON-able description, stored in the index manifest for people and artifacts."""
        return {
            "version": POLICY_VERSION,
            "include": list(self.include),
            "exclude": list(self.exclude),
            "max_file_bytes": self.max_file_bytes,
            "default_excludes": _digest(DEFAULT_EXCLUDES) if self.use_default_excludes else None,
        }

    def fingerprint(self) -> str:
        """A short stable hash: equal for policies that index exactly the same paths."""
        return _digest(self.describe())


def skip_reason_for_path(policy: PathPolicy, path: str, size: int) -> str | None:
    """Why ``path`` (repository-relative, ``/``) is not indexed, judged before reading it.

    ``size`` is in bytes; a negative size means unknown and is not judged. Returns None
    when the file should be read.
    """
    if policy.include and not _spec(policy.include).match_file(path):
        return "not included"
    glob = _matching_glob(policy.exclude, path)
    if glob is not None:
        return f"excluded by config: {glob}"
    glob = _default_exclusion(policy, path)
    if glob is not None:
        return f"excluded by default: {glob}"
    if size > policy.max_file_bytes:
        return f"too large: {size} bytes > {policy.max_file_bytes}"
    if language_for_path(path) is None:
        return "unsupported file type"
    return None


def skip_reason_for_content(policy: PathPolicy, path: str, data: bytes) -> str | None:
    """Why the file with these bytes is not indexed, or None.

    Reads at most a few tens of kilobytes of ``data`` apart from two C-speed counts, so a
    multi-megabyte minified bundle is rejected in milliseconds. ``policy`` is accepted for
    symmetry with ``skip_reason_for_path`` and for future per-policy content rules.
    """
    if len(data) > policy.max_file_bytes:
        return f"too large: {len(data)} bytes > {policy.max_file_bytes}"
    if data.startswith(LFS_POINTER_PREFIX):
        return "git-lfs pointer"
    if _looks_binary(data[:BINARY_SNIFF_BYTES]):
        return "binary"
    if PurePosixPath(path).suffix.lower() in _MINIFIABLE_SUFFIXES and _looks_minified(data):
        return "minified"
    return None


def decode_text(data: bytes) -> tuple[str, bool]:
    """Decode file bytes as UTF-8, dropping a byte-order mark.

    Returns ``(text, replaced)``: on invalid UTF-8 the undecodable bytes become U+FFFD and
    ``replaced`` is True, so the indexer can flag the file instead of dropping it. Line
    endings are left as they are.
    """
    try:
        return data.decode("utf-8-sig"), False
    except UnicodeDecodeError:
        return data.decode("utf-8-sig", errors="replace"), True


def policy_from_config(
    config_text: str | None, include: Sequence[str] = (), exclude: Sequence[str] = ()
) -> PathPolicy:
    """Build the policy from the text of ``CONFIG_PATH`` (None: no file) plus CLI globs.

    CLI ``include`` / ``exclude`` globs are added after the file's.

    :raises ConfigError: invalid YAML, a wrong type, an unknown key under ``index``, or
        an invalid glob; the one-line message names the file and the key.
    """
    section = _index_section(config_text)
    for key in section:
        if key not in _KNOWN_KEYS:
            known = ", ".join(sorted(_KNOWN_KEYS))
            raise ConfigError(f"{CONFIG_PATH}: unknown key index.{key} (known: {known})")
    policy = PathPolicy(
        include=(*_globs(section, "include"), *include),
        exclude=(*_globs(section, "exclude"), *exclude),
        max_file_bytes=_max_file_bytes(section),
        use_default_excludes=_flag(section, "default_excludes"),
    )
    _check_globs(policy.include + policy.exclude)
    return policy


def _index_section(config_text: str | None) -> dict[str, Any]:
    if config_text is None or not config_text.strip():
        return {}
    if len(config_text) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{CONFIG_PATH}: file is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        document = yaml.safe_load(config_text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{CONFIG_PATH}: invalid YAML: {_yaml_problem(exc)}") from exc
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise ConfigError(f"{CONFIG_PATH}: the top level must be a mapping of sections")
    section = document.get(_INDEX_KEY)
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ConfigError(f"{CONFIG_PATH}: {_INDEX_KEY} must be a mapping")
    return section


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "cannot parse"
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{problem}{where}"


def _globs(section: dict[str, Any], key: str) -> tuple[str, ...]:
    value = section.get(key, [])
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{CONFIG_PATH}: index.{key} must be a list of glob strings")
    return tuple(value)


def _max_file_bytes(section: dict[str, Any]) -> int:
    value = section.get("max_file_kb", MAX_FILE_BYTES // 1000)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(
            f"{CONFIG_PATH}: index.max_file_kb must be a positive integer, got {value!r}"
        )
    return value * 1000


def _flag(section: dict[str, Any], key: str) -> bool:
    value = section.get(key, True)
    if not isinstance(value, bool):
        raise ConfigError(f"{CONFIG_PATH}: index.{key} must be true or false, got {value!r}")
    return value


def _check_globs(globs: tuple[str, ...]) -> None:
    for glob in globs:
        try:
            _spec((glob,))
        except ValueError as exc:  # pathspec's GitWildMatchPatternError is a ValueError
            raise ConfigError(f"{CONFIG_PATH}: invalid glob {glob!r}: {exc}") from exc


@lru_cache(maxsize=1024)
def _spec(globs: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(globs)


def _matching_glob(globs: tuple[str, ...], path: str) -> str | None:
    """The glob that decides ``path`` under gitignore rules (last match wins), or None."""
    if not globs:
        return None
    result = _spec(globs).check_file(path)
    if not result.include or result.index is None:
        return None
    return globs[result.index]


def _default_exclusion(policy: PathPolicy, path: str) -> str | None:
    if not policy.use_default_excludes:
        return None
    glob = _default_glob(path)
    if glob is None or _spec(_targeted_includes(policy.include)).match_file(path):
        return None
    return glob


@lru_cache(maxsize=64)
def _targeted_includes(include: tuple[str, ...]) -> tuple[str, ...]:
    """Include globs that, read as paths, are themselves default-excluded."""
    return tuple(g for g in include if _default_glob(g.lstrip("/")))


def _default_glob(path: str) -> str | None:
    """The default exclusion that decides ``path`` under gitignore rules, or None.

    A path meets few of the many default globs: only those whose fixed text the path
    holds (``node_modules``, ``.min.js``), which every path they match must hold, are
    compiled and tried. Globs that cannot match do not change gitignore's decision.
    """
    return _matching_glob(tuple(g for g, fixed in _DEFAULT_FIXED_TEXT if fixed in path), path)


def _fixed_text(glob: str) -> str:
    """The longest run of ``glob`` that every path it matches contains ("" if unsure)."""
    if "\\" in glob:
        return ""
    runs = re.split(r"\*+|\?|\[[^\]]*\]", glob)
    return max((run.strip("/") for run in runs), key=len)


_DEFAULT_FIXED_TEXT = tuple((glob, _fixed_text(glob)) for glob in DEFAULT_EXCLUDES)


def _looks_binary(head: bytes) -> bool:
    if b"\0" in head:
        return True
    if not head:
        return False
    control = len(head) - len(head.translate(None, _CONTROL_BYTES))
    return control / len(head) > BINARY_CONTROL_RATIO


def _looks_minified(data: bytes) -> bool:
    """Very long lines on average, or one very long line near the top."""
    if len(data) < MINIFIED_MIN_BYTES:
        return False
    lines = data.count(b"\n") + 1
    if len(data) / lines > MINIFIED_MEAN_LINE_CHARS:
        return True
    head = data[:MINIFIED_SNIFF_BYTES].split(b"\n")
    return max(len(line) for line in head) > MINIFIED_LONGEST_LINE_CHARS


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
