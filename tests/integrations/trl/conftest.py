"""The TRL tests run against the real TRL (and the session's judge server, tests/_fixtures/judge.py)."""

from __future__ import annotations

try:
    import trl  # noqa: F401  # the tests in this folder run against the real TRL
except ImportError as exc:  # pragma: no cover
    raise ImportError(
        "the TRL tests need trl and torch: run `bash scripts/test.sh` (it installs them)"
    ) from exc
