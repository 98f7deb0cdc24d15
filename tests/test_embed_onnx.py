"""The ONNX Runtime backends on the real model: built here, cached, checked, identified."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pr_context import embed_onnx
from pr_context.embed import DEFAULT_MODEL, SentenceTransformerEmbedder, make_embedder
from pr_context.embed_onnx import OnnxEmbedder
from pr_context.errors import EmbeddingError
from pr_context.index.store import IndexStore
from tests.conftest import GitRepo
from tests.test_index import index, table_dump
from tests.test_index_property import CONTENTS, apply, step

pytestmark = pytest.mark.model

TEXTS = [
    "def shipping_cost(weight_kg, distance_km):\n    return 0.5 * weight_kg",
    "Retry a flaky network call, doubling the wait after each failure.",
    "class TokenBucket:\n    def take(self, n): ...",
    "x " * 400,  # past the 256-token limit: truncated
    "ok",
    "Größe, naïve café, 東京の天気, emoji 🚀 and → arrows",
    "SELECT id, name FROM users WHERE created_at > now() - interval '1 day';",
    " ".join(f"word{i}" for i in range(120)),  # word pieces past the limit as well
    "@app.route('/api/<int:item_id>', methods=['GET'])\nasync def get(item_id): ...",
    "A long paragraph of prose. " * 20,  # just under or over the limit
]


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(axis=1))


def test_onnx_vectors_agree_with_torch(onnx_embedders: dict[str, OnnxEmbedder],
                                       real_embedder: SentenceTransformerEmbedder) -> None:
    reference = real_embedder.embed(TEXTS)
    full = onnx_embedders["onnx"].embed(TEXTS)
    int8 = onnx_embedders["onnx-int8"].embed(TEXTS)
    assert full.token_counts == int8.token_counts == reference.token_counts
    assert max(reference.token_counts) > real_embedder.max_tokens  # truncation is covered
    assert _cosines(full.vectors, reference.vectors).min() >= 0.9999
    # int8 is close, not equal: a text of a few tokens is its worst case (about 0.988).
    assert _cosines(int8.vectors, reference.vectors).min() > 0.98
    assert _cosines(int8.vectors, reference.vectors).mean() > 0.995
    assert np.allclose(np.linalg.norm(int8.vectors, axis=1), 1.0, atol=1e-4)


def test_int8_runs_every_linear_layer_in_integers(
        onnx_embedders: dict[str, OnnxEmbedder]) -> None:
    import onnx

    model = onnx.load(str(onnx_embedders["onnx-int8"]._graph.model_file))
    constants = {w.name for w in model.graph.initializer}
    ops = [n.op_type for n in model.graph.node]
    layers = onnx_embedders["onnx-int8"]._model.config["num_hidden_layers"]
    # Query, key, value, attention output, widening and narrowing products: 6 per layer;
    # the fp32 products left are the attention's own (2 per layer), of two activations.
    assert ops.count("MatMulInteger") == 6 * layers
    assert not [n for n in model.graph.node if n.op_type == "MatMul"
                and n.input[1] in constants]
    assert ops.count("MatMul") == 2 * layers
    # Query, key and value share one quantized activation: 4 per layer.
    assert ops.count("ReduceMin") == 4 * layers


def test_int8_products_cannot_saturate_int16_pair_sums(
        onnx_embedders: dict[str, OnnxEmbedder]) -> None:
    # x86 CPUs without VNNI sum pairs of uint8 x int8 products in int16: the weights'
    # magnitudes times the activations' levels (read from the graph) must keep under it.
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(onnx_embedders["onnx-int8"]._graph.model_file))
    arrays = {w.name: numpy_helper.to_array(w) for w in model.graph.initializer}
    made_by = {out: node for node in model.graph.node for out in node.output}

    def levels(x_q: str) -> float:  # Cast(Round(Div(Sub(x, low), Div(span, levels))))
        step = made_by[made_by[made_by[x_q].input[0]].input[0]].input[1]
        return float(arrays[made_by[step].input[1]].reshape(-1)[0])

    products = [n for n in model.graph.node if n.op_type == "MatMulInteger"]
    bounds = {(levels(n.input[0]), int(np.abs(arrays[n.input[1]].astype(np.int16)).max()))
              for n in products}
    assert all(arrays[n.input[1]].dtype == np.int8 for n in products)
    assert bounds == {(255.0, 63), (127.0, 127)}
    assert all(2 * a * w <= 32767 for a, w in bounds)


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_a_texts_vector_does_not_depend_on_its_batch_mates(
        onnx_embedders: dict[str, OnnxEmbedder], backend: str) -> None:
    embedder = onnx_embedders[backend]
    batched = embedder.embed(TEXTS).vectors
    for i, text in enumerate(TEXTS):
        assert np.array_equal(embedder.embed([text]).vectors[0], batched[i])
    # Another company, another order, a text twice: the texts run side by side on the
    # cores, and none of that may reach a vector.
    mixed = [TEXTS[3], *reversed(TEXTS), TEXTS[0]]
    assert np.array_equal(embedder.embed(mixed).vectors,
                          batched[[3, *reversed(range(len(TEXTS))), 0]])
    assert embedder._session.get_session_options().intra_op_num_threads == 1


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_vectors_do_not_depend_on_the_threads_or_the_thread_they_run_in(
        onnx_embedders: dict[str, OnnxEmbedder], backend: str) -> None:
    # A review embeds the head's texts on one model thread, in a worker thread, while
    # it builds graphs (index.build.start_index): the vectors of a build, all the same.
    embedder = onnx_embedders[backend]
    spread = embedder.embed(TEXTS)
    with ThreadPoolExecutor(1) as pool:
        alone = pool.submit(embedder.embed, TEXTS, 1).result()
    assert np.array_equal(alone.vectors, spread.vectors)
    assert alone.token_counts == spread.token_counts


def test_word_pieces_come_from_the_tokenizer_file_without_the_model(
        onnx_embedders: dict[str, OnnxEmbedder],
        real_embedder: SentenceTransformerEmbedder) -> None:
    fresh = SentenceTransformerEmbedder()
    words = ["bcrypt", "house", "tokenizer", "PostgreSQL", "serialize", "x"]
    counts = [fresh.word_pieces(w) for w in words]
    assert "_loaded_model" not in vars(fresh)  # counted without loading torch's model
    assert counts == [len(real_embedder._model.tokenizer.tokenize(w)) for w in words]
    assert counts == [onnx_embedders["onnx"].word_pieces(w) for w in words]


def test_the_backend_is_part_of_the_index_identity_and_switching_re_embeds(
        onnx_embedders: dict[str, OnnxEmbedder], make_repo: Callable[..., GitRepo],
        tmp_path: Path) -> None:
    repo = make_repo({"a.py": CONTENTS[0], "pkg/b.py": CONTENTS[1]})
    db = tmp_path / "index.duckdb"
    first, _ = index(repo, db, embedder=onnx_embedders["onnx"])
    again, _ = index(repo, db, embedder=onnx_embedders["onnx"])
    switched, progress = index(repo, db, embedder=onnx_embedders["onnx-int8"])
    assert first.embedded == first.chunks and again.embedded == 0
    assert switched.embedded == switched.chunks and not switched.incremental
    assert any("embedding_backend" in w for w in progress.warnings)
    with IndexStore.open_existing(db) as store:
        assert store.manifest is not None
        assert store.manifest.embedding_backend == onnx_embedders["onnx-int8"].backend
        assert store.manifest.embedding_backend.startswith("onnx-int8:")
    assert first.digest != switched.digest


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(step, min_size=1, max_size=3))
def test_incremental_update_equals_full_build_with_int8_vectors(
        onnx_embedders: dict[str, OnnxEmbedder], commits: list[list[tuple[str, object, str]]]
        ) -> None:
    embedder = onnx_embedders["onnx-int8"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = GitRepo(root / "repo")
        files = {"a.py": CONTENTS[0]}
        repo.write("a.py", CONTENTS[0])
        repo.commit("start")
        db = root / "incremental.duckdb"
        index(repo, db, embedder=embedder)
        for number, ops in enumerate(commits):
            for op in ops:
                apply(repo, files, op)
            repo.commit(f"step {number}")
            updated, _ = index(repo, db, embedder=embedder)
            fresh_db = root / f"fresh{number}.duckdb"
            fresh, _ = index(repo, fresh_db, embedder=embedder)
            assert updated.digest == fresh.digest
            assert table_dump(db) == table_dump(fresh_db)
            assert _vectors(db) == _vectors(fresh_db)


def _vectors(db: Path) -> dict[str, list[float]]:
    """Every stored vector by text hash ({} when nothing was ever embedded)."""
    with IndexStore.open_existing(db) as store:
        if not store.embedding_dimension():
            return {}
        return dict(store.query("SELECT text_hash, vector FROM embeddings"))


_DAMAGES = {"corrupt": "corrupt", "missing model": "model file is missing",
            "missing record": "record is missing", "another recipe": "another model or recipe",
            "missing folder": "building"}


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
@pytest.mark.parametrize("damage", list(_DAMAGES))
def test_a_damaged_graph_is_built_again_with_a_warning(
        onnx_embedders: dict[str, OnnxEmbedder], onnx_cache: Path, damage: str,
        backend: str, caplog: pytest.LogCaptureFixture) -> None:
    expected = onnx_embedders[backend].embed(TEXTS[:2]).vectors
    folder = onnx_embedders[backend]._graph.folder
    _damage(folder, damage)
    warnings: list[str] = []
    embedder = make_embedder(DEFAULT_MODEL, backend, onnx_cache, warnings.append)
    assert np.array_equal(embedder.embed(TEXTS[:2]).vectors, expected)
    assert len(warnings) == 1 and str(folder) in warnings[0]
    assert _DAMAGES[damage] in warnings[0]
    assert not caplog.records  # the quantizer's own advice is not shown to users
    record = json.loads((folder / "graph.json").read_text())
    assert record["identity"] == embedder.backend == onnx_embedders[backend].backend


def test_a_sound_graph_is_hashed_once_and_a_changed_one_is_found_corrupt(
        onnx_embedders: dict[str, OnnxEmbedder], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = onnx_embedders["onnx"]._graph
    folder = tmp_path / shipped.folder.name
    folder.mkdir()
    for name in ("model.onnx", "graph.json"):
        (folder / name).write_bytes((shipped.folder / name).read_bytes())
    graph = dataclasses.replace(shipped, folder=folder)
    assert graph.problem() is None  # hashed, and remembered beside the folder

    def no_hashing(path: Path) -> str:
        raise AssertionError(f"{path} hashed again")

    monkeypatch.setattr(embed_onnx, "_file_sha256", no_hashing)
    assert graph.problem() is None
    monkeypatch.undo()
    # One byte changed in place, as a failing disk or a stray write leaves it: the
    # same size, another modification time.
    model = folder / "model.onnx"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF
    stamp = model.stat().st_mtime_ns
    model.write_bytes(bytes(data))
    os.utime(model, ns=(stamp + 1_000_000, stamp + 1_000_000))
    assert graph.problem() == "its model file is corrupt (hash mismatch)"


def _damage(folder: Path, damage: str) -> None:
    model, record = folder / "model.onnx", folder / "graph.json"
    if damage == "corrupt":
        model.write_bytes(model.read_bytes()[: 1000])
    elif damage == "missing model":
        model.unlink()
    elif damage == "missing record":
        record.unlink()
    elif damage == "another recipe":
        written = json.loads(record.read_text())
        record.write_text(json.dumps({**written, "identity": "onnx:an-older-recipe"}))
    else:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()


def test_a_changed_recipe_changes_the_identity_and_the_index_re_embeds(
        onnx_embedders: dict[str, OnnxEmbedder], onnx_cache: Path,
        make_repo: Callable[..., GitRepo], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo({"a.py": CONTENTS[0], "pkg/b.py": CONTENTS[1]})
    db = tmp_path / "index.duckdb"
    first, _ = index(repo, db, embedder=onnx_embedders["onnx"])
    before = onnx_embedders["onnx"].backend
    monkeypatch.setitem(embed_onnx.GRAPH_VERSIONS, "onnx", "next-recipe")
    warnings: list[str] = []
    changed = make_embedder(DEFAULT_MODEL, "onnx", onnx_cache, warnings.append)
    assert changed.backend.startswith("onnx:")
    assert changed.backend != before == onnx_embedders["onnx"].backend
    again, progress = index(repo, db, embedder=changed)
    assert again.embedded == again.chunks == first.chunks and not again.incremental
    assert any("embedding_backend" in w for w in progress.warnings)
    # Its graph is made in a folder of its own; the old recipe's is left as it was.
    assert len(warnings) == 1 and "next-recipe" in warnings[0]
    assert onnx_embedders["onnx"]._graph.problem() is None


def test_a_model_the_onnx_backend_cannot_run_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="--embedding-backend torch"):
        make_embedder(str(tmp_path), "onnx", tmp_path / "cache", lambda _: None)
    with pytest.raises(EmbeddingError, match="unknown embedding backend"):
        make_embedder(DEFAULT_MODEL, "tensorflow", tmp_path / "cache", lambda _: None)


def test_searching_an_onnx_index_never_imports_torch(
        onnx_embedders: dict[str, OnnxEmbedder], onnx_cache: Path,
        make_repo: Callable[..., GitRepo], tmp_path: Path) -> None:
    repo = make_repo({"a.py": CONTENTS[0], "pkg/b.py": CONTENTS[1]})
    db = tmp_path / "index.duckdb"
    index(repo, db, embedder=onnx_embedders["onnx-int8"])
    script = (
        "import sys\n"
        "from pr_context.cli import main\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert not done.code, done.code\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'sentence_transformers') "
        "if m in sys.modules)\n"
        "print('imported:', heavy)\n")
    done = subprocess.run(
        [sys.executable, "-c", script, "search", "--repo", str(repo.path), "--db", str(db),
         "--onnx-cache", str(onnx_cache), "--json", "where is `alpha` defined"],
        capture_output=True, text=True, check=True)
    assert "imported: []" in done.stdout
    assert json.loads(done.stdout.split("imported:")[0])[0]["path"] == "a.py"


def test_load_makes_the_session_and_tokenizers_the_first_embed_would(
        onnx_embedders: dict[str, OnnxEmbedder], onnx_cache: Path) -> None:
    fresh = make_embedder(DEFAULT_MODEL, "onnx", onnx_cache, pytest.fail)
    assert isinstance(fresh, OnnxEmbedder)
    fresh.load()
    assert {"_made_session", "_tokenizer", "_truncating"} <= set(vars(fresh))
    assert np.array_equal(fresh.embed(TEXTS).vectors, onnx_embedders["onnx"].embed(TEXTS).vectors)


def test_a_load_and_an_embed_at_once_build_the_graph_once(
        onnx_embedders: dict[str, OnnxEmbedder], tmp_path: Path) -> None:
    # A review's worker thread loads the model while its own thread may embed already.
    warnings: list[str] = []
    fresh = make_embedder(DEFAULT_MODEL, "onnx", tmp_path / "cache", warnings.append)
    with ThreadPoolExecutor(2) as pool:
        loading = pool.submit(fresh.load)
        embedded = pool.submit(fresh.embed, TEXTS)
        loading.result()
        vectors = embedded.result().vectors
    assert len(warnings) == 1 and "building the ONNX graph" in warnings[0]
    assert np.array_equal(vectors, onnx_embedders["onnx"].embed(TEXTS).vectors)
