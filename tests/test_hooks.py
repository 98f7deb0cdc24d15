"""`pr-context hook install`: background index updates that never clobber a user's hook."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from click.testing import CliRunner

from pr_context.cli import cli
from pr_context.git import open_repository
from pr_context.hooks import CHAINED_SUFFIX, HOOK_MARKER, HOOK_NAMES
from pr_context.index.store import IndexStore
from tests.conftest import GitRepo
from tests.mcp_client import serve
from tests.test_mcp import FILES


def _install(repo: GitRepo, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["hook", "install", "--repo", str(repo.path), *extra])
    return result.exit_code, result.output


def _indexed(repo: GitRepo) -> str:
    with IndexStore.open_existing(repo.path / ".pr-context" / "index.duckdb") as store:
        assert store.manifest is not None
        return store.manifest.revision


def _wait_for_index(repo: GitRepo, sha: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if _indexed(repo) == sha:
                return
        except Exception:  # noqa: BLE001 - the background update holds the file for a moment
            pass
        time.sleep(1.0)
    log = repo.path / ".pr-context" / "hook.log"
    raise AssertionError(f"index never reached {sha}: {log.read_text() if log.exists() else ''}")


def test_hooks_update_the_index_after_a_commit(make_repo: Callable[..., GitRepo]) -> None:
    repo = make_repo(FILES)
    serve(repo)
    code, output = _install(repo)
    assert code == 0 and output.count("installed") == len(HOOK_NAMES)
    hooks = open_repository(repo.path).git_dir / "hooks"
    assert all(HOOK_MARKER in (hooks / name).read_text() for name in HOOK_NAMES)
    repo.write("pkg/extra.py", "def extra():\n    pass\n")
    head = repo.commit("extra")
    _wait_for_index(repo, head)
    assert _install(repo)[0] == 0  # installing again replaces only its own hooks


def test_an_existing_hook_is_refused_then_chained(make_repo: Callable[..., GitRepo]) -> None:
    repo = make_repo(FILES)
    serve(repo)
    hooks = open_repository(repo.path).git_dir / "hooks"
    mine = "#!/bin/sh\necho ran >> \"$(git rev-parse --git-dir)/user-hook-ran\"\nexit 3\n"
    (hooks / "post-commit").write_text(mine)
    (hooks / "post-commit").chmod(0o755)
    code, output = _install(repo)
    assert code == 2 and "post-commit hook(s) already exist" in output and "--chain" in output
    assert (hooks / "post-commit").read_text() == mine
    assert not (hooks / "post-merge").exists()  # nothing was changed
    code, output = _install(repo, "--chain")
    assert code == 0 and f"runs post-commit{CHAINED_SUFFIX} first" in output
    assert (hooks / f"post-commit{CHAINED_SUFFIX}").read_text() == mine
    repo.write("pkg/extra.py", "def extra():\n    pass\n")
    repo.commit("extra")
    assert (open_repository(repo.path).git_dir / "user-hook-ran").read_text() == "ran\n"
    assert _install(repo, "--chain")[0] == 0  # again: still chained, never chained twice
    assert f"{CHAINED_SUFFIX}{CHAINED_SUFFIX}" not in " ".join(p.name for p in hooks.iterdir())


@pytest.mark.parametrize("args", [["hook", "update"], ["hook", "install"]])
def test_hook_commands_need_a_repository(tmp_path: object, args: list[str]) -> None:
    result = CliRunner().invoke(cli, [*args, "--repo", str(tmp_path)])
    assert result.exit_code == 2 and "not a git repository" in result.output
