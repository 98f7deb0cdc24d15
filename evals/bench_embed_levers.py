"""Levers on the ONNX backends' speed and quality, each measured beside torch's own encode.

Run as ``python evals/bench_backends.py --parts levers`` (``--sample``, ``--rounds``).
In one process, on a fixed random sample of a corpus's distinct chunk texts (the whole
sphinx sdist, so that their lengths are the corpus's), every variant embeds the same
texts once per round, the order of variants rotating from round to round so that a
machine whose load drifts treats them alike. Each is compared with torch's vectors
(cosine) and, for a way of running a graph, with that graph's vectors for each text
alone (are they the same bits whatever the batch-mates?).

Variants: torch's ``encode`` (batch 32, its default threads, and one thread); the fp32
graph as the backend runs it (each text alone, texts side by side on the cores, one
thread each), alone with operator threads (ONNX Runtime's default, with and without
spin-waiting), and in padded batches sorted by length; the int8 graph as shipped
(``embed_int8``: activations quantized per token) and with one precision for every
product, then ONNX Runtime's dynamic quantization (one activation scale per text), as
onnx-int8 used it until graph recipe 6 and two other ways. Then where the fp32 graph's
time goes, by operator type, and how fast its matrix products run beside one large
product on the same core: what is left to gain without fewer operations.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

Run = Callable[[], np.ndarray]
BATCH = 16  # padded batches: sentence-transformers' way (sorted by length)


@dataclass(frozen=True)
class Variant:
    name: str
    graph: str  # which graph it runs ("torch" for the torch model)
    run: Run


def measure_levers(texts: Sequence[str], sample: int, rounds: int, model: Any,
                   onnx_cache: Path) -> dict[str, Any]:
    """Median seconds, ratio to torch's encode and agreement for every variant."""
    chosen = random.Random(0).sample(list(texts), min(sample, len(texts)))
    with tempfile.TemporaryDirectory(prefix="levers-") as scratch:
        variants = _variants(chosen, model, onnx_cache, Path(scratch))
        vectors = {v.name: v.run() for v in variants}  # also a warm-up
        seconds: dict[str, list[float]] = {v.name: [] for v in variants}
        for round_number in range(rounds):
            shift = round_number % len(variants)
            for variant in (*variants[shift:], *variants[:shift]):
                started = time.perf_counter()
                variant.run()
                seconds[variant.name].append(time.perf_counter() - started)
    return {"sample": len(chosen), "rounds": rounds, "tokens": _token_stats(chosen),
            "variants": [_figures(v, vectors, seconds) for v in variants],
            "profile": operator_profile(chosen, onnx_cache)}


def _figures(variant: Variant, vectors: dict[str, np.ndarray],
             seconds: dict[str, list[float]]) -> dict[str, Any]:
    reference, own = vectors["torch encode"], vectors[variant.name]
    cosines = (own * reference).sum(axis=1)
    alone = vectors.get(f"{variant.graph}, shipped")
    figures = {"name": variant.name, "seconds": seconds[variant.name],
               "torch_s": seconds["torch encode"], "cosine_mean": float(cosines.mean()),
               "cosine_worst": float(cosines.min())}
    if alone is not None and not variant.name.endswith("shipped"):
        figures["max_diff_to_alone"] = float(np.abs(own - alone).max())
    return figures


def _token_stats(texts: Sequence[str]) -> dict[str, float]:
    from pr_context.embed import default_model_path, load_tokenizer

    tokenizer = load_tokenizer(Path(str(default_model_path())), 256)
    counts = np.asarray([len(e.ids) for e in tokenizer.encode_batch(list(texts))])
    return {"mean": float(counts.mean()), "median": float(np.median(counts)),
            "at_limit": float((counts >= 256).mean())}


def _variants(texts: list[str], model: Any, onnx_cache: Path, scratch: Path
              ) -> list[Variant]:
    import torch

    from pr_context.embed import DEFAULT_MODEL, make_embedder

    def encode(threads: int | None) -> np.ndarray:
        before = torch.get_num_threads()
        torch.set_num_threads(threads or before)
        try:
            return np.asarray(model.encode(texts, batch_size=32, normalize_embeddings=True))
        finally:
            torch.set_num_threads(before)

    full = make_embedder(DEFAULT_MODEL, "onnx", onnx_cache, _quiet)
    int8 = make_embedder(DEFAULT_MODEL, "onnx-int8", onnx_cache, _quiet)
    for embedder in (full, int8):
        embedder.embed(["build the graph"])
    graph = full._graph.model_file  # type: ignore[attr-defined]
    encodings = full._truncating.encode_batch(texts)  # type: ignore[attr-defined]
    variants = [
        Variant("torch encode", "torch", lambda: encode(None)),
        Variant("torch encode, 1 thread", "torch", lambda: encode(1)),
        Variant("onnx, shipped", "onnx", lambda: full.embed(texts).vectors),
        *_fp32_ways(graph, encodings),
        Variant("onnx-int8, shipped", "onnx-int8", lambda: int8.embed(texts).vectors),
    ]
    bert = full._model  # type: ignore[attr-defined]
    return variants + [_shipped_way(name, path, encodings)
                       for name, path in _quantized(graph, scratch, bert).items()]


def _fp32_ways(graph: Path, encodings: list[Any]) -> list[Variant]:
    """The fp32 graph run the ways the backend does not."""
    threaded = _session(graph, {})
    calm = _session(graph, {"session.intra_op.allow_spinning": "0"})
    return [
        Variant("onnx, alone, operator threads (spin-wait)", "onnx",
                lambda: _one_by_one(threaded, encodings)),
        Variant("onnx, alone, operator threads (no spin-wait)", "onnx",
                lambda: _one_by_one(calm, encodings)),
        Variant(f"onnx, padded batches of {BATCH} by length", "onnx",
                lambda: _padded(threaded, encodings)),
    ]


def _shipped_way(name: str, path: Path, encodings: list[Any]) -> Variant:
    import onnxruntime

    from pr_context.embed_onnx import run_alone, session_options

    session = onnxruntime.InferenceSession(str(path), session_options(),
                                           providers=["CPUExecutionProvider"])

    def run() -> np.ndarray:
        vectors = np.zeros((len(encodings), 384), np.float32)
        run_alone(session, encodings, vectors)
        return vectors

    return Variant(name, name, run)


# Quantization recipes tried against the shipped one (embed_int8: activations per token,
# 7-bit weights and 255 levels, 8-bit weights and 127 levels for each layer's narrowing
# feed-forward output); each names what it changes. Then ONNX Runtime's dynamic
# quantization (one activation scale per text), the way onnx-int8 was made until graph
# recipe 6 and two others.
def _quantized(graph: Path, scratch: Path, model: Any) -> dict[str, Path]:
    from pr_context.embed_graph import build_graph
    from pr_context.embed_int8 import NARROWING, WIDENING

    per_token = {
        "onnx-int8, per token, 7-bit weights and 255 levels everywhere": lambda w: WIDENING,
        "onnx-int8, per token, 8-bit weights and 127 levels everywhere": lambda w: NARROWING,
    }
    made = {}
    for number, (name, precision) in enumerate(per_token.items()):
        made[name] = scratch / f"t{number}.onnx"
        build_graph(model, made[name], precision)
    return made | _dynamic(graph, scratch)


def _dynamic(graph: Path, scratch: Path) -> dict[str, Path]:
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    loaded = onnx.load(str(graph)).graph
    shapes = {w.name: tuple(w.dims) for w in loaded.initializer}
    narrowing = [n.name for n in loaded.node if n.op_type == "MatMul"
                 and len(dims := shapes.get(n.input[1], ())) == 2 and dims[0] > dims[1]]
    previous = {"weight_type": QuantType.QInt8, "op_types_to_quantize": ["MatMul"],
                "per_channel": True, "reduce_range": True, "nodes_to_exclude": narrowing}
    recipes: dict[str, dict[str, Any]] = {
        "ORT dynamic, per text (graph recipe 4: feed-forward outputs in fp32)": previous,
        "ORT dynamic, per text, every product": {**previous, "nodes_to_exclude": []},
        # 8 bits can saturate on x86 without VNNI, never on a CPU with it (as measured).
        "ORT dynamic, per text, 8-bit weights": {**previous, "reduce_range": False},
    }
    made = {}
    logging.disable(logging.WARNING)
    for number, (name, settings) in enumerate(recipes.items()):
        target = scratch / f"q{number}.onnx"
        quantize_dynamic(str(graph), str(target), **settings)
        made[name] = target
    logging.disable(logging.NOTSET)
    return made


def _session(graph: Path, entries: dict[str, str]) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    for key, value in entries.items():
        options.add_session_config_entry(key, value)
    return onnxruntime.InferenceSession(str(graph), options,
                                        providers=["CPUExecutionProvider"])


def _one_by_one(session: Any, encodings: list[Any]) -> np.ndarray:
    from pr_context.embed_onnx import _feed

    return np.stack([session.run(None, _feed(e))[0][0] for e in encodings])


def _padded(session: Any, encodings: list[Any]) -> np.ndarray:
    order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
    vectors = np.zeros((len(encodings), 384), np.float32)
    for start in range(0, len(order), BATCH):
        batch = order[start:start + BATCH]
        width = len(encodings[batch[0]].ids)
        ids = np.zeros((len(batch), width), np.int64)
        mask = np.zeros_like(ids)
        for row, i in enumerate(batch):
            ids[row, :len(encodings[i].ids)] = encodings[i].ids
            mask[row, :len(encodings[i].ids)] = 1
        vectors[batch] = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                            "token_type_ids": np.zeros_like(ids)})[0]
    return vectors


def operator_profile(texts: list[str], onnx_cache: Path) -> dict[str, Any]:
    """Where the fp32 graph's time goes on one thread, by operator type (ONNX Runtime's
    own profiler, each text alone), and the rate of its matrix products beside that of
    one large product on the same thread: how far the products are from the core's best."""
    import onnxruntime

    from pr_context.embed import DEFAULT_MODEL, make_embedder
    from pr_context.embed_onnx import _feed, session_options

    embedder = make_embedder(DEFAULT_MODEL, "onnx", onnx_cache, _quiet)
    embedder.embed(["build the graph"])
    encodings = embedder._truncating.encode_batch(texts)  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory(prefix="profile-") as scratch:
        options = session_options()
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(scratch) / "ort")
        session = onnxruntime.InferenceSession(
            str(embedder._graph.model_file), options,  # type: ignore[attr-defined]
            providers=["CPUExecutionProvider"])
        for encoding in encodings:
            session.run(None, _feed(encoding))
        by_operator = _kernel_seconds(Path(session.end_profiling()))
    config = embedder._model.config  # type: ignore[attr-defined]
    return {"seconds": by_operator, "product_flops": sum(
        _product_flops(config, len(e.ids)) for e in encodings),
        "large_product_flops_per_s": _large_product_rate()}


def _kernel_seconds(trace: Path) -> dict[str, float]:
    """Seconds per operator type in an ONNX Runtime profile (its kernels' own times)."""
    import json

    seconds: dict[str, float] = {}
    for event in json.loads(trace.read_text()):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            operator = event["args"]["op_name"]
            seconds[operator] = seconds.get(operator, 0.0) + event["dur"] / 1e6
    return seconds


def _product_flops(config: Any, tokens: int) -> int:
    """Multiply-adds x 2 of one text's matrix products: per layer the four attention
    projections, the two feed-forward products, and scores and mixing over the tokens."""
    hidden, inner = int(config["hidden_size"]), int(config["intermediate_size"])
    per_layer = 2 * tokens * (4 * hidden * hidden + 2 * hidden * inner + 2 * tokens * hidden)
    return per_layer * int(config["num_hidden_layers"])


def _large_product_rate(size: int = 1024, runs: int = 5) -> float:
    """FLOP/s of one size x size product by ONNX Runtime on one thread (median of runs)."""
    import onnx
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper

    from pr_context.embed_onnx import session_options

    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((size, size), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "product",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [size, size])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    session = onnxruntime.InferenceSession(onnx.shape_inference.infer_shapes(
        model).SerializeToString(), session_options(), providers=["CPUExecutionProvider"])
    feed = {"x": rng.standard_normal((size, size), np.float32)}
    session.run(None, feed)
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        session.run(None, feed)
        timings.append(time.perf_counter() - started)
    return 2 * size ** 3 / statistics.median(timings)


def _quiet(_: str) -> None:
    """Graph-building notices are not figures."""


def render_levers(figures: dict[str, Any], conditions: str) -> list[str]:
    tokens = figures["tokens"]
    lines = ["## Levers: ways of running and quantizing the graph", "",
             f"{conditions} In one process, {figures['rounds']} round(s), variants rotating"
             f"; {figures['sample']} distinct sphinx chunk texts drawn at random (tokens: "
             f"mean {tokens['mean']:.0f}, median {tokens['median']:.0f}, "
             f"{tokens['at_limit']:.0%} at the 256 limit). *x torch* is the variant's "
             "median over the median of torch's `encode` (batch 32, default threads) in "
             "the same rounds. *Same bits as shipped* compares an fp32 variant's vectors "
             "with the shipped backend's (each text alone).", "",
             "| variant | median s | x torch encode | cosine to torch, mean | worst | "
             "same bits as shipped |", "|---|---|---|---|---|---|"]
    for row in figures["variants"]:
        median = statistics.median(row["seconds"]) if row["seconds"] else float("nan")
        torch_s = statistics.median(row["torch_s"]) if row["torch_s"] else float("nan")
        diff = row.get("max_diff_to_alone")
        same = "" if diff is None else ("yes" if diff == 0 else f"no (max diff {diff:.0e})")
        lines.append(f"| {row['name']} | {median:.1f} | {median / torch_s:.2f} | "
                     f"{row['cosine_mean']:.4f} | {row['cosine_worst']:.4f} | {same} |")
    return [*lines, "", *_render_profile(figures.get("profile"), figures["sample"])]


PRODUCTS = ("MatMul", "FusedMatMul")  # FusedMatMul: the scores, scaled, with K transposed


def _render_profile(profile: dict[str, Any] | None, sample: int) -> list[str]:
    if not profile:
        return []
    seconds = profile["seconds"]
    total = sum(seconds.values())
    in_products = sum(seconds.get(op, 0.0) for op in PRODUCTS)
    rate = profile["product_flops"] / in_products
    large = profile["large_product_flops_per_s"]
    lines = ["### Where the fp32 graph's time goes", "",
             f"The same {sample} texts, each alone, on one thread, timed by ONNX Runtime's "
             "own profiler (its kernels' times, by operator type). The matrix products "
             f"({' and '.join(PRODUCTS)}) did {profile['product_flops'] / 1e9:.0f} GFLOP "
             f"at {rate / 1e9:.0f} GFLOP/s; one 1024 x 1024 product on the same thread ran "
             f"at {large / 1e9:.0f} GFLOP/s ({rate / large:.2f} of it).", "",
             "| operator | s | share |", "|---|---|---|"]
    for operator, spent in sorted(seconds.items(), key=lambda item: -item[1]):
        if spent >= 0.005 * total:
            lines.append(f"| {operator} | {spent:.2f} | {spent / total:.1%} |")
    rest = sum(v for v in seconds.values() if v < 0.005 * total)
    lines.append(f"| the other {sum(v < 0.005 * total for v in seconds.values())} "
                 f"| {rest:.2f} | {rest / total:.1%} |")
    return [*lines, ""]
