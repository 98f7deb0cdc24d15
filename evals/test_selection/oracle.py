"""The oracle: which tests execute each changed function, measured by running the suite.

For a case (``cases.jsonl``), in a throwaway virtualenv of its project
(``evals/.cache/test_selection/venvs/``, the project's test requirements from PyPI,
pinned in ``projects.json``) and a clone checked out at the case's base: the project is
installed editable, its own test suite runs under pytest-cov with per-test contexts
(``--cov-context=test``), and coverage.py itself (``in_venv/dump_contexts.py``, run in
that venv) says which tests executed the body of every function of the changed source
files. The project's code runs only there, never inside pr-context.

Cached per case in ``evals/.cache/test_selection/oracle/<case>.json``, with the
coverage data file beside it (``<case>.coverage``: what a user's CI run at the base
would have saved, handed to ``review --coverage`` by the evaluation).

Blind spots: code run at import time (collection happens outside any test's context),
code run in subprocesses, and session- or module-scoped fixtures (their setup is
recorded under the first test that needed them only).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from functions import Function, changed_functions, functions_of

__all__ = ["ORACLE_VERSION", "Project", "build_oracle", "load_projects"]

ORACLE_VERSION = 1  # bump when what the oracle records changes: cached files are redone
SUITE_TIMEOUT_S = 3600  # one suite run on a loaded 2-core machine
_HERE = Path(__file__).resolve().parent
_IN_VENV = _HERE / "in_venv"


@dataclass(frozen=True)
class Project:
    """How to run one project's suite (``projects.json``)."""

    repo: str
    package: str  # the measured source directory, repository-relative
    requirements: tuple[str, ...]
    pytest_args: tuple[str, ...]
    branch: bool  # measure arcs (branch coverage) instead of lines, as the project does

    @property
    def name(self) -> str:
        return self.repo.split("/")[1]


def load_projects(path: Path) -> dict[str, Project]:
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return {repo: Project(repo, p["package"], tuple(p["requirements"]),
                          tuple(p["pytest_args"]), bool(p["branch"]))
            for repo, p in raw.items()}


def _run(args: Sequence[str], cwd: Path | None = None, env: Mapping[str, str] | None = None,
         timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), cwd=cwd, env={**os.environ, **(env or {})},
                          capture_output=True, text=True, timeout=timeout, check=False)


def _checked(args: Sequence[str], cwd: Path | None = None) -> str:
    done = _run(args, cwd)
    if done.returncode:
        raise RuntimeError(f"{' '.join(args)} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def work_clone(project: Project, source: str, cache: Path) -> Path:
    """A clone with a work tree, where the suite runs (made once)."""
    target = cache / "work" / project.name
    if not (target / ".git").exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        _checked(["git", "clone", "--quiet", "--no-checkout", source, str(target)])
    return target


def project_venv(project: Project, cache: Path) -> Path:
    """The project's throwaway virtualenv with its pinned test requirements."""
    venv = cache / "venvs" / project.name
    stamp = hashlib.sha256("\n".join(project.requirements).encode()).hexdigest()[:16]
    marker = venv / "requirements.sha"
    if marker.exists() and marker.read_text().strip() == stamp:
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    _checked([sys.executable, "-m", "venv", str(venv)])
    _checked([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--upgrade",
              "pip"])
    _checked([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
              *project.requirements])
    marker.write_text(stamp + "\n")
    return venv


def _checkout(clone: Path, revision: str) -> None:
    _checked(["git", "-C", str(clone), "checkout", "--quiet", "--force", "--detach", revision])
    _checked(["git", "-C", str(clone), "clean", "-ffdxq"])


def _show(clone: Path, revision: str, path: str) -> str | None:
    done = _run(["git", "-C", str(clone), "show", f"{revision}:{path}"])
    return done.stdout if done.returncode == 0 else None


def case_functions(clone: Path, case: Mapping[str, Any]
                   ) -> tuple[dict[str, Function], set[str]]:
    """Every function of the case's source files at base (by ``path::qualname``), and the
    keys of those the real change altered or removed."""
    every: dict[str, Function] = {}
    changed: set[str] = set()
    for path in case["source_files"]:
        before = _show(clone, case["base"], path)
        if before is None:
            continue
        every.update({f"{path}::{q}": f for q, f in functions_of(path, before).items()})
        changed.update(f"{path}::{f.qualname}" for f in
                       changed_functions(path, before, _show(clone, case["head"], path)))
    return every, changed


def _coverage_rc(project: Project, clone: Path, into: Path) -> Path:
    rc = into / "coveragerc"
    rc.write_text(f"[run]\nbranch = {project.branch}\nsource = {clone / project.package}\n"
                  "[report]\nfail_under = 0\n", encoding="utf-8")
    return rc


def _run_suite(project: Project, venv: Path, clone: Path, scratch: Path) -> float:
    env = {"COVERAGE_FILE": str(scratch / "data.coverage"),
           "SELECTION_COLLECT_OUT": str(scratch / "suite.json"),
           "PYTHONPATH": str(_IN_VENV), "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.perf_counter()
    done = _run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 "-p", "no:randomly", "-p", "selection_collect",
                 f"--cov={clone / project.package}",
                 f"--cov-config={_coverage_rc(project, clone, scratch)}",
                 "--cov-context=test", "--cov-report=", *project.pytest_args],
                cwd=clone, env=env, timeout=SUITE_TIMEOUT_S)
    ran = (scratch / "suite.json").exists() and (scratch / "data.coverage").exists()
    if not ran or not json.loads((scratch / "suite.json").read_text(encoding="utf-8")):
        raise RuntimeError(f"the suite of {project.repo} did not run: "
                           f"{(done.stdout + done.stderr).strip()[-800:]}")
    return time.perf_counter() - started


def _executing_tests(venv: Path, coverage_file: Path, clone: Path,
                     functions: Mapping[str, Function], scratch: Path) -> dict[str, list[str]]:
    wanted = {key: [str(clone / f.path), list(f.lines)] for key, f in functions.items()}
    (scratch / "functions.json").write_text(json.dumps(wanted), encoding="utf-8")
    _checked([str(venv / "bin" / "python"), str(_IN_VENV / "dump_contexts.py"),
              str(coverage_file), str(scratch / "functions.json"), str(scratch / "tests.json")])
    found: dict[str, list[str]] = json.loads((scratch / "tests.json").read_text("utf-8"))
    return found


def build_oracle(case: Mapping[str, Any], project: Project, source: str,
                 cache: Path) -> dict[str, Any]:
    """The case's oracle, from the cache or by running the suite at its base."""
    target = cache / "oracle" / f"{case['id']}.json"
    if target.exists():
        cached: dict[str, Any] = json.loads(target.read_text(encoding="utf-8"))
        if cached.get("version") == ORACLE_VERSION and cached.get("base") == case["base"]:
            return cached
    clone = work_clone(project, source, cache)
    venv = project_venv(project, cache)
    _checkout(clone, case["base"])
    # with its own runtime dependencies, as declared at the base
    _checked([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-e", str(clone)])
    functions, changed = case_functions(clone, case)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        scratch = Path(tmp)
        seconds = _run_suite(project, venv, clone, scratch)
        tests = _executing_tests(venv, scratch / "data.coverage", clone, functions, scratch)
        suite = json.loads((scratch / "suite.json").read_text(encoding="utf-8"))
        shutil.move(scratch / "data.coverage", target.with_suffix(".coverage"))
    oracle = {
        "version": ORACLE_VERSION, "case": case["id"], "base": case["base"],
        "seconds": round(seconds, 1), "suite": suite,
        "measured_root": str(clone), "packages": _checked(
            [str(venv / "bin" / "python"), "-m", "pip", "freeze"]).splitlines(),
        "functions": {key: {"path": f.path, "qualname": f.qualname,
                            "lines": [f.start_line, f.end_line], "changed": key in changed,
                            "tests": tests.get(key, [])}
                      for key, f in functions.items()},
    }
    target.write_text(json.dumps(oracle, indent=0) + "\n", encoding="utf-8")
    return oracle


def main(argv: list[str] | None = None) -> int:
    """Build (or reuse) the oracle of every case: ``python evals/test_selection/oracle.py``."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=_HERE / "cases.jsonl")
    parser.add_argument("--projects", type=Path, default=_HERE / "projects.json")
    parser.add_argument("--source", action="append", default=[],
                        help="OWNER/NAME=PATH_OR_URL to clone a repository from")
    parser.add_argument("--cache", type=Path, default=Path("evals/.cache/test_selection"))
    parser.add_argument("--case", action="append", default=[], help="only this case id")
    args = parser.parse_args(argv)
    sources = dict(s.split("=", 1) for s in args.source)
    projects = load_projects(args.projects)
    for line in args.cases.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if args.case and case["id"] not in args.case:
            continue
        source = sources.get(case["repo"], f"https://github.com/{case['repo']}.git")
        try:
            oracle = build_oracle(case, projects[case["repo"]], source, args.cache.resolve())
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"{case['id']}: failed: {str(exc)[-500:]}", file=sys.stderr)
            continue
        executed = sum(bool(f["tests"]) for f in oracle["functions"].values() if f["changed"])
        print(f"{case['id']}: {len(oracle['suite'])} tests in {oracle['seconds']}s; "
              f"{executed} changed functions executed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
