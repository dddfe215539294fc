"""Graders: the protocol, result models and built-in graders.

``from openjudge.graders import from_openai_grader`` runs an OpenAI grader JSON as a
grader (:mod:`openjudge.graders.openai`); it is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openjudge.graders.openai import OpenAIGrader, from_openai_grader

__all__ = ["OpenAIGrader", "from_openai_grader"]


def __getattr__(name: str) -> object:
    # Lazy: importing openjudge.graders must stay cheap for every other grader.
    if name in __all__:
        from openjudge.graders import openai

        return getattr(openai, name)
    raise AttributeError(f"module 'openjudge.graders' has no attribute {name!r}")
