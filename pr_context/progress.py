"""Progress for long work: a live line on a terminal, plain log lines elsewhere.

The indexing stages report through the ``Progress`` protocol and never print; the CLI
chooses the implementation. Everything goes to stderr so ``--json`` stdout stays clean.
"""

from __future__ import annotations

import sys
import time
from typing import Protocol, TextIO

__all__ = ["LogProgress", "Progress", "SilentProgress", "TerminalProgress", "progress_for"]

LOG_INTERVAL_S = 5.0  # plain mode: at most one line per stage every 5 s
REDRAW_INTERVAL_S = 0.1


class Progress(Protocol):
    def start(self, stage: str, total: int) -> None: ...

    def advance(self, n: int = 1) -> None: ...

    def finish(self) -> None: ...

    def warn(self, message: str) -> None: ...


class SilentProgress:
    """Reports nothing but keeps the warnings, for library callers and tests."""

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def start(self, stage: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def finish(self) -> None:
        pass

    def warn(self, message: str) -> None:
        self.warnings.append(message)


class _Stage:
    def __init__(self, name: str, total: int) -> None:
        self.name = name
        self.total = total
        self.done = 0
        self.started = time.monotonic()

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        text = f"{self.name}: {self.done}/{self.total}"
        if rate > 0:
            text += f" ({rate:.0f}/s"
            remaining = (self.total - self.done) / rate
            text += f", ETA {remaining:.0f}s)" if self.done < self.total else ")"
        return text


class LogProgress:
    """Plain lines for CI logs: start, a line every few seconds, and the end of each stage."""

    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self._stream = stream
        self._stage: _Stage | None = None
        self._last = 0.0

    def start(self, stage: str, total: int) -> None:
        """Begin a stage; a stage with nothing to do stays silent."""
        self._stage = _Stage(stage, total) if total else None
        self._last = time.monotonic()
        if total:
            self._emit(f"{stage}: {total} to do")

    def advance(self, n: int = 1) -> None:
        if self._stage is None:
            return
        self._stage.done += n
        if time.monotonic() - self._last >= LOG_INTERVAL_S:
            self._last = time.monotonic()
            self._emit(self._stage.line())

    def finish(self) -> None:
        if self._stage is not None:
            elapsed = time.monotonic() - self._stage.started
            self._emit(f"{self._stage.name}: {self._stage.done} done in {elapsed:.1f}s")
        self._stage = None

    def warn(self, message: str) -> None:
        self._emit(f"warning: {message}")

    def _emit(self, text: str) -> None:
        print(f"pr-context: {text}", file=self._stream, flush=True)


class TerminalProgress(LogProgress):
    """One line redrawn in place, with rate and ETA."""

    def advance(self, n: int = 1) -> None:
        if self._stage is None:
            return
        self._stage.done += n
        now = time.monotonic()
        if now - self._last >= REDRAW_INTERVAL_S or self._stage.done >= self._stage.total:
            self._last = now
            self._stream.write(f"\r\x1b[Kpr-context: {self._stage.line()}")
            self._stream.flush()

    def finish(self) -> None:
        if self._stage is not None:
            self._stream.write("\r\x1b[K")
        super().finish()


def progress_for(stream: TextIO, quiet: bool = False) -> Progress:
    """A live line on a terminal, log lines otherwise; warnings only when quiet."""
    if quiet:
        return _WarningsOnly(stream)
    return TerminalProgress(stream) if stream.isatty() else LogProgress(stream)


class _WarningsOnly(SilentProgress):
    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self._stream = stream

    def warn(self, message: str) -> None:
        print(f"pr-context: warning: {message}", file=self._stream, flush=True)
