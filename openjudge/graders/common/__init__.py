"""Common LLM judges: correctness, relevance, hallucination, harmfulness, instruction following.

:class:`~openjudge.graders.CorrectnessGrader`, :class:`~openjudge.graders.RelevanceGrader`,
:class:`~openjudge.graders.HallucinationGrader`, :class:`~openjudge.graders.HarmfulnessGrader`
and :class:`~openjudge.graders.InstructionFollowingGrader`, each exported here and by
:mod:`openjudge.graders`. Each is an :class:`~openjudge.graders.LLMGrader` (through
:class:`._judge.CommonJudge`) with a bilingual prompt, a declared raw range of 1 to 5 (higher
is better: for harmfulness, 5 means harmless) and so a ``normalized_score`` in [0, 1].
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_exports

if TYPE_CHECKING or not lazy_exports(globals()):
    from openjudge.graders.common._correctness import CorrectnessGrader as CorrectnessGrader
    from openjudge.graders.common._hallucination import HallucinationGrader as HallucinationGrader
    from openjudge.graders.common._harmfulness import HarmfulnessGrader as HarmfulnessGrader
    from openjudge.graders.common._instruction_following import (
        InstructionFollowingGrader as InstructionFollowingGrader,
    )
    from openjudge.graders.common._relevance import RelevanceGrader as RelevanceGrader

__all__ = [
    "CorrectnessGrader",
    "HallucinationGrader",
    "HarmfulnessGrader",
    "InstructionFollowingGrader",
    "RelevanceGrader",
]
