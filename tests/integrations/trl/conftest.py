"""The TRL tests run against the real TRL (and the session's judge server, tests/_fixtures/judge.py)."""

from __future__ import annotations

import pytest

try:
    import trl  # noqa: F401  # the tests in this folder run against the real TRL
except ImportError as exc:  # pragma: no cover
    raise ImportError(
        "the TRL tests need trl and torch: run `bash scripts/test.sh` (it installs them)"
    ) from exc

from openjudge.integrations.trl import _version


@pytest.fixture
def trl_drops_unscorable(monkeypatch: pytest.MonkeyPatch) -> None:
    """For tests that call the reward functions themselves, not through TRL: whatever TRL is
    installed, ``drop`` is allowed (the version guard has its own tests, on TRL's own code)."""
    monkeypatch.setattr(_version, "installed_trl", lambda: "1.6.0")
