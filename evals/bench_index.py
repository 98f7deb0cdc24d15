"""Indexing benchmark: how fast ``pr-context index`` builds and updates an index.

Usage::

    python evals/bench_index.py            # full run, writes docs/performance.md
    python evals/bench_index.py --quick    # small corpora, a sanity run of every figure

Corpora are released source code nobody here wrote: PyPI sdists (``pip download``) and an
npm tarball (``npm pack``), pinned below, cached in ``evals/.cache/`` (git-ignored) and
turned into git repositories, one commit per release. Every index build except figure 2
runs in its own ``pr-context index --json`` process, so interpreter start-up, imports,
model loading and peak RSS are what a user gets.

Side effects: downloads into ``evals/.cache/``, runs git, npm and pip, writes the report
(``--out``) and the raw figures to ``evals/out/bench_index.json``.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pr_context.graph.stored import GRAPH_STAGE

EVALS_DIR = Path(__file__).resolve().parent
ROOT = EVALS_DIR.parent
CACHE_DIR = EVALS_DIR / ".cache"
OUT_DIR = EVALS_DIR / "out"
DEFAULT_REPORT = ROOT / "docs" / "performance.md"
QUICK_REPORT = OUT_DIR / "performance-quick.md"

# Targets from the indexing issue, on a 2-core runner.
TARGET_FILES_PER_S = 300.0  # parse + index without embeddings
TARGET_EMBED_OVERHEAD = 1.25  # full build with embeddings / the model's own encode time
TARGET_INCREMENTAL_SPEEDUP = 20.0  # full build / 1-file update
TARGET_PEAK_RSS_MB = 1536.0  # 1.5 GB while indexing a 2,000+ file repository
# "Its cost grows with the diff, not with the repository": the same 1-file update on a
# repository this many times larger may cost at most this many times more.
SCALING_MIN_FILES = 10.0
SCALING_MAX_COST = 2.0

REPEATS = 5  # runs of each build that takes seconds; the median run is reported
ENCODE_BATCH_SIZE = 32  # what SentenceTransformerEmbedder uses
GIT_DATE = "2024-01-01T00:00:00+00:00"  # fixed commit dates: the same SHAs every run
EDIT_FUNCTION = '''

def _pr_context_benchmark_edit(value):
    """Appended by evals/bench_index.py: a one-function change to index incrementally."""
    return value
'''
EDIT_TAG = "edited"
STAGE_LINE = re.compile(r"^pr-context: (?P<stage>[a-z ]+): (?P<n>\d+) done in (?P<s>[\d.]+)s$")


@dataclass(frozen=True)
class Release:
    """One pinned release of a package, from PyPI (an sdist) or npm (``npm pack``)."""

    name: str
    version: str
    registry: Literal["pypi", "npm"] = "pypi"
    keep: tuple[str, ...] = ()  # path prefixes to keep; empty keeps everything

    @property
    def tag(self) -> str:
        return f"v{self.version}"


@dataclass(frozen=True)
class Corpus:
    """A git repository with one commit per release, plus an optional one-file edit."""

    name: str
    releases: tuple[Release, ...]
    edit_path: str | None = None  # .py file that gets EDIT_FUNCTION appended

    @property
    def head_tag(self) -> str:
        return self.releases[-1].tag


@dataclass(frozen=True)
class Plan:
    """Which corpus serves which figure."""

    parse: tuple[Corpus, ...]  # figure 1
    embed: Corpus  # figure 2
    release: Corpus  # update from one release to the next (needs two releases)
    incremental: Corpus  # figures 3 and 4 (needs edit_path)
    # The 1-file update without embeddings on repositories of growing size (each needs
    # edit_path; the incremental corpus among them): its cost should follow the diff.
    scaling: tuple[Corpus, ...] = ()


_WERKZEUG = Corpus("werkzeug", (Release("werkzeug", "3.0.6"), Release("werkzeug", "3.1.3")),
                   edit_path="src/werkzeug/utils.py")
_DJANGO = Corpus("django", (Release("django", "5.1.4"),), edit_path="django/utils/text.py")
# Django without its 27,000-chunk test suite: a build with embeddings of the whole sdist
# takes over an hour on two shared cores; this one keeps 4,300 files (1,800 indexed).
_DJANGO_CORE = Corpus(
    "django-core",
    (Release("django", "5.1.4", keep=("django/", "docs/", "README.rst", "pyproject.toml")),),
    edit_path="django/utils/text.py",
)
_RICH = Corpus("rich", (Release("rich", "13.9.4"),))
_RXJS = Corpus("rxjs", (Release("rxjs", "7.8.1", "npm",
                                keep=("src/", "package.json", "README.md")),))
_ITSDANGEROUS = Corpus(
    "itsdangerous",
    (Release("itsdangerous", "2.1.2"), Release("itsdangerous", "2.2.0")),
    edit_path="src/itsdangerous/signer.py",
)
_MARKUPSAFE = Corpus("markupsafe", (Release("markupsafe", "3.0.2"),),
                     edit_path="src/markupsafe/__init__.py")

FULL_PLAN = Plan(parse=(_WERKZEUG, _RICH, _RXJS, _DJANGO), embed=_WERKZEUG,
                 release=_WERKZEUG, incremental=_DJANGO_CORE,
                 scaling=(_WERKZEUG, _DJANGO_CORE, _DJANGO))
QUICK_PLAN = Plan(parse=(_ITSDANGEROUS, _MARKUPSAFE), embed=_ITSDANGEROUS,
                  release=_ITSDANGEROUS, incremental=_ITSDANGEROUS,
                  scaling=(_MARKUPSAFE, _ITSDANGEROUS))


@dataclass(frozen=True)
class Run:
    """One ``pr-context index`` process: its JSON result, wall time and peak RSS."""

    corpus: str
    rev: str
    embeddings: bool
    wall_s: float
    peak_rss_mb: float
    result: dict[str, object]
    stages_s: dict[str, float] = field(default_factory=dict)  # from its progress log

    def count(self, key: str) -> int:
        value = self.result[key]
        assert isinstance(value, int)
        return value

    @property
    def build_s(self) -> float:
        """Seconds inside build_index, as the index reports them (no start-up, no imports)."""
        value = self.result["seconds"]
        assert isinstance(value, float | int)
        return float(value)


@dataclass(frozen=True)
class EncodeFigure:
    """Figure 2: one build with embeddings against the model alone on the same texts."""

    corpus: str
    texts: int
    build_s: float
    encode_before_s: float
    encode_after_s: float
    stages_s: dict[str, float]
    encode_in_build_s: float = 0.0  # the model's own encode calls inside the build

    @property
    def encode_s(self) -> float:
        return (self.encode_before_s + self.encode_after_s) / 2

    @property
    def overhead(self) -> float:
        """Build time over the model's encode time within that same build.

        Both clocks run over the same minutes, so the machine's drift cancels; the raw
        encodes before and after are kept as a cross-check.
        """
        return self.build_s / (self.encode_in_build_s or self.encode_s)

    @property
    def overhead_vs_raw(self) -> float:
        return self.build_s / self.encode_s


# -- corpora ------------------------------------------------------------------------------


def prepare_corpus(corpus: Corpus) -> Path:
    """The corpus's git repository under the cache, built on first use."""
    repo = CACHE_DIR / "repos" / corpus.name
    marker = repo / ".git" / "bench-corpus.json"
    spec = json.dumps(asdict(corpus), sort_keys=True)
    if marker.is_file() and marker.read_text() == spec:
        return repo
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    for release in corpus.releases:
        _clear_work_tree(repo)
        _extract(_download(release), repo, release.keep)
        _commit(repo, f"{release.name} {release.version}", release.tag)
    if corpus.edit_path is not None:
        with (repo / corpus.edit_path).open("a", encoding="utf-8") as f:
            f.write(EDIT_FUNCTION)
        _commit(repo, f"append one function to {corpus.edit_path}", EDIT_TAG)
    marker.write_text(spec)
    return repo


def _download(release: Release) -> Path:
    """The release's tarball, downloaded once into the cache."""
    target = CACHE_DIR / "downloads" / f"{release.name}-{release.version}"
    found = sorted(target.glob("*.t*gz")) if target.is_dir() else []
    if found:
        return found[0]
    target.mkdir(parents=True, exist_ok=True)
    if release.registry == "pypi":
        _check([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                "--no-binary", ":all:", f"{release.name}=={release.version}",
                "-d", str(target)])
    else:
        _check(["npm", "pack", "--silent", f"{release.name}@{release.version}"], cwd=target)
    found = sorted(target.glob("*.t*gz"))
    if not found:
        raise SystemExit(f"no tarball for {release.name} {release.version} in {target}")
    return found[0]


def _extract(tarball: Path, dest: Path, keep: tuple[str, ...]) -> None:
    """Unpack without the archive's top folder, keeping only ``keep`` prefixes if given."""
    with tarfile.open(tarball) as archive:
        members = []
        for member in archive.getmembers():
            _, _, inner = member.name.partition("/")
            if inner and (not keep or inner.startswith(keep)):
                member.name = inner
                members.append(member)
        archive.extractall(dest, members=members, filter="data")


def _clear_work_tree(repo: Path) -> None:
    for entry in repo.iterdir():
        if entry.name == ".git":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _commit(repo: Path, message: str, tag: str) -> None:
    # -f: an sdist may carry a .gitignore that would hide its own files.
    _git(repo, "add", "-A", "-f")
    _git(repo, "commit", "-q", "--no-verify", "-m", message)
    _git(repo, "tag", tag)


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": GIT_DATE, "GIT_COMMITTER_DATE": GIT_DATE}
    command = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
               "-c", "commit.gpgsign=false", *args]
    return _check(command, cwd=repo, env=env)


def _check(command: Sequence[str], cwd: Path | None = None,
           env: dict[str, str] | None = None) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def tracked_files(repo: Path, rev: str) -> int:
    return len(_git(repo, "ls-tree", "-r", "--name-only", rev).splitlines())


# -- measuring ----------------------------------------------------------------------------


def run_index(corpus: str, repo: Path, rev: str, db: Path, embeddings: bool,
              extra: Sequence[str] = ()) -> Run:
    """Run ``pr-context index`` in a child process; time it and read its peak RSS."""
    command = [sys.executable, "-m", "pr_context", "index", "--repo", str(repo),
               "--rev", rev, "--db", str(db), "--json", *extra]
    if not embeddings:
        command.append("--no-embeddings")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err)
        # wait4 gives this child's own rusage; RUSAGE_CHILDREN would be a running maximum.
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}):\n{stderr}")
    run = Run(corpus=corpus, rev=rev, embeddings=embeddings, wall_s=wall,
              peak_rss_mb=usage.ru_maxrss / 1024,  # Linux reports KiB
              result=json.loads(stdout), stages_s=_stage_seconds(stderr))
    _log(f"{corpus}@{rev} {'with' if embeddings else 'without'} embeddings: "
         f"{run.count('files')} files, {run.count('chunks')} chunks, "
         f"{run.count('embedded')} embedded, wall {wall:.1f}s, RSS {run.peak_rss_mb:.0f} MB")
    return run


def _stage_seconds(log: str) -> dict[str, float]:
    """Seconds per stage from the ``... N done in X.Ys`` lines of LogProgress."""
    found = (STAGE_LINE.match(line) for line in log.splitlines())
    return {m["stage"]: float(m["s"]) for m in found if m}


def measure_encode_overhead(corpus: str, repo: Path, rev: str, work: Path) -> EncodeFigure:
    """Figure 2, in this process: raw encode, build with embeddings, raw encode again.

    The model is loaded and warmed up first, so no timing includes loading it. The raw
    encodes get each distinct chunk text once, as the build embeds it; they run before
    and after the build because on a shared machine the speed drifts within minutes, and
    the build is compared with their mean.
    """
    from pr_context.embed import SentenceTransformerEmbedder
    from pr_context.git import open_repository
    from pr_context.index.build import IndexOptions, build_index
    from pr_context.progress import SilentProgress

    embedder = SentenceTransformerEmbedder()
    model = embedder._model  # load now: excluded from every timing
    model.encode(["warm up"], batch_size=ENCODE_BATCH_SIZE, normalize_embeddings=True)
    # The texts before the build: the same parse, without embeddings, in a scratch index.
    scratch = work / "encode-texts.duckdb"
    build_index(open_repository(repo), rev, scratch, IndexOptions(), None, SilentProgress())
    texts = _distinct_chunk_texts(scratch)
    before_s = _time_encode(model, texts)
    progress = _StageTimer()
    started = time.perf_counter()
    result = build_index(open_repository(repo), rev, work / "encode.duckdb", IndexOptions(),
                         embedder, progress)
    build_s = time.perf_counter() - started
    built_texts = _distinct_chunk_texts(work / "encode.duckdb")
    if sorted(built_texts) != sorted(texts) or len(texts) != result.embedded:
        raise SystemExit(f"{corpus}: the build embedded {result.embedded} texts, "
                         f"{len(texts)} expected")
    after_s = _time_encode(model, built_texts)
    figure = EncodeFigure(corpus, len(texts), build_s, before_s, after_s, progress.seconds,
                          embedder.encode_seconds)
    _log(f"{corpus} encode overhead: encode {before_s:.1f}s, build {build_s:.1f}s, "
         f"encode {after_s:.1f}s ({len(texts)} texts), ratio {figure.overhead:.2f}")
    return figure


def _distinct_chunk_texts(db: Path) -> list[str]:
    """What the model sees for each distinct chunk text, ordered by hash."""
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT any_value(context || chr(10) || text) FROM chunks GROUP BY text_hash "
            "ORDER BY text_hash"
        ).fetchall()
    return [text for (text,) in rows]


def _time_encode(model: Any, texts: list[str]) -> float:
    started = time.perf_counter()
    model.encode(texts, batch_size=ENCODE_BATCH_SIZE, normalize_embeddings=True)
    return time.perf_counter() - started


class _StageTimer:
    """A Progress that records how long each stage took."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._stage: tuple[str, float] | None = None

    def start(self, stage: str, total: int) -> None:
        self._stage = (stage, time.perf_counter())

    def advance(self, n: int = 1) -> None:
        pass

    def finish(self) -> None:
        if self._stage is not None:
            name, started = self._stage
            self.seconds[name] = time.perf_counter() - started
        self._stage = None

    def warn(self, message: str) -> None:
        _log(f"warning: {message}")


# -- the benchmark ------------------------------------------------------------------------


@dataclass
class Results:
    quick: bool
    machine: dict[str, str]
    corpora: dict[str, dict[str, object]] = field(default_factory=dict)
    parse: list[Run] = field(default_factory=list)
    encode: EncodeFigure | None = None
    release: dict[str, Run] = field(default_factory=dict)
    incremental: dict[str, Run] = field(default_factory=dict)
    scaling: dict[str, Run] = field(default_factory=dict)  # corpus -> its 1-file update
    total_s: float = 0.0


def run_benchmark(plan: Plan, quick: bool, work: Path) -> Results:
    """Every figure, cheapest first, so a broken setup shows within minutes."""
    started = time.perf_counter()
    results = Results(quick=quick, machine=machine_facts())
    repos = {c.name: prepare_corpus(c) for c in _unique(plan)}
    for corpus in _unique(plan):
        results.corpora[corpus.name] = _describe_corpus(corpus, repos[corpus.name])
    _measure_parse(plan, repos, work, results)
    # Without embeddings only: with them it would cost two more builds of minutes each.
    _measure_release(plan.release, repos[plan.release.name], work, results, embeddings=False)
    results.encode = measure_encode_overhead(plan.embed.name, repos[plan.embed.name],
                                             plan.embed.head_tag, work)
    _measure_incremental(plan.incremental, repos[plan.incremental.name], work, results)
    results.total_s = time.perf_counter() - started
    return results


def _unique(plan: Plan) -> list[Corpus]:
    seen: dict[str, Corpus] = {}
    for corpus in (*plan.parse, plan.embed, plan.release, plan.incremental, *plan.scaling):
        seen.setdefault(corpus.name, corpus)
    return list(seen.values())


def _describe_corpus(corpus: Corpus, repo: Path) -> dict[str, object]:
    releases = ", ".join(_describe_release(r) for r in corpus.releases)
    return {"releases": releases, "files": tracked_files(repo, corpus.head_tag),
            "edit_path": corpus.edit_path or ""}


def _describe_release(release: Release) -> str:
    kept = f"; only {', '.join(release.keep)}" if release.keep else ""
    return f"{release.name} {release.version} ({release.registry}{kept})"


def _measure_parse(plan: Plan, repos: dict[str, Path], work: Path, results: Results) -> None:
    """Figure 1, and the 1-file update without embeddings (figure 3 on the incremental
    corpus, and on every corpus of the scaling figure).

    These builds take seconds at most, so one run says as much about the shared
    machine as about the build: each runs REPEATS times and the median run is kept.
    """
    for corpus in plan.parse:
        db = work / f"{corpus.name}-none.duckdb"
        build = functools.partial(run_index, corpus.name, repos[corpus.name], corpus.head_tag,
                                  db, False)
        results.parse.append(_median_run(build, db))
    for corpus in dict.fromkeys((plan.incremental, *plan.scaling)):
        repo = repos[corpus.name]
        db = work / f"{corpus.name}-update-none.duckdb"
        build = functools.partial(run_index, corpus.name, repo, corpus.head_tag, db, False)
        # Only figure 3 compares with the full build; the others just start from one.
        full = _median_run(build, db) if corpus == plan.incremental else build()
        built = db.with_name(db.name + ".built")
        shutil.copyfile(db, built)
        update = _median_run(
            functools.partial(run_index, corpus.name, repo, EDIT_TAG, db, False), db, built)
        if corpus in plan.scaling:
            results.scaling[corpus.name] = update
        if corpus == plan.incremental:
            results.incremental["full-none"], results.incremental["update-none"] = full, update


def _median_run(build: Callable[[], Run], db: Path, restore: Path | None = None) -> Run:
    """The run with the median build time of REPEATS, each from an empty index or from a
    copy of ``restore``."""
    runs = []
    for _ in range(REPEATS):
        for path in (db, db.with_name(db.name + ".wal")):
            path.unlink(missing_ok=True)
        if restore is not None:
            shutil.copyfile(restore, db)
        runs.append(build())
    runs.sort(key=lambda run: run.build_s)
    return runs[len(runs) // 2]


def _measure_release(corpus: Corpus, repo: Path, work: Path, results: Results,
                     embeddings: bool) -> None:
    """A full build of the older release, then its update to the newer one.

    The update is compared with that full build rather than with another full build of
    the newer release: the two releases are about the same size, and one build of a
    corpus with embeddings costs minutes.
    """
    suffix = "model" if embeddings else "none"
    old, new = corpus.releases[-2].tag, corpus.releases[-1].tag
    db = work / f"{corpus.name}-release-{suffix}.duckdb"
    results.release[f"full-{suffix}"] = run_index(corpus.name, repo, old, db, embeddings)
    results.release[f"update-{suffix}"] = run_index(corpus.name, repo, new, db, embeddings)


def _measure_incremental(corpus: Corpus, repo: Path, work: Path, results: Results) -> None:
    """Figures 3 and 4 with embeddings: one full build (peak RSS), then the 1-file update."""
    db = work / f"{corpus.name}-model.duckdb"
    results.incremental["full-model"] = run_index(corpus.name, repo, corpus.head_tag, db, True)
    results.incremental["update-model"] = run_index(corpus.name, repo, EDIT_TAG, db, True)


def machine_facts() -> dict[str, str]:
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": str(os.cpu_count()),
        "cpu model": _cpu_model(),
        "memory": _memory_total(),
        "os": platform.platform(),
        "python": platform.python_version(),
        **{name: _version(name) for name in
           ("pr-context", "torch", "sentence-transformers", "duckdb", "tree-sitter",
            "tree-sitter-language-pack")},
        "pr_context source sha256": _source_digest(),
    }


def _source_digest() -> str:
    """A hash of the pr_context package as imported, to tell apart runs of changing code."""
    import pr_context

    package = Path(pr_context.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*")):
        if path.suffix in {".py", ".scm"}:
            digest.update(path.relative_to(package).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown"
    found = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return found[1].strip() if found else "unknown"


def _memory_total() -> str:
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        return "unknown"
    found = re.search(r"^MemTotal:\s*(\d+) kB", text, re.MULTILINE)
    return f"{int(found[1]) / 1024**2:.1f} GiB" if found else "unknown"


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


# -- the report ---------------------------------------------------------------------------


def render_report(results: Results, command: str) -> str:
    """The whole of docs/performance.md: explanation, figures, machine and corpora."""
    sections = [
        _report_intro(results, command),
        _summary_table(results),
        _parse_section(results),
        _encode_section(results),
        _incremental_section(results),
        _scaling_section(results),
        _release_section(results),
        _corpora_section(results),
        _machine_section(results),
    ]
    return "\n\n".join(s.strip() for s in sections) + "\n"


def _report_intro(results: Results, command: str) -> str:
    quick = ("\n**This is a `--quick` run on tiny corpora: a check that the benchmark works, "
             "not figures to compare with the targets.**\n" if results.quick else "")
    return f"""
# Indexing performance

How fast `pr-context index` builds and updates an index, measured by
[`evals/bench_index.py`](../evals/bench_index.py) on released code nobody here wrote
(pinned PyPI sdists and an npm package, each turned into a git repository). This file is
written by the benchmark; re-run it rather than editing the figures:

```sh
{command}
```

It downloads the corpora once into `evals/.cache/` (git-ignored), runs every build as
its own `pr-context index --json` process (so start-up, imports, model loading and
peak RSS are real), and takes about {results.total_s / 60:.0f} minutes on the machine below.
The machine is shared and its timings are noisy from one run to the next; each ratio
compares two measurements taken in the same run. A sharded build (`index --shard`,
`merge`) is measured by `evals/bench_shards.py`: [sharding-performance.md](sharding-performance.md).
{quick}"""


def _summary_table(results: Results) -> str:
    rows = ["| figure | measured | target | met |", "|---|---|---|---|"]
    rows += [_summary_row(*row) for row in _summary_rows(results)]
    return "## Summary\n\n" + "\n".join(rows)


def _summary_rows(results: Results) -> list[tuple[str, str, str, bool]]:
    rows: list[tuple[str, str, str, bool]] = []
    for run in results.parse:
        rate = run.count("files") / run.build_s
        rows.append((f"1. parse + index without embeddings, {run.corpus}",
                     f"{rate:,.0f} files/s", f"≥ {TARGET_FILES_PER_S:.0f} files/s",
                     rate >= TARGET_FILES_PER_S))
    if results.encode is not None:
        e = results.encode
        rows.append((f"2. full build with embeddings / model encode inside it, {e.corpus}",
                     f"{e.overhead:.2f}x", f"≤ {TARGET_EMBED_OVERHEAD}x",
                     e.overhead <= TARGET_EMBED_OVERHEAD))
    inc = results.incremental
    for suffix, label in (("model", "with"), ("none", "without")):
        if f"update-{suffix}" in inc:
            full, update = inc[f"full-{suffix}"], inc[f"update-{suffix}"]
            speedup = full.build_s / update.build_s
            rows.append((f"3. full build / 1-file update, {label} embeddings, {full.corpus}",
                         f"{speedup:.1f}x inside the build (whole processes: "
                         f"{full.wall_s / update.wall_s:.1f}x)",
                         f"≥ {TARGET_INCREMENTAL_SPEEDUP:.0f}x",
                         speedup >= TARGET_INCREMENTAL_SPEEDUP))
    if len(results.scaling) > 1:
        rows.append(_scaling_row(results))
    if "full-model" in inc:
        run = inc["full-model"]
        rows.append((f"4. peak RSS, full build with embeddings, {run.corpus} "
                     f"({run.count('files') + run.count('skipped'):,} files)",
                     f"{run.peak_rss_mb:,.0f} MB", f"≤ {TARGET_PEAK_RSS_MB:,.0f} MB",
                     run.peak_rss_mb <= TARGET_PEAK_RSS_MB))
    return rows


def _scaling_row(results: Results) -> tuple[str, str, str, bool]:
    """Whether the 1-file update costs the same on a repository many times larger."""
    small, large = _scaling_ends(results)
    files = _repo_files(results, large) / _repo_files(results, small)
    cost = large.build_s / small.build_s
    return (f"3. 1-file update without embeddings, {large.corpus} / {small.corpus}",
            f"{cost:.1f}x the time for {files:.0f}x the files",
            f"≤ {SCALING_MAX_COST:.0f}x for ≥ {SCALING_MIN_FILES:.0f}x",
            cost <= SCALING_MAX_COST and files >= SCALING_MIN_FILES)


def _scaling_ends(results: Results) -> tuple[Run, Run]:
    runs = sorted(results.scaling.values(), key=lambda run: _repo_files(results, run))
    return runs[0], runs[-1]


def _repo_files(results: Results, run: Run) -> int:
    files = results.corpora[run.corpus]["files"]
    assert isinstance(files, int)
    return files


def _summary_row(figure: str, measured: str, target: str, met: bool) -> str:
    return f"| {figure} | {measured} | {target} | {'yes' if met else '**no**'} |"


def _parse_section(results: Results) -> str:
    rows = ["| corpus | indexed files | skipped | chunks | build s | process wall s | "
            "files/s | chunks/s | parse stage s |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for run in results.parse:
        rows.append(
            f"| {run.corpus} | {run.count('files'):,} | {run.count('skipped'):,} | "
            f"{run.count('chunks'):,} | {run.build_s:.1f} | {run.wall_s:.1f} | "
            f"{run.count('files') / run.build_s:,.0f} | "
            f"{run.count('chunks') / run.build_s:,.0f} | "
            f"{run.stages_s.get('parsing files', 0.0):.1f} |")
    return f"""
## 1. Parse and index without embeddings

`pr-context index --no-embeddings` on each corpus, from an empty index, {REPEATS} times:
the run with the median build time is reported. *files/s* is
indexed files (not skipped ones) per second of *build s*, the time inside
`build_index` that the index reports: listing, reading blobs, tree-sitter parsing,
writing DuckDB, co-change mining and the digest. *Process wall s* adds interpreter
start-up and imports. *Parse stage s* is the reading and parsing stage alone. On a
corpus of a few dozen large files (rich) the fixed cost of a build (opening DuckDB,
creating the tables, the digest) weighs on files/s; chunks/s says more there.

{chr(10).join(rows)}
"""


def _encode_section(results: Results) -> str:
    e = results.encode
    if e is None:
        return ""
    stages = ", ".join(f"{name} {s:.1f} s" for name, s in e.stages_s.items())
    return f"""
## 2. Embedding overhead

One full build of {e.corpus} with the default model (all-MiniLM-L6-v2), in the
benchmark's own process, against `model.encode(texts, batch_size={ENCODE_BATCH_SIZE},
normalize_embeddings=True)` called directly on the same {e.texts:,} distinct chunk texts
read back from that index (`context || chr(10) || text`, one per `text_hash`). The model
is loaded and warmed up before any timing, so none includes loading it. The overhead is
the build's time over the time the model's own `encode` took inside that same build:
both clocks run over the same minutes, so the machine's drift (large here: other jobs
share it) cancels. The raw encodes just before and after the build are kept as a
cross-check (*build / raw*), and that ratio moves with the drift.

| raw before s | build s | raw after s | build / raw | encode in build s | overhead |
|---:|---:|---:|---:|---:|---:|
| {e.encode_before_s:.1f} | {e.build_s:.1f} | {e.encode_after_s:.1f} \
| {e.overhead_vs_raw:.2f}x | {e.encode_in_build_s:.1f} | {e.overhead:.2f}x |

Build stages: {stages}. The rest of the build is listing, DuckDB writes, co-change
mining and the digest.{_drift_note(e)}
"""


def _drift_note(e: EncodeFigure) -> str:
    if e.overhead >= 1:
        return ""
    return ("\n\nAn overhead below 1x means the build ran faster than the raw encodes around "
            "it: the machine's speed drifted more than the build's own overhead, which is "
            "therefore within the noise.")


def _incremental_section(results: Results) -> str:
    inc = results.incremental
    rows = ["| embeddings | full build wall s | 1-file update wall s | full / update | "
            "full build s | update build s | full / update, builds | update graph s | "
            "chunks embedded | full peak RSS MB | update peak RSS MB |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for suffix, label in (("model", "with"), ("none", "without")):
        if f"update-{suffix}" not in inc:
            continue
        full, update = inc[f"full-{suffix}"], inc[f"update-{suffix}"]
        rows.append(f"| {label} | {full.wall_s:.1f} | {update.wall_s:.1f} | "
                    f"{full.wall_s / update.wall_s:.1f}x | {full.build_s:.2f} | "
                    f"{update.build_s:.2f} | {full.build_s / update.build_s:.1f}x | "
                    f"{_graph_s(update)} | {update.count('embedded')} | {full.peak_rss_mb:,.0f} | "
                    f"{update.peak_rss_mb:,.0f} |")
    corpus = results.corpora[inc["full-none"].corpus]
    return f"""
## 3. and 4. One-file update, and peak memory

On {inc["full-none"].corpus} ({corpus["files"]:,} files in the repository): a full build
from an empty index, then, as a separate process, an update of that index to a commit
that appends one function to `{corpus["edit_path"]}`. Both are whole
`pr-context index` processes timed from the outside, so the update pays for start-up and
for loading the model, which it does only because it has a new chunk to embed. Without
embeddings, both runs take seconds at most: each is the median of {REPEATS} (the update
from a copy of the same full build). *Build s* is the time inside `build_index` alone,
the update's own cost, on which the target is judged; whole processes are shown beside
it. Besides interpreter start-up and imports (DuckDB, NumPy, PyArrow, about 0.2 s), every
`index` process that changed the index then builds the symbol graph whole and stores it
(*update graph s*, its "resolving call sites" stage, reading the index's rows included in
the wall time only), so that reviews of this base do not build it: that, not the diff,
is most of an update's process. Peak RSS
is the process's own maximum resident set size (`wait4`), with embeddings for figure 4.

{chr(10).join(rows)}
"""


def _graph_s(run: Run) -> str:
    """The seconds of the run's "resolving call sites" stage (the symbol graph stored)."""
    seconds = run.stages_s.get(GRAPH_STAGE)
    return "-" if seconds is None else f"{seconds:.2f}"


def _scaling_section(results: Results) -> str:
    if not results.scaling:
        return ""
    rows = ["| corpus | files in the repository | indexed files | update build s | "
            "update wall s | update graph s | files re-parsed |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for run in sorted(results.scaling.values(), key=lambda r: _repo_files(results, r)):
        changes = run.result["changes"]
        assert isinstance(changes, dict)
        rows.append(f"| {run.corpus} | {_repo_files(results, run):,} | {run.count('files'):,} | "
                    f"{run.build_s:.3f} | {run.wall_s:.2f} | {_graph_s(run)} | "
                    f"{changes.get('parsed', 0)} |")
    return f"""
## The update's cost follows the diff

The same change (one function appended to one Python file) on repositories of
growing size, without embeddings (with them, embedding the new chunk costs the same
everywhere, and loading the model dwarfs the rest). Each update starts from a copy of a
full build of that repository and is the median of {REPEATS}. An update lists no tree:
it reads the diff of the two commits, re-parses what it names and rewrites those rows,
so its build time should barely move with the repository's size; the symbol graph stored
after it (*update graph s*) is built whole, and grows with the repository.

{chr(10).join(rows)}
"""


def _release_section(results: Results) -> str:
    rel = results.release
    rows = ["| embeddings | full build of the older release, wall s | update wall s | "
            "full / update | files re-parsed | files removed |",
            "|---|---:|---:|---:|---:|---:|"]
    corpus = ""
    for suffix, label in (("model", "with"), ("none", "without")):
        if f"update-{suffix}" not in rel:
            continue
        full, update = rel[f"full-{suffix}"], rel[f"update-{suffix}"]
        changes = update.result["changes"]
        assert isinstance(changes, dict)
        corpus = f"{update.corpus} ({full.rev} to {update.rev})"
        rows.append(f"| {label} | {full.wall_s:.1f} | {update.wall_s:.1f} | "
                    f"{full.wall_s / update.wall_s:.1f}x | {changes.get('parsed', 0)} | "
                    f"{changes.get('removed', 0)} |")
    return f"""
## Release-to-release update

A larger, real diff: a full build of the older release of {corpus}, then an update
of that index to the newer release. Whole processes, timed from the outside.

{chr(10).join(rows)}
"""


def _corpora_section(results: Results) -> str:
    rows = ["| corpus | releases (one commit each) | files at the measured commit |",
            "|---|---|---:|"]
    for name, corpus in results.corpora.items():
        rows.append(f"| {name} | {corpus['releases']} | {corpus['files']:,} |")
    return "## Corpora\n\nPinned in `evals/bench_index.py`.\n\n" + "\n".join(rows)


def _machine_section(results: Results) -> str:
    rows = ["| | |", "|---|---|"]
    rows += [f"| {k} | {v} |" for k, v in results.machine.items()]
    return "## Machine\n\n" + "\n".join(rows)


def print_summary(results: Results) -> None:
    width = max(len(row[0]) for row in _summary_rows(results))
    for figure, measured, target, met in _summary_rows(results):
        verdict = "met" if met else "MISSED"
        print(f"{figure:<{width}}  {measured:>14}  {target:>16}  {verdict}")


def _results_json(results: Results) -> str:
    return json.dumps(asdict(results), indent=2, default=str)


def _results_from_json(text: str) -> Results:
    data = json.loads(text)
    encode = data["encode"]
    return Results(
        quick=data["quick"], machine=data["machine"], corpora=data["corpora"],
        parse=[Run(**run) for run in data["parse"]],
        encode=EncodeFigure(**encode) if encode else None,
        release={key: Run(**run) for key, run in data["release"].items()},
        incremental={key: Run(**run) for key, run in data["incremental"].items()},
        scaling={key: Run(**run) for key, run in data.get("scaling", {}).items()},
        total_s=data["total_s"],
    )


def _log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def _measure(quick: bool) -> Results:
    """Run the benchmark and keep its raw figures next to the report."""
    with tempfile.TemporaryDirectory(prefix="bench-index-") as work:
        results = run_benchmark(QUICK_PLAN if quick else FULL_PLAN, quick, Path(work))
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / f"bench_index{'-quick' if quick else ''}.json").write_text(
        _results_json(results))
    return results


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny corpora (itsdangerous, markupsafe): a sanity run")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"report to write (default {DEFAULT_REPORT.relative_to(ROOT)}, "
                             f"or {QUICK_REPORT.relative_to(ROOT)} with --quick)")
    parser.add_argument("--from-json", type=Path, metavar="JSON",
                        help="measure nothing: rewrite the report from a run's raw figures")
    args = parser.parse_args(argv)
    if args.from_json:
        results = _results_from_json(args.from_json.read_text())
    else:
        results = _measure(args.quick)
    out = args.out or (QUICK_REPORT if results.quick else DEFAULT_REPORT)
    command = "python evals/bench_index.py" + (" --quick" if results.quick else "")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_report(results, command))
    print_summary(results)
    _log(f"wrote {out}")


if __name__ == "__main__":
    main()
