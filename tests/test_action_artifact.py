"""The publisher's reading of another run's artifact: the zip's bounds and member names,
and evidence.json's schema. Forged inputs are built byte by byte where zipfile would not
write them."""

from __future__ import annotations

import copy
import io
import json
import tracemalloc
import warnings
import zipfile
from typing import Any

import pytest

from pr_context.action.artifact import ArtifactLimits, evidence_member
from pr_context.action.evidence import MAX_SYMBOLS, parse_evidence, report_from_evidence
from pr_context.coverage import SymbolCoverage
from pr_context.errors import ArtifactError
from pr_context.links.selection import SelectedTest
from pr_context.render import render_comment
from pr_context.report import EvidenceItem, IndexInfo, Report, SymbolReport, evidence_json

REPO = "octo/shop"
HEAD = "b" * 40
BASE = "a" * 40
SMALL = ArtifactLimits(zip_bytes=1 << 20, member_bytes=1 << 20)


def zip_of(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w", method) as archive:
        warnings.simplefilter("ignore")  # zipfile warns about a duplicate name, and writes it
        for name, data in members.items() if isinstance(members, dict) else members:
            archive.writestr(name, data)
    return buffer.getvalue()


EVIDENCE = b'{"schema_version": 1}'


# -- the zip --------------------------------------------------------------------------------


def test_the_evidence_member_is_read_and_a_zip_without_it_is_not_an_error() -> None:
    members = {"evidence.json": EVIDENCE, "comment.md": b"x", "eval/report.md": b"y"}
    assert evidence_member(zip_of(members)) == EVIDENCE
    assert evidence_member(zip_of({"action-report.json": b"{}"})) is None


@pytest.mark.parametrize("name", [
    "../x", "/abs/x", "eval/../../x", "C:x", "C:/x", "eval\\report.md", "./evidence.json",
    "eval//report.md", "evidence.json/", "notes.txt", "eval/other.md", ".github/x.yml",
])
def test_a_bad_member_name_refuses_the_whole_zip(name: str) -> None:
    with pytest.raises(ArtifactError, match="refused whole"):
        evidence_member(zip_of({"evidence.json": EVIDENCE, name: b"pwned"}))


def test_a_name_with_a_nul_or_control_character_is_refused() -> None:
    forged = zip_of({"evidence.json": EVIDENCE, "comment.mdX../x": b"x"})
    for byte in (b"\x00", b"\n"):
        with pytest.raises(ArtifactError, match="control character"):
            evidence_member(forged.replace(b"X../x", byte + b"../x"))


def test_a_member_listed_twice_is_refused() -> None:
    twice = zip_of([("evidence.json", EVIDENCE), ("evidence.json", b"{}")])  # type: ignore[arg-type]
    with pytest.raises(ArtifactError, match="twice"):
        evidence_member(twice)


def test_encrypted_and_unusual_compression_are_refused() -> None:
    plain = zip_of({"evidence.json": EVIDENCE})
    local, central = plain.index(b"PK\x03\x04"), plain.index(b"PK\x01\x02")
    encrypted = bytearray(plain)
    encrypted[local + 6] |= 1
    encrypted[central + 8] |= 1
    with pytest.raises(ArtifactError, match="encrypted"):
        evidence_member(bytes(encrypted))
    with pytest.raises(ArtifactError, match="compression method"):
        evidence_member(zip_of({"evidence.json": EVIDENCE}, zipfile.ZIP_LZMA))


def test_a_directory_of_too_many_entries_is_refused_before_it_is_parsed() -> None:
    many = zip_of({f"eval/{i}.md": b"" for i in range(40)})
    with pytest.raises(ArtifactError, match="40 entries"):
        evidence_member(many)


@pytest.mark.parametrize("data", [b"", b"not a zip", b"PK\x05\x06", b"PK\x03\x04" * 100])
def test_garbage_is_refused(data: bytes) -> None:
    with pytest.raises(ArtifactError):
        evidence_member(data)


def test_a_truncated_zip_is_refused() -> None:
    whole = zip_of({"evidence.json": EVIDENCE * 100})
    cut = whole[:40] + whole[-22:]  # the member's data is gone, the end record is kept
    with pytest.raises(ArtifactError):
        evidence_member(cut)


def test_an_oversized_zip_is_refused_unread() -> None:
    with pytest.raises(ArtifactError, match="over the"):
        evidence_member(b"\0" * (SMALL.zip_bytes + 1), SMALL)


def _lying(inflated: int, declared: int) -> bytes:
    """evidence.json of ``inflated`` zero bytes whose headers declare ``declared``."""
    honest = zip_of({"evidence.json": bytes(inflated)})
    return honest.replace(inflated.to_bytes(4, "little"), declared.to_bytes(4, "little"))


@pytest.mark.parametrize(("inflated", "declared", "message"), [
    (8 << 20, 8 << 20, "declares"),  # honest about its size: refused by the header
    (8 << 20, 1000, "not a readable zip"),  # lies small: stopped at 1000 bytes, CRC fails
    (8 << 20, (1 << 20) - 1, "not a readable zip"),  # lies just under the cap
])
def test_a_zip_bomb_is_stopped_within_the_member_cap(inflated: int, declared: int,
                                                     message: str) -> None:
    bomb = _lying(inflated, declared)
    tracemalloc.start()
    try:
        with pytest.raises(ArtifactError, match=message):
            evidence_member(bomb, SMALL)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * SMALL.member_bytes, peak  # never the 8 MiB it inflates to


# -- evidence.json --------------------------------------------------------------------------


def _item(path: str = "shop/api.py", **changes: Any) -> EvidenceItem:
    item = EvidenceItem(rank=1, path=path, symbol="shop.api.login", role="production",
                        start_line=4, end_line=5, revision=HEAD, score=0.9,
                        signals={"graph": 0.9}, reason="calls create_session on line 5",
                        touched_in_pr=False, line=5, updated_in_pr=False, needs_update=True)
    return EvidenceItem(**{**item.__dict__, **changes})


def _report() -> Report:
    symbol = SymbolReport(
        path="shop/session.py", symbol="create_session",
        qualified_name="shop.session.create_session", kind="function",
        change="signature_changed", start_line=1, end_line=3, callers=(_item(),),
        tests=(_item("tests/test_session.py", role="test", line=None, updated_in_pr=None,
                     needs_update=False, node_ids=("tests/test_session.py::test_x",)),),
        docs=(_item("docs/sessions.md", role="docs", line=None, updated_in_pr=None,
                    needs_update=False, status="stale", signals={"parameter": 0.8}),),
        old_signature="def create_session(user, token, retries=3):",
        new_signature="def create_session(user, token):",
        parameter_changes=("removed param retries",),
        coverage=SymbolCoverage("executed", ("tests/test_session.py::test_x",)),
        changed_inside=("shop.session.create_session.inner",))
    index = IndexInfo("b1", HEAD, BASE, "p1", "none", {"include": []}, True, 10, 20)
    return Report(REPO, BASE, HEAD, index, (symbol,), ("tests",),
                  timings_ms={"review": 12}, notes=("a note",),
                  selection_details=(SelectedTest("tests", ("every test",)),),
                  run_everything="shop/__init__.py changed at module level")


def _evidence() -> dict[str, Any]:
    return json.loads(json.dumps(evidence_json(_report())))  # type: ignore[no-any-return]


def test_valid_evidence_gives_back_the_report() -> None:
    report = report_from_evidence(_evidence(), REPO, HEAD)
    expected = _report()
    assert report.symbols == expected.symbols
    assert (report.repository, report.base, report.head) == (REPO, BASE, HEAD)
    assert report.test_selection == expected.test_selection and report.notes == expected.notes
    assert report.selection_details == expected.selection_details
    assert report.run_everything == expected.run_everything
    assert "all tests to run" in render_comment(report)
    assert report.index.path_policy == {} and report.timings_ms == {}


def test_unknown_keys_are_ignored_and_missing_additive_ones_default() -> None:
    evidence = _evidence()
    evidence["pull_request"] = {"number": 8}
    for key in ("notes", "excluded_files", "skipped_files", "summary"):
        del evidence[key]
    for key in ("test_selection_details", "run_everything", "run_everything_reason"):
        del evidence[key]
    del evidence["changed_symbols"][0]["analysed"]
    del evidence["changed_symbols"][0]["coverage"]
    del evidence["changed_symbols"][0]["callers"][0]["needs_update"]
    report = report_from_evidence(evidence, REPO, HEAD)
    assert report.notes == () and report.symbols[0].analysed
    assert not report.symbols[0].callers[0].needs_update
    assert report.selection_details == () and report.run_everything is None
    assert report.symbols[0].coverage is None


S0, C0 = ["changed_symbols", 0], ["changed_symbols", 0, "callers", 0]


@pytest.mark.parametrize(("where", "value", "message"), [
    (["schema_version"], 2, "schema_version 2"),
    (["schema_version"], True, "integer"),
    (["repository"], "octo/other", "another repository"),
    (["repository"], "octo/shop\n::error::x", "control characters"),
    (["head"], "c" * 40, "another head commit"),
    (["base"], "HEAD", "expected form"),
    (["base"], "A" * 40, "expected form"),
    ([*S0, "path"], "/etc/passwd", "relative, normalised"),
    ([*S0, "path"], "../x.py", "relative, normalised"),
    ([*S0, "path"], "a//b.py", "relative, normalised"),
    ([*S0, "path"], "a/./b.py", "relative, normalised"),
    ([*S0, "path"], "a\\b.py", "relative, normalised"),
    ([*S0, "path"], "C:/x.py", "relative, normalised"),
    ([*S0, "path"], "a\nb.py", "control characters"),
    ([*S0, "path"], 7, "a string"),
    ([*S0, "path"], "a" * 5000, "characters"),
    ([*S0, "start_line"], 0, "integer from 1"),
    ([*S0, "start_line"], "1", "integer"),
    ([*S0, "end_line"], False, "integer"),
    ([*S0, "start_line"], 10**8, "integer"),
    ([*S0, "end_line"], 0, "integer"),
    ([*S0, "change"], "deleted", "one of"),
    ([*S0, "kind"], "Function Name", "expected form"),
    ([*S0, "symbol"], "f\x1b[31m", "control characters"),
    ([*S0, "qualified_name"], None, "a string"),
    ([*S0, "callers"], {}, "a list"),
    ([*C0, "role"], "admin", "one of"),
    ([*C0, "revision"], "main", "expected form"),
    ([*C0, "score"], 1e300, "finite number"),
    ([*C0, "score"], "high", "finite number"),
    ([*C0, "reason"], "x" * 2001, "characters"),
    ([*C0, "reason"], "a\x00b", "control characters"),
    ([*C0, "signals"], {"Graph Score": 1}, "expected form"),
    ([*C0, "signals"], {f"s{i}": 1 for i in range(20)}, "at most 16"),
    ([*C0, "needs_update"], "yes", "true or false"),
    ([*C0, "line"], -1, "integer"),
    (["changed_symbols", 0, "docs", 0, "status"], "fresh", "one of"),
    (["changed_symbols", 0, "tests", 0, "node_ids"], ["../x::t"], "relative, normalised"),
    (["test_selection"], ["/etc/passwd::x"], "relative, normalised"),
    (["test_selection"], "tests/x.py", "a list"),
    (["notes"], ["x" * 3000], "characters"),
    (["run_everything"], "yes", "true or false"),
    (["run_everything"], False, "exactly when run_everything"),
    (["run_everything_reason"], None, "exactly when run_everything"),
    (["run_everything_reason"], "a\x1b[2Jb", "control characters"),
    (["test_selection_details", 0, "target"], "../x.py", "relative, normalised"),
    (["test_selection_details", 0, "reasons"], ["x" * 3000], "characters"),
    (["test_selection_details", 0, "reasons"], "why", "a list"),
    (["test_selection_details"], {}, "a list"),
    ([*S0, "coverage", "status"], "maybe", "one of"),
    ([*S0, "coverage", "tests"], ["/abs::t"], "relative, normalised"),
    ([*S0, "coverage"], [], "an object"),
    ([*S0, "changed_inside"], ["f\x1b[31m"], "control characters"),
    (["index", "files"], -1, "integer"),
    (["index", "path_policy"], [], "an object"),
    (["timings_ms"], {"review": -5}, "integer"),
    (["changed_symbols"], [{}] * (MAX_SYMBOLS + 1), "at most"),
    ([], [], "an object"),
])
def test_invalid_evidence_is_refused(where: list[Any], value: Any, message: str) -> None:
    evidence: Any = copy.deepcopy(_evidence())
    if not where:
        evidence = value
    else:
        target = evidence
        for key in where[:-1]:
            target = target[key]
        target[where[-1]] = value
    with pytest.raises(ArtifactError, match=message) as refused:
        report_from_evidence(evidence, REPO, HEAD)
    assert "\n" not in str(refused.value) and "::" not in str(refused.value)


@pytest.mark.parametrize("key", ["repository", "head", "index", "changed_symbols",
                                 "test_selection"])
def test_a_missing_contract_key_is_refused(key: str) -> None:
    evidence = _evidence()
    del evidence[key]
    with pytest.raises(ArtifactError, match=f"evidence.json is refused: {key} must be present"):
        report_from_evidence(evidence, REPO, HEAD)


@pytest.mark.parametrize("raw", [
    b'{"a": 1, "a": 2}', b'{"score": NaN}', b'{"score": Infinity}', b"\xff\xfe{}",
    b"[" * 100_000 + b"]" * 100_000, b"{", b"",
])
def test_json_that_is_not_plain_json_is_refused(raw: bytes) -> None:
    with pytest.raises(ArtifactError, match="not valid JSON"):
        parse_evidence(raw)
