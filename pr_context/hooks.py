"""git hooks that keep an index up to date: ``pr-context hook install``.

After a commit, a checkout or a merge the hook starts ``pr-context index`` in the
background (the commit returns at once) on the revision git just moved to, updating
the index incrementally. A hook that is not pr-context's is never overwritten: with
``chain`` it is kept under another name and run first, its exit status passed on;
without, nothing is changed and the error says so.
"""

from __future__ import annotations

import shlex
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from pr_context.embed import SentenceTransformerEmbedder
from pr_context.errors import BadInputError, IndexFileError
from pr_context.git import Repository, hooks_dir
from pr_context.index.build import NO_MODEL, IndexOptions, IndexResult, build_index
from pr_context.pipeline import existing_model
from pr_context.progress import Progress

__all__ = ["CHAINED_SUFFIX", "HOOK_MARKER", "HOOK_NAMES", "InstalledHook", "install_hooks",
           "update_index"]

HOOK_NAMES = ("post-commit", "post-checkout", "post-merge")
HOOK_MARKER = "# pr-context index hook v1"
CHAINED_SUFFIX = ".pr-context-chained"
LOG_NAME = "hook.log"  # beside the index file: what the background updates said
LOCK_RETRIES = 60  # a reader holds the file for milliseconds; another update for seconds
LOCK_WAIT_S = 0.5


@dataclass(frozen=True)
class InstalledHook:
    name: str
    path: Path
    chained: Path | None  # the user's own hook, now run first


def install_hooks(repo: Repository, db: Path, python: str, chain: bool) -> list[InstalledHook]:
    """Write the hooks; every hook is checked before any is written.

    :raises BadInputError: a hook of the user's exists and ``chain`` is False, or its
        chained name is taken.
    """
    directory = hooks_dir(repo)
    theirs = [name for name in HOOK_NAMES if _is_users(directory / name)]
    if theirs and not chain:
        raise BadInputError(
            f"{', '.join(theirs)} hook(s) already exist in {directory} and are not "
            "pr-context's; nothing was changed. Rerun with --chain to keep them (run "
            "first, their exit status kept) and add the index update after them")
    taken = [n for n in theirs if (directory / (n + CHAINED_SUFFIX)).exists()]
    if taken:
        raise BadInputError(f"cannot chain {', '.join(taken)}: {CHAINED_SUFFIX} copies "
                            "exist already; remove them first. Nothing was changed")
    directory.mkdir(parents=True, exist_ok=True)
    installed = []
    for name in HOOK_NAMES:
        hook, chained = directory / name, None
        if name in theirs:
            chained = directory / (name + CHAINED_SUFFIX)
            hook.rename(chained)
        elif (directory / (name + CHAINED_SUFFIX)).exists():
            chained = directory / (name + CHAINED_SUFFIX)  # chained by an earlier install
        hook.write_text(_script(repo, db, python, chained), encoding="utf-8")
        hook.chmod(hook.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        installed.append(InstalledHook(name, hook, chained))
    return installed


def update_index(repo: Repository, db: Path, progress: Progress) -> IndexResult | None:
    """Bring ``db`` to HEAD with the settings it was built with (its model, or none);
    None when there is no index to update (the hooks never build one from scratch)."""
    if not db.is_file():
        return None
    model = existing_model(db)
    embedder = None if model in (None, NO_MODEL) else SentenceTransformerEmbedder(model)
    for attempt in range(LOCK_RETRIES):
        try:
            return build_index(repo, "HEAD", db, IndexOptions(), embedder, progress)
        except IndexFileError as exc:
            if "in use by another process" not in str(exc) or attempt == LOCK_RETRIES - 1:
                raise
            time.sleep(LOCK_WAIT_S)  # a reader (the MCP server) holds it for a moment
    return None


def _is_users(hook: Path) -> bool:
    if not hook.exists() and not hook.is_symlink():
        return False
    try:
        return HOOK_MARKER not in hook.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True  # unreadable: certainly not ours to replace


def _script(repo: Repository, db: Path, python: str, chained: Path | None) -> str:
    log = db.parent / LOG_NAME
    run_chained = ("" if chained is None else
                   f'{shlex.quote(str(chained))} "$@" || status=$?\n')
    update = " ".join(shlex.quote(part) for part in (
        python, "-m", "pr_context", "hook", "update", "--repo", str(repo.path),
        "--db", str(db)))
    return (
        "#!/bin/sh\n"
        f"{HOOK_MARKER}: updates the index in the background.\n"
        "# Installed by `pr-context hook install`; delete this file to stop it"
        + (f" (and rename {chained.name} back)" if chained else "") + ".\n"
        "status=0\n"
        f"{run_chained}"
        f"mkdir -p {shlex.quote(str(db.parent))}\n"
        f"( {update} >>{shlex.quote(str(log))} 2>&1 & ) >/dev/null 2>&1\n"
        'exit "$status"\n')
