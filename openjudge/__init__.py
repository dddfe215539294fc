"""openjudge: strictly typed, async-first graders for rewards and evaluations.

Importing this package loads no provider SDK (openai, litellm), torch or verl.
"""

from openjudge.graders.base_grader import BaseGrader as BaseGrader
from openjudge.graders.schema import ErrorKind as ErrorKind
from openjudge.graders.schema import GraderError as GraderError
from openjudge.graders.schema import GraderMode as GraderMode
from openjudge.graders.schema import GraderRank as GraderRank
from openjudge.graders.schema import GraderResult as GraderResult
from openjudge.graders.schema import GraderScore as GraderScore
from openjudge.graders.schema import ScoreRange as ScoreRange

__version__ = "0.1.0"

__all__ = [
    "BaseGrader",
    "ErrorKind",
    "GraderError",
    "GraderMode",
    "GraderRank",
    "GraderResult",
    "GraderScore",
    "ScoreRange",
    "__version__",
]
