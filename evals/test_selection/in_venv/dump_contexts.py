"""Which tests executed which lines: read with coverage.py's own API, in the project's venv.

Usage: python dump_contexts.py COVERAGE_FILE FUNCTIONS_JSON OUT_JSON

FUNCTIONS_JSON maps a key to ``[absolute path, [line, ...]]``; OUT_JSON maps each key to
the sorted pytest node ids whose test context (pytest-cov's ``--cov-context=test``:
``NODEID|setup``, ``|run``, ``|teardown``) executed any of those lines. Also written:
``"__measured__"``, the files the data holds. Not part of pr-context: the oracle reads
coverage data with coverage.py itself, so a bug in pr-context's reader cannot hide.
"""

from __future__ import annotations

import json
import sys

from coverage import CoverageData


def main(coverage_file: str, functions_json: str, out_json: str) -> None:
    data = CoverageData(basename=coverage_file)
    data.read()
    with open(functions_json, encoding="utf-8") as f:
        wanted: dict[str, list] = json.load(f)
    measured = set(data.measured_files())
    by_file: dict[str, dict[int, list[str]]] = {}
    found: dict[str, list[str]] = {}
    for key, (path, lines) in wanted.items():
        if path not in by_file:
            by_file[path] = data.contexts_by_lineno(path) if path in measured else {}
        tests = {c.rsplit("|", 1)[0] for n in lines for c in by_file[path].get(n, ()) if c}
        found[key] = sorted(tests)
    found["__measured__"] = sorted(measured)
    with open(out_json, "w", encoding="utf-8") as f:
        json.dump(found, f, indent=0)


if __name__ == "__main__":
    main(*sys.argv[1:4])
