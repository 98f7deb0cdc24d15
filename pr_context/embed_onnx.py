"""The embedding model run by ONNX Runtime, on a graph built from the model's own weights.

The graph (``embed_graph``: the BERT encoder, pooling and normalisation, built from
``model.safetensors`` with numpy and the ``onnx`` helper API) is made once, locally, with
neither torch nor an export step, its linear layers' products optionally in int8
(``embed_int8``: activations quantized per token). It is cached on disk under a folder
named by the hash of the model's files, the backend and the recipe; a run that finds it
loads it with ``onnxruntime`` and ``tokenizers`` alone, which is what makes a search or
review process start in a fraction of a second, and what lets pr-context run without
torch at all.

Every text runs alone (a batch of one): fp32 products differ in their last bits with
the batch's shape, so a text's vector would otherwise depend on its batch-mates, and an
incremental update would not give the vectors of a full build.
The cores are used by running texts side by side, one thread each, rather than by
splitting each operator over threads: a text of ~170 tokens makes small matrices, and
ONNX Runtime's threads spin-wait for each other at every one of ~100 operators, which on
a runner shared with other jobs cost more than the work (docs/embedding-backends.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from pr_context.embed_graph import GRAPH_OPSET, BertSentenceModel, build_graph
from pr_context.embed_int8 import precision_for
from pr_context.errors import EmbeddingError

if TYPE_CHECKING:
    from pr_context.embed import Embeddings

__all__ = ["GRAPH_VERSIONS", "ONNX_BACKENDS", "OnnxBackend", "OnnxEmbedder", "model_digest",
           "run_alone", "session_options"]

OnnxBackend = Literal["onnx", "onnx-int8"]
ONNX_BACKENDS: tuple[OnnxBackend, ...] = ("onnx", "onnx-int8")
# Bump a backend's when its recipe changes (graph, opset, quantization settings): its
# cached graphs and the indexes embedded with them are then made anew. 1 was
# torch.onnx.export's graph; int8's 2 quantized every product, 3 used 8-bit weights, 4
# was ONNX Runtime's dynamic quantization without the feed-forward outputs (5 was never
# released: an experiment's caches hold it), 6 quantizes activations per token.
GRAPH_VERSIONS: dict[str, str] = {"onnx": "2", "onnx-int8": "6"}
_MODEL_FILE = "model.onnx"
_RECORD_FILE = "graph.json"
_DIGESTS_FILE = "model-digests.json"
_HASH_CHUNK_BYTES = 1 << 20


def model_digest(location: Path, cache_dir: Path) -> str:
    """A hash of every file of a local model folder (names and contents).

    Files are hashed again only when their size or modification time changed since the
    last run (remembered in ``cache_dir``): the weights are tens of megabytes.
    """
    files = sorted(p for p in location.rglob("*") if p.is_file())
    hashes = _remembered_sha256s(files, cache_dir)
    entries = [(p.relative_to(location).as_posix(), h) for p, h in zip(files, hashes,
                                                                      strict=True)]
    return hashlib.sha256(json.dumps(entries).encode()).hexdigest()


def _remembered_sha256s(paths: Sequence[Path], cache_dir: Path) -> list[str]:
    """Each file's SHA-256, hashed again only when its size or modification time changed
    since it was last hashed (remembered in ``cache_dir``, shared by every process)."""
    memo_path = cache_dir / _DIGESTS_FILE
    memo = _read_json(memo_path)
    found: list[str] = []
    changed = False
    for path in paths:
        stat = path.stat()
        key, stamp = str(path.resolve()), [stat.st_size, stat.st_mtime_ns]
        known = memo.get(key)
        if not (isinstance(known, list) and known[:2] == stamp):
            known = [*stamp, _file_sha256(path)]
            memo[key], changed = known, True
        found.append(str(known[2]))
    if changed:
        _write_json(memo_path, memo)
    return found


@dataclass(frozen=True)
class _CachedGraph:
    """Where one backend's graph of one model lies, and what identifies it."""

    folder: Path
    backend: OnnxBackend
    source_digest: str
    recipe: str  # the backend's GRAPH_VERSIONS when it was found or made

    @property
    def identity(self) -> str:
        """The backend as an index records it: the variant and a hash of what made it."""
        text = f"{self.backend}:{self.recipe}:{self.source_digest}"
        return f"{self.backend}:{hashlib.sha256(text.encode()).hexdigest()[:16]}"

    @property
    def model_file(self) -> Path:
        return self.folder / _MODEL_FILE

    def problem(self) -> str | None:
        """Why the graph on disk cannot be used (missing, incomplete, corrupt), or None."""
        if not self.folder.exists():
            return "it is missing"
        record = _read_json(self.folder / _RECORD_FILE)
        if not record:
            return "its record is missing or unreadable"
        if record.get("identity") != self.identity:
            return "it was made for another model or recipe"
        if not self.model_file.is_file():
            return "its model file is missing"
        # Hashed once per size and modification time (90 MB: 0.14 s a process).
        if _remembered_sha256s([self.model_file], self.folder.parent)[0] != record.get(
                "sha256"):
            return "its model file is corrupt (hash mismatch)"
        return None


def _cached_graph(cache_dir: Path, backend: OnnxBackend, source_digest: str) -> _CachedGraph:
    recipe = GRAPH_VERSIONS[backend]
    folder = cache_dir / f"{backend}-{recipe}-{source_digest[:16]}"
    return _CachedGraph(folder, backend, source_digest, recipe)


class OnnxEmbedder:
    """A BERT-family sentence-transformers model run by ONNX Runtime (see module doc).

    ``location`` is the model's folder (all of whose files identify it), ``model`` what
    ``embed_graph.read_bert_sentence_model`` found in it; ``warn`` reports a graph built
    or rebuilt.
    """

    def __init__(self, name: str, location: Path, model: BertSentenceModel,
                 backend: OnnxBackend, cache_dir: Path, warn: Callable[[str], None]) -> None:
        self._name = name
        self._location = location
        self._model = model
        self._backend = backend
        self._cache_dir = cache_dir
        self._warn = warn
        # Held while the session is made: a worker thread may load the model (``load``)
        # while the caller's thread embeds, and the graph must be built once.
        self._loading = threading.Lock()
        # Seconds spent inside the model's own inference: the floor the rest is measured on.
        self.encode_seconds = 0.0

    @property
    def name(self) -> str:
        return self._name

    @property
    def backend(self) -> str:
        return self._graph.identity

    @property
    def dimension(self) -> int:
        return self._model.hidden_size

    @property
    def max_tokens(self) -> int:
        return self._model.max_tokens

    def embed(self, texts: Sequence[str], threads: int | None = None) -> Embeddings:
        from pr_context.embed import Embeddings

        vectors = np.zeros((len(texts), self.dimension), np.float32)
        if not texts:
            return Embeddings(vectors, ())
        if self._model.lowercase:
            texts = [text.lower() for text in texts]
        full = self._tokenizer.encode_batch(list(texts))
        counts = tuple(len(e.ids) for e in full)
        long = [i for i, n in enumerate(counts) if n > self.max_tokens]
        truncated = dict(zip(long, self._truncating.encode_batch([texts[i] for i in long]),
                             strict=True))
        used = [truncated.get(i, encoding) for i, encoding in enumerate(full)]
        session = self._session
        started = time.perf_counter()
        run_alone(session, used, vectors, threads)
        self.encode_seconds += time.perf_counter() - started
        return Embeddings(vectors, counts)

    def word_pieces(self, word: str) -> int:
        return len(self._tokenizer.encode(word, add_special_tokens=False).ids)

    def load(self) -> None:
        """The tokenizers and the ONNX Runtime session, made now (cached properties)."""
        self._tokenizer, self._truncating, self._session  # noqa: B018

    @cached_property
    def _graph(self) -> _CachedGraph:
        self._cache_dir.mkdir(parents=True, exist_ok=True)
        digest = model_digest(self._location, self._cache_dir)
        return _cached_graph(self._cache_dir, self._backend, digest)

    @cached_property
    def _tokenizer(self) -> Any:
        from pr_context.embed import load_tokenizer

        return load_tokenizer(self._model.folder, None)

    @cached_property
    def _truncating(self) -> Any:
        from pr_context.embed import load_tokenizer

        return load_tokenizer(self._model.folder, self.max_tokens)

    @property
    def _session(self) -> Any:
        with self._loading:  # the second thread finds the first one's session made
            return self._made_session

    @cached_property
    def _made_session(self) -> Any:
        graph = self._graph
        problem = graph.problem()
        if problem is not None:
            if graph.folder.exists():
                self._warn(f"rebuilding the ONNX graph in {graph.folder}: {problem}")
            else:
                self._warn(f"building the ONNX graph of {self._name} ({self._backend}) "
                           f"once, into {graph.folder}")
            _make_graph(self._model, graph)
        import onnxruntime

        try:
            return onnxruntime.InferenceSession(str(graph.model_file), session_options(),
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbeddingError(f"cannot load the ONNX model {graph.model_file}: {exc}. "
                                 "Delete that folder to build it again") from exc


def run_alone(session: Any, encodings: Sequence[Any], vectors: np.ndarray,
              threads: int | None = None) -> None:
    """Each text's vector into its row of ``vectors``, one text per run, as many runs at
    once as there are cores, or ``threads`` (ONNX Runtime releases the GIL while it
    computes)."""
    def run(i: int) -> None:
        vectors[i] = session.run(None, _feed(encodings[i]))[0][0]

    # Longest first, so that the workers run out of texts at about the same time.
    order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
    workers = min(threads or _usable_cores(), len(order))
    if workers == 1:
        for i in order:
            run(i)
        return
    with ThreadPoolExecutor(workers, thread_name_prefix="onnx-embed") as pool:
        list(pool.map(run, order))


def session_options() -> Any:
    """One thread per run: the texts run side by side instead (see ``run_alone``)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # warnings about unused initialisers are noise
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return options


def _feed(encoding: Any) -> dict[str, np.ndarray]:
    """One text's inputs as a batch of one."""
    return {"input_ids": np.asarray([encoding.ids], np.int64),
            "attention_mask": np.asarray([encoding.attention_mask], np.int64),
            "token_type_ids": np.asarray([encoding.type_ids], np.int64)}


def _usable_cores() -> int:
    """The cores this process may run on (its affinity where the OS tells it)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity else os.cpu_count() or 1)


def _make_graph(model: BertSentenceModel, graph: _CachedGraph) -> None:
    """Build the graph (its products in int8 for onnx-int8) and record it, atomically."""
    graph.folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=graph.folder.parent))
    try:
        final = work / _MODEL_FILE
        build_graph(model, final, precision_for if graph.backend == "onnx-int8" else None)
        _write_json(work / _RECORD_FILE, {
            "identity": graph.identity, "backend": graph.backend,
            "source_digest": graph.source_digest, "graph_version": graph.recipe,
            "opset": GRAPH_OPSET, "sha256": _file_sha256(final)})
        if graph.folder.exists():
            shutil.rmtree(graph.folder)
        work.replace(graph.folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)


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
