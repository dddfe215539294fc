"""A small progress line on stderr: done/total, errors, throughput, ETA."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["ProgressBar"]


class ProgressBar:
    """Redraws at most ``hz`` times a second; on a non-terminal, prints a line every ``log_every_s``."""

    def __init__(
        self,
        total: int | None,
        *,
        label: str = "grading",
        stream: TextIO | None = None,
        hz: float = 10.0,
        log_every_s: float = 10.0,
    ) -> None:
        self.total = total
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self._tty = self.stream.isatty()
        self._interval_s = 1.0 / hz if self._tty else log_every_s
        self._start = time.monotonic()
        self._last = 0.0
        self.done = 0
        self.errors = 0

    def advance(self, *, error: bool = False) -> None:
        self.done += 1
        if error:
            self.errors += 1
        now = time.monotonic()
        if now - self._last >= self._interval_s:
            self._last = now
            self._draw(now, final=False)

    def close(self) -> None:
        self._draw(time.monotonic(), final=True)

    def line(self, now: float) -> str:
        elapsed_s = max(now - self._start, 1e-9)
        rate = self.done / elapsed_s
        if self.total:
            pct = 100.0 * self.done / self.total
            eta = (self.total - self.done) / rate if rate > 0 else float("inf")
            eta_text = f"{eta:.0f}s" if eta != float("inf") else "?"
            return (
                f"{self.label}: {self.done}/{self.total} ({pct:.0f}%) errors={self.errors} "
                f"{rate:.1f}/s eta {eta_text}"
            )
        return f"{self.label}: {self.done} errors={self.errors} {rate:.1f}/s"

    def _draw(self, now: float, *, final: bool) -> None:
        text = self.line(now)
        if self._tty:
            self.stream.write("\r" + text + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
