"""`pr-context action` end to end: real event payloads, a real git repository, and a local
HTTP server standing in for the GitHub REST API, reached through PyGithub via
GITHUB_API_URL. No model: the action runs with embeddings off (PR_CONTEXT_EMBEDDINGS)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from pr_context.action.github import RetryPolicy
from pr_context.cli import cli
from pr_context.render import COMMENT_MARKER, REPLY_MARKER
from tests.conftest import GitRepo
from tests.github_fake import READ_ONLY_TOKEN, WRITE_TOKEN, FakeGitHub, UserType

REPO = "octo/shop"
NUMBER = 7

SESSION = (
    "def create_session(user, token, retries=3):\n"
    "    \"\"\"Open a session for ``user``.\"\"\"\n"
    "    return {'user': user, 'token': token, 'retries': retries}\n"
)
BASE_FILES = {
    "shop/__init__.py": "",
    "shop/session.py": SESSION,
    "shop/api.py": (
        "from shop.session import create_session\n\n\n"
        "def login(user):\n"
        "    return create_session(user, 't', retries=5)\n"
    ),
    "tests/test_session.py": (
        "from shop.session import create_session\n\n\n"
        "def test_create_session():\n"
        "    assert create_session('u', 't')['retries'] == 3\n"
    ),
    "docs/sessions.md": (
        "# Sessions\n\nCall `create_session(user, token, retries=3)`; `retries` sets how "
        "often it tries.\n"
    ),
}


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_repo(REPO)
        fake.set_permission(REPO, "maintainer", "write")
        fake.set_permission(REPO, "reader", "read")
        yield fake


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pr_context.action.run.API_RETRY",
                        RetryPolicy(attempts=3, base_delay_s=0.01, max_delay_s=5))
    monkeypatch.setattr("pr_context.action.run.API_THROTTLE", False)


class Workflow:
    """One job's environment: workspace, runner temp, output and summary files."""

    def __init__(self, repo: GitRepo, tmp: Path, github: FakeGitHub) -> None:
        self.repo, self.tmp, self.github = repo, tmp, github
        self.workspace = repo.path
        self.runner_temp = tmp / "runner"
        self.runner_temp.mkdir(exist_ok=True)
        self.output = tmp / "github_output"
        self.summary = tmp / "step_summary"
        self.token = WRITE_TOKEN

    @property
    def out(self) -> Path:
        return self.runner_temp / "pr-context" / "out"

    def run(self, event_name: str, payload: dict[str, Any], *args: str,
            **env: str) -> Result:
        self.output.write_text("")
        event_path = self.tmp / f"{event_name}.json"
        event_path.write_text(json.dumps(payload))
        environ = {
            "GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": self.github.url,
            "GITHUB_SERVER_URL": "https://github.com", "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_OUTPUT": str(self.output), "GITHUB_STEP_SUMMARY": str(self.summary),
            "RUNNER_TEMP": str(self.runner_temp), "RUNNER_OS": "Linux",
            "GITHUB_TOKEN": self.token, "PR_CONTEXT_EMBEDDINGS": "false", **env}
        result = CliRunner().invoke(cli, ["action", "--quiet", *args], env=environ)
        self.assert_no_token_leaked(result)
        return result

    def comment(self, body: str, login: str = "maintainer",
                user_type: UserType = "User") -> tuple[int, Result]:
        """Post ``body`` on the PR as ``login`` and run the action on that comment event."""
        cid = self.github.add_comment(REPO, NUMBER, body, login, user_type)
        return cid, self.run("issue_comment", comment_payload(body, login, cid, user_type))

    def assert_no_token_leaked(self, result: Result) -> None:
        """The token appears in no log line and no file the run wrote."""
        assert self.token not in result.output
        written = [self.output, self.summary,
                   *(self.out.glob("*.json") if self.out.is_dir() else []),
                   *(self.out.glob("*.md") if self.out.is_dir() else [])]
        for path in written:
            if path.is_file():
                assert self.token not in path.read_text(), path

    def outputs(self) -> dict[str, str]:
        """GITHUB_OUTPUT parsed: ``name<<DELIM`` blocks and ``name=value`` lines."""
        values: dict[str, str] = {}
        lines = iter(self.output.read_text().splitlines())
        for line in lines:
            if "<<" in line:
                name, delimiter = line.split("<<", 1)
                body = []
                for item in lines:
                    if item == delimiter:
                        break
                    body.append(item)
                values[name] = "\n".join(body)
            elif "=" in line:
                name, value = line.split("=", 1)
                values[name] = value
        return values

    def report(self) -> dict[str, Any]:
        report: dict[str, Any] = json.loads((self.out / "action-report.json").read_text())
        return report


@pytest.fixture
def workflow(make_repo: Callable[..., GitRepo], tmp_path: Path,
             github: FakeGitHub) -> Workflow:
    repo = make_repo(BASE_FILES)
    return Workflow(repo, tmp_path, github)


def open_pull(flow: Workflow, session: str, *, fork: bool = False, draft: bool = False,
              title: str = "Drop retries", user: str = "alice") -> tuple[str, str]:
    """Commit ``session`` on a branch; register the PR; return (base, head)."""
    base = flow.repo.git("rev-parse", "HEAD").strip()
    flow.repo.git("checkout", "-q", "-B", "feature")
    flow.repo.write("shop/session.py", session)
    head = flow.repo.commit("change the session")
    flow.repo.git("checkout", "-q", "main")
    flow.github.add_pull(REPO, NUMBER, head_sha=head, base_sha=base, fork=fork, draft=draft,
                         title=title, user=user)
    return base, head


def pull_payload(base: str, head: str, action: str = "opened", *, fork: bool = False,
                 draft: bool = False, title: str = "Drop retries",
                 body: str = "") -> dict[str, Any]:
    head_repo = "mallory/shop" if fork else REPO
    return {
        "action": action, "number": NUMBER,
        "pull_request": {
            "number": NUMBER, "draft": draft, "title": title, "body": body,
            "user": {"login": "alice", "type": "User"},
            "head": {"sha": head, "ref": "feature", "repo": {"full_name": head_repo}},
            "base": {"sha": base, "ref": "main", "repo": {"full_name": REPO}}},
        "repository": {"full_name": REPO, "default_branch": "main"},
        "sender": {"login": "alice", "type": "User"}}


def comment_payload(body: str, login: str, comment_id: int,
                    user_type: str = "User") -> dict[str, Any]:
    return {
        "action": "created",
        "issue": {"number": NUMBER, "pull_request": {"url": "x"}, "title": "Drop retries"},
        "comment": {"id": comment_id, "body": body,
                    "user": {"login": login, "type": user_type}},
        "repository": {"full_name": REPO, "default_branch": "main"},
        "sender": {"login": login, "type": user_type}}


NEW_SESSION = (
    "def create_session(user, token):\n"
    "    \"\"\"Open a session for ``user``.\"\"\"\n"
    "    return {'user': user, 'token': token}\n"
)


# -- pull_request ---------------------------------------------------------------------------


def test_first_run_posts_one_comment_and_a_new_head_updates_it(workflow: Workflow) -> None:
    base, head = open_pull(workflow, NEW_SESSION)

    first = workflow.run("pull_request", pull_payload(base, head))

    assert first.exit_code == 0, first.output
    comments = workflow.github.comments(REPO, NUMBER)
    assert len(comments) == 1
    body = comments[0]["body"]
    assert body.startswith(COMMENT_MARKER)
    assert "create_session" in body and head[:12] in body
    outputs = workflow.outputs()
    assert outputs["changed-symbols"] == "1"
    assert outputs["comment-url"] == comments[0]["html_url"]
    # the one test calls the changed function: the whole (one-test) suite runs
    assert json.loads(outputs["test-selection"]) == ["tests"]
    assert outputs["run-everything"] == "true"
    evidence = json.loads(Path(outputs["evidence-path"]).read_text())
    assert evidence["repository"] == REPO and evidence["head"] == head
    assert "shop.session" in workflow.summary.read_text()

    workflow.repo.git("checkout", "-q", "feature")
    workflow.repo.write("shop/session.py", NEW_SESSION.replace("token}", "token, 'v': 2}"))
    new_head = workflow.repo.commit("second push")
    workflow.repo.git("checkout", "-q", "main")
    workflow.github.push_head(REPO, NUMBER, new_head)

    second = workflow.run("pull_request", pull_payload(base, new_head, "synchronize"))

    assert second.exit_code == 0, second.output
    after = workflow.github.comments(REPO, NUMBER)
    assert len(after) == 1 and after[0]["id"] == comments[0]["id"]
    assert new_head[:12] in after[0]["body"] and head[:12] not in after[0]["body"]
    # a re-run of the same event edits the same comment again: still one
    assert workflow.run("pull_request", pull_payload(base, new_head, "synchronize")
                        ).exit_code == 0
    assert len(workflow.github.comments(REPO, NUMBER)) == 1


def test_someone_elses_marked_comment_is_not_taken_over(workflow: Workflow) -> None:
    base, head = open_pull(workflow, NEW_SESSION)
    workflow.github.add_comment(REPO, NUMBER, COMMENT_MARKER + "\nfake results", "mallory")

    result = workflow.run("pull_request", pull_payload(base, head))

    assert result.exit_code == 0, result.output
    bodies = [c["body"] for c in workflow.github.comments(REPO, NUMBER)]
    assert bodies[0] == COMMENT_MARKER + "\nfake results"
    assert len(bodies) == 2 and "create_session" in bodies[1]


def test_fork_pull_request_with_read_only_token_still_writes_everything(
        workflow: Workflow) -> None:
    base, head = open_pull(workflow, NEW_SESSION, fork=True)
    workflow.token = READ_ONLY_TOKEN

    result = workflow.run("pull_request", pull_payload(base, head, fork=True))

    assert result.exit_code == 0, result.output
    assert workflow.github.comments(REPO, NUMBER) == []
    assert "::warning::This pull request comes from a fork" in result.output
    outputs = workflow.outputs()
    assert outputs["changed-symbols"] == "1" and outputs["comment-url"] == ""
    for name in ("evidence.json", "comment.md", "summary.md", "action-report.json"):
        assert (workflow.out / name).is_file(), name
    assert "shop.session" in workflow.summary.read_text()


def test_a_token_without_comment_permission_is_explained(workflow: Workflow) -> None:
    base, head = open_pull(workflow, NEW_SESSION)
    workflow.token = READ_ONLY_TOKEN

    result = workflow.run("pull_request", pull_payload(base, head))

    assert result.exit_code == 0, result.output
    assert "grant `pull-requests: write`" in result.output
    assert workflow.github.comments(REPO, NUMBER) == []


def test_comment_off_and_closed_events_post_nothing(workflow: Workflow) -> None:
    base, head = open_pull(workflow, NEW_SESSION)

    result = workflow.run("pull_request", pull_payload(base, head), "--comment", "off")
    assert result.exit_code == 0, result.output
    assert workflow.outputs()["changed-symbols"] == "1"

    result = workflow.run("pull_request", pull_payload(base, head, "closed"))
    assert result.exit_code == 0, result.output
    assert workflow.report()["outcome"] == "skipped: nothing to review on 'closed'"
    assert workflow.github.comments(REPO, NUMBER) == []
    assert not any(r.method != "GET" for r in workflow.github.requests)


def test_secondary_rate_limit_then_success(workflow: Workflow) -> None:
    base, head = open_pull(workflow, NEW_SESSION)
    workflow.github.secondary_rate_limit("POST", r"/issues/\d+/comments$", times=2)

    result = workflow.run("pull_request", pull_payload(base, head))

    assert result.exit_code == 0, result.output
    assert len(workflow.github.comments(REPO, NUMBER)) == 1
    assert workflow.github.pending_faults == 0


def test_server_errors_past_the_retries_fail_clearly_and_keep_the_files(
        workflow: Workflow) -> None:
    base, head = open_pull(workflow, NEW_SESSION)
    workflow.github.fail_next("POST", r"/issues/\d+/comments$", 502, times=10)

    result = workflow.run("pull_request", pull_payload(base, head))

    assert result.exit_code == 1
    assert "::error::cannot comment on #7: GitHub answered 502" in result.output
    assert "after 3 attempts" in result.output
    assert workflow.github.comments(REPO, NUMBER) == []
    assert (workflow.out / "evidence.json").is_file()
    assert workflow.report()["exit_code"] == 1
    assert WRITE_TOKEN not in result.output


def test_hostile_pull_request_content_is_rendered_inert(workflow: Workflow) -> None:
    workflow.repo.write(
        "docs/evil.md",
        "# <img src=x onerror=alert(1)> @octo/admins ![x](http://x/p.png) ``` \n\n"
        "See `create_session(user, token, retries=3)` <script>alert(1)</script> "
        "@everyone\n")
    workflow.repo.commit("<b>bold</b> @octo/admins ![x](http://x)")
    base, head = open_pull(workflow, NEW_SESSION)

    result = workflow.run("pull_request", pull_payload(
        base, head, title="<script>x</script> @octo/admins", body="![x](http://x)"))

    assert result.exit_code == 0, result.output
    body = workflow.github.comments(REPO, NUMBER)[0]["body"]
    assert "docs/evil.md" in body
    assert "<img" not in body and "<script" not in body
    assert "@octo/admins" not in body and "@everyone" not in body
    assert "![" not in body
    assert "```" not in body


def test_draft_is_skipped_and_no_comment_when_nothing_changed(workflow: Workflow) -> None:
    base, head = open_pull(workflow, NEW_SESSION, draft=True)
    result = workflow.run("pull_request", pull_payload(base, head, draft=True))
    assert result.exit_code == 0, result.output
    assert workflow.github.comments(REPO, NUMBER) == []
    assert workflow.report()["outcome"] == "skipped: draft"

    workflow.repo.git("checkout", "-q", "-B", "docs-only", base)
    workflow.repo.write("docs/sessions.md", "# Sessions\n\nRewritten.\n")
    docs_head = workflow.repo.commit("docs only")
    workflow.repo.git("checkout", "-q", "main")
    workflow.github.push_head(REPO, NUMBER, docs_head)
    result = workflow.run("pull_request", pull_payload(base, docs_head))
    assert result.exit_code == 0, result.output
    assert workflow.github.comments(REPO, NUMBER) == []
    assert "no changed symbols" in result.output


def test_a_head_the_pr_moved_past_is_not_posted(workflow: Workflow) -> None:
    base, head = open_pull(workflow, NEW_SESSION)
    workflow.github.push_head(REPO, NUMBER, "f" * 40)

    result = workflow.run("pull_request", pull_payload(base, head))

    assert result.exit_code == 0, result.output
    assert workflow.github.comments(REPO, NUMBER) == []
    assert "moved on to ffffffffffff" in result.output


def test_fail_on_callers_not_updated(workflow: Workflow) -> None:
    base, head = open_pull(workflow, NEW_SESSION)

    result = workflow.run("pull_request", pull_payload(base, head),
                          PR_CONTEXT_FAIL_ON="callers-not-updated, stale-docs")

    assert result.exit_code == 1
    assert "fail-on callers-not-updated: 1 caller(s)" in result.output
    assert len(workflow.github.comments(REPO, NUMBER)) == 1  # posted before failing


def test_shallow_checkout_fetches_the_missing_base(workflow: Workflow, tmp_path: Path) -> None:
    base, head = open_pull(workflow, NEW_SESSION)
    workflow.repo.git("config", "uploadpack.allowAnySHA1InWant", "true")
    clone = tmp_path / "shallow"
    workflow.repo.git("clone", "-q", "--depth", "1", "--branch", "feature",
                      f"file://{workflow.repo.path}", str(clone))
    workflow.workspace = clone

    result = workflow.run("pull_request", pull_payload(base, head))

    assert result.exit_code == 0, result.output
    assert "create_session" in workflow.github.comments(REPO, NUMBER)[0]["body"]


def test_unfetchable_base_is_explained(workflow: Workflow) -> None:
    _, head = open_pull(workflow, NEW_SESSION)

    result = workflow.run("pull_request", pull_payload("e" * 40, head))

    assert result.exit_code == 2
    assert "commit eeeeeeeeeeee is not in the checkout" in result.output
    assert "fetch-depth: 0" in result.output


# -- issue_comment --------------------------------------------------------------------------


def test_search_from_a_collaborator_gets_a_reaction_and_a_reply(workflow: Workflow) -> None:
    _, head = open_pull(workflow, NEW_SESSION)
    cid, result = workflow.comment("/pr-context search create session")

    assert result.exit_code == 0, result.output
    assert workflow.github.reactions(cid) == ["eyes"]
    replies = workflow.github.comments(REPO, NUMBER)[1:]
    assert len(replies) == 1 and replies[0]["body"].startswith(REPLY_MARKER)
    assert "shop/session.py" in replies[0]["body"] and head[:12] in replies[0]["body"]


@pytest.mark.parametrize(("login", "user_type"), [("reader", "User"), ("stranger", "User")])
def test_commands_from_users_without_write_access_are_refused(
        workflow: Workflow, login: str, user_type: UserType) -> None:
    open_pull(workflow, NEW_SESSION)
    cid, result = workflow.comment("/pr-context refresh", login, user_type)

    assert result.exit_code == 0, result.output
    assert workflow.github.reactions(cid) == ["-1"]
    replies = workflow.github.comments(REPO, NUMBER)[1:]
    assert len(replies) == 1 and "write, maintain or admin" in replies[0]["body"]
    assert not (workflow.out / "evidence.json").exists()  # nothing was reviewed
    assert not any("/pulls/" in r.path for r in workflow.github.requests)


def test_commands_from_bots_are_ignored_without_a_trace(workflow: Workflow) -> None:
    open_pull(workflow, NEW_SESSION)
    cid, result = workflow.comment("/pr-context search x", "renovate[bot]", "Bot")

    assert result.exit_code == 0, result.output
    assert workflow.github.reactions(cid) == []
    assert len(workflow.github.comments(REPO, NUMBER)) == 1
    assert not any(r.method != "GET" for r in workflow.github.requests)


def test_refresh_updates_the_sticky_comment(workflow: Workflow) -> None:
    base, head = open_pull(workflow, NEW_SESSION)
    assert workflow.run("pull_request", pull_payload(base, head)).exit_code == 0
    sticky = workflow.github.comments(REPO, NUMBER)[0]
    cid, result = workflow.comment("/pr-context refresh")

    assert result.exit_code == 0, result.output
    comments = workflow.github.comments(REPO, NUMBER)
    assert [c["id"] for c in comments] == [sticky["id"], cid]
    assert workflow.github.reactions(cid) == ["eyes"]


def test_explain_lists_callers_tests_and_docs_in_full(workflow: Workflow) -> None:
    open_pull(workflow, NEW_SESSION)
    _, result = workflow.comment("/pr-context explain login")

    assert result.exit_code == 0, result.output
    reply = workflow.github.comments(REPO, NUMBER)[-1]["body"]
    assert "shop.api.login" in reply and "unchanged" in reply

    workflow.comment("/pr-context explain create_session")
    reply = workflow.github.comments(REPO, NUMBER)[-1]["body"]
    assert "shop/api.py:5" in reply and "tests/test_session.py" in reply
    assert "docs/sessions.md" in reply


def test_unknown_commands_get_the_help(workflow: Workflow) -> None:
    open_pull(workflow, NEW_SESSION)
    _, result = workflow.comment("/pr-context frobnicate <b>")

    assert result.exit_code == 0, result.output
    reply = workflow.github.comments(REPO, NUMBER)[-1]["body"]
    assert "did not understand" in reply and "/pr-context explain" in reply
    assert "<b>" not in reply


def test_explain_of_an_unknown_symbol_and_an_empty_search_say_so(workflow: Workflow) -> None:
    open_pull(workflow, NEW_SESSION)
    for command, expected in (("/pr-context explain no_such_thing",
                               "no function, method or class named"),
                              ("/pr-context search quantum teleportation flux",
                               "Nothing relevant found")):
        _, result = workflow.comment(command)
        assert result.exit_code == 0, result.output
        assert expected in workflow.github.comments(REPO, NUMBER)[-1]["body"]


def test_commands_on_plain_issues_are_ignored(workflow: Workflow) -> None:
    workflow.github.add_issue(REPO, 9)
    payload = comment_payload("/pr-context help", "maintainer", 1)
    payload["issue"] = {"number": 9, "title": "A bug"}

    result = workflow.run("issue_comment", payload)

    assert result.exit_code == 0, result.output
    assert workflow.github.requests == []


def test_plain_comments_and_the_bots_own_replies_are_ignored(workflow: Workflow) -> None:
    open_pull(workflow, NEW_SESSION)
    for body, login in (("looks good", "maintainer"),
                        (REPLY_MARKER + "\n/pr-context search x", "maintainer")):
        cid, result = workflow.comment(body, login)
        assert result.exit_code == 0, result.output
        assert workflow.github.reactions(cid) == []


# -- push, prepare, misuse ------------------------------------------------------------------


def test_push_to_the_default_branch_builds_the_index(workflow: Workflow) -> None:
    sha = workflow.repo.git("rev-parse", "HEAD").strip()
    payload = {"ref": "refs/heads/main", "after": sha,
               "repository": {"full_name": REPO, "default_branch": "main"}}

    plan = workflow.run("push", payload, "--prepare")
    assert plan.exit_code == 0, plan.output
    outputs = workflow.outputs()
    assert outputs["save-cache"] == "true" and outputs["run"] == "true"
    assert outputs["cache-key"] == outputs["cache-restore-prefix"] + sha
    assert outputs["cache-key"].startswith("pr-context-Linux-")

    result = workflow.run("push", payload)
    assert result.exit_code == 0, result.output
    assert Path(outputs["index-path"]).is_file()
    assert f"Index built at `{sha[:12]}`" in workflow.summary.read_text()


def test_prepare_for_a_pull_request_never_saves_the_cache(workflow: Workflow) -> None:
    base, head = open_pull(workflow, NEW_SESSION, fork=True)
    assert workflow.run("pull_request", pull_payload(base, head, fork=True),
                        "--prepare").exit_code == 0
    outputs = workflow.outputs()
    assert outputs["save-cache"] == "false" and outputs["cache-key"].endswith(base)


def test_missing_environment_and_bad_inputs_exit_2(workflow: Workflow) -> None:
    result = CliRunner().invoke(cli, ["action"], env={"GITHUB_EVENT_NAME": ""})
    assert result.exit_code == 2 and "GITHUB_EVENT_NAME is not set" in result.output
    result = workflow.run("pull_request", {"action": "opened"})
    assert result.exit_code == 2 and "payload" in result.output
    result = workflow.run("schedule", {})
    assert result.exit_code == 2 and "not schedule" in result.output
    base, head = open_pull(workflow, NEW_SESSION)
    result = workflow.run("pull_request", pull_payload(base, head),
                          PR_CONTEXT_FAIL_ON="typos")
    assert result.exit_code == 2 and "unknown fail-on condition 'typos'" in result.output


# -- a sharded build's merged index ---------------------------------------------------------


def sharded_index(flow: Workflow, count: int, target: Path, *, merge: bool = True) -> None:
    """The matrix workflow of docs/action.md: `index --shard` per shard, then `merge`
    into ``target`` (a lone shard instead, without ``merge``)."""
    shards = [str(flow.tmp / f"shard-{k}.duckdb") for k in range(1, count + 1)]
    for number, shard in enumerate(shards, 1):
        done = CliRunner().invoke(cli, ["index", "--repo", str(flow.workspace), "--quiet",
                                        "--no-embeddings", "--db", shard,
                                        "--shard", f"{number}/{count}"])
        assert done.exit_code == 0, done.output
    target.parent.mkdir(parents=True, exist_ok=True)
    if not merge:
        Path(shards[0]).replace(target)
        return
    done = CliRunner().invoke(cli, ["merge", "--repo", str(flow.workspace), "--quiet",
                                    "--db", str(target), *shards])
    assert done.exit_code == 0, done.output


def test_a_merged_index_in_the_cache_is_used_like_any_other(workflow: Workflow) -> None:
    sha = workflow.repo.git("rev-parse", "HEAD").strip()
    push = {"ref": "refs/heads/main", "after": sha,
            "repository": {"full_name": REPO, "default_branch": "main"}}
    # The merge job: the action's plan for the push (no token needed), then the merge.
    assert workflow.run("push", push, "--prepare", GITHUB_TOKEN="").exit_code == 0
    saved = workflow.outputs()
    assert saved["save-cache"] == "true"
    sharded_index(workflow, 3, Path(saved["index-path"]))
    single = json.loads(CliRunner().invoke(cli, [
        "index", "--repo", str(workflow.workspace), "--no-embeddings", "--json",
        "--db", str(workflow.tmp / "single.duckdb")]).stdout)["digest"]
    base, head = open_pull(workflow, NEW_SESSION)
    assert base == sha
    assert workflow.run("pull_request", pull_payload(base, head), "--prepare").exit_code == 0
    restored = workflow.outputs()
    assert (restored["cache-key"], restored["index-path"]) == (saved["cache-key"],
                                                                saved["index-path"])

    result = workflow.run("pull_request", pull_payload(base, head))

    assert result.exit_code == 0, result.output
    assert "rebuilding" not in result.output and "moved aside" not in result.output
    assert "create_session" in workflow.github.comments(REPO, NUMBER)[0]["body"]
    after = json.loads(CliRunner().invoke(cli, [
        "index", "--repo", str(workflow.workspace), "--no-embeddings", "--json",
        "--db", saved["index-path"], "--rev", base]).stdout)
    assert after["digest"] == single and after["changes"]["parsed"] == 0


def test_a_lone_shard_in_the_cache_is_refused_with_what_to_do(workflow: Workflow) -> None:
    base, head = open_pull(workflow, NEW_SESSION)
    sharded_index(workflow, 2, workflow.runner_temp / "pr-context" / "index.duckdb",
                  merge=False)

    result = workflow.run("pull_request", pull_payload(base, head))

    assert result.exit_code == 2, result.output
    assert "shard 1/2 of a sharded build" in result.output
    assert "pr-context merge" in result.output


# -- coverage evidence ----------------------------------------------------------------------


def untracked(flow: Workflow, pattern: str) -> None:
    """Restored files sit in the workspace without being part of any commit."""
    with (flow.workspace / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write(pattern + "\n")


def cached_coverage(flow: Workflow) -> Path:
    """What the default branch's CI saved and the cache step restored into the workspace:
    a real pytest-cov run with per-test contexts, and the commit it ran at."""
    target = flow.workspace / ".pr-context-coverage"
    target.mkdir()
    untracked(flow, ".pr-context-coverage/")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--cov=shop",
         "--cov-context=test", "--cov-report=", "tests"],
        cwd=flow.workspace, capture_output=True, text=True, check=False,
        env={**os.environ, "COVERAGE_FILE": str(target / "coverage.db")})
    assert done.returncode == 0, done.stdout + done.stderr
    return target / "coverage.db"


def test_a_cached_coverage_file_names_the_tests_that_ran_the_change(
        workflow: Workflow) -> None:
    cached_coverage(workflow)
    base, head = open_pull(workflow, NEW_SESSION)

    result = workflow.run("pull_request", pull_payload(base, head),
                          PR_CONTEXT_COVERAGE_FILE=".pr-context-coverage/coverage.db",
                          PR_CONTEXT_COVERAGE_REVISION=base)

    assert result.exit_code == 0, result.output
    evidence = json.loads(Path(workflow.outputs()["evidence-path"]).read_text())
    [changed] = evidence["changed_symbols"]
    assert changed["coverage"]["status"] == "executed"
    assert changed["coverage"]["tests"] == ["tests/test_session.py::test_create_session"]
    assert changed["tests"][0]["signals"]["coverage"] == 1.0
    assert evidence["coverage"]["revision"] == base
    assert not [a for a in workflow.report()["annotations"] if a["level"] == "warning"]


@pytest.mark.parametrize(("setup", "level", "words"), [
    pytest.param("missing", "notice", "is not there", id="cache-missed"),
    pytest.param("corrupt", "warning", "not a coverage.py data file", id="corrupt"),
    pytest.param("stale", "warning", "does not fit", id="another-revision"),
])
def test_unusable_coverage_is_reported_and_the_review_goes_on(
        workflow: Workflow, setup: str, level: str, words: str) -> None:
    if setup == "corrupt":
        untracked(workflow, "broken.db")
        (workflow.workspace / "broken.db").write_bytes(b"not sqlite at all")
    elif setup == "stale":
        cached_coverage(workflow)
        # the base moves every line down: the data fits its own commit, not this one
        workflow.repo.write("shop/session.py", "# sessions\n\n\n" + SESSION)
        workflow.repo.commit("a header")
    path = {"missing": "nothing/here.db", "corrupt": "broken.db"}.get(
        setup, ".pr-context-coverage/coverage.db")
    base, head = open_pull(workflow, "# sessions\n\n\n" + NEW_SESSION if setup == "stale"
                           else NEW_SESSION)

    result = workflow.run("pull_request", pull_payload(base, head),
                          PR_CONTEXT_COVERAGE_FILE=path)

    assert result.exit_code == 0, result.output
    notes = [a["message"] for a in workflow.report()["annotations"] if a["level"] == level]
    assert any(words in n and "coverage" in n for n in notes), notes
    evidence = json.loads(Path(workflow.outputs()["evidence-path"]).read_text())
    assert evidence["coverage"] is None
    assert evidence["changed_symbols"][0]["coverage"] is None
