"""Imported by a WorkerPool worker as its ``preload``: a worker that takes 0.6 s to start."""

from __future__ import annotations

import time

time.sleep(0.6)
