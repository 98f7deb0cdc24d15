"""The MCP server through the SDK's in-memory client, on real git repositories."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pr_context.git import open_repository
from pr_context.index.build import IndexOptions, build_index
from pr_context.index.shards import ShardSpec
from pr_context.mcp.bounds import MAX_SNIPPET_LINE_CHARS, MAX_SNIPPET_LINES
from pr_context.mcp.ranges import MAX_RANGE_LINE_CHARS
from pr_context.mcp.workspace import ServerSettings
from pr_context.progress import SilentProgress
from tests.conftest import GitRepo
from tests.fakes import FakeEmbedder
from tests.mcp_client import Served, items, serve

CORE = '''"""Configuration parsing."""


def parse_config(text):
    """Parse a config text into a dict.

    Lines are key=value pairs.
    """
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def load_settings(path):
    with open(path) as handle:
        return parse_config(handle.read())
'''
TEST_CORE = '''from pkg.core import parse_config


def test_parse_config():
    assert parse_config("a=1") == {"a": "1"}
'''
DOC = "# Configuration\n\nCall `parse_config` to read a config text.\n"
FILES = {"pkg/__init__.py": "", "pkg/core.py": CORE, "tests/test_core.py": TEST_CORE,
         "docs/config.md": DOC}
TOOLS = ("search_code", "find_symbol", "find_callers", "find_tests", "find_docs",
         "change_impact", "read_range", "index_status")


@pytest.fixture
def served(make_repo: Callable[..., GitRepo]) -> Served:
    return serve(make_repo(FILES))


def test_every_tool_is_read_only_with_input_and_output_schemas(served: Served) -> None:
    import anyio
    from mcp.client import Client

    from pr_context.mcp.server import build_server

    async def listed() -> list[object]:
        async with Client(build_server(served.workspace)) as client:
            return list((await client.list_tools()).tools)
    tools = {t.name: t for t in anyio.run(listed)}  # type: ignore[attr-defined]
    assert sorted(tools) == sorted(TOOLS)
    for tool in tools.values():
        assert tool.input_schema["type"] == "object"  # type: ignore[attr-defined]
        assert tool.output_schema is not None, tool  # type: ignore[attr-defined]
        assert tool.annotations.read_only_hint is True  # type: ignore[attr-defined]
    item = tools["search_code"].output_schema["$defs"]["Item"]  # type: ignore[attr-defined]
    assert {"path", "start_line", "end_line", "revision", "symbol", "role", "score",
            "reason"} <= set(item["required"])


def test_search_code_ranks_the_implementation_with_snippets(served: Served) -> None:
    result = served.structured("search_code", query="parse a config text into a dict")
    found = items(result)
    head = served.repo.git("rev-parse", "HEAD").strip()
    assert found[0]["symbol"] == "pkg.core.parse_config"
    assert (found[0]["start_line"], found[0]["end_line"]) == (4, 9)
    assert found[0]["revision"] == head == result["revision"]
    assert found[0]["snippet"].startswith("def parse_config(text):")
    assert result["truncated"] is False and result["stale"] is False
    assert "matched by" in found[0]["reason"]


def test_search_code_filters_by_role_and_path(served: Served) -> None:
    tests = items(served.structured("search_code", query="parse_config", role="test"))
    assert tests and all(i["role"] == "test" for i in tests)
    docs = items(served.structured("search_code", query="parse_config", path_prefix="docs"))
    assert docs and all(i["path"].startswith("docs/") for i in docs)
    assert "unknown role" in served.error("search_code", query="x", role="tests")


def test_find_symbol_gives_signature_and_docstring_summary(served: Served) -> None:
    found = items(served.structured("find_symbol", name="pkg.core.parse_config"))
    assert len(found) == 1
    assert found[0]["signature"] == "def parse_config(text)"
    assert found[0]["doc"] == "Parse a config text into a dict."
    assert found[0]["score"] == 1.0 and found[0]["kind"] == "function"
    assert "no function, method or class named 'nothing_here'" in served.error(
        "find_symbol", name="nothing_here")


def test_find_callers_carries_the_call_site_and_how(served: Served) -> None:
    found = items(served.structured("find_callers", symbol="parse_config"))
    by_path = {i["path"]: i for i in found}
    assert by_path["pkg/core.py"]["line"] == 14
    assert by_path["pkg/core.py"]["symbol"] == "pkg.core.load_settings"
    assert (by_path["pkg/core.py"]["start_line"], by_path["pkg/core.py"]["end_line"]) == (12, 14)
    assert by_path["tests/test_core.py"]["line"] == 5
    assert {i["how"] for i in found} == {"graph"}
    assert "imported from pkg.core" in by_path["tests/test_core.py"]["reason"]


def test_an_ambiguous_bare_name_is_answered_for_each_definition(
        make_repo: Callable[..., GitRepo]) -> None:
    served = serve(make_repo({
        "a.py": "class A:\n    def run(self):\n        return 1\n\n\ndef go():\n    A().run()\n",
        "b.py": "class B:\n    def run(self):\n        return 2\n\n\ndef go():\n    B().run()\n",
    }))
    result = served.structured("find_callers", symbol="run")
    answered = {(i["of"], i["path"]) for i in items(result)}
    assert answered == {("a.A.run", "a.py"), ("b.B.run", "b.py")}
    assert any("names 2 definitions" in note for note in result["notes"])
    only = items(served.structured("find_callers", symbol="a.A.run"))
    assert {i["path"] for i in only} == {"a.py"}


def test_find_tests_and_find_docs(served: Served) -> None:
    tests = items(served.structured("find_tests", symbol="parse_config"))
    assert tests[0]["path"] == "tests/test_core.py" and tests[0]["role"] == "test"
    docs = items(served.structured("find_docs", symbol="parse_config"))
    assert docs[0]["path"] == "docs/config.md"
    assert "mentions parse_config" in docs[0]["reason"]


def test_read_range_numbers_lines_and_index_status(served: Served) -> None:
    result = served.call("read_range", path="pkg/core.py", start_line=4, end_line=5)
    assert not result.is_error
    data = result.structured_content
    assert data is not None
    assert [line["number"] for line in data["lines"]] == [4, 5]
    assert data["lines"][0]["text"] == "def parse_config(text):"
    assert data["symbol"] == "pkg.core.parse_config"
    assert "4| def parse_config(text):" in result.content[0].text  # type: ignore[union-attr]
    head = served.repo.git("rev-parse", "HEAD").strip()
    past = served.structured("read_range", path="pkg/core.py", start_line=1, end_line=2,
                             revision="HEAD")
    assert past["revision"] == head
    status = served.structured("index_status")
    assert status["indexed_commit"] == status["head"] == head
    assert status["dirty_count"] == 0 and status["counts"]["files"] == 4
    assert status["model_loaded"] is False
    assert "past its end" in served.error("read_range", path="pkg/core.py", start_line=99,
                                          end_line=100)
    assert "unknown revision" in served.error("read_range", path="pkg/core.py", start_line=1,
                                              end_line=1, revision="no-such-branch")


def test_change_impact_reviews_the_working_tree(served: Served) -> None:
    served.repo.write("pkg/core.py", CORE.replace("def parse_config(text):",
                                                  "def parse_config(text, strict):"))
    result = served.structured("change_impact")
    found = items(result)
    changed = [i for i in found if i["category"] == "changed"]
    assert [(i["symbol"], i["change"], i["revision"]) for i in changed] == [
        ("pkg.core.parse_config", "signature_changed", "WORKTREE")]
    callers = [i for i in found if i["category"] == "caller"]
    assert callers and all(i["needs_update"] for i in callers)
    # the file itself, or (a change reaching most of this small suite) its directory
    assert any(t == "tests/test_core.py" or "tests/test_core.py".startswith(t.rstrip("/") + "/")
               for t in result["test_selection"])
    assert result["head"] == "WORKTREE"
    assert served.repo.git("status", "--porcelain") == " M pkg/core.py\n"  # nothing else


def test_change_impact_asked_again_reuses_its_review_until_the_tree_changes(
        served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    import pr_context.mcp.impact as impact

    reviewed: list[str] = []
    real = impact.review

    def counted(*args: object, **kwargs: object) -> object:
        reviewed.append(str(args[2]))  # the head commit
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(impact, "review", counted)
    served.repo.write("pkg/core.py", CORE.replace("def parse_config(text):",
                                                  "def parse_config(text, strict):"))
    first = items(served.structured("change_impact"))
    assert items(served.structured("change_impact")) == first
    assert len(reviewed) == 1  # the same snapshot commit: the same review
    served.structured("change_impact", limit_per_symbol=1)  # other options: reviewed again
    assert len(reviewed) == 2
    served.repo.write("pkg/core.py", CORE.replace("def load_settings(path):",
                                                  "def load_settings(path, encoding):"))
    changed = [i["symbol"] for i in items(served.structured("change_impact"))
               if i["category"] == "changed"]
    assert changed == ["pkg.core.load_settings"]
    assert len(reviewed) == 3 and len(set(reviewed)) == 2


def test_change_impact_between_two_revisions(served: Served) -> None:
    first = served.repo.git("rev-parse", "HEAD").strip()
    served.repo.write("pkg/core.py", CORE + "\n\ndef dump_config(data):\n    return data\n")
    second = served.repo.commit("add dump_config")
    result = served.structured("change_impact", base=first, head=second)
    changed = [i for i in items(result) if i["category"] == "changed"]
    assert [(i["symbol"], i["change"], i["revision"]) for i in changed] == [
        ("pkg.core.dump_config", "added", second)]


# -- freshness ---------------------------------------------------------------------------


def test_an_edited_file_is_overlaid_and_marked_worktree(served: Served) -> None:
    served.repo.write("pkg/core.py", "\n\n" + CORE.replace("parse_config", "read_config"))
    found = items(served.structured("find_symbol", name="read_config"))
    assert [(i["path"], i["start_line"], i["revision"]) for i in found] == [
        ("pkg/core.py", 6, "WORKTREE")]
    assert "no function" in served.error("find_symbol", name="pkg.core.parse_config")
    hits = items(served.structured("search_code", query="read_config"))
    assert hits[0]["symbol"] == "pkg.core.read_config" and hits[0]["revision"] == "WORKTREE"
    assert hits[0]["snippet"].startswith("def read_config(text):")
    status = served.structured("index_status")
    assert status["dirty_files"] == [{"path": "pkg/core.py", "status": "modified"}]
    assert status["stale"] is False


def test_added_untracked_and_deleted_files(served: Served) -> None:
    served.repo.write("pkg/extra.py", "def shiny_helper():\n    return 1\n")
    served.repo.write("ignored/skip.py", "def ignored_helper():\n    return 1\n")
    (served.repo.path / ".gitignore").write_text("ignored/\n", encoding="utf-8")
    served.repo.remove("docs/config.md")
    found = items(served.structured("find_symbol", name="shiny_helper"))
    assert found[0]["revision"] == "WORKTREE"
    assert "no function" in served.error("find_symbol", name="ignored_helper")
    assert items(served.structured("find_docs", symbol="parse_config")) == []
    hits = items(served.structured("search_code", query="Call parse_config to read"))
    assert all(i["path"] != "docs/config.md" for i in hits)
    dirty = {d["path"]: d["status"] for d in served.structured("index_status")["dirty_files"]}
    assert dirty == {"pkg/extra.py": "added", "docs/config.md": "deleted",
                     ".gitignore": "added"}


def test_a_commit_updates_the_index_before_answering(served: Served) -> None:
    served.repo.write("pkg/extra.py", "def shiny_helper():\n    return 1\n")
    served.structured("find_symbol", name="shiny_helper")
    head = served.repo.commit("add extra")
    found = items(served.structured("find_symbol", name="shiny_helper"))
    assert found[0]["revision"] == head
    status = served.structured("index_status")
    assert status["indexed_commit"] == head and status["dirty_count"] == 0


def test_checkout_of_another_branch(served: Served) -> None:
    served.repo.git("checkout", "-q", "-b", "feature")
    served.repo.write("pkg/feature.py", "def feature_flag():\n    return True\n")
    feature = served.repo.commit("feature")
    served.repo.git("checkout", "-q", "main")
    assert "no function" in served.error("find_symbol", name="feature_flag")
    served.repo.git("checkout", "-q", "feature")
    found = items(served.structured("find_symbol", name="feature_flag"))
    assert found[0]["revision"] == feature


def test_past_the_dirty_limit_answers_say_they_are_stale(
        make_repo: Callable[..., GitRepo]) -> None:
    served = serve(make_repo(FILES), settings=ServerSettings(max_dirty_files=1))
    served.repo.write("a.py", "def one():\n    pass\n")
    served.repo.write("b.py", "def two():\n    pass\n")
    result = served.structured("search_code", query="parse_config")
    assert result["stale"] is True
    assert any("overlay limit of 1" in note for note in result["notes"])
    assert served.structured("index_status")["stale"] is True


def test_new_chunks_of_the_overlay_are_embedded_once(make_repo: Callable[..., GitRepo]) -> None:
    embedder = FakeEmbedder()
    served = serve(make_repo(FILES), embedder=embedder)
    before = len(embedder.embedded_texts)
    served.repo.write("pkg/extra.py", "def shiny_helper():\n    return 'glitter'\n")
    hits = items(served.structured("search_code", query="shiny_helper returns glitter"))
    assert hits[0]["path"] == "pkg/extra.py" and hits[0]["revision"] == "WORKTREE"
    chunk = "def shiny_helper():"
    assert any(chunk in t for t in embedder.embedded_texts[before:])
    again = len(embedder.embedded_texts)
    served.structured("search_code", query="glitter")
    embedded = embedder.embedded_texts[again:]  # the query (and names), not the chunk again
    assert embedded[0] == "glitter" and not any(chunk in t for t in embedded)


def test_a_spent_deadline_hides_what_it_could_not_parse(make_repo: Callable[..., GitRepo]) -> None:
    served = serve(make_repo(FILES), settings=ServerSettings(deadline_s=0.0))
    served.repo.write("pkg/core.py", CORE.replace("parse_config", "read_config"))
    result = served.structured("search_code", query="parse_config")
    assert result["stale"] is True
    assert any("not re-parsed within the deadline" in note for note in result["notes"])
    assert all(i["path"] != "pkg/core.py" for i in items(result))


# -- bounds ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def many_chunks(tmp_path_factory: pytest.TempPathFactory) -> Served:
    """A repository of 2,400 functions that all mention the same words."""
    repo = GitRepo(tmp_path_factory.mktemp("many") / "repo")
    for module in range(40):
        body = "\n\n".join(
            f"def widget_{module}_{n}(value):\n    \"\"\"Render the widget frame {n}.\"\"\"\n"
            f"    return render_widget_frame(value, {n})" for n in range(60))
        repo.write(f"widgets/w{module}.py", body + "\n")
    repo.write("widgets/long.py", "def long_line():\n    return '" + "x" * 5000 + "'\n")
    repo.write("static/app.js", "var a=" + ",".join(str(n) for n in range(20_000)) + ";\n")
    repo.commit("many widgets")
    return serve(repo, settings=ServerSettings(budget_chars=6_000))


def test_a_query_matching_thousands_of_chunks_fits_the_budget(many_chunks: Served) -> None:
    result = many_chunks.call("search_code", query="render widget frame", limit=100)
    data = result.structured_content
    assert data is not None and not result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert len(json.dumps(data, separators=(",", ":"))) + len(text) <= 6_000
    assert data["truncated"] is True
    assert data["rendering"] in ("no_snippets", "locations")
    omitted = data["omitted"]
    assert omitted["snippets"] > 0 or omitted["items"] > 0
    assert len(data["items"]) + omitted["items"] == 100
    assert "truncated to fit" in text


def test_snippets_and_ranges_cut_long_lines(many_chunks: Served) -> None:
    hits = items(many_chunks.structured("search_code", query="long_line", limit=1))
    snippet = hits[0]["snippet"].split("\n")
    assert len(snippet) <= MAX_SNIPPET_LINES + 1
    assert max(len(line) for line in snippet) <= MAX_SNIPPET_LINE_CHARS
    lines = many_chunks.structured("read_range", path="widgets/long.py", start_line=1,
                                   end_line=2)
    assert max(len(line["text"]) for line in lines["lines"]) <= MAX_RANGE_LINE_CHARS
    assert lines["truncated"] is True


def test_a_minified_file_is_never_returned(many_chunks: Served) -> None:
    message = many_chunks.error("read_range", path="static/app.js", start_line=1, end_line=1)
    assert "outside the index's path policy (minified)" in message
    hits = items(many_chunks.structured("search_code", query="var a", limit=50))
    assert all(i["path"] != "static/app.js" for i in hits)


def test_a_long_range_is_cut_to_the_budget(many_chunks: Served) -> None:
    result = many_chunks.structured("read_range", path="widgets/w0.py", start_line=1,
                                    end_line=400)
    assert result["truncated"] is True and result["end_line"] < 400
    assert result["omitted"]["items"] > 0


# -- security ----------------------------------------------------------------------------


SECRET = 'API_KEY = "sk_live_0123456789abcdefghij"\n'


@pytest.fixture
def hostile(make_repo: Callable[..., GitRepo], tmp_path: Path) -> Served:
    repo = make_repo({**FILES, ".env": "TOKEN=supersecretvalue1\n", "keys/id_rsa": "k\n",
                      "node_modules/dep/index.js": "function dep() {}\n"})
    evil = repo.path.parent / (repo.path.name + "-evil")
    evil.mkdir()
    (evil / "loot.py").write_text("def loot():\n    pass\n", encoding="utf-8")
    (repo.path / "escape").symlink_to(evil)
    (repo.path / "passwd.py").symlink_to("/etc/passwd")
    return serve(repo)


@pytest.mark.parametrize(("path", "says"), [
    ("../repo0/pkg/core.py", "climbs out of the repository"),
    ("pkg/../../x.py", "climbs out of the repository"),
    ("/etc/passwd", "is absolute"),
    ("escape/loot.py", "leads outside the repository"),
    ("passwd.py", "leads outside the repository"),
    (".env", "looks like a file of secrets"),
    ("keys/id_rsa", "looks like a file of secrets"),
    (".git/config", "inside .git"),
    ("node_modules/dep/index.js", "outside the index's path policy"),
])
def test_paths_are_confined(hostile: Served, path: str, says: str) -> None:
    assert says in hostile.error("read_range", path=path, start_line=1, end_line=1)


def test_a_sibling_folder_sharing_the_prefix_is_outside(hostile: Served) -> None:
    sibling = f"{hostile.repo.path}-evil/loot.py"
    assert "is absolute" in hostile.error("read_range", path=sibling, start_line=1,
                                          end_line=1)
    # escape -> REPO-evil: a string prefix check on the resolved path would let it in.
    target = (hostile.repo.path / "escape" / "loot.py").resolve()
    assert str(target).startswith(str(hostile.repo.path))
    assert "leads outside the repository" in hostile.error(
        "read_range", path="escape/loot.py", start_line=1, end_line=1)


def test_secrets_in_overlaid_files_are_redacted(hostile: Served) -> None:
    hostile.repo.write("pkg/settings.py", SECRET + "def settings():\n    return API_KEY\n")
    hostile.repo.write(".env.local", "TOKEN=anothersecret123\n")
    hits = items(hostile.structured("search_code", query="settings API_KEY"))
    texts = json.dumps(hits)
    assert "sk_live_0123456789abcdefghij" not in texts and "[REDACTED]" in texts
    lines = hostile.structured("read_range", path="pkg/settings.py", start_line=1, end_line=1)
    assert lines["lines"][0]["text"] == 'API_KEY = "[REDACTED]"'
    assert "anothersecret" not in json.dumps(
        hostile.structured("search_code", query="TOKEN anothersecret"))


def test_a_missing_index_is_a_clear_error(make_repo: Callable[..., GitRepo]) -> None:
    served = serve(make_repo(FILES))
    served.db.unlink()
    assert "build it with `pr-context index" in served.error("index_status")


def test_a_lone_shard_is_a_clear_error(make_repo: Callable[..., GitRepo]) -> None:
    served = serve(make_repo(FILES))
    build_index(open_repository(served.repo.path), "HEAD", served.db,
                IndexOptions(shard=ShardSpec(1, 2)), None, SilentProgress())
    message = served.error("search_code", query="parse a config text")
    assert "is shard 1/2 of a sharded build" in message and "pr-context merge" in message


def test_binary_invalid_and_broken_files_in_the_overlay(served: Served) -> None:
    served.repo.write("pkg/blob.py", b"\x00\x01\x02binary\x00" * 100)
    served.repo.write("pkg/latin.py", b"def caf\xe9():\n    return 'd\xe9j\xe0'\n")
    served.repo.write("pkg/broken.py", "def half_written(:\n    return\n\ndef fine():\n    pass\n")
    (served.repo.path / "pkg" / "link.py").symlink_to(served.repo.path / "pkg" / "core.py")
    assert "no function" in served.error("find_symbol", name="half_written_never")
    found = items(served.structured("find_symbol", name="fine"))
    assert found[0]["path"] == "pkg/broken.py" and found[0]["revision"] == "WORKTREE"
    hits = items(served.structured("search_code", query="binary blob", limit=50))
    assert all(i["path"] not in ("pkg/blob.py", "pkg/link.py") for i in hits)
    assert "outside the index's path policy (binary)" in served.error(
        "read_range", path="pkg/blob.py", start_line=1, end_line=1)
    status = served.structured("index_status")
    assert {d["path"] for d in status["dirty_files"]} == {
        "pkg/blob.py", "pkg/latin.py", "pkg/broken.py", "pkg/link.py"}


def test_the_index_file_itself_is_no_change(served: Served) -> None:
    (served.repo.path / ".git" / "info" / "exclude").write_text("", encoding="utf-8")
    served.repo.write("data/dump.csv", "x," * 600_000)  # too large for the path policy
    status = served.structured("index_status")
    assert {d["path"] for d in status["dirty_files"]} == {"data/dump.csv"}
    assert status["overlaid"] == 0 and status["stale"] is False
