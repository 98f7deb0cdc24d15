"""The ``workflow_run`` publisher: posts the review a pull request's own run could not.

A fork's ``pull_request`` run has a read-only token: it reviews, writes its step summary
and annotations, and uploads its artifact, but cannot comment. When it completes, the
publisher workflow runs from the default branch with a token that can, and this module
posts the comment. That run is the classic "pwn request" surface, so it trusts only the
event payload and the API, never the artifact:

1. The pull request is the one open pull request the API lists for the run's head
   (``head=<owner>:<branch>``) whose head SHA and head repository are the run's and
   whose base repository is this one; none, or more than one, and nothing is posted.
   A PR number in the artifact is never read.
2. The artifact is listed and downloaded through the API, read in memory within fixed
   caps (``artifact``), and its ``evidence.json`` validated against a strict schema
   (``evidence``) that also requires this repository and the run's head SHA.
3. The comment is rendered with pr-context's own templates, everything escaped as for
   any review, and posted as the one sticky comment (``sticky``): same marker, same
   authorship rules, so a same-repository PR's comment is updated, never doubled.

Nothing from the pull request is checked out or executed, and no index or model is
needed.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable

from pr_context.action.artifact import DEFAULT_LIMITS, evidence_member
from pr_context.action.events import ActionEnv, WorkflowRunEvent
from pr_context.action.evidence import parse_evidence, report_from_evidence
from pr_context.action.github import ArtifactInfo, GitHubClient
from pr_context.action.outputs import append_summary
from pr_context.action.settings import ActionRun, ActionSettings
from pr_context.action.sticky import post_review
from pr_context.errors import ArtifactError, BadInputError, ReadOnlyTokenError
from pr_context.render import headline
from pr_context.report import Report

__all__ = ["ARTIFACT_PREFIX", "publish_review", "publishable"]

ARTIFACT_PREFIX = "pr-context-"  # action.yml names it pr-context-<job>-<matrix index>
_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def publishable(event: WorkflowRunEvent) -> bool:
    """A finished run of a pull_request event: the only kind there is a review of."""
    return event.action == "completed" and event.triggering_event == "pull_request"


def publish_review(event: WorkflowRunEvent, settings: ActionSettings, env: ActionEnv,
                   client_for: Callable[[], GitHubClient], record: ActionRun) -> None:
    """Post the review of the pull request ``event``'s run was for, or say why not.

    :raises ArtifactError: the artifact was refused (nothing is posted).
    """
    why = _why_not(event, env, settings)
    if why:
        _skip(record, env, why)
        return
    if env.token is None:
        raise BadInputError("GITHUB_TOKEN is not set: the publisher needs a token with "
                            "actions: read and pull-requests: write")
    try:
        _publish(event, settings, env, client_for(), record)
    except ReadOnlyTokenError as exc:
        record.fail(f"{exc}: give the publisher job `actions: read` and "
                    "`pull-requests: write` (docs/action.md, Fork pull requests)")


def _why_not(event: WorkflowRunEvent, env: ActionEnv, settings: ActionSettings) -> str:
    if not publishable(event):
        return (f"a {event.action or 'unnamed'} workflow_run of a "
                f"{event.triggering_event or 'unknown'} event has no review to post")
    if event.repository.casefold() != env.repository.casefold():
        return f"that run belongs to {event.repository}, not {env.repository}"
    if event.head_repository is None or not event.head_owner or not event.head_branch:
        return "the run's head repository or branch is gone (a deleted fork?)"
    if not _SHA.fullmatch(event.head_sha):
        return "the run's head_sha is not a commit SHA"
    if settings.comment == "off":
        return "comment: off"
    return ""


def _skip(record: ActionRun, env: ActionEnv, why: str) -> None:
    record.outcome = f"skipped: {why}"
    record.note("notice", f"nothing posted: {why}")
    append_summary(env.step_summary, f"## pr-context publisher\n\nNothing posted: {why}.\n")


def _publish(event: WorkflowRunEvent, settings: ActionSettings, env: ActionEnv,
             client: GitHubClient, record: ActionRun) -> None:
    number = _pull_request(client, event, env, record)
    if number is None:
        return
    raw = _evidence(client, event, env, record)
    if raw is None:
        return
    report = _report(raw, event, env, settings)
    record.outputs.update({"test-selection": json.dumps(list(report.test_selection)),
                           "changed-symbols": str(len(report.symbols))})
    post_review(client, number, report, settings.comment_when_empty, record)
    record.outcome = f"published #{number}" if record.comment_url else f"not posted on #{number}"
    append_summary(env.step_summary, _summary(number, event, report, record))


def _pull_request(client: GitHubClient, event: WorkflowRunEvent, env: ActionEnv,
                  record: ActionRun) -> int | None:
    """The one open PR whose head is the run's head, found through the API."""
    run = client.workflow_run(event.run_id)
    if run.event != "pull_request" or run.head_sha != event.head_sha \
            or not _same(run.head_repository, event.head_repository):
        _skip(record, env, f"the API describes run {event.run_id} differently from the event")
        return None
    head = f"{event.head_owner}:{event.head_branch}"
    matching = [p.number for p in client.open_pulls_from(event.head_owner, event.head_branch)
                if p.head_sha == event.head_sha and _same(p.head_repository,
                                                          event.head_repository)
                and _same(p.base_repository, env.repository)]
    if len(matching) == 1:
        return matching[0]
    if matching:
        _skip(record, env, f"{len(matching)} open pull requests have head {head} at "
                           f"{event.head_sha[:12]}, so which one this review is for is unclear")
    else:
        _skip(record, env, f"no open pull request into {env.repository} has head {head} at "
                           f"{event.head_sha[:12]} (it moved on to a newer commit, or closed)")
    return None


def _same(left: str | None, right: str | None) -> bool:
    return left is not None and right is not None and left.casefold() == right.casefold()


def _evidence(client: GitHubClient, event: WorkflowRunEvent, env: ActionEnv,
              record: ActionRun) -> bytes | None:
    """evidence.json of the run's pr-context artifact, or None when there is none."""
    artifact = _artifact(client, event, record)
    if artifact is None:
        _skip(record, env, f"run {event.run_id} uploaded no pr-context artifact (cancelled, "
                           "expired, or the action did not run)")
        return None
    if artifact.head_sha not in (None, event.head_sha):
        raise ArtifactError(f"artifact {artifact.id} was uploaded for another head commit")
    if artifact.size_in_bytes > DEFAULT_LIMITS.zip_bytes:
        raise ArtifactError(f"the artifact is {artifact.size_in_bytes:,} bytes, over the "
                            f"{DEFAULT_LIMITS.zip_bytes:,}-byte cap: not downloaded")
    member = evidence_member(client.download_artifact(artifact.id, DEFAULT_LIMITS.zip_bytes))
    if member is None:
        _skip(record, env, f"the artifact of run {event.run_id} has no evidence.json (that run "
                           "reviewed nothing: a draft, or it failed before the review)")
    return member


def _artifact(client: GitHubClient, event: WorkflowRunEvent,
              record: ActionRun) -> ArtifactInfo | None:
    found = sorted((a for a in client.run_artifacts(event.run_id)
                    if a.name.startswith(ARTIFACT_PREFIX) and not a.expired),
                   key=lambda a: a.name)
    if len(found) > 1:
        record.note("notice", f"run {event.run_id} has {len(found)} pr-context artifacts "
                              "(a matrix?): publishing the first by name")
    return found[0] if found else None


def _report(raw: bytes, event: WorkflowRunEvent, env: ActionEnv,
            settings: ActionSettings) -> Report:
    """The validated report, with this run's settings and, for forks, a caveat first."""
    report = report_from_evidence(parse_evidence(raw), env.repository, event.head_sha)
    notes = report.notes
    if not _same(event.head_repository, env.repository):
        notes = (f"Computed by the fork's own pull_request run ({event.run_id}), which the "
                 "fork can change: weigh it as you weigh the pull request's code.", *notes)
    return dataclasses.replace(report, top_k=settings.top_k, link_base=env.repository_url,
                               notes=notes)


def _summary(number: int, event: WorkflowRunEvent, report: Report, record: ActionRun) -> str:
    done = f"Posted on #{number}" if record.comment_url else f"Nothing posted on #{number}"
    return (f"## pr-context publisher\n\n{done}: the review of `{event.head_sha[:12]}` from "
            f"run {event.run_id}. {headline(report)}.\n")
