"""Common LLM judges: correctness, relevance, hallucination, harmfulness, instruction following.

Each is an :class:`~openjudge.graders.llm_grader.LLMGrader` with a bilingual prompt, a
declared raw range of 1 to 5 (higher is better: for harmfulness, 5 means harmless) and
so a ``normalized_score`` in [0, 1]. Import each from its module.
"""
