"""A content-addressed cache of judge replies, on disk.

**The key** is a SHA-256 over the request as it goes on the wire: the endpoint (a URL
without credentials), the exact body the transport sends (model, messages, sampling,
response format, vLLM's ``chat_template_kwargs``, logprob fields, ...) and a caller
tag (the grader's name and version). It does not depend on the provider's kind: the
same bytes sent to the same server hit, and anything that changes the bytes or the
server misses.

**The value** is everything a grader may read: content, logprobs, finish reason,
model and token usage. A hit is charged nothing (zero tokens, zero requests).

**What is kept**: only replies the caller could use. A caching chat model stores a
reply when it arrives (before identical calls waiting on it are released) and hands
it out with its ``cache_key``; the caller settles it (see
:class:`~openjudge.models.chat_model.CachingChatModel`), and an unusable reply is
evicted, so a server that recovers is asked again. Failed calls are never stored.

**Storage** is one SQLite file (standard library, WAL mode), read and written on a
worker thread so the event loop never waits on the disk. A cache that cannot be
opened or written is reported once and bypassed, never a reason to fail a grade.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread

from openjudge.models._loop_local import LoopLocal
from openjudge.models.chat_model import ChatResponse, TokenLogprob
from openjudge.results import TokenUsage

__all__ = ["JudgeCache", "cache_key", "default_cache_path"]

logger = logging.getLogger(__name__)

_TABLE = "judge_replies"
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {_TABLE} (
    key TEXT PRIMARY KEY,
    content TEXT NOT NULL,
    finish_reason TEXT,
    model TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    logprobs TEXT,
    created REAL NOT NULL
)
"""
_ZERO = TokenUsage(0, 0, 0)


def default_cache_path() -> Path:
    """``$XDG_CACHE_HOME/openjudge/judge-cache.sqlite`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "openjudge" / "judge-cache.sqlite"


def cache_key(*, endpoint: str, body: bytes, tag: str) -> str:
    """The content address of one request: where it goes, what is sent, and who asks."""
    digest = hashlib.sha256()
    for part in (endpoint.encode("utf-8"), body, tag.encode("utf-8")):
        digest.update(len(part).to_bytes(8, "big"))  # length-prefixed: parts cannot run together
        digest.update(part)
    return digest.hexdigest()


def _dump_logprobs(tokens: tuple[TokenLogprob, ...]) -> str | None:
    if not tokens:
        return None
    return json.dumps([[t.token, t.logprob, [list(alt) for alt in t.top]] for t in tokens])


def _load_logprobs(raw: str | None) -> tuple[TokenLogprob, ...]:
    if not raw:
        return ()
    return tuple(
        TokenLogprob(str(token), float(logprob), tuple((str(a), float(lp)) for a, lp in top))
        for token, logprob, top in json.loads(raw)
    )


@dataclass(slots=True)
class _Counts:
    hits: int = 0
    misses: int = 0
    writes: int = 0


class JudgeCache:
    """Judge replies on disk, shared by every provider that is given this object.

    Args:
        path: The SQLite file (created with its folder); default
            :func:`default_cache_path`. ``":memory:"`` keeps it in memory.

    Example:
        >>> cache = JudgeCache("/tmp/judge-cache.sqlite")  # then OpenAIChatModel(...).with_cache(cache)
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else str(default_cache_path())
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._broken = False
        self._counts = _Counts()
        # One worker thread at a time per loop: SQLite serialises writers anyway.
        self._limiters: LoopLocal[anyio.CapacityLimiter] = LoopLocal(lambda: anyio.CapacityLimiter(1))

    @property
    def hits(self) -> int:
        return self._counts.hits

    @property
    def misses(self) -> int:
        return self._counts.misses

    @property
    def writes(self) -> int:
        return self._counts.writes

    async def aget(self, key: str) -> ChatResponse | None:
        """The stored reply for ``key`` (``cached=True``, zero usage), counted as a hit or a miss."""
        return await anyio.to_thread.run_sync(self.get, key, limiter=self._limiters.get())

    async def aput(self, key: str, response: ChatResponse) -> None:
        """Store ``response`` under ``key`` (replacing what was there)."""
        await anyio.to_thread.run_sync(self.put, key, response, limiter=self._limiters.get())

    async def adelete(self, key: str) -> None:
        """Forget ``key``."""
        await anyio.to_thread.run_sync(self.delete, key, limiter=self._limiters.get())

    def get(self, key: str) -> ChatResponse | None:
        """Blocking :meth:`aget` (for tools; the event loop uses :meth:`aget`)."""
        with self._lock:
            row = self._fetch(
                f"SELECT content, finish_reason, model, logprobs FROM {_TABLE} WHERE key = ?", (key,)
            )
            if row is None:
                self._counts.misses += 1
                return None
            self._counts.hits += 1
        content, finish_reason, model, logprobs = row
        try:
            tokens = _load_logprobs(logprobs)
        except (ValueError, TypeError) as exc:
            logger.warning("judge cache entry has unreadable logprobs, ignoring it: %s", exc)
            return None
        return ChatResponse(
            content=content,
            usage=_ZERO,
            finish_reason=finish_reason,
            logprobs=tokens,
            model=model,
            cached=True,
            cache_key=key,
        )

    def put(self, key: str, response: ChatResponse) -> None:
        """Blocking :meth:`aput`."""
        with self._lock:
            written = self._run(
                f"INSERT OR REPLACE INTO {_TABLE}"
                " (key, content, finish_reason, model, prompt_tokens, completion_tokens, logprobs, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    response.content,
                    response.finish_reason,
                    response.model,
                    response.usage.prompt_tokens,
                    response.usage.completion_tokens,
                    _dump_logprobs(response.logprobs),
                    time.time(),
                ),
            )
            if written:
                self._counts.writes += 1

    def delete(self, key: str) -> None:
        """Blocking :meth:`adelete`."""
        with self._lock:
            self._run(f"DELETE FROM {_TABLE} WHERE key = ?", (key,))

    def _fetch(self, sql: str, params: tuple[object, ...]) -> tuple[str, str | None, str, str | None] | None:
        conn = self._connection()
        if conn is None:
            return None
        try:
            row: tuple[str, str | None, str, str | None] | None = conn.execute(sql, params).fetchone()
        except sqlite3.Error as exc:
            logger.warning("judge cache read failed: %s", exc)
            return None
        return row

    def _run(self, sql: str, params: tuple[object, ...]) -> bool:
        conn = self._connection()
        if conn is None:
            return False
        try:
            conn.execute(sql, params)
        except sqlite3.Error as exc:
            logger.warning("judge cache write failed: %s", exc)
            return False
        return True

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

    def close(self) -> None:
        """Close the file (a later use reopens it)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"JudgeCache(path={self.path!r}, hits={self.hits}, misses={self.misses})"
