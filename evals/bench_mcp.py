"""Benchmark: the MCP server on a real repository of about 2,000 files, as clients run it.

Usage::

    python evals/bench_mcp.py                       # clones sphinx-doc/sphinx from GitHub
    python evals/bench_mcp.py --source /path/to/sphinx.git --doc docs/mcp-performance.md

Everything runs against ``pr-context mcp`` as a process over stdio, through the MCP
SDK's client, on sphinx at a pinned commit (2,059 files, nobody here wrote it), indexed
with the default embedding model:

- **initialize**: a fresh process is started and sent ``initialize``; the time until
  its answer arrives (interpreter start and imports included), several times; and the
  time until the answer to the ``tools/list`` sent right after it (the SDK loaded).
- **per tool, model loaded**: after one warm-up search (which loads the index and the
  model), each tool is called on inputs drawn from the index itself: queries are the
  first lines of docstrings, symbols are definitions, picked by a stable hash. Each
  tool's first call (which loads what it needs, such as the symbol graph) is reported
  apart from the percentiles. ``change_impact`` reviews a different commit each call,
  then the last one once more (the server keeps its latest review).
- **overlay**: 1, 10 and 100 production files get a new function appended; a search is
  timed clean, then on the first call after the edit (parse, embed the new chunks,
  splice them into the loaded corpus), then again (cached), rounds interleaved, every
  round with new text. ``find_callers`` likewise (it also rebuilds the symbol graph).

Side effects: a clone, a work tree and its index under ``evals/.cache/bench-mcp/``; raw
figures in ``evals/out/bench_mcp.json``; the report at ``--doc``. The work tree's edits
are undone after each round.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import StdioServerParameters
from mcp.client import Client

EVALS_DIR = Path(__file__).resolve().parent
ROOT = EVALS_DIR.parent
CACHE_DIR = EVALS_DIR / ".cache" / "bench-mcp"
OUT_JSON = EVALS_DIR / "out" / "bench_mcp.json"
REPOSITORY = "sphinx-doc/sphinx"
DEFAULT_SOURCE = f"https://github.com/{REPOSITORY}.git"
REVISION = "e44a40eb2f810558ccd9da1425421270ccb81351"  # master, 2026; 2,059 files
INITIALIZE_RUNS = 7
CALLS_PER_TOOL = 15
OVERLAY_SIZES = (1, 10, 100)
OVERLAY_ROUNDS = 3
TARGET_INITIALIZE_S = 1.0
TARGET_SEARCH_P50_S = 0.3
TARGET_OVERLAY_10_S = 1.0
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "bench", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def prepare(source: str, db_name: str, embeddings: bool) -> Path:
    """A work tree of sphinx at REVISION with its index, made once."""
    work = CACHE_DIR / "sphinx"
    if not (work / ".git").is_dir():
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        _run(["git", "clone", "--quiet", "--no-checkout", source, str(work)])
    _run(["git", "-C", str(work), "checkout", "--quiet", "--force", REVISION])
    _run(["git", "-C", str(work), "clean", "-fdq"])
    # What a user's own `git status` does after a checkout: store the files' stat data
    # once they are older than the index. The server reads git without optional locks, so
    # on a fresh checkout every call would re-read every file (0.1 s a call on sphinx).
    time.sleep(1.1)
    _run(["git", "-C", str(work), "status", "--porcelain"])
    (work / ".git" / "info" / "exclude").write_text(".pr-context/\n")
    db = work / ".pr-context" / db_name
    _run([sys.executable, "-m", "pr_context", "index", "--repo", str(work), "--rev", "HEAD",
          "--db", str(db), "--quiet", *([] if embeddings else ["--no-embeddings"])])
    return work


def time_initialize(work: Path, db: Path) -> tuple[list[float], list[float]]:
    """Seconds from starting ``pr-context mcp`` to its answer to ``initialize``, and to
    its answer to the ``tools/list`` sent after it."""
    initialized, listed = [], []
    for _ in range(INITIALIZE_RUNS):
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "pr_context", "mcp", "--repo", str(work), "--db", str(db)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=_env())
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        initialized.append(time.perf_counter() - started)
        assert answer.get("result", {}).get("serverInfo", {}).get("name") == "pr-context"
        proc.stdin.write(json.dumps(INITIALIZED).encode() + b"\n"
                         + json.dumps(LIST_TOOLS).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline()).get("result", {}).get("tools")
        listed.append(time.perf_counter() - started)
        proc.stdin.close()
        proc.wait(timeout=60)
    return initialized, listed


def inputs(db: Path) -> dict[str, list[str]]:
    """Queries and symbols drawn from the index: docstring first lines, definitions."""
    from pr_context.index.store import IndexStore

    with IndexStore.open_existing(db) as store:
        rows = store.query(
            "SELECT d.qualified_name, d.docstring, d.path FROM definitions d JOIN files f "
            "USING (path) WHERE f.role = 'production' AND d.kind IN ('function', 'method') "
            "ORDER BY d.qualified_name")
    ranked = sorted(rows, key=lambda r: hashlib.sha256(r[0].encode()).hexdigest())
    queries = [doc.strip().splitlines()[0] for _, doc, _ in ranked
               if doc and len(doc.strip().splitlines()[0].split()) >= 4][:CALLS_PER_TOOL]
    symbols = [name for name, _, _ in ranked][:CALLS_PER_TOOL]
    paths = [path for _, _, path in ranked][:CALLS_PER_TOOL]
    return {"queries": queries, "symbols": symbols, "paths": paths}


async def time_tools(work: Path, db: Path,
                     drawn: dict[str, list[str]]) -> dict[str, list[float]]:
    """Seconds per call of each tool, the model loaded, over one stdio session."""
    seconds: dict[str, list[float]] = {}
    async with Client(_server(work, db)) as client:
        await client.call_tool("search_code", {"query": "warm up the index and the model"})
        calls: dict[str, list[dict[str, Any]]] = {
            "search_code": [{"query": q} for q in drawn["queries"]],
            "find_symbol": [{"name": s.rsplit(".", 1)[-1]} for s in drawn["symbols"]],
            "find_callers": [{"symbol": s} for s in drawn["symbols"]],
            "find_tests": [{"symbol": s} for s in drawn["symbols"]],
            "find_docs": [{"symbol": s} for s in drawn["symbols"]],
            "read_range": [{"path": p, "start_line": 1, "end_line": 80}
                           for p in drawn["paths"]],
            "index_status": [{} for _ in drawn["symbols"]],
            # each call reviews other commits (the same ones again reuse the review)
            "change_impact": [{"base": f"HEAD~{n + 1}", "head": f"HEAD~{n}"}
                              for n in range(4)],
        }
        for tool, arguments in calls.items():
            # The first call loads what the tool needs (the graph, say): timed apart.
            seconds[f"{tool} (first call)"] = [await _timed(client, tool, arguments[0])]
            for args in arguments[1:] if tool == "change_impact" else arguments:
                seconds.setdefault(tool, []).append(await _timed(client, tool, args))
        seconds["change_impact (the same commits again)"] = [
            await _timed(client, "change_impact", calls["change_impact"][-1])]
    return seconds


async def time_overlay(work: Path, db: Path) -> dict[str, Any]:
    """Clean call, first dirty call, cached dirty call; per size and tool, interleaved."""
    files = _production_files(work)
    figures: dict[str, Any] = {}
    async with Client(_server(work, db)) as client:
        await client.call_tool("search_code", {"query": "warm up the index and the model"})
        await client.call_tool("find_callers", {"symbol": "sphinx.application.Sphinx"})
        for round_number in range(OVERLAY_ROUNDS):
            for size in OVERLAY_SIZES:
                for tool, args in (("search_code", {"query": "render the overlay marker"}),
                                   ("find_callers", {"symbol": "sphinx.application.Sphinx"})):
                    clean = await _timed(client, tool, args)
                    _edit(work, files[:size], f"{round_number}_{size}_{tool}")
                    try:
                        first = await _timed(client, tool, args)
                        cached = await _timed(client, tool, args)
                    finally:
                        _run(["git", "-C", str(work), "checkout", "--quiet", "--", "."])
                    entry = figures.setdefault(f"{tool}/{size}", {"clean": [], "first": [],
                                                                  "cached": []})
                    entry["clean"].append(clean)
                    entry["first"].append(first)
                    entry["cached"].append(cached)
    return figures


async def _timed(client: Client, tool: str, args: dict[str, Any]) -> float:
    started = time.perf_counter()
    result = await client.call_tool(tool, args)
    elapsed = time.perf_counter() - started
    if result.is_error:
        raise RuntimeError(f"{tool}({args}) failed: {result.content}")
    return elapsed


def _edit(work: Path, files: list[Path], tag: str) -> None:
    for n, path in enumerate(files):
        with path.open("a", encoding="utf-8") as handle:
            handle.write(f"\n\ndef _overlay_marker_{n}_{tag}(value):\n"
                         f"    \"\"\"Render the overlay marker {tag} for {path.stem}.\"\"\"\n"
                         "    return value\n")


def _production_files(work: Path) -> list[Path]:
    listed = _run(["git", "-C", str(work), "ls-files", "sphinx/*.py"]).split()
    files = sorted(work / p for p in listed if "/tests/" not in p)
    return sorted(files, key=lambda p: hashlib.sha256(p.name.encode()).hexdigest())


def _server(work: Path, db: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "pr_context", "mcp", "--repo", str(work), "--db", str(db)], env=_env())


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _run(args: list[str]) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(figures: dict[str, Any]) -> str:
    init = figures["initialize_s"]
    listed = figures.get("tools_list_s") or [float("nan")]
    tools = figures["tools_s"]
    search_p50 = statistics.median(tools["search_code"])
    lines = [
        "# MCP server performance",
        "",
        f"Measured by `{figures['command']}` (re-run it to refresh this page) on "
        f"{REPOSITORY} at `{REVISION[:12]}` ({figures['files']} files, "
        f"{figures['chunks']} chunks, embedded with {figures['model']}), every figure from "
        "`pr-context mcp` running as its own process over stdio, through the MCP SDK's "
        "client.",
        "",
        f"Machine: {figures['machine']}; load average before the run "
        f"{figures['load_before']}, after {figures['load_after']}. On a shared machine "
        "absolute figures are noisy: compare the columns of one run, measured interleaved.",
        "",
        "| target | measured | met |",
        "|---|---|---|",
        f"| `initialize` answered under {TARGET_INITIALIZE_S:g} s (process start included) | "
        f"median {statistics.median(init):.2f} s (min {min(init):.2f}) | "
        f"{_met(statistics.median(init) < TARGET_INITIALIZE_S)} |",
        f"| (no target) the first `tools/list` answered, SDK loaded, process start "
        f"included | median {statistics.median(listed):.2f} s (min {min(listed):.2f}) | |",
        f"| `search_code` p50 under {TARGET_SEARCH_P50_S * 1000:g} ms, model loaded | "
        f"{search_p50 * 1000:.0f} ms | {_met(search_p50 < TARGET_SEARCH_P50_S)} |",
    ]
    overlay = figures["overlay_s"]
    ten = overlay["search_code/10"]
    extra = statistics.median(ten["first"]) - statistics.median(ten["clean"])
    lines += [f"| overlay of 10 dirty files under {TARGET_OVERLAY_10_S:g} s on top of the "
              f"call (`search_code`, first call after the edit) | {extra:.2f} s | "
              f"{_met(extra < TARGET_OVERLAY_10_S)} |", "",
              "## Per tool, model loaded", "",
              "| tool | calls | p50 ms | p90 ms |", "|---|---|---|---|"]
    for tool, values in sorted(tools.items()):
        lines.append(f"| `{tool}` | {len(values)} | {statistics.median(values) * 1000:.0f} | "
                     f"{_quantile(values, 0.9) * 1000:.0f} |")
    lines += ["", "## Overlay of dirty files", "",
              "Seconds per call (medians of the rounds): clean, the first call after "
              "the edit (re-parse, embed the new chunks, splice them into the loaded "
              "corpus; find_callers also builds the symbol graph again), the next call "
              "(cached).",
              "", "| tool | dirty files | clean | first | cached | first - clean |",
              "|---|---|---|---|---|---|"]
    lines += [overlay_row(key, entry, code=True) for key, entry in overlay.items()]
    return "\n".join(lines) + "\n"


def overlay_row(key: str, entry: dict[str, list[float]], code: bool) -> str:
    """One overlay table row: ``key`` is NAME/SIZE; medians of clean, first, cached."""
    name, size = key.split("/")
    clean, first, cached = (statistics.median(entry[k]) for k in ("clean", "first", "cached"))
    label = f"`{name}`" if code else name
    return (f"| {label} | {size} | {clean:.2f} | {first:.2f} | {cached:.2f} | "
            f"{first - clean:.2f} |")


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def _load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=DEFAULT_SOURCE, help="git URL or path of sphinx")
    parser.add_argument("--doc", type=Path, help="write the Markdown report here")
    parser.add_argument("--no-embeddings", action="store_true",
                        help="a lexical index (a quick run; not what the targets are about)")
    args = parser.parse_args()
    load_before = _load()
    db_name = "index-lexical.duckdb" if args.no_embeddings else "index.duckdb"
    work = prepare(args.source, db_name, not args.no_embeddings)
    db = work / ".pr-context" / db_name
    from pr_context.index.store import IndexStore

    with IndexStore.open_existing(db) as store:
        counts, model = store.counts(), store.manifest.embedding_model  # type: ignore[union-attr]
    figures: dict[str, Any] = {
        "command": " ".join(["python", "evals/bench_mcp.py", *sys.argv[1:]]),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                   f"Python {platform.python_version()}",
        "load_before": load_before, "files": counts["files"] + counts["skipped"],
        "chunks": counts["chunks"], "model": model}
    figures["initialize_s"], figures["tools_list_s"] = time_initialize(work, db)
    drawn = inputs(db)
    runner: Callable[[], Awaitable[Any]] = lambda: time_tools(work, db, drawn)  # noqa: E731
    figures["tools_s"] = anyio.run(runner)
    figures["overlay_s"] = anyio.run(lambda: time_overlay(work, db))
    figures["load_after"] = _load()
    OUT_JSON.parent.mkdir(parents=True, exist_ok=True)
    OUT_JSON.write_text(json.dumps(figures, indent=2) + "\n")
    text = report(figures)
    if args.doc:
        args.doc.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
