"""Merge the shard files of a sharded build into one index of their revision.

Shards hold disjoint files (``index.shards``) and only per-path rows and vectors; a
merge takes their union and recomputes what spans files (``complete_index``, as a
single build does), so the merged index's digest equals a single build's. The merged
file is written beside ``out`` and moved over it when complete: a failed merge leaves
``out`` as it was.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from pr_context.errors import BadInputError, ShardError
from pr_context.git import CommitHistory, Repository, commit_exists, list_files
from pr_context.index.build import complete_index
from pr_context.index.shards import ShardSpec, parse_shard
from pr_context.index.store import IndexStore, Manifest
from pr_context.models import Sha
from pr_context.progress import Progress

__all__ = ["MergeResult", "merge_shards"]

_SHOWN_PATHS = 3  # paths named in an error about a merge's files


@dataclass(frozen=True)
class MergeResult:
    """What ``merge --json`` prints."""

    revision: str
    shards: int
    files: int
    skipped: int
    chunks: int
    definitions: int
    references: int
    imports: int
    embedded: int  # distinct texts with a vector
    seconds: float
    digest: str
    build_id: str


def merge_shards(repo: Repository, shard_paths: Sequence[Path], out: Path,
                 progress: Progress) -> MergeResult:
    """Write to ``out`` the index that the shard files at ``shard_paths`` make together.

    :raises ShardError: the shards are not every shard of one build (of one revision,
        with the same settings and count, each once), one cannot be read, or their files
        are not the revision's.
    """
    started = time.perf_counter()
    if out.resolve() in {p.resolve() for p in shard_paths}:
        raise ShardError(f"{out} is one of the shards: write the merged index elsewhere")
    manifests = [IndexStore.read_shard_manifest(p) for p in shard_paths]
    settings = _common_settings(shard_paths, manifests)
    sha = Sha(settings.revision)
    if not commit_exists(repo, sha):
        raise ShardError(f"the shards are of revision {sha[:12]}, which {repo.path} lacks: "
                         "merge in the repository they were built from")
    temporary = out.with_name(f"{out.name}.merging-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        result = _merge_into(repo, shard_paths, temporary, settings, progress, started)
        _move_over(temporary, out)
    finally:
        for leftover in (temporary, Path(f"{temporary}.wal")):
            leftover.unlink(missing_ok=True)
    return result


def _merge_into(repo: Repository, shard_paths: Sequence[Path], target: Path,
                settings: Manifest, progress: Progress, started: float) -> MergeResult:
    sha = Sha(settings.revision)
    with ExitStack() as stack:
        # git walks the history for co-changes while the shards are copied.
        history = stack.enter_context(CommitHistory(repo, sha, settings.cochange_commits))
        store = stack.enter_context(IndexStore.open(target, settings, progress.warn))
        progress.start("merging shards", len(shard_paths))
        store.add_shards(shard_paths, progress.advance)
        progress.finish()
        _check_files(store, repo, sha)
        manifest = complete_index(store, settings, history)
        counts = store.counts()
        embedded = store.query("SELECT count(*) FROM embeddings")[0][0] if (
            manifest.embedding_dimension) else 0
        return MergeResult(
            revision=sha, shards=len(shard_paths), files=counts["files"],
            skipped=counts["skipped"], chunks=counts["chunks"],
            definitions=counts["definitions"], references=counts["references"],
            imports=counts["imports"], embedded=int(embedded),
            seconds=round(time.perf_counter() - started, 3), digest=store.digest(),
            build_id=manifest.build_id)


def _common_settings(paths: Sequence[Path], manifests: Sequence[Manifest]) -> Manifest:
    """The settings every shard shares, as a whole index's manifest to fill.

    :raises ShardError: the shards differ in revision, settings or count, or one is
        missing or given twice.
    """
    if not manifests:
        raise ShardError("no shard files to merge")
    first_path, first = paths[0], _whole(manifests[0])
    for path, manifest in zip(paths, manifests, strict=True):
        if manifest.revision != first.revision:
            raise ShardError(f"shards of different revisions: {first_path} holds "
                             f"{first.revision[:12]}, {path} holds {manifest.revision[:12]}")
        if _whole(manifest).settings() != first.settings():
            raise ShardError(f"shards built with different settings: {first_path} and "
                             f"{path} ({first.describe_mismatch(_whole(manifest))})")
    _check_complete(paths, [_spec(p, m) for p, m in zip(paths, manifests, strict=True)])
    return first


def _spec(path: Path, manifest: Manifest) -> ShardSpec:
    try:
        return parse_shard(manifest.shard)
    except BadInputError as exc:
        raise ShardError(f"{path} names no valid shard ({manifest.shard!r}): build that "
                         "shard again") from exc


def _whole(manifest: Manifest) -> Manifest:
    """The manifest of the whole index a shard belongs to: no shard, no build."""
    return replace(manifest, shard="", build_id="", built_at="", embedding_dimension=0)


def _check_complete(paths: Sequence[Path], specs: Sequence[ShardSpec]) -> None:
    counts = sorted({s.count for s in specs})
    if len(counts) > 1:
        raise ShardError(f"shards of builds split {' and '.join(map(str, counts))} ways: "
                         "merge the shards of one build")
    count = counts[0]
    seen: dict[int, Path] = {}
    for path, spec in zip(paths, specs, strict=True):
        if spec.number in seen:
            raise ShardError(f"shard {spec} is given twice: {seen[spec.number]} and {path}")
        seen[spec.number] = path
    missing = [f"{k}/{count}" for k in range(1, count + 1) if k not in seen]
    if missing:
        raise ShardError(f"missing shard {', '.join(missing)}: a merge needs all {count} "
                         "shards of the build")


def _check_files(store: IndexStore, repo: Repository, sha: Sha) -> None:
    """The merged files are the revision's, each once (shards of one assignment)."""
    twice = [p for (p,) in store.query(
        "SELECT path FROM files GROUP BY path HAVING count(*) > 1 ORDER BY path LIMIT ?",
        [_SHOWN_PATHS])]
    if twice:
        raise ShardError(f"shards overlap (built by different pr-context versions?): "
                         f"{', '.join(twice)} are in more than one")
    held = {p for (p,) in store.query("SELECT path FROM files")}
    listed = {e.path for e in list_files(repo, sha)}
    missing, extra = sorted(listed - held), sorted(held - listed)
    if missing or extra:
        named = ", ".join([*missing, *extra][:_SHOWN_PATHS])
        raise ShardError(f"the shards do not hold revision {sha[:12]}'s files: "
                         f"{len(missing)} missing, {len(extra)} not in it ({named})")


def _move_over(source: Path, target: Path) -> None:
    """Put the merged file where ``target`` was; a stale log of the old one goes."""
    Path(f"{target}.wal").unlink(missing_ok=True)
    source.replace(target)
