"""Benchmark: a real pull request reviewed cold (no cached index) and warm (base restored).

Usage::

    python evals/bench_action.py                     # clones sphinx-doc/sphinx from GitHub
    python evals/bench_action.py --source /path/to/sphinx.git --doc docs/action-performance.md

The pull request is a real merged change of sphinx-doc/sphinx that touched 10 files, on
a base of about 2,000 files (twice the issue's 1,000). Every run is its own process, the
way CI runs it, so interpreter start, imports and loading the embedding model count:

- **cold**: ``pr-context action`` on a ``pull_request`` event with no index file: the
  base is indexed from scratch (with embeddings), then the head, then the analysis.
- **warm**: the same with the base index in place, as after the action restored it from
  the cache (the cache download itself is GitHub's and is not measured here).
- **review (warm)**: ``pr-context review`` with the base index in place (issue target:
  15 s wall, model load included).

No comment is posted (``--comment off``, no token); everything else is the action's own
path.

``--startup`` measures what a fresh runner pays before indexing, each part as its own
process: the action's install step in a fresh virtual environment, lean (the ONNX
backends, the default: no torch) and torch (the torch extra, torch's CPU wheel first),
interleaved, each with an empty pip cache and again with the cache its first install
filled; importing torch and the ONNX runtime; loading the model with each backend; the
first ONNX use, which builds the graph from the weights. With
``--startup-only`` only these are measured, and only that section of ``--doc`` is
rewritten. Side effects: a bare clone and index files under ``evals/.cache/bench-action/``,
raw figures in ``evals/out/bench_action.json``, and the report at ``--doc``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

EVALS_DIR = Path(__file__).resolve().parent
ROOT = EVALS_DIR.parent
CACHE_DIR = EVALS_DIR / ".cache" / "bench-action"
OUT_JSON = EVALS_DIR / "out" / "bench_action.json"

REPOSITORY = "sphinx-doc/sphinx"
DEFAULT_SOURCE = f"https://github.com/{REPOSITORY}.git"
# "Extract _generate_directives() from Documenter._generate() (#13985)": 10 files changed.
HEAD = "465b758a35f6cb5be066997ef970ad69fe879cf8"
WARM_RUNS = 3
TARGET_WARM_SPEEDUP = 10.0
TARGET_REVIEW_S = 15.0
STARTUP_HEADING = "## Start-up on a fresh runner"


def clone(source: str) -> Path:
    """A bare clone of the repository holding HEAD, made once."""
    target = CACHE_DIR / "sphinx.git"
    if not target.is_dir():
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        _run(["git", "clone", "--bare", "--quiet", "--no-tags", source, str(target)])
    _run(["git", "-C", str(target), "cat-file", "-e", f"{HEAD}^{{commit}}"])
    return target


def parent_of(repo: Path, sha: str) -> str:
    return _run(["git", "-C", str(repo), "rev-parse", f"{sha}^"]).strip()


def run_action(repo: Path, base: str, work: Path, db: Path) -> dict[str, Any]:
    """One ``pr-context action`` process on a pull_request event; wall seconds and report."""
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    event = work / "event.json"
    event.write_text(json.dumps({
        "action": "synchronize", "number": 1,
        "pull_request": {"number": 1, "draft": False,
                         "head": {"sha": HEAD, "ref": "pr", "repo": {"full_name": REPOSITORY}},
                         "base": {"sha": base, "ref": "master",
                                  "repo": {"full_name": REPOSITORY}}}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PR_CONTEXT_"))}
    env.update({"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event),
                "GITHUB_REPOSITORY": REPOSITORY, "GITHUB_WORKSPACE": str(repo),
                "GITHUB_OUTPUT": str(work / "output"),
                "GITHUB_STEP_SUMMARY": str(work / "summary"), "RUNNER_TEMP": str(work)})
    seconds = _timed([*_cli(), "action", "--quiet", "--comment", "off", "--db", str(db),
                      "--out", str(out)], env)
    evidence = json.loads((out / "evidence.json").read_text())
    return {"seconds": seconds, "timings_ms": evidence["timings_ms"],
            "index": evidence["index"], "changed_symbols": len(evidence["changed_symbols"])}


def run_review(repo: Path, base: str, work: Path, db: Path) -> float:
    out = work / "review-out"
    shutil.rmtree(out, ignore_errors=True)
    return _timed([*_cli(), "review", "--quiet", "--repo", str(repo), "--base", base,
                   "--head", HEAD, "--db", str(db), "--out", str(out)], dict(os.environ))


def files_at(repo: Path, sha: str) -> int:
    return len(_run(["git", "-C", str(repo), "ls-tree", "-r", "--name-only", sha]).split("\n")) - 1


def _cli() -> list[str]:
    """This interpreter running the pr_context package it imports (PYTHONPATH counts)."""
    return [sys.executable, "-m", "pr_context"]


def _timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:2])} failed ({done.returncode}):\n"
                         f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return seconds


def _run(command: list[str]) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def render(figures: dict[str, Any]) -> str:
    cold, warm = figures["cold"], figures["warm"]
    warm_s = statistics.median(r["seconds"] for r in warm)
    review_s = statistics.median(figures["review_warm_s"])
    speedup = cold["seconds"] / warm_s
    rows = [
        ("cold: no index (first PR run without cache)", cold["seconds"],
         cold["timings_ms"], cold["index"]),
        *[(f"warm {i}: base index restored", r["seconds"], r["timings_ms"], r["index"])
          for i, r in enumerate(warm, start=1)],
    ]
    lines = [
        "# Action performance: cold and warm runs on a real pull request",
        "",
        "Written by `evals/bench_action.py`; do not edit by hand. Reproduce:",
        "",
        "```sh",
        "python evals/bench_action.py --doc docs/action-performance.md",
        "```",
        "",
        f"Pull request: [{REPOSITORY}@{HEAD[:12]}](https://github.com/{REPOSITORY}/commit/"
        f"{HEAD}) (\"Extract `_generate_directives()` from `Documenter._generate()`\"), "
        f"{figures['changed_files']} files changed, on a base of {figures['base_files']} "
        f"files; {cold['changed_symbols']} changed symbols. Each run is one process "
        "(interpreter start, imports and the embedding model's load included), on "
        f"{figures['machine']}. Measured {figures['date']}.",
        "",
        "| run | wall s | index base s | index head s | analyse s | chunks embedded |",
        "|---|---|---|---|---|---|",
    ]
    for name, seconds, timings, index in rows:
        lines.append(f"| {name} | {seconds:.1f} | {timings.get('index_base', 0) / 1000:.1f} "
                     f"| {timings.get('index_head', 0) / 1000:.1f} "
                     f"| {timings.get('analyse', 0) / 1000:.2f} "
                     f"| {index.get('embedded', 0):,} |")
    lines += [
        "",
        f"`pr-context review` with the base index in place: "
        f"{', '.join(f'{s:.1f}' for s in figures['review_warm_s'])} s "
        f"(median {review_s:.1f} s).",
        "",
        "| target | measured | verdict |",
        "|---|---|---|",
        f"| warm run at least {TARGET_WARM_SPEEDUP:g}x faster than cold | {speedup:.1f}x "
        f"({cold['seconds']:.0f} s / {warm_s:.1f} s, median of {len(warm)}) | "
        f"{'met' if speedup >= TARGET_WARM_SPEEDUP else '**not met**'} |",
        f"| `review` of a 10-file PR on a 1,000+ file repository, warm, within "
        f"{TARGET_REVIEW_S:g} s | {review_s:.1f} s | "
        f"{'met' if review_s <= TARGET_REVIEW_S else '**not met**'} |",
        "",
        "The cold run is dominated by embedding every chunk of the base; the warm run "
        "embeds only the chunks the PR changed. In the action, the warm case is a cache "
        "hit on `pr-context-<os>-<fingerprint>-<base sha>` (or a restore-keys fallback to an "
        "older index, updated incrementally); downloading the cache is not measured here.",
        "",
    ]
    return "\n".join(lines)


def measure_startup() -> dict[str, Any]:
    """Install, import, model-load and first graph-build costs, each a fresh process, lean
    (the ONNX backends: what the action installs by default) and torch interleaved."""
    work = CACHE_DIR / "startup"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    figures: dict[str, Any] = {"install": {}}
    for cache_state in ("cold", "warm"):  # warm: the pip cache the cold install filled
        for kind in INSTALL_KINDS:
            venv = work / f"venv-{kind}-{cache_state}"
            steps = _install_like_the_action(kind, venv, work / f"pip-cache-{kind}")
            figures["install"][f"{kind}_{cache_state}"] = steps
            _log(f"install {kind}, {cache_state} pip cache: {steps}")
    venvs = {kind: work / f"venv-{kind}-warm" for kind in INSTALL_KINDS}
    figures["site_packages_mb"] = {k: _site_packages_mb(v) for k, v in venvs.items()}
    figures["torch_mb"] = _site_packages_mb(venvs["torch"], "torch")
    figures["lean_has_torch"] = (_site(venvs["onnx"]) / "torch").exists()
    figures.update(_lean_contents(venvs["onnx"]))
    figures["first_build_s"] = {b: _first_build(venvs["onnx"], b, work / f"graphs-{b}")
                                for b in ("onnx", "onnx-int8")}
    figures["probes"] = _probe_rounds(venvs, work / "graphs-onnx", work / "graphs-onnx-int8")
    return figures


INSTALL_KINDS = ("onnx", "torch")
PROBE_ROUNDS = 3


def _probes(graphs_fp32: Path, graphs_int8: Path) -> dict[str, tuple[str, str]]:
    """name -> (install kind whose venv runs it, code)."""
    def embed(backend: str, cache: Path) -> str:
        return ("from pathlib import Path; from pr_context.embed import make_embedder as m; "
                f"m('all-MiniLM-L6-v2', {backend!r}, Path({str(cache)!r}), print)"
                ".embed(['x'])")

    return {
        "interpreter start": ("onnx", "pass"),
        "`import pr_context.cli`": ("onnx", "import pr_context.cli"),
        "`import torch, transformers`": ("torch", "import torch, transformers"),
        "`import onnxruntime, tokenizers`": ("onnx", "import onnxruntime, tokenizers"),
        "load the model and embed one text, torch": ("torch", embed("torch", graphs_fp32)),
        "the same, onnx (graph cached)": ("onnx", embed("onnx", graphs_fp32)),
        "the same, onnx-int8 (graph cached)": ("onnx", embed("onnx-int8", graphs_int8)),
    }


def _probe_rounds(venvs: dict[str, Path], graphs_fp32: Path, graphs_int8: Path
                  ) -> dict[str, float]:
    """The median of ``PROBE_ROUNDS`` fresh processes per probe, probes interleaved."""
    probes = _probes(graphs_fp32, graphs_int8)
    times: dict[str, list[float]] = {name: [] for name in probes}
    for _ in range(PROBE_ROUNDS):
        for name, (kind, code) in probes.items():
            times[name].append(_timed([str(venvs[kind] / "bin" / "python"), "-c", code],
                                      dict(os.environ)))
    return {name: statistics.median(t) for name, t in times.items()}


def _first_build(venv: Path, backend: str, cache: Path) -> float:
    """The first use of an ONNX backend in the lean venv: the graph built from the
    weights (and quantized, for int8), into an empty cache; no torch there."""
    code = ("from pathlib import Path; from pr_context.embed import make_embedder as m; "
            f"m('all-MiniLM-L6-v2', {backend!r}, Path({str(cache)!r}), print).embed(['x'])")
    return _timed([str(venv / "bin" / "python"), "-c", code], dict(os.environ))


def _install_like_the_action(kind: str, venv: Path, cache: Path) -> dict[str, float]:
    """action.yml's install step for ``kind`` (pr_context/action/install_plan.py): a venv,
    torch's CPU build first for the torch kind, the plan's requirements, then the model's
    files and pr-context without dependencies."""
    from pr_context.action.install_plan import no_deps_requirements, requirements

    env = {**os.environ, "PIP_CACHE_DIR": str(cache), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    pyproject = ROOT / "pyproject.toml"
    steps = {"venv_s": _timed([sys.executable, "-m", "venv", str(venv)], env)}
    if kind == "torch":
        steps["torch_s"] = _timed([*pip, f"torch=={_torch_pin()}"], env)
    steps["requirements_s"] = _timed([*pip, *requirements(pyproject, kind)], env)
    steps["no_deps_s"] = _timed([*pip, "--no-deps", *no_deps_requirements(pyproject, kind),
                                 str(ROOT)], env)
    return steps


def _torch_pin() -> str:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pin = next(r for r in project["project"]["optional-dependencies"]["torch"]
               if r.startswith("torch=="))
    return str(pin.split("==", 1)[1])


def _site(venv: Path) -> Path:
    return next((venv / "lib").glob("python*/site-packages"))


def _lean_contents(venv: Path) -> dict[str, Any]:
    """How many distributions the lean environment holds, and whether the MCP SDK (which
    no action run imports) is among them."""
    site = _site(venv)
    return {"lean_packages": len(list(site.glob("*.dist-info"))),
            "lean_has_mcp": (site / "mcp").exists()}


def _site_packages_mb(venv: Path, package: str = "") -> float:
    target = _site(venv) / package if package else _site(venv)
    size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
    return round(size / 1e6, 1)


def _log(message: str) -> None:
    print(f"bench_action: {message}", file=sys.stderr, flush=True)


def render_startup(figures: dict[str, Any]) -> str:
    install = figures["install"]
    step_names = {"venv_s": "fresh venv", "torch_s": f"`pip install torch=={_torch_pin()}` "
                  "(CPU build)", "requirements_s": "the plan's requirements",
                  "no_deps_s": "the model's files and pr-context, `--no-deps`"}
    lines = [
        STARTUP_HEADING, "",
        "`python evals/bench_action.py --startup-only --doc docs/action-performance.md` "
        f"rewrites this section alone. Measured {figures['date']} on {figures['machine']}, "
        f"load average {figures['load']:.1f}: a shared machine; compare the rows with "
        "each other, not with a quiet runner. Every figure is a fresh process; installs "
        "ran interleaved (lean, torch, lean, torch), each kind with a pip cache of its own "
        "as in action.yml.", "",
        "| install step (action.yml) | lean (onnx), empty pip cache s | torch, empty s | "
        "lean, pip cache filled s | torch, filled s |", "|---|---|---|---|---|"]
    for key, name in step_names.items():
        cells = [install[f"{k}_{c}"].get(key) for c in ("cold", "warm") for k in INSTALL_KINDS]
        lines.append(f"| {name} | " + " | ".join("-" if v is None else f"{v:.1f}"
                                                  for v in cells) + " |")
    totals = [sum(install[f"{k}_{c}"].values()) for c in ("cold", "warm") for k in INSTALL_KINDS]
    lines.append("| total | " + " | ".join(f"**{t:.1f}**" for t in totals) + " |")
    size = figures["site_packages_mb"]
    lines += [
        "", f"Lean / torch install time: {totals[0] / totals[1]:.2f}x with an empty pip cache, "
        f"{totals[2] / totals[3]:.2f}x with a filled one. The environments hold "
        f"{size['onnx']:,.0f} MB (lean: {_lean_packages(figures)}torch "
        f"{'present' if figures['lean_has_torch'] else 'absent'}) and {size['torch']:,.0f} MB "
        f"(torch, {figures['torch_mb']:,.0f} MB of it torch itself). Here the wheels come "
        "from a local mirror; on a hosted runner the empty-cache install also downloads "
        "them (torch's CPU wheel is about 200 MB), which the action's pip cache saves on "
        "later runs.", "",
        f"| start-up cost (median of {PROBE_ROUNDS} processes, interleaved) | s |",
        "|---|---|",
        *[f"| {name} | {seconds:.2f} |" for name, seconds in figures["probes"].items()],
        *[f"| first {b} use: the graph built from the weights (no torch, no export step), "
          f"into an empty cache | {s:.1f} |" for b, s in figures["first_build_s"].items()],
        "", "The torch rows run in the torch environment, the others in the lean one.", ""]
    return "\n".join(lines)


def _lean_packages(figures: dict[str, Any]) -> str:
    if "lean_packages" not in figures:  # figures of a run before these were kept
        return ""
    mcp = "present" if figures["lean_has_mcp"] else "absent"
    return f"{figures['lean_packages']} distributions, the MCP SDK {mcp}; "


def _text_of(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def _with_startup(doc: str, section: str) -> str:
    """``doc`` with its start-up section replaced by (or ending with) ``section``."""
    head = doc.split(STARTUP_HEADING, 1)[0].rstrip("\n")
    return f"{head}\n\n{section}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=DEFAULT_SOURCE,
                        help="where to clone sphinx-doc/sphinx from (URL or local path)")
    parser.add_argument("--doc", type=Path, help="write the Markdown report here")
    parser.add_argument("--startup", action="store_true",
                        help="also measure install, import and model-load costs")
    parser.add_argument("--startup-only", action="store_true",
                        help="measure only those, rewriting only their section of --doc")
    parser.add_argument("--startup-render", action="store_true",
                        help="rewrite that section from the last run's figures, measuring "
                             "nothing")
    args = parser.parse_args(argv)
    saved = OUT_JSON.parent / "bench_action_startup.json"
    if args.startup_render:
        args.startup_only = True
    startup = (json.loads(saved.read_text()) if args.startup_render
               else measure_startup() if args.startup or args.startup_only else None)
    if startup is not None and not args.startup_render:
        startup.update({"date": time.strftime("%Y-%m-%d"), "load": os.getloadavg()[0],
                        "machine": f"{os.cpu_count()} cores, Python "
                                   f"{platform.python_version()}"})
        OUT_JSON.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(startup))
    if args.startup_only:
        assert startup is not None
        section = render_startup(startup)
        if args.doc:
            old = _text_of(args.doc)
            args.doc.write_text(_with_startup(old, section), encoding="utf-8")
        print(section)
        return 0
    repo = clone(args.source)
    base = parent_of(repo, HEAD)
    db = CACHE_DIR / "index.duckdb"
    for suffix in ("", ".wal"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    print("cold run (indexing the base with embeddings: minutes)...", file=sys.stderr)
    cold = run_action(repo, base, CACHE_DIR / "cold", db)
    print(f"cold: {cold['seconds']:.1f} s", file=sys.stderr)
    warm = []
    for i in range(WARM_RUNS):
        warm.append(run_action(repo, base, CACHE_DIR / f"warm{i}", db))
        print(f"warm {i + 1}: {warm[-1]['seconds']:.1f} s", file=sys.stderr)
    review_s = [run_review(repo, base, CACHE_DIR / "review", db) for _ in range(WARM_RUNS)]
    print(f"review warm: {review_s}", file=sys.stderr)
    changed = _run(["git", "-C", str(repo), "diff", "--name-only", base, HEAD]).split()
    figures = {
        "repository": REPOSITORY, "base": base, "head": HEAD, "changed_files": len(changed),
        "base_files": files_at(repo, base), "cold": cold, "warm": warm,
        "review_warm_s": review_s, "date": time.strftime("%Y-%m-%d"),
        "machine": f"{os.cpu_count()} cores, {platform.python_implementation()} "
                   f"{platform.python_version()}, {platform.system()}",
    }
    OUT_JSON.parent.mkdir(parents=True, exist_ok=True)
    OUT_JSON.write_text(json.dumps(figures, indent=1) + "\n")
    report = render(figures)
    if startup is not None:
        report = _with_startup(report, render_startup(startup))
    elif args.doc and STARTUP_HEADING in (old_doc := _text_of(args.doc)):
        # Not measured this time: the document keeps its last start-up section.
        report = _with_startup(report, STARTUP_HEADING + old_doc.split(STARTUP_HEADING, 1)[1])
    if args.doc:
        args.doc.write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
