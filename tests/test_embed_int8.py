"""The int8 products of the onnx-int8 backend, run by ONNX Runtime on small graphs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pr_context.embed_int8 import (
    INT16_MAX,
    NARROWING,
    WIDENING,
    Int8Products,
    Precision,
    precision_for,
    quantize_weight,
)

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")


class _Writer:
    """The least graph writer Int8Products needs."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.initializers: dict[str, Any] = {}

    def node(self, op: str, inputs: list[str], output: str | None = None,
             **attributes: object) -> str:
        name = output or f"{op.lower()}_{len(self.nodes)}"
        self.nodes.append(onnx.helper.make_node(op, inputs, [name], **attributes))
        return name

    def constant(self, name: str, value: np.ndarray | float | list[int]) -> str:
        if name not in self.initializers:
            array = np.asarray(value)
            array = array.astype(np.float32) if array.dtype == np.float64 else array
            self.initializers[name] = onnx.numpy_helper.from_array(array, name)
        return name


def _run(weights: list[np.ndarray], x: np.ndarray, tmp_path: Path,
         precision: Precision | None = None) -> tuple[list[np.ndarray], _Writer]:
    """Each of ``weights`` times ``x`` through one graph, and that graph's writer."""
    writer = _Writer()
    products = Int8Products(writer)
    outputs = [products.product("x", f"w{i}", w, precision) for i, w in enumerate(weights)]
    graph = onnx.helper.make_graph(
        writer.nodes, "products",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [None, None])],
        [onnx.helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None)
         for o in outputs],
        list(writer.initializers.values()))
    path = tmp_path / "products.onnx"
    onnx.save(onnx.helper.make_model(graph, opset_imports=[
        onnx.helper.make_opsetid("", 17)]), str(path))
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x}), writer


def _reference(x: np.ndarray, weight: np.ndarray, precision: Precision) -> np.ndarray:
    """The same arithmetic in numpy: per-token activations, per-column weights."""
    quantized, scale = quantize_weight(weight, precision.weight_top)
    low = x.min(axis=1, keepdims=True)
    step = np.maximum(x.max(axis=1, keepdims=True) - low, 1e-12) / precision.activation_levels
    x_q = np.round((x - low) / step)
    return np.asarray((x_q @ quantized.astype(np.float64)) * step * scale
                      + low * (quantized.sum(axis=0) * scale))


@pytest.mark.parametrize("precision", [WIDENING, NARROWING])
def test_an_integer_product_computes_the_quantized_arithmetic(
        tmp_path: Path, precision: Precision) -> None:
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((9, 48)) * rng.uniform(0.1, 8, (9, 1))).astype(np.float32)
    x[3] = 0.0  # a token of zeros: no range, no division by zero
    weight = rng.standard_normal((48, 20)).astype(np.float32) * 0.05
    (got,), _ = _run([weight], x, tmp_path, precision)
    assert np.allclose(got, _reference(x, weight, precision), rtol=1e-4, atol=1e-5)
    exact = x @ weight
    assert np.abs(got - exact).max() < 0.05 * np.abs(exact).max()
    assert np.allclose(got[3], 0.0, atol=1e-6)


def test_a_token_quantizes_alone(tmp_path: Path) -> None:
    # One scale per token: a token of huge values leaves the others' results as they were.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 32)).astype(np.float32)
    weight = rng.standard_normal((32, 16)).astype(np.float32)
    (alone,), _ = _run([weight], x, tmp_path)
    loud = np.vstack([x, np.full((1, 32), 1e4, np.float32)])
    (together,), _ = _run([weight], loud, tmp_path)
    assert np.array_equal(alone, together[:4])


def test_products_of_one_activation_quantize_it_once(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    weights = [rng.standard_normal((24, 24)).astype(np.float32) for _ in range(3)]
    outputs, writer = _run(weights, rng.standard_normal((6, 24)).astype(np.float32),
                           tmp_path)
    assert [n.op_type for n in writer.nodes].count("ReduceMin") == 1
    assert [n.op_type for n in writer.nodes].count("MatMulInteger") == 3
    assert len(outputs) == 3


def test_no_precision_can_saturate_int16_pair_sums() -> None:
    # x86 without VNNI: pairs of uint8 x int8 products summed in int16 (module doc).
    for precision in (WIDENING, NARROWING):
        assert precision.pair_sum_bound <= INT16_MAX
        assert precision.activation_levels <= 255
    weight = np.random.default_rng(1).standard_normal((64, 8)).astype(np.float32)
    for top in (WIDENING.weight_top, NARROWING.weight_top):
        quantized, _ = quantize_weight(weight, top)
        assert quantized.dtype == np.int8
        assert int(np.abs(quantized.astype(np.int16)).max()) == top


def test_narrowing_weights_take_the_narrowing_precision() -> None:
    assert precision_for(np.zeros((1536, 384))) == NARROWING
    assert precision_for(np.zeros((384, 1536))) == WIDENING
    assert precision_for(np.zeros((384, 384))) == WIDENING
