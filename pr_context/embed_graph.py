"""A sentence-transformers BERT model as one ONNX graph, built from its weights without torch.

The graph is what sentence-transformers computes for a model made of a BERT encoder, a
pooling module (mean over the attended tokens, or the [CLS] token) and normalisation:
the embeddings (word + position + token type, layer-normalised), each encoder layer
(self-attention with the padding masked out, residual and layer norm, the feed-forward
block, residual and layer norm), the pooling and the L2 normalisation. The weights come
from the model folder's ``model.safetensors``, read here with numpy (a JSON header, then
raw little-endian arrays); the graph is written with the ``onnx`` helper API. No torch,
no tracing, no export step: a fresh machine with ``onnxruntime`` and ``onnx`` runs the
model on first use.

Only the BERT family is built (BERT, MiniLM, and the many sentence models fine-tuned from
them); anything else raises ``EmbeddingError`` naming the torch backend, which runs every
sentence-transformers model.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from pr_context.embed_int8 import Int8Products, Precision
from pr_context.errors import EmbeddingError

__all__ = [
    "GRAPH_INPUTS",
    "GRAPH_OPSET",
    "BertSentenceModel",
    "build_graph",
    "read_bert_sentence_model",
    "read_safetensors",
]

GRAPH_OPSET = 17  # LayerNormalization is a standard operator from 17 on
GRAPH_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
GRAPH_OUTPUT = "embedding"
WEIGHTS_FILE = "model.safetensors"
_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16,
                       "F64": np.float64, "I64": np.int64, "I32": np.int32}
_MAX_HEADER_BYTES = 100 << 20  # the format's own limit
_TORCH_WAY = ("use --embedding-backend torch (the action's embedding-backend: torch; "
              "pip install 'pr-context[torch]'), which runs any sentence-transformers model")
_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"
# Activations written the way torch exports them, so ONNX Runtime's fusions apply.
_ACTIVATIONS = ("gelu", "relu", "gelu_new", "gelu_pytorch_tanh")

Pooling = Literal["mean", "cls"]


@dataclass(frozen=True)
class BertSentenceModel:
    """What the graph and its tokenizer need to know about one model folder."""

    folder: Path  # the transformer's own folder (config, weights, tokenizer)
    max_tokens: int  # sentence-transformers' max_seq_length: longer texts are truncated
    pooling: Pooling
    lowercase: bool  # sentence_bert_config's do_lower_case: texts lowercased first
    config: Mapping[str, Any]  # config.json

    @property
    def hidden_size(self) -> int:
        return int(self.config["hidden_size"])


def read_bert_sentence_model(location: Path) -> BertSentenceModel:
    """The model in ``location`` as the graph builder needs it.

    :raises EmbeddingError: not a local sentence-transformers folder of a BERT-family
        encoder with mean or CLS pooling (the message says why and names the torch way).
    """
    modules = _json(location / "modules.json", location)
    types = [m.get("type") for m in modules] if isinstance(modules, list) else []
    if types not in ([_TRANSFORMER, _POOLING], [_TRANSFORMER, _POOLING, _NORMALIZE]):
        raise _unsupported(location, "its modules.json is not a transformer, a pooling "
                           f"and optionally a normalisation ({types or 'unreadable'})")
    folder = location / str(modules[0].get("path") or "")
    config = _json(folder / "config.json", location)
    pooling = _pooling(_json(location / str(modules[1].get("path")) / "config.json",
                             location), location)
    settings = _json(folder / "sentence_bert_config.json", location)
    _check_bert(config, location)
    _check_no_prompts(location)
    max_tokens = settings.get("max_seq_length")
    if not isinstance(max_tokens, int) or not 0 < max_tokens <= int(
            config.get("max_position_embeddings", 512)):
        raise _unsupported(location, f"its max_seq_length {max_tokens!r} is not a token "
                           "count within the model's positions")
    for needed in (WEIGHTS_FILE, "tokenizer.json"):
        if not (folder / needed).is_file():
            raise _unsupported(location, f"it has no {needed}")
    return BertSentenceModel(folder, max_tokens, pooling,
                             bool(settings.get("do_lower_case")), config)


def _check_bert(config: Mapping[str, Any], location: Path) -> None:
    if config.get("model_type") != "bert":
        raise _unsupported(location, f"it is a {config.get('model_type')!r} model, and the "
                           "ONNX backends build BERT-family encoders only")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise _unsupported(location, "its position embeddings are not absolute")
    if config.get("hidden_act") not in _ACTIVATIONS:
        raise _unsupported(location, f"its activation {config.get('hidden_act')!r} is not "
                           f"one of {', '.join(_ACTIVATIONS)}")
    if config.get("is_decoder") or int(config["hidden_size"]) % int(
            config["num_attention_heads"]):
        raise _unsupported(location, "its attention is not a plain encoder's")


def _check_no_prompts(location: Path) -> None:
    """A model with a default prompt prepends it to every text: not built here."""
    path = location / "config_sentence_transformers.json"
    if path.is_file() and _json(path, location).get("default_prompt_name"):
        raise _unsupported(location, "it prepends a default prompt to every text")


def _pooling(config: Mapping[str, Any], location: Path) -> Pooling:
    modes = sorted(k for k, v in config.items() if k.startswith("pooling_mode") and v is True)
    if modes == ["pooling_mode_mean_tokens"]:
        return "mean"
    if modes == ["pooling_mode_cls_token"]:
        return "cls"
    raise _unsupported(location, f"its pooling ({', '.join(modes) or 'none'}) is neither "
                       "the mean of the tokens nor the [CLS] token")


def _json(path: Path, location: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _unsupported(location, f"{path.name} cannot be read ({exc})") from exc


def _unsupported(location: Path, why: str) -> EmbeddingError:
    return EmbeddingError(f"the ONNX embedding backends cannot build the model in "
                          f"{location}: {why}; {_TORCH_WAY}")


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a ``.safetensors`` file, floating point ones as float32.

    :raises EmbeddingError: the file is missing, truncated or not safetensors.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise EmbeddingError(f"cannot read the model weights {path}: {exc}") from exc
    try:
        return _tensors(raw)
    except (ValueError, KeyError, TypeError, struct.error) as exc:
        raise EmbeddingError(f"the model weights {path} are corrupt or not safetensors "
                             f"({exc}); reinstall the model") from exc


def _tensors(raw: bytes) -> dict[str, np.ndarray]:
    (size,) = struct.unpack_from("<Q", raw)
    if not 0 < size <= min(_MAX_HEADER_BYTES, len(raw) - 8):
        raise ValueError(f"header size {size} does not fit the file")
    header = json.loads(raw[8:8 + size])
    start = 8 + size
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = np.dtype(_SAFETENSORS_DTYPES[entry["dtype"]]).newbyteorder("<")
        begin, end = (int(x) for x in entry["data_offsets"])
        shape = tuple(int(x) for x in entry["shape"])
        count = int(np.prod(shape, dtype=np.int64))
        if end - begin != count * dtype.itemsize or start + end > len(raw) or begin < 0:
            raise ValueError(f"tensor {name} lies outside the file or has the wrong size")
        array = np.frombuffer(raw, dtype, count, start + begin).reshape(shape)
        tensors[name] = _as_float32(array, entry["dtype"])
    return tensors


def _as_float32(array: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "BF16":  # the upper half of a float32
        return (array.astype(np.uint32) << 16).view(np.float32)
    if dtype.startswith("F"):
        return array.astype(np.float32)
    return array


def build_graph(model: BertSentenceModel, target: Path,
                int8: Callable[[np.ndarray], Precision] | None = None) -> None:
    """Write the model's ONNX graph (inputs ``GRAPH_INPUTS``, output ``embedding``: one
    L2-normalised vector per text) to ``target``; with ``int8``, the linear layers' products
    in integers, each at the precision ``int8`` gives its weight (``embed_int8``).

    :raises EmbeddingError: the weights are missing, corrupt, or lack a tensor BERT has.
    """
    import onnx

    weights = _BertWeights(read_safetensors(model.folder / WEIGHTS_FILE))
    graph = _GraphWriter(weights, model.config, int8)
    hidden = graph.encoder()
    pooled = graph.mean_pool(hidden) if model.pooling == "mean" else graph.cls_token(hidden)
    graph.node("Identity", [graph.normalise(pooled)], GRAPH_OUTPUT)
    built = onnx.helper.make_model(
        onnx.helper.make_graph(graph.nodes, "sentence_embedding", graph.inputs(),
                               graph.outputs(model.hidden_size), graph.initializers),
        opset_imports=[onnx.helper.make_opsetid("", GRAPH_OPSET)],
        producer_name="pr-context")
    onnx.checker.check_model(built)
    onnx.save_model(built, str(target))


class _BertWeights:
    """The encoder's tensors by their names inside ``BertModel``, whichever prefix
    (``bert.`` in a masked-LM checkpoint) or layer-norm naming the file uses."""

    def __init__(self, tensors: dict[str, np.ndarray]) -> None:
        self._tensors = tensors
        prefixed = "bert.embeddings.word_embeddings.weight" in tensors
        self._prefix = "bert." if prefixed else ""

    def __getitem__(self, name: str) -> np.ndarray:
        full = self._prefix + name
        old = full.replace("LayerNorm.weight", "LayerNorm.gamma").replace(
            "LayerNorm.bias", "LayerNorm.beta")
        found = self._tensors.get(full, self._tensors.get(old))
        if found is None:
            raise EmbeddingError(f"the model weights lack {full}: not a BERT checkpoint; "
                                 f"{_TORCH_WAY}")
        return found


class _GraphWriter:
    """Collects the nodes and initialisers of one graph; each method adds a stage."""

    def __init__(self, weights: _BertWeights, config: Mapping[str, Any],
                 int8: Callable[[np.ndarray], Precision] | None = None) -> None:
        self.weights = weights
        self.config = config
        self._int8 = int8
        self._products = Int8Products(self)
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._constants: set[str] = set()
        self._count = 0

    def inputs(self) -> list[Any]:
        from onnx import TensorProto, helper

        return [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"])
                for n in GRAPH_INPUTS]

    def outputs(self, size: int) -> list[Any]:
        from onnx import TensorProto, helper

        return [helper.make_tensor_value_info(GRAPH_OUTPUT, TensorProto.FLOAT,
                                              ["batch", size])]

    def node(self, op: str, inputs: list[str], output: str | None = None,
             **attributes: Any) -> str:
        from onnx import helper

        self._count += 1
        name = output or f"{op.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op, inputs, [name], name=f"n{self._count}",
                                           **attributes))
        return name

    def constant(self, name: str, value: np.ndarray | float | list[int]) -> str:
        """An initialiser, added once under ``name`` however often it is asked for."""
        from onnx import numpy_helper

        if name in self._constants:
            return name
        self._constants.add(name)
        array = np.asarray(value, np.int64 if isinstance(value, list) else None)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def weight(self, name: str) -> str:
        return self.constant(name, self.weights[name])

    def linear(self, x: str, prefix: str) -> str:
        """torch's Linear: x @ W.T + b (W stored out x in)."""
        name = f"{prefix}.weight"
        weight = self.weights[name].T
        product = (self._products.product(x, name, weight, self._int8(weight)) if self._int8
                   else self.node("MatMul", [x, self.constant(name, weight)]))
        return self.node("Add", [product, self.weight(f"{prefix}.bias")])

    def layer_norm(self, x: str, prefix: str) -> str:
        return self.node("LayerNormalization", [x, self.weight(f"{prefix}.weight"),
                                                self.weight(f"{prefix}.bias")],
                         axis=-1, epsilon=float(self.config.get("layer_norm_eps", 1e-12)))

    def encoder(self) -> str:
        """The last hidden state: (batch, tokens, hidden)."""
        mask = self.node("Cast", ["attention_mask"], "mask_float", to=1)  # 1: FLOAT
        self._attention_bias(mask)
        x = self._embeddings()
        for layer in range(int(self.config["num_hidden_layers"])):
            x = self._layer(x, f"encoder.layer.{layer}")
        return x

    def _embeddings(self) -> str:
        words = self.node("Gather", [self.weight("embeddings.word_embeddings.weight"),
                                     "input_ids"])
        types = self.node("Gather", [self.weight("embeddings.token_type_embeddings.weight"),
                                     "token_type_ids"])
        tokens = self.node("Shape", ["input_ids"], "tokens", start=1, end=2)
        positions = self.node("Slice", [self.weight("embeddings.position_embeddings.weight"),
                                        self.constant("zero", [0]), tokens,
                                        self.constant("axis_0", [0])])
        summed = self.node("Add", [self.node("Add", [words, types]), positions])
        return self.layer_norm(summed, "embeddings.LayerNorm")

    def _attention_bias(self, mask: str) -> None:
        """0 where a token is attended, the lowest float where it is padding (as
        transformers does), shaped (batch, 1, 1, tokens) to add to attention scores."""
        wide = self.node("Unsqueeze", [mask, self.constant("axes_1_2", [1, 2])])
        inverted = self.node("Sub", [self.constant("one", 1.0), wide])
        self.node("Mul", [inverted, self.constant("lowest", float(np.finfo(np.float32).min))],
                  "attention_bias")

    def _layer(self, x: str, prefix: str) -> str:
        attended = self.linear(self._self_attention(x, f"{prefix}.attention.self"),
                               f"{prefix}.attention.output.dense")
        x = self.layer_norm(self.node("Add", [attended, x]),
                            f"{prefix}.attention.output.LayerNorm")
        inner = self._activation(self.linear(x, f"{prefix}.intermediate.dense"))
        out = self.linear(inner, f"{prefix}.output.dense")
        return self.layer_norm(self.node("Add", [out, x]), f"{prefix}.output.LayerNorm")

    def _self_attention(self, x: str, prefix: str) -> str:
        heads = int(self.config["num_attention_heads"])
        size = int(self.config["hidden_size"]) // heads
        split = self.constant(f"{prefix}.split", [0, 0, heads, size])

        def per_head(name: str, perm: list[int]) -> str:
            projected = self.node("Reshape", [self.linear(x, f"{prefix}.{name}"), split])
            return self.node("Transpose", [projected], perm=perm)

        query = per_head("query", [0, 2, 1, 3])  # (batch, heads, tokens, size)
        key = per_head("key", [0, 2, 3, 1])  # (batch, heads, size, tokens)
        value = per_head("value", [0, 2, 1, 3])
        scores = self.node("Div", [self.node("MatMul", [query, key]),
                                   self.constant(f"{prefix}.scale", float(np.sqrt(size)))])
        weights = self.node("Softmax", [self.node("Add", [scores, "attention_bias"])],
                            axis=-1)
        context = self.node("Transpose", [self.node("MatMul", [weights, value])],
                            perm=[0, 2, 1, 3])
        return self.node("Reshape", [context, self.constant(
            f"{prefix}.merge", [0, 0, heads * size])])

    def _activation(self, x: str) -> str:
        kind = self.config["hidden_act"]
        if kind == "relu":
            return self.node("Relu", [x])
        if kind == "gelu":  # exact: x * (1 + erf(x / sqrt 2)) / 2
            erf = self.node("Erf", [self.node("Div", [x, self.constant(
                "sqrt_2", float(np.sqrt(2.0)))])])
        else:  # the tanh approximation: tanh(sqrt(2/pi) * (x + 0.044715 x^3)) for erf
            cubed = self.node("Pow", [x, self.constant("three", 3.0)])
            inner = self.node("Add", [x, self.node("Mul", [cubed, self.constant(
                "gelu_c", 0.044715)])])
            erf = self.node("Tanh", [self.node("Mul", [inner, self.constant(
                "gelu_k", float(np.sqrt(2.0 / np.pi)))])])
        widened = self.node("Mul", [x, self.node("Add", [erf, self.constant("one", 1.0)])])
        return self.node("Mul", [widened, self.constant("half", 0.5)])

    def mean_pool(self, hidden: str) -> str:
        """The mean of the attended tokens' states (sentence-transformers' clamp at 1e-9)."""
        mask = self.node("Unsqueeze", ["mask_float", self.constant("axis_2", [2])])
        axis = self.constant("axis_1", [1])
        total = self.node("ReduceSum", [self.node("Mul", [hidden, mask]), axis], keepdims=0)
        count = self.node("Max", [self.node("ReduceSum", [mask, axis], keepdims=0),
                                  self.constant("min_count", 1e-9)])
        return self.node("Div", [total, count])

    def cls_token(self, hidden: str) -> str:
        first = self.constant("first", np.asarray(0, np.int64))
        return self.node("Gather", [hidden, first], axis=1)

    def normalise(self, pooled: str) -> str:
        """x / max(|x|, 1e-12), as torch.nn.functional.normalize."""
        norm = self.node("ReduceL2", [pooled], axes=[1], keepdims=1)
        return self.node("Div", [pooled, self.node("Max", [norm, self.constant(
            "min_norm", 1e-12)])])
