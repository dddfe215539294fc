"""The built-in grader types: config names, provider bindings, inputs and score ranges.

Entries point at classes by import path and load them only when asked, so listing
the catalogue or building one grader never imports the others. What a type needs from
a config besides its ``params`` (a provider, and what it is handed from it; its results'
name; files named relative to the config) is declared here as data, and the config layer
reads it instead of switching on type names.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from openjudge.graders._binding import JUDGE, NO_PROVIDER, OPTIONAL_JUDGE, REWARD_MODEL, ProviderBinding
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
        name: The config ``type`` name (``string_match``), or ``module:Class`` for a class
            of the user's (:meth:`of_class`).
        target: The class as ``"package.module:ClassName"``.
        binding: How it takes its config's ``provider`` (see :class:`ProviderBinding`).
        summary: One line for docs and ``openjudge graders``.
        names_results_after_key: Its results are named after the config's key for it (types
            whose own default name says nothing of what they judge, and classes of the user's
            that take ``name``); otherwise they keep the class's name.
        declared_inputs: Its inputs when its ``aevaluate`` signature does not list them,
            because its ``params`` decide them (``None``: read them from the signature).
        range_from_params: Pointwise, with the score range its ``params`` declare (or the
            class's default): an aggregator can be checked against it even when it failed
            to build.
        file_params: Parameters that may name a file (a string that is not inline JSON),
            read relative to the config's folder.
    """

    name: str
    target: str
    binding: ProviderBinding
    summary: str
    names_results_after_key: bool = False
    declared_inputs: InputSpec | None = None
    range_from_params: bool = False
    file_params: tuple[str, ...] = ()

    @classmethod
    def of_class(cls, target: str, grader: type[BaseGrader]) -> GraderType:
        """The type of a grader class of the user's, named ``module:Class`` in a config.

        It is a judge when its constructor takes ``model`` (see :meth:`ProviderBinding.of_class`),
        and its results take the config's key as their name when its constructor takes ``name``.
        """
        try:
            takes_name = "name" in inspect.signature(grader).parameters
        except (TypeError, ValueError):
            takes_name = False
        summary = (inspect.getdoc(grader) or "").partition("\n")[0]
        return cls(
            target, target, ProviderBinding.of_class(grader), summary, names_results_after_key=takes_name
        )

    @property
    def kind(self) -> Literal["rule", "llm"]:
        """``llm`` if it needs a provider (an LLM judge, a reward model), else ``rule``."""
        return self.binding.kind

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
        if self.declared_inputs is not None:
            return self.declared_inputs
        cls = self.load()
        template = getattr(cls, "TEMPLATE", None)
        if isinstance(template, PromptTemplate) and cls.aevaluate is LLMGrader.aevaluate:
            # A template-driven judge takes its template's placeholders.
            return InputSpec(template.compile().placeholders, frozenset(), accepts_any=False)
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


def _by_name(*types: GraderType) -> dict[str, GraderType]:
    return {t.name: t for t in types}


BUILTIN_GRADERS: Mapping[str, GraderType] = _by_name(
    GraderType(
        "llm",
        "openjudge.graders.llm_grader:LLMGrader",
        JUDGE,
        "Your own judge prompt; {placeholders} are its inputs",
        names_results_after_key=True,
        declared_inputs=InputSpec(frozenset(), frozenset(), accepts_any=True),
        range_from_params=True,
    ),
    GraderType(
        "trajectory_comprehensive",
        "openjudge.graders.agent.trajectory.trajectory_comprehensive:TrajectoryComprehensiveGrader",
        JUDGE,
        "Judge each tool-call step on contribution, relevance, accuracy and efficiency",
    ),
    GraderType(
        "correctness",
        "openjudge.graders.common._correctness:CorrectnessGrader",
        JUDGE,
        "Correctness against a reference answer (1-5)",
    ),
    GraderType(
        "relevance",
        "openjudge.graders.common._relevance:RelevanceGrader",
        JUDGE,
        "Does the response address the query (1-5)",
    ),
    GraderType(
        "hallucination",
        "openjudge.graders.common._hallucination:HallucinationGrader",
        JUDGE,
        "Claims supported by the given context (1-5, 5 = none hallucinated)",
    ),
    GraderType(
        "harmfulness",
        "openjudge.graders.common._harmfulness:HarmfulnessGrader",
        JUDGE,
        "Free of harmful content (1-5, 5 = harmless)",
    ),
    GraderType(
        "instruction_following",
        "openjudge.graders.common._instruction_following:InstructionFollowingGrader",
        JUDGE,
        "Follows every explicit instruction (1-5)",
    ),
    GraderType(
        "action_loop_detection",
        "openjudge.graders.agent.action.action_loop:ActionLoopDetectionGrader",
        NO_PROVIDER,
        "Penalise repeated (near-identical) tool calls",
    ),
    GraderType(
        "observation_information_gain",
        "openjudge.graders.agent.observation.observation_information_gain:ObservationInformationGainGrader",
        NO_PROVIDER,
        "Reward observations that bring new information",
    ),
    GraderType(
        "tool_call_precision_recall_match",
        "openjudge.graders.agent.tool._tool_call_precision_recall_match:ToolCallPrecisionRecallMatchGrader",
        NO_PROVIDER,
        "Precision or recall of tool calls against reference calls",
    ),
    GraderType(
        "tool_call_step_sequence_match",
        "openjudge.graders.agent.tool._tool_call_step_sequence_match:ToolCallStepSequenceMatchGrader",
        NO_PROVIDER,
        "Order of tool calls against a reference sequence",
    ),
    GraderType(
        "trajectory_step_efficiency",
        "openjudge.graders.agent.trajectory._trajectory_step_efficiency:TrajectoryStepEfficiencyGrader",
        NO_PROVIDER,
        "Penalise redundant steps in a trajectory",
    ),
    GraderType(
        "string_match",
        "openjudge.graders.text.string_match:StringMatchGrader",
        NO_PROVIDER,
        "Exact, normalised, contains or regex match",
    ),
    GraderType(
        "number_accuracy",
        "openjudge.graders.text._number_accuracy:NumberAccuracyGrader",
        NO_PROVIDER,
        "Numbers in the response against reference numbers, with tolerance",
    ),
    GraderType(
        "similarity",
        "openjudge.graders.text._similarity:SimilarityGrader",
        NO_PROVIDER,
        "BLEU, ROUGE-L or edit-distance similarity",
    ),
    GraderType(
        "json_validator",
        "openjudge.graders.format._json_validator:JsonValidatorGrader",
        NO_PROVIDER,
        "Is the response valid JSON",
    ),
    GraderType(
        "json_match",
        "openjudge.graders.format._json_match:JsonMatchGrader",
        NO_PROVIDER,
        "Response JSON against reference JSON",
    ),
    GraderType(
        "json_schema",
        "openjudge.graders.format._json_schema:JsonSchemaGrader",
        NO_PROVIDER,
        "Response JSON against a JSON Schema",
    ),
    GraderType(
        "length_penalty",
        "openjudge.graders.format._length_penalty:LengthPenaltyGrader",
        NO_PROVIDER,
        "Penalty outside a length window",
    ),
    GraderType(
        "reasoning_format",
        "openjudge.graders.format.reasoning_format:ReasoningFormatGrader",
        NO_PROVIDER,
        "Response has <think>...</think> then <answer>...</answer>",
    ),
    GraderType(
        "math_answer_equivalence",
        "openjudge.graders.math._answer_equivalence:MathAnswerEquivalenceGrader",
        NO_PROVIDER,
        "Final answer (boxed, tagged, or last LaTeX/number) equals the reference (math-verify in a killable worker)",
    ),
    GraderType(
        "code_execution",
        "openjudge.graders.code._code_execution:CodeExecutionGrader",
        NO_PROVIDER,
        "Fraction of test cases a Python solution passes; sandboxed, verdicts decided outside the sandbox",
    ),
    GraderType(
        "ngram_repetition_penalty",
        "openjudge.graders.format._ngram_repetition:NgramRepetitionPenaltyGrader",
        NO_PROVIDER,
        "Penalty for repeated n-grams",
    ),
    GraderType(
        "provided_score",
        "openjudge.graders.provided_score:ProvidedScoreGrader",
        NO_PROVIDER,
        "A score computed upstream (a data column, VERL's reward) as a result, in its declared range",
    ),
    GraderType(
        "pairwise_preference",
        "openjudge.graders.comparison._pairwise:PairwisePreferenceGrader",
        JUDGE,
        "P(response A is better than response B), judged in both orders to cancel position bias",
    ),
    GraderType(
        "listwise_ranking",
        "openjudge.graders.comparison._listwise:ListwiseRankingGrader",
        JUDGE,
        "Rank a group of 2..N responses in one judge call; Borda or Bradley-Terry scores",
    ),
    GraderType(
        "reward_model",
        "openjudge.graders.reward_model:RewardModelGrader",
        REWARD_MODEL,
        "A reward model's raw score for the response (provider kind transformers, or vllm's /classify)",
    ),
    GraderType(
        "group_tournament",
        "openjudge.graders.comparison._group_tournament:GroupTournamentGrader",
        JUDGE,
        "All pairs of a group in both orders, N(N-1) calls; Borda or Bradley-Terry scores",
    ),
    GraderType(
        "knockout_tournament",
        "openjudge.graders.comparison._knockout:KnockoutTournamentGrader",
        JUDGE,
        "Single-elimination bracket over a group, N - 1 calls; rounds survived or Bradley-Terry",
    ),
    GraderType(
        "openai_grader",
        "openjudge.graders.openai._grader:OpenAIGrader",
        OPTIONAL_JUDGE,
        "An OpenAI grader JSON (RFT or Evals, multi included) run unchanged; a provider for model graders",
        names_results_after_key=True,
        declared_inputs=InputSpec(
            frozenset({"response"}), frozenset({"item", "tool_calls"}), accepts_any=True
        ),
        file_params=("grader",),
    ),
    GraderType(
        "anchor_comparison",
        "openjudge.graders.comparison._anchor:AnchorComparisonGrader",
        JUDGE,
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
