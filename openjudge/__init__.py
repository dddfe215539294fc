"""openjudge: strictly typed, async-first graders for rewards and evaluations.

The names a user needs are importable from here::

    from openjudge import GradingRunner, LLMGrader, OpenAIChatModel, GraderScore

Everything else is in a few documented subpackages: :mod:`openjudge.graders` (every
built-in grader), :mod:`openjudge.models` (messages, prompts, protocols, policy),
:mod:`openjudge.runner`, :mod:`openjudge.providers` (judge backends),
:mod:`openjudge.results` (the result vocabulary) and :mod:`openjudge.integrations`
(VERL, TRL, SkyRL). Other modules are internal. Importing this package loads no provider
SDK (openai, litellm), torch or framework; names below load their module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_exports
from openjudge.results import ErrorKind as ErrorKind
from openjudge.results import GraderError as GraderError
from openjudge.results import GraderMode as GraderMode
from openjudge.results import GraderRank as GraderRank
from openjudge.results import GraderResult as GraderResult
from openjudge.results import GraderScore as GraderScore
from openjudge.results import InvalidInputError as InvalidInputError
from openjudge.results import NotApplicable as NotApplicable
from openjudge.results import ResponseFailure as ResponseFailure
from openjudge.results import RowResult as RowResult
from openjudge.results import ScoreRange as ScoreRange
from openjudge.results import TokenUsage as TokenUsage

if TYPE_CHECKING or not lazy_exports(globals()):
    from openjudge.graders.base_grader import BaseGrader as BaseGrader
    from openjudge.graders.function_grader import FunctionGrader as FunctionGrader
    from openjudge.graders.llm_grader import LLMGrader as LLMGrader
    from openjudge.models.schema.oai.message import ChatMessage as ChatMessage
    from openjudge.models.schema.prompt_template import PromptTemplate as PromptTemplate
    from openjudge.providers.openai import OpenAIChatModel as OpenAIChatModel
    from openjudge.runner._grader_config import GraderConfig as GraderConfig
    from openjudge.runner.aggregators import GateAggregator as GateAggregator
    from openjudge.runner.aggregators import MinAggregator as MinAggregator
    from openjudge.runner.aggregators import WeightedMeanAggregator as WeightedMeanAggregator
    from openjudge.runner.grading_runner import GradingRunner as GradingRunner

__version__ = "0.1.0"

__all__ = [
    "BaseGrader",
    "ChatMessage",
    "ErrorKind",
    "FunctionGrader",
    "GateAggregator",
    "GraderConfig",
    "GraderError",
    "GraderMode",
    "GraderRank",
    "GraderResult",
    "GraderScore",
    "GradingRunner",
    "InvalidInputError",
    "LLMGrader",
    "MinAggregator",
    "NotApplicable",
    "OpenAIChatModel",
    "PromptTemplate",
    "ResponseFailure",
    "RowResult",
    "ScoreRange",
    "TokenUsage",
    "WeightedMeanAggregator",
    "__version__",
]
