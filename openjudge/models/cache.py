"""A content-addressed cache of judge replies, and in-flight deduplication.

The key is a SHA-256 over everything that decides a reply: the provider's identity
(kind, endpoint, model), the sampling, the messages, the requested output schema and
a caller tag (the grader's name and version). The value is the raw reply, so grader
parsing changes apply to cached replies too. Only deterministic requests belong in a
cache: providers use it for temperature-0 calls unless told otherwise.

Storage is one SQLite file (standard library, WAL mode). Lookups and writes are small
local transactions done inline; a cache that cannot be opened or written is reported
once and bypassed, never a reason to fail a grade.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openjudge.models.chat_model import ChatResponse, OutputSpec, Sampling
from openjudge.models.usage import TokenUsage

__all__ = ["JudgeCache", "cache_key", "default_cache_path"]

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    content TEXT NOT NULL,
    finish_reason TEXT,
    model TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created REAL NOT NULL
)
"""


def default_cache_path() -> Path:
    """``$XDG_CACHE_HOME/openjudge/judge-cache.sqlite`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "openjudge" / "judge-cache.sqlite"


def cache_key(
    *,
    provider: str,
    messages: Sequence[Mapping[str, Any]],
    output: OutputSpec | None,
    sampling: Sampling,
    top_logprobs: int | None,
    tag: str,
) -> str:
    """The content address of one judge request."""
    payload = {
        "provider": provider,
        "messages": list(messages),
        "schema": output.schema_text if output is not None else None,
        "sampling": sampling.model_dump(mode="json", exclude_none=True),
        "top_logprobs": top_logprobs,
        "tag": tag,
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(slots=True)
class _Counts:
    hits: int = 0
    misses: int = 0
    writes: int = 0


class JudgeCache:
    """Judge replies on disk, shared by every provider that is given this object.

    Args:
        path: The SQLite file (created with its folder). ``":memory:"`` keeps it in memory.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else str(default_cache_path())
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._broken = False
        self._counts = _Counts()

    @property
    def hits(self) -> int:
        return self._counts.hits

    @property
    def misses(self) -> int:
        return self._counts.misses

    def _connection(self) -> sqlite3.Connection | None:
        if self._conn is None and not self._broken:
            try:
                if self.path != ":memory:":
                    Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(_SCHEMA)
                self._conn = conn
            except (OSError, sqlite3.Error) as exc:
                self._broken = True
                logger.warning("judge cache %s unavailable, continuing without it: %s", self.path, exc)
        return self._conn

    def get(self, key: str) -> ChatResponse | None:
        """The cached reply for ``key``, counted as a hit or a miss."""
        with self._lock:
            conn = self._connection()
            row = None
            if conn is not None:
                try:
                    row = conn.execute(
                        "SELECT content, finish_reason, model FROM replies WHERE key = ?",
                        (key,),
                    ).fetchone()
                except sqlite3.Error as exc:
                    logger.warning("judge cache read failed: %s", exc)
            if row is None:
                self._counts.misses += 1
                return None
            self._counts.hits += 1
        content, finish_reason, model = row
        # A cached reply costs nothing now: zero tokens and zero requests are charged for it.
        return ChatResponse(
            content=content, usage=TokenUsage(0, 0, 0), finish_reason=finish_reason, model=model
        )

    def put(self, key: str, response: ChatResponse) -> None:
        with self._lock:
            conn = self._connection()
            if conn is None:
                return
            try:
                conn.execute(
                    "INSERT OR REPLACE INTO replies"
                    " (key, content, finish_reason, model, prompt_tokens, completion_tokens, created)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        key,
                        response.content,
                        response.finish_reason,
                        response.model,
                        response.usage.prompt_tokens,
                        response.usage.completion_tokens,
                        time.time(),
                    ),
                )
                self._counts.writes += 1
            except sqlite3.Error as exc:
                logger.warning("judge cache write failed: %s", exc)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"JudgeCache(path={self.path!r}, hits={self.hits}, misses={self.misses})"
