"""The one sticky comment per pull request, whichever run writes it.

The pull_request run posts it when its token can write; the workflow_run publisher posts
it for runs that could not (forks). Both go through ``post_review``, so the rules are
the same: never for a head the pull request has moved past, nothing for an empty review
unless asked, and one comment found by its marker and the bot's authorship, updated in
place.
"""

from __future__ import annotations

from pr_context.action.github import GitHubClient
from pr_context.action.settings import ActionRun
from pr_context.render import COMMENT_MARKER, render_comment
from pr_context.report import Report

__all__ = ["post_review"]


def post_review(client: GitHubClient, number: int, report: Report, comment_when_empty: bool,
                record: ActionRun) -> None:
    """Create or update the sticky comment of #``number`` with ``report``.

    :raises ReadOnlyTokenError: the token may not comment; the caller explains why.
    """
    current = client.pull(number).head_sha
    if current != report.head:
        record.note("notice", f"#{number} moved on to {current[:12]} while this run "
                              f"reviewed {report.head[:12]}: that run will comment")
        return
    if not report.symbols and not comment_when_empty \
            and client.find_sticky(number, COMMENT_MARKER) is None:
        record.note("notice", "no changed symbols: no comment (comment-when-empty)")
        return
    posted = client.upsert_sticky(number, COMMENT_MARKER, render_comment(report))
    record.comment_url = posted.url
    record.note("notice", f"{'created' if posted.created else 'updated'} {posted.url}")
