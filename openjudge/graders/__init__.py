"""Graders: the base class, LLM judges and every built-in grader, importable from here.

``from openjudge.graders import StringMatchGrader`` loads only that grader's module. The
``type`` names a job config uses for the same classes are in :mod:`openjudge.graders._registry`
(and ``openjudge graders`` lists them). Result types live in :mod:`openjudge.results`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_exports

if TYPE_CHECKING or not lazy_exports(globals()):
    from openjudge.graders.agent.action.action_loop import (
        ActionLoopDetectionGrader as ActionLoopDetectionGrader,
    )
    from openjudge.graders.agent.observation.observation_information_gain import (
        ObservationInformationGainGrader as ObservationInformationGainGrader,
    )
    from openjudge.graders.agent.tool._tool_call_precision_recall_match import (
        ToolCallPrecisionRecallMatchGrader as ToolCallPrecisionRecallMatchGrader,
    )
    from openjudge.graders.agent.tool._tool_call_step_sequence_match import (
        ToolCallStepSequenceMatchGrader as ToolCallStepSequenceMatchGrader,
    )
    from openjudge.graders.agent.trajectory._trajectory_step_efficiency import (
        TrajectoryStepEfficiencyGrader as TrajectoryStepEfficiencyGrader,
    )
    from openjudge.graders.agent.trajectory.trajectory_comprehensive import (
        TrajectoryComprehensiveGrader as TrajectoryComprehensiveGrader,
    )
    from openjudge.graders.base_grader import BaseGrader as BaseGrader
    from openjudge.graders.base_grader import grader_boundary as grader_boundary
    from openjudge.graders.blame import set_response_failure_score as set_response_failure_score
    from openjudge.graders.code._code_execution import CodeExecutionGrader as CodeExecutionGrader
    from openjudge.graders.common._correctness import CorrectnessGrader as CorrectnessGrader
    from openjudge.graders.common._hallucination import HallucinationGrader as HallucinationGrader
    from openjudge.graders.common._harmfulness import HarmfulnessGrader as HarmfulnessGrader
    from openjudge.graders.common._instruction_following import (
        InstructionFollowingGrader as InstructionFollowingGrader,
    )
    from openjudge.graders.common._relevance import RelevanceGrader as RelevanceGrader
    from openjudge.graders.comparison._anchor import AnchorComparisonGrader as AnchorComparisonGrader
    from openjudge.graders.comparison._group_tournament import GroupTournamentGrader as GroupTournamentGrader
    from openjudge.graders.comparison._knockout import KnockoutTournamentGrader as KnockoutTournamentGrader
    from openjudge.graders.comparison._listwise import ListwiseRankingGrader as ListwiseRankingGrader
    from openjudge.graders.comparison._pairwise import PairwisePreferenceGrader as PairwisePreferenceGrader
    from openjudge.graders.format._json_match import JsonMatchGrader as JsonMatchGrader
    from openjudge.graders.format._json_schema import JsonSchemaGrader as JsonSchemaGrader
    from openjudge.graders.format._json_validator import JsonValidatorGrader as JsonValidatorGrader
    from openjudge.graders.format._length_penalty import LengthPenaltyGrader as LengthPenaltyGrader
    from openjudge.graders.format._ngram_repetition import (
        NgramRepetitionPenaltyGrader as NgramRepetitionPenaltyGrader,
    )
    from openjudge.graders.format.reasoning_format import ReasoningFormatGrader as ReasoningFormatGrader
    from openjudge.graders.function_grader import FunctionGrader as FunctionGrader
    from openjudge.graders.judge_grader import JudgeGrader as JudgeGrader
    from openjudge.graders.judge_grader import PreparedCall as PreparedCall
    from openjudge.graders.llm_grader import LLMGrader as LLMGrader
    from openjudge.graders.math._answer_equivalence import (
        MathAnswerEquivalenceGrader as MathAnswerEquivalenceGrader,
    )
    from openjudge.graders.openai import OpenAIGrader as OpenAIGrader
    from openjudge.graders.openai import from_openai_grader as from_openai_grader
    from openjudge.graders.provided_score import ProvidedScoreGrader as ProvidedScoreGrader
    from openjudge.graders.reward_model import RewardModelGrader as RewardModelGrader
    from openjudge.graders.text._number_accuracy import NumberAccuracyGrader as NumberAccuracyGrader
    from openjudge.graders.text._similarity import SimilarityGrader as SimilarityGrader
    from openjudge.graders.text.string_match import StringMatchGrader as StringMatchGrader

__all__ = [
    "ActionLoopDetectionGrader",
    "AnchorComparisonGrader",
    "BaseGrader",
    "CodeExecutionGrader",
    "CorrectnessGrader",
    "FunctionGrader",
    "GroupTournamentGrader",
    "HallucinationGrader",
    "HarmfulnessGrader",
    "InstructionFollowingGrader",
    "JsonMatchGrader",
    "JsonSchemaGrader",
    "JsonValidatorGrader",
    "JudgeGrader",
    "KnockoutTournamentGrader",
    "LLMGrader",
    "LengthPenaltyGrader",
    "ListwiseRankingGrader",
    "MathAnswerEquivalenceGrader",
    "NgramRepetitionPenaltyGrader",
    "NumberAccuracyGrader",
    "ObservationInformationGainGrader",
    "OpenAIGrader",
    "PairwisePreferenceGrader",
    "PreparedCall",
    "ProvidedScoreGrader",
    "ReasoningFormatGrader",
    "RelevanceGrader",
    "RewardModelGrader",
    "SimilarityGrader",
    "StringMatchGrader",
    "ToolCallPrecisionRecallMatchGrader",
    "ToolCallStepSequenceMatchGrader",
    "TrajectoryComprehensiveGrader",
    "TrajectoryStepEfficiencyGrader",
    "from_openai_grader",
    "grader_boundary",
    "set_response_failure_score",
]
