"""A stateful, in-process stand-in for the GitHub REST API, spoken to over real HTTP.

PyGithub reaches it exactly as it reaches api.github.com::

    with FakeGitHub() as fake:
        fake.add_repo("octo/demo")
        fake.add_pull("octo/demo", 7, head_sha="b" * 40, base_sha="a" * 40)
        gh = github.Github(auth=github.Auth.Token(fake.write_token), base_url=fake.url,
                           retry=None, seconds_between_requests=0, seconds_between_writes=0)

It keeps repositories, pull requests, issues, issue comments, reactions, collaborator roles,
workflow runs and their artifacts; answers with JSON shaped like GitHub's; paginates with a
``Link`` header; and enforces what a PR bot depends on: unknown or missing tokens get 401,
writes with the read-only token get the 403 a fork pull request's ``GITHUB_TOKEN`` gets, and
only a comment's author may edit or delete it. Open pull requests are listed with GitHub's
``state`` and ``head=owner:branch`` filters. An artifact's zip is served as GitHub serves it:
``GET .../actions/artifacts/{id}/zip`` answers 302 with a signed storage URL
(``/_storage/...`` on this server), which answers 400 to a request that carries an
``Authorization`` header, as the storage service does; :attr:`FakeGitHub.storage_requests`
records what reached it. :meth:`FakeGitHub.workflow_run_payload` builds the ``workflow_run``
event GitHub would send for a run, ``pull_requests: []`` for a fork's. Faults (502s, secondary
rate limits) are injected per request with :meth:`FakeGitHub.fail_next`. Every path is also
served under ``/api/v3``, so GitHub Enterprise style base urls work, and the urls in the
answers keep the prefix the request used.

Ids are deterministic: each kind (repo, user, pull, issue, comment, reaction, run, artifact)
counts from 1000.
Timestamps come from a fake clock that starts at 2024-01-01T00:00:00Z and ticks one second
per write, so later objects are always newer.

It does not model GraphQL, labels, reviews, review comments, commits, private-repo visibility,
token permissions beyond read-only, or conditional requests (ETags).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import secrets
import threading
import urllib.parse
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, NamedTuple, get_args

__all__ = [
    "BOT_LOGIN",
    "READ_ONLY_TOKEN",
    "SECONDARY_RATE_LIMIT_BODY",
    "WRITE_TOKEN",
    "FakeGitHub",
    "Identity",
    "LoggedRequest",
    "Role",
    "StorageRequest",
    "UserType",
]

Role = Literal["admin", "maintain", "write", "triage", "read", "none"]
UserType = Literal["User", "Bot"]

BOT_LOGIN = "github-actions[bot]"
WRITE_TOKEN = "ghs_fake_write_token"
READ_ONLY_TOKEN = "ghs_fake_read_only_token"
ENTERPRISE_PREFIX = "/api/v3"
HTML_ROOT = "https://github.com"
DOCS_URL = "https://docs.github.com/rest"
FIRST_ID = 1000
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100
MAX_COMMENT_CHARS = 65_536
CLOCK_START = datetime(2024, 1, 1, tzinfo=UTC)
# How often the serve loop checks for close(): the stdlib default (0.5 s) would add that much
# to every test's teardown.
SHUTDOWN_POLL_S = 0.01
RATE_LIMIT = 5000
RATE_RESET_EPOCH_S = int(CLOCK_START.timestamp()) + 3600
REACTION_CONTENTS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
INTEGRATION_FORBIDDEN = "Resource not accessible by integration"
SECONDARY_RATE_LIMIT_BODY: dict[str, str] = {
    "message": "You have exceeded a secondary rate limit. "
    "Please wait a few minutes before you try again.",
    "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api"
    "#secondary-rate-limits",
}
# The permission endpoint's `permission` holds the legacy base role: GitHub maps maintain to
# write and triage to read there; only `role_name` tells them apart.
_LEGACY_PERMISSION: dict[Role, str] = {
    "admin": "admin", "maintain": "write", "write": "write",
    "triage": "read", "read": "read", "none": "none",
}
_WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})


@dataclass(frozen=True)
class Identity:
    """Who a token acts as.

    ``installation`` tokens (a GITHUB_TOKEN or GitHub App token) get 403 from ``GET /user``;
    ``read_only`` tokens get 403 on every write, as a fork pull request's GITHUB_TOKEN does.
    """

    login: str
    user_type: UserType = "User"
    read_only: bool = False
    installation: bool = False


class LoggedRequest(NamedTuple):
    """One request as received: ``path`` is the raw target, prefix and query string included."""

    method: str
    path: str
    token: str | None


@dataclass
class _User:
    login: str
    id: int
    type: UserType


@dataclass
class _Repo:
    full_name: str
    id: int
    default_branch: str
    private: bool
    fork: bool
    roles: dict[str, Role] = field(default_factory=dict)

    @property
    def owner(self) -> str:
        return self.full_name.split("/")[0]


@dataclass
class _Pull:
    id: int
    head_sha: str
    base_sha: str
    head_ref: str
    base_ref: str
    draft: bool
    head_repo: _Repo
    closed: bool = False


@dataclass
class _Run:
    id: int
    repo: _Repo
    event: str
    head_sha: str
    head_branch: str
    head_repo: _Repo
    conclusion: str
    created_at: str


@dataclass
class _Artifact:
    id: int
    run: _Run
    name: str
    data: bytes
    expired: bool
    listed_size: int  # size_in_bytes as the API lists it (GitHub's own count)
    send_length: bool  # False: the storage answer is chunked, with no Content-Length
    created_at: str


class StorageRequest(NamedTuple):
    """One request that reached the artifact storage: ``authorization`` must be None."""

    path: str
    authorization: str | None


@dataclass
class _Issue:
    repo: _Repo
    number: int
    id: int
    user: str
    title: str
    body: str
    created_at: str
    pull: _Pull | None = None


@dataclass
class _Comment:
    id: int
    issue: _Issue
    body: str
    user: str
    created_at: str
    updated_at: str
    association: str | None


@dataclass
class _Reaction:
    id: int
    comment_id: int
    content: str
    user: str
    created_at: str


@dataclass
class _Response:
    status: int
    body: Any = None  # JSON-able; a str is sent as-is (an HTML error page), bytes as a zip;
    # None sends no body
    headers: dict[str, str] = field(default_factory=dict)
    chunked: bool = False  # bytes sent with Transfer-Encoding: chunked, no Content-Length


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    response: _Response
    times: int
    apply: bool


@dataclass
class _Request:
    method: str
    path: str  # without the enterprise prefix and the query string
    query: dict[str, str]
    payload: Any
    identity: Identity
    root: str  # base url the client used, e.g. http://127.0.0.1:PORT/api/v3
    params: dict[str, str]


class _HttpError(Exception):
    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.response = _Response(status, {"message": message, **extra,
                                           "documentation_url": DOCS_URL, "status": str(status)})


class FakeGitHub:
    """The fake server and its state; start it with ``with`` or :meth:`start`.

    All state lives behind one lock, held for the whole of each request, so tests may read it
    (:meth:`comments`, :meth:`reactions`, :attr:`requests`) while PyGithub runs in other threads.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._ids: defaultdict[str, Iterator[int]] = defaultdict(lambda: itertools.count(FIRST_ID))
        self._ticks = itertools.count()
        self._users: dict[str, _User] = {}
        self._repos: dict[str, _Repo] = {}
        self._issues: dict[tuple[str, int], _Issue] = {}
        self._comments: dict[int, _Comment] = {}
        self._reactions: list[_Reaction] = []
        self._runs: dict[int, _Run] = {}
        self._artifacts: dict[int, _Artifact] = {}
        self._storage_keys: dict[str, int] = {}  # signed storage path -> artifact id
        self._storage_requests: list[StorageRequest] = []
        self._faults: list[_Fault] = []
        self._requests: list[LoggedRequest] = []
        self._tokens: dict[str, Identity] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.write_token = WRITE_TOKEN
        self.read_only_token = READ_ONLY_TOKEN
        bot = Identity(BOT_LOGIN, "Bot", installation=True)
        self.add_token(WRITE_TOKEN, bot)
        self.add_token(READ_ONLY_TOKEN, Identity(BOT_LOGIN, "Bot", read_only=True,
                                                 installation=True))

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> FakeGitHub:
        """Bind 127.0.0.1 on a free port and serve from a daemon thread."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.fake = self  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, args=(SHUTDOWN_POLL_S,),
                                        name="fake-github", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; keep-alive connections left open die with their daemon threads."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = self._thread = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        """Base url to hand to PyGithub, e.g. ``http://127.0.0.1:41234`` (no trailing slash)."""
        if self._server is None:
            raise RuntimeError("FakeGitHub is not started: use `with FakeGitHub()` or start()")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # -- arranging state ------------------------------------------------------------------

    def add_token(self, token: str, identity: Identity) -> None:
        """Accept ``token``, acting as ``identity``."""
        with self._lock:
            self._tokens[token] = identity
            self._user(identity.login, identity.user_type)

    @property
    def tokens(self) -> dict[str, Identity]:
        """Accepted tokens (a copy); by default the bot's write and read-only tokens."""
        with self._lock:
            return dict(self._tokens)

    def add_repo(self, full_name: str, default_branch: str = "main", private: bool = False,
                 *, fork: bool = False) -> None:
        """Create a repository; its owner is a user with the admin role."""
        owner = full_name.split("/")[0]
        with self._lock:
            repo = _Repo(full_name, self._next_id("repo"), default_branch, private, fork,
                         {owner.lower(): "admin"})
            self._repos[full_name.lower()] = repo
            self._user(owner)

    def add_pull(self, repo: str, number: int, head_sha: str, base_sha: str,
                 head_ref: str = "feature", base_ref: str | None = None, draft: bool = False,
                 fork: bool = False, user: str = "alice", *, title: str = "A change",
                 body: str = "") -> None:
        """Open pull request ``number``; ``fork`` puts its head in ``{user}/{name}``."""
        with self._lock:
            base = self._repo(repo)
            head = self._fork_of(base, user) if fork else base
            pull = _Pull(self._next_id("pull"), head_sha, base_sha, head_ref,
                         base_ref or base.default_branch, draft, head)
            self._add_issue(base, number, user, title, body, pull)

    def push_head(self, repo: str, number: int, head_sha: str) -> None:
        """Move pull request ``number``'s head to ``head_sha`` (a push or force-push)."""
        with self._lock:
            pull = self._issue(repo, number).pull
            if pull is None:
                raise ValueError(f"#{number} is not a pull request")
            pull.head_sha = head_sha

    def close_pull(self, repo: str, number: int) -> None:
        """Close pull request ``number``: it is no longer listed with ``state=open``."""
        with self._lock:
            pull = self._issue(repo, number).pull
            if pull is None:
                raise ValueError(f"#{number} is not a pull request")
            pull.closed = True

    def add_workflow_run(self, repo: str, *, head_sha: str, head_branch: str = "feature",
                         head_repo: str | None = None, event: str = "pull_request",
                         conclusion: str = "success") -> int:
        """A completed run in ``repo`` for a head in ``head_repo`` (default: ``repo``)."""
        with self._lock:
            base = self._repo(repo)
            head = self._repo(head_repo) if head_repo else base
            run = _Run(self._next_id("run"), base, event, head_sha, head_branch, head,
                       conclusion, self._now())
            self._runs[run.id] = run
            return run.id

    def add_artifact(self, repo: str, run_id: int, name: str, data: bytes, *,
                     expired: bool = False, listed_size: int | None = None,
                     send_length: bool = True) -> int:
        """An artifact of run ``run_id`` whose zip is ``data``.

        ``listed_size`` overrides the size the API lists; with ``send_length`` false the
        storage sends the zip chunked, so its size is only known by reading it.
        """
        with self._lock:
            run = self._run(repo, run_id)
            artifact = _Artifact(self._next_id("artifact"), run, name, data, expired,
                                 len(data) if listed_size is None else listed_size,
                                 send_length, self._now())
            self._artifacts[artifact.id] = artifact
            return artifact.id

    def add_issue(self, repo: str, number: int, user: str = "alice", *, title: str = "An issue",
                  body: str = "") -> None:
        """Open a plain issue (not a pull request) ``number``."""
        with self._lock:
            self._add_issue(self._repo(repo), number, user, title, body, None)

    def set_permission(self, repo: str, login: str, role: Role) -> None:
        """Give ``login`` a role on ``repo``; ``"none"`` removes it."""
        if role not in get_args(Role):
            raise ValueError(f"unknown role {role!r}")
        with self._lock:
            self._user(login)
            self._repo(repo).roles[login.lower()] = role

    def add_comment(self, repo: str, number: int, body: str, login: str,
                    user_type: UserType = "User", *, association: str | None = None) -> int:
        """Add an issue comment as ``login`` and return its id.

        ``association`` overrides the computed ``author_association`` (OWNER for the repository
        owner, COLLABORATOR for anyone with a role, else NONE), e.g. to model ``"MEMBER"``.
        """
        with self._lock:
            self._user(login, user_type)
            return self._create_comment(self._issue(repo, number), body, login, association).id

    def fail_next(self, method: str, path_regex: str, status: int,
                  body: dict[str, Any] | str | None = None, headers: dict[str, str] | None = None,
                  times: int = 1, *, apply: bool = False) -> None:
        """Answer the next ``times`` matching requests with ``status`` instead.

        ``path_regex`` is searched in the path without the ``/api/v3`` prefix and query string.
        Faults are checked before authentication, in the order added. With ``apply`` the request
        still takes effect first, as when GitHub performs a write and then answers 502.
        """
        payload = body if body is not None else {"message": HTTPStatus(status).phrase}
        fault = _Fault(method.upper(), re.compile(path_regex),
                       _Response(status, payload, dict(headers or {})), times, apply)
        with self._lock:
            self._faults.append(fault)

    def secondary_rate_limit(self, method: str, path_regex: str, times: int = 1,
                             retry_after: int = 0) -> None:
        """Answer the next ``times`` matching requests with GitHub's secondary-rate-limit 403."""
        self.fail_next(method, path_regex, 403, dict(SECONDARY_RATE_LIMIT_BODY),
                       {"Retry-After": str(retry_after)}, times)

    # -- reading state --------------------------------------------------------------------

    def comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        """The issue's comments, oldest first, as ``GET .../comments`` would render them."""
        with self._lock:
            issue = self._issue(repo, number)
            return [self._comment_json(self.url, c) for c in self._comments.values()
                    if c.issue is issue]

    def reactions(self, comment_id: int) -> list[str]:
        """Contents (``"eyes"``, ``"+1"``, ...) of the reactions on a comment, oldest first."""
        with self._lock:
            return [r.content for r in self._reactions if r.comment_id == comment_id]

    def workflow_run_payload(self, repo: str, run_id: int) -> dict[str, Any]:
        """The ``workflow_run`` event GitHub sends when run ``run_id`` completes.

        As on GitHub, ``workflow_run.pull_requests`` lists only pull requests whose head
        is in ``repo`` itself: it is empty for a fork's run.
        """
        with self._lock:
            run = self._run(repo, run_id)
            root = "https://api.github.com"
            return {"action": "completed", "workflow_run": self._run_json(root, run),
                    "workflow": {"id": 1, "name": "pr-context",
                                 "path": ".github/workflows/pr-context.yml", "state": "active"},
                    "repository": self._repo_json(root, run.repo),
                    "sender": self._user_json(root, run.head_repo.owner)}

    @property
    def storage_requests(self) -> list[StorageRequest]:
        """Every request that reached the artifact storage, oldest first (a copy)."""
        with self._lock:
            return list(self._storage_requests)

    @property
    def requests(self) -> list[LoggedRequest]:
        """Every request received so far (a copy), faulted and rejected ones included."""
        with self._lock:
            return list(self._requests)

    @property
    def pending_faults(self) -> int:
        """How many injected failures have not been served yet."""
        with self._lock:
            return sum(f.times for f in self._faults)

    # -- request dispatch -----------------------------------------------------------------

    def _dispatch(self, method: str, target: str, authorization: str | None,
                  raw: bytes) -> _Response:
        token = _token_of(authorization)
        split = urllib.parse.urlsplit(target)
        prefix = ENTERPRISE_PREFIX if split.path.startswith(ENTERPRISE_PREFIX + "/") else ""
        path = split.path.removeprefix(prefix)
        with self._lock:
            self._requests.append(LoggedRequest(method, target, token))
            if path.startswith(_STORAGE_PREFIX):
                return self._serve_storage(method, path, authorization)
            fault = self._take_fault(method, path)
            if fault is not None and not fault.apply:
                return fault.response
            try:
                response = self._route(method, path, split.query, token, raw, self.url + prefix)
            except _HttpError as exc:
                response = exc.response
            return fault.response if fault is not None else response

    def _take_fault(self, method: str, path: str) -> _Fault | None:
        for fault in self._faults:
            if fault.method == method and fault.pattern.search(path):
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.remove(fault)
                return fault
        return None

    def _route(self, method: str, path: str, query: str, token: str | None, raw: bytes,
               root: str) -> _Response:
        identity = self._tokens.get(token or "")
        if identity is None:
            raise _HttpError(401, "Bad credentials")
        for route_method, pattern, handler in _ROUTES:
            match = pattern.fullmatch(path)
            if match and route_method == method:
                if method in _WRITE_METHODS and identity.read_only:
                    raise _HttpError(403, INTEGRATION_FORBIDDEN)
                params = {k: urllib.parse.unquote(v) for k, v in match.groupdict().items()}
                query_args = dict(urllib.parse.parse_qsl(query))
                request = _Request(method, path, query_args, _parse_json(raw), identity, root,
                                   params)
                return handler(self, request)
        raise _HttpError(404, "Not Found")

    # -- endpoints ------------------------------------------------------------------------

    def _get_authenticated_user(self, req: _Request) -> _Response:
        if req.identity.installation:
            raise _HttpError(403, INTEGRATION_FORBIDDEN)
        return _Response(200, self._user_json(req.root, req.identity.login))

    def _get_user(self, req: _Request) -> _Response:
        if req.params["login"] not in self._users:
            raise _HttpError(404, "Not Found")
        return _Response(200, self._user_json(req.root, req.params["login"]))

    def _get_rate_limit(self, req: _Request) -> _Response:
        core = {"limit": RATE_LIMIT, "remaining": RATE_LIMIT - 1, "reset": RATE_RESET_EPOCH_S,
                "used": 1, "resource": "core"}
        resources = {name: {**core, "resource": name} for name in ("core", "search", "graphql")}
        return _Response(200, {"resources": resources, "rate": core})

    def _get_repo(self, req: _Request) -> _Response:
        return _Response(200, self._repo_json(req.root, self._repo(req.params["repo"])))

    def _get_pull(self, req: _Request) -> _Response:
        issue = self._issue(req.params["repo"], int(req.params["number"]))
        if issue.pull is None:
            raise _HttpError(404, "Not Found")
        return _Response(200, self._pull_json(req.root, issue, issue.pull))

    def _get_issue(self, req: _Request) -> _Response:
        issue = self._issue(req.params["repo"], int(req.params["number"]))
        return _Response(200, self._issue_json(req.root, issue))

    def _list_comments(self, req: _Request) -> _Response:
        issue = self._issue(req.params["repo"], int(req.params["number"]))
        since = req.query.get("since", "")
        return _paginate(req, [self._comment_json(req.root, c) for c in self._comments.values()
                               if c.issue is issue and c.updated_at >= since])

    def _post_comment(self, req: _Request) -> _Response:
        issue = self._issue(req.params["repo"], int(req.params["number"]))
        comment = self._create_comment(issue, _body_of(req), req.identity.login, None)
        return _Response(201, self._comment_json(req.root, comment))

    def _get_comment(self, req: _Request) -> _Response:
        return _Response(200, self._comment_json(req.root, self._comment(req)))

    def _edit_comment(self, req: _Request) -> _Response:
        comment = self._own_comment(req)
        comment.body = _body_of(req)
        comment.updated_at = self._now()
        return _Response(200, self._comment_json(req.root, comment))

    def _delete_comment(self, req: _Request) -> _Response:
        comment = self._own_comment(req)
        del self._comments[comment.id]
        self._reactions = [r for r in self._reactions if r.comment_id != comment.id]
        return _Response(204)

    def _list_reactions(self, req: _Request) -> _Response:
        comment = self._comment(req)
        content = req.query.get("content")
        return _paginate(req, [self._reaction_json(req.root, r) for r in self._reactions
                               if r.comment_id == comment.id and content in (None, r.content)])

    def _post_reaction(self, req: _Request) -> _Response:
        comment = self._comment(req)
        content = req.payload.get("content") if isinstance(req.payload, dict) else None
        if content not in REACTION_CONTENTS:
            raise _HttpError(422, "Validation Failed", errors=[
                {"resource": "Reaction", "code": "invalid", "field": "content"}])
        login = req.identity.login
        for reaction in self._reactions:
            if (reaction.comment_id, reaction.content, reaction.user) == (comment.id, content,
                                                                          login):
                return _Response(200, self._reaction_json(req.root, reaction))
        reaction = _Reaction(self._next_id("reaction"), comment.id, content, login, self._now())
        self._reactions.append(reaction)
        return _Response(201, self._reaction_json(req.root, reaction))

    def _list_pulls(self, req: _Request) -> _Response:
        repo = self._repo(req.params["repo"])
        state = req.query.get("state", "open")
        owner, _, ref = req.query.get("head", "").partition(":")
        found = [issue for issue in self._issues.values() if issue.repo is repo
                 and issue.pull is not None
                 and state in ("all", "closed" if issue.pull.closed else "open")
                 and (not owner or (issue.pull.head_repo.owner.lower() == owner.lower()
                                    and issue.pull.head_ref == ref))]
        return _paginate(req, [self._pull_json(req.root, i, i.pull) for i in found
                               if i.pull is not None])

    def _get_run(self, req: _Request) -> _Response:
        return _Response(200, self._run_json(req.root, self._run(req.params["repo"],
                                                                 int(req.params["run_id"]))))

    def _list_run_artifacts(self, req: _Request) -> _Response:
        run = self._run(req.params["repo"], int(req.params["run_id"]))
        items = [self._artifact_json(req.root, a) for a in self._artifacts.values()
                 if a.run is run]
        page = _paginate(req, items)
        page.body = {"total_count": len(items), "artifacts": page.body}
        return page

    def _download_artifact(self, req: _Request) -> _Response:
        artifact = self._artifacts.get(int(req.params["artifact_id"]))
        if artifact is None or artifact.run.repo is not self._repo(req.params["repo"]):
            raise _HttpError(404, "Not Found")
        if artifact.expired:
            raise _HttpError(410, "Artifact has expired")
        key = f"{_STORAGE_PREFIX}{secrets.token_hex(8)}/artifact.zip"
        self._storage_keys[key] = artifact.id
        host = req.root.removesuffix(ENTERPRISE_PREFIX)
        signed = f"{host}{key}?sig={secrets.token_hex(8)}&se=2024-01-01T00%3A01%3A00Z"
        return _Response(302, None, {"Location": signed})

    def _serve_storage(self, method: str, path: str, authorization: str | None) -> _Response:
        self._storage_requests.append(StorageRequest(path, authorization))
        artifact = self._artifacts.get(self._storage_keys.get(path, -1))
        if method != "GET" or artifact is None:
            return _Response(404, "<Error><Code>BlobNotFound</Code></Error>")
        if authorization is not None:  # a signed URL plus a token: the storage refuses both
            return _Response(400, "<Error><Code>InvalidAuthenticationInfo</Code></Error>")
        return _Response(200, artifact.data, {"Content-Type": "application/zip"},
                         chunked=not artifact.send_length)

    def _get_permission(self, req: _Request) -> _Response:
        repo, login = self._repo(req.params["repo"]), req.params["login"]
        role = repo.roles.get(login.lower(), "none")
        user = {**self._user_json(req.root, login), "role_name": role}
        return _Response(200, {"permission": _LEGACY_PERMISSION[role], "role_name": role,
                               "user": user})

    # -- state helpers --------------------------------------------------------------------

    def _next_id(self, kind: str) -> int:
        return next(self._ids[kind])

    def _now(self) -> str:
        moment = CLOCK_START + timedelta(seconds=next(self._ticks))
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    def _user(self, login: str, user_type: UserType | None = None) -> _User:
        user = self._users.get(login)
        if user is None:
            user = self._users[login] = _User(login, self._next_id("user"), user_type or "User")
        elif user_type is not None:
            user.type = user_type
        return user

    def _repo(self, full_name: str) -> _Repo:
        repo = self._repos.get(full_name.lower())
        if repo is None:
            raise _HttpError(404, "Not Found")
        return repo

    def _run(self, repo: str, run_id: int) -> _Run:
        run = self._runs.get(run_id)
        if run is None or run.repo is not self._repo(repo):
            raise _HttpError(404, "Not Found")
        return run

    def _fork_of(self, base: _Repo, user: str) -> _Repo:
        name = f"{user}/{base.full_name.split('/')[1]}"
        if name.lower() not in self._repos:
            self.add_repo(name, base.default_branch, fork=True)
        return self._repos[name.lower()]

    def _issue(self, repo: str, number: int) -> _Issue:
        issue = self._issues.get((self._repo(repo).full_name, number))
        if issue is None:
            raise _HttpError(404, "Not Found")
        return issue

    def _add_issue(self, repo: _Repo, number: int, user: str, title: str, body: str,
                   pull: _Pull | None) -> None:
        self._user(user)
        self._issues[(repo.full_name, number)] = _Issue(repo, number, self._next_id("issue"), user,
                                                        title, body, self._now(), pull)

    def _create_comment(self, issue: _Issue, body: str, login: str,
                        association: str | None) -> _Comment:
        now = self._now()
        comment = _Comment(self._next_id("comment"), issue, body, login, now, now, association)
        self._comments[comment.id] = comment
        return comment

    def _comment(self, req: _Request) -> _Comment:
        comment = self._comments.get(int(req.params["comment_id"]))
        if comment is None or comment.issue.repo is not self._repo(req.params["repo"]):
            raise _HttpError(404, "Not Found")
        return comment

    def _own_comment(self, req: _Request) -> _Comment:
        comment = self._comment(req)
        if comment.user != req.identity.login:
            message = INTEGRATION_FORBIDDEN if req.identity.installation else "Forbidden"
            raise _HttpError(403, message)
        return comment

    def _association(self, repo: _Repo, login: str) -> str:
        if login.lower() == repo.owner.lower():
            return "OWNER"
        return "COLLABORATOR" if repo.roles.get(login.lower(), "none") != "none" else "NONE"

    # -- rendering ------------------------------------------------------------------------

    def _user_json(self, root: str, login: str) -> dict[str, Any]:
        user = self._user(login)
        quoted = urllib.parse.quote(login)
        html = f"{HTML_ROOT}/apps/{login.removesuffix('[bot]')}" if user.type == "Bot" else (
            f"{HTML_ROOT}/{login}")
        return {"login": login, "id": user.id, "node_id": f"U_{user.id}",
                "avatar_url": f"https://avatars.githubusercontent.com/u/{user.id}?v=4",
                "gravatar_id": "", "url": f"{root}/users/{quoted}", "html_url": html,
                "type": user.type, "site_admin": False}

    def _repo_json(self, root: str, repo: _Repo) -> dict[str, Any]:
        return {"id": repo.id, "node_id": f"R_{repo.id}", "name": repo.full_name.split("/")[1],
                "full_name": repo.full_name, "private": repo.private,
                "owner": self._user_json(root, repo.owner),
                "html_url": f"{HTML_ROOT}/{repo.full_name}", "description": None,
                "fork": repo.fork, "url": f"{root}/repos/{repo.full_name}",
                "default_branch": repo.default_branch, "archived": False, "disabled": False,
                "visibility": "private" if repo.private else "public",
                "created_at": CLOCK_START.strftime("%Y-%m-%dT%H:%M:%SZ")}

    def _issue_json(self, root: str, issue: _Issue) -> dict[str, Any]:
        repo_url = f"{root}/repos/{issue.repo.full_name}"
        kind = "issues" if issue.pull is None else "pull"
        count = sum(1 for c in self._comments.values() if c.issue is issue)
        data: dict[str, Any] = {
            "id": issue.id, "node_id": f"I_{issue.id}", "number": issue.number,
            "url": f"{repo_url}/issues/{issue.number}", "repository_url": repo_url,
            "comments_url": f"{repo_url}/issues/{issue.number}/comments",
            "html_url": f"{HTML_ROOT}/{issue.repo.full_name}/{kind}/{issue.number}",
            "title": issue.title, "body": issue.body, "user": self._user_json(root, issue.user),
            "labels": [], "state": "open", "locked": False, "assignee": None, "assignees": [],
            "comments": count, "created_at": issue.created_at, "updated_at": issue.created_at,
            "closed_at": None, "author_association": self._association(issue.repo, issue.user),
        }
        if issue.pull is not None:
            html = data["html_url"]
            data["pull_request"] = {"url": f"{repo_url}/pulls/{issue.number}", "html_url": html,
                                    "diff_url": f"{html}.diff", "patch_url": f"{html}.patch",
                                    "merged_at": None}
        return data

    def _pull_json(self, root: str, issue: _Issue, pull: _Pull) -> dict[str, Any]:
        issue_data = self._issue_json(root, issue)
        head = self._part_json(root, pull.head_repo, pull.head_ref, pull.head_sha)
        base = self._part_json(root, issue.repo, pull.base_ref, pull.base_sha)
        keep = ("number", "title", "body", "user", "state", "locked", "labels", "assignee",
                "assignees", "created_at", "updated_at", "closed_at", "author_association")
        issue_data["state"] = "closed" if pull.closed else "open"
        return {**{k: issue_data[k] for k in keep}, **issue_data["pull_request"],
                "id": pull.id, "node_id": f"PR_{pull.id}", "issue_url": issue_data["url"],
                "comments_url": issue_data["comments_url"], "draft": pull.draft, "head": head,
                "base": base, "merged": False, "mergeable": None, "merge_commit_sha": None,
                "comments": issue_data["comments"]}

    def _part_json(self, root: str, repo: _Repo, ref: str, sha: str) -> dict[str, Any]:
        return {"label": f"{repo.owner}:{ref}", "ref": ref, "sha": sha,
                "user": self._user_json(root, repo.owner), "repo": self._repo_json(root, repo)}

    def _comment_json(self, root: str, comment: _Comment) -> dict[str, Any]:
        issue = comment.issue
        url = f"{root}/repos/{issue.repo.full_name}/issues/comments/{comment.id}"
        kind = "issues" if issue.pull is None else "pull"
        counts = {c: 0 for c in REACTION_CONTENTS}
        for reaction in self._reactions:
            if reaction.comment_id == comment.id:
                counts[reaction.content] += 1
        association = comment.association or self._association(issue.repo, comment.user)
        return {"id": comment.id, "node_id": f"IC_{comment.id}", "url": url,
                "html_url": f"{HTML_ROOT}/{issue.repo.full_name}/{kind}/{issue.number}"
                f"#issuecomment-{comment.id}",
                "issue_url": f"{root}/repos/{issue.repo.full_name}/issues/{issue.number}",
                "body": comment.body, "user": self._user_json(root, comment.user),
                "created_at": comment.created_at, "updated_at": comment.updated_at,
                "author_association": association, "performed_via_github_app": None,
                "reactions": {"url": f"{url}/reactions", "total_count": sum(counts.values()),
                              **counts}}

    def _run_json(self, root: str, run: _Run) -> dict[str, Any]:
        url = f"{root}/repos/{run.repo.full_name}/actions/runs/{run.id}"
        return {
            "id": run.id, "name": "pr-context", "node_id": f"WFR_{run.id}",
            "head_branch": run.head_branch, "head_sha": run.head_sha,
            "path": ".github/workflows/pr-context.yml", "display_title": "A change",
            "run_number": run.id - FIRST_ID + 1, "event": run.event, "status": "completed",
            "conclusion": run.conclusion, "workflow_id": 1, "check_suite_id": run.id,
            "check_suite_node_id": f"CS_{run.id}", "url": url,
            "html_url": f"{HTML_ROOT}/{run.repo.full_name}/actions/runs/{run.id}",
            "pull_requests": self._run_pulls_json(root, run), "created_at": run.created_at,
            "updated_at": run.created_at, "run_attempt": 1, "run_started_at": run.created_at,
            "actor": self._user_json(root, run.head_repo.owner),
            "triggering_actor": self._user_json(root, run.head_repo.owner),
            "jobs_url": f"{url}/jobs", "logs_url": f"{url}/logs",
            "check_suite_url": f"{root}/repos/{run.repo.full_name}/check-suites/{run.id}",
            "artifacts_url": f"{url}/artifacts", "cancel_url": f"{url}/cancel",
            "rerun_url": f"{url}/rerun", "previous_attempt_url": None,
            "workflow_url": f"{root}/repos/{run.repo.full_name}/actions/workflows/1",
            "head_commit": {"id": run.head_sha, "tree_id": run.head_sha,
                            "message": "A change", "timestamp": run.created_at,
                            "author": {"name": "Alice", "email": "alice@example.com"},
                            "committer": {"name": "Alice", "email": "alice@example.com"}},
            "repository": self._repo_json(root, run.repo),
            "head_repository": self._repo_json(root, run.head_repo),
        }

    def _run_pulls_json(self, root: str, run: _Run) -> list[dict[str, Any]]:
        """The run's pull requests, as GitHub lists them: only heads in the repository."""
        if run.head_repo is not run.repo or run.event != "pull_request":
            return []

        def part(repo: _Repo, ref: str, sha: str) -> dict[str, Any]:
            return {"ref": ref, "sha": sha, "repo": {
                "id": repo.id, "url": f"{root}/repos/{repo.full_name}",
                "name": repo.full_name.split("/")[1]}}
        return [{"url": f"{root}/repos/{run.repo.full_name}/pulls/{issue.number}",
                 "id": issue.pull.id, "number": issue.number,
                 "head": part(run.repo, issue.pull.head_ref, issue.pull.head_sha),
                 "base": part(run.repo, issue.pull.base_ref, issue.pull.base_sha)}
                for issue in self._issues.values()
                if issue.repo is run.repo and issue.pull is not None
                and issue.pull.head_ref == run.head_branch
                and issue.pull.head_repo is run.head_repo]

    def _artifact_json(self, root: str, artifact: _Artifact) -> dict[str, Any]:
        run = artifact.run
        url = f"{root}/repos/{run.repo.full_name}/actions/artifacts/{artifact.id}"
        return {"id": artifact.id, "node_id": f"A_{artifact.id}", "name": artifact.name,
                "size_in_bytes": artifact.listed_size, "url": url,
                "archive_download_url": f"{url}/zip", "expired": artifact.expired,
                "digest": f"sha256:{hashlib.sha256(artifact.data).hexdigest()}",
                "created_at": artifact.created_at, "updated_at": artifact.created_at,
                "expires_at": "2024-04-01T00:00:00Z",
                "workflow_run": {"id": run.id, "repository_id": run.repo.id,
                                 "head_repository_id": run.head_repo.id,
                                 "head_branch": run.head_branch, "head_sha": run.head_sha}}

    def _reaction_json(self, root: str, reaction: _Reaction) -> dict[str, Any]:
        return {"id": reaction.id, "node_id": f"REA_{reaction.id}",
                "user": self._user_json(root, reaction.user), "content": reaction.content,
                "created_at": reaction.created_at}


_RouteHandler = Callable[[FakeGitHub, _Request], _Response]
_REPO = r"/repos/(?P<repo>[^/]+/[^/]+)"
_COMMENT = _REPO + r"/issues/comments/(?P<comment_id>\d+)"
_ROUTES: list[tuple[str, re.Pattern[str], _RouteHandler]] = [
    (method, re.compile(pattern), handler) for method, pattern, handler in [
        ("GET", "/user", FakeGitHub._get_authenticated_user),
        ("GET", "/users/(?P<login>[^/]+)", FakeGitHub._get_user),
        ("GET", "/rate_limit", FakeGitHub._get_rate_limit),
        ("GET", _REPO, FakeGitHub._get_repo),
        ("GET", _REPO + "/pulls", FakeGitHub._list_pulls),
        ("GET", _REPO + r"/pulls/(?P<number>\d+)", FakeGitHub._get_pull),
        ("GET", _REPO + r"/issues/(?P<number>\d+)", FakeGitHub._get_issue),
        ("GET", _REPO + r"/issues/(?P<number>\d+)/comments", FakeGitHub._list_comments),
        ("POST", _REPO + r"/issues/(?P<number>\d+)/comments", FakeGitHub._post_comment),
        ("GET", _COMMENT, FakeGitHub._get_comment),
        ("PATCH", _COMMENT, FakeGitHub._edit_comment),
        ("DELETE", _COMMENT, FakeGitHub._delete_comment),
        ("GET", _COMMENT + "/reactions", FakeGitHub._list_reactions),
        ("POST", _COMMENT + "/reactions", FakeGitHub._post_reaction),
        ("GET", _REPO + r"/collaborators/(?P<login>[^/]+)/permission",
         FakeGitHub._get_permission),
        ("GET", _REPO + r"/actions/runs/(?P<run_id>\d+)", FakeGitHub._get_run),
        ("GET", _REPO + r"/actions/runs/(?P<run_id>\d+)/artifacts",
         FakeGitHub._list_run_artifacts),
        ("GET", _REPO + r"/actions/artifacts/(?P<artifact_id>\d+)/zip",
         FakeGitHub._download_artifact),
    ]
]
_STORAGE_PREFIX = "/_storage/"
_CHUNK_BYTES = 64 * 1024
_RATE_HEADERS = {
    "X-RateLimit-Limit": str(RATE_LIMIT), "X-RateLimit-Remaining": str(RATE_LIMIT - 1),
    "X-RateLimit-Reset": str(RATE_RESET_EPOCH_S), "X-RateLimit-Used": "1",
    "X-RateLimit-Resource": "core", "X-GitHub-Media-Type": "github.v3; format=json",
}


def _token_of(authorization: str | None) -> str | None:
    """The token in ``Authorization: token X`` or ``Bearer X``; None when absent."""
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() if scheme.lower() in ("token", "bearer") and token.strip() else None


def _parse_json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError as exc:
        raise _HttpError(400, "Problems parsing JSON") from exc


def _body_of(req: _Request) -> str:
    """The ``body`` field of a comment write, validated as GitHub does."""
    body = req.payload.get("body") if isinstance(req.payload, dict) else None
    if not isinstance(body, str):
        raise _HttpError(422, "Invalid request.\n\n\"body\" wasn't supplied.")
    if len(body) > MAX_COMMENT_CHARS:
        raise _HttpError(422, "Validation Failed", errors=[
            {"resource": "IssueComment", "code": "custom", "field": "body",
             "message": f"body is too long (maximum is {MAX_COMMENT_CHARS} characters)"}])
    return body


def _int_arg(query: dict[str, str], name: str, default: int) -> int:
    value = query.get(name, "")
    return int(value) if value.isdigit() and int(value) > 0 else default


def _paginate(req: _Request, items: list[dict[str, Any]]) -> _Response:
    """One page of ``items`` with GitHub's ``Link`` header (prev, next, last, first)."""
    per_page = min(_int_arg(req.query, "per_page", DEFAULT_PER_PAGE), MAX_PER_PAGE)
    page = _int_arg(req.query, "page", 1)
    last = max(1, math.ceil(len(items) / per_page))

    def link(number: int, rel: str) -> str:
        query = urllib.parse.urlencode({**req.query, "page": number})
        return f'<{req.root}{req.path}?{query}>; rel="{rel}"'

    links = [link(page - 1, "prev")] if page > 1 else []
    links += [link(page + 1, "next"), link(last, "last")] if page < last else []
    links += [link(1, "first")] if page > 1 else []
    headers = {"Link": ", ".join(links)} if links else {}
    return _Response(200, items[(page - 1) * per_page:page * per_page], headers)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as PyGithub's requests session expects
    timeout = 10  # seconds an idle keep-alive connection is held open
    # Headers and body go out in separate writes; with Nagle on, the client's delayed ACK
    # stalls each response by about 40 ms.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the fake's ``requests`` log is the record."""

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        fake: FakeGitHub = self.server.fake  # type: ignore[attr-defined]
        response = fake._dispatch(self.command, self.path, self.headers.get("Authorization"),
                                  raw)
        if response.body is None:
            payload, content_type = b"", "application/json; charset=utf-8"
        elif isinstance(response.body, bytes):
            payload, content_type = response.body, "application/zip"
        elif isinstance(response.body, str):
            payload, content_type = response.body.encode(), "text/html; charset=utf-8"
        else:
            payload, content_type = json.dumps(response.body).encode(), (
                "application/json; charset=utf-8")
        self.send_response(response.status)
        length = ({"Transfer-Encoding": "chunked"} if response.chunked
                  else {"Content-Length": str(len(payload))})
        headers = {**_RATE_HEADERS, "Content-Type": content_type, **response.headers, **length}
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if not response.chunked:
            self.wfile.write(payload)
            return
        try:
            for start in range(0, len(payload), _CHUNK_BYTES):
                part = payload[start:start + _CHUNK_BYTES]
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: fine
            self.close_connection = True
