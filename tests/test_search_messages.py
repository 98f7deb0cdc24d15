"""Pasted messages find the code that raises or formats them (retrieve/messages.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pr_context.parse.code_strings import PLACEHOLDER
from pr_context.pipeline import Searcher
from pr_context.retrieve import SearchOutcome
from pr_context.retrieve.corpus import SearchCorpus
from pr_context.retrieve.messages import MessageIndex
from tests.conftest import GitRepo
from tests.fakes import fake_search

P = PLACEHOLDER
TEMPLATES = [
    (f"Invalid value for {P}: {P} is not one of {P}.", 0),
    (f"No such command {P}.", 1),
    (f"{P} must be equal to {P}", 2),
    (f"Could not open file {P}: {P}", 3),
    ("Show this message and exit.", 4),
]


@pytest.fixture(scope="module")
def index() -> MessageIndex:
    return MessageIndex(TEMPLATES)


def test_a_message_with_the_users_values_matches_its_template(index: MessageIndex) -> None:
    [best, *_] = index.matches("Error: Invalid value for '--color': 'bleu' is not one of "
                               "'red', 'green'.")
    assert (best.chunk, best.coverage, best.explained) == (0, 1.0, 1.0)
    assert best.strength == 1.0


def test_a_message_inside_a_traceback_matches(index: MessageIndex) -> None:
    query = ("Traceback (most recent call last):\n  File \"/app/cli.py\", line 3, in main\n"
             "    run()\nclick.exceptions.UsageError: No such command 'instal'.")
    assert index.matches(query)[0].chunk == 1


def test_a_reworded_message_still_matches_most_of_its_words(index: MessageIndex) -> None:
    [best, *_] = index.matches("could not open the file 'a.txt' (permission denied)")
    assert best.chunk == 3 and best.coverage == 1.0 and 0.5 < best.strength < 1.0


def test_a_short_template_inside_a_longer_message_explains_little(index: MessageIndex
                                                                   ) -> None:
    [best] = index.matches("max_value must be equal to or higher than initial_value")
    assert best.chunk == 2 and best.coverage == 1.0 and best.explained < 0.6


def test_a_question_sharing_a_few_words_is_no_exact_match(index: MessageIndex) -> None:
    assert all(m.strength < 0.5 for m in index.matches(
        "how do I add a command that is not one of the defaults?"))


def test_words_in_another_order_are_no_match(index: MessageIndex) -> None:
    assert all(m.chunk != 4 or m.strength < 0.5
               for m in index.matches("exit and show this message"))


def test_an_empty_index_matches_nothing() -> None:
    assert MessageIndex([]).matches("No such command 'x'.") == []


FILES = {
    "tool/cli.py": '''def resolve_command(ctx, name):
    """Find the command."""
    command = ctx.commands.get(name)
    if command is None:
        ctx.fail(f"No such command {name!r}.")
    return command


def list_commands(ctx):
    """The names of the commands, sorted."""
    return sorted(ctx.commands)
''',
    "tool/errors.py": '''MISSING_PARAMETER = "Missing parameter: the option needs a value"


class UsageError(Exception):
    """The command line was wrong."""


def check(value):
    if value is None:
        raise UsageError(MISSING_PARAMETER)
''',
    "tests/test_cli.py": '''from tool.cli import resolve_command


def test_unknown_command():
    assert resolve_command(FakeContext(), "nope") is None


def test_missing_parameter_message():
    assert str(UsageError("Missing parameter: the option needs a value"))
''',
}


@pytest.fixture
def tool(make_repo: Callable[..., GitRepo], tmp_path: Path) -> tuple[Searcher, SearchCorpus]:
    return fake_search(make_repo(FILES).path, tmp_path / "i.duckdb")


def run(tool: tuple[Searcher, SearchCorpus], query: str) -> SearchOutcome:
    searcher, corpus = tool
    return searcher.search(corpus, query)


def test_a_pasted_message_lands_on_the_function_formatting_it(
        tool: tuple[Searcher, SearchCorpus]) -> None:
    outcome = run(tool, "Error: No such command 'instal'.")
    assert outcome.message is None
    assert outcome.hits[0].symbol == "tool.cli.resolve_command"
    assert outcome.hits[0].components["message"] > 0


def test_a_users_unknown_value_does_not_empty_a_matched_message(
        tool: tuple[Searcher, SearchCorpus]) -> None:
    outcome = run(tool, "No such command 'kubernetesdeploymentz'.")
    assert outcome.message is None and outcome.hits[0].symbol == "tool.cli.resolve_command"


def test_a_message_held_by_a_constant_finds_the_code_using_it(
        tool: tuple[Searcher, SearchCorpus]) -> None:
    outcome = run(tool, "tool.errors.UsageError: Missing parameter: the option needs a value")
    assert "tool.errors.check" in [h.symbol for h in outcome.hits[:2]]


def test_a_test_expecting_the_message_counts_only_when_tests_are_asked_for(
        tool: tuple[Searcher, SearchCorpus]) -> None:
    def message_paths(query: str) -> set[str]:
        return {h.path for h in run(tool, query).hits if h.components.get("message", 0) > 0}

    assert "tests/test_cli.py" not in message_paths(
        "Missing parameter: the option needs a value")
    assert "tests/test_cli.py" in message_paths(
        "which tests check Missing parameter: the option needs a value")
