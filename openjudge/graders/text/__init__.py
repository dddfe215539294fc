"""Rule graders that compare a response with a reference text.

* :class:`StringMatchGrader`: exact, normalised, substring or regex match (0/1).
* :class:`NumberAccuracyGrader`: share of the reference's numbers reproduced, with tolerance.
* :class:`SimilarityGrader`: BLEU, ROUGE-L or edit-distance similarity in [0, 1].

The metrics and the tokeniser they use are in :mod:`openjudge.graders.text._metrics`
and :mod:`openjudge.graders.text._tokens`. Nothing here imports an optional dependency.
"""

from openjudge.graders.text._number_accuracy import NumberAccuracyGrader as NumberAccuracyGrader
from openjudge.graders.text._similarity import SimilarityGrader as SimilarityGrader
from openjudge.graders.text.string_match import StringMatchGrader as StringMatchGrader

__all__ = ["NumberAccuracyGrader", "SimilarityGrader", "StringMatchGrader"]
