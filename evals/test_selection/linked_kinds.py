"""Which linked tests at rank <= 5 run the symbol, by the kind of evidence that put them there.

Reads what ``run_selection_eval.py`` left behind (each case's ``plain/evidence.json`` under
``--out``, its oracle under ``--cache``) and runs nothing. For every graded symbol (a
changed function or method some test executes, matched as the evaluator does), each of
its first 5 distinct linked test files is counted under its evidence kind, parsed from
the item's reason (the strongest finding of the file): how many calls the path takes,
and the weak links on it (objects of a class whose method Python calls without its name,
a value the symbol made at import, a same-name candidate). Then, per cut rule, the
precision@5 and recall@5 the list would have if items were left out by that rule:
the frontier a ranking change can reach with the evidence the graph gives today.

    python evals/test_selection/linked_kinds.py [--out evals/out/test_selection]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from functions import module_name
from run_selection_eval import K, precision_recall_at_k

Item = Mapping[str, Any]
_THROUGH = re.compile(r"which reaches \S+ through (.*?)(?:;| \(|$)")


def hops(reason: str) -> int:
    """Calls between the test and the symbol, as the reason tells them."""
    if ", which calls " in reason:
        return 2
    found = _THROUGH.search(reason)
    return 3 + found.group(1).count("→") if found else 1


def weak_links(reason: str) -> tuple[str, ...]:
    """The weak links on a call path, by the reason's own words."""
    return tuple(name for name, phrase in (
        ("objects", "objects, whose method on the way Python calls without its name"),
        ("import-time value", "helped make when its module was imported"),
        ("same-name candidate", "a same-name candidate on the way")) if phrase in reason)


def kind(item: Item) -> str:
    reason = str(item["reason"])
    if "coverage" in item["signals"]:
        return "coverage"
    if reason.startswith("statistical"):
        return "statistical"
    if " is named after " in reason:
        return "naming"
    if " imports " in reason and "graph" in item["signals"] and " calls " not in reason:
        return "import"
    weak = weak_links(reason)
    calls = min(hops(reason), 3)
    return f"call path, {calls}{'+' if calls == 3 else ''} call(s)" + \
        (f", through {' + '.join(weak)}" if weak else "")


def graded(case_dir: Path, oracle: Mapping[str, Any]) -> list[tuple[list[Item], set[str]]]:
    """(linked test items best first, executing test files) per graded symbol."""
    evidence = json.loads((case_dir / "plain" / "evidence.json").read_text("utf-8"))
    found = []
    for sym in evidence["changed_symbols"]:
        if sym["kind"] not in ("function", "method") or sym["change"] == "added":
            continue
        path = sym.get("old_path") or sym["path"]
        name = sym.get("old_qualified_name") or sym["qualified_name"]
        prefix = module_name(path) + "."
        function = oracle["functions"].get(f"{path}::{name[len(prefix):]}") \
            if name.startswith(prefix) else None
        relevant = {t.split("::", 1)[0] for t in function["tests"]} if function else set()
        if relevant:
            found.append((_distinct(sorted(sym["tests"], key=lambda t: t["rank"])), relevant))
    return found


def _distinct(items: Sequence[Item]) -> list[Item]:
    seen: set[str] = set()
    return [i for i in items if not (i["path"] in seen or seen.add(i["path"]))]


# Cut rules: which items a symbol's list would leave out, given all of its items.
Rule = Callable[[Item, Sequence[Item]], bool]


def _resolved_call(item: Item) -> bool:
    return kind(item).startswith("call path") and not weak_links(str(item["reason"]))


RULES: dict[str, Rule] = {
    "none (today)": lambda item, items: False,
    "weak paths only when no resolved call path exists": lambda item, items: bool(
        weak_links(str(item["reason"]))) and any(_resolved_call(i) for i in items),
    "two or more weak links when a resolved call path exists": lambda item, items: len(
        weak_links(str(item["reason"]))) >= 2 and any(_resolved_call(i) for i in items),
    "only the fewest weak links of the symbol": lambda item, items: len(weak_links(
        str(item["reason"]))) > min(len(weak_links(str(i["reason"]))) for i in items),
}


def report(symbols: Sequence[tuple[list[Item], set[str]]]) -> str:
    runs, misses = Counter[str](), Counter[str]()
    for items, relevant in symbols:
        for item in items[:K]:
            (runs if item["path"] in relevant else misses)[kind(item)] += 1
    lines = ["| evidence of the item at rank <= 5 | runs the symbol | does not | precision |",
             "|---|---|---|---|"]
    for name in sorted(runs.keys() | misses.keys(), key=lambda k: -(runs[k] + misses[k])):
        total = runs[name] + misses[name]
        lines.append(f"| {name} | {runs[name]} | {misses[name]} | {runs[name] / total:.2f} |")
    lines += ["", "| cut rule | precision@5 | recall@5 |", "|---|---|---|"]
    for name, rule in RULES.items():
        scores = [precision_recall_at_k(
            [i["path"] for i in items if not rule(i, items)], relevant)
            for items, relevant in symbols]
        precision = [p for p, _ in scores if p is not None]
        recall = [r or 0.0 for _, r in scores]
        lines.append(f"| {name} | {sum(precision) / max(len(precision), 1):.3f} | "
                     f"{sum(recall) / max(len(recall), 1):.3f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("evals/out/test_selection"))
    parser.add_argument("--cache", type=Path, default=Path("evals/.cache/test_selection"))
    args = parser.parse_args(argv)
    by_repo: dict[str, list[tuple[list[Item], set[str]]]] = {}
    for case_dir in sorted(p for p in args.out.iterdir() if (p / "plain").is_dir()):
        oracle_file = args.cache / "oracle" / f"{case_dir.name}.json"
        if not oracle_file.exists():
            print(f"{case_dir.name}: no oracle in {oracle_file.parent}, left out",
                  file=sys.stderr)
            continue
        oracle = json.loads(oracle_file.read_text("utf-8"))
        by_repo.setdefault(case_dir.name.rsplit("-", 1)[0], []).extend(
            graded(case_dir, oracle))
    every = [s for symbols in by_repo.values() for s in symbols]
    for repo, symbols in [*sorted(by_repo.items()), ("all", every)]:
        print(f"## {repo} ({len(symbols)} symbols)\n\n{report(symbols)}\n")


if __name__ == "__main__":
    main()
