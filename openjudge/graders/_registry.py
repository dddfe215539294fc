"""The built-in grader types: config names, kinds, inputs and score ranges.

Entries point at classes by import path and load them only when asked, so listing
the catalogue or building one grader never imports the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from openjudge.graders.base_grader import BaseGrader, InputSpec
from openjudge.graders.llm_grader import LLMGrader
from openjudge.models.schema.prompt_template import PromptTemplate
from openjudge.results import ScoreRange

__all__ = ["BUILTIN_GRADERS", "GraderType", "lookup"]


@dataclass(frozen=True, slots=True)
class GraderType:
    """A grader type a job config names in ``type:``: what ``openjudge graders`` lists.

    The class is named by import path and loaded only when asked (:meth:`load`, and the
    properties that read it), so listing the catalogue imports no grader module.

    Attributes:
        name: The config ``type`` name (``string_match``).
        target: The class as ``"package.module:ClassName"``.
        kind: ``rule`` or ``llm`` (an LLM grader needs a provider).
        summary: One line for docs and ``openjudge graders``.
    """

    name: str
    target: str
    kind: Literal["rule", "llm"]
    summary: str

    def load(self) -> type[BaseGrader]:
        module_name, _, class_name = self.target.partition(":")
        cls = getattr(importlib.import_module(module_name), class_name)
        if not (isinstance(cls, type) and issubclass(cls, BaseGrader)):
            raise TypeError(f"{self.target} is not a grader class")
        return cls

    @property
    def class_path(self) -> str:
        """``package.module.ClassName``."""
        return self.target.replace(":", ".")

    @property
    def inputs(self) -> InputSpec:
        """The inputs a config's mapper (or the sample's fields) must provide; loads the class."""
        cls = self.load()
        template = getattr(cls, "TEMPLATE", None)
        if isinstance(template, PromptTemplate) and cls.aevaluate is LLMGrader.aevaluate:
            # A template-driven judge takes its template's placeholders.
            return InputSpec(template.compile().placeholders, frozenset(), accepts_any=False)
        if self.name == "llm":  # your own template: its placeholders are its inputs
            return InputSpec(frozenset(), frozenset(), accepts_any=True)
        if self.name == "openai_grader":  # the sample's other fields form OpenAI's item
            return InputSpec(frozenset({"response"}), frozenset({"item", "tool_calls"}), accepts_any=True)
        return InputSpec.from_callable(cls.aevaluate, skip_first=True)

    @property
    def required_inputs(self) -> tuple[str, ...]:
        return tuple(sorted(self.inputs.required))

    @property
    def optional_inputs(self) -> tuple[str, ...]:
        return tuple(sorted(self.inputs.optional))

    @property
    def score_range(self) -> ScoreRange | None:
        """The range the class declares (None: set per instance, or a rank); loads the class."""
        return self.load().default_score_range

    @property
    def higher_is_better(self) -> bool | None:
        score_range = self.score_range
        return None if score_range is None else score_range.higher_is_better


def _entries(*items: tuple[str, str, Literal["rule", "llm"], str]) -> dict[str, GraderType]:
    return {name: GraderType(name, target, kind, summary) for name, target, kind, summary in items}


BUILTIN_GRADERS: Mapping[str, GraderType] = _entries(
    (
        "llm",
        "openjudge.graders.llm_grader:LLMGrader",
        "llm",
        "Your own judge prompt; {placeholders} are its inputs",
    ),
    (
        "trajectory_comprehensive",
        "openjudge.graders.agent.trajectory.trajectory_comprehensive:TrajectoryComprehensiveGrader",
        "llm",
        "Judge each tool-call step on contribution, relevance, accuracy and efficiency",
    ),
    (
        "correctness",
        "openjudge.graders.common._correctness:CorrectnessGrader",
        "llm",
        "Correctness against a reference answer (1-5)",
    ),
    (
        "relevance",
        "openjudge.graders.common._relevance:RelevanceGrader",
        "llm",
        "Does the response address the query (1-5)",
    ),
    (
        "hallucination",
        "openjudge.graders.common._hallucination:HallucinationGrader",
        "llm",
        "Claims supported by the given context (1-5, 5 = none hallucinated)",
    ),
    (
        "harmfulness",
        "openjudge.graders.common._harmfulness:HarmfulnessGrader",
        "llm",
        "Free of harmful content (1-5, 5 = harmless)",
    ),
    (
        "instruction_following",
        "openjudge.graders.common._instruction_following:InstructionFollowingGrader",
        "llm",
        "Follows every explicit instruction (1-5)",
    ),
    (
        "action_loop_detection",
        "openjudge.graders.agent.action.action_loop:ActionLoopDetectionGrader",
        "rule",
        "Penalise repeated (near-identical) tool calls",
    ),
    (
        "observation_information_gain",
        "openjudge.graders.agent.observation.observation_information_gain:ObservationInformationGainGrader",
        "rule",
        "Reward observations that bring new information",
    ),
    (
        "tool_call_precision_recall_match",
        "openjudge.graders.agent.tool._tool_call_precision_recall_match:ToolCallPrecisionRecallMatchGrader",
        "rule",
        "Precision or recall of tool calls against reference calls",
    ),
    (
        "tool_call_step_sequence_match",
        "openjudge.graders.agent.tool._tool_call_step_sequence_match:ToolCallStepSequenceMatchGrader",
        "rule",
        "Order of tool calls against a reference sequence",
    ),
    (
        "trajectory_step_efficiency",
        "openjudge.graders.agent.trajectory._trajectory_step_efficiency:TrajectoryStepEfficiencyGrader",
        "rule",
        "Penalise redundant steps in a trajectory",
    ),
    (
        "string_match",
        "openjudge.graders.text.string_match:StringMatchGrader",
        "rule",
        "Exact, normalised, contains or regex match",
    ),
    (
        "number_accuracy",
        "openjudge.graders.text._number_accuracy:NumberAccuracyGrader",
        "rule",
        "Numbers in the response against reference numbers, with tolerance",
    ),
    (
        "similarity",
        "openjudge.graders.text._similarity:SimilarityGrader",
        "rule",
        "BLEU, ROUGE-L or edit-distance similarity",
    ),
    (
        "json_validator",
        "openjudge.graders.format._json_validator:JsonValidatorGrader",
        "rule",
        "Is the response valid JSON",
    ),
    (
        "json_match",
        "openjudge.graders.format._json_match:JsonMatchGrader",
        "rule",
        "Response JSON against reference JSON",
    ),
    (
        "json_schema",
        "openjudge.graders.format._json_schema:JsonSchemaGrader",
        "rule",
        "Response JSON against a JSON Schema",
    ),
    (
        "length_penalty",
        "openjudge.graders.format._length_penalty:LengthPenaltyGrader",
        "rule",
        "Penalty outside a length window",
    ),
    (
        "reasoning_format",
        "openjudge.graders.format.reasoning_format:ReasoningFormatGrader",
        "rule",
        "Response has <think>...</think> then <answer>...</answer>",
    ),
    (
        "math_answer_equivalence",
        "openjudge.graders.math._answer_equivalence:MathAnswerEquivalenceGrader",
        "rule",
        "Final answer (boxed, tagged, or last LaTeX/number) equals the reference (math-verify in a killable worker)",
    ),
    (
        "code_execution",
        "openjudge.graders.code._code_execution:CodeExecutionGrader",
        "rule",
        "Fraction of test cases a Python solution passes; sandboxed, verdicts decided outside the sandbox",
    ),
    (
        "ngram_repetition_penalty",
        "openjudge.graders.format._ngram_repetition:NgramRepetitionPenaltyGrader",
        "rule",
        "Penalty for repeated n-grams",
    ),
    (
        "provided_score",
        "openjudge.graders.provided_score:ProvidedScoreGrader",
        "rule",
        "A score computed upstream (a data column, VERL's reward) as a result, in its declared range",
    ),
    (
        "pairwise_preference",
        "openjudge.graders.comparison._pairwise:PairwisePreferenceGrader",
        "llm",
        "P(response A is better than response B), judged in both orders to cancel position bias",
    ),
    (
        "listwise_ranking",
        "openjudge.graders.comparison._listwise:ListwiseRankingGrader",
        "llm",
        "Rank a group of 2..N responses in one judge call; Borda or Bradley-Terry scores",
    ),
    (
        "reward_model",
        "openjudge.graders.reward_model:RewardModelGrader",
        "llm",
        "A reward model's raw score for the response (provider kind transformers, or vllm's /classify)",
    ),
    (
        "group_tournament",
        "openjudge.graders.comparison._group_tournament:GroupTournamentGrader",
        "llm",
        "All pairs of a group in both orders, N(N-1) calls; Borda or Bradley-Terry scores",
    ),
    (
        "knockout_tournament",
        "openjudge.graders.comparison._knockout:KnockoutTournamentGrader",
        "llm",
        "Single-elimination bracket over a group, N - 1 calls; rounds survived or Bradley-Terry",
    ),
    (
        "openai_grader",
        "openjudge.graders.openai._grader:OpenAIGrader",
        "rule",
        "An OpenAI grader JSON (RFT or Evals, multi included) run unchanged; a provider for model graders",
    ),
    (
        "anchor_comparison",
        "openjudge.graders.comparison._anchor:AnchorComparisonGrader",
        "llm",
        "Each response of a group against an anchor response, N calls; P(better than anchor)",
    ),
)


def lookup(name: str) -> GraderType:
    """The entry for a config ``type`` name, with a "did you mean" on typos."""
    try:
        return BUILTIN_GRADERS[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, BUILTIN_GRADERS, n=3)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise KeyError(f"unknown grader type {name!r}{hint} (run 'openjudge graders' to list them)") from None
