"""Work done in a forked child process while the parent goes on, its result read back.

A review on a 2-core runner analyses its symbols on one core while the other idles (the
head's new texts are embedded by then): the base side's symbols are analysed in a child
forked once both sides are loaded. The child starts from the parent's memory as it is
(copy-on-write): nothing is pickled on the way in, only the result on the way out,
through a pipe, unpickled only from the parent's own child.

When the platform cannot fork, other threads run, or the child fails (the work raises,
the result cannot be pickled, the process dies), :meth:`Forked.result` does the work in
the parent instead: the same answer, or the same exception, raised where the caller can
handle it. Side effects of the work on the parent's memory happen only then.
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, NoReturn, TypeVar

__all__ = ["Forked", "fork_work"]

_T = TypeVar("_T")


@dataclass
class Forked(Generic[_T]):
    """``work`` running in the child ``pid``, which writes its pickled result to ``pipe``
    (``pid`` None: not forked; :meth:`result` does the work). Leaving the ``with`` block
    without the result stops the child."""

    work: Callable[[], _T]
    pid: int | None = None
    pipe: int | None = None

    def __enter__(self) -> Forked[_T]:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pid is not None:
            os.kill(self.pid, signal.SIGKILL)
            self._reap()

    def result(self) -> _T:
        """What ``work()`` returns: the child's answer, else the parent's own."""
        if self.pid is None:
            return self.work()
        with os.fdopen(self._taken_pipe(), "rb") as source:
            data = source.read()
        if self._reap() != 0 or not data:
            return self.work()
        found: _T = pickle.loads(data)  # written by our own child, from our own objects
        return found

    def _taken_pipe(self) -> int:
        pipe, self.pipe = self.pipe, None
        assert pipe is not None
        return pipe

    def _reap(self) -> int:
        """Wait for the child (once); its exit status, 0 when it wrote its whole result."""
        assert self.pid is not None
        pid, self.pid = self.pid, None
        if self.pipe is not None:
            os.close(self._taken_pipe())
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def fork_work(work: Callable[[], _T]) -> Forked[_T]:
    """Start ``work`` in a forked child, where the platform can fork and this process runs
    no other Python thread (a lock one holds would stay locked in the child: the MCP
    server's threads, for one)."""
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return Forked(work)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _run_child(work, write_end)
    os.close(write_end)
    return Forked(work, pid, read_end)


def _run_child(work: Callable[[], object], pipe: int) -> NoReturn:
    """Write ``work()``'s pickled result to ``pipe`` and end the process, with status 1
    when anything failed (the parent then does the work itself). ``os._exit``: the
    parent's exit handlers and buffered output are the parent's, neither run nor flushed."""
    status = 1
    try:
        data = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(pipe, "wb") as out:
            out.write(data)
        status = 0
    finally:
        os._exit(status)
