"""Test doubles for users who test their graders and configs without a real judge.

- :class:`~openjudge.testing.function_model.FunctionChatModel`: an in-process chat model
  whose replies come from a Python function (``kind: function`` is not a config kind: use it
  from Python, in unit tests and docs).
- :class:`JudgeServer` (:mod:`openjudge.testing.judge_server`): a local OpenAI-compatible
  judge server with deterministic fault injection (429 with Retry-After, 5xx, resets, hangs,
  malformed judge output), in the running event loop, or started as
  ``python -m openjudge.testing.judge_server --port 8000``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_exports

if TYPE_CHECKING or not lazy_exports(globals()):
    from openjudge.testing.function_model import FunctionChatModel as FunctionChatModel
    from openjudge.testing.judge_server import JudgeServer as JudgeServer

__all__ = ["FunctionChatModel", "JudgeServer"]
