"""Helpers for the code-sandbox tests: looking for processes that should be gone."""

from __future__ import annotations

from pathlib import Path


def is_running(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie (killed orphans may linger as zombies)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def processes_mentioning(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and is_running(int(entry.name)):
            found.append(int(entry.name))
    return found
