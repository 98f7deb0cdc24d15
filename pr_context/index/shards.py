"""Which files a shard of a sharded build indexes.

A shard is one of N index files that together hold one revision; ``pr-context merge``
makes them one index (``index.merge``). Two things are wanted of the split:

- **balanced by size**: every shard should cost about the same, so that N runners finish
  together. The cost of a file is its size when the path policy lets it be parsed (and
  embedded), plus a fixed cost of listing and recording it;
- **stable across revisions**: a shard's cache from an older revision should still hold
  nearly the files the shard indexes now, so that updating it costs what changed and
  not what moved.

Both come from one rule. Every path hashes to a number; the files, in the order of their
numbers, are cut into N runs of equal total cost, and a file belongs to the run its
midpoint falls in. A file's number never changes, so a change of D bytes (files added,
removed, grown or shrunk) moves each file's midpoint and each of the N - 1 cuts by at
most D: the only files that change shard are those lying within about 2D of a cut,
whatever the size of the repository. Each shard's cost is within one file's cost of
1/N of the whole.
Hashing paths into fixed buckets and packing the buckets by size would balance as well
but can move any bucket when sizes change; plain hash-mod-N never moves a file but
balances only on average, which a few large files spoil.

Pure functions: the listing comes in, the shard's share goes out.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pr_context.errors import BadInputError
from pr_context.index.parsing import skip_reason_by_entry
from pr_context.languages import language_for_path
from pr_context.models import FileEntry
from pr_context.policy import PathPolicy

__all__ = ["FILE_COST_BYTES", "ShardSpec", "parse_shard", "shard_entries", "shard_of"]

# What listing, reading and recording a file costs, in bytes of parsed text: a build of
# many small files pays it per file, so small files are not free in the balance.
FILE_COST_BYTES = 512
_SPEC = re.compile(r"(\d+)/(\d+)")


@dataclass(frozen=True)
class ShardSpec:
    """Shard ``number`` (1-based) of ``count``."""

    number: int
    count: int

    def __str__(self) -> str:
        return f"{self.number}/{self.count}"


def parse_shard(text: str) -> ShardSpec:
    """``"K/N"`` as a ShardSpec. :raises BadInputError: not K/N with 1 <= K <= N."""
    match = _SPEC.fullmatch(text.strip())
    if match is None or not 1 <= int(match[1]) <= int(match[2]):
        raise BadInputError(f"--shard must be K/N with 1 <= K <= N (like 2/4), not {text!r}")
    return ShardSpec(int(match[1]), int(match[2]))


def shard_entries(entries: Sequence[FileEntry], policy: PathPolicy,
                  spec: ShardSpec) -> list[FileEntry]:
    """The entries shard ``spec`` indexes, in listing order."""
    shards = shard_of(entries, policy, spec.count)
    return [e for e in entries if shards[e.path] == spec.number]


def shard_of(entries: Sequence[FileEntry], policy: PathPolicy, count: int) -> dict[str, int]:
    """path -> the shard (1 to ``count``) that indexes it, for every entry."""
    ordered = sorted(entries, key=lambda e: (_point(e.path), e.path))
    costs = [_cost(e, policy) for e in ordered]
    total = sum(costs)
    shards: dict[str, int] = {}
    before = 0
    for entry, cost in zip(ordered, costs, strict=True):
        # The arc holding the file's midpoint, in integers: (before + cost / 2) / total.
        shards[entry.path] = min((2 * before + cost) * count // (2 * total), count - 1) + 1
        before += cost
    return shards


def _point(path: str) -> bytes:
    return hashlib.blake2b(path.encode("utf-8", "surrogateescape"), digest_size=8).digest()


def _cost(entry: FileEntry, policy: PathPolicy) -> int:
    # The cheap test first: every shard weighs every listed file.
    parsed = (language_for_path(entry.path) is not None
              and skip_reason_by_entry(entry, policy) is None)
    return FILE_COST_BYTES + (max(entry.size, 0) if parsed else 0)
