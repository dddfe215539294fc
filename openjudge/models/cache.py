"""A content-addressed cache of judge replies, in SQLite.

**Whose verdicts**: a cache answers only for the judge that filled it, and only where its
owner chose. By default a :class:`JudgeCache` is this process's own: a temporary database
in the node's temporary directory, deleted when it closes, never shared. ``openjudge run``
gives each results file a cache beside it (verdicts belong to the results file they were
stored for: a new ``--out`` grades afresh); sharing one file between jobs or processes is
an explicit choice (``shared=True``; ``cache.path`` in a job config).

**The key** is a SHA-256 over the request as it goes on the wire: the endpoint (a URL
without credentials), the exact body the transport sends (model, messages, sampling,
response format, vLLM's ``chat_template_kwargs``, logprob fields, ...), a caller tag (the
grader's name and version) and the identity of the weights behind the endpoint where the
server states it (its ``/models`` card and its replies' ``system_fingerprint``; see
:class:`~openjudge.models._served_identity.ServedIdentity`). It does not depend on the
provider's kind: the same bytes sent to the same weights hit, and anything that changes
the bytes, the server or the weights misses.

**The value** is everything a grader may read: content, logprobs, finish reason,
model and token usage. A hit is charged nothing (zero tokens, zero requests).

**What is kept**: only replies the caller could use. A caching chat model stores a
reply when it arrives (before identical calls waiting on it are released) and hands
it out with its ``cache_key``; the caller settles it (see
:class:`~openjudge.models.chat_model.CachingChatModel`), and an unusable reply is
evicted, so a server that recovers is asked again. Failed calls are never stored.

**Storage** is read and written on a worker thread, so the event loop never waits on the
disk. A cache of one process holds an exclusive lock in WAL mode, which keeps WAL's index
in memory: no shared-memory file, so it works on a network filesystem too. A shared file
is in WAL mode for processes of one machine; on a network filesystem (NFS, CIFS, Lustre,
GPFS, ...: SQLite's WAL needs memory shared between its users, which those cannot give)
it falls back to a rollback journal. A cache that cannot be opened or written is
reported once and bypassed, never a reason to fail a grade.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread

from openjudge.models._loop_local import LoopLocal
from openjudge.models._served_identity import ServedIdentity
from openjudge.models.chat_model import ChatResponse, TokenLogprob
from openjudge.models.transport import ChatTransport
from openjudge.results import TokenUsage

__all__ = ["JudgeCache", "cache_files", "cache_key"]

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
_REQUESTS = "judge_requests"
_REQUESTS_SCHEMA = f"CREATE TABLE IF NOT EXISTS {_REQUESTS} (request TEXT PRIMARY KEY)"
"""Requests a reply is stored for, keyed without the replies' fingerprint: whether a call of a
new process, which does not know the fingerprint yet, has a stored verdict to wait for."""
_ZERO = TokenUsage(0, 0, 0)


_NETWORK_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "ceph", "fuse.sshfs", "9p", "afs"}
)


def cache_files(path: str | Path) -> tuple[Path, ...]:
    """The SQLite file and the journals beside it (what deleting a cache removes)."""
    path = Path(path)
    return (path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal")))


def cache_key(*, endpoint: str, body: bytes, tag: str, identity: str = "") -> str:
    """The content address of one request: where it goes, what is sent, who asks, and the
    identity of the weights that answer (``""`` where the server does not state it)."""
    digest = hashlib.sha256()
    for part in (endpoint.encode("utf-8"), body, tag.encode("utf-8"), identity.encode("utf-8")):
        digest.update(len(part).to_bytes(8, "big"))  # length-prefixed: parts cannot run together
        digest.update(part)
    return digest.hexdigest()


def _filesystem(path: Path) -> str | None:
    """The type of the filesystem ``path`` is on, from ``/proc/mounts`` (``None`` off Linux)."""
    try:
        mounts = Path("/proc/mounts").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    target = str(path.resolve())
    best, kind = "", None
    for line in mounts:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best):
            best, kind = point, fields[2]
    return kind


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
    """Judge replies in SQLite, shared by every provider that is given this object.

    Args:
        path: The SQLite file (created with its folder). ``None`` (the default): a
            temporary database of this process, in the node's temporary directory
            (``$TMPDIR``), deleted when the cache closes. ``":memory:"`` keeps it in memory.
        shared: Other processes open the same file (other jobs, workers of one machine):
            the file is locked per transaction rather than held. Without it the first
            process to use the file holds it until it closes it; another one finds it
            locked, says so once and works without a cache.

    Example:
        >>> cache = JudgeCache()  # this process's; then OpenAIChatModel(...).with_cache(cache)
    """

    def __init__(self, path: str | Path | None = None, *, shared: bool = False) -> None:
        self.path = "" if path is None else str(path)
        """The file (``""``: this process's temporary database)."""
        self.shared = shared
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._broken = False
        self._counts = _Counts()
        self._served: dict[str, ServedIdentity] = {}
        # One worker thread at a time per loop: SQLite serialises writers anyway.
        self._limiters: LoopLocal[anyio.CapacityLimiter] = LoopLocal(lambda: anyio.CapacityLimiter(1))

    @property
    def where(self) -> str:
        """Where the replies live, for messages: the file, or that they are this process's."""
        return self.path or "this process's temporary judge cache"

    @property
    def hits(self) -> int:
        return self._counts.hits

    @property
    def misses(self) -> int:
        return self._counts.misses

    @property
    def writes(self) -> int:
        return self._counts.writes

    def served(self, transport: ChatTransport) -> ServedIdentity:
        """What this process knows of the weights behind ``transport``'s endpoint and model:
        one per endpoint and model for every chat model given this cache, so the server is
        asked once (see :mod:`openjudge.models._served_identity`)."""
        name = f"{transport.endpoint}\n{transport.model_name}"
        served = self._served.get(name)
        if served is None:
            with self._lock:
                served = self._served.setdefault(name, ServedIdentity(transport))
        return served

    def count_miss(self) -> None:
        """Count a call the cache could not be asked about as a miss (its server's identity
        is not known yet: see :mod:`openjudge.models._served_identity`)."""
        with self._lock:
            self._counts.misses += 1

    async def aget(self, key: str) -> ChatResponse | None:
        """The stored reply for ``key`` (``cached=True``, zero usage), counted as a hit or a miss."""
        return await anyio.to_thread.run_sync(self.get, key, limiter=self._limiters.get())

    async def aput(self, key: str, response: ChatResponse, *, request: str | None = None) -> None:
        """Store ``response`` under ``key`` (replacing what was there); ``request``: the key
        of the request without the fingerprint of the reply (:meth:`aholds`)."""
        await anyio.to_thread.run_sync(
            functools.partial(self.put, key, response, request=request), limiter=self._limiters.get()
        )

    async def aholds(self, request: str) -> bool:
        """Whether a reply was stored for ``request`` (a key given as ``request`` to :meth:`aput`)."""
        return await anyio.to_thread.run_sync(self.holds, request, limiter=self._limiters.get())

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

    def put(self, key: str, response: ChatResponse, *, request: str | None = None) -> None:
        """Blocking :meth:`aput`."""
        with self._lock:
            if request is not None:
                self._run(f"INSERT OR IGNORE INTO {_REQUESTS} (request) VALUES (?)", (request,))
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

    def holds(self, request: str) -> bool:
        """Blocking :meth:`aholds`."""
        with self._lock:
            conn = self._connection()
            if conn is None:
                return False
            try:
                return (
                    conn.execute(f"SELECT 1 FROM {_REQUESTS} WHERE request = ?", (request,)).fetchone()
                    is not None
                )
            except sqlite3.Error as exc:
                logger.warning("judge cache read failed: %s", exc)
                return False

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
                self._conn = self._open()
            except (OSError, sqlite3.Error) as exc:
                self._broken = True
                logger.warning("judge cache %s unavailable, continuing without it: %s", self.where, exc)
        return self._conn

    def _open(self) -> sqlite3.Connection:
        on_disk = self.path not in ("", ":memory:")
        if on_disk:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        # How long a shared file's writer waits for another one's transaction; a private file
        # that another process holds stays held until it closes: no use waiting.
        wait_s = 5.0 if self.shared else 0.0
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=wait_s)
        try:
            journal = "WAL"
            if not self.shared:
                # Before WAL is turned on: the WAL index then lives in this connection's memory
                # (no -shm file), which a network filesystem cannot break.
                conn.execute("PRAGMA locking_mode=EXCLUSIVE")
            elif on_disk and _filesystem(Path(self.path)) in _NETWORK_FILESYSTEMS:
                journal = "DELETE"
                logger.warning(
                    "judge cache %s is on a network filesystem: shared through a rollback journal "
                    "(WAL needs shared memory); a node-local disk is faster",
                    self.path,
                )
            if self.path:
                conn.execute(f"PRAGMA journal_mode={journal}")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)  # takes the exclusive lock: a file another process holds fails here
            conn.execute(_REQUESTS_SCHEMA)
        except BaseException:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        """Close the file (a later use reopens it)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"JudgeCache(path={self.path!r}, shared={self.shared}, hits={self.hits}, misses={self.misses})"
