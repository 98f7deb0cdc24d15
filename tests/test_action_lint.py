"""The action, the workflows and the Dockerfile pass their linters.

The linters are dev dependencies (pyproject.toml) and run offline: check-jsonschema with
its bundled GitHub schemas, zizmor's offline audits, hadolint. A missing tool is a
failure, not a skip: `pip install -e '.[dev]'` installs them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / ".github" / "workflows").glob("*.yml"))
LINT_TIMEOUT_S = 120

COMMANDS = {
    "action-schema": ["check-jsonschema", "--builtin-schema", "vendor.github-actions",
                      "action.yml"],
    "workflow-schema": ["check-jsonschema", "--builtin-schema", "vendor.github-workflows",
                        *WORKFLOWS],
    "zizmor-action": ["zizmor", "--offline", "action.yml"],
    "zizmor-workflows": ["zizmor", "--offline", ".github/workflows"],
    "hadolint": ["hadolint", "Dockerfile"],
}


def tool(name: str) -> str:
    """The tool from this interpreter's environment, else from PATH."""
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    assert found, f"{name} is not installed: pip install -e '.[dev]'"
    return found


def test_there_are_workflows_to_lint() -> None:
    assert {".github/workflows/ci.yml", ".github/workflows/pr-context.yml",
            ".github/workflows/pr-context-publish.yml"} <= set(WORKFLOWS)


def documented_workflows(doc: str, names: list[str]) -> dict[str, str]:
    """A document's complete workflows (YAML blocks with `on:` and `jobs:`), by file name."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    found = [b for b in blocks if re.search(r"^on:", b, re.M) and re.search(r"^jobs:", b, re.M)]
    assert len(found) == len(names), f"{doc}: {len(names)} workflows expected"
    return dict(zip(names, found, strict=True))


def readme_workflows() -> dict[str, str]:
    """The README quick start's two workflows, and docs/action.md's sharded build."""
    return {**documented_workflows("README.md", ["pr-context.yml", "pr-context-publish.yml"]),
            **documented_workflows("docs/action.md", ["pr-context-index.yml"])}


def test_the_documented_workflows_pass_both_linters_as_pasted(tmp_path: Path) -> None:
    """Copied as they stand, the documented workflows are clean: nothing to fix."""
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    for name, text in readme_workflows().items():
        (folder / name).write_text(text, encoding="utf-8")
    for command in (["check-jsonschema", "--builtin-schema", "vendor.github-workflows",
                     *sorted(str(p) for p in folder.iterdir())],
                    ["zizmor", "--offline", str(folder)]):
        done = subprocess.run([tool(command[0]), *command[1:]], cwd=tmp_path,
                              capture_output=True, text=True, timeout=LINT_TIMEOUT_S,
                              check=False)
        assert done.returncode == 0, f"{command[0]}: {done.stdout}\n{done.stderr}"


def test_the_only_ignores_are_the_documented_dangerous_triggers() -> None:
    """Each workflow's one zizmor ignore sits on its trigger, with a reason after it."""
    files = [*(ROOT / p for p in WORKFLOWS), ROOT / "action.yml"]
    ignores = [(path.name, line.strip()) for path in files
               for line in path.read_text(encoding="utf-8").splitlines()
               if "zizmor: ignore" in line]
    assert sorted(name for name, _ in ignores) == ["pr-context-publish.yml", "pr-context.yml"]
    for _, line in ignores:
        assert re.fullmatch(r"(issue_comment|workflow_run):  # zizmor: "
                            r"ignore\[dangerous-triggers\] \w.{20,}", line), line


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_lint(command: list[str]) -> None:
    done = subprocess.run([tool(command[0]), *command[1:]], cwd=ROOT, capture_output=True,
                          text=True, timeout=LINT_TIMEOUT_S, check=False)
    assert done.returncode == 0, (
        f"{' '.join(command)} exited {done.returncode}\n{done.stdout}\n{done.stderr}")


def test_the_sharded_workflow_saves_what_the_action_restores() -> None:
    """docs/action.md's matrix: shard caches never match the action's restore prefix
    (a pull request would restore a lone shard), and the merged index is saved at the
    path and under the key `action --prepare` gives."""
    workflow = yaml.safe_load(documented_workflows("docs/action.md",
                                                   ["pr-context-index.yml"])["pr-context-index.yml"])
    shard_steps, merge_steps = (workflow["jobs"][j]["steps"] for j in ("shard", "merge"))
    shard_cache = next(s["with"] for s in shard_steps
                       if s.get("uses", "").startswith("actions/cache@"))
    action_prefix = "pr-context-${{ runner.os }}-"
    for key in (shard_cache["key"], shard_cache["restore-keys"]):
        assert key.startswith("pr-context-shard-") and not key.startswith(action_prefix)
    plan = next(s for s in merge_steps if s.get("id") == "plan")
    assert plan["run"] == "pr-context action --prepare"
    save = next(s for s in merge_steps if s.get("uses", "").startswith("actions/cache/save@"))
    assert save["with"] == {"path": "${{ steps.plan.outputs.index-path }}",
                            "key": "${{ steps.plan.outputs.cache-key }}"}
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    restore = next(s for s in action["runs"]["steps"] if s.get("id") == "index-cache")
    assert restore["with"]["path"] == "${{ steps.prepare.outputs.index-path }}"
