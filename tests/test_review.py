"""The review command end to end, on real git repositories and real DuckDB indexes."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pr_context import review as review_module
from pr_context.cli import cli
from pr_context.git import open_repository
from pr_context.index.build import IndexOptions, build_index
from pr_context.index.store import IndexStore
from pr_context.links import SelectedTest
from pr_context.progress import SilentProgress
from pr_context.render import COMMENT_MARKER, MAX_COMMENT_CHARS, render_comment, render_summary
from pr_context.report import EvidenceItem, IndexInfo, Report, SymbolReport
from pr_context.review import HEAD_INDEX_NAME, ReviewOptions, explain, review, write_review
from tests.conftest import GitRepo
from tests.fakes import FakeEmbedder
from tests.test_forked import run_fresh

SESSION = (
    "def create_session(user, token, retries=3):\n"
    "    return {'user': user, 'token': token, 'retries': retries}\n"
)
SESSION_HEAD = (
    "def create_session(user, token):\n"
    "    return {'user': user, 'token': token}\n"
)
BASE_FILES = {
    "shop/__init__.py": "",
    "shop/session.py": SESSION,
    "shop/api.py": (
        "from shop.session import create_session\n"
        "\n"
        "\n"
        "def login(user):\n"
        "    return create_session(user, 't', retries=5)\n"
    ),
    "shop/admin.py": (
        "from shop.session import create_session\n"
        "\n"
        "\n"
        "def sudo(user):\n"
        "    return create_session(user, 'root', retries=1)\n"
    ),
    "tests/__init__.py": "",
    "tests/test_session.py": (
        "from shop.session import create_session\n"
        "\n"
        "\n"
        "def test_create():\n"
        "    assert create_session('u', 't')\n"
    ),
    "docs/api.md": (
        "# API\n"
        "\n"
        "## Sessions\n"
        "\n"
        "Pass `retries=5` to `create_session` to retry.\n"
    ),
    "vendor/lib.py": "def helper():\n    return 1\n",
}
HEAD_CHANGES = {
    "shop/session.py": SESSION_HEAD,
    # the PR updates this caller, and not shop/api.py
    "shop/admin.py": BASE_FILES["shop/admin.py"].replace(", retries=1", ""),
    "tests/test_session.py": BASE_FILES["tests/test_session.py"].replace("'t')", "'t2')"),
    "vendor/lib.py": "def helper():\n    return 2\n",
}
EVIDENCE_KEYS = {"rank": int, "path": str, "role": str, "start_line": int, "end_line": int,
                 "revision": str, "score": float, "signals": dict, "reason": str,
                 "touched_in_pr": bool}
INDEX_KEYS = {"build_id": str, "revision": str, "base_revision": str, "parser_version": str,
              "embedding_model": str, "incremental": bool, "files": int, "chunks": int}
SYMBOL_KEYS = {"path": str, "symbol": str, "qualified_name": str, "kind": str, "change": str,
               "start_line": int, "end_line": int, "callers": list, "tests": list,
               "docs": list}
VOLATILE = re.compile(r"build_id|timings_ms")


def pr_repo(make_repo: Callable[..., GitRepo]) -> tuple[GitRepo, str, str]:
    repo = make_repo(BASE_FILES)
    base = repo.git("rev-parse", "HEAD").strip()
    for path, text in HEAD_CHANGES.items():
        repo.write(path, text)
    return repo, base, repo.commit("drop retries")


def run_review(repo: GitRepo, base: str, head: str, db: Path, out: Path,
               **options: Any) -> Report:
    report = review(open_repository(repo.path), base, head, db, out, FakeEmbedder(),
                    SilentProgress(), ReviewOptions(**options))
    write_review(report, out)
    return report


def load_evidence(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "evidence.json").read_text(encoding="utf-8"))
    return data


def symbol(data: dict[str, Any], qualified_name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in data["changed_symbols"]
                                 if s["qualified_name"] == qualified_name)
    return found


def assert_keys(obj: dict[str, Any], keys: dict[str, type]) -> None:
    for key, kind in keys.items():
        assert key in obj, key
        assert isinstance(obj[key], kind), (key, obj[key])


@pytest.fixture
def reviewed(make_repo: Callable[..., GitRepo],
             tmp_path: Path) -> tuple[GitRepo, str, str, Path, dict[str, Any]]:
    repo, base, head = pr_repo(make_repo)
    run_review(repo, base, head, tmp_path / "base.duckdb", tmp_path / "out")
    return repo, base, head, tmp_path, load_evidence(tmp_path / "out")


def test_evidence_follows_the_contract(reviewed: tuple[GitRepo, str, str, Path,
                                                        dict[str, Any]]) -> None:
    _repo, base, head, _tmp, data = reviewed
    assert data["schema_version"] == 1
    assert (data["base"], data["head"]) == (base, head)
    assert isinstance(data["repository"], str)
    assert_keys(data["index"], INDEX_KEYS)
    assert data["index"]["revision"] == head
    assert data["index"]["base_revision"] == base
    assert data["index"]["incremental"] is True
    assert isinstance(data["index"]["path_policy"], dict)
    assert isinstance(data["timings_ms"], dict)
    assert all(isinstance(v, int) for v in data["timings_ms"].values())
    assert data["changed_symbols"]
    for changed in data["changed_symbols"]:
        assert_keys(changed, SYMBOL_KEYS)
        for category in ("callers", "tests", "docs"):
            ranks = [item["rank"] for item in changed[category]]
            assert ranks == list(range(1, len(ranks) + 1))
            for item in changed[category]:
                assert_keys(item, EVIDENCE_KEYS)
                assert "symbol" in item
                assert all(isinstance(v, int | float) for v in item["signals"].values())
                assert item["revision"] == head


def test_signature_change_flags_callers_the_pr_did_not_update(
        reviewed: tuple[GitRepo, str, str, Path, dict[str, Any]]) -> None:
    data = reviewed[4]
    changed = symbol(data, "shop.session.create_session")
    assert changed["change"] == "signature_changed"
    callers = {c["path"]: c for c in changed["callers"] if c["role"] == "production"}
    assert callers["shop/api.py"]["updated_in_pr"] is False
    assert callers["shop/api.py"]["needs_update"] is True
    assert "not updated in this PR" in callers["shop/api.py"]["reason"]
    assert callers["shop/api.py"]["symbol"] == "shop.api.login"
    assert (callers["shop/api.py"]["start_line"], callers["shop/api.py"]["end_line"]) == (4, 5)
    assert callers["shop/api.py"]["line"] == 5
    assert callers["shop/admin.py"]["updated_in_pr"] is True
    assert callers["shop/admin.py"]["needs_update"] is False
    assert changed["callers"][0]["path"] == "shop/api.py"  # not updated ranks first
    assert data["summary"]["callers_not_updated"] == 1


def test_linked_test_stale_doc_and_selection(
        reviewed: tuple[GitRepo, str, str, Path, dict[str, Any]]) -> None:
    data = reviewed[4]
    changed = symbol(data, "shop.session.create_session")
    test = next(t for t in changed["tests"] if t["path"] == "tests/test_session.py")
    assert test["touched_in_pr"] is True
    assert test["signals"]["graph"] > 0
    doc = next(d for d in changed["docs"] if d["path"] == "docs/api.md")
    assert doc["status"] == "stale"
    assert doc["touched_in_pr"] is False
    assert "retries" in doc["reason"]
    assert data["run_everything"] is False and data["test_selection"] == [
        "tests/test_session.py"]  # whole: the PR edits it
    assert data["test_selection_details"] == [{"target": "tests/test_session.py", "reasons": [
        "calls create_session", "the PR adds or edits this test file"]}]


def test_generated_and_vendored_files_are_counted_not_analysed(
        reviewed: tuple[GitRepo, str, str, Path, dict[str, Any]]) -> None:
    data = reviewed[4]
    assert data["excluded_files"] == ["vendor/lib.py"]
    assert not [s for s in data["changed_symbols"] if s["path"].startswith("vendor/")]
    assert any("vendored" in note for note in data["notes"])


def test_comment_and_summary_are_written(
        reviewed: tuple[GitRepo, str, str, Path, dict[str, Any]]) -> None:
    out = reviewed[3] / "out"
    comment = (out / "comment.md").read_text(encoding="utf-8")
    assert comment.splitlines()[0] == COMMENT_MARKER
    assert "1 caller not updated" in comment.splitlines()[1]
    assert "<details><summary>" in comment
    assert "<code>shop/api.py:5</code>" in comment
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "create\\_session" in summary
    assert (out / HEAD_INDEX_NAME).is_file()


def test_base_index_stays_valid_for_the_base(
        reviewed: tuple[GitRepo, str, str, Path, dict[str, Any]]) -> None:
    repo, base, _head, tmp, _data = reviewed
    db = tmp / "base.duckdb"
    with IndexStore.open_existing(db) as store:
        assert store.manifest is not None
        assert store.manifest.revision == base
        before = store.digest()
    again = build_index(open_repository(repo.path), base, db, IndexOptions(), FakeEmbedder(),
                        SilentProgress())
    assert again.changes.get("parsed", 0) == 0 and again.embedded == 0
    assert again.digest == before


def test_the_head_index_is_a_build_of_the_head_vectors_included(
        reviewed: tuple[GitRepo, str, str, Path, dict[str, Any]]) -> None:
    # The head's vectors are computed while the review goes on, and stored before the
    # analysis: the file left behind is the head's index, whole.
    repo, _base, head, tmp, data = reviewed
    fresh = build_index(open_repository(repo.path), head, tmp / "fresh-head.duckdb",
                        IndexOptions(), FakeEmbedder(), SilentProgress())
    with IndexStore.open_existing(tmp / "out" / HEAD_INDEX_NAME) as store:
        assert store.digest() == fresh.digest
        assert store.text_hashes() <= store.embedded_hashes()
    assert data["index"]["embedded"] > 0


def test_two_runs_write_the_same_evidence(make_repo: Callable[..., GitRepo],
                                          tmp_path: Path) -> None:
    repo, base, head = pr_repo(make_repo)
    run_review(repo, base, head, tmp_path / "a.duckdb", tmp_path / "one")
    run_review(repo, base, head, tmp_path / "a.duckdb", tmp_path / "two")
    run_review(repo, base, head, tmp_path / "b.duckdb", tmp_path / "three")
    texts = [stable(load_evidence(tmp_path / d)) for d in ("one", "two", "three")]
    assert texts[0] == texts[1] == texts[2]
    comments = [(tmp_path / d / "comment.md").read_text() for d in ("one", "two", "three")]
    assert comments[0] == comments[1] == comments[2]


def stable(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: stable(v) for k, v in data.items() if not VOLATILE.search(k)}
    if isinstance(data, list):
        return [stable(v) for v in data]
    return data


def test_empty_diff_reports_no_changed_symbols(make_repo: Callable[..., GitRepo],
                                               tmp_path: Path) -> None:
    repo = make_repo(BASE_FILES)
    sha = repo.git("rev-parse", "HEAD").strip()
    report = run_review(repo, sha, sha, tmp_path / "db.duckdb", tmp_path / "out")
    assert report.symbols == ()
    assert load_evidence(tmp_path / "out")["changed_symbols"] == []
    comment = (tmp_path / "out" / "comment.md").read_text(encoding="utf-8")
    assert "0 changed symbols" in comment
    assert "No changed symbols" in comment


def test_time_budget_lists_symbols_without_analysis(make_repo: Callable[..., GitRepo],
                                                    tmp_path: Path) -> None:
    repo, base, head = pr_repo(make_repo)
    run_review(repo, base, head, tmp_path / "db.duckdb", tmp_path / "out", budget_s=0)
    data = load_evidence(tmp_path / "out")
    changed = symbol(data, "shop.session.create_session")
    assert changed["analysed"] is False
    assert changed["callers"] == changed["tests"] == changed["docs"] == []
    assert any("time budget" in note for note in data["notes"])


def test_removed_symbol_is_analysed_at_base(make_repo: Callable[..., GitRepo],
                                            tmp_path: Path) -> None:
    repo = make_repo(BASE_FILES)
    base = repo.git("rev-parse", "HEAD").strip()
    repo.write("shop/session.py", "VERSION = 1\n")
    head = repo.commit("remove create_session")
    run_review(repo, base, head, tmp_path / "db.duckdb", tmp_path / "out")
    changed = symbol(load_evidence(tmp_path / "out"), "shop.session.create_session")
    assert changed["change"] == "removed"
    api = next(c for c in changed["callers"] if c["path"] == "shop/api.py")
    assert api["revision"] == base
    assert "lines at base" in api["reason"]
    assert api["needs_update"] is True


def test_radar_flags_only_calls_the_new_signature_breaks(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo({
        **BASE_FILES,
        "shop/jobs.py": ("from shop.session import create_session\n\n\n"
                         "def nightly(user):\n"
                         "    return create_session(user, 'n')\n"),
    })
    base = repo.git("rev-parse", "HEAD").strip()
    repo.write("shop/session.py", SESSION_HEAD)
    head = repo.commit("drop retries")
    run_review(repo, base, head, tmp_path / "db.duckdb", tmp_path / "out")
    changed = symbol(load_evidence(tmp_path / "out"), "shop.session.create_session")
    callers = {c["path"]: c for c in changed["callers"]}
    assert callers["shop/api.py"]["needs_update"] is True
    assert "passes retries=" in callers["shop/api.py"]["reason"]
    assert callers["shop/jobs.py"]["needs_update"] is False  # never passed retries


MOVED_BASE = {
    "shop/__init__.py": "",
    "shop/legacy.py": "def price(amount, rate):\n    total = amount * rate\n"
                      "    return round(total, 2)\n",
    "shop/cart.py": "from shop.legacy import price\n\n\ndef checkout(items):\n"
                    "    return price(sum(items), 1.2)\n",
}


@pytest.mark.parametrize(("legacy_at_head", "flagged"), [
    ("from shop.pricing import price  # re-exported for old imports\n", False),
    ("", True),
])
def test_a_moved_function_flags_callers_left_on_the_old_module(
        make_repo: Callable[..., GitRepo], tmp_path: Path, legacy_at_head: str,
        flagged: bool) -> None:
    repo = make_repo(MOVED_BASE)
    base = repo.git("rev-parse", "HEAD").strip()
    repo.write("shop/pricing.py", MOVED_BASE["shop/legacy.py"])
    repo.write("shop/legacy.py", legacy_at_head)
    head = repo.commit("move price to pricing")
    run_review(repo, base, head, tmp_path / "db.duckdb", tmp_path / "out")
    data = load_evidence(tmp_path / "out")
    moved = symbol(data, "shop.pricing.price")
    assert (moved["change"], moved["old_qualified_name"]) == ("renamed", "shop.legacy.price")
    cart = [c for c in moved["callers"] if c["path"] == "shop/cart.py"]
    assert [c["needs_update"] for c in cart] == [flagged]
    if flagged:
        assert "still refers to shop.legacy.price" in cart[0]["reason"]
        assert cart[0]["revision"] == base
    assert data["summary"]["callers_not_updated"] == int(flagged)


def test_radar_ignores_annotation_only_changes_in_python(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo({**BASE_FILES, "shop/tasks.py": (
        "from shop.session import create_session\n\n\n"
        "def later(users):\n    return list(map(create_session, users))\n")})
    base = repo.git("rev-parse", "HEAD").strip()
    repo.write("shop/session.py", SESSION.replace("def create_session(user, token, retries=3)",
                                                  "def create_session(user: str, token, "
                                                  "retries=3) -> dict"))
    head = repo.commit("annotate")
    run_review(repo, base, head, tmp_path / "db.duckdb", tmp_path / "out")
    changed = symbol(load_evidence(tmp_path / "out"), "shop.session.create_session")
    assert changed["change"] == "signature_changed"
    assert changed["callers"] and not any(c["needs_update"] for c in changed["callers"])


# -- rendering ------------------------------------------------------------------------------


HOSTILE = "<script>alert(1)</script> @org/team ![x](http://x) ``` `code` & more\nnext"


def evidence_item(rank: int, reason: str = "calls it", path: str = "pkg/mod.py") -> EvidenceItem:
    return EvidenceItem(rank=rank, path=path, symbol="pkg.mod.caller", role="production",
                        start_line=rank, end_line=rank + 1, revision="h" * 40, score=1.0,
                        signals={"graph": 1.0}, reason=reason, touched_in_pr=False,
                        line=rank, updated_in_pr=False, needs_update=True)


def synthetic_report(symbols: int, items: int = 3, reason: str = "calls it",
                     name: str = "pkg.mod.func", path: str = "pkg/mod.py") -> Report:
    blocks = tuple(SymbolReport(
        path=path, symbol=name.rsplit(".", 1)[-1], qualified_name=f"{name}{n}",
        kind="function", change="signature_changed", start_line=n + 1, end_line=n + 2,
        callers=tuple(evidence_item(r, reason, path) for r in range(1, items + 1)),
        tests=(), docs=(), parameter_changes=("removed param retries",))
        for n in range(symbols))
    info = IndexInfo("id", "h" * 40, "b" * 40, "1", "none", {}, True, 1, 1)
    return Report("repo", "b" * 40, "h" * 40, info, blocks, ("tests/test_mod.py",))


def test_render_escapes_hostile_repository_text() -> None:
    report = synthetic_report(1, reason=HOSTILE, name=HOSTILE, path="docs/<img src=x>@me.md")
    comment = render_comment(report)
    body = comment.split("\n", 1)[1]
    assert "<script>" not in body and "<img" not in body
    assert "&lt;script&gt;" in body
    assert "@org" not in body and "@\u200dorg/team" in body
    assert "@me" not in body
    assert "![" not in body
    assert "```" not in body and "`code`" not in body
    assert "\\`code\\`" in body
    assert "more\nnext" not in body
    assert body.count("<details>") == body.count("</details>") == 2  # a symbol, the tests


def test_render_cuts_whole_blocks_to_the_limit() -> None:
    report = synthetic_report(2000, items=5, reason="x" * 200)
    comment = render_comment(report)
    assert len(comment) <= MAX_COMMENT_CHARS
    assert comment.startswith(COMMENT_MARKER)
    shown = comment.count("<details>") - 1  # the last block lists the tests to run
    assert 0 < shown < 2000
    assert comment.count("</details>") == shown + 1
    assert f"{2000 - shown} more changed symbols left out" in comment


def test_render_shows_top_k_and_counts_the_rest() -> None:
    comment = render_comment(synthetic_report(1, items=8))
    assert comment.count("— **not updated**") == 5
    assert "3 more in evidence.json" in comment


def test_render_says_which_docs_the_pr_edited() -> None:
    report = synthetic_report(1)
    doc = dataclasses.replace(evidence_item(1, "docs/api.md § API mentions func"),
                              role="docs", needs_update=False, status="updated")
    stale = dataclasses.replace(doc, rank=2, start_line=9, status="stale")
    block = dataclasses.replace(report.symbols[0], docs=(doc, stale))
    comment = render_comment(dataclasses.replace(report, symbols=(block,)))
    assert comment.count("— edited in this PR: docs/api.md § API mentions func") == 1
    assert comment.count("— docs/api.md § API mentions func") == 1


def test_render_links_when_given_a_base_url() -> None:
    report = synthetic_report(1)
    linked = Report(**{**report.__dict__, "link_base": "https://github.com/o/r"})
    comment = render_comment(linked)
    assert f"(https://github.com/o/r/blob/{'h' * 40}/pkg/mod.py#L1)" in comment


# -- command line ---------------------------------------------------------------------------


def test_cli_review_end_to_end(make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo, base, head = pr_repo(make_repo)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, [
        "review", "--repo", str(repo.path), "--base", base, "--head", head,
        "--db", str(tmp_path / "db.duckdb"), "--out", str(out), "--no-embeddings",
        "--json", "--quiet"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["callers_not_updated"] == 1
    assert summary["evidence"] == str(out / "evidence.json")
    assert load_evidence(out)["index"]["embedding_model"] == "none"


def test_cli_review_unknown_revision_exits_2(make_repo: Callable[..., GitRepo],
                                             tmp_path: Path) -> None:
    repo = make_repo(BASE_FILES)
    result = CliRunner().invoke(cli, [
        "review", "--repo", str(repo.path), "--base", "nope", "--head", "HEAD",
        "--db", str(tmp_path / "db.duckdb"), "--out", str(tmp_path / "out"),
        "--no-embeddings"])
    assert result.exit_code == 2
    assert "error" in result.output


RADAR_FILES = {
    "shop/__init__.py": "",
    "shop/base.py": (
        "class Loader:\n"
        "    def load(self, name):\n"
        "        return name\n"
        "\n"
        "    def run(self, name):\n"
        "        return self.load(name)\n"
    ),
    "shop/cached.py": (
        "from shop.base import Loader\n"
        "\n"
        "\n"
        "class Cached(Loader):\n"
        "    def load(self, name):\n"
        "        return name.upper()\n"
        "\n"
        "\n"
        "class Store:\n"
        "    def fetch(self, key):\n"
        "        return key\n"
        "\n"
        "\n"
        "class Remote:\n"
        "    def fetch(self, key):\n"
        "        return None\n"
        "\n"
        "\n"
        "class Vault:\n"
        "    def unseal(self, key):\n"
        "        return key\n"
    ),
    "shop/use.py": (
        "def use(thing, vault):\n"
        "    thing.fetch(1)\n"
        "    return vault.unseal(2)\n"
    ),
}


def test_removing_an_override_or_a_homonym_breaks_no_call(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    # self.load() still reaches Loader.load; thing.fetch() has another fetch to call; but
    # vault.unseal() had no other unseal to reach.
    repo = make_repo(RADAR_FILES)
    base = repo.git("rev-parse", "HEAD").strip()
    text = RADAR_FILES["shop/cached.py"]
    repo.write("shop/cached.py", text.replace(
        "    def load(self, name):\n        return name.upper()\n", "    pass\n").replace(
        "class Store:\n    def fetch(self, key):\n        return key\n",
        "class Store:\n    pass\n").replace(
        "    def unseal(self, key):\n        return key\n", "    pass\n"))
    head = repo.commit("remove")
    report = review(open_repository(repo.path), base, head, tmp_path / "b.duckdb",
                    tmp_path / "out", None, SilentProgress())
    flagged = {s.qualified_name: [(c.path, c.needs_update) for c in s.callers]
               for s in report.symbols}
    assert flagged["shop.cached.Cached.load"] == [("shop/base.py", False)]
    assert flagged["shop.cached.Store.fetch"] == [("shop/use.py", False)]
    assert flagged["shop.cached.Vault.unseal"] == [("shop/use.py", True)]


def test_a_test_files_symbol_lists_no_same_name_candidates_from_the_code(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    fake = ("from shop.db import export\n\n\nclass FakeSource:\n"
            "    def fetch_rows(self):\n        return []\n\n\n"
            "def test_export():\n    assert export(FakeSource()) == []\n\n\n"
            "def test_direct():\n    source = make()\n    assert source.fetch_rows() == []\n")
    repo = make_repo({"shop/__init__.py": "", "tests/__init__.py": "",
                      "shop/db.py": "def export(source):\n    return source.fetch_rows()\n",
                      "tests/test_db.py": fake})
    base = repo.git("rev-parse", "HEAD").strip()
    repo.write("tests/test_db.py", fake.replace("return []", "return [1]"))
    head = repo.commit("fake returns a row")

    run_review(repo, base, head, tmp_path / "base.duckdb", tmp_path / "out")
    callers = symbol(load_evidence(tmp_path / "out"),
                     "tests.test_db.FakeSource.fetch_rows")["callers"]

    assert [(c["path"], c["start_line"]) for c in callers] == [("tests/test_db.py", 13)]


def test_the_prs_own_test_files_are_selected_even_when_no_link_reaches_them(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo({"shop/__init__.py": "", "tests/__init__.py": "",
                      "shop/db.py": "def export(rows):\n    return list(rows)\n",
                      "tests/test_db.py": ("from shop.db import export\n\n\n"
                                           "def test_export():\n    assert export([]) == []\n")})
    base = repo.git("rev-parse", "HEAD").strip()
    repo.write("shop/db.py", "def export(rows):\n    return sorted(rows)\n")
    repo.write("tests/regression/test_issue9.py",
               "def test_issue9(client):\n    assert client.get('/export').ok\n")
    repo.write("docs/export.md", "# Export\n")
    head = repo.commit("sort exported rows")

    # Without embeddings nothing links the new test: it shares no name and no call.
    report = review(open_repository(repo.path), base, head, tmp_path / "base.duckdb",
                    tmp_path / "out", None, SilentProgress())

    assert [t.path for s in report.symbols for t in s.tests] == ["tests/test_db.py"]
    assert report.test_selection == ("tests/test_db.py::test_export",
                                     "tests/regression/test_issue9.py")


def test_a_type_use_needs_an_update_when_the_type_goes_not_when_it_changes(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    order = "class Order:\n    id: int\n"
    repo = make_repo({"shop/__init__.py": "", "shop/models.py": order,
                      "shop/api.py": ("from shop.models import Order\n\n\n"
                                      "def total(order: Order) -> int:\n    return 0\n")})
    base = repo.git("rev-parse", "HEAD").strip()
    repo.write("shop/models.py", order.replace("Order:", "Order(dict):"))
    changed = repo.commit("orders are dicts")
    repo.write("shop/models.py", "")
    removed = repo.commit("orders go")

    for head, flagged in ((changed, False), (removed, True)):
        out = tmp_path / head
        run_review(repo, base, head, tmp_path / "base.duckdb", out)
        report = symbol(load_evidence(out), "shop.models.Order")
        assert report["change"] == ("removed" if flagged else "signature_changed")
        [caller] = report["callers"]
        assert (caller["path"], caller["line"], caller["needs_update"]) == (
            "shop/api.py", 4, flagged)
        assert caller["reason"].startswith("uses Order")


def test_the_tests_to_run_are_listed_with_their_reasons() -> None:
    report = dataclasses.replace(
        synthetic_report(1), test_selection=("tests/test_a.py", "tests/test_b.py::test_c"),
        selection_details=(SelectedTest("tests/test_a.py", ("calls func",)),
                           SelectedTest("tests/test_b.py::test_c", ("reaches func in 2 calls",))))
    comment = render_comment(report).split("\n")
    assert "<details><summary>Tests to run: 2</summary>" in comment
    assert "- <code>tests/test\\_a.py</code> — calls func" in comment
    assert "- <code>tests/test\\_b.py::test\\_c</code> — reaches func in 2 calls" in comment
    line = ("**Tests to run:** <code>tests/test\\_a.py</code> "
            "<code>tests/test\\_b.py::test\\_c</code>")
    assert line in render_summary(report).split("\n")


DECORATOR_BASE = {
    "shop/__init__.py": "",
    "shop/retry.py": ("import functools\n\n\n"
                      "def retrying(f):\n"
                      "    @functools.wraps(f)\n"
                      "    def wrapper(*args):\n"
                      "        return f(*args)\n"
                      "    return wrapper\n"),
    "shop/api.py": ("from shop.retry import retrying\n\n\n"
                    "@retrying\n"
                    "def fetch(url):\n"
                    "    return url\n"),
}


def test_a_change_inside_a_closure_lists_the_decorators_callers(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(DECORATOR_BASE)
    base = repo.git("rev-parse", "HEAD").strip()
    repo.write("shop/retry.py", DECORATOR_BASE["shop/retry.py"].replace(
        "return f(*args)\n", "return f(*args) or f(*args)\n"))
    head = repo.commit("retry once")
    report = run_review(repo, base, head, tmp_path / "db.duckdb", tmp_path / "out")
    [changed] = load_evidence(tmp_path / "out")["changed_symbols"]
    assert (changed["qualified_name"], changed["change"], changed["changed_inside"]) == (
        "shop.retry.retrying", "modified", ["shop.retry.retrying.wrapper"])
    assert [(c["path"], c["line"]) for c in changed["callers"]] == [("shop/api.py", 4)]
    assert "· changed inside <code>wrapper</code>" in render_comment(report)


def test_reading_a_class_member_needs_an_update_only_when_the_class_goes(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    kinds = "import enum\n\n\nclass Kind(enum.Enum):\n    A = 1\n"
    repo = make_repo({"shop/__init__.py": "", "shop/kinds.py": kinds,
                      "shop/api.py": ("from shop.kinds import Kind\n\n\n"
                                      "def default():\n    return Kind.A\n")})
    base = repo.git("rev-parse", "HEAD").strip()
    repo.write("shop/kinds.py", kinds.replace("(enum.Enum)", "(enum.IntEnum)"))
    changed = repo.commit("int kinds")
    repo.write("shop/kinds.py", "")
    removed = repo.commit("kinds go")
    for head, flagged in ((changed, False), (removed, True)):
        out = tmp_path / head
        run_review(repo, base, head, tmp_path / "base.duckdb", out)
        [caller] = symbol(load_evidence(out), "shop.kinds.Kind")["callers"]
        assert (caller["path"], caller["line"], caller["needs_update"]) == (
            "shop/api.py", 5, flagged)
        assert "reads A, a member of shop.kinds.Kind" in caller["reason"]


def test_run_everything_is_said_with_its_reason() -> None:
    report = dataclasses.replace(synthetic_report(1), test_selection=("tests",),
                                 run_everything="tests/conftest.py changed")
    comment = render_comment(report)
    assert "all tests to run" in comment.split("\n")[1]
    assert ("**Tests to run:** all of them (<code>tests</code>): tests/conftest.py changed"
            in comment.split("\n"))
    assert "all of them: tests/conftest.py changed" in render_summary(report)


BOXES = {
    "shop/boxes.py": (
        "class Box:\n"
        "    def __init__(self, items):\n"
        "        self.items = list(items)\n\n"
        "    def __contains__(self, item):\n"
        "        return item in self.items\n\n"
        "    def __len__(self):\n"
        "        return len(self.items)\n\n\n"
        "def pack(items):\n"
        "    return Box(items)\n"
    ),
    "tests/test_boxes.py": (
        "from shop.boxes import Box, pack\n\n\n"
        "def test_membership():\n"
        "    box = Box([1])\n"
        "    assert 1 in box\n\n\n"
        "def test_pack():\n"
        "    assert len(pack([1, 2])) == 2\n"
    ),
}


# 40 tests of one function the PR below does not reach, and one more it does: it reaches
# most of the suite's test functions (3 of 5) but few of its tests (3 of 44), counted by
# the selection's estimate, which the child makes.
MANY = {"tests/test_many.py": ("import pytest\n\n\n@pytest.mark.parametrize('x', range(40))\n"
                               "def test_many(x):\n    assert x >= 0\n"),
        "tests/test_packing.py": ("from shop.boxes import pack\n\n\n"
                                  "def test_pack_one():\n    assert len(pack([1])) == 1\n")}


def test_the_base_side_analysed_in_a_forked_child_gives_the_same_evidence(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    """Removed symbols (walked on the base's graph, in the child), a renamed one (whose
    old callers are looked up at base) and changed ones (walked by the review itself);
    the child then counts the parametrized tests for the selection.
    The forking review runs as a command, in a process of its own: fork_work does not
    fork a process running other threads, as this test session may."""
    repo = make_repo({**BASE_FILES, **MOVED_BASE, **BOXES, **MANY})
    base = repo.git("rev-parse", "HEAD").strip()
    for path, text in HEAD_CHANGES.items():
        repo.write(path, text)
    repo.write("shop/pricing.py", MOVED_BASE["shop/legacy.py"])
    repo.write("shop/legacy.py", "")
    repo.write("shop/boxes.py", BOXES["shop/boxes.py"].replace(
        "    def __contains__(self, item):\n        return item in self.items\n\n", "")
        .replace("return Box(items)", "return Box(sorted(items))"))
    head = repo.commit("a mixed PR")
    alone = tmp_path / "alone"
    report = review(open_repository(repo.path), base, head, tmp_path / "alone.duckdb", alone,
                    None, SilentProgress(), ReviewOptions(fork=False))
    write_review(report, alone)
    forked = tmp_path / "forked"
    subprocess.run([sys.executable, "-m", "pr_context", "review", "--quiet", "--repo",
                    str(repo.path), "--base", base, "--head", head, "--db",
                    str(tmp_path / "forked.duckdb"), "--out", str(forked),
                    "--no-embeddings"], check=True, capture_output=True)
    evidence = [stable(load_evidence(out)) for out in (alone, forked)]
    changes = {s["qualified_name"]: s["change"] for s in evidence[0]["changed_symbols"]}
    assert changes["shop.boxes.Box.__contains__"] == "removed"
    assert changes["shop.pricing.price"] == "renamed"
    assert symbol(evidence[0], "shop.boxes.Box.__contains__")["tests"]
    assert evidence[0]["run_everything"] is False
    assert "tests/test_packing.py::test_pack_one" in evidence[0]["test_selection"]
    assert evidence[0] == evidence[1]


def test_the_child_counts_the_estimate_only_while_the_review_still_analyses() -> None:
    """In a fresh interpreter, as tests/test_forked.py: the estimate of parametrized tests
    is the child's spare work, left to the review once it has analysed its symbols."""
    printed = run_fresh("""
from types import SimpleNamespace
from pr_context.review import _Estimate
text = "import pytest\\n@pytest.mark.parametrize('x', [1, 2, 3])\\ndef test_a(x):\\n    pass\\n"
side = SimpleNamespace(sha="abc", links=SimpleNamespace(roles={"tests/test_a.py": "test"}))
estimate = _Estimate(side, SimpleNamespace(text=lambda sha, path: text))
with fork_work(estimate.in_child) as work:
    analysing = work.result()
estimate.parent_done()
with fork_work(estimate.in_child) as work:
    done = work.result()
print(analysing, done, estimate.in_child(), estimate.known)
""")
    assert printed == "{'tests/test_a.py::test_a': 3} None None None"


class _LoadTracingEmbedder(FakeEmbedder):
    """Records the threads its model was loaded in, and tells when it first was."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []
        self.loaded = threading.Event()

    def load(self) -> None:
        self.loads.append(threading.current_thread().name)
        self.loaded.set()


def test_the_model_loads_while_the_base_is_checked_and_its_thread_ends_before_the_analysis(
        make_repo: Callable[..., GitRepo], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    repo, base, head = pr_repo(make_repo)
    embedder = _LoadTracingEmbedder()
    build_index_, analyse_all = review_module.build_index, review_module._analyse_all
    loaded_during_base_check: list[bool] = []
    alive: list[list[str]] = []

    def checking_base(*args: Any, **kwargs: Any) -> Any:
        loaded_during_base_check.append(embedder.loaded.wait(timeout=10))
        return build_index_(*args, **kwargs)

    def tracing(*args: Any, **kwargs: Any) -> Any:
        alive.append([t.name for t in threading.enumerate()])
        return analyse_all(*args, **kwargs)

    monkeypatch.setattr(review_module, "build_index", checking_base)
    monkeypatch.setattr(review_module, "_analyse_all", tracing)
    review(open_repository(repo.path), base, head, tmp_path / "base.duckdb", tmp_path / "out",
           embedder, SilentProgress(), ReviewOptions())
    assert loaded_during_base_check == [True]
    assert embedder.loads == ["index-vectors_0"]  # the worker that embeds the head's texts
    # a forked child needs the process alone with its main thread
    assert alive and not any(n.startswith("index-vectors") for n in alive[0])


def test_explain_loads_the_model_while_the_base_is_checked(
        make_repo: Callable[..., GitRepo], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    repo, base, head = pr_repo(make_repo)
    embedder = _LoadTracingEmbedder()
    build_index_ = review_module.build_index
    loaded_during_base_check: list[bool] = []

    def checking_base(*args: Any, **kwargs: Any) -> Any:
        loaded_during_base_check.append(embedder.loaded.wait(timeout=10))
        return build_index_(*args, **kwargs)

    monkeypatch.setattr(review_module, "build_index", checking_base)
    found = explain(open_repository(repo.path), base, head, tmp_path / "base.duckdb",
                    tmp_path / "out", "create_session", embedder, SilentProgress())
    assert found.symbol.qualified_name.endswith("create_session")
    assert loaded_during_base_check == [True] and embedder.loads == ["index-vectors_0"]


def test_explain_reports_a_changed_symbol_as_the_review_does(
        reviewed: tuple[GitRepo, str, str, Path, dict[str, Any]]) -> None:
    # explain embeds the head's new texts while both sides load, as the review does: the
    # same report for the symbol, and a head index with every vector.
    repo, base, head, tmp, data = reviewed
    reported = data["changed_symbols"][0]
    found = explain(open_repository(repo.path), base, head, tmp / "explain.duckdb",
                    tmp / "explain-out", reported["qualified_name"], FakeEmbedder(),
                    SilentProgress())
    assert found.symbol.to_json() == reported
    with IndexStore.open_existing(tmp / "explain-out" / HEAD_INDEX_NAME) as store:
        assert store.text_hashes() <= store.embedded_hashes()
