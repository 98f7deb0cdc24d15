"""How many text windows a one-line edit changes: content-defined windows against fixed ones.

Config and plain-text files are indexed as line windows (``pr_context.parse.text``). A
window whose text changes is embedded again, by an index update and by every review of
the change. With windows of a fixed 40 lines, a line added near the top of a file shifts
every window below it; windows that end before an anchor line (chosen by the line's own
text) shift only around the edit. This script takes every config and text file that the
index would read in each repository, adds one line at ``--insertions`` random places
(seeded), and counts the windows of the edited file whose text no window of the original
had, under both rules; it also counts the windows each rule makes of the unedited files.

    python evals/bench_windows.py --doc docs/text-windows.md

The repositories default to the corpora ``evals/bench_index.py`` prepares under
``evals/.cache/repos`` (run it once first); ``--repo PATH`` names others (any git work tree).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from pr_context.languages import language_for_path
from pr_context.parse.text import MIN_WINDOW_LINES, WINDOW_LINES, window_texts
from pr_context.policy import policy_from_config, skip_reason_for_content, skip_reason_for_path

CACHE = Path(__file__).parent / ".cache" / "repos"
DEFAULT_REPOS = ("django", "sphinx", "werkzeug")
WINDOWED = frozenset({"yaml", "toml", "ini", "json", "text"})
ADDED_LINE = '    "added-dependency>=1.0",'
MIN_LINES = 60  # shorter files fit in two windows whatever the rule


@dataclass
class Figures:
    """One repository's counts under one rule."""

    files: int = 0
    windows: int = 0
    edits: int = 0
    changed: int = 0  # windows of edited files that the original did not have


def windowed_files(repo: Path) -> list[str]:
    """The texts of the repository's config and text files the index reads."""
    listed = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], check=True,
                            capture_output=True).stdout.decode().split("\0")
    policy = policy_from_config(None)
    texts = []
    for path in listed:
        file = repo / path
        if not path or language_for_path(path) not in WINDOWED or not file.is_file():
            continue
        data = file.read_bytes()
        if skip_reason_for_path(policy, path, len(data)) or skip_reason_for_content(
                policy, path, data):
            continue
        texts.append(data.decode("utf-8", "replace"))
    return texts


def measure(texts: list[str], shortest: int, insertions: int, seed: int) -> Figures:
    figures, rng = Figures(), random.Random(seed)
    for text in texts:
        before = window_texts(text, shortest)
        figures.files += 1
        figures.windows += len(before)
        lines = text.split("\n")
        if len(lines) < MIN_LINES:
            continue
        for _ in range(insertions):
            at = rng.randrange(len(lines))
            edited = "\n".join([*lines[:at], ADDED_LINE, *lines[at:]])
            figures.edits += 1
            figures.changed += len(set(window_texts(edited, shortest)) - set(before))
    return figures


def report(rows: list[tuple[str, Figures, Figures]], insertions: int, seed: int) -> str:
    lines = [
        "# Text windows: what a one-line edit changes",
        "",
        "Written by `evals/bench_windows.py`; do not edit by hand. Reproduce:",
        "",
        "```sh",
        f"python evals/bench_windows.py --insertions {insertions} --seed {seed} "
        "--doc docs/text-windows.md",
        "```",
        "",
        "Config and plain-text files (YAML, TOML, INI, JSON, text) are indexed as line "
        f"windows of at most {WINDOW_LINES} lines. *Fixed*: windows of {WINDOW_LINES} "
        f"lines from the top of the file. *Anchored* (the rule in use): past "
        f"{MIN_WINDOW_LINES} lines, a window ends before an anchor line, chosen by its own "
        "text. Each file of at least "
        f"{MIN_LINES} lines gets one line added at {insertions} random places (one at a "
        "time); *changed per edit* counts the windows of the edited file whose text the "
        "original's windows did not have: what an update or a review embeds again.",
        "",
        "| repository | files | edits | windows, fixed | windows, anchored | changed per edit, "
        "fixed | changed per edit, anchored |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, fixed, anchored in rows:
        lines.append(f"| {name} | {fixed.files:,} | {fixed.edits:,} | {fixed.windows:,} | "
                     f"{anchored.windows:,} | {_per_edit(fixed)} | {_per_edit(anchored)} |")
    return "\n".join(lines) + "\n"


def _per_edit(figures: Figures) -> str:
    return f"{figures.changed / figures.edits:.2f}" if figures.edits else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, action="append",
                        help="a git work tree (repeatable; default: the bench_index corpora)")
    parser.add_argument("--insertions", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--doc", type=Path, help="write the report here")
    args = parser.parse_args(argv)
    repos = args.repo or [CACHE / name for name in DEFAULT_REPOS]
    missing = [str(r) for r in repos if not (r / ".git").exists()]
    if missing:
        parser.error(f"not a git work tree: {', '.join(missing)} "
                     "(python evals/bench_index.py prepares the default corpora)")
    rows = []
    for repo in repos:
        texts = windowed_files(repo)
        rows.append((repo.name, measure(texts, WINDOW_LINES, args.insertions, args.seed),
                     measure(texts, MIN_WINDOW_LINES, args.insertions, args.seed)))
    text = report(rows, args.insertions, args.seed)
    print(text)
    if args.doc:
        args.doc.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
