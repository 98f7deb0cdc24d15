"""Work in a forked child: its result, or the parent's own when the child fails."""

from __future__ import annotations

import os
import threading

import pytest

from pr_context.forked import Forked, fork_work

PARENT = os.getpid()


def pid_and_square(n: int) -> tuple[int, int]:
    return os.getpid(), n * n


def fails_in_the_child() -> int:
    if os.getpid() != PARENT:
        raise RuntimeError("only the child fails")
    return 7


def test_the_result_is_made_in_another_process() -> None:
    if threading.active_count() > 1:  # a pytest-xdist worker runs an I/O thread
        pytest.skip("this process runs other threads: fork_work does not fork")
    with fork_work(lambda: pid_and_square(12)) as work:
        pid, square = work.result()
    assert square == 144
    assert pid != PARENT


def test_a_child_that_fails_leaves_the_work_to_the_parent() -> None:
    with fork_work(fails_in_the_child) as work:
        assert work.result() == 7


def test_a_result_that_cannot_be_pickled_is_made_again_by_the_parent() -> None:
    with fork_work(lambda: (lambda: os.getpid())) as work:
        made = work.result()
    assert made() == PARENT


def test_an_exception_of_the_work_itself_reaches_the_caller() -> None:
    def broken() -> int:
        raise ValueError("broken everywhere")

    with fork_work(broken) as work, pytest.raises(ValueError, match="broken everywhere"):
        work.result()


def test_leaving_without_the_result_stops_and_reaps_the_child() -> None:
    with fork_work(lambda: pid_and_square(3)) as work:
        pid = work.pid
    assert pid is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, 0)


def test_without_a_fork_the_work_is_done_when_asked() -> None:
    calls: list[int] = []
    unforked = Forked(lambda: calls.append(1) or len(calls))
    assert calls == []
    with unforked:
        assert unforked.result() == 1


def test_a_process_running_other_threads_is_not_forked() -> None:
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        with fork_work(lambda: pid_and_square(2)) as work:
            assert work.pid is None
            assert work.result() == (PARENT, 4)
    finally:
        release.set()
        other.join()
