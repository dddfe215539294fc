"""Seed-compatible import path of the OpenAI-compatible chat model.

A thin face: the implementation lives in ``providers.openai``. Importing this module
imports the openai SDK; ``import openjudge`` does not.
"""

from providers.openai import OpenAIChatModel as OpenAIChatModel

__all__ = ["OpenAIChatModel"]
