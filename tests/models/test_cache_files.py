"""Where a judge cache lives and who may open it: one process's by default, shared by choice.

SQLite's WAL keeps its index in memory shared between the processes that use a file, which
a network filesystem cannot give: a cache of one process holds its file exclusively (the
index then lives in the process), and a shared file on a network filesystem falls back to
a rollback journal.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from openjudge.models import ChatResponse, JudgeCache
from openjudge.models import cache as cache_module
from openjudge.models.cache import cache_files
from openjudge.results import TokenUsage

REPLY = ChatResponse('{"score": 4}', TokenUsage(3, 2, 1), "stop", model="judge")


def journal(cache: JudgeCache) -> str:
    conn = cache._connection()  # the connection the cache writes with
    assert conn is not None
    mode: str = conn.execute("PRAGMA journal_mode").fetchone()[0]
    return mode


def test_by_default_a_cache_is_this_processs_own_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # SQLite's temporary databases go there
    monkeypatch.chdir(tmp_path)
    cache = JudgeCache()
    assert (cache.path, cache.shared, cache.where) == ("", False, "this process's temporary judge cache")
    cache.put("k", REPLY)
    hit = cache.get("k")
    assert hit is not None and hit.content == REPLY.content
    cache.close()
    assert list(tmp_path.iterdir()) == []  # no file in the working directory, none left in TMPDIR


def test_a_private_file_is_held_by_one_process_without_shared_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "results.jsonl.judge-cache.sqlite"
    owner = JudgeCache(path)
    owner.put("k", REPLY)
    assert journal(owner) == "wal"
    assert not cache_files(path)[2].exists()  # no -shm file: the WAL index is in this process
    other = JudgeCache(path)  # what a second process opening it meets
    with caplog.at_level(logging.WARNING):
        assert other.get("k") is None
    assert "unavailable, continuing without it: database is locked" in caplog.text
    owner.close()
    reopened = JudgeCache(path)
    assert reopened.get("k") is not None  # kept on disk for the next run of the same results file
    reopened.close()


def test_a_shared_file_is_read_and_written_by_several_at_once(tmp_path: Path) -> None:
    path = tmp_path / "team.sqlite"
    first, second = JudgeCache(path, shared=True), JudgeCache(path, shared=True)
    first.put("k", REPLY)
    assert second.get("k") is not None and journal(second) == "wal"
    first.close()
    second.close()


def test_a_shared_file_on_a_network_filesystem_uses_a_rollback_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(cache_module, "_filesystem", lambda path: "nfs4")
    cache = JudgeCache(tmp_path / "team.sqlite", shared=True)
    with caplog.at_level(logging.WARNING):
        cache.put("k", REPLY)
    assert journal(cache) == "delete"
    assert "on a network filesystem: shared through a rollback journal" in caplog.text
    cache.close()


def test_the_filesystem_of_a_path_is_read_from_the_mount_table(tmp_path: Path) -> None:
    kind = cache_module._filesystem(tmp_path)
    mounts = Path("/proc/mounts")
    if not mounts.exists():
        assert kind is None
        return
    types = {
        line.split()[2] for line in mounts.read_text(encoding="utf-8").splitlines() if len(line.split()) > 2
    }
    assert kind in types


def test_cache_files_are_the_database_and_its_journals(tmp_path: Path) -> None:
    names = [p.name for p in cache_files(tmp_path / "c.sqlite")]
    assert names == ["c.sqlite", "c.sqlite-wal", "c.sqlite-shm", "c.sqlite-journal"]
