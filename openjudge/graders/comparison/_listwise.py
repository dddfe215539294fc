"""ListwiseRankingGrader: one judge call ranks 2..N responses to the same query.

Candidates are labelled ``R1``..``Rn`` in input order and each is a data block
``<candidate id="Ri">`` (no response can open or close a block: see
:mod:`~openjudge.models.schema._data_blocks`). The judge
replies with the ids best first; a reply that is not a permutation of the ids is
re-asked once with the problem named, then becomes ``GraderError(kind="parse_error")``.
The result is a :class:`GraderRank`: ``rank[i]`` is the rank of ``responses[i]`` (1 best),
with per-response ``scores`` in [0, 1] (Borda, ``(n - rank) / (n - 1)``, or Bradley–Terry
over the pairs the ranking implies; see :mod:`~openjudge.graders.comparison._group`). One
call judges the whole group, so a failed call fails every member.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from openjudge.graders._verdict_schema import ranking_output
from openjudge.graders.base_grader import error_from_exception, grader_boundary
from openjudge.graders.comparison._group import group_rank
from openjudge.graders.comparison._inputs import check_responses, check_text
from openjudge.graders.comparison._ratings import (
    GroupScoring,
    borda_from_ranks,
    bradley_terry_scores,
    check_scoring,
    outcomes_from_ranks,
)
from openjudge.graders.comparison._verdicts import ListwiseVerdict
from openjudge.graders.comparison.prompts import (
    TemplateLike,
    as_template,
    check_placeholders,
    listwise_template,
)
from openjudge.graders.judge_grader import JudgeGrader, PreparedCall
from openjudge.models.chat_model import ChatModel, OutputSpec, Sampling
from openjudge.models.schema._data_blocks import Block
from openjudge.models.schema.prompt_template import LanguageEnum
from openjudge.results import GraderError, GraderMode, GraderRank, GraderResult, GraderScore

__all__ = ["ListwiseRankingGrader", "candidate_ids", "ranking_problem"]

_INPUTS = frozenset({"query", "candidates", "candidate_ids"})


def candidate_ids(n: int) -> tuple[str, ...]:
    """The stable labels of ``n`` candidates: ``R1``..``Rn`` in input order."""
    return tuple(f"R{k}" for k in range(1, n + 1))


def ranking_problem(ranking: Sequence[str], ids: Sequence[str]) -> str | None:
    """Why ``ranking`` is not a permutation of ``ids`` (``None`` if it is)."""
    counts = Counter(ranking)
    missing = [i for i in ids if i not in counts]
    repeated = [i for i in ids if counts[i] > 1]
    unknown = sorted(set(counts) - set(ids))
    if not (missing or repeated or unknown):
        return None
    parts = [
        f"{label} {', '.join(items)}"
        for label, items in (("missing", missing), ("repeated", repeated), ("unknown", unknown))
        if items
    ]
    return f"ranking must list each of {', '.join(ids)} exactly once ({'; '.join(parts)})"


def _candidate_blocks(ids: Sequence[str], responses: Sequence[str]) -> list[Block]:
    return [Block("candidate", text, {"id": cid}) for cid, text in zip(ids, responses, strict=True)]


class ListwiseRankingGrader(JudgeGrader[ListwiseVerdict, tuple[str, ...]]):
    """Rank 2..N responses to one query with a single judge call (a :class:`GraderRank`).

    Metadata: ``ranking`` (the candidate ids, best first), ``candidate_ids``
    (``responses[i]`` is ``candidate_ids[i]``), and ``scores``, ``member_errors`` and
    ``scoring`` (see :mod:`~openjudge.graders.comparison._group`).

    Args:
        model: The judge.
        template: A custom prompt with ``{candidates}`` and optionally ``{query}`` and
            ``{candidate_ids}``; ``None`` for the built-in EN/ZH prompts.
        criteria: What "better" means, for the built-in prompts (``None``: helpful,
            correct and relevant).
        language: Prompt language.
        sampling: Sampling overrides for the judge call.
        name: Result name.
        max_reasks: Re-asks after an invalid reply.
        scoring: ``"borda"`` or ``"bradley_terry"`` for ``scores``.
    """

    default_name = "listwise_ranking"
    blame_refusals = False  # the whole group in one call: a refusal cannot be pinned on one

    def __init__(
        self,
        model: ChatModel,
        *,
        template: TemplateLike | None = None,
        criteria: str | None = None,
        language: LanguageEnum | str = LanguageEnum.EN,
        sampling: Sampling | None = None,
        name: str = "",
        max_reasks: int = 1,
        scoring: GroupScoring = "borda",
    ) -> None:
        lang = LanguageEnum(language)
        grader_name = name or self.default_name
        self.scoring = check_scoring(grader_name, scoring)
        if template is None:
            prompt = listwise_template(lang, criteria)
        else:
            if criteria is not None:
                raise ValueError(
                    f"{grader_name}: criteria applies to the default prompts; write it into your template"
                )
            prompt = as_template(template)
            check_placeholders(grader_name, prompt, lang, allowed=_INPUTS, required=frozenset({"candidates"}))
        super().__init__(
            model,
            name=grader_name,
            mode=GraderMode.LISTWISE,
            language=lang,
            description="Rank several responses to one query",
            template=prompt,
            structured_model=ListwiseVerdict,
            sampling=sampling,
            max_reasks=max_reasks,
        )

    def prepare_call(self, inputs: Mapping[str, object]) -> PreparedCall[tuple[str, ...]] | GraderError:
        """The call for ``query`` and ``responses`` (its context: the candidate ids), or why there is none."""
        try:
            query = check_text("query", inputs.get("query"))
            responses = check_responses(inputs.get("responses"))
            ids = candidate_ids(len(responses))
            values = {
                "query": query,
                "candidates": _candidate_blocks(ids, responses),
                "candidate_ids": ", ".join(ids),
            }
            return PreparedCall(self.build_messages(values), ids)
        except ValueError as exc:  # InvalidInputError, or a query that cannot be sent
            return error_from_exception(self.name, exc, "invalid_input")

    def output_spec(self, call: PreparedCall[tuple[str, ...]]) -> OutputSpec:
        """The ranking lists this call's ids, as many as there are: an engine that enforces the
        schema cannot name an unknown candidate or leave one out."""
        return ranking_output(ListwiseVerdict, call.context)

    @grader_boundary
    async def aevaluate(self, *, query: str, responses: Sequence[str]) -> GraderResult:
        call = self.prepare_call({"query": query, "responses": responses})
        if isinstance(call, GraderError):
            return call
        return await self.judge(call)

    def to_result(
        self, verdict: ListwiseVerdict, call: PreparedCall[tuple[str, ...]]
    ) -> GraderScore | GraderRank:
        ids = call.context
        ranking = [cid.strip().upper() for cid in verdict.ranking]
        problem = ranking_problem(ranking, ids)
        if problem is not None:
            raise ValueError(problem)
        place = {cid: k for k, cid in enumerate(ranking, start=1)}
        rank = [place[cid] for cid in ids]
        if self.scoring == "borda":
            scores: list[float | None] = list(borda_from_ranks(rank))
        else:
            scores = bradley_terry_scores(outcomes_from_ranks(rank), len(rank))
        return group_rank(
            self.name,
            scores,
            [None] * len(rank),
            scoring=self.scoring,
            reason=verdict.reason,
            metadata={"ranking": list(ranking), "candidate_ids": list(ids)},
        )
