"""Common LLM judges: correctness, relevance, hallucination, harmfulness, instruction following.

:class:`~openjudge.graders.CorrectnessGrader`, :class:`~openjudge.graders.RelevanceGrader`,
:class:`~openjudge.graders.HallucinationGrader`, :class:`~openjudge.graders.HarmfulnessGrader`
and :class:`~openjudge.graders.InstructionFollowingGrader`, each exported by
:mod:`openjudge.graders`. Each is an :class:`~openjudge.graders.LLMGrader` (through
:class:`._judge.CommonJudge`) with a bilingual prompt, a declared raw range of 1 to 5 (higher
is better: for harmfulness, 5 means harmless) and so a ``normalized_score`` in [0, 1].
"""
