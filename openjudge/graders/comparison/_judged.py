"""The base of the graders whose verdicts come from :class:`PairwiseJudge` calls.

Pairwise preference, the all-pairs and knockout tournaments and anchor comparison all
take a judge model and the same prompt options, judge ``{response_a}`` against
``{response_b}`` after a ``query`` (and an optional ``reference``), and differ only in
which orders they judge and how the verdicts become scores.
"""

from __future__ import annotations

from openjudge.graders.base_grader import BaseGrader
from openjudge.graders.comparison._inputs import check_text
from openjudge.graders.comparison._pairwise_judge import PairwiseJudge, PairwiseJudges
from openjudge.graders.comparison.prompts import TemplateLike
from openjudge.models.chat_model import ChatModel, Sampling
from openjudge.models.schema.prompt_template import LanguageEnum
from openjudge.results import GraderMode

__all__ = ["PairwiseJudgedGrader"]


class PairwiseJudgedGrader(BaseGrader):
    """A grader that compares responses with :class:`PairwiseJudge` calls.

    Args:
        model: The judge.
        name: Result name (``""``: the class's ``default_name``).
        mode: Pointwise (one pair) or listwise (a group).
        description: One line on what the grader measures.
        template: A custom pairwise prompt; ``None`` for the built-in prompts.
        criteria: What "better" means, for the built-in prompts.
        language: Prompt language.
        sampling: Sampling overrides for the judge calls.
        max_concurrency: Judge calls of one evaluation in flight at once, for graders
            that bound them (``None``: the grader does not take the option).
        reject_degenerate: A degenerate response (empty, punctuation only, a reasoning
            opener alone) loses its comparisons without a judge call.

    Raises:
        ValueError: ``max_concurrency`` below 1, an unknown language, or a template or
            criteria the judges refuse.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        name: str,
        mode: GraderMode,
        description: str,
        template: TemplateLike | None,
        criteria: str | None,
        language: LanguageEnum | str,
        sampling: Sampling | None,
        max_concurrency: int | None = None,
        reject_degenerate: bool = True,
    ) -> None:
        super().__init__(name=name, mode=mode, description=description)
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError(f"{self.name}: max_concurrency must be >= 1, got {max_concurrency}")
        self.model = model
        self.language = LanguageEnum(language)
        self.judges = PairwiseJudges(
            model,
            name=self.name,
            template=template,
            criteria=criteria,
            language=self.language,
            sampling=sampling,
            reject_degenerate=reject_degenerate,
        )

    def judge_for(self, query: str, reference: str | None) -> tuple[PairwiseJudge, dict[str, object]]:
        """The judge for one sample and the template values all its calls share.

        Raises:
            InvalidInputError: ``query`` is not a string, or the template cannot take
                (or needs) the reference.
        """
        judge = self.judges.pick(reference)
        shared: dict[str, object] = {"query": check_text("query", query)}
        if reference is not None:
            shared["reference"] = reference
        return judge, shared
