"""The onnx-int8 backend's matrix products: int8 weights, activations quantized per token.

Each product of an activation ``x`` (tokens x K) with a weight ``W`` (K x N) of a linear
layer runs as an integer product (``MatMulInteger``); the attention's own products, of two
activations, stay fp32. The weight is quantized once, per output column:
``W ~ W_q * w_scale`` (int8, symmetric). The activation is quantized as the graph runs,
per token (row), over that token's own range: ``x ~ low + step * x_q`` with ``x_q`` in
``0..levels`` (uint8). Then

    x @ W ~ step * (x_q @ W_q) * w_scale + low * (column sums of W_q * w_scale)

One scale per token, rather than ONNX Runtime's dynamic quantization's one per text,
keeps a token of wide range from coarsening every other token's values, and it gives a
token the same integers whatever else is in the batch. On 150 sphinx texts: mean cosine
to torch 0.9980 where the dynamic quantization that keeps the feed-forward outputs in fp32
gave 0.9965, in 0.52x of the fp32 graph's time instead of 0.69x
(docs/embedding-backends.md, levers).

On x86 CPUs without VNNI, ONNX Runtime sums pairs of uint8 x int8 products in int16,
saturating past 32,767. Every precision here keeps ``2 * levels * weight_top`` under it,
so every x86 CPU computes the same integers: 255 levels with 7-bit weights (within ±63),
or, for each layer's feed-forward output product (its weight narrows: more rows than
columns), 127 levels with 8-bit weights, whose 1,536-long columns lose the most to
7 bits while the activation's range after the non-linearity is mostly on one side of 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

__all__ = ["INT16_MAX", "NARROWING", "WIDENING", "Int8Products", "Precision",
           "precision_for", "quantize_weight"]

INT16_MAX = 32767
_TINY = 1e-12  # a column or token of zeros keeps a non-zero scale
_FLOAT = 1  # onnx.TensorProto.FLOAT
_UINT8 = 2  # onnx.TensorProto.UINT8


@dataclass(frozen=True)
class Precision:
    """How one product is quantized: its weight's bits and its activation's levels."""

    weight_bits: int
    activation_levels: int

    @property
    def weight_top(self) -> int:
        """The largest quantized weight's magnitude (symmetric)."""
        return int(2 ** (self.weight_bits - 1)) - 1

    @property
    def pair_sum_bound(self) -> int:
        """The largest sum of two uint8 x int8 products this precision can make."""
        return 2 * self.activation_levels * self.weight_top


WIDENING = Precision(weight_bits=7, activation_levels=255)  # and square products
NARROWING = Precision(weight_bits=8, activation_levels=127)


def precision_for(weight: np.ndarray) -> Precision:
    """The precision of a product with ``weight`` (K x N), by its shape (module doc)."""
    return NARROWING if weight.shape[0] > weight.shape[1] else WIDENING


def quantize_weight(weight: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """``weight`` (K x N) as int8 within ±``top`` and one fp32 scale per column."""
    scale = np.maximum(np.abs(weight).max(axis=0), _TINY) / top
    quantized = np.clip(np.round(weight / scale), -top, top).astype(np.int8)
    return quantized, scale.astype(np.float32)


class GraphNodes(Protocol):
    """What ``Int8Products`` needs of a graph writer (``embed_graph._GraphWriter``)."""

    def node(self, op: str, inputs: list[str], output: str | None = None,
             **attributes: object) -> str: ...

    def constant(self, name: str, value: np.ndarray | float | list[int]) -> str: ...


class Int8Products:
    """Writes integer products into one graph; an activation used by several products
    (query, key and value) is quantized once per precision."""

    def __init__(self, graph: GraphNodes) -> None:
        self._graph = graph
        self._activations: dict[tuple[str, int], tuple[str, str, str]] = {}

    def product(self, x: str, name: str, weight: np.ndarray,
                precision: Precision | None = None) -> str:
        """``x @ weight`` (fp32 out), ``name`` naming the weight's constants."""
        graph = self._graph
        chosen = precision or precision_for(weight)
        quantized, scale = quantize_weight(weight, chosen.weight_top)
        x_q, step, low = self._activation(x, chosen.activation_levels)
        integers = graph.node("MatMulInteger", [x_q, graph.constant(f"{name}.int8",
                                                                    quantized)])
        floats = graph.node("Mul", [graph.node("Cast", [integers], to=_FLOAT), step])
        scaled = graph.node("Mul", [floats, graph.constant(f"{name}.scale", scale)])
        sums = (quantized.astype(np.int64).sum(axis=0) * scale.astype(np.float64))
        offset = graph.node("Mul", [low, graph.constant(f"{name}.column_sums",
                                                        sums.astype(np.float32))])
        return graph.node("Add", [scaled, offset])

    def _activation(self, x: str, levels: int) -> tuple[str, str, str]:
        """``x`` as uint8 per token, with each token's step and low (tokens x 1)."""
        key = (x, levels)
        if key not in self._activations:
            graph = self._graph
            low = graph.node("ReduceMin", [x], axes=[-1], keepdims=1)
            high = graph.node("ReduceMax", [x], axes=[-1], keepdims=1)
            span = graph.node("Max", [graph.node("Sub", [high, low]),
                                      graph.constant("int8.tiny", _TINY)])
            step = graph.node("Div", [span, graph.constant(f"int8.levels_{levels}",
                                                           float(levels))])
            steps = graph.node("Div", [graph.node("Sub", [x, low]), step])
            x_q = graph.node("Cast", [graph.node("Round", [steps])], to=_UINT8)
            self._activations[key] = (x_q, step, low)
        return self._activations[key]
