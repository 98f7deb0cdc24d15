"""The embedding model run by ONNX Runtime, from an export of the model's own weights.

The export is made once, locally, with ``torch.onnx.export`` (nothing is downloaded),
with mean pooling and normalisation inside the graph, and optionally quantized to int8
with ONNX Runtime's dynamic quantization. It is cached on disk under a folder named by
the hash of the model's files and the backend; a run that finds it loads it with
``onnxruntime`` and ``tokenizers`` alone, without importing torch, which is what makes a
search or review process start in a fraction of a second. Making the export needs
torch (a dependency of pr-context, so it is there wherever pr-context installed whole).

Every text runs alone (a batch of one): dynamic int8 quantization computes each
activation's scale over the whole batch, padding included, so a text's vector would
otherwise depend on its batch-mates, and an incremental update would not give the
vectors of a full build. Without padding a batch of one costs no more per text here.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from pr_context.errors import EmbeddingError

if TYPE_CHECKING:
    from pr_context.embed import Embeddings

__all__ = ["EXPORT_VERSION", "ONNX_BACKENDS", "OnnxBackend", "OnnxEmbedder", "model_digest"]

OnnxBackend = Literal["onnx", "onnx-int8"]
ONNX_BACKENDS: tuple[OnnxBackend, ...] = ("onnx", "onnx-int8")
# Bump when the export recipe changes (graph, opset, quantization settings): exports and
# the indexes embedded with them are then made anew.
EXPORT_VERSION = "1"
ONNX_OPSET = 17
_MODEL_FILE = "model.onnx"
_RECORD_FILE = "export.json"
_DIGESTS_FILE = "model-digests.json"
_HASH_CHUNK_BYTES = 1 << 20


def model_digest(location: Path, cache_dir: Path) -> str:
    """A hash of every file of a local model folder (names and contents).

    Files are hashed again only when their size or modification time changed since the
    last run (remembered in ``cache_dir``): the weights are tens of megabytes.
    """
    memo_path = cache_dir / _DIGESTS_FILE
    memo = _read_json(memo_path)
    entries: list[tuple[str, str]] = []
    changed = False
    for path in sorted(p for p in location.rglob("*") if p.is_file()):
        stat = path.stat()
        key, stamp = str(path.resolve()), [stat.st_size, stat.st_mtime_ns]
        known = memo.get(key)
        if not (isinstance(known, list) and known[:2] == stamp):
            known = [*stamp, _file_sha256(path)]
            memo[key], changed = known, True
        entries.append((path.relative_to(location).as_posix(), str(known[2])))
    if changed:
        _write_json(memo_path, memo)
    return hashlib.sha256(json.dumps(entries).encode()).hexdigest()


@dataclass(frozen=True)
class _Export:
    """Where one backend's export of one model lies, and what identifies it."""

    folder: Path
    backend: OnnxBackend
    source_digest: str

    @property
    def identity(self) -> str:
        """The backend as an index records it: the variant and a hash of what made it."""
        text = f"{self.backend}:{EXPORT_VERSION}:{self.source_digest}"
        return f"{self.backend}:{hashlib.sha256(text.encode()).hexdigest()[:16]}"

    @property
    def model_file(self) -> Path:
        return self.folder / _MODEL_FILE

    def problem(self) -> str | None:
        """Why the export on disk cannot be used (missing, incomplete, corrupt), or None."""
        if not self.folder.exists():
            return "it is missing"
        record = _read_json(self.folder / _RECORD_FILE)
        if not record:
            return "its record is missing or unreadable"
        if record.get("identity") != self.identity:
            return "it was made for another model or recipe"
        if not self.model_file.is_file():
            return "its model file is missing"
        if _file_sha256(self.model_file) != record.get("sha256"):
            return "its model file is corrupt (hash mismatch)"
        return None


def _export_of(cache_dir: Path, backend: OnnxBackend, source_digest: str) -> _Export:
    folder = cache_dir / f"{backend}-{EXPORT_VERSION}-{source_digest[:16]}"
    return _Export(folder, backend, source_digest)


class OnnxEmbedder:
    """A mean-pooling sentence-transformers model run by ONNX Runtime (see module doc).

    ``location`` is the local model folder; ``warn`` reports an export made or remade.
    """

    def __init__(self, name: str, location: Path, backend: OnnxBackend, cache_dir: Path,
                 max_tokens: int, warn: Callable[[str], None]) -> None:
        self._name = name
        self._location = location
        self._backend = backend
        self._cache_dir = cache_dir
        self._max_tokens = max_tokens
        self._warn = warn
        # Seconds spent inside the model's own inference: the floor the rest is measured on.
        self.encode_seconds = 0.0

    @property
    def name(self) -> str:
        return self._name

    @property
    def backend(self) -> str:
        return self._export.identity

    @property
    def dimension(self) -> int:
        config = _read_json(self._location / "config.json")
        size = config.get("hidden_size")
        if not isinstance(size, int):
            raise EmbeddingError(f"model {self._name} does not report its hidden size")
        return size

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def embed(self, texts: Sequence[str]) -> Embeddings:
        from pr_context.embed import Embeddings

        vectors = np.zeros((len(texts), self.dimension), np.float32)
        if not texts:
            return Embeddings(vectors, ())
        full = self._tokenizer.encode_batch(list(texts))
        counts = tuple(len(e.ids) for e in full)
        long = [i for i, n in enumerate(counts) if n > self._max_tokens]
        truncated = dict(zip(long, self._truncating.encode_batch([texts[i] for i in long]),
                             strict=True))
        session = self._session
        started = time.perf_counter()
        for i, encoding in enumerate(full):
            used = truncated.get(i, encoding)
            vectors[i] = session.run(None, {
                "input_ids": np.asarray([used.ids], np.int64),
                "attention_mask": np.asarray([used.attention_mask], np.int64),
                "token_type_ids": np.asarray([used.type_ids], np.int64),
            })[0][0]
        self.encode_seconds += time.perf_counter() - started
        return Embeddings(vectors, counts)

    def word_pieces(self, word: str) -> int:
        return len(self._tokenizer.encode(word, add_special_tokens=False).ids)

    @cached_property
    def _export(self) -> _Export:
        self._cache_dir.mkdir(parents=True, exist_ok=True)
        digest = model_digest(self._location, self._cache_dir)
        return _export_of(self._cache_dir, self._backend, digest)

    @cached_property
    def _tokenizer(self) -> Any:
        from pr_context.embed import load_tokenizer

        return load_tokenizer(self._location, None)

    @cached_property
    def _truncating(self) -> Any:
        from pr_context.embed import load_tokenizer

        return load_tokenizer(self._location, self._max_tokens)

    @cached_property
    def _session(self) -> Any:
        export = self._export
        problem = export.problem()
        if problem is not None:
            if export.folder.exists():
                self._warn(f"re-exporting the ONNX model in {export.folder}: {problem}")
            else:
                self._warn(f"exporting {self._name} to ONNX ({self._backend}) once, into "
                           f"{export.folder}")
            _make_export(self._location, export)
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # warnings about unused initialisers are noise
        try:
            return onnxruntime.InferenceSession(str(export.model_file), options,
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbeddingError(f"cannot load the ONNX model {export.model_file}: {exc}. "
                                 "Delete that folder to export it again") from exc


def _make_export(location: Path, export: _Export) -> None:
    """Export the model (torch), quantize it if asked, and record it, atomically.

    The int8 model is quantized from the fp32 export when that is already cached
    (no torch needed then).
    """
    export.folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".export-", dir=export.folder.parent))
    try:
        final = work / _MODEL_FILE
        full = _export_of(export.folder.parent, "onnx", export.source_digest)
        if export.backend == "onnx-int8" and full.problem() is None:
            _quantize(full.model_file, final)
        elif export.backend == "onnx-int8":
            exported = work / "fp32.onnx"
            _export_with_torch(location, exported)
            _quantize(exported, final)
            exported.unlink()
        else:
            _export_with_torch(location, final)
        _write_json(work / _RECORD_FILE, {
            "identity": export.identity, "backend": export.backend,
            "source_digest": export.source_digest, "export_version": EXPORT_VERSION,
            "opset": ONNX_OPSET, "sha256": _file_sha256(final)})
        if export.folder.exists():
            shutil.rmtree(export.folder)
        work.replace(export.folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _export_with_torch(location: Path, target: Path) -> None:
    """The model with mean pooling and normalisation, as one ONNX graph."""
    try:
        import torch
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise EmbeddingError(
            "exporting the model to ONNX needs torch and transformers (pip install "
            "torch transformers), or use --embedding-backend torch") from exc

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
    # The tracer's warnings are about shapes this graph keeps dynamic: noise to users.
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Pooled(model), tuple(sample[n] for n in names), str(target),
                          input_names=names, output_names=["embedding"],
                          dynamic_axes={**axes, "embedding": {0: "batch"}},
                          opset_version=ONNX_OPSET, dynamo=False)


def _quantize(source: Path, target: Path) -> None:
    """Dynamic int8 quantization of the matrix products (weights per channel)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8,
                     op_types_to_quantize=["MatMul"], per_channel=True)


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_HASH_CHUNK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Write atomically: a reader sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    with os.fdopen(handle, "w", encoding="utf-8") as file:
        json.dump(data, file, indent=1, sort_keys=True)
    Path(name).replace(path)
