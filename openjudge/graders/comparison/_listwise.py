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

A group too long for the judge's context window is ranked without the responses that made
it long: the longest are left out until the prompt would fit (a short response never is),
score 0.0 as the response's failure (listed in ``metadata["too_long"]``), and the others are
ranked by a second call. A group too long without its responses is an ``invalid_input`` error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from pydantic import JsonValue

from openjudge.errors import ContextOverflow
from openjudge.graders._degenerate import degenerate_reason
from openjudge.graders._verdict_schema import ranking_output
from openjudge.graders.base_grader import error_from_exception, grader_boundary
from openjudge.graders.blame import (
    SHORT_RESPONSE_TOKENS,
    context_overflow_of,
    message_chars,
    overflow_failure,
)
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
from openjudge.graders.judge_grader import JudgeGrader, PreparedCall, ranked_result
from openjudge.models.chat_model import ChatModel, OutputSpec, Sampling
from openjudge.models.schema._data_blocks import Block
from openjudge.models.schema.prompt_template import LanguageEnum
from openjudge.results import GraderError, GraderMode, GraderRank, TokenUsage

__all__ = ["ListwiseRankingGrader", "candidate_ids", "ranking_problem"]

_INPUTS = frozenset({"query", "candidates", "candidate_ids"})
_SHORT_CHARS = 4 * SHORT_RESPONSE_TOKENS  # a response this short never made a group too long


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
        reject_degenerate: A degenerate response (empty, punctuation only, a reasoning
            opener alone) scores 0.0 without being shown to the judge (``metadata["degenerate"]``).
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
        reject_degenerate: bool = True,
    ) -> None:
        lang = LanguageEnum(language)
        grader_name = name or self.default_name
        self.scoring = check_scoring(grader_name, scoring)
        self.reject_degenerate = reject_degenerate
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
    async def aevaluate(self, *, query: str, responses: Sequence[str]) -> GraderRank | GraderError:
        call = self.prepare_call({"query": query, "responses": responses})
        if isinstance(call, GraderError):
            return call
        if self.reject_degenerate:
            empty = [k for k, text in enumerate(responses) if degenerate_reason(text) is not None]
            if empty:
                why = f"{', '.join(f'R{k + 1}' for k in empty)} have no content (degenerate responses): scored 0"
                return await self._rank_without(empty, "degenerate", why, query, responses, None, None)
        result = ranked_result(self, await self.judge(call))
        overflow = context_overflow_of(result)
        if overflow is None or not isinstance(result, GraderError):
            return result
        return await self._without_too_long(result, overflow, message_chars(call.messages), query, responses)

    async def _without_too_long(
        self,
        error: GraderError,
        overflow: ContextOverflow,
        prompt_chars: int,
        query: str,
        responses: Sequence[str],
    ) -> GraderRank | GraderError:
        """Rank a group too long for the judge without the responses that made it long (module docstring)."""
        texts = check_responses(responses)
        left_out: list[int] = []
        fits = False
        for k in sorted(range(len(texts)), key=lambda k: -len(texts[k])):
            if len(texts[k]) < _SHORT_CHARS:
                break
            left_out.append(k)
            rest = self.prepare_call(
                {"query": query, "responses": ["" if i in left_out else t for i, t in enumerate(texts)]}
            )
            if isinstance(rest, GraderError):
                return error
            failure = overflow_failure(
                overflow, prompt_chars=prompt_chars, rest_chars=message_chars(rest.messages)
            )
            if failure is not None:
                fits = True
                break
        if not fits:
            return error.model_copy(
                update={
                    "kind": "invalid_input",
                    "message": f"{error.message} (the group is too long for the judge even without its "
                    "long responses: shorten the template or the query, or use a judge with a longer context)",
                }
            )
        shown = ", ".join(f"R{k + 1}" for k in sorted(left_out))
        why = f"{shown} too long for the judge ({overflow.describe()}): scored 0"
        return await self._rank_without(left_out, "too_long", why, query, texts, error.usage, error.latency_s)

    async def _rank_without(
        self,
        left_out: Sequence[int],
        key: str,
        reason: str,
        query: str,
        texts: Sequence[str],
        usage: TokenUsage | None,
        latency_s: float | None,
    ) -> GraderRank | GraderError:
        """The group's rank with the ``left_out`` responses scored 0.0 (the response's failure,
        listed in ``metadata[key]``) and the others ranked by a call of their own."""
        kept = [k for k in range(len(texts)) if k not in left_out]
        scores: list[float | None] = [0.0] * len(texts)
        metadata: dict[str, JsonValue] = {
            key: list[JsonValue](sorted(left_out)),
            "candidate_ids": list[JsonValue](candidate_ids(len(texts))),
        }
        if len(kept) == 1:
            scores[kept[0]] = 1.0
        elif len(kept) > 1:
            ranked = await self.judge_or_error({"query": query, "responses": [texts[k] for k in kept]})
            if not isinstance(ranked, GraderRank):
                return ranked
            sub = ranked.metadata.get("scores")
            assert isinstance(sub, list)  # this grader's own rank
            for k, value in zip(kept, sub, strict=True):
                scores[k] = float(value) if isinstance(value, int | float) else None
            metadata["ranking_of_the_others"] = ranked.metadata.get("ranking")
            if ranked.usage is not None:
                usage = ranked.usage if usage is None else usage + ranked.usage
            latency_s = (latency_s or 0.0) + (ranked.latency_s or 0.0)
            reason = f"{reason}; the others ranked among themselves: {ranked.reason}"
        return group_rank(
            self.name,
            scores,
            [None] * len(texts),
            scoring=self.scoring,
            reason=reason,
            metadata=metadata,
            usage=usage,
            latency_s=latency_s,
        )

    async def judge_or_error(self, inputs: Mapping[str, object]) -> GraderRank | GraderError:
        """Prepare and judge ``inputs`` (the failure when they cannot be)."""
        call = self.prepare_call(inputs)
        if isinstance(call, GraderError):
            return call
        return ranked_result(self, await self.judge(call))

    def to_result(self, verdict: ListwiseVerdict, call: PreparedCall[tuple[str, ...]]) -> GraderRank:
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
