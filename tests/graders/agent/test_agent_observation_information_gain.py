"""ObservationInformationGainGrader: OpenJudge parity on three trajectories, and edge cases."""

from __future__ import annotations

import math

import pytest

from openjudge.graders.agent.observation.observation_information_gain import ObservationInformationGainGrader
from openjudge.models.schema.oai.message import ChatMessage
from openjudge.results import GraderScore, ScoreRange
from tests.graders.agent._agent_support import TRAJECTORIES, JsonDict, as_error, as_score, call, grade, traj

GRADER = ObservationInformationGainGrader()


def gain(messages: object, grader: ObservationInformationGainGrader = GRADER) -> GraderScore:
    return as_score(grade(lambda: grader.aevaluate(messages=messages)))  # type: ignore[arg-type]


def reward(similarity: float, threshold: float = 0.5) -> float:
    """OpenJudge 0.2.4's reward: (1 − s) · exp(−2 · max(0, s − threshold))."""
    return (1 - similarity) * math.exp(-2 * max(0, similarity - threshold))


def jaccard(a: str, b: str) -> float:
    x, y = set(a.lower().split()), set(b.lower().split())
    return len(x & y) / len(x | y)


def answered(*observations: object) -> list[JsonDict]:
    messages: list[JsonDict] = []
    for i, observation in enumerate(observations):
        messages.append({"role": "assistant", "tool_calls": [call(f"c{i}", "f", x=i)]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": observation})
    return messages


def test_identity() -> None:
    assert GRADER.name == "observation_information_gain"
    assert GRADER.score_range == ScoreRange(low=0.0, high=1.0)
    assert GRADER.similarity_threshold == 0.5


def test_efficient_trajectory() -> None:
    result = gain(TRAJECTORIES["efficient"])
    # The third observation shares one token ("paris") with the first: 1 of 21 distinct tokens.
    third_vs_first = jaccard(
        "Air quality index in Paris is 41 (good); PM2.5 at 9 ug/m3.",
        "Paris weather today: sunny, 22C, light wind from the west.",
    )
    assert third_vs_first == 1 / 21
    similarities = [0.0, 0.0, 1 / 21]
    rewards = [reward(s) for s in similarities]
    assert result.metadata["each_turn_similarity"] == similarities
    assert result.metadata["each_turn_rewards"] == rewards
    assert result.score == sum(rewards) / 3
    assert round(result.score, 4) == 0.9841
    assert result.reason == "Average info gain score across 3 observation steps: 0.984"


def test_looping_trajectory() -> None:
    result = gain(TRAJECTORIES["looping"])
    assert result.metadata["each_turn_similarity"] == [0.0, 1.0, 1.0, 1.0]
    assert result.metadata["each_turn_rewards"] == [1.0, 0.0, 0.0, 0.0]
    assert result.score == 0.25
    assert result.reason == "Average info gain score across 4 observation steps: 0.250"


def test_partial_trajectory() -> None:
    result = gain(TRAJECTORIES["partial"])
    second = jaccard(
        "Paris weather: sunny, 23C, light wind from the north.",
        "Paris weather: sunny, 22C, light wind from the west.",
    )
    assert second == 7 / 11
    # The forecast shares no token with earlier ones: punctuation is kept ("paris," != "paris").
    similarities = [0.0, 7 / 11, 0.0]
    rewards = [reward(s) for s in similarities]
    assert result.metadata["each_turn_similarity"] == similarities
    assert result.metadata["each_turn_rewards"] == rewards
    assert round(rewards[1], 4) == 0.2768
    assert result.score == sum(rewards) / 3
    assert round(result.score, 4) == 0.7589
    assert result.metadata["observation_count"] == 4  # the skipped "ok" still counts here
    assert result.metadata["raw_average"] == result.score
    assert result.metadata["similarity_threshold"] == 0.5
    assert result.metadata["evaluable"] is True


def test_threshold_changes_the_decay() -> None:
    grader = ObservationInformationGainGrader(similarity_threshold=0.2)
    result = gain(TRAJECTORIES["partial"], grader)
    assert result.metadata["each_turn_rewards"] == [1.0, reward(7 / 11, 0.2), 1.0]


@pytest.mark.parametrize(
    "messages",
    [
        [],
        [{"role": "user", "content": "hello"}],
        [{"role": "assistant", "tool_calls": [call("a", "f")]}],  # unanswered only
    ],
)
def test_no_pairs_is_zero_and_not_evaluable(messages: list[JsonDict]) -> None:
    result = gain(messages)
    assert result.score == 0.0
    assert result.reason == "No action-observation pairs found - unable to evaluate information gain"
    assert result.metadata["evaluable"] is False
    assert result.metadata["action_count"] == 0


def test_all_short_observations_score_zero() -> None:
    result = gain(answered("ok", "   tiny   ", ""))
    assert result.score == 0.0
    assert result.metadata["each_turn_rewards"] == []
    assert result.metadata["observation_count"] == 3
    assert result.metadata["evaluable"] is False
    assert result.reason == "Average info gain score across 0 observation steps: 0.000"


def test_exactly_ten_stripped_characters_count() -> None:
    result = gain(answered("  0123456789  ", "abcdefghi"))
    assert result.metadata["each_turn_rewards"] == [1.0]


def test_list_of_parts_content_is_read_as_text() -> None:
    parts = [
        {"type": "text", "text": "Paris weather: sunny,"},
        {"type": "image_url", "image_url": {"url": "u"}},
    ]
    parts.append({"type": "text", "text": "22C, light wind from the west."})
    as_parts = gain(answered("Paris weather: sunny, 22C, light wind from the west.", parts))
    assert as_parts.metadata["each_turn_similarity"] == [0.0, 1.0]


def test_unicode_and_punctuation() -> None:
    first = "Température à PARIS : 22 °C"
    result = gain(answered(first, "température à paris : 22 °C", "température, à paris"))
    # lower-cased: the second repeats the first; "température," keeps its comma: 2 of 7 tokens shared
    assert jaccard("température, à paris", first) == 2 / 7
    assert result.metadata["each_turn_similarity"] == [0.0, 1.0, 2 / 7]


def test_orphans_and_unanswered_calls_are_counted() -> None:
    messages = [
        *answered("Paris weather: sunny and warm."),
        {"role": "tool", "tool_call_id": "ghost", "content": "Paris weather: sunny and warm."},
        {"role": "tool", "content": "no id and nothing pending"},
        {"role": "assistant", "tool_calls": [call("never", "f")]},
    ]
    result = gain(messages)
    assert result.metadata["each_turn_rewards"] == [1.0]
    assert result.metadata["orphan_observation_count"] == 2
    assert result.metadata["unanswered_call_count"] == 1


def test_fifo_pairing_for_calls_without_ids() -> None:
    messages: list[JsonDict] = [
        {"role": "assistant", "tool_calls": [call(None, "a"), call(None, "b")]},
        {"role": "function", "content": "first answer is here"},
        {"role": "function", "content": "second answer is here"},
    ]
    result = gain(messages)
    assert result.metadata["each_turn_similarity"] == [
        0.0,
        jaccard("first answer is here", "second answer is here"),
    ]


def test_wrappers_and_chat_messages_match_plain_dicts() -> None:
    plain = gain(TRAJECTORIES["partial"])
    assert gain([{"message": m} for m in TRAJECTORIES["partial"]]) == plain
    assert gain([ChatMessage.model_validate(m) for m in TRAJECTORIES["partial"]]) == plain


def test_invalid_content_is_invalid_input() -> None:
    error = as_error(grade(lambda: GRADER.aevaluate(messages=answered({"text": "x"}))))
    assert error.kind == "invalid_input"
    assert error.message.startswith("messages[1].content: expected a string or a list of parts")


def test_long_trajectory() -> None:
    n = 2000
    steps = [
        ("search", {"q": i}, f"result number {i % 50} for the query about item {i % 50}") for i in range(n)
    ]
    result = gain(traj(steps))
    rewards = result.metadata["each_turn_rewards"]
    assert isinstance(rewards, list)
    assert len(rewards) == n
    assert rewards[50:] == [0.0] * (n - 50)  # every later observation repeats an earlier one
    assert result.score == sum(rewards) / n  # type: ignore[arg-type]


def test_ten_thousand_steps_finish() -> None:
    n = 10_000  # repeats are recognised in O(1); 20 distinct observations are compared pairwise
    steps = [("search", {"q": i}, f"result {i % 20} with several words of text") for i in range(n)]
    result = gain(traj(steps))
    assert result.metadata["each_turn_similarity"][20:] == [1.0] * (n - 20)  # type: ignore[index]
