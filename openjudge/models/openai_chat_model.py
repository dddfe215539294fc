"""The OpenAI-compatible chat model at the import path of OpenJudge's VERL guide.

A compat face outside the layer contract: the implementation lives in
:mod:`openjudge.providers.openai` (a provider; the core knows no providers), and this
module loads it only when ``OpenAIChatModel`` is first read. Nothing in the package
imports this module; prefer ``from openjudge.providers import OpenAIChatModel``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_exports

if TYPE_CHECKING or not lazy_exports(globals()):
    from openjudge.providers.openai import OpenAIChatModel as OpenAIChatModel

__all__ = ["OpenAIChatModel"]
