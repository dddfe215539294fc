"""The catalogue of built-in graders: config names, kinds, inputs and score ranges.

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

__all__ = ["BUILTIN_GRADERS", "GraderEntry", "GraderInfo", "describe", "lookup"]


@dataclass(frozen=True, slots=True)
class GraderInfo:
    """What a grader takes and gives, for docs and ``openjudge graders``."""

    name: str
    kind: Literal["rule", "llm"]
    class_path: str
    summary: str
    required_inputs: tuple[str, ...]
    optional_inputs: tuple[str, ...]
    score_range: ScoreRange | None

    @property
    def higher_is_better(self) -> bool | None:
        return None if self.score_range is None else self.score_range.higher_is_better


@dataclass(frozen=True, slots=True)
class GraderEntry:
    """A built-in grader: ``target`` is ``"package.module:ClassName"``."""

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


def _entries(*items: tuple[str, str, Literal["rule", "llm"], str]) -> dict[str, GraderEntry]:
    return {name: GraderEntry(name, target, kind, summary) for name, target, kind, summary in items}


_G = "openjudge.graders"

BUILTIN_GRADERS: Mapping[str, GraderEntry] = _entries(
    ("llm", f"{_G}.llm_grader:LLMGrader", "llm", "Your own judge prompt; {placeholders} are its inputs"),
    (
        "trajectory_comprehensive",
        f"{_G}.agent.trajectory.trajectory_comprehensive:TrajectoryComprehensiveGrader",
        "llm",
        "Judge each tool-call step on contribution, relevance, accuracy and efficiency",
    ),
    (
        "correctness",
        f"{_G}.common.correctness:CorrectnessGrader",
        "llm",
        "Correctness against a reference answer (1-5)",
    ),
    (
        "relevance",
        f"{_G}.common.relevance:RelevanceGrader",
        "llm",
        "Does the response address the query (1-5)",
    ),
    (
        "hallucination",
        f"{_G}.common.hallucination:HallucinationGrader",
        "llm",
        "Claims supported by the given context (1-5, 5 = none hallucinated)",
    ),
    (
        "harmfulness",
        f"{_G}.common.harmfulness:HarmfulnessGrader",
        "llm",
        "Free of harmful content (1-5, 5 = harmless)",
    ),
    (
        "instruction_following",
        f"{_G}.common.instruction_following:InstructionFollowingGrader",
        "llm",
        "Follows every explicit instruction (1-5)",
    ),
    (
        "action_loop_detection",
        f"{_G}.agent.action.action_loop:ActionLoopDetectionGrader",
        "rule",
        "Penalise repeated (near-identical) tool calls",
    ),
    (
        "observation_information_gain",
        f"{_G}.agent.observation.observation_information_gain:ObservationInformationGainGrader",
        "rule",
        "Reward observations that bring new information",
    ),
    (
        "tool_call_precision_recall_match",
        f"{_G}.agent.tool.tool_call_precision_recall_match:ToolCallPrecisionRecallMatchGrader",
        "rule",
        "Precision or recall of tool calls against reference calls",
    ),
    (
        "tool_call_step_sequence_match",
        f"{_G}.agent.tool.tool_call_step_sequence_match:ToolCallStepSequenceMatchGrader",
        "rule",
        "Order of tool calls against a reference sequence",
    ),
    (
        "trajectory_step_efficiency",
        f"{_G}.agent.trajectory.trajectory_step_efficiency:TrajectoryStepEfficiencyGrader",
        "rule",
        "Penalise redundant steps in a trajectory",
    ),
    (
        "string_match",
        f"{_G}.text.string_match:StringMatchGrader",
        "rule",
        "Exact, normalised, contains or regex match",
    ),
    (
        "number_accuracy",
        f"{_G}.text.number_accuracy:NumberAccuracyGrader",
        "rule",
        "Numbers in the response against reference numbers, with tolerance",
    ),
    (
        "similarity",
        f"{_G}.text.similarity:SimilarityGrader",
        "rule",
        "BLEU, ROUGE-L or edit-distance similarity",
    ),
    (
        "json_validator",
        f"{_G}.format.json_validator:JsonValidatorGrader",
        "rule",
        "Is the response valid JSON",
    ),
    ("json_match", f"{_G}.format.json_match:JsonMatchGrader", "rule", "Response JSON against reference JSON"),
    (
        "json_schema",
        f"{_G}.format.json_schema:JsonSchemaGrader",
        "rule",
        "Response JSON against a JSON Schema",
    ),
    (
        "length_penalty",
        f"{_G}.format.length_penalty:LengthPenaltyGrader",
        "rule",
        "Penalty outside a length window",
    ),
    (
        "reasoning_format",
        f"{_G}.format.reasoning_format:ReasoningFormatGrader",
        "rule",
        "Response has <think>...</think> then <answer>...</answer>",
    ),
    (
        "math_answer_equivalence",
        f"{_G}.math.answer_equivalence:MathAnswerEquivalenceGrader",
        "rule",
        "Final answer (boxed, tagged, or last LaTeX/number) equals the reference (math-verify in a killable worker)",
    ),
    (
        "code_execution",
        f"{_G}.code.code_execution:CodeExecutionGrader",
        "rule",
        "Fraction of test cases a Python solution passes; sandboxed, verdicts decided outside the sandbox",
    ),
    (
        "ngram_repetition_penalty",
        f"{_G}.format.ngram_repetition:NgramRepetitionPenaltyGrader",
        "rule",
        "Penalty for repeated n-grams",
    ),
    (
        "provided_score",
        f"{_G}.provided_score:ProvidedScoreGrader",
        "rule",
        "A score computed upstream (a data column, VERL's reward) as a result, in its declared range",
    ),
    (
        "pairwise_preference",
        f"{_G}.comparison.pairwise:PairwisePreferenceGrader",
        "llm",
        "P(response A is better than response B), judged in both orders to cancel position bias",
    ),
    (
        "listwise_ranking",
        f"{_G}.comparison.listwise:ListwiseRankingGrader",
        "llm",
        "Rank a group of 2..N responses in one judge call; Borda or Bradley-Terry scores",
    ),
    (
        "reward_model",
        f"{_G}.reward_model:RewardModelGrader",
        "llm",
        "A reward model's raw score for the response (provider kind transformers, or vllm's /classify)",
    ),
    (
        "group_tournament",
        f"{_G}.comparison.group_tournament:GroupTournamentGrader",
        "llm",
        "All pairs of a group in both orders, N(N-1) calls; Borda or Bradley-Terry scores",
    ),
    (
        "knockout_tournament",
        f"{_G}.comparison.knockout:KnockoutTournamentGrader",
        "llm",
        "Single-elimination bracket over a group, N - 1 calls; rounds survived or Bradley-Terry",
    ),
    (
        "openai_grader",
        f"{_G}.openai.grader:OpenAIGrader",
        "rule",
        "An OpenAI grader JSON (RFT or Evals, multi included) run unchanged; a provider for model graders",
    ),
    (
        "anchor_comparison",
        f"{_G}.comparison.anchor:AnchorComparisonGrader",
        "llm",
        "Each response of a group against an anchor response, N calls; P(better than anchor)",
    ),
)


def lookup(name: str) -> GraderEntry:
    """The entry for a config ``type`` name, with a "did you mean" on typos."""
    try:
        return BUILTIN_GRADERS[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, BUILTIN_GRADERS, n=3)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise KeyError(f"unknown grader type {name!r}{hint} (run 'openjudge graders' to list them)") from None


def describe(entry: GraderEntry) -> GraderInfo:
    """Load a grader class and read its inputs and declared range."""
    cls = entry.load()
    template = getattr(cls, "TEMPLATE", None)
    if isinstance(template, PromptTemplate) and cls.aevaluate is LLMGrader.aevaluate:
        # A template-driven judge takes its template's placeholders.
        spec = InputSpec(template.compile().placeholders, frozenset(), accepts_any=False)
    elif entry.kind == "llm" and entry.name == "llm":
        spec = InputSpec(frozenset(), frozenset(), accepts_any=True)
    elif entry.name == "openai_grader":  # the sample's other fields form OpenAI's item
        spec = InputSpec(frozenset({"response"}), frozenset({"item", "tool_calls"}), accepts_any=True)
    else:
        spec = InputSpec.from_callable(cls.aevaluate, skip_first=True)
    return GraderInfo(
        name=entry.name,
        kind=entry.kind,
        class_path=entry.target.replace(":", "."),
        summary=entry.summary,
        required_inputs=tuple(sorted(spec.required)),
        optional_inputs=tuple(sorted(spec.optional)),
        score_range=cls.default_score_range,
    )
