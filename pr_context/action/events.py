"""What GitHub Actions hands a step: the standard environment and the event payload.

Pure parsing into frozen dataclasses; the payload is untrusted (a PR title, a comment
body) and is only ever read as data. Missing or malformed parts raise BadInputError
naming the variable or key, because they mean the workflow is misconfigured.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pr_context.errors import BadInputError

__all__ = [
    "PULL_REQUEST_ACTIONS",
    "ActionEnv",
    "CommentEvent",
    "Event",
    "OtherEvent",
    "PullRequestEvent",
    "PushEvent",
    "SlashCommand",
    "WorkflowRunEvent",
    "parse_command",
    "read_event",
]

# Events a review runs for; `edited`, `labeled`... change no code.
PULL_REQUEST_ACTIONS = frozenset({"opened", "synchronize", "reopened", "ready_for_review"})
COMMAND_PREFIX = "/pr-context"


@dataclass(frozen=True)
class ActionEnv:
    """The standard variables of a GitHub Actions step (the token is never printed)."""

    event_name: str
    event_path: Path
    repository: str  # owner/name
    api_url: str
    server_url: str
    workspace: Path
    runner_temp: Path
    sha: str | None
    ref: str | None
    output: Path | None  # GITHUB_OUTPUT
    step_summary: Path | None  # GITHUB_STEP_SUMMARY
    runner_os: str
    token: str | None = field(default=None, repr=False)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> ActionEnv:
        env = os.environ if environ is None else environ

        def required(name: str) -> str:
            value = env.get(name, "").strip()
            if not value:
                raise BadInputError(f"{name} is not set: run `pr-context action` inside "
                                    "GitHub Actions, or set the GITHUB_* variables it reads")
            return value

        def optional_path(name: str) -> Path | None:
            value = env.get(name, "").strip()
            return Path(value) if value else None

        return cls(
            event_name=required("GITHUB_EVENT_NAME"),
            event_path=Path(required("GITHUB_EVENT_PATH")),
            repository=required("GITHUB_REPOSITORY"),
            api_url=env.get("GITHUB_API_URL", "").strip() or "https://api.github.com",
            server_url=env.get("GITHUB_SERVER_URL", "").strip() or "https://github.com",
            workspace=Path(env.get("GITHUB_WORKSPACE", "").strip() or "."),
            runner_temp=Path(env.get("RUNNER_TEMP", "").strip() or "/tmp"),
            sha=env.get("GITHUB_SHA", "").strip() or None,
            ref=env.get("GITHUB_REF", "").strip() or None,
            output=optional_path("GITHUB_OUTPUT"),
            step_summary=optional_path("GITHUB_STEP_SUMMARY"),
            runner_os=(env.get("RUNNER_OS", "").strip() or "Linux"),
            token=env.get("GITHUB_TOKEN", "").strip() or None,
        )

    @property
    def repository_url(self) -> str:
        return f"{self.server_url.rstrip('/')}/{self.repository}"


@dataclass(frozen=True)
class PullRequestEvent:
    action: str
    number: int
    base_sha: str
    head_sha: str
    base_ref: str
    draft: bool
    fork: bool  # the head lives in another repository: the token is read-only


@dataclass(frozen=True)
class CommentEvent:
    action: str
    number: int
    on_pull_request: bool
    comment_id: int
    body: str
    login: str
    user_type: str  # "User" or "Bot"


@dataclass(frozen=True)
class PushEvent:
    sha: str
    ref: str
    default_branch: str

    @property
    def on_default_branch(self) -> bool:
        return self.ref == f"refs/heads/{self.default_branch}"


@dataclass(frozen=True)
class WorkflowRunEvent:
    """A finished run of another workflow, as GitHub describes it (never the artifact).

    ``head_repository`` is None when the fork was deleted; fork runs have no
    ``pull_requests`` in the payload, so the pull request is looked up through the API.
    """

    action: str  # "completed" (also "requested", "in_progress")
    run_id: int
    triggering_event: str  # the event of that run: "pull_request", "push", ...
    conclusion: str  # "success", "failure", "cancelled", ... ("" while running)
    head_sha: str
    head_branch: str
    head_repository: str | None  # owner/name of the repository the head lives in
    head_owner: str  # its owner's login, for the API's `head=owner:branch` filter
    repository: str  # where that run ran: the base repository


@dataclass(frozen=True)
class OtherEvent:
    name: str


Event = PullRequestEvent | CommentEvent | PushEvent | WorkflowRunEvent | OtherEvent


def read_event(env: ActionEnv) -> Event:
    """The event payload at ``GITHUB_EVENT_PATH``, parsed for ``GITHUB_EVENT_NAME``."""
    try:
        payload = json.loads(env.event_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInputError(f"cannot read the event payload {env.event_path}: {exc}") from exc
    if not isinstance(payload, dict):
        raise BadInputError(f"the event payload {env.event_path} is not a JSON object")
    try:
        return _parse(env, payload)
    except (KeyError, TypeError, ValueError) as exc:
        raise BadInputError(f"the {env.event_name} payload in {env.event_path} lacks "
                            f"{exc}: is GITHUB_EVENT_NAME right?") from exc


def _parse(env: ActionEnv, payload: dict[str, Any]) -> Event:
    name = env.event_name
    if name in ("pull_request", "pull_request_target"):
        pull = payload["pull_request"]
        head_repo = (pull["head"].get("repo") or {}).get("full_name")
        return PullRequestEvent(
            action=str(payload.get("action", "")), number=int(pull["number"]),
            base_sha=str(pull["base"]["sha"]), head_sha=str(pull["head"]["sha"]),
            base_ref=str(pull["base"]["ref"]), draft=bool(pull.get("draft", False)),
            fork=head_repo != pull["base"]["repo"]["full_name"])
    if name == "issue_comment":
        issue, comment = payload["issue"], payload["comment"]
        user = comment.get("user") or {}
        return CommentEvent(
            action=str(payload.get("action", "")), number=int(issue["number"]),
            on_pull_request=bool(issue.get("pull_request")), comment_id=int(comment["id"]),
            body=str(comment.get("body") or ""), login=str(user.get("login", "")),
            user_type=str(user.get("type", "User")))
    if name in ("push", "workflow_dispatch"):
        sha = payload.get("after") if name == "push" else None
        sha = sha or env.sha
        ref = payload.get("ref") or env.ref
        if not sha or not ref:
            raise KeyError("the pushed SHA and ref (GITHUB_SHA, GITHUB_REF)")
        default = (payload.get("repository") or {}).get("default_branch") or "main"
        return PushEvent(sha=str(sha), ref=str(ref), default_branch=str(default))
    if name == "workflow_run":
        return _workflow_run(payload)
    return OtherEvent(name)


def _workflow_run(payload: dict[str, Any]) -> WorkflowRunEvent:
    run = payload["workflow_run"]
    head_repo = run.get("head_repository") or {}
    return WorkflowRunEvent(
        action=str(payload.get("action", "")), run_id=int(run["id"]),
        triggering_event=str(run["event"]), conclusion=str(run.get("conclusion") or ""),
        head_sha=str(run["head_sha"]), head_branch=str(run.get("head_branch") or ""),
        head_repository=str(head_repo["full_name"]) if head_repo.get("full_name") else None,
        head_owner=str((head_repo.get("owner") or {}).get("login", "")),
        repository=str(run["repository"]["full_name"]))


@dataclass(frozen=True)
class SlashCommand:
    verb: str  # refresh | search | explain | help, or what the commenter typed
    argument: str

    @property
    def known(self) -> bool:
        needs_argument = self.verb in ("search", "explain")
        return (self.verb in ("refresh", "help") or needs_argument) and (
            bool(self.argument) or not needs_argument)


def parse_command(body: str) -> SlashCommand | None:
    """The ``/pr-context VERB ARGUMENT`` on the comment's first line that has text."""
    first = next((line.strip() for line in body.splitlines() if line.strip()), "")
    words = first.split(maxsplit=2)
    if not words or words[0].lower() != COMMAND_PREFIX:
        return None
    verb = words[1].lower() if len(words) > 1 else "help"
    argument = words[2].strip() if len(words) > 2 else ""
    return SlashCommand(verb, argument)
