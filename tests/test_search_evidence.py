"""Search evidence that holds in any codebase: intent, docs pages, stubs, anchors, abstention."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pr_context.pipeline import Searcher
from pr_context.retrieve import SearchOutcome, search
from pr_context.retrieve.corpus import SearchCorpus
from pr_context.retrieve.foreign_names import unknown_names
from pr_context.retrieve.fusion import detect_intent
from pr_context.retrieve.signals import (
    anchor_ranking,
    name_ranking,
    owner_ranking,
    raised_ranking,
)
from tests.conftest import GitRepo
from tests.fakes import fake_search

FILES = {
    "app/config.py": '''class Config(dict):
    def from_pyfile(self, filename):
        configuration = {}
        exec(compile(open(filename).read(), filename, "exec"), configuration)
        return self.update(configuration)

    def from_mapping(self, mapping):
        """Load the configuration from a mapping, as update() does."""
        return self.update(mapping)
''',
    "app/limits.py": '''def max_len(limit):
    return lambda value: len(value) <= limit


def min_count(limit):
    return lambda value: value >= limit
''',
    "app/limits.pyi": '''def max_len(limit: int) -> object: ...
''',
    "app/testing.py": '''class TestClient:
    """Sends requests to the app without running a server."""

    def get(self, path):
        return self.app.handle("GET", path)
''',
    "tests/test_client.py": '''from app.testing import TestClient


def test_client_get_returns_the_page():
    client = TestClient()
    assert client.get("/") is not None
''',
    "docs/testing.md": '''# Testing your app

Test your app without running a server: `TestClient` sends it requests.
''',
    "docs/config.md": '''# Configuration

Load the configuration from a Python file with `from_pyfile`: each upper-case name
in the file becomes a key.
''',
    "CHANGELOG.md": '''# Changes

## 2.0

- `TestClient` sends requests to the app in tests.
''',
    "demo/hello.py": '''from app.testing import TestClient

TestClient().get("/hello")
''',
}


@pytest.fixture
def app(make_repo: Callable[..., GitRepo], tmp_path: Path) -> tuple[Searcher, SearchCorpus]:
    return fake_search(make_repo(FILES).path, tmp_path / "i.duckdb")


def run(app: tuple[Searcher, SearchCorpus], query: str) -> SearchOutcome:
    searcher, corpus = app
    return searcher.search(corpus, query)


@pytest.mark.parametrize(("query", "intent"), [
    ("how do I test my app without a server?", "how_to"),
    ("how can I write tests for a view?", "how_to"),
    ("which tests cover the client?", "tests"),
    ("is there a test for the client?", "tests"),
    ("where is the client documented?", "docs"),
    ("show me an example of the client", "examples"),
    ("test whether the value is short enough", "implementation"),
    ("where is `tests.helpers` defined?", "implementation"),
])
def test_intent_comes_from_the_question_not_from_code_or_values(query: str, intent: str
                                                                ) -> None:
    assert detect_intent(query).intent == intent


def test_the_codebases_own_folder_names_ask_for_their_role(
        app: tuple[Searcher, SearchCorpus]) -> None:
    _, corpus = app
    assert "demo" in corpus.role_markers["examples"]
    assert detect_intent("is there a demo of the client?", corpus.role_markers).intent == \
        "examples"


def test_how_do_i_test_finds_the_testing_utility_and_its_page_before_the_tests(
        app: tuple[Searcher, SearchCorpus]) -> None:
    outcome = run(app, "how do I test my app without running a server?")
    top = [h.path for h in outcome.hits[:3]]
    assert "app/testing.py" in top and "docs/testing.md" in top
    assert outcome.hits[0].role != "test"


def test_a_changelog_steps_back_behind_the_page_documenting_the_name(
        app: tuple[Searcher, SearchCorpus]) -> None:
    paths = [h.path for h in run(app, "where is `TestClient` documented?").hits]
    assert paths.index("docs/testing.md") < paths.index("CHANGELOG.md")


def test_a_type_stub_steps_back_behind_its_module(app: tuple[Searcher, SearchCorpus]
                                                  ) -> None:
    paths = [h.path for h in run(app, "where is `max_len` defined?").hits]
    assert paths.index("app/limits.py") < paths.index("app/limits.pyi")


def test_a_name_word_abbreviating_a_query_word_counts(app: tuple[Searcher, SearchCorpus]
                                                      ) -> None:
    _, corpus = app
    ranked = [corpus.chunks[i].symbol for i, _ in name_ranking(corpus, "maximum length")]
    assert "app.limits.max_len" in ranked


def test_the_docs_words_around_a_name_find_its_definition(
        app: tuple[Searcher, SearchCorpus]) -> None:
    _, corpus = app
    [(best, _), *_] = anchor_ranking(corpus, "load the configuration from a Python file")
    assert corpus.chunks[best].symbol == "app.config.Config.from_pyfile"
    assert anchor_ranking(corpus, "TestClient sends requests")[0][0] != best


def test_an_error_another_package_raises_is_answered_with_nothing(
        app: tuple[Searcher, SearchCorpus]) -> None:
    outcome = run(app, "otherlib.errors.ConfigMissing: the file settings.toml was not found")
    assert outcome.hits == []
    assert outcome.message and "raised by another package" in outcome.message


def test_the_users_values_in_a_reported_error_are_no_unknown_concepts(
        app: tuple[Searcher, SearchCorpus]) -> None:
    outcome = run(app, "ValueError: Kubernetesdeploymentz config from_pyfile failed")
    assert "never mentions" not in (outcome.message or "")
    quoted = run(app, "the config file 'kubernetesdeploymentz.py' will not load")
    assert "never mentions" not in (quoted.message or "")


def test_names_written_as_code_that_the_codebase_never_mentions_get_nothing(
        app: tuple[Searcher, SearchCorpus]) -> None:
    outcome = run(app, "which function merges the event_dict into the app_state?")
    assert outcome.hits == []
    assert outcome.message and "'app_state', 'event_dict'" in outcome.message
    _, corpus = app
    assert unknown_names(corpus, "is_first or NoneType after from_mapping") == []
    assert unknown_names(corpus, "is_first or NoneType") == ["is_first"]


@pytest.mark.parametrize("query", [
    "where is from_pyfle defined?",  # a typo of from_pyfile
    "how does from_pyfile read my_settings_module?",  # one name the codebase has
    "the key 'user_settings' is missing after loading the configuration",  # a value
    "load the configuration from app_config.py",  # a file name
])
def test_typos_known_names_values_and_the_languages_names_are_not_foreign(
        app: tuple[Searcher, SearchCorpus], query: str) -> None:
    assert "never mentions" not in (run(app, query).message or "")


STREAMS = {
    "net/errors.py": '''class IncompleteRead(Exception):
    pass
''',
    "net/streams.py": '''from net.errors import IncompleteRead


def receive_exactly(stream, count):
    data = stream.read(count)
    if len(data) < count:
        raise IncompleteRead
    return data


def receive_until(stream, delimiter):
    data = stream.read_until(delimiter)
    if not data.endswith(delimiter):
        raise IncompleteRead from None
    return data


def close(stream):
    if stream.closed:
        raise RuntimeError("already closed")
    stream.closed = True
''',
}


def test_the_exception_its_best_candidates_raise_is_found(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    _, corpus = fake_search(make_repo(STREAMS).path, tmp_path / "s.duckdb")
    index = {c.symbol: i for i, c in enumerate(corpus.chunks)}
    raisers = [(index["net.streams.receive_exactly"], 0.3),
               (index["net.streams.receive_until"], 0.2)]
    [(found, vote)] = raised_ranking(corpus, raisers)
    assert corpus.chunks[found].symbol == "net.errors.IncompleteRead"
    assert vote == pytest.approx(0.5)
    # One raiser may raise it in passing: no vote.
    assert raised_ranking(corpus, raisers[:1]) == []


def test_a_question_about_raise_sites_reaches_the_exception_class(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    _, corpus = fake_search(make_repo(STREAMS).path, tmp_path / "s.duckdb")
    outcome = search(corpus, "what is raised when receive exactly reads too little data?")
    [hit] = [h for h in outcome.hits if h.symbol == "net.errors.IncompleteRead"]
    assert "raised" in hit.components


def test_a_class_several_of_the_best_candidates_belong_to_is_found(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    _, corpus = fake_search(make_repo(FILES).path, tmp_path / "c.duckdb")
    index = {c.symbol: i for i, c in enumerate(corpus.chunks)}
    members = [(index["app.config.Config.from_pyfile"], 0.3),
               (index["app.config.Config.from_mapping"], 0.2)]
    [(found, vote)] = owner_ranking(corpus, members)
    assert corpus.chunks[found].symbol == "app.config.Config"
    assert corpus.chunks[found].kind == "class_header"
    assert vote == pytest.approx(0.5)
    # One method matching says nothing of the rest of its class.
    assert owner_ranking(corpus, members[:1]) == []
