"""Hybrid search on a small real repository: roles, intent, structure, threshold, contract."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from rank_bm25 import BM25Okapi

from pr_context.cli import cli
from pr_context.errors import EmbeddingError
from pr_context.git import open_repository
from pr_context.index.store import IndexStore
from pr_context.pipeline import Searcher, model_loading
from pr_context.progress import SilentProgress
from pr_context.retrieve import SearchOutcome
from pr_context.retrieve.corpus import SearchCorpus
from pr_context.retrieve.fusion import asked_kinds, detect_intent, role_weight
from pr_context.retrieve.name_meaning import name_phrase
from pr_context.retrieve.signals import bm25_scores, name_ranking, structure_ranking
from pr_context.retrieve.tokens import (
    identifiers,
    proper_names,
    run_together_names,
    stem,
    technology_names,
    tokenize,
)
from tests.conftest import GitRepo
from tests.fakes import FakeEmbedder, fake_search

FILES = {
    "shop/session.py": '''"""Sessions for the shop."""
from shop.tokens import validate_refresh_token


def create_session(user, refresh_token):
    """Create a session, refusing an expired refresh token."""
    if not validate_refresh_token(refresh_token):
        raise ExpiredTokenError("refresh token expired")
    return {"user": user}


class ExpiredTokenError(Exception):
    """The refresh token is past its expiry."""
''',
    "shop/tokens.py": '''def validate_refresh_token(token):
    """True while the refresh token has not expired."""
    return token.expires_at > now()


def now():
    return 0
''',
    "shop/legacy/session.py": '''def create_session(user, refresh_token):
    """Old session creation: checks the expired refresh token inline. Deprecated."""
    import warnings
    warnings.warn("use shop.session", DeprecationWarning)
    if refresh_token.expired:
        raise ValueError("refresh token expired")
    return {"user": user}
''',
    "tests/test_session.py": '''from shop.session import create_session


def test_create_session_rejects_expired_refresh_token():
    """create_session with an expired refresh token raises ExpiredTokenError."""
    token = FakeToken(expired=True)
    create_session("u", token)
    create_session("v", token)
''',
    "docs/sessions.md": '''# Sessions

Call `create_session(user, refresh_token)` to start a session. An expired refresh
token is refused with `ExpiredTokenError`.
''',
    "shop/cart.py": '''from shop.session import create_session


def checkout(cart, user, token):
    session = create_session(user, token)
    return cart.total(session)
''',
}


@pytest.fixture
def shop(make_repo: Callable[..., GitRepo], tmp_path: Path) -> tuple[Searcher, SearchCorpus]:
    repo = make_repo(FILES)
    searcher = Searcher(FakeEmbedder(), SilentProgress())
    corpus = searcher.corpus(open_repository(repo.path), "HEAD", tmp_path / "i.duckdb")
    return searcher, corpus


def run(shop: tuple[Searcher, SearchCorpus], query: str, **kwargs: object) -> SearchOutcome:
    searcher, corpus = shop
    return searcher.search(corpus, query, **kwargs)  # type: ignore[arg-type]


def test_tokenizer_splits_identifiers_and_keeps_them_whole() -> None:
    assert tokenize("HTTPResponseError parse_options_header") == [
        "http", "respons", "error", "httpresponseerror",
        "pars", "option", "header", "parseoptionsheader"]
    assert stem("registered") == stem("register") == stem("registers")
    assert stem("suggestions") == stem("suggestion") == stem("suggest")
    assert identifiers("where is `create_session` and Map.bind, ExpiredTokenError?") == [
        "create_session", "Map.bind", "ExpiredTokenError"]


def test_a_name_tokenized_before_gives_the_same_tokens_and_stopwords_still_drop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pr_context.retrieve import tokens

    monkeypatch.setattr(tokens, "_WORD_TOKENS", {})
    monkeypatch.setattr(tokens, "_WORD_TOKENS_KEPT", 3)
    text = "How does the parser read Files_Header and HTTPResponseError, the parser"
    first = tokenize(text)
    assert first == ["how", "doe", "the", "parser", "read", "file", "header", "filesheader",
                     "and", "http", "respons", "error", "httpresponseerror", "the", "parser"]
    assert len(tokens._WORD_TOKENS) <= 3  # emptied whenever it was full
    assert tokenize(text) == first
    assert tokenize(text, drop_stopwords=True) == [
        "parser", "read", "file", "header", "filesheader", "http", "respons", "error",
        "httpresponseerror", "parser"]


def test_a_name_typed_run_together_in_lower_case_is_read_as_that_name(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    assert run_together_names("where is tokentype or TokenType, token_type returned") == [
        "tokentype", "returned"]
    searcher = Searcher(None, SilentProgress())  # lexical only: the words alone decide
    corpus = searcher.corpus(open_repository(make_repo(FILES).path), "HEAD",
                             tmp_path / "lex.duckdb")
    # The index keeps ``create_session`` whole; the stemmer would cut the typed form.
    assert corpus.query_tokens("who calls createsession") == ["call", "createsession"]
    assert corpus.query_tokens("a tokentype") == ["tokentyp"]  # no such name here
    outcome = searcher.search(corpus, "where is createsession called")
    assert outcome.message is None
    assert outcome.hits[0].symbol == "shop.session.create_session"


def test_a_name_of_query_words_run_together_is_spelled_in_full(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo({"keys.py": (
        "def hashkey(*args):\n    return args\n\n\n"
        "def typedmethodkey(self, *args):\n    return hashkey(type(self), *args)\n\n\n"
        "def readconf(path):\n    return open(path).read()\n")})
    corpus = Searcher(None, SilentProgress()).corpus(
        open_repository(repo.path), "HEAD", tmp_path / "lex.duckdb")

    def scores(query: str) -> dict[str | None, float]:
        return {corpus.chunks[i].symbol: score for i, score in name_ranking(corpus, query)}

    # Three of the query's words, in any order; an abbreviation ("conf" for "configuration").
    assert scores("a typed cache key for methods") == {"keys.typedmethodkey": 1.0}
    assert scores("read the configuration file") == {"keys.readconf": 1.0}
    # A name written as one word is one word, halved as ever; every letter is spelled.
    assert scores("what is hashkey") == {"keys.hashkey": 0.5}
    assert scores("a typed key") == {}


def test_a_question_about_the_implementation_reads_the_best_candidates_names(
        shop: tuple[Searcher, SearchCorpus]) -> None:
    searcher, _ = shop
    assert isinstance(searcher.embedder, FakeEmbedder)
    calls = searcher.embedder.calls
    assert name_phrase("anyio._core._tasks.CancelScope.shield") == "cancel scope shield"
    query = "how does checkout total the cart for a session"
    calls.clear()
    outcome = run(shop, query)
    read = [h for h in outcome.candidates if "name_meaning" in h.components]
    assert read and all(h.symbol and h.role != "docs" for h in read)
    assert len(calls) == 2 and "cart checkout" in calls[1]  # the query, then the names
    calls.clear()
    assert run(shop, query) == outcome
    assert len(calls) == 1  # each name is embedded once per searcher
    asking_for_tests = run(shop, "which tests check create_session")
    assert not any("name_meaning" in h.components for h in asking_for_tests.candidates)


FIELD_FILES = {
    "cmd/command.go": (
        "package cmd\n\n// Command is one command.\ntype Command struct {\n"
        "\t// ValidArgsFunction completes arguments.\n\tValidArgsFunction CompletionFunc\n"
        "\tUse string\n}\n\nfunc (c *Command) Run() {\n\tc.ValidArgsFunction(c)\n}\n"),
    "web/options.ts": (
        "export interface PersistOptions {\n  name: string\n  skipHydration?: boolean\n"
        "  retries?: number\n}\n\n"
        "export function persist(options: PersistOptions) {\n"
        "  return options.skipHydration\n}\n"),
    "py/signer.py": (
        "class Signer:\n    salt: bytes = b\"itsdangerous\"\n\n"
        "    def sign(\n        self,\n        max_age: int,\n    ) -> bytes:\n"
        "        return self.salt\n"),
}


def test_a_question_naming_a_kind_of_definition_puts_that_kind_first(
        shop: tuple[Searcher, SearchCorpus]) -> None:
    def first(query: str) -> str | None:
        return run(shop, query).hits[0].symbol

    assert first("where is the expired refresh token handled") == \
        "shop.session.ExpiredTokenError"
    assert first("which function is about the expired refresh token") == \
        "shop.tokens.validate_refresh_token"
    assert first("which class is about the expired refresh token") == \
        "shop.session.ExpiredTokenError"


@pytest.mark.parametrize(("query", "kinds"), [
    ("which class holds a secret value", {"class", "struct"}),
    ("What function parses the date?", {"function", "method"}),
    ("where is the method that retries a request", {"function", "method"}),
    ("which `class` attribute is read", set()),  # code, not the user's words
    ("how does the class decorator work", set()),
])
def test_the_kind_a_question_asks_for_is_read_from_its_prose(query: str,
                                                             kinds: set[str]) -> None:
    assert kinds <= asked_kinds(query) and bool(kinds) == bool(asked_kinds(query))


@pytest.mark.parametrize(("query", "header"), [
    ("ValidArgsFunction", "cmd.Command"),
    ("what does `Command.ValidArgsFunction` do", "cmd.Command"),
    ("what does the skipHydration option do", "web.options.PersistOptions"),
    ("`salt`", "py.signer.Signer"),
    ("what is `retries`", "web.options.PersistOptions"),  # one word, stemmed in the index
])
def test_a_field_named_as_code_finds_the_class_declaring_it(
        make_repo: Callable[..., GitRepo], tmp_path: Path, query: str, header: str) -> None:
    searcher = Searcher(FakeEmbedder(), SilentProgress())
    corpus = searcher.corpus(open_repository(make_repo(FIELD_FILES).path), "HEAD",
                             tmp_path / "i.duckdb")
    assert [(corpus.chunks[i].symbol, corpus.chunks[i].kind)
            for i, _ in structure_ranking(corpus, query)] == [(header, "class_header")]


def test_a_parameter_on_its_own_line_declares_no_field(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    searcher = Searcher(FakeEmbedder(), SilentProgress())
    corpus = searcher.corpus(open_repository(make_repo(FIELD_FILES).path), "HEAD",
                             tmp_path / "i.duckdb")
    assert structure_ranking(corpus, "`max_age`") == []


MEMBER_FILES = {
    "src/keys.rs": (
        "pub struct Keys;\n\nimpl Iterator for Keys {\n    type Item = String;\n\n"
        "    fn next(&mut self) -> Option<String> {\n        None\n    }\n}\n"),
    "web/store.ts": (
        "export interface StoreApi {\n  subscribe(listener: () => void): () => void\n"
        "  destroy(): void\n}\n"),
}


@pytest.mark.parametrize(("query", "header", "line"), [
    ("what is `Keys.Item`", "keys.Keys", 3),
    ("`StoreApi.subscribe`", "web.store.StoreApi", 1),
])
def test_a_bodiless_member_named_as_code_finds_its_container(
        make_repo: Callable[..., GitRepo], tmp_path: Path, query: str, header: str,
        line: int) -> None:
    searcher = Searcher(FakeEmbedder(), SilentProgress())
    corpus = searcher.corpus(open_repository(make_repo(MEMBER_FILES).path), "HEAD",
                             tmp_path / "i.duckdb")
    assert [(corpus.chunks[i].symbol, corpus.chunks[i].start_line)
            for i, _ in structure_ranking(corpus, query)] == [(header, line)]


def test_identifier_query_puts_the_definition_first(shop: tuple[Searcher, SearchCorpus]
                                                    ) -> None:
    outcome = run(shop, "where is create_session defined")
    top = outcome.hits[0]
    assert (top.path, top.symbol) == ("shop/session.py", "shop.session.create_session")
    assert top.components["structure"] > 0


def test_deprecated_copy_is_left_out_unless_asked_for(shop: tuple[Searcher, SearchCorpus]
                                                      ) -> None:
    plain = run(shop, "how does create_session handle an expired refresh token")
    assert all(h.role != "deprecated" for h in plain.hits)
    asked = run(shop, "the legacy deprecated create_session")
    assert any(h.path == "shop/legacy/session.py" for h in asked.hits)


def test_implementation_outranks_a_more_similar_test(shop: tuple[Searcher, SearchCorpus]
                                                     ) -> None:
    outcome = run(shop, "create session rejects expired refresh token")
    assert outcome.hits[0].role == "production"
    assert outcome.intent == "implementation"


def test_test_intent_prefers_tests(shop: tuple[Searcher, SearchCorpus]) -> None:
    outcome = run(shop, "which tests cover an expired refresh token in create_session")
    assert outcome.intent == "tests"
    assert outcome.hits[0].path == "tests/test_session.py"


def test_roles_not_asked_for_step_back_behind_the_implementation() -> None:
    tests = detect_intent("which tests cover the argument validators?")
    weights = {role: role_weight(role, tests)
               for role in ("test", "production", "config", "docs", "example")}
    assert weights["test"] > weights["production"]
    assert max(weights["config"], weights["docs"], weights["example"]) < weights["production"]


def test_docs_intent_prefers_docs(shop: tuple[Searcher, SearchCorpus]) -> None:
    outcome = run(shop, "where is the expired refresh token documented")
    assert outcome.hits[0].path == "docs/sessions.md"


def test_nothing_similar_is_an_empty_answer_with_a_reason(
        shop: tuple[Searcher, SearchCorpus]) -> None:
    outcome = run(shop, "quota for pods per zone")
    assert outcome.hits == []
    assert outcome.message and "relevance threshold" in outcome.message


def test_a_rare_word_the_codebase_never_uses_means_nothing_relevant(
        shop: tuple[Searcher, SearchCorpus]) -> None:
    outcome = run(shop, "refresh the session token stored in kubernetes2 secrets")
    assert outcome.hits == []
    assert outcome.message == "nothing relevant: the codebase never mentions 'kubernetes2'"


PARAPHRASE_FILES = {
    "schema/options.py": (
        "def apply_nested_options(schema, options):\n"
        "    \"\"\"Apply the nested schema options to the schema.\"\"\"\n"
        "    for name, value in options.items():\n"
        "        setattr(schema, name, value)\n    return schema\n"),
    "schema/fields.py": (
        "class Field:\n    \"\"\"One field of a schema.\"\"\"\n\n"
        "    def serialize(self, value):\n        return str(value)\n"),
}


@pytest.mark.parametrize(("query", "message"), [
    # a common word among words one similar chunk holds: the user's own wording
    ("apply the nested schema options, consolidates", None),
    # a technology or a product is something the codebase has or has not
    ("apply the nested schema options, elasticsearch",
     "nothing relevant: the codebase never mentions 'elasticsearch'"),
    ("apply the nested schema options, Kubernetesclusters",
     "nothing relevant: the codebase never mentions 'Kubernetesclusters'"),
])
def test_an_unknown_common_word_among_words_one_chunk_holds_is_a_paraphrase(
        make_repo: Callable[..., GitRepo], tmp_path: Path, query: str,
        message: str | None) -> None:
    searcher, corpus = fake_search(make_repo(PARAPHRASE_FILES).path, tmp_path / "i.duckdb")
    outcome = searcher.search(corpus, query)
    assert outcome.message == message
    assert [h.symbol for h in outcome.hits[:1]] == (
        ["schema.options.apply_nested_options"] if message is None else [])


def test_a_definition_whose_name_the_query_mostly_spells_is_kept_however_unlike_its_body(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    files = {
        "flow/stack.py": (
            "def build_filter_stack(steps):\n"
            "    return [s for s in steps if s.enabled][::-1]\n\n\n"
            "def stack_items(xs):\n    return sorted(set(xs))[:3]\n"),
        "flow/notes.py": (
            "def describe():\n"
            "    \"\"\"Setup notes: return what a filter or a stack holds, and setup.\"\"\"\n"
            "    return 'setup return filter stack'\n"),
    }
    searcher, corpus = fake_search(make_repo(files).path, tmp_path / "i.duckdb")
    found = [h.symbol for h in searcher.search(corpus, "setup and return a filter stack").hits]
    assert "flow.stack.build_filter_stack" in found
    assert "flow.stack.stack_items" not in found  # half a name spelled is no such evidence


def test_a_rare_word_negating_a_word_the_codebase_uses_is_no_unknown_concept(
        shop: tuple[Searcher, SearchCorpus]) -> None:
    # "misvalidated" is split by the tokenizer, but it is about validation.
    outcome = run(shop, "when is a refresh token misvalidated")
    assert outcome.message is None
    assert outcome.hits


@pytest.mark.parametrize("query", [
    "how is an expired refresh token prevalidated",  # a participle
    "how do I deserialize the refresh token",  # an -ize verb
])
def test_a_rare_word_saying_how_is_a_paraphrase_not_a_missing_concept(
        shop: tuple[Searcher, SearchCorpus], query: str) -> None:
    outcome = run(shop, query)
    assert outcome.message is None
    assert outcome.hits


def test_a_rare_word_only_tests_use_names_nothing_the_codebase_does(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    test_file = ('from shop.session import create_session\n\n\n'
                 'def test_session_for_a_cluster_host():\n'
                 '    """A refresh token issued by kubernetes2 still makes a session."""\n'
                 '    assert create_session("kubernetes2", "token")\n')
    repo = make_repo({**FILES, "tests/test_cluster.py": test_file})
    searcher = Searcher(FakeEmbedder(), SilentProgress())
    corpus = searcher.corpus(open_repository(repo.path), "HEAD", tmp_path / "i.duckdb")
    outcome = searcher.search(corpus, "refresh the session token stored in kubernetes2 secrets")
    assert outcome.hits == []
    assert outcome.message == ("nothing relevant: the codebase mentions 'kubernetes2' only in "
                               "its tests")
    asked = searcher.search(corpus, "which tests create a session for kubernetes2")
    assert asked.hits and asked.hits[0].path == "tests/test_cluster.py"


def test_a_name_of_the_language_itself_is_no_concept_the_codebase_lacks(
        shop: tuple[Searcher, SearchCorpus]) -> None:
    outcome = run(shop, "refresh token session raises KeyboardInterrupt when expired")
    assert outcome.message is None
    assert outcome.hits


def test_a_product_name_the_codebase_never_uses_means_nothing_relevant(
        shop: tuple[Searcher, SearchCorpus]) -> None:
    outcome = run(shop, "keep the refresh token of each session in MongoDatabase")
    assert outcome.hits == []
    assert outcome.message == "nothing relevant: the codebase never mentions 'MongoDatabase'"


def test_a_technology_the_codebase_never_names_means_nothing_relevant(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    # "pdf" and "csv" are whole words to the embedding tokenizer, so only the list of
    # formats and services knows they name something the code would have to work with.
    repo = make_repo({**FILES, "shop/export.py": (
        'def export_sessions_csv(sessions):\n'
        '    """Write each session\'s user and refresh token as a CSV row."""\n'
        '    rows = []\n'
        '    for s in sessions:\n'
        '        rows.append(f"{s.user},{s.token}")\n'
        '    return rows\n')})
    searcher = Searcher(FakeEmbedder(), SilentProgress())
    corpus = searcher.corpus(open_repository(repo.path), "HEAD", tmp_path / "t.duckdb")
    refused = searcher.search(corpus, "export each session's refresh token to a PDF report")
    assert refused.hits == []
    assert refused.message == "nothing relevant: the codebase never mentions 'PDF'"
    named = searcher.search(corpus, "export each session's refresh token to a CSV report")
    assert named.message is None
    assert named.hits[0].symbol == "shop.export.export_sessions_csv"


def test_technology_names_are_the_listed_ones_written_in_prose() -> None:
    query = "send the PDF through Kafka, not `csv_rows` or pdf.write(), from behind nginx"
    assert technology_names(query) == ["PDF", "Kafka"]


def test_proper_names_are_capitalised_compounds_in_prose() -> None:
    query = "PostgreSQL or GraphQL, not `SqliteDict`, pkg.MultiDict, Cache() or KeyError: x"
    assert proper_names(query) == ["PostgreSQL", "GraphQL"]


# A rare word the codebase uses twice: once where it means something else (an icon
# name in a table), once beside the code it is about.
HOMONYM_FILES = FILES | {
    "shop/icons.py": '''ICONS = {
    "clipboard2": "copy icon", "umbrella": "rain icon", "rocket": "launch icon",
    "printer": "print icon", "hourglass": "wait icon", "anchor": "port icon",
    "compass": "north icon", "lantern": "light icon", "ribbon": "award icon",
}
''',
    "shop/vault.py": '''def keep_refresh_token(token):
    """Keep the refresh token in the vault2 store until it expires."""
    return token
''',
}


@pytest.fixture
def homonyms(make_repo: Callable[..., GitRepo], tmp_path: Path
             ) -> tuple[Searcher, SearchCorpus]:
    repo = make_repo(HOMONYM_FILES)
    searcher = Searcher(FakeEmbedder(), SilentProgress())
    corpus = searcher.corpus(open_repository(repo.path), "HEAD", tmp_path / "h.duckdb")
    return searcher, corpus


def test_a_rare_word_used_only_where_it_means_something_else_means_nothing_relevant(
        homonyms: tuple[Searcher, SearchCorpus]) -> None:
    outcome = run(homonyms, "copy the refresh token to the clipboard2")
    assert outcome.hits == []
    assert outcome.message == ("nothing relevant: the codebase mentions 'clipboard2' only "
                               "in chunks unrelated to the query")
    assert outcome.candidates  # the evidence for the decision stays inspectable


def test_a_rare_word_used_beside_the_answer_keeps_the_answer(
        homonyms: tuple[Searcher, SearchCorpus]) -> None:
    outcome = run(homonyms, "where is the refresh token kept in the vault2 store")
    assert outcome.message is None
    assert outcome.hits[0].symbol == "shop.vault.keep_refresh_token"


def test_a_name_written_as_code_overrides_the_threshold(
        shop: tuple[Searcher, SearchCorpus]) -> None:
    outcome = run(shop, "does `validate_refresh_token` run in kubernetes2 pods")
    assert outcome.hits[0].symbol == "shop.tokens.validate_refresh_token"


def test_traceback_frames_point_at_the_raising_code(shop: tuple[Searcher, SearchCorpus]
                                                    ) -> None:
    query = ('Traceback (most recent call last):\n'
             '  File "/site-packages/shop/session.py", line 8, in create_session\n'
             'shop.session.ExpiredTokenError: refresh token expired')
    outcome = run(shop, query)
    assert outcome.hits[0].symbol == "shop.session.create_session"


TRACE_FILES = {
    "web/cart.ts": ("export function total(items: Item[]): number {\n"
                    "  return items.reduce((sum, item) => sum + item.price, 0)\n}\n\n"
                    "export function checkout(items: Item[]) {\n  return pay(total(items))\n}\n"),
    "cmd/root.go": ("package cmd\n\nfunc Execute() error {\n\treturn run(nil)\n}\n\n"
                    "func run(args []string) error {\n\treturn parse(args[0])\n}\n"),
    "src/main/java/com/acme/Order.java": ("package com.acme;\n\nclass Order {\n"
                                          "    void place() {\n        check();\n    }\n"
                                          "    void check() {\n        throw new X();\n    }\n}\n"),
    "src/pkg/a.py": "def f():\n    return g()\n\n\ndef g():\n    raise ValueError\n",
}


@pytest.mark.parametrize(("query", "symbol"), [
    pytest.param("TypeError: Cannot read properties of undefined (reading 'price')\n"
                 "    at total (/app/web/cart.ts:2:38)\n    at checkout (/app/web/cart.ts:6:14)",
                 "web.cart.total", id="javascript"),
    pytest.param("panic: runtime error: index out of range [0] with length 0\n\n"
                 "goroutine 1 [running]:\nexample.com/app/cmd.run(...)\n"
                 "\t/go/pkg/mod/example.com/app@v1.2.0/cmd/root.go:8 +0x1d\n"
                 "example.com/app/cmd.Execute()\n"
                 "\t/go/pkg/mod/example.com/app@v1.2.0/cmd/root.go:4 +0x25", "cmd.run", id="go"),
    pytest.param("Exception in thread \"main\" com.acme.X\n"
                 "\tat com.acme.Order.check(Order.java:8)\n\tat com.acme.Order.place(Order.java:5)",
                 "com.acme.Order.check", id="java"),
    pytest.param("src/pkg/a.py:2: in f\n    return g()\nsrc/pkg/a.py:6: in g\n    raise ValueError",
                 "pkg.a.g", id="pytest"),
])
def test_stack_frames_of_other_formats_point_at_the_innermost_frame(
        make_repo: Callable[..., GitRepo], tmp_path: Path, query: str, symbol: str) -> None:
    searcher = Searcher(FakeEmbedder(), SilentProgress())
    corpus = searcher.corpus(open_repository(make_repo(TRACE_FILES).path), "HEAD",
                             tmp_path / "i.duckdb")
    outcome = searcher.search(corpus, query)
    assert outcome.hits[0].symbol == symbol
    assert "traceback" in outcome.hits[0].components


def test_path_context_ranks_the_import_neighbourhood_higher(
        shop: tuple[Searcher, SearchCorpus]) -> None:
    query = "validate the token"
    without = run(shop, query)
    near = run(shop, query, path_context="shop/session.py")
    rank = {h.path: h.rank for h in near.hits}
    assert rank["shop/tokens.py"] <= {h.path: h.rank for h in without.hits}["shop/tokens.py"]
    assert near.hits[0].path in {"shop/tokens.py", "shop/session.py"}


def test_results_are_deterministic(shop: tuple[Searcher, SearchCorpus]) -> None:
    first = run(shop, "refresh token session")
    second = run(shop, "refresh token session")
    assert first == second
    scores = [h.score for h in first.hits]
    assert scores == sorted(scores, reverse=True)


def test_lexical_only_index_applies_a_word_coverage_threshold(
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(FILES)
    searcher = Searcher(None, SilentProgress())
    corpus = searcher.corpus(open_repository(repo.path), "HEAD", tmp_path / "lex.duckdb")
    assert corpus.vectors is None
    assert searcher.search(corpus, "expired refresh token session").hits
    empty = searcher.search(corpus, "kubernetes autoscaling quota")
    assert empty.hits == [] and empty.message


def test_cli_search_json_contract(make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo(FILES)
    db = str(tmp_path / "cli.duckdb")
    runner = CliRunner()
    outcome = runner.invoke(cli, ["search", "--repo", str(repo.path), "--db", db,
                                  "--no-embeddings", "--json", "--k", "3", "create_session"])
    assert outcome.exit_code == 0, outcome.stderr
    hits = json.loads(outcome.stdout)
    assert 1 <= len(hits) <= 3
    for key in ("rank", "path", "symbol", "role", "start_line", "end_line", "revision",
                "score"):
        assert key in hits[0]
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    assert len(hits[0]["revision"]) == 40


def test_cli_search_rejects_an_empty_query(make_repo: Callable[..., GitRepo],
                                           tmp_path: Path) -> None:
    repo = make_repo(FILES)
    outcome = CliRunner().invoke(cli, ["search", "--repo", str(repo.path), "--db",
                                       str(tmp_path / "x.duckdb"), "--no-embeddings", "  "])
    assert outcome.exit_code == 2 and "empty" in outcome.stderr


def test_bm25_over_postings_matches_rank_bm25(shop: tuple[Searcher, SearchCorpus]) -> None:
    _, corpus = shop
    terms = tokenize("validate expired refresh token session", drop_stopwords=True)
    expected = BM25Okapi([tokenize(t) or ["_"] for t in corpus.texts]).get_scores(terms)
    assert bm25_scores(corpus, terms) == pytest.approx(expected)


def test_stored_terms_give_rank_bm25s_model_to_the_bit(
        shop: tuple[Searcher, SearchCorpus]) -> None:
    """The model gathered from the index's stored terms is rank-bm25's over the texts."""
    _, corpus = shop
    reference = BM25Okapi([tokenize(t) or ["_"] for t in corpus.texts])
    model = corpus.bm25
    assert model.idf == reference.idf and list(model.idf) == list(reference.idf)
    assert model.doc_len.tolist() == reference.doc_len and model.avgdl == reference.avgdl
    assert (model.k1, model.b) == (reference.k1, reference.b)
    for index, frequencies in enumerate(reference.doc_freqs):
        for term, count in frequencies.items():
            docs, freqs = corpus.bm25_postings[term]
            assert freqs[list(docs).index(index)] == count
    assert sum(len(corpus.bm25_postings[t][0]) for t in corpus.bm25_postings) == sum(
        len(f) for f in reference.doc_freqs)


def test_stored_chunk_uses_give_the_join_of_references_and_chunk_lines(
        shop: tuple[Searcher, SearchCorpus], tmp_path: Path) -> None:
    """Each chunk's stored names equal the references on its lines, as a join finds them."""
    _, corpus = shop
    with IndexStore.open_existing(tmp_path / "i.duckdb") as store:
        rows = store.query(
            "WITH numbered AS (SELECT path, start_line, end_line, "
            "row_number() OVER (ORDER BY path, ordinal) - 1 AS i FROM chunks) "
            "SELECT DISTINCT r.name, n.i FROM refs r JOIN numbered n ON r.path = n.path "
            "AND r.line BETWEEN n.start_line AND n.end_line ORDER BY 1, 2")
    expected: dict[str, list[int]] = {}
    for name, index in rows:
        expected.setdefault(name, []).append(int(index))
        if "." in name:
            expected.setdefault(name.rsplit(".", 1)[-1], []).append(int(index))
    assert rows and corpus.chunks_using == expected


class _LoadingEmbedder(FakeEmbedder):
    """Records the thread of each load; ``broken``: its model cannot be loaded."""

    def __init__(self, broken: bool = False) -> None:
        super().__init__()
        self.broken = broken
        self.loaded_in: list[str] = []

    def load(self) -> None:
        self.loaded_in.append(threading.current_thread().name)
        if self.broken:
            raise EmbeddingError("cannot load embedding model 'fake': broken")


def test_model_loading_loads_the_model_in_a_worker_thread() -> None:
    embedder = _LoadingEmbedder()
    with model_loading(embedder):
        pass
    assert len(embedder.loaded_in) == 1
    assert embedder.loaded_in[0].startswith("model-load")


def test_a_model_that_cannot_load_is_left_to_the_first_embed() -> None:
    embedder = _LoadingEmbedder(broken=True)
    with model_loading(embedder):  # the worker's failure does not end the block
        reached = True
    assert reached and embedder.loaded_in
    with model_loading(None):  # no model (an index without vectors): nothing loads
        pass
