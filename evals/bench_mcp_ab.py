"""Benchmark: the overlay's cost, two versions of the MCP server side by side.

Usage::

    python evals/bench_mcp_ab.py --work TREE --baseline /path/to/other/checkout

Two ``pr-context mcp`` processes over stdio, through the MCP SDK's client, on one work
tree and its index (``TREE/.pr-context/index.duckdb``, built beforehand): one runs this
checkout's code, one the code at ``--baseline`` (another checkout of pr-context, such
as main's worktree). Each round, for each size, both are timed on a search with the
tree as it is (``clean``), then ``bench_mcp.py``'s edit (a function appended to each of
that many production files), then both on their first search after it and again
(cached); the order of the two alternates between rounds, so on a shared machine the
load falls on both alike. The edits are undone after each round. Prints medians; raw
figures in ``evals/out/bench_mcp_ab.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import StdioServerParameters
from mcp.client import Client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mcp import ROOT, _edit, _production_files, _timed, overlay_row

OUT_JSON = ROOT / "evals" / "out" / "bench_mcp_ab.json"
QUERY = {"query": "render the overlay marker"}


def _server(work: Path, db: Path, code: Path) -> StdioServerParameters:
    """The server of the checkout at ``code`` (run from it, so that it imports its own)."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "pr_context", "mcp", "--repo", str(work), "--db", str(db)],
        env={**os.environ, "PYTHONPATH": str(code)}, cwd=str(code))


async def run(work: Path, db: Path, codes: dict[str, Path], sizes: list[int],
              rounds: int) -> dict[str, dict[str, list[float]]]:
    files = _production_files(work)
    figures: dict[str, dict[str, list[float]]] = {}
    async with Client(_server(work, db, codes["baseline"])) as base, \
            Client(_server(work, db, codes["this"])) as this:
        clients = {"baseline": base, "this": this}
        for client in clients.values():
            await client.call_tool("search_code", {"query": "warm up the index and the model"})
        for number in range(rounds):
            order = list(clients) if number % 2 == 0 else list(reversed(clients))
            for size in sizes:
                await _round(work, files[:size], f"ab{number}_{size}", order, clients,
                             figures, size)
    return figures


async def _round(work: Path, files: list[Path], tag: str, order: list[str],
                 clients: dict[str, Client], figures: dict[str, dict[str, list[float]]],
                 size: int) -> None:
    entries = {n: figures.setdefault(f"{n}/{size}", {"clean": [], "first": [], "cached": []})
               for n in order}
    for name in order:
        entries[name]["clean"].append(await _timed(clients[name], "search_code", QUERY))
    _edit(work, files, f"{tag}_{time.time_ns()}")
    try:
        for stage in ("first", "cached"):
            for name in order:
                entries[name][stage].append(await _timed(clients[name], "search_code", QUERY))
    finally:
        subprocess.run(["git", "-C", str(work), "checkout", "--quiet", "--", "."], check=True)


def report(figures: dict[str, dict[str, list[float]]]) -> list[str]:
    lines = ["| server | dirty files | clean | first | cached | first - clean |",
             "|---|---|---|---|---|---|"]
    return lines + [overlay_row(key, entry, code=False) for key, entry in figures.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="a work tree, indexed")
    parser.add_argument("--db", type=Path, help="its index (default TREE/.pr-context/...)")
    parser.add_argument("--baseline", type=Path, required=True,
                        help="another checkout of pr-context to compare with")
    parser.add_argument("--sizes", default="1,10", help="dirty files per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    work = args.work.resolve()  # the servers run from their own checkouts
    db = (args.db or work / ".pr-context" / "index.duckdb").resolve()
    load_before = os.getloadavg()
    figures = anyio.run(run, work, db, {"baseline": args.baseline.resolve(), "this": ROOT},
                        [int(s) for s in args.sizes.split(",")], args.rounds)
    out: dict[str, Any] = {"load_before": load_before, "load_after": os.getloadavg(),
                           "seconds": figures}
    OUT_JSON.parent.mkdir(parents=True, exist_ok=True)
    OUT_JSON.write_text(json.dumps(out, indent=2) + "\n")
    print(f"load average before {load_before}, after {out['load_after']}")
    print("\n".join(report(figures)))


if __name__ == "__main__":
    main()
