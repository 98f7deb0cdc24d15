"""The sharded build: which files a shard holds, merging shards, and every refusal."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from pr_context.cli import cli
from pr_context.errors import BadInputError, ShardError
from pr_context.git import open_repository
from pr_context.index.build import IndexOptions
from pr_context.index.merge import MergeResult, merge_shards
from pr_context.index.shards import FILE_COST_BYTES, ShardSpec, parse_shard, shard_of
from pr_context.index.store import DERIVED_TABLES, PATH_TABLES, IndexStore
from pr_context.models import FileEntry
from pr_context.pipeline import Searcher
from pr_context.policy import policy_from_config
from pr_context.progress import SilentProgress
from tests.conftest import GitRepo
from tests.fakes import FakeEmbedder
from tests.test_index import STARTER, index, table_dump

POLICY = policy_from_config(None, (), ())


def build_shards(repo: GitRepo, folder: Path, count: int, *, rev: str = "HEAD",
                 embedder: FakeEmbedder | None = None,
                 options: IndexOptions | None = None) -> list[Path]:
    """Every shard of a ``count``-way build, each in its own file under ``folder``."""
    paths = []
    for number in range(1, count + 1):
        path = folder / f"shard-{number}-of-{count}.duckdb"
        index(repo, path, rev, embedder=embedder,
              options=replace(options or IndexOptions(), shard=ShardSpec(number, count)))
        paths.append(path)
    return paths


def merge(repo: GitRepo, shards: Sequence[Path], out: Path) -> MergeResult:
    return merge_shards(open_repository(repo.path), shards, out, SilentProgress())


def entry(path: str, size: int) -> FileEntry:
    return FileEntry(path, f"{hash(path) & 0xFFFFFFFF:040x}", "100644", size)


# -- the assignment ------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "spec"), [("1/1", ShardSpec(1, 1)), ("2/4", ShardSpec(2, 4)),
                                            (" 4/4 ", ShardSpec(4, 4))])
def test_shard_specs_parse(text: str, spec: ShardSpec) -> None:
    assert parse_shard(text) == spec and str(spec) == text.strip()


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "2", "a/b", "-1/2", "1/2/3", ""])
def test_bad_shard_specs_are_refused(text: str) -> None:
    with pytest.raises(BadInputError, match="K/N"):
        parse_shard(text)


def files_of(count: int, sizes: Callable[[int], int]) -> list[FileEntry]:
    return [entry(f"src/module_{i}.py", sizes(i)) for i in range(count)]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7])
def test_every_file_has_one_shard_and_shards_cost_alike(count: int) -> None:
    entries = files_of(500, lambda i: 100 + (i * 7919) % 20_000)
    shards = shard_of(entries, POLICY, count)
    assert set(shards) == {e.path for e in entries}
    assert set(shards.values()) == set(range(1, count + 1))
    costs = {k: sum(e.size + FILE_COST_BYTES for e in entries if shards[e.path] == k)
             for k in range(1, count + 1)}
    share, largest = sum(costs.values()) / count, max(e.size for e in entries)
    assert all(abs(c - share) <= largest + FILE_COST_BYTES for c in costs.values()), costs


def test_a_small_change_moves_few_files_between_shards() -> None:
    before = files_of(2000, lambda i: 200 + (i * 104_729) % 9_000)
    after = [*before[:1000], entry(before[1000].path, before[1000].size + 3_000),
             *before[1001:], entry("src/new_module.py", 2_000)]
    old, new = shard_of(before, POLICY, 4), shard_of(after, POLICY, 4)
    moved = [p for p in old if old[p] != new[p]]
    # 5 KB changed: each of the 3 cuts moves by about that, a few files' worth.
    assert len(moved) <= 12, moved


def test_files_the_policy_skips_weigh_only_their_listing() -> None:
    entries = [entry("big.py", 1_000_000), entry("a.png", 1_000_000),
               *files_of(100, lambda i: 1_000)]
    shards = shard_of(entries, POLICY, 2)
    without_image = shard_of([e for e in entries if e.path != "a.png"], POLICY, 2)
    assert sum(shards[p] != without_image[p] for p in without_image) <= 2


# -- shard + merge == a single build -------------------------------------------------------


@pytest.mark.parametrize("count", [1, 3, 8])
def test_merged_shards_equal_a_single_build(make_repo: Callable[..., GitRepo], tmp_path: Path,
                                            count: int) -> None:
    repo = make_repo(STARTER)
    single, _ = index(repo, tmp_path / "single.duckdb", embedder=FakeEmbedder())
    shards = build_shards(repo, tmp_path, count, embedder=FakeEmbedder())
    merged = merge(repo, shards, tmp_path / "merged.duckdb")
    assert merged.digest == single.digest
    assert merged.files == single.files and merged.chunks == single.chunks
    assert table_dump(tmp_path / "merged.duckdb") == table_dump(tmp_path / "single.duckdb")


def test_co_changes_are_mined_at_the_merge(make_repo: Callable[..., GitRepo],
                                           tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    for n in range(3):  # with the first commit, 4 commits touch both
        repo.write("pkg/util.py", f"{STARTER['pkg/util.py']}\n# {n}\n")
        repo.write("README.md", f"{STARTER['README.md']}\n{n}\n")
        repo.commit(f"together {n}")
    shards = build_shards(repo, tmp_path, 2)
    for shard in shards:
        assert table_dump(shard)["cochange"] == []
    merge(repo, shards, tmp_path / "merged.duckdb")
    assert ("README.md", "pkg/util.py", 4) in table_dump(tmp_path / "merged.duckdb")["cochange"]


def test_every_table_is_merged_or_recomputed(make_repo: Callable[..., GitRepo],
                                             tmp_path: Path) -> None:
    """A new table must say how a merge gets it: union by path, by text, or recomputed."""
    repo = make_repo(STARTER)
    index(repo, tmp_path / "index.duckdb", embedder=FakeEmbedder())
    with duckdb.connect(str(tmp_path / "index.duckdb"), read_only=True) as con:
        tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    bookkeeping = {"manifest", "schema_migrations"}
    assert tables == {*PATH_TABLES, *DERIVED_TABLES, "embeddings", *bookkeeping}


def test_a_text_in_two_shards_has_one_vector(built: Built, tmp_path: Path) -> None:
    shards = built.copies(built.embedded, tmp_path)
    # As when two shards embed the same text: shard 2 gets a copy of one of shard 1's.
    with duckdb.connect(str(shards[1])) as con:
        con.execute(f"ATTACH '{shards[0]}' AS one (READ_ONLY)")
        con.execute("INSERT INTO embeddings SELECT * FROM one.embeddings LIMIT 1")
    merged = merge(built.repo, shards, tmp_path / "merged.duckdb")
    single, _ = index(built.repo, tmp_path / "single.duckdb", rev="HEAD~1",
                      embedder=FakeEmbedder())
    assert merged.digest == single.digest and merged.embedded == merged.chunks


def test_merging_replaces_the_output_and_a_failed_merge_keeps_it(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    out = tmp_path / "index.duckdb"
    old, _ = index(repo, out)
    repo.write("pkg/util.py", UTIL_V2)
    repo.commit("v2")
    shards = build_shards(repo, tmp_path, 2)
    with pytest.raises(ShardError, match="missing shard 2/2"):
        merge(repo, shards[:1], out)
    with IndexStore.open_existing(out) as store:
        assert store.digest() == old.digest
    merged = merge(repo, shards, out)
    assert merged.digest == index(repo, tmp_path / "single.duckdb")[0].digest
    assert sorted(p.name for p in tmp_path.glob("index.duckdb*")) == ["index.duckdb"]


UTIL_V2 = "def retry(fn, attempts=5):\n    return fn()\n\n\ndef backoff(n):\n    return 2 ** n\n"


# -- incremental shards --------------------------------------------------------------------


def shard_paths(shard: Path) -> set[str]:
    with duckdb.connect(str(shard), read_only=True) as con:
        return {p for (p,) in con.execute("SELECT path FROM files").fetchall()}


def test_a_shard_is_updated_from_its_own_older_revision(make_repo: Callable[..., GitRepo],
                                                        tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    shards = build_shards(repo, tmp_path, 2, embedder=FakeEmbedder())
    before = [shard_paths(s) for s in shards]
    repo.write("pkg/util.py", UTIL_V2)
    repo.remove("web/app.ts")
    repo.commit("v2")
    embedder = FakeEmbedder()
    updates = [index(repo, path, embedder=embedder,
                     options=IndexOptions(shard=ShardSpec(n, 2)))[0]
               for n, path in enumerate(shards, 1)]
    assert all(u.incremental for u in updates)
    # What each shard parses: the changed file, and files that moved to it.
    arrived = [shard_paths(s) - old for s, old in zip(shards, before, strict=True)]
    assert [u.changes["parsed"] for u in updates] == [
        len(new | ({"pkg/util.py"} & shard_paths(s)))
        for new, s in zip(arrived, shards, strict=True)]
    # Vectors are embedded for new text only, not for files that moved (their texts
    # differ by path, so moved files' chunks are embedded by their new shard).
    single, _ = index(repo, tmp_path / "single.duckdb", embedder=FakeEmbedder())
    assert merge(repo, shards, tmp_path / "merged.duckdb").digest == single.digest


def test_files_that_move_between_shards_are_dropped_and_picked_up(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    files = {f"mod{i}.py": f"def f{i}():\n    return {i}\n" for i in range(20)}
    repo = make_repo(files)
    shards = build_shards(repo, tmp_path, 2)
    before = [shard_paths(s) for s in shards]
    for path in before[0]:  # shard 1's files grow: the cut moves, some go to shard 2
        repo.write(path, files[path] + "\n".join(f"# {'x' * 70}" for _ in range(30)))
    repo.commit("shard 1's files grow")
    for number, path in enumerate(shards, 1):
        index(repo, path, options=IndexOptions(shard=ShardSpec(number, 2)))
    after = [shard_paths(s) for s in shards]
    assert after[0] | after[1] == set(files) and not after[0] & after[1]
    assert after[1] - before[1]  # some files moved to shard 2
    single, _ = index(repo, tmp_path / "single.duckdb")
    assert merge(repo, shards, tmp_path / "merged.duckdb").digest == single.digest


def test_a_shard_file_of_another_shard_is_rebuilt_keeping_its_vectors(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    whole = tmp_path / "whole.duckdb"
    index(repo, whole, embedder=FakeEmbedder())
    embedder = FakeEmbedder()
    result, progress = index(repo, whole, embedder=embedder,
                             options=IndexOptions(shard=ShardSpec(1, 2)))
    assert any("rebuilding index" in w and "shard" in w for w in progress.warnings)
    assert result.embedded == 0 and result.reused == result.chunks > 0


# -- a lone shard is not an index ----------------------------------------------------------


@dataclass(frozen=True)
class Built:
    """Shards of STARTER built once for the module: tests copy what they change."""

    repo: GitRepo
    two: list[Path]  # 2-way, no embeddings, at the first commit
    three: list[Path]  # 3-way
    embedded: list[Path]  # 2-way with the fake embedder
    later: list[Path]  # 2-way at the second commit

    def copies(self, shards: Sequence[Path], folder: Path) -> list[Path]:
        folder.mkdir(parents=True, exist_ok=True)
        return [Path(shutil.copy(s, folder / s.name)) for s in shards]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("shards")
    repo = GitRepo(root / "repo")
    for path, text in STARTER.items():
        repo.write(path, text)
    first = repo.commit("start")
    repo.write("pkg/util.py", UTIL_V2)
    repo.commit("v2")
    return Built(repo, build_shards(repo, root / "two", 2, rev=first),
                 build_shards(repo, root / "three", 3, rev=first),
                 build_shards(repo, root / "embedded", 2, rev=first, embedder=FakeEmbedder()),
                 build_shards(repo, root / "later", 2))


def test_a_lone_shard_is_not_searched_reviewed_or_indexed_whole(built: Built,
                                                                tmp_path: Path) -> None:
    shard = built.copies(built.later[:1], tmp_path)[0]
    before = table_dump(shard)
    with pytest.raises(ShardError, match=r"shard 1/2 .*pr-context merge"):
        index(built.repo, shard)
    with pytest.raises(ShardError, match="shard 1/2"):
        IndexStore.open_existing(shard)
    searcher = Searcher(None, SilentProgress())
    with pytest.raises(ShardError, match="shard 1/2"):
        searcher.corpus(open_repository(built.repo.path), "HEAD", shard)
    assert table_dump(shard) == before


@pytest.mark.parametrize("command", ["search", "review"])
def test_the_cli_refuses_a_lone_shard_with_exit_2(built: Built, tmp_path: Path,
                                                  command: str) -> None:
    shard, repo = built.copies(built.later[:1], tmp_path)[0], str(built.repo.path)
    args = {"search": ["search", "--repo", repo, "--db", str(shard), "--no-embeddings",
                       "connect"],
            "review": ["review", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD",
                       "--db", str(shard), "--no-embeddings", "--out", str(tmp_path / "o")]}
    result = CliRunner().invoke(cli, args[command])
    assert result.exit_code == 2, result.output
    assert "is shard 1/2 of a sharded build" in result.output
    assert "pr-context merge" in result.output


# -- refusals of a merge -------------------------------------------------------------------


def test_shards_of_different_revisions_are_refused(built: Built, tmp_path: Path) -> None:
    with pytest.raises(ShardError, match="different revisions"):
        merge(built.repo, [built.two[0], built.later[1]], tmp_path / "out.duckdb")
    assert not (tmp_path / "out.duckdb").exists()


@pytest.mark.parametrize("other", [
    pytest.param({"embedder": FakeEmbedder()}, id="model"),
    pytest.param({"options": IndexOptions(exclude=("web/**",))}, id="path-policy"),
    pytest.param({"options": IndexOptions(cochange_commits=7)}, id="cochange-commits"),
])
def test_shards_built_with_different_settings_are_refused(
        built: Built, tmp_path: Path, other: dict[str, Any]) -> None:
    odd = tmp_path / "odd.duckdb"
    options = other.get("options", IndexOptions())
    index(built.repo, odd, embedder=other.get("embedder"),
          options=replace(options, shard=ShardSpec(2, 2)))
    with pytest.raises(ShardError, match="different settings"):
        merge(built.repo, [built.later[0], odd], tmp_path / "out.duckdb")


def test_shards_of_different_counts_missing_and_twice_are_refused(built: Built,
                                                                  tmp_path: Path) -> None:
    two, three, out = built.two, built.three, tmp_path / "out.duckdb"
    with pytest.raises(ShardError, match="split 2 and 3 ways"):
        merge(built.repo, [two[0], *three[1:]], out)
    with pytest.raises(ShardError, match="missing shard 2/3"):
        merge(built.repo, [three[0], three[2]], out)
    with pytest.raises(ShardError, match=r"shard 1/2 is given twice"):
        merge(built.repo, [two[0], two[1], two[0]], out)
    copy = built.copies(two[1:], tmp_path / "copy")[0]
    with pytest.raises(ShardError, match=r"shard 2/2 is given twice: .*copy"):
        merge(built.repo, [*two, copy], out)
    with pytest.raises(ShardError, match="one of the shards"):
        merge(built.repo, two, two[0])
    with pytest.raises(ShardError, match="no shard files"):
        merge(built.repo, [], out)
    assert not out.exists()


def corrupt(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for offset in range(4096, len(data), 1024):  # past the header: every block's bytes
        data[offset : offset + 64] = b"\xa5" * 64
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [
    pytest.param(lambda p: p.write_bytes(b"not a database at all" * 100), id="garbage"),
    pytest.param(lambda p: p.write_bytes(p.read_bytes()[:5000]), id="truncated"),
    pytest.param(corrupt, id="damaged-blocks"),
    pytest.param(lambda p: p.unlink(), id="missing-file"),
])
def test_a_corrupt_shard_file_is_named(built: Built, tmp_path: Path,
                                       damage: Callable[[Path], None]) -> None:
    shards = built.copies(built.embedded, tmp_path / "shards")
    damage(shards[1])
    with pytest.raises(ShardError, match=str(shards[1].name)):
        merge(built.repo, shards, tmp_path / "out.duckdb")
    assert sorted(p.name for p in tmp_path.glob("out.duckdb*")) == []


def test_a_whole_index_and_an_interrupted_shard_are_not_shards(built: Built,
                                                              tmp_path: Path) -> None:
    shards = built.copies(built.later, tmp_path / "shards")
    whole = tmp_path / "whole.duckdb"
    index(built.repo, whole)
    with pytest.raises(ShardError, match=r"whole\.duckdb is not a shard"):
        merge(built.repo, [shards[0], whole], tmp_path / "out.duckdb")
    with duckdb.connect(str(shards[1])) as con:  # as a build killed before its manifest
        con.execute("UPDATE manifest SET value = '' WHERE key = 'revision'")
    with pytest.raises(ShardError, match=r"incomplete .* --shard 2/2"):
        merge(built.repo, shards, tmp_path / "out.duckdb")
    with duckdb.connect(str(shards[0])) as con:
        con.execute("UPDATE manifest SET value = '3/2' WHERE key = 'shard'")
    with pytest.raises(ShardError, match=r"names no valid shard \('3/2'\)"):
        merge(built.repo, [shards[0], built.later[1]], tmp_path / "out.duckdb")


def test_shards_of_another_repository_are_refused(built: Built, make_repo: Callable[..., GitRepo],
                                                  tmp_path: Path) -> None:
    other = make_repo({"x.py": "X = 1\n"})
    with pytest.raises(ShardError, match="lacks"):
        merge(other, built.later, tmp_path / "out.duckdb")


def test_shards_whose_files_are_not_the_revisions_are_refused(built: Built,
                                                              tmp_path: Path) -> None:
    """Shards split by another assignment (another version): overlaps or gaps show."""
    shards = built.copies(built.later, tmp_path / "gap")
    with duckdb.connect(str(shards[0])) as con:
        con.execute("DELETE FROM files WHERE path = (SELECT min(path) FROM files)")
    with pytest.raises(ShardError, match="1 missing"):
        merge(built.repo, shards, tmp_path / "out.duckdb")
    shards = built.copies(built.later, tmp_path / "overlap")
    with duckdb.connect(str(shards[0])) as con, duckdb.connect(str(shards[1])) as other:
        row = other.execute("SELECT * FROM files LIMIT 1").fetchall()[0]
        con.execute(f"INSERT INTO files VALUES ({', '.join('?' * len(row))})", row)
    with pytest.raises(ShardError, match="overlap"):
        merge(built.repo, shards, tmp_path / "out.duckdb")


def test_the_cli_merges_and_prints_the_digest(make_repo: Callable[..., GitRepo],
                                              tmp_path: Path) -> None:
    repo = make_repo(STARTER)
    runner = CliRunner()
    for number in (1, 2):
        done = runner.invoke(cli, ["index", "--repo", str(repo.path), "--no-embeddings",
                                   "--db", str(tmp_path / f"s{number}.duckdb"),
                                   "--shard", f"{number}/2", "--quiet"])
        assert done.exit_code == 0, done.output
    single = runner.invoke(cli, ["index", "--repo", str(repo.path), "--no-embeddings",
                                 "--db", str(tmp_path / "single.duckdb"), "--json"])
    merged = runner.invoke(cli, ["merge", "--repo", str(repo.path), "--json", "--quiet",
                                 "--db", str(tmp_path / "m.duckdb"),
                                 str(tmp_path / "s1.duckdb"), str(tmp_path / "s2.duckdb")])
    assert merged.exit_code == 0, merged.output
    assert json.loads(merged.stdout)["digest"] == json.loads(single.stdout)["digest"]
    bad = runner.invoke(cli, ["merge", "--repo", str(repo.path), "--db",
                              str(tmp_path / "m2.duckdb"), str(tmp_path / "s1.duckdb")])
    assert bad.exit_code == 2 and "missing shard 2/2" in bad.output
    bad = runner.invoke(cli, ["index", "--repo", str(repo.path), "--db",
                              str(tmp_path / "x.duckdb"), "--shard", "3/2"])
    assert bad.exit_code == 2 and "--shard must be K/N" in bad.output

