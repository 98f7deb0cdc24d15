"""The mined evaluation corpus: cases generated from PyPI packages, split by package.

``evals/mined.yml`` names the packages (each a ``pypi`` corpus of corpora.yml), their
split (``tuning`` or ``heldout``: a whole package is one or the other) and a coarse
domain, plus how many cases of each class to mine per package. For each package:

1. the pinned sdist is prepared as any corpus (``corpora.py``);
2. behaviour questions are drafted from its docstrings (``mining``);
3. the **eval copy** is made: a clone whose one extra commit removes exactly those
   docstrings, so the answer's text does not repeat the question;
4. stack traces, how-to, test, docs and example lookups are drafted from the eval copy;
5. negatives are questions drafted for packages of *other* domains.

Cases are pinned to the eval copy's commit, which is deterministic (fixed identity,
date and parent), and written to ``<cache>/mined/cases.jsonl`` for inspection; nothing
of the packages is committed here. Side effects: git and ``pip download`` under the
cache directory, like ``corpora.py``.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from pr_context.evals.cases import QUERY_CLASSES, SPLITS, Case, QueryClass, Split
from pr_context.evals.corpora import (
    Corpus,
    Downloader,
    PypiCorpus,
    checkout_copy,
    commit_tree,
    corpus_repository,
)
from pr_context.evals.errors import CorporaFileError
from pr_context.evals.mining import (
    Draft,
    HiddenDocstring,
    SourceFile,
    behaviour_drafts,
    doc_lookup_drafts,
    example_lookup_drafts,
    named_test_drafts,
    strip_docstrings,
)
from pr_context.evals.mining_docs import how_to_drafts
from pr_context.evals.mining_raises import stack_trace_drafts
from pr_context.git import BlobReader, list_files, open_repository, resolve_revision
from pr_context.languages import language_for_path
from pr_context.models import Sha
from pr_context.parse import parse_file
from pr_context.policy import (
    PathPolicy,
    decode_text,
    skip_reason_for_content,
    skip_reason_for_path,
)
from pr_context.retrieve.tokens import identifiers, tokenize
from pr_context.roles import classify_path

__all__ = [
    "DEFAULT_MINED_PATH",
    "MINING_VERSION",
    "MinedConfig",
    "MinedPackage",
    "MinedSet",
    "case_json",
    "load_mined_config",
    "prepare_mined",
    "read_source",
]

DEFAULT_MINED_PATH = Path("evals/mined.yml")
# Bump when a miner changes what it drafts: the eval copies and cases are re-made.
MINING_VERSION = 1
MIN_NEGATIVE_WORDS = 3
SPECIFIC_WORD_PACKAGES = 2
# Negatives mix the classes a lost user asks most: a behaviour question, an error
# message, a how-to.
NEGATIVE_SOURCES: tuple[QueryClass, ...] = ("behavior", "stack_trace", "how_to_use")
_CLASS_TAGS = {"behavior": "b", "stack_trace": "s", "how_to_use": "h", "test_lookup": "t",
               "doc_lookup": "d", "example_lookup": "e", "negative": "n", "identifier": "i"}


@dataclass(frozen=True)
class MinedPackage:
    name: str
    split: Split
    domain: str


@dataclass(frozen=True)
class MinedConfig:
    seed: int
    cutoff: int
    per_class: Mapping[QueryClass, int]
    packages: tuple[MinedPackage, ...]


@dataclass(frozen=True)
class MinedSet:
    """The mined cases and, per package, the eval copy they are pinned to."""

    cases: tuple[Case, ...]
    repos: Mapping[str, Path]


def load_mined_config(path: Path = DEFAULT_MINED_PATH) -> MinedConfig:
    """Read and validate mined.yml. :raises CorporaFileError: unreadable or invalid."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise CorporaFileError(f"cannot read mined corpus file {path}: {exc}") from exc
    try:
        return _parse_config(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise CorporaFileError(f"{path}: {exc}") from exc


def _parse_config(data: object) -> MinedConfig:
    if not isinstance(data, dict) or set(data) != {"seed", "cutoff", "per_package",
                                                   "packages"}:
        raise ValueError("expected exactly the keys seed, cutoff, per_package, packages")
    per_class = {str(k): int(v) for k, v in dict(data["per_package"]).items()}
    unknown = sorted(set(per_class) - set(QUERY_CLASSES))
    if unknown:
        raise ValueError(f"per_package names unknown classes {unknown}")
    packages = []
    for name, entry in dict(data["packages"]).items():
        if entry.get("split") not in SPLITS or not entry.get("domain"):
            raise ValueError(f"package {name!r} needs split (tuning or heldout) and domain")
        packages.append(MinedPackage(str(name), entry["split"], str(entry["domain"])))
    return MinedConfig(int(data["seed"]), int(data["cutoff"]),
                       per_class,  # type: ignore[arg-type]  # checked just above
                       tuple(packages))


def read_source(repo: Path, revision: str) -> list[SourceFile]:
    """Every file the index would hold at ``revision``, parsed as the index parses it."""
    repository = open_repository(repo)
    sha = resolve_revision(repository, revision)
    policy = PathPolicy()
    files = []
    with BlobReader(repository) as blobs:
        for entry in list_files(repository, sha):
            language = language_for_path(entry.path)
            if language is None or entry.mode not in ("100644", "100755") or \
                    skip_reason_for_path(policy, entry.path, entry.size):
                continue
            data = blobs.read(entry.blob_sha)
            if skip_reason_for_content(policy, entry.path, data):
                continue
            text = decode_text(data)[0]
            role = classify_path(entry.path, text)
            files.append(SourceFile(entry.path, language, role, text,
                                    parse_file(entry.path, text, language, role)))
    return files


@dataclass(frozen=True)
class _Mined:
    package: MinedPackage
    repo: Path
    revision: Sha
    drafts: list[Draft]
    identifiers: frozenset[str]  # names the package defines
    vocabulary: frozenset[str]  # every token of its files


def prepare_mined(config: MinedConfig, corpora: Mapping[str, Corpus], cache_dir: Path,
                  download: Downloader | None = None) -> MinedSet:
    """Mine every package (or reuse its eval copy), add negatives, number the cases.

    :raises CorporaFileError: a package is not a pypi corpus of corpora.yml.
    """
    mined = [_mine_package(config, p, _pypi(corpora, p.name), cache_dir, download)
             for p in config.packages]
    cases: list[Case] = []
    for item in mined:
        drafts = [*item.drafts, *_negatives(config, item, mined)]
        cases.extend(_numbered(config, item, drafts))
    out = cache_dir / "mined" / "cases.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(case_json(c)) + "\n" for c in cases), encoding="utf-8")
    return MinedSet(tuple(cases), {m.package.name: m.repo for m in mined})


def _pypi(corpora: Mapping[str, Corpus], name: str) -> PypiCorpus:
    corpus = corpora.get(name)
    if not isinstance(corpus, PypiCorpus):
        raise CorporaFileError(f"mined package {name!r} must be a pypi corpus of corpora.yml")
    return corpus


def _mine_package(config: MinedConfig, package: MinedPackage, corpus: PypiCorpus,
                  cache_dir: Path, download: Downloader | None) -> _Mined:
    source_repo = corpus_repository(corpus, cache_dir, download)
    rng = random.Random(f"{config.seed}:{package.name}")
    limit = config.per_class.get
    original = read_source(source_repo, corpus.revision)
    behaviour = behaviour_drafts(original, package.name, rng, limit("behavior", 0))
    copy, revision = _eval_copy(source_repo, corpus.revision, [h for _, h in behaviour],
                                cache_dir / "mined" / "copies" / corpus.name)
    files = read_source(copy, revision)
    known = {w for f in files if f.role == "docs" for w in tokenize(f.text)} | {
        w.lower() for f in files if f.role == "docs" for w in f.text.split()}
    drafts = [d for d, _ in behaviour]
    drafts += stack_trace_drafts(files, _exception_names(files), rng, limit("stack_trace", 0))
    drafts += how_to_drafts(files, package.name, known, rng, limit("how_to_use", 0))
    drafts += named_test_drafts(files, rng, limit("test_lookup", 0))
    drafts += doc_lookup_drafts(files, rng, limit("doc_lookup", 0))
    drafts += example_lookup_drafts(files, rng, limit("example_lookup", 0))
    names = frozenset(d.name for f in files for d in f.parsed.definitions)
    vocabulary = frozenset(t for f in files for t in tokenize(f.text))
    return _Mined(package, copy, revision, drafts, names, vocabulary)


def _exception_names(files: Sequence[SourceFile]) -> dict[str, str]:
    """Class name -> qualified name, for the package's production classes."""
    return {d.name: d.qualified_name for f in files if f.role == "production"
            for d in f.parsed.definitions if d.kind == "class"}


def _eval_copy(source: Path, revision: Sha, hidden: Sequence[HiddenDocstring],
               dest: Path) -> tuple[Path, Sha]:
    """A clone of ``source`` whose one commit on ``revision`` removes ``hidden``.

    Reused while the same docstrings are hidden by the same mining version.
    """
    key = hashlib.sha256(json.dumps(
        [MINING_VERSION, revision, sorted((h.path, h.name, h.start_line) for h in hidden)]
    ).encode()).hexdigest()
    stamp = dest.with_suffix(".json")
    if stamp.is_file() and (dest / ".git").is_dir():
        saved = json.loads(stamp.read_text(encoding="utf-8"))
        if saved.get("key") == key:
            return dest, Sha(saved["revision"])
    checkout_copy(source, dest, revision)
    by_path: dict[str, list[HiddenDocstring]] = defaultdict(list)
    for item in hidden:
        by_path[item.path].append(item)
    for path, items in sorted(by_path.items()):
        file = dest / path
        file.write_text(strip_docstrings(file.read_text(encoding="utf-8"), items),
                        encoding="utf-8")
    sha = commit_tree(dest, f"eval copy: {len(hidden)} docstrings removed")
    stamp.write_text(json.dumps({"key": key, "revision": sha}), encoding="utf-8")
    return dest, sha


def _negatives(config: MinedConfig, item: _Mined, mined: Sequence[_Mined]) -> list[Draft]:
    """Questions mined from packages of other domains, asked of this one.

    The other package's name in a question becomes this one's ("how do I ... in
    click?"), and an error message loses the other package's exception name. Left out:
    pasted tracebacks (their paths name the other package), questions naming a class or
    function this package defines (it may be asked of this package after all), and
    questions with no word specific to where they came from (used by at most
    ``SPECIFIC_WORD_PACKAGES`` packages): "return a tuple with two values" is no
    question of any one package.
    """
    rng = random.Random(f"{config.seed}:{item.package.name}:negatives")
    spread: dict[str, int] = defaultdict(int)
    for other in mined:
        for token in other.vocabulary:
            spread[token] += 1
    pool = []
    for other in mined:
        if other.package.domain == item.package.domain:
            continue
        for draft in other.drafts:
            query = _asked_of(draft, other.package.name, item.package.name)
            if (draft.query_class in NEGATIVE_SOURCES and query is not None
                    and _specific(query, item.package.name, spread)
                    and not {n.rsplit(".", 1)[-1] for n in identifiers(query)}
                    & item.identifiers):
                pool.append((query, draft.query_class, other.package.name))
    pool.sort()
    rng.shuffle(pool)
    return [Draft("negative", query, (), f"a {query_class} question mined from {source}, "
                  f"a package of another domain than {item.package.name}'s")
            for query, query_class, source in pool[:config.per_class.get("negative", 0)]]


_QUALIFIED_REPORT = re.compile(r"^[A-Za-z_][\w.]*\.[A-Za-z_]\w*: ")


def _asked_of(draft: Draft, source: str, target: str) -> str | None:
    """The draft's question asked of ``target`` instead of ``source``; None for a
    traceback. An error message is pasted as it is, less the other package's exception
    name; a question naming the other package names this one."""
    query = draft.query
    if "\n" in query:
        return None
    if draft.query_class == "stack_trace":
        return _QUALIFIED_REPORT.sub("", query) if query.startswith(
            source.replace("-", "_") + ".") else query
    return re.sub(rf"\b{re.escape(source)}\b", target, query)


def _specific(query: str, package: str, spread: Mapping[str, int]) -> bool:
    tokens = set(tokenize(query, drop_stopwords=True)) - set(tokenize(package))
    return len(tokens) >= MIN_NEGATIVE_WORDS and any(
        spread.get(t, 0) <= SPECIFIC_WORD_PACKAGES for t in tokens)


def _numbered(config: MinedConfig, item: _Mined, drafts: Sequence[Draft]) -> list[Case]:
    counters: dict[str, int] = defaultdict(int)
    cases = []
    for draft in drafts:
        counters[draft.query_class] += 1
        tag = _CLASS_TAGS[draft.query_class]
        cases.append(Case(
            id=f"{item.package.name}-{tag}{counters[draft.query_class]:03d}",
            query=draft.query, query_class=draft.query_class, repo=item.package.name,
            revision=item.revision, groups=draft.groups, cutoff=config.cutoff,
            split=item.package.split, rationale=draft.rationale))
    return cases


def case_json(case: Case) -> dict[str, object]:
    """A case as one line of the case format (evals/README.md)."""
    return {
        "id": case.id, "query": case.query, "query_class": case.query_class,
        "repo": case.repo, "revision": case.revision, "path_context": case.path_context,
        "groups": [{"id": g.id, "anyOf": [
            {"file": t.file, **({"symbol": t.symbol} if t.symbol else {}),
             **({"roles": list(t.roles)} if t.roles else {})} for t in g.any_of]}
            for g in case.groups],
        "forbidden": list(case.forbidden), "cutoff": case.cutoff, "split": case.split,
        "rationale": case.rationale}
