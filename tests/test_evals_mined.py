"""The mined corpus: questions generated from packages with their answers known."""

from __future__ import annotations

import ast
import json
import random
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from pr_context.evals.cases import load_cases
from pr_context.evals.corpora import PypiCorpus, commit_tree, load_corpora
from pr_context.evals.errors import CorporaFileError
from pr_context.evals.mined import DEFAULT_MINED_PATH, load_mined_config, prepare_mined
from pr_context.evals.mining import (
    HiddenDocstring,
    SourceFile,
    behaviour_drafts,
    doc_lookup_drafts,
    example_lookup_drafts,
    named_test_drafts,
    strip_docstrings,
)
from pr_context.evals.mining_docs import how_to_drafts
from pr_context.evals.mining_raises import (
    filled_message,
    raise_sites,
    stack_trace_drafts,
    template_text,
)
from pr_context.evals.phrasing import (
    base_verb,
    first_sentence,
    gerund_base,
    sentence_question,
    third_person,
)
from pr_context.languages import language_for_path
from pr_context.parse import parse_file
from pr_context.roles import classify_path
from tests.test_evals_corpora import FakeDownloader, _info, write_tarball

REPO_ROOT = Path(__file__).resolve().parent.parent


def source(path: str, text: str) -> SourceFile:
    language = language_for_path(path)
    assert language is not None
    role = classify_path(path, text)
    return SourceFile(path, language, role, text, parse_file(path, text, language, role))


CLI = '''"""A tiny command line library."""


class UsageError(Exception):
    """The command line was wrong."""


def resolve_command(ctx, name):
    """Find the command registered under a name, or fail with a usage error."""
    command = ctx.commands.get(name)
    if command is None:
        raise UsageError(f"No such command {name!r}.")
    return command


def parse_count(text):
    """Turn the count option into an integer."""
    msg = "Count must be a positive integer, got %s" % text
    if not text.isdigit():
        raise ValueError(msg)
    return int(text)


def check_width(width, limit):
    """Make sure the width fits the terminal."""
    if width > limit:
        raise ValueError("Width {} exceeds the terminal width {}".format(width, limit))
    if width < 0:
        raise ValueError("negative_width")


class Group:
    """A command holding other commands."""

    def add_command(self, command):
        """Register another command with this group."""
        self.commands.append(command)
'''
TESTS = '''from tool.cli import resolve_command


def test_resolve_unknown_command():
    pass


class TestGroup:
    def test_add(self):
        pass
'''
DOCS = '''# Tool

## Creating commands

Call `resolve_command` to look a command up, and `Group` to hold several.

## Installation

Run pip install tool; `Group` is there afterwards.
'''
EXAMPLE = '''from tool.cli import Group

group = Group()
group.add_command("hello")
'''


@pytest.fixture(scope="module")
def files() -> list[SourceFile]:
    return [source("src/tool/cli.py", CLI), source("tests/test_cli.py", TESTS),
            source("docs/index.md", DOCS), source("examples/hello.py", EXAMPLE)]


def test_a_first_sentence_is_cleaned_or_refused() -> None:
    assert first_sentence("Return the :class:`~pkg.Thing` for ``name``.\n\nMore.") == \
        "Return the Thing for name"
    assert first_sentence("Deprecated alias of the other function.") is None
    assert first_sentence("Too short.") is None


def test_verbs_are_turned_between_forms() -> None:
    assert [base_verb(w) for w in ("Returns", "Applies", "Matches", "Process", "Normalizes",
                                   "Buzzes", "Does")] == [
        "return", "apply", "match", "process", "normalize", "buzz", "do"]
    assert [third_person(w) for w in ("return", "apply", "match")] == [
        "returns", "applies", "matches"]
    assert gerund_base("Creating", {"create"}) == "create"
    assert gerund_base("Running", set()) == "run"


def test_a_sentence_becomes_a_question_in_one_of_several_phrasings() -> None:
    asked = {sentence_question("Return the width of the terminal", "tool", "function",
                               random.Random(seed)) for seed in range(40)}
    assert "how does tool return the width of the terminal?" in asked
    assert "where is the code that returns the width of the terminal?" in asked
    noun = sentence_question("A command holding other commands", "tool", "class",
                             random.Random(1))
    assert "a command holding other commands" in noun


def test_sentences_not_opened_by_a_verb_are_asked_as_a_whole_and_adverbs_stay() -> None:
    def phrasings(sentence: str) -> set[str]:
        return {sentence_question(sentence, "tool", "function", random.Random(seed))
                for seed in range(40)}

    assert "which function deeply merges two error messages?" in phrasings(
        "Deeply merge two error messages")
    assert "where is the code that always returns the first item?" in phrasings(
        "Always return the first item")
    assert "which function applies filters to the stream?" in phrasings(
        "Apply filters to the stream")
    assert "which function recursively searches for type hints?" in phrasings(
        "Recursively searches for type hints")
    for sentence in ("If the key does not exist, set it", "True if the lock is held",
                     "Equivalent to list(items)[index]", "All items that match a rule",
                     "Partially taken from typing.get_type_hints"):
        assert all(sentence[1:].lower() in asked.lower() for asked in phrasings(sentence))


def test_behaviour_questions_come_from_docstrings_and_hide_them(
        files: list[SourceFile]) -> None:
    drafts = behaviour_drafts(files, "tool", random.Random(3), 10)
    asked = {d.groups[0].any_of[0].symbol: h for d, h in drafts}
    assert "tool.cli.resolve_command" in asked and "tool.cli.Group.add_command" in asked
    hidden = list(asked.values())
    stripped = strip_docstrings(CLI, hidden)
    ast.parse(stripped)
    assert "Find the command registered" not in stripped
    assert '"""A tiny command line library."""' in stripped  # not asked: kept


def test_a_body_that_was_only_its_docstring_keeps_an_ellipsis() -> None:
    text = 'class Error(Exception):\n    """Raised when it fails."""\n'
    stripped = strip_docstrings(text, [HiddenDocstring("a.py", "Error", 1, 2)])
    assert stripped == "class Error(Exception):\n    ...\n"


def test_raise_messages_become_templates(files: list[SourceFile]) -> None:
    sites = {s.definition.name: s for s in raise_sites(files[0])}
    assert template_text(sites["resolve_command"].parts) == "No such command {}."
    assert template_text(sites["parse_count"].parts) == \
        "Count must be a positive integer, got {}"
    assert template_text(sites["check_width"].parts) == \
        "Width {} exceeds the terminal width {}"
    assert "negative_width" not in [template_text(s.parts) for s in sites.values()]


def test_placeholders_are_filled_with_values_the_package_never_saw(
        files: list[SourceFile]) -> None:
    site = next(s for s in raise_sites(files[0]) if s.definition.name == "resolve_command")
    message = filled_message(site.parts, random.Random(5))
    assert message.startswith("No such command '") and message.endswith("'.")
    assert message == filled_message(site.parts, random.Random(5))


def test_stack_traces_ask_for_the_raising_function(files: list[SourceFile]) -> None:
    drafts = stack_trace_drafts(files, {"UsageError": "tool.cli.UsageError"},
                                random.Random(2), 10)
    answers = {d.groups[0].any_of[0].symbol for d in drafts}
    assert answers == {"tool.cli.resolve_command", "tool.cli.parse_count",
                       "tool.cli.check_width"}
    usage = next(d for d in drafts if "No such command" in d.query)
    assert "tool.cli.UsageError: No such" in usage.query or usage.query.startswith(
        ("No such", "Traceback"))


def test_test_names_become_test_lookups(files: list[SourceFile]) -> None:
    drafts = named_test_drafts(files, random.Random(0), 10)
    phrases = sorted(d.query for d in drafts)
    assert any("resolve unknown command" in p for p in phrases)
    assert any("group add" in p for p in phrases)
    assert all(d.groups[0].any_of[0].file == "tests/test_cli.py" for d in drafts)


def test_docs_sections_naming_the_api_become_how_to_questions(
        files: list[SourceFile]) -> None:
    [draft] = how_to_drafts(files, "tool", {"create"}, random.Random(0), 10)
    assert draft.query == "how do I create commands?"
    targets = {(t.file, t.symbol) for t in draft.groups[0].any_of}
    assert ("docs/index.md", None) in targets
    assert ("src/tool/cli.py", "tool.cli.resolve_command") in targets


def test_docs_and_example_lookups_name_a_public_definition(files: list[SourceFile]) -> None:
    docs = doc_lookup_drafts(files, random.Random(0), 10)
    assert {d.groups[0].any_of[0].file for d in docs} == {"docs/index.md"}
    [example] = [d for d in example_lookup_drafts(files, random.Random(0), 10)
                 if "Group" in d.query]
    assert {t.file for t in example.groups[0].any_of} == {"examples/hello.py",
                                                          "docs/index.md"}


def test_the_shipped_mined_corpus_has_twenty_packages_no_hand_case_uses() -> None:
    config = load_mined_config(REPO_ROOT / DEFAULT_MINED_PATH)
    corpora = load_corpora(REPO_ROOT / "evals" / "corpora.yml")
    hand = {c.repo for c in load_cases(REPO_ROOT / "evals" / "cases", corpora)}
    names = {p.name for p in config.packages}
    assert len(names) >= 20 and not names & hand
    assert all(isinstance(corpora[n], PypiCorpus) for n in names)
    assert {p.split for p in config.packages} == {"tuning", "heldout"}


@pytest.mark.parametrize(("change", "message"), [
    ({"cutoff": None}, "expected exactly the keys"),
    ({"per_package": {"nonsense": 3}}, "unknown classes"),
    ({"packages": {"a": {"split": "later", "domain": "x"}}}, "needs split"),
])
def test_an_invalid_mined_file_is_refused(tmp_path: Path, change: dict[str, object],
                                          message: str) -> None:
    data: dict[str, object] = {"seed": 1, "cutoff": 5, "per_package": {"behavior": 1},
                               "packages": {"a": {"split": "tuning", "domain": "x"}}}
    data.update(change)
    data = {k: v for k, v in data.items() if v is not None}
    path = tmp_path / "mined.yml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CorporaFileError, match=message):
        load_mined_config(path)


def _sdist(tmp_path: Path, name: str, files: dict[str, str]) -> tuple[Path, str]:
    """A tarball of ``files`` and the SHA its deterministic commit will have."""
    top = f"{name}-1.0"
    members: list[tuple[tarfile.TarInfo, bytes | None]] = [
        (_info(top, type=tarfile.DIRTYPE, mode=0o755), None)]
    members += [(_info(f"{top}/{p}", mode=0o644), t.encode()) for p, t in files.items()]
    sdist = write_tarball(tmp_path / f"{name}-1.0.tar.gz", members)
    probe = tmp_path / f"probe-{name}"
    for path, text in files.items():
        (probe / path).parent.mkdir(parents=True, exist_ok=True)
        (probe / path).write_text(text)
    sha = commit_tree(probe, f"{name} 1.0 sdist")
    shutil.rmtree(probe)
    return sdist, sha


class _Downloads:
    def __init__(self, sdists: dict[str, Path]) -> None:
        self.by_name = {n: FakeDownloader(p) for n, p in sdists.items()}

    def __call__(self, requirement: str, dest: Path) -> Path:
        return self.by_name[requirement.split("==")[0]](requirement, dest)


@pytest.fixture
def mined_setup(tmp_path: Path) -> tuple[Path, Path, _Downloads]:
    packages = {
        "tool": {"src/tool/cli.py": CLI, "tests/test_cli.py": TESTS, "docs/index.md": DOCS},
        "clock": {"src/clock/time.py": '''def humanize_delta(seconds):
    """Describe a number of seconds as a friendly phrase like three hours ago."""
    if seconds < 0:
        raise ValueError(f"Cannot describe a negative duration of {seconds} seconds")
    return "now"
'''},
    }
    corpora, sdists = {}, {}
    for name, package_files in packages.items():
        sdist, sha = _sdist(tmp_path, name, package_files)
        sdists[name] = sdist
        corpora[name] = {"pypi": f"{name}==1.0", "revision": sha}
    (tmp_path / "corpora.yml").write_text(yaml.safe_dump(corpora))
    (tmp_path / "mined.yml").write_text(yaml.safe_dump({
        "seed": 1, "cutoff": 5,
        "per_package": {"behavior": 5, "stack_trace": 5, "test_lookup": 5, "negative": 5},
        "packages": {"tool": {"split": "tuning", "domain": "cli"},
                     "clock": {"split": "heldout", "domain": "dates"}}}))
    return tmp_path / "mined.yml", tmp_path / "corpora.yml", _Downloads(sdists)


def test_prepare_mined_pins_cases_to_an_eval_copy_without_the_asked_docstrings(
        tmp_path: Path, mined_setup: tuple[Path, Path, _Downloads]) -> None:
    mined_path, corpora_path, download = mined_setup
    config = load_mined_config(mined_path)
    first = prepare_mined(config, load_corpora(corpora_path), tmp_path / "cache", download)
    again = prepare_mined(config, load_corpora(corpora_path), tmp_path / "cache", download)
    assert [c.id for c in first.cases] == [c.id for c in again.cases]
    assert {c.revision for c in first.cases} == {c.revision for c in again.cases}
    tool = [c for c in first.cases if c.repo == "tool"]
    behaviour = [c for c in tool if c.query_class == "behavior"]
    assert behaviour and all(c.split == "tuning" and c.cutoff == 5 for c in tool)
    copy = first.repos["tool"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=copy, capture_output=True,
                          text=True, check=True).stdout.strip()
    assert head == behaviour[0].revision
    text = (copy / "src/tool/cli.py").read_text()
    docstrings = {node.name: ast.get_docstring(node) for node in ast.walk(ast.parse(CLI))
                  if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    for case in behaviour:
        symbol = case.groups[0].any_of[0].symbol
        assert symbol is not None
        assert str(docstrings[symbol.rsplit(".", 1)[-1]]) not in text
    assert "A tiny command line library." in text
    lines = (tmp_path / "cache" / "mined" / "cases.jsonl").read_text().splitlines()
    assert len(lines) == len(first.cases) and json.loads(lines[0])["id"] == first.cases[0].id


def test_negatives_come_from_other_domains_asked_of_this_package(
        tmp_path: Path, mined_setup: tuple[Path, Path, _Downloads]) -> None:
    mined_path, corpora_path, download = mined_setup
    mined = prepare_mined(load_mined_config(mined_path), load_corpora(corpora_path),
                          tmp_path / "cache", download)
    negatives = [c for c in mined.cases if c.repo == "tool" and c.negative]
    assert negatives and all("clock" in c.rationale for c in negatives)
    assert all("clock" not in c.query for c in negatives)
