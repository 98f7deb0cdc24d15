"""Annotations on the diff, parsed back from the output of real `pr-context action` runs
the way the runner reads workflow commands: the cap, the order, the escaping."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pr_context.action.annotations import (
    MAX_PER_LEVEL,
    Annotation,
    annotation_lines,
    finding_annotations,
)
from pr_context.action.outputs import workflow_command
from pr_context.report import EvidenceItem, IndexInfo, Report, SymbolReport
from tests.conftest import GitRepo
from tests.github_fake import FakeGitHub
from tests.test_action import (
    NUMBER,
    REPO,
    Workflow,
    fast_retries,  # noqa: F401  (autouse fixture)
    github,  # noqa: F401  (fixture)
    pull_payload,
)

# A workflow command as the runner parses it: properties cannot hold ":" (escaped).
COMMAND = re.compile(r"^::(?P<level>[a-z-]+)(?: (?P<properties>[^:]*))?::(?P<message>.*)$")
SIGNATURE_CHANGES = 12


def unescape(text: str) -> str:
    """The runner's unescaping of a workflow command's message or property value."""
    for escaped, plain in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","),
                           ("%25", "%")):
        text = text.replace(escaped, plain)
    return text


def commands(output: str) -> list[dict[str, Any]]:
    """Every workflow command in ``output``, properties and message unescaped."""
    found = []
    for line in output.splitlines():
        match = COMMAND.match(line)
        if match is None:
            continue
        listed = match["properties"] or ""
        properties = dict(item.split("=", 1) for item in listed.split(",") if item)
        found.append({"level": match["level"], "message": unescape(match["message"]),
                      **{k: unescape(v) for k, v in properties.items()}})
    return found


def findings(output: str) -> list[dict[str, Any]]:
    return [c for c in commands(output) if "file" in c]


def review_pr(flow: Workflow, head_files: dict[str, str | None], *args: str,
              **env: str) -> tuple[str, Any]:
    """Commit ``head_files`` (None deletes) on a branch, open the PR, run the action."""
    base = flow.repo.git("rev-parse", "HEAD").strip()
    flow.repo.git("checkout", "-q", "-B", "feature")
    for path, text in head_files.items():
        if text is None:
            flow.repo.remove(path)
        else:
            flow.repo.write(path, text)
    head = flow.repo.commit("the change")
    flow.repo.git("checkout", "-q", "main")
    flow.github.add_pull(REPO, NUMBER, head_sha=head, base_sha=base)
    result = flow.run("pull_request", pull_payload(base, head), *args, **env)
    assert result.exit_code == 0, result.output
    return head, result


# -- the cap and the order ------------------------------------------------------------------

def _functions(params: str) -> str:
    body = "".join(f"def f{i}({params}):\n    return a\n\n\n" for i in range(SIGNATURE_CHANGES))
    return body


MANY_BASE = {
    "pk/__init__.py": "",
    "pk/funcs.py": _functions("a, b") + "def gone(x):\n    return x\n",
    "app/__init__.py": "",
    "app/use.py": (
        "from pk.funcs import " + ", ".join(f"f{i}" for i in range(SIGNATURE_CHANGES))
        + ", gone\n\n\ndef run():\n"
        + "".join(f"    f{i}(1, 2)\n" for i in range(SIGNATURE_CHANGES))
        + "    return gone(3)\n\n\ndef again():\n    return gone(4)\n"),
    "docs/funcs.md": "# Functions\n\nCall `pk.funcs.gone(x)` to get `x` back.\n",
}


@pytest.fixture
def many(make_repo: Callable[..., GitRepo], tmp_path: Path,
         github: FakeGitHub) -> Workflow:  # noqa: F811
    return Workflow(make_repo(MANY_BASE), tmp_path, github)


def test_the_most_important_ten_then_one_notice_for_the_rest(many: Workflow) -> None:
    _, result = review_pr(many, {"pk/funcs.py": _functions("a")})

    shown = findings(result.output)
    assert len(shown) == MAX_PER_LEVEL
    assert all(a["level"] == "warning" for a in shown)
    first = shown[0]  # the removed function, on a call site the PR did not touch
    assert first["title"] == "Removed, still used: gone"
    assert first["file"] == "app/use.py" and first["line"] == first["endLine"]
    assert "app/use.py:" in first["message"] and "in app.use.again" in first["message"]
    signatures = shown[1:]
    assert all(a["title"].startswith("Callers not updated: f") for a in signatures)
    assert [a["file"] for a in signatures] == ["pk/funcs.py"] * (MAX_PER_LEVEL - 1)
    lines = [int(a["line"]) for a in signatures]
    assert lines == sorted(lines)
    assert "removed param b" in signatures[0]["message"]
    assert "\n- app/use.py:" in signatures[0]["message"]  # callers named, one a line
    total = 1 + SIGNATURE_CHANGES + 1  # the doc naming gone, too
    notices = [c for c in commands(result.output)
               if c["level"] == "notice" and "more in the pr-context comment" in c["message"]]
    assert len(notices) == 1
    assert notices[0]["message"].startswith(f"{total - MAX_PER_LEVEL} more in the pr-context "
                                            "comment")
    report = many.report()
    assert len(report["findings"]) == total


def test_annotations_off_prints_none(many: Workflow) -> None:
    _, result = review_pr(many, {"pk/funcs.py": _functions("a")}, "--annotations", "off")
    assert findings(result.output) == []
    assert "more in the pr-context comment" not in result.output


# -- the escaping ---------------------------------------------------------------------------

ODD_DOC = "docs/100%,a:b.md"
ODD_BASE = {
    "shop/__init__.py": "",
    "shop/session.py": "def open_session(user, retries=3):\n    return user\n",
    "shop/api.py": ("from shop.session import open_session\n\n\n"
                    "def login(user):\n    return open_session(user, retries=5)\n"),
    ODD_DOC: ("# Use 100%, then ::error::pwned\n\n"
              "Call `open_session(user, retries=3)`; `retries` says how often.\n"),
}


def test_paths_and_messages_are_escaped_and_nothing_starts_a_command(
        make_repo: Callable[..., GitRepo], tmp_path: Path,
        github: FakeGitHub) -> None:  # noqa: F811
    flow = Workflow(make_repo(ODD_BASE), tmp_path, github)

    # A fork's run may have no usable token: annotations need none.
    _, result = review_pr(flow, {"shop/session.py": "def open_session(user):\n    return user\n"},
                          "--annotations", "notice", GITHUB_TOKEN="")

    shown = findings(result.output)
    assert [a["level"] for a in shown] == ["notice", "notice"]
    caller, doc = shown
    assert caller["file"] == "shop/session.py" and caller["line"] == "1"
    assert caller["title"] == "Callers not updated: open_session"
    assert "- shop/api.py:5 in shop.api.login" in caller["message"]
    assert doc["file"] == ODD_DOC and doc["title"].startswith("Stale doc: names an old param")
    assert "100%, then ::error::pwned" in doc["message"]
    raw = [line for line in result.output.splitlines() if line.startswith("::")]
    assert not any(line.startswith("::error::pwned") for line in result.output.splitlines())
    assert all(COMMAND.match(line) for line in raw)
    assert any("docs/100%25%2Ca%3Ab.md" in line for line in raw)


def test_workflow_commands_escape_what_the_runner_unescapes() -> None:
    text = "100% done,\r\nnext: ::error::x"
    line = workflow_command("warning", text, {"file": "a,b:c%.py", "title": "t: x, y"})
    assert "\n" not in line and "\r" not in line
    parsed = commands(line)[0]
    assert (parsed["message"], parsed["file"], parsed["title"]) == (
        text, "a,b:c%.py", "t: x, y")


@pytest.mark.parametrize(("level", "notes", "shown"), [
    ("warning", [], 10),
    ("warning", [("warning", "fork: not posted")], 9),
    ("notice", [], 9),  # a notice slot stays free for the "more" notice
    ("notice", [("notice", "created"), ("notice", "x")], 7),
])
def test_the_cap_counts_the_runs_own_notes(level: str, notes: list[tuple[str, str]],
                                          shown: int) -> None:
    found = [Annotation(level, f"f{i}.py", i + 1, i + 1, "t", "m") for i in range(15)]

    lines = annotation_lines(notes, found)

    parsed = commands("\n".join(lines))
    assert sum(1 for c in parsed if "file" in c) == shown
    per_level = {lv: sum(1 for c in parsed if c["level"] == lv) for lv in ("warning", "notice")}
    assert max(per_level.values()) <= MAX_PER_LEVEL
    assert parsed[-1]["message"].startswith(f"{15 - shown} more in the pr-context comment")


def _symbol(change: str, callers: tuple[EvidenceItem, ...] = (),
            docs: tuple[EvidenceItem, ...] = (), **extra: Any) -> SymbolReport:
    return SymbolReport(path="pkg/mod.py", symbol="new_name", qualified_name="pkg.mod.new_name",
                        kind="function", change=change, start_line=10, end_line=20,
                        callers=callers, tests=(), docs=docs, **extra)


def _evidence(path: str, *, graph: bool = True, touched: bool = False,
              signals: dict[str, float] | None = None, **extra: Any) -> EvidenceItem:
    return EvidenceItem(rank=1, path=path, symbol="app.run", role="production", start_line=3,
                        end_line=9, revision="b" * 40, score=1.0,
                        signals=signals or ({"graph": 1.0} if graph else {"lexical": 0.5}),
                        reason="why", touched_in_pr=touched, **extra)


def _caller(path: str, **extra: Any) -> EvidenceItem:
    return _evidence(path, line=5, updated_in_pr=False, needs_update=True, **extra)


def test_which_findings_become_annotations_and_where() -> None:
    renamed = _symbol("renamed", (_caller("app/a.py"),), old_qualified_name="pkg.mod.old")
    removed = _symbol("removed", (_caller("app/edited.py", touched=True),
                                  _caller("app/kept.py")))
    removed_in_edited_files = _symbol("removed", (_caller("app/edited.py", touched=True),))
    lexical_only = _symbol("signature_changed", (_caller("app/b.py", graph=False),))
    docs = _symbol("modified", docs=(
        _evidence("docs/p.md", signals={"parameter": 0.8}, status="stale"),
        _evidence("docs/edited.md", signals={"parameter": 0.8}, status="updated"),
        _evidence("docs/mention.md", signals={"mention": 0.4}, status="stale")))
    report = Report("o/r", "a" * 40, "b" * 40, IndexInfo("", "", "", "", "", {}, False, 0, 0),
                    (lexical_only, docs, removed_in_edited_files, renamed, removed), ())

    found = finding_annotations(report, "warning", "sub/")

    assert [(a.title, a.path, a.line) for a in found] == [
        ("Removed, still used: new_name", "sub/app/kept.py", 5),  # the untouched call site
        ("Removed, still used: new_name", "sub/app/edited.py", None),  # lines moved: file
        ("Renamed, still used: pkg.mod.old", "sub/pkg/mod.py", 10),  # the new definition
        ("Stale doc: names an old parameter of new_name", "sub/docs/p.md", 3),
    ]
    assert found[0].message.count("\n- ") == 2  # both callers named
    assert finding_annotations(report, "off") == []
