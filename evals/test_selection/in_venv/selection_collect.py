"""A pytest plugin the oracle loads into the project's own test run (its own venv).

Writes the node id of every test that ran, with its outcome, to the JSON file named by
``SELECTION_COLLECT_OUT``: the suite a selection is a share of. Not part of pr-context.
"""

from __future__ import annotations

import json
import os
from typing import Any

_OUTCOMES: dict[str, str] = {}


def pytest_runtest_logreport(report: Any) -> None:
    previous = _OUTCOMES.get(report.nodeid, "passed")  # the first phase not passed wins
    _OUTCOMES[report.nodeid] = previous if previous != "passed" else report.outcome


def pytest_sessionfinish(session: Any) -> None:
    with open(os.environ["SELECTION_COLLECT_OUT"], "w", encoding="utf-8") as out:
        json.dump(_OUTCOMES, out, indent=0, sort_keys=True)
