"""Render the example comments and replies under ``docs/examples/`` from real runs.

Usage (after ``python evals/bench_action.py``, whose clone and base index it reuses)::

    python evals/render_examples.py

- ``sphinx-comment.md``, ``sphinx-summary.md``: the sticky comment and step summary for
  the benchmark's real pull request of sphinx-doc/sphinx, with links to github.com.
- ``sphinx-explain.md``, ``sphinx-search.md``: replies to ``/pr-context explain`` and
  ``/pr-context search`` on that pull request.
- ``help.md``, ``refusal.md``: the help text and the refusal a read-only user gets.
- ``hostile-comment.md``: the comment for a small repository whose docs carry HTML,
  @-mentions, images and stray backticks, rendered inert.

Everything goes through the same functions the action calls; nothing is edited by hand.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

EVALS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(EVALS_DIR.parent))

from evals.bench_action import CACHE_DIR, HEAD, REPOSITORY, parent_of  # noqa: E402
from pr_context.git import open_repository  # noqa: E402
from pr_context.pipeline import (  # noqa: E402
    EmbeddingChoice,
    Searcher,
    default_onnx_cache,
    embedder_for,
)
from pr_context.progress import SilentProgress  # noqa: E402
from pr_context.render import (  # noqa: E402
    render_comment,
    render_explain,
    render_help,
    render_refusal,
    render_search,
    render_summary,
)
from pr_context.review import ReviewOptions, explain, review  # noqa: E402

OUT = EVALS_DIR.parent / "docs" / "examples"
LINKS = f"https://github.com/{REPOSITORY}"
EXPLAIN = "_generate_directives"
SEARCH = "where are autodoc directive options parsed"
HOSTILE_DOC = (
    "# Sessions <img src=x onerror=alert(1)> @octo/admins\n\n"
    "![tracker](http://example.com/p.png) Call `create_session(user, token, retries=3)`.\n"
    "A stray ``` fence and <script>alert(1)</script> for @everyone.\n"
)


def sphinx_examples() -> None:
    repo_path = CACHE_DIR / "sphinx.git"
    db = CACHE_DIR / "index.duckdb"
    if not db.is_file():
        raise SystemExit("run evals/bench_action.py first: it builds the clone and index")
    repo = open_repository(repo_path)
    base = parent_of(repo_path, HEAD)
    embedder = embedder_for(EmbeddingChoice(None, None, default_onnx_cache(os.environ)), False, db,
                            lambda _: None)
    options = ReviewOptions(link_base=LINKS)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        report = review(repo, base, HEAD, db, work, embedder, SilentProgress(), options)
        _write("sphinx-comment.md", render_comment(report))
        _write("sphinx-summary.md", render_summary(report))
        found = explain(repo, base, HEAD, db, work, EXPLAIN, embedder, SilentProgress(),
                        options)
        _write("sphinx-explain.md",
               render_explain(found.symbol, base, found.head, LINKS, found.others))
        searcher = Searcher(embedder, SilentProgress())
        outcome = searcher.search(searcher.corpus(repo, HEAD, work / "head-index.duckdb"),
                                  SEARCH, 10)
        _write("sphinx-search.md", render_search(SEARCH, outcome.hits, outcome.message,
                                                 HEAD, LINKS))


def hostile_example() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "repo"
        files = {
            "shop/__init__.py": "",
            "shop/session.py": "def create_session(user, token, retries=3):\n"
                               "    return (user, token, retries)\n",
            "docs/sessions.md": HOSTILE_DOC,
        }
        for path, text in files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text, encoding="utf-8")
        base = _commit(root, "base")
        (root / "shop/session.py").write_text(
            "def create_session(user, token):\n    return (user, token)\n", encoding="utf-8")
        head = _commit(root, "drop retries")
        report = review(open_repository(root), base, head, Path(scratch) / "index.duckdb",
                        Path(scratch) / "out", None, SilentProgress(),
                        ReviewOptions(link_base="https://github.com/octo/shop"))
        _write("hostile-comment.md", render_comment(report))


def _commit(root: Path, message: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "example", "GIT_AUTHOR_EMAIL": "e@example.com",
           "GIT_COMMITTER_NAME": "example", "GIT_COMMITTER_EMAIL": "e@example.com",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    if not (root / ".git").exists():
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=root, check=True, env=env)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, check=True, env=env,
                          capture_output=True, text=True).stdout.strip()


def _write(name: str, text: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / name).write_text(text, encoding="utf-8")
    print(f"wrote {OUT / name}")


def main() -> int:
    _write("help.md", render_help())
    _write("refusal.md", render_refusal("reader", "read"))
    hostile_example()
    sphinx_examples()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
