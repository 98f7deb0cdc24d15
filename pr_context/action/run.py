"""``pr-context action``: one GitHub Actions event in; evidence, outputs and one comment out.

- ``pull_request``: review base..head, write the step summary and outputs, then create
  or update the one sticky comment (found by its marker and the bot's authorship). A
  result for a head the PR has moved past is not posted: the newer run will post.
- ``issue_comment``: ``/pr-context refresh|search|explain|help`` from a collaborator with
  write access (asked of the API), acknowledged with a reaction and answered in a reply;
  anyone else is refused visibly; bots and the bot's own comments are ignored.
- ``push`` / ``workflow_dispatch``: index that commit, warming the cache for later PRs.
- ``workflow_run`` (completed, of a ``pull_request`` run): publish that run's review on
  its pull request (``publish``), for forks whose own run could not comment.

Findings a reviewer must see on the diff are printed as annotations (``annotations``);
they need no token, so a fork's run shows them too.

Everything the run did is also written to ``OUT/action-report.json``. Nothing in the
repository is executed; configuration is read from the base revision.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

from pr_context.action.annotations import finding_annotations
from pr_context.action.events import (
    PULL_REQUEST_ACTIONS,
    ActionEnv,
    CommentEvent,
    PullRequestEvent,
    PushEvent,
    SlashCommand,
    WorkflowRunEvent,
    parse_command,
    read_event,
)
from pr_context.action.github import WRITE_PERMISSIONS, GitHubClient, RetryPolicy
from pr_context.action.outputs import append_summary, write_outputs
from pr_context.action.publish import publish_review, publishable
from pr_context.action.settings import ActionRun, ActionSettings
from pr_context.action.sticky import post_review
from pr_context.coverage import CoverageInput
from pr_context.embed import DEFAULT_MODEL, Embedder
from pr_context.embed_onnx import GRAPH_VERSIONS
from pr_context.errors import (
    ArtifactError,
    BadInputError,
    GitError,
    GitHubApiError,
    ReadOnlyTokenError,
)
from pr_context.git import (
    Repository,
    commit_exists,
    fetch,
    has_remote,
    merge_base,
    open_repository,
    read_file_at,
)
from pr_context.graph import store_graph
from pr_context.index.build import NO_MODEL, IndexOptions, build_index
from pr_context.index.schema import SCHEMA_VERSION
from pr_context.models import Sha
from pr_context.parse import PARSER_VERSION
from pr_context.pipeline import EmbeddingChoice, Searcher, embedder_for
from pr_context.policy import CONFIG_PATH
from pr_context.progress import Progress
from pr_context.render import (
    COMMENT_MARKER,
    REPLY_MARKER,
    render_explain,
    render_help,
    render_message,
    render_refusal,
    render_search,
    render_summary,
)
from pr_context.report import Report
from pr_context.retrieve.lexical import LEXICAL_VERSION
from pr_context.review import ReviewOptions, explain, index_pair, review, write_review

__all__ = ["API_RETRY", "REPORT_NAME", "index_fingerprint", "prepare", "run_action"]

REPORT_NAME = "action-report.json"
# Said in the step summary of a run whose token could not comment.
_PUBLISHER_HINT = """
### The comment

This run's token cannot comment on the pull request (a fork's token is read-only), so
the review is this summary, the annotations on the diff and the `pr-context-*`
artifact. When the repository has the pr-context **publisher** workflow, its run posts
the comment from this artifact a minute after this run ends. To install it, add
`.github/workflows/pr-context-publish.yml` to the default branch, as in pr-context's
README (quick start) and docs/action.md ("Fork pull requests").
"""
SEARCH_RESULTS = 10
API_RETRY = RetryPolicy()
API_THROTTLE = True  # PyGithub's pauses between requests


# -- prepare: the cache plan ----------------------------------------------------------------


def prepare(settings: ActionSettings, env: ActionEnv) -> dict[str, str]:
    """Outputs for the cache steps and whether the main step has anything to do.

    ``needs-index`` is false where the main step reads no index: the ``workflow_run``
    publisher only reads the other run's artifact, so the index and model caches are
    not restored for it.
    """
    event = read_event(env)
    base, run, save = "", False, False
    if isinstance(event, WorkflowRunEvent):
        run = publishable(event)
    elif isinstance(event, PullRequestEvent):
        base = event.base_sha
        run = event.action in PULL_REQUEST_ACTIONS and not (event.draft and settings.skip_drafts)
    elif isinstance(event, CommentEvent):
        run = _wants_attention(event)
        if run and env.token:
            base = _client(env).pull(event.number).base_sha
    elif isinstance(event, PushEvent):
        base, run, save = event.sha, True, event.on_default_branch
    prefix = f"pr-context-{env.runner_os}-{index_fingerprint(settings)}-"
    return {"cache-key": prefix + (base or "none"), "cache-restore-prefix": prefix,
            "index-path": str(settings.db), "save-cache": _bool(save), "base-sha": base,
            "run": _bool(run),
            "needs-index": _bool(run and not isinstance(event, WorkflowRunEvent))}


def index_fingerprint(settings: ActionSettings) -> str:
    """What makes an index file reusable: schema, parser, lexical terms, embedding model
    and backend (the graph recipe included; the model's own hash is checked by the
    index's manifest, which re-embeds when it differs)."""
    model = (settings.model or DEFAULT_MODEL) if settings.embeddings else NO_MODEL
    backend = settings.backend if settings.embeddings else NO_MODEL
    text = (f"schema={SCHEMA_VERSION};parser={PARSER_VERSION};model={model};"
            f"backend={backend};graph={GRAPH_VERSIONS.get(backend, '-')};lexical={LEXICAL_VERSION}")
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _embedder(settings: ActionSettings, progress: Progress) -> Embedder | None:
    """The input's model run by the input's backend (the cache key names both)."""
    choice = EmbeddingChoice(settings.model or DEFAULT_MODEL, settings.backend,
                             settings.onnx_cache)
    return embedder_for(choice, not settings.embeddings, settings.db, progress.warn)


def _wants_attention(event: CommentEvent) -> bool:
    return (event.action == "created" and event.on_pull_request
            and parse_command(event.body) is not None and not _by_a_bot(event))


def _by_a_bot(event: CommentEvent) -> bool:
    return event.user_type == "Bot" or event.login.endswith("[bot]")


def _bool(value: bool) -> str:
    return "true" if value else "false"


# -- run ------------------------------------------------------------------------------------


def run_action(settings: ActionSettings, env: ActionEnv, progress: Progress) -> ActionRun:
    """Handle the event; files, outputs and the report are written even when it fails."""
    started = time.perf_counter()
    event = read_event(env)
    record = ActionRun(event=env.event_name)
    try:
        if isinstance(event, PullRequestEvent):
            _on_pull_request(event, settings, env, progress, record)
        elif isinstance(event, CommentEvent):
            _on_comment(event, settings, env, progress, record)
        elif isinstance(event, PushEvent):
            _on_push(event, settings, env, progress, record)
        elif isinstance(event, WorkflowRunEvent):
            publish_review(event, settings, env, lambda: _client(env), record)
        else:
            raise BadInputError(f"pr-context action handles pull_request, issue_comment, "
                                f"push, workflow_dispatch and workflow_run events, not "
                                f"{event.name}")
    except GitHubApiError as exc:  # a failed answer to a command; the review is written
        record.fail(str(exc))
    except ArtifactError as exc:  # another run's artifact, refused: nothing was posted
        record.outcome = "refused: the artifact"
        record.fail(str(exc))
    finally:
        _finish(record, settings, env, time.perf_counter() - started)
    return record


def _finish(record: ActionRun, settings: ActionSettings, env: ActionEnv,
            seconds: float) -> None:
    outputs = {"evidence-path": "", "test-selection": "[]", "run-everything": "false",
               "changed-symbols": "0", "comment-url": record.comment_url, **record.outputs}
    outputs["comment-url"] = record.comment_url
    record.outputs = outputs
    write_outputs(env.output, outputs)
    report = {"event": record.event, "outcome": record.outcome, "outputs": outputs,
              "annotations": [{"level": lv, "message": m} for lv, m in record.annotations],
              "findings": [dataclasses.asdict(a) for a in record.findings],
              "failures": record.failures, "exit_code": record.exit_code,
              "seconds": round(seconds, 3)}
    try:
        settings.out.mkdir(parents=True, exist_ok=True)
        (settings.out / REPORT_NAME).write_text(json.dumps(report, indent=2) + "\n",
                                                encoding="utf-8")
    except OSError as exc:
        raise BadInputError(f"cannot write {settings.out / REPORT_NAME}: {exc}") from exc


# -- pull_request ---------------------------------------------------------------------------


def _on_pull_request(event: PullRequestEvent, settings: ActionSettings, env: ActionEnv,
                     progress: Progress, record: ActionRun) -> None:
    if event.action not in PULL_REQUEST_ACTIONS:
        record.outcome = f"skipped: nothing to review on {event.action!r}"
        record.note("notice", f"pull_request {event.action}: no code changed, nothing to do")
        return
    if event.draft and settings.skip_drafts:
        record.outcome = "skipped: draft"
        record.note("notice", f"#{event.number} is a draft: skipped (skip-drafts); "
                              "it is reviewed when marked ready for review")
        append_summary(env.step_summary, "## pr-context\n\nDraft pull request: skipped.\n")
        return
    report = _review(settings, env, event.number, event.base_sha, event.head_sha,
                     progress, record)
    record.outcome = "reviewed"
    record.findings = finding_annotations(report, settings.annotations,
                                          _workspace_prefix(settings.repo, env.workspace))
    if settings.comment == "sticky":
        _post_sticky(report, event.number, settings, env, record, fork=event.fork)
    _check_fail_on(report, settings, record)


@dataclass(frozen=True)
class _PullRevisions:
    """A PR's checkout, ready to review: its own base (the merge base) and options."""

    repo: Repository
    base: Sha
    head: Sha
    options: ReviewOptions


def _pull_revisions(settings: ActionSettings, env: ActionEnv, number: int, base_sha: str,
                    head_sha: str, record: ActionRun) -> _PullRevisions:
    """Fetch what the checkout lacks; review from the merge base, the PR's own changes."""
    repo = open_repository(settings.repo)
    _ensure_commits(repo, env, number, (base_sha, head_sha))
    base = merge_base(repo, Sha(base_sha), Sha(head_sha))
    if base is None:
        record.note("warning", f"no merge base of {base_sha[:12]} and {head_sha[:12]} in "
                               "this checkout (shallow?): reviewing the base tip instead; "
                               "check out with fetch-depth: 0 for the PR's own changes")
        base = Sha(base_sha)
    return _PullRevisions(repo, base, Sha(head_sha),
                          _review_options(settings, env, repo, Sha(base_sha), record))


def _review(settings: ActionSettings, env: ActionEnv, number: int, base_sha: str,
            head_sha: str, progress: Progress, record: ActionRun) -> Report:
    """Review the PR's own changes and publish files and outputs."""
    pull = _pull_revisions(settings, env, number, base_sha, head_sha, record)
    report = review(pull.repo, pull.base, pull.head, settings.db, settings.out,
                    _embedder(settings, progress), progress, pull.options)
    report = dataclasses.replace(report, repository=env.repository)
    if report.coverage_problem:
        record.note("warning", f"coverage-file not used: {report.coverage_problem}")
    outputs = write_review(report, settings.out)
    append_summary(env.step_summary, render_summary(report))
    record.outputs.update({
        "evidence-path": str(outputs.evidence),
        "test-selection": json.dumps(list(report.test_selection)),
        "run-everything": _bool(report.run_everything is not None),
        "changed-symbols": str(len(report.symbols))})
    return report


def _review_options(settings: ActionSettings, env: ActionEnv, repo: Repository,
                    base: Sha, record: ActionRun) -> ReviewOptions:
    config_text = _config_at(repo, base, settings.config)
    # A cache that missed or holds stale data must not fail the review: the review runs
    # without coverage evidence, with a notice (nothing cached yet) or a warning.
    return ReviewOptions(top_k=settings.top_k, link_base=env.repository_url,
                         index_options=IndexOptions(config_text=config_text),
                         coverage=_coverage_input(settings, record), coverage_required=False)


def _coverage_input(settings: ActionSettings, record: ActionRun) -> CoverageInput | None:
    if not settings.coverage_file:
        return None
    path = settings.repo / settings.coverage_file
    if not path.is_file():
        record.note("notice", f"coverage-file {settings.coverage_file} is not there (no "
                              "coverage cached yet?): reviewing without coverage evidence")
        return None
    return CoverageInput(path, settings.coverage_revision or None)


def _config_at(repo: Repository, revision: Sha, path: str) -> str:
    """The config file's text at ``revision`` ("" when absent), never the PR's version."""
    data = read_file_at(repo, revision, path)
    if data is None:
        if path != CONFIG_PATH:
            raise BadInputError(f"config file {path} does not exist at {revision[:12]}")
        return ""
    return data.decode("utf-8", "replace")


def _post_sticky(report: Report, number: int, settings: ActionSettings, env: ActionEnv,
                 record: ActionRun, fork: bool) -> None:
    if env.token is None:
        record.note("warning", "GITHUB_TOKEN is not set: the comment was not posted "
                               "(the step summary, outputs and artifact have everything)")
        append_summary(env.step_summary, _PUBLISHER_HINT)
        return
    try:
        post_review(_client(env), number, report, settings.comment_when_empty, record)
    except ReadOnlyTokenError as exc:
        why = ("This pull request comes from a fork, whose token is read-only, so " if fork
               else "The token may not comment (grant `pull-requests: write`), so ")
        record.note("warning", f"{why}the comment was not posted ({exc}); the step "
                               "summary, outputs and evidence artifact have everything")
        append_summary(env.step_summary, _PUBLISHER_HINT)


def _workspace_prefix(repo: Path, workspace: Path) -> str:
    """The repository's folder inside GITHUB_WORKSPACE, "" or "sub/dir/" (annotations)."""
    try:
        inside = repo.resolve().relative_to(workspace.resolve())
    except ValueError:
        return ""
    return "" if str(inside) == "." else f"{inside.as_posix()}/"


def _check_fail_on(report: Report, settings: ActionSettings, record: ActionRun) -> None:
    if "stale-docs" in settings.fail_on and report.stale_docs:
        record.fail(f"fail-on stale-docs: {report.stale_docs} possibly-stale doc(s)")
    if "callers-not-updated" in settings.fail_on and report.callers_not_updated:
        record.fail(f"fail-on callers-not-updated: {report.callers_not_updated} caller(s) "
                    "still use a removed, renamed or changed signature")


# -- issue_comment --------------------------------------------------------------------------


def _on_comment(event: CommentEvent, settings: ActionSettings, env: ActionEnv,
                progress: Progress, record: ActionRun) -> None:
    command = parse_command(event.body)
    if not _wants_attention(event) or command is None:
        record.outcome = "ignored: not a /pr-context command from a person on a PR"
        return
    if env.token is None:
        raise BadInputError("GITHUB_TOKEN is not set: slash commands need it")
    client = _client(env)
    if event.login == client.bot_login() or REPLY_MARKER in event.body \
            or COMMENT_MARKER in event.body:
        record.outcome = "ignored: the bot's own comment"
        return
    permission = client.permission(event.login)
    if permission not in WRITE_PERMISSIONS:
        client.react(event.number, event.comment_id, "-1")
        client.reply(event.number, render_refusal(event.login, permission))
        record.outcome = f"refused: {event.login} has {permission} permission"
        record.note("notice", f"/pr-context from {event.login} refused: "
                              f"{permission} permission, write needed")
        return
    client.react(event.number, event.comment_id, "eyes")
    record.outcome = f"command: {command.verb}"
    if not command.known or command.verb == "help":
        unknown = None if command.verb == "help" else f"{command.verb} {command.argument}"
        client.reply(event.number, render_help(unknown and unknown.strip()))
        return
    pull = client.pull(event.number)
    if command.verb == "refresh":
        report = _review(settings, env, event.number, pull.base_sha, pull.head_sha,
                         progress, record)
        _post_sticky(report, event.number, settings, env, record, fork=pull.fork)
        return
    body = _answer(command, settings, env, event.number, pull.base_sha, pull.head_sha,
                   progress, record)
    posted = client.reply(event.number, body)
    record.comment_url = posted.url


def _answer(command: SlashCommand, settings: ActionSettings, env: ActionEnv, number: int,
            base_sha: str, head_sha: str, progress: Progress, record: ActionRun) -> str:
    """The reply text for ``search`` or ``explain`` at the PR's head."""
    pull = _pull_revisions(settings, env, number, base_sha, head_sha, record)
    embedder = _embedder(settings, progress)
    if command.verb == "explain":
        try:
            found = explain(pull.repo, pull.base, pull.head, settings.db, settings.out,
                            command.argument, embedder, progress, pull.options)
        except BadInputError as exc:
            return render_message(str(exc))
        return render_explain(found.symbol, pull.base, found.head, env.repository_url,
                              found.others)
    head_db = index_pair(pull.repo, pull.base, pull.head, settings.db, settings.out,
                         embedder, progress, pull.options)
    searcher = Searcher(embedder, progress, pull.options.index_options)
    corpus = searcher.corpus(pull.repo, pull.head, head_db)  # index_pair loaded the model
    outcome = searcher.search(corpus, command.argument, SEARCH_RESULTS)
    return render_search(command.argument, outcome.hits, outcome.message, pull.head,
                         env.repository_url)


# -- push / workflow_dispatch ---------------------------------------------------------------


def _on_push(event: PushEvent, settings: ActionSettings, env: ActionEnv,
             progress: Progress, record: ActionRun) -> None:
    repo = open_repository(settings.repo)
    _ensure_commits(repo, env, None, (event.sha,))
    options = IndexOptions(config_text=_config_at(repo, Sha(event.sha), settings.config))
    result = build_index(repo, event.sha, settings.db, options,
                         _embedder(settings, progress), progress)
    store_graph(settings.db, progress)  # the pull requests' reviews read the base's graph
    how = "updated incrementally" if result.incremental else "built"
    record.outcome = f"indexed {event.sha}"
    append_summary(env.step_summary,
                   f"## pr-context\n\nIndex {how} at `{event.sha[:12]}`: {result.files} "
                   f"files, {result.chunks} chunks, {result.embedded} embedded, "
                   f"{result.reused} reused.\n")
    record.note("notice", f"index {how} at {event.sha[:12]}: {result.files} files")


# -- GitHub and git -------------------------------------------------------------------------


def _client(env: ActionEnv) -> GitHubClient:
    assert env.token is not None
    return GitHubClient(env.token, env.api_url, env.repository, API_RETRY,
                        throttle=API_THROTTLE)


def _ensure_commits(repo: Repository, env: ActionEnv, number: int | None,
                    shas: tuple[str, ...]) -> None:
    """Fetch commits a shallow or single-branch checkout lacks, or explain what to do."""
    missing = [s for s in shas if not commit_exists(repo, s)]
    if not missing:
        return
    refspecs = [missing] + ([[f"+refs/pull/{number}/head:refs/remotes/pull/{number}/head"]]
                            if number is not None else [])
    problem = ""
    for refspec in refspecs:
        try:
            fetch(repo, _remote(repo, env), refspec, _auth_env(env))
        except GitError as exc:
            problem = _scrub(str(exc), env.token)
        if all(commit_exists(repo, s) for s in shas):
            return
    lacking = next(s for s in shas if not commit_exists(repo, s))
    raise BadInputError(f"commit {lacking[:12]} is not in the checkout at {repo.path} and "
                        f"could not be fetched ({problem or 'not on the remote'}): use "
                        "actions/checkout with fetch-depth: 0")


def _remote(repo: Repository, env: ActionEnv) -> str:
    if has_remote(repo, "origin"):
        return "origin"
    return f"{env.server_url.rstrip('/')}/{env.repository}.git"


def _auth_env(env: ActionEnv) -> dict[str, str]:
    """Credentials for the fetch through git's environment: never on a command line."""
    if env.token is None:
        return {}
    basic = base64.b64encode(f"x-access-token:{env.token}".encode()).decode()
    return {"GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": f"http.{env.server_url.rstrip('/')}/.extraheader",
            "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}"}


def _scrub(text: str, token: str | None) -> str:
    return text.replace(token, "***") if token else text
