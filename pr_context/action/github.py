"""The GitHub REST API through PyGithub: the sticky comment, replies, reactions, permissions,
and for the publisher the pull requests of a head branch and a workflow run's artifacts.

Only this module talks to GitHub. Every call goes through ``GitHubClient._call``: server
errors, dropped connections and rate limits are retried with backoff (honouring
``Retry-After``), then raised as ``GitHubApiError``; a write the token may not make
(a fork pull request's read-only token) raises ``ReadOnlyTokenError`` at once. The token
is never part of a message. Bodies are posted whole, in one request, so a failure
leaves the previous comment as it was, never half of a new one.

An artifact's zip is downloaded with ``requests``, as GitHub serves it: the API answers
302 with a short-lived storage URL, which is fetched without the token (it is signed,
and the token must not reach another host). The download is read into memory and
stopped at a size cap; nothing is written to disk.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from typing import Any, TypeVar

import requests
from github import Auth, Github, GithubException, RateLimitExceededException

from pr_context.errors import ArtifactError, GitHubApiError, ReadOnlyTokenError

__all__ = [
    "DEFAULT_BOT_LOGIN",
    "WRITE_PERMISSIONS",
    "ArtifactInfo",
    "GitHubClient",
    "PostedComment",
    "PullRequestHead",
    "PullRequestInfo",
    "RetryPolicy",
    "RunInfo",
]

# GITHUB_TOKEN acts as this app; GET /user is refused to it, so it is the fallback login.
DEFAULT_BOT_LOGIN = "github-actions[bot]"
# The legacy `permission` field folds maintain into write and triage into read.
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})
_READ_ONLY_MESSAGE = "resource not accessible by integration"
_SECONDARY_LIMIT_WAIT_S = 60.0
MAX_LISTED = 100  # pull requests of one head branch, artifacts of one run: more is abuse
DOWNLOAD_TIMEOUT_S = 60.0
_DOWNLOAD_CHUNK_BYTES = 64 * 1024
_REDIRECTS = frozenset({301, 302, 303, 307, 308})

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    base_delay_s: float = 2.0  # doubled after each failed attempt
    max_delay_s: float = 60.0  # a longer wait (Retry-After, rate-limit reset) fails instead


@dataclass(frozen=True)
class PullRequestInfo:
    number: int
    base_sha: str
    head_sha: str
    base_ref: str
    draft: bool
    state: str
    fork: bool


@dataclass(frozen=True)
class PullRequestHead:
    """An open pull request as the API lists it: where its head and base live."""

    number: int
    head_sha: str
    head_repository: str | None  # None: the head repository was deleted
    base_repository: str


@dataclass(frozen=True)
class RunInfo:
    """A workflow run as the API describes it."""

    id: int
    event: str
    head_sha: str
    head_repository: str | None


@dataclass(frozen=True)
class ArtifactInfo:
    id: int
    name: str
    size_in_bytes: int
    expired: bool
    head_sha: str | None  # of the run that uploaded it


@dataclass(frozen=True)
class PostedComment:
    id: int
    url: str  # html_url, for people
    created: bool  # False: an existing comment was updated


class GitHubClient:
    """One repository's API, with retries; ``sleep`` is injectable for tests."""

    def __init__(self, token: str, api_url: str, repository: str,
                 retry: RetryPolicy | None = None,
                 sleep: Callable[[float], None] = time.sleep, throttle: bool = True) -> None:
        # PyGithub's own pauses (a second between writes) are what GitHub asks of
        # integrations to stay clear of secondary rate limits; tests turn them off.
        self._github = Github(
            auth=Auth.Token(token), base_url=api_url.rstrip("/"), retry=None, lazy=True,
            per_page=100, seconds_between_requests=0.25 if throttle else None,
            seconds_between_writes=1.0 if throttle else None)
        self._repo = self._github.get_repo(repository)
        self._api_url = api_url.rstrip("/")
        self._repository = repository
        self._token = token
        self._retry = retry or RetryPolicy()
        self._sleep = sleep
        self._bot_login: str | None = None

    # -- reads ------------------------------------------------------------------------------

    def bot_login(self) -> str:
        """The login comments made with this token carry."""
        if self._bot_login is None:
            try:
                self._bot_login = self._call("read the token's user",
                                             lambda: self._github.get_user().login)
            except GitHubApiError:  # an Actions or app token may not read /user
                self._bot_login = DEFAULT_BOT_LOGIN
        return self._bot_login

    def pull(self, number: int) -> PullRequestInfo:
        def read() -> PullRequestInfo:
            pull = self._repo.get_pull(number)
            head_repo = pull.head.repo.full_name if pull.head.repo is not None else None
            return PullRequestInfo(
                number=number, base_sha=pull.base.sha, head_sha=pull.head.sha,
                base_ref=pull.base.ref, draft=bool(pull.draft), state=pull.state,
                fork=head_repo != pull.base.repo.full_name)
        return self._call(f"read pull request #{number}", read)

    def permission(self, login: str) -> str:
        """``admin``, ``write``, ``read`` or ``none`` (an unknown user has none)."""
        try:
            return self._call(f"read the permission of {login}",
                              lambda: self._repo.get_collaborator_permission(login))
        except GitHubApiError as exc:
            if getattr(exc.__cause__, "status", None) == 404:
                return "none"
            raise

    def find_sticky(self, number: int, marker: str) -> Any | None:
        """The bot's own comment on the PR that starts with ``marker``, oldest first."""
        bot = self.bot_login()

        def find() -> Any | None:
            for comment in self._repo.get_issue(number).get_comments():
                body = comment.body or ""
                if body.startswith(marker) and comment.user is not None \
                        and comment.user.login == bot:
                    return comment
            return None
        return self._call(f"list the comments of #{number}", find)

    def open_pulls_from(self, owner: str, branch: str) -> list[PullRequestHead]:
        """Open pull requests whose head is ``owner:branch`` (the API's own filter)."""
        def read() -> list[PullRequestHead]:
            pulls = self._repo.get_pulls(state="open", head=f"{owner}:{branch}")
            return [_pull_head(pull) for pull in islice(pulls, MAX_LISTED)]
        return self._call(f"list the open pull requests from {owner}:{branch}", read)

    def workflow_run(self, run_id: int) -> RunInfo:
        def read() -> RunInfo:
            run = self._repo.get_workflow_run(run_id)
            head = run.head_repository.full_name if run.head_repository is not None else None
            return RunInfo(run_id, run.event, run.head_sha, head)
        return self._call(f"read workflow run {run_id}", read)

    def run_artifacts(self, run_id: int) -> list[ArtifactInfo]:
        """The artifacts of a workflow run (``actions: read``), at most ``MAX_LISTED``."""
        def read() -> list[ArtifactInfo]:
            artifacts = self._repo.get_workflow_run(run_id).get_artifacts()
            return [ArtifactInfo(a.id, a.name, a.size_in_bytes, a.expired,
                                 a.workflow_run.head_sha if a.workflow_run else None)
                    for a in islice(artifacts, MAX_LISTED)]
        return self._call(f"list the artifacts of workflow run {run_id}", read)

    def download_artifact(self, artifact_id: int, max_bytes: int) -> bytes:
        """The artifact's zip, in memory; over ``max_bytes`` it is refused unread.

        :raises ArtifactError: the zip is larger than ``max_bytes``.
        """
        url = f"{self._api_url}/repos/{self._repository}/actions/artifacts/{artifact_id}/zip"
        return self._call(f"download artifact {artifact_id}",
                          lambda: self._download(url, max_bytes))

    def _download(self, url: str, max_bytes: int) -> bytes:
        headers = {"Authorization": f"Bearer {self._token}",
                   "Accept": "application/vnd.github+json"}
        with requests.get(url, headers=headers, auth=_no_netrc, allow_redirects=False,
                          stream=True, timeout=DOWNLOAD_TIMEOUT_S) as answer:
            if answer.status_code not in _REDIRECTS:
                return _bounded_body(answer, max_bytes)
            if not answer.headers.get("Location"):
                raise ArtifactError("the artifact download redirected nowhere (no Location)")
            location = urllib.parse.urljoin(url, answer.headers["Location"])
        if urllib.parse.urlsplit(location).scheme not in _allowed_schemes(self._api_url):
            raise ArtifactError(f"the artifact download redirected to a non-HTTPS URL "
                                f"({urllib.parse.urlsplit(location).scheme or 'none'})")
        # A signed storage URL: no token, whichever host it names.
        with requests.get(location, auth=_no_netrc, allow_redirects=False, stream=True,
                          timeout=DOWNLOAD_TIMEOUT_S) as stored:
            return _bounded_body(stored, max_bytes)

    # -- writes -----------------------------------------------------------------------------

    def upsert_sticky(self, number: int, marker: str, body: str) -> PostedComment:
        """Update the bot's marked comment in place, or create it: never a second one."""
        existing = self.find_sticky(number, marker)
        if existing is not None:
            self._call(f"update comment {existing.id}", lambda: existing.edit(body))
            return PostedComment(existing.id, existing.html_url, created=False)
        return self.reply(number, body)

    def reply(self, number: int, body: str) -> PostedComment:
        created = self._call(f"comment on #{number}",
                             lambda: self._repo.get_issue(number).create_comment(body))
        return PostedComment(created.id, created.html_url, created=True)

    def react(self, number: int, comment_id: int, content: str) -> None:
        comment = self._repo.get_issue(number).get_comment(comment_id)
        self._call(f"react to comment {comment_id}",
                   lambda: comment.create_reaction(content))

    # -- retries ----------------------------------------------------------------------------

    def _call(self, what: str, request: Callable[[], T]) -> T:
        """``request()``, retried on transient failures; errors say ``what`` failed."""
        for attempt in range(1, self._retry.attempts + 1):
            try:
                return request()
            except GithubException as exc:
                delay = self._retry_delay(exc, attempt)
                if delay is None or attempt == self._retry.attempts:
                    raise _api_error(what, exc, attempt) from exc
            except (requests.ConnectionError, requests.Timeout) as exc:
                delay = self._backoff(attempt)
                if attempt == self._retry.attempts:
                    raise GitHubApiError(f"cannot {what}: GitHub is unreachable after "
                                         f"{attempt} attempts ({type(exc).__name__})") from exc
            self._sleep(delay)
        raise AssertionError("unreachable")

    def _retry_delay(self, exc: GithubException, attempt: int) -> float | None:
        """Seconds to wait before retrying, or None when retrying cannot help."""
        transient = exc.status >= 500 or exc.status == 429 or _is_rate_limit(exc)
        if not transient:
            return None
        headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
        if "retry-after" in headers:
            delay = _seconds(headers["retry-after"])
        elif headers.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in headers:
            delay = _seconds(headers["x-ratelimit-reset"]) - time.time()
        elif _is_rate_limit(exc):  # a secondary limit with no hint: GitHub asks for a minute
            delay = _SECONDARY_LIMIT_WAIT_S
        else:
            delay = self._backoff(attempt)
        return max(delay, 0.0) if delay <= self._retry.max_delay_s else None

    def _backoff(self, attempt: int) -> float:
        return float(min(self._retry.base_delay_s * 2 ** (attempt - 1), self._retry.max_delay_s))


def _pull_head(pull: Any) -> PullRequestHead:
    head_repo = pull.head.repo.full_name if pull.head.repo is not None else None
    return PullRequestHead(pull.number, pull.head.sha, head_repo, pull.base.repo.full_name)


def _no_netrc(request: requests.PreparedRequest) -> requests.PreparedRequest:
    """An explicit auth that adds nothing: requests then reads no ~/.netrc credentials
    (which would replace our header, or reach the storage host)."""
    return request


def _allowed_schemes(api_url: str) -> frozenset[str]:
    """HTTPS, or plain HTTP where the API itself is plain HTTP (a local test server)."""
    return frozenset({"https", urllib.parse.urlsplit(api_url).scheme})


def _bounded_body(answer: requests.Response, max_bytes: int) -> bytes:
    """The body of a 200 answer, read up to ``max_bytes``; anything else raises.

    Other statuses become ``GithubException`` so ``_call`` retries and explains them as
    for any API call. Memory stays within ``max_bytes`` plus one chunk.
    """
    if answer.status_code != 200:
        raise GithubException(answer.status_code, _json_or_none(answer),
                              dict(answer.headers))
    declared = answer.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise ArtifactError(f"the artifact is {int(declared):,} bytes, over the "
                            f"{max_bytes:,}-byte cap: not read")
    body = bytearray()
    for chunk in answer.iter_content(_DOWNLOAD_CHUNK_BYTES):
        body += chunk
        if len(body) > max_bytes:
            raise ArtifactError(f"the artifact is over the {max_bytes:,}-byte cap: "
                                "download stopped")
    return bytes(body)


def _json_or_none(answer: requests.Response) -> Any:
    """An error answer's JSON (its first 64 KiB only), or None."""
    if "json" not in answer.headers.get("Content-Type", ""):
        return None
    try:
        return json.loads(next(answer.iter_content(_DOWNLOAD_CHUNK_BYTES), b""))
    except ValueError:
        return None


def _is_rate_limit(exc: GithubException) -> bool:
    return isinstance(exc, RateLimitExceededException) or (
        exc.status == 403 and "rate limit" in _message(exc).lower())


def _api_error(what: str, exc: GithubException, attempts: int) -> GitHubApiError:
    message = _message(exc)
    if exc.status == 403 and _READ_ONLY_MESSAGE in message.lower():
        return ReadOnlyTokenError(f"cannot {what}: the token is read-only here "
                                  f"(403 {message})")
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    return GitHubApiError(f"cannot {what}: GitHub answered {exc.status} {message}{tries}")


def _message(exc: GithubException) -> str:
    data = exc.data
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return " ".join(data["message"].split())[:200]
    return ""


def _seconds(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        return 60.0
