"""Rule graders for math answers.

* :class:`MathAnswerEquivalenceGrader`: the response's one final answer (``\\boxed{}``,
  ``<answer>``, or what math-verify reads in its text; candidates that disagree score the
  bottom) equals the reference numerically, as a string, element-wise, or (when sympy is
  installed) symbolically. sympy is optional and imported only when needed.
"""

from openjudge.graders.math._answer_equivalence import (
    MathAnswerEquivalenceGrader as MathAnswerEquivalenceGrader,
)

__all__ = ["MathAnswerEquivalenceGrader"]
