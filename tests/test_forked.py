"""Work in a forked child: its result, or the parent's own when the child fails.

Each case runs in a fresh interpreter: fork_work does not fork a process that runs other
threads, as the test session may (a library's progress-bar monitor, for one).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from pr_context.forked import fork_work

ROOT = Path(__file__).resolve().parent.parent
PROLOGUE = """
import os, sys
from pr_context.forked import fork_work
PARENT = os.getpid()
"""


def run_fresh(code: str) -> str:
    """``code`` run by a new, single-threaded interpreter; what it printed."""
    done = subprocess.run([sys.executable, "-c", PROLOGUE + code], cwd=ROOT, text=True,
                          capture_output=True, check=True)
    return done.stdout.strip()


def test_the_result_is_made_in_another_process() -> None:
    printed = run_fresh("""
with fork_work(lambda: (os.getpid(), 12 * 12)) as work:
    pid, square = work.result()
print(square, pid != PARENT)
""")
    assert printed == "144 True"


def test_a_child_that_fails_leaves_the_work_to_the_parent() -> None:
    printed = run_fresh("""
def fails_in_the_child():
    if os.getpid() != PARENT:
        raise RuntimeError("only the child fails")
    return "made by the parent"
with fork_work(fails_in_the_child) as work:
    print(work.pid is not None, work.result())
""")
    assert printed == "True made by the parent"


def test_a_result_that_cannot_be_pickled_is_made_again_by_the_parent() -> None:
    printed = run_fresh("""
with fork_work(lambda: (lambda: os.getpid())) as work:
    made = work.result()
print(made() == PARENT)
""")
    assert printed == "True"


def test_an_exception_of_the_work_itself_reaches_the_caller() -> None:
    printed = run_fresh("""
def broken():
    raise ValueError("broken everywhere")
try:
    with fork_work(broken) as work:
        work.result()
except ValueError as exc:
    print(exc)
""")
    assert printed == "broken everywhere"


def test_leaving_without_the_result_stops_and_reaps_the_child() -> None:
    printed = run_fresh("""
import time
with fork_work(lambda: time.sleep(60)) as work:
    pid = work.pid
try:
    os.waitpid(pid, 0)
except ChildProcessError:
    print("reaped")
""")
    assert printed == "reaped"


def test_a_process_running_other_threads_is_not_forked() -> None:
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        with fork_work(lambda: os.getpid()) as work:
            assert work.pid is None
            assert work.result() == os.getpid()
    finally:
        release.set()
        other.join()

