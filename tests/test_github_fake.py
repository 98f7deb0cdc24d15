"""The GitHub fake, driven through PyGithub over real HTTP as the action drives GitHub."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import github
import pytest

from tests.github_fake import (
    BOT_LOGIN,
    READ_ONLY_TOKEN,
    WRITE_TOKEN,
    FakeGitHub,
    Identity,
    Role,
)

REPO = "octo/demo"
PR = 7
HEAD_SHA = "b" * 40
BASE_SHA = "a" * 40


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        server.add_repo(REPO)
        server.add_pull(REPO, PR, HEAD_SHA, BASE_SHA, head_ref="feature")
        yield server


def connect(fake: FakeGitHub, token: str = WRITE_TOKEN, prefix: str = "",
            retry: github.GithubRetry | None = None, per_page: int = 30) -> github.Github:
    """A client as the action builds one, minus PyGithub's default sleeps between requests."""
    return github.Github(auth=github.Auth.Token(token), base_url=fake.url + prefix, retry=retry,
                         per_page=per_page, seconds_between_requests=0, seconds_between_writes=0)


def pull(fake: FakeGitHub, token: str = WRITE_TOKEN, prefix: str = "",
         retry: github.GithubRetry | None = None, per_page: int = 30,
         ) -> github.PullRequest.PullRequest:
    return connect(fake, token, prefix, retry, per_page).get_repo(REPO).get_pull(PR)


def test_pull_request_has_head_base_and_author(fake: FakeGitHub) -> None:
    pr = pull(fake)

    assert (pr.number, pr.draft, pr.state, pr.user.login) == (PR, False, "open", "alice")
    assert (pr.head.sha, pr.head.ref, pr.head.repo.full_name) == (HEAD_SHA, "feature", REPO)
    assert (pr.base.sha, pr.base.ref, pr.base.repo.full_name) == (BASE_SHA, "main", REPO)
    assert pr.as_issue().pull_request is not None


def test_fork_pull_request_head_lives_in_the_fork(fake: FakeGitHub) -> None:
    fake.add_pull(REPO, 8, HEAD_SHA, BASE_SHA, draft=True, fork=True, user="mallory")

    pr = connect(fake).get_repo(REPO).get_pull(8)

    assert pr.draft is True
    assert (pr.head.repo.full_name, pr.head.repo.fork) == ("mallory/demo", True)
    assert pr.base.repo.full_name == REPO


def test_created_comment_is_authored_by_the_token_identity(fake: FakeGitHub) -> None:
    comment = pull(fake).create_issue_comment("hello")

    assert comment.id == 1000
    assert (comment.user.login, comment.user.type, comment.body) == (BOT_LOGIN, "Bot", "hello")
    assert [c["body"] for c in fake.comments(REPO, PR)] == ["hello"]
    assert ("POST", f"/repos/{REPO}/issues/{PR}/comments", WRITE_TOKEN) in fake.requests


@pytest.mark.parametrize(("per_page", "pages"), [(30, 2), (10, 4), (100, 1)])
def test_comment_listing_follows_link_pagination(fake: FakeGitHub, per_page: int,
                                                 pages: int) -> None:
    for i in range(35):
        fake.add_comment(REPO, PR, f"comment {i}", "bob")

    bodies = [c.body for c in pull(fake, per_page=per_page).get_issue_comments()]

    assert bodies == [f"comment {i}" for i in range(35)]
    listed = [r for r in fake.requests if "/issues/7/comments" in r.path]
    assert len(listed) == pages


def test_link_header_names_next_and_last_pages(fake: FakeGitHub) -> None:
    for i in range(35):
        fake.add_comment(REPO, PR, f"comment {i}", "bob")
    request = urllib.request.Request(f"{fake.url}/repos/{REPO}/issues/{PR}/comments?per_page=10",
                                     headers={"Authorization": f"token {WRITE_TOKEN}"})

    with urllib.request.urlopen(request) as response:
        link, page = response.headers["Link"], json.load(response)

    assert len(page) == 10
    assert link == (f'<{fake.url}/repos/{REPO}/issues/{PR}/comments?per_page=10&page=2>; '
                    f'rel="next", <{fake.url}/repos/{REPO}/issues/{PR}/comments?per_page=10'
                    f'&page=4>; rel="last"')


def test_author_edits_and_deletes_own_comment(fake: FakeGitHub) -> None:
    comment = pull(fake).create_issue_comment("draft")

    comment.edit("final")
    assert [c["body"] for c in fake.comments(REPO, PR)] == ["final"]
    assert comment.updated_at > comment.created_at

    comment.delete()
    assert fake.comments(REPO, PR) == []


def test_editing_someone_elses_comment_is_forbidden(fake: FakeGitHub) -> None:
    comment_id = fake.add_comment(REPO, PR, "/context", "bob")
    comment = pull(fake).get_issue_comment(comment_id)

    with pytest.raises(github.GithubException) as caught:
        comment.edit("hijacked")

    assert caught.value.status == 403
    assert fake.comments(REPO, PR)[0]["body"] == "/context"


def test_reacting_twice_keeps_one_reaction(fake: FakeGitHub) -> None:
    comment_id = fake.add_comment(REPO, PR, "/context", "bob")
    comment = pull(fake).get_issue_comment(comment_id)

    first = comment.create_reaction("eyes")
    again = comment.create_reaction("eyes")
    comment.create_reaction("+1")

    assert first.id == again.id
    assert fake.reactions(comment_id) == ["eyes", "+1"]
    assert [r.content for r in comment.get_reactions()] == ["eyes", "+1"]
    assert fake.comments(REPO, PR)[0]["reactions"]["total_count"] == 2


def test_unknown_reaction_is_rejected(fake: FakeGitHub) -> None:
    comment = pull(fake).create_issue_comment("x")

    with pytest.raises(github.GithubException) as caught:
        comment.create_reaction("thumbsup")

    assert caught.value.status == 422


@pytest.mark.parametrize(("role", "permission"), [
    ("admin", "admin"), ("maintain", "write"), ("write", "write"),
    ("triage", "read"), ("read", "read"), ("none", "none"),
])
def test_collaborator_permission_reports_legacy_and_role_name(fake: FakeGitHub, role: Role,
                                                              permission: str) -> None:
    fake.set_permission(REPO, "carol", role)
    repo = connect(fake).get_repo(REPO)

    assert repo.get_collaborator_permission("carol") == permission
    assert repo.get_collaborator_role_name("carol") == role


def test_stranger_has_no_permission_and_owner_is_admin(fake: FakeGitHub) -> None:
    repo = connect(fake).get_repo(REPO)

    assert repo.get_collaborator_permission("stranger") == "none"
    assert repo.get_collaborator_permission("octo") == "admin"


def test_read_only_token_can_read_but_not_write(fake: FakeGitHub) -> None:
    pr = pull(fake, token=READ_ONLY_TOKEN)

    with pytest.raises(github.GithubException) as caught:
        pr.create_issue_comment("hello")

    assert caught.value.status == 403
    assert caught.value.data["message"] == "Resource not accessible by integration"
    assert fake.comments(REPO, PR) == []


def test_unknown_token_is_bad_credentials(fake: FakeGitHub) -> None:
    with pytest.raises(github.BadCredentialsException):
        connect(fake, token="ghp_unknown").get_repo(REPO)


def test_get_user_is_forbidden_to_installation_tokens_only(fake: FakeGitHub) -> None:
    fake.add_token("ghp_personal", Identity("dave"))

    with pytest.raises(github.GithubException) as caught:
        _ = connect(fake).get_user().login
    assert caught.value.status == 403
    assert connect(fake, token="ghp_personal").get_user().login == "dave"


def test_injected_502_fails_once_then_succeeds(fake: FakeGitHub) -> None:
    fake.fail_next("POST", r"/issues/\d+/comments$", 502)
    pr = pull(fake)

    with pytest.raises(github.GithubException) as caught:
        pr.create_issue_comment("hello")
    assert caught.value.status == 502
    assert fake.comments(REPO, PR) == []

    pr.create_issue_comment("hello")
    assert [c["body"] for c in fake.comments(REPO, PR)] == ["hello"]
    assert fake.pending_faults == 0


def test_applied_fault_performs_the_write_before_failing(fake: FakeGitHub) -> None:
    fake.fail_next("POST", r"/comments$", 502, apply=True)

    with pytest.raises(github.GithubException):
        pull(fake).create_issue_comment("hello")

    assert [c["body"] for c in fake.comments(REPO, PR)] == ["hello"]


def test_secondary_rate_limit_raises_without_retry(fake: FakeGitHub) -> None:
    fake.secondary_rate_limit("POST", r"/comments$")

    with pytest.raises(github.RateLimitExceededException) as caught:
        pull(fake).create_issue_comment("hello")

    assert caught.value.status == 403
    assert caught.value.headers is not None
    assert caught.value.headers["retry-after"] == "0"


def test_secondary_rate_limit_is_retried_by_github_retry(fake: FakeGitHub) -> None:
    fake.secondary_rate_limit("POST", r"/comments$", times=2)

    pull(fake, retry=github.GithubRetry(total=3)).create_issue_comment("hello")

    posts = [r for r in fake.requests if r.method == "POST"]
    assert len(posts) == 3
    assert len(fake.comments(REPO, PR)) == 1


def test_enterprise_prefix_is_served_and_kept_in_urls(fake: FakeGitHub) -> None:
    comment = pull(fake, prefix="/api/v3").create_issue_comment("hello")
    comment.edit("edited")

    assert comment.url.startswith(f"{fake.url}/api/v3/repos/{REPO}/issues/comments/")
    assert all(r.path.startswith("/api/v3/") for r in fake.requests)
    assert fake.comments(REPO, PR)[0]["body"] == "edited"


def test_unknown_repository_is_not_found(fake: FakeGitHub) -> None:
    with pytest.raises(github.UnknownObjectException):
        connect(fake).get_repo("octo/missing")


def test_concurrent_comments_get_distinct_ids(fake: FakeGitHub) -> None:
    pr = pull(fake)
    threads = [threading.Thread(target=pr.create_issue_comment, args=(f"c{i}",))
               for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    ids = [c["id"] for c in fake.comments(REPO, PR)]
    assert sorted(ids) == list(range(1000, 1008))


# -- pull requests by head, workflow runs, artifacts -----------------------------------------


def test_open_pulls_are_listed_by_head_owner_and_branch(fake: FakeGitHub) -> None:
    fake.add_pull(REPO, 8, "c" * 40, BASE_SHA, head_ref="feature", fork=True, user="mallory")
    fake.add_pull(REPO, 9, "d" * 40, BASE_SHA, head_ref="other", fork=True, user="mallory")
    fake.add_pull(REPO, 10, "e" * 40, BASE_SHA, head_ref="feature", fork=True, user="mallory")
    fake.close_pull(REPO, 10)
    repo = connect(fake).get_repo(REPO)

    listed = repo.get_pulls(state="open", head="mallory:feature")

    assert [(p.number, p.head.sha, p.head.repo.full_name) for p in listed] == [
        (8, "c" * 40, "mallory/demo")]
    assert [p.number for p in repo.get_pulls(state="open", head="octo:feature")] == [PR]
    assert [p.number for p in repo.get_pulls(state="closed")] == [10]
    assert repo.get_pull(10).state == "closed"


def test_a_run_and_its_artifacts_as_pygithub_reads_them(fake: FakeGitHub) -> None:
    fake.add_repo("mallory/demo", fork=True)
    run_id = fake.add_workflow_run(REPO, head_sha=HEAD_SHA, head_repo="mallory/demo")
    artifact_id = fake.add_artifact(REPO, run_id, "pr-context-job-0", b"PK zip")
    run = connect(fake).get_repo(REPO).get_workflow_run(run_id)

    assert (run.event, run.head_sha, run.head_branch) == ("pull_request", HEAD_SHA, "feature")
    assert run.head_repository.full_name == "mallory/demo"
    artifacts = list(run.get_artifacts())
    assert [(a.id, a.name, a.size_in_bytes, a.expired) for a in artifacts] == [
        (artifact_id, "pr-context-job-0", 6, False)]
    assert artifacts[0].workflow_run.head_sha == HEAD_SHA


def test_workflow_run_payload_lists_pull_requests_only_for_same_repository_heads(
        fake: FakeGitHub) -> None:
    same = fake.add_workflow_run(REPO, head_sha=HEAD_SHA)
    fake.add_repo("mallory/demo", fork=True)
    forked = fake.add_workflow_run(REPO, head_sha=HEAD_SHA, head_repo="mallory/demo")

    payload = fake.workflow_run_payload(REPO, same)
    assert payload["action"] == "completed"
    assert [p["number"] for p in payload["workflow_run"]["pull_requests"]] == [PR]
    run = fake.workflow_run_payload(REPO, forked)["workflow_run"]
    assert run["pull_requests"] == []
    assert run["head_repository"]["full_name"] == "mallory/demo"
    assert run["repository"]["full_name"] == REPO and run["event"] == "pull_request"


def test_artifact_download_redirects_to_storage_that_refuses_a_token(fake: FakeGitHub) -> None:
    run_id = fake.add_workflow_run(REPO, head_sha=HEAD_SHA)
    artifact_id = fake.add_artifact(REPO, run_id, "pr-context-job-0", b"zip bytes")
    url = f"{fake.url}/repos/{REPO}/actions/artifacts/{artifact_id}/zip"

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as redirected:
        opener.open(urllib.request.Request(url, headers={"Authorization": f"token {WRITE_TOKEN}"}))
    assert redirected.value.code == 302
    location = redirected.value.headers["Location"]
    with urllib.request.urlopen(location) as stored:
        assert stored.read() == b"zip bytes"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(
            location, headers={"Authorization": f"token {WRITE_TOKEN}"}))
    assert refused.value.code == 400
    assert [r.authorization is None for r in fake.storage_requests] == [True, False]


def test_an_expired_artifact_is_gone(fake: FakeGitHub) -> None:
    run_id = fake.add_workflow_run(REPO, head_sha=HEAD_SHA)
    artifact_id = fake.add_artifact(REPO, run_id, "pr-context-job-0", b"x", expired=True)
    request = urllib.request.Request(
        f"{fake.url}/repos/{REPO}/actions/artifacts/{artifact_id}/zip",
        headers={"Authorization": f"token {WRITE_TOKEN}"})
    with pytest.raises(urllib.error.HTTPError) as gone:
        urllib.request.urlopen(request)
    assert gone.value.code == 410
