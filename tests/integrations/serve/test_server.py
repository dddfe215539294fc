"""The reward server over real HTTP on 127.0.0.1: both shapes, the failure policies, backpressure,
the failure rate, the token, health and metrics."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from pydantic import ValidationError

from openjudge.integrations.serve import TOKEN_ENV, RewardServer, ServeSettings
from openjudge.testing.judge_server import JudgeServerProcess
from tests.integrations.serve.helpers import (
    DOWN,
    JUDGE_YAML,
    RIGHT,
    RULES_YAML,
    WRONG,
    until_pending,
    write_yaml,
)

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-token-of-some-length"


@pytest.fixture(autouse=True)
def _no_token_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)


@asynccontextmanager
async def serving(
    config: str, **options: Any
) -> AsyncIterator[tuple[str, aiohttp.ClientSession, RewardServer]]:
    server = RewardServer.from_settings(ServeSettings(config=config, port=0, **options))
    async with server.listen() as url, aiohttp.ClientSession() as session:
        yield url, session, server


async def post(session: aiohttp.ClientSession, url: str, body: object, **kwargs: Any) -> tuple[int, Any]:
    async with session.post(url, json=body, **kwargs) as response:
        return response.status, await response.json()


async def test_openrlhf_shape_one_reward_per_query_and_numeric_extra_logs(tmp_path: Path) -> None:
    async with serving(write_yaml(tmp_path, RULES_YAML)) as (url, session, _):
        status, body = await post(
            session,
            f"{url}/get_reward",
            {
                "query": ["Q: 1+1?" + RIGHT, "Q: 1+1?" + WRONG, "Q: 1+1? \\boxed{2}"],
                "prompts": ["Q: 1+1?", "Q: 1+1?", "Q: 1+1?"],
                "labels": ["2", "2", "2"],
            },
        )
    assert status == 200
    assert body["rewards"] == [1.0, 0.25, 0.75]  # (3 x correct + format) / 4
    assert body["scores"] == body["rewards"]
    logs = body["extra_logs"]
    assert logs["openjudge/correct"] == [1.0, 0.0, 1.0]
    assert logs["openjudge/format"] == [1.0, 1.0, 0.0]
    assert logs["openjudge/failed"] == [0.0, 0.0, 0.0]
    # only numbers: OpenRLHF makes a tensor of each value
    assert all(isinstance(v, float) for column in logs.values() for v in column)


async def test_generic_shape_scores_each_sample(tmp_path: Path) -> None:
    async with serving(write_yaml(tmp_path, RULES_YAML), include_reasons=True) as (url, session, _):
        status, body = await post(
            session,
            f"{url}/score",
            {"samples": [{"response": RIGHT, "label": "2"}, {"response": WRONG, "label": "2"}]},
        )
    assert status == 200
    first, second = body["results"]
    assert first["reward"] == 1.0 and first["failed"] is False and first["errors"] == {}
    assert first["scores"] == {"correct": 1.0, "format": 1.0, "reward": 1.0}
    assert second["reward"] == 0.25 and second["scores"]["correct"] == 0.0
    assert set(first["reasons"]) == {"correct", "format"}


async def test_generic_shape_drops_a_failed_sample_as_null_with_its_error(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    config = write_yaml(tmp_path, JUDGE_YAML.format(base_url=judge_server.base_url))
    async with serving(config, max_failure_rate=None) as (url, session, _):
        status, body = await post(
            session,
            f"{url}/score",
            {"samples": [{"response": "fine #oj:score=5"}, {"response": f"x {DOWN}"}]},
        )
    assert status == 200
    scored, failed = body["results"]
    assert scored == {"reward": 1.0, "failed": False, "scores": {"quality": 5.0, "mean": 1.0}, "errors": {}}
    assert failed["reward"] is None and failed["failed"] is True  # dropped: never an invented reward
    assert failed["errors"]["quality"]["kind"] == "provider_error"
    assert "503" in failed["errors"]["quality"]["message"]


async def test_generic_shape_neutral_gives_a_failed_sample_its_group_mean(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    config = write_yaml(tmp_path, JUDGE_YAML.format(base_url=judge_server.base_url))
    async with serving(config, on_failure="neutral", max_failure_rate=None) as (url, session, _):
        status, body = await post(
            session,
            f"{url}/score",
            {
                "samples": [
                    {"response": "a #oj:score=5"},
                    {"response": "b #oj:score=3"},
                    {"response": f"c {DOWN}"},
                    {"response": f"d {DOWN}"},
                ],
                "groups": ["g1", "g1", "g1", "g2"],
            },
        )
    assert status == 200
    rewards = [r["reward"] for r in body["results"]]
    assert rewards == [1.0, 0.5, 0.75, None]  # g1's mean; g2 has no scored member: dropped
    assert [r["failed"] for r in body["results"]] == [False, False, True, True]


async def test_fallback_gives_the_fallback_score_flagged_in_both_shapes(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    config = write_yaml(tmp_path, JUDGE_YAML.format(base_url=judge_server.base_url))
    options = {"on_failure": "fallback", "fallback_score": 0.125, "max_failure_rate": None}
    async with serving(config, **options) as (url, session, _):
        _, generic = await post(session, f"{url}/score", {"samples": [{"response": f"x {DOWN}"}]})
        _, openrlhf = await post(
            session, f"{url}/get_reward", {"query": [f"p x {DOWN}"], "prompts": ["p "], "labels": [None]}
        )
    assert generic["results"][0]["reward"] == 0.125 and generic["results"][0]["failed"] is True
    assert openrlhf["rewards"] == [0.125] and openrlhf["extra_logs"]["openjudge/failed"] == [1.0]


async def test_openrlhf_shape_never_sends_null_a_failure_is_its_groups_mean_or_zero_flagged(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    config = write_yaml(tmp_path, JUDGE_YAML.format(base_url=judge_server.base_url))
    async with serving(config, max_failure_rate=None) as (url, session, _):  # on_failure: drop
        status, group = await post(
            session,
            f"{url}/get_reward",
            {
                "query": ["p a #oj:score=5", "p b #oj:score=3", f"p c {DOWN}", f"q d {DOWN}"],
                "prompts": ["p ", "p ", "p ", "q "],
                "labels": [None, None, None, None],
            },
        )
        _, alone = await post(
            session, f"{url}/get_reward", {"query": [f"p e {DOWN}"], "prompts": ["p "], "labels": [""]}
        )
    assert status == 200
    assert group["rewards"] == [1.0, 0.5, 0.75, 0.0]  # OpenRLHF cannot drop: the mean of its prompt's group
    assert group["extra_logs"]["openjudge/failed"] == [0.0, 0.0, 1.0, 1.0]
    assert group["extra_logs"]["openjudge/quality/error"] == [0.0, 0.0, 1.0, 1.0]
    assert alone["rewards"] == [0.0] and alone["extra_logs"]["openjudge/failed"] == [1.0]


async def test_a_full_server_answers_429_with_retry_after_and_grades_nothing(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    config = write_yaml(tmp_path, JUDGE_YAML.format(base_url=judge_server.base_url))
    slow = {"samples": [{"response": "slow #oj:latency_s=0.6,score=5"}]}
    async with serving(config, max_pending=2, max_concurrent_samples=1, retry_after_s=3) as (
        url,
        session,
        server,
    ):
        held = [asyncio.create_task(post(session, f"{url}/score", slow)) for _ in range(2)]
        await until_pending(server, 2)
        before = judge_server.stats().chat_requests
        async with session.post(f"{url}/score", json={"samples": [{"response": "now #oj:score=5"}]}) as busy:
            assert busy.status == 429
            assert busy.headers["Retry-After"] == "3"
            assert "2 samples pending of 2" in (await busy.json())["error"]
        assert judge_server.stats().chat_requests - before <= 1  # the held ones only: the 429 made no call
        assert [status for status, _ in await asyncio.gather(*held)] == [200, 200]
        status, body = await post(session, f"{url}/score", {"samples": [{"response": "now #oj:score=5"}]})
        assert status == 200 and body["results"][0]["reward"] == 1.0
        status, body = await post(session, f"{url}/score", {"samples": [{"response": "x"}] * 3})
        assert status == 413 and "max_pending (2)" in body["error"]


async def test_a_tripped_failure_rate_answers_503_and_health_says_stopped(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    config = write_yaml(tmp_path, JUDGE_YAML.format(base_url=judge_server.base_url))
    async with serving(config, max_failure_rate=0.5, failure_window=2, breaker_failures=0) as (
        url,
        session,
        _,
    ):
        await post(session, f"{url}/score", {"samples": [{"response": f"a {DOWN}"}]})
        status, body = await post(session, f"{url}/score", {"samples": [{"response": f"b {DOWN}"}]})
        assert status == 503 and "failed" in body["error"]
        status, body = await post(session, f"{url}/get_reward", {"query": ["fine #oj:score=5"]})
        assert status == 503  # every later request, whatever its samples: the run stops
        async with session.get(f"{url}/health") as health:
            assert health.status == 503
            assert (await health.json())["status"] == "stopped"


async def test_a_token_is_required_except_for_health(tmp_path: Path) -> None:
    async with serving(write_yaml(tmp_path, RULES_YAML), token=TOKEN) as (url, session, _):
        body = {"query": ["Q" + RIGHT], "prompts": ["Q"], "labels": ["2"]}
        status, answer = await post(session, f"{url}/get_reward", body)
        assert status == 401 and "bearer token" in answer["error"]
        status, _ = await post(
            session, f"{url}/get_reward", body, headers={"Authorization": "Bearer wrong-token-here"}
        )
        assert status == 401
        status, answer = await post(
            session, f"{url}/get_reward", body, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert status == 200 and answer["rewards"] == [1.0]
        status, answer = await post(
            session, f"{url}/get_reward?token={TOKEN}", body
        )  # OpenRLHF sets no headers
        assert status == 200 and answer["rewards"] == [1.0]
        async with session.get(f"{url}/metrics") as metrics:
            assert metrics.status == 401
        async with session.get(f"{url}/health") as health:
            assert health.status == 200 and (await health.json())["graders"] == ["correct", "format"]


def test_beyond_localhost_a_token_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError, match=TOKEN_ENV):
        ServeSettings(config="g.yaml", host="0.0.0.0")
    assert ServeSettings(config="g.yaml", host="127.0.0.2").token is None  # loopback needs none
    assert ServeSettings(config="g.yaml", host="::1").token is None
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    assert ServeSettings(config="g.yaml", host="0.0.0.0").token == TOKEN
    with pytest.raises(ValidationError, match="at least 16"):
        ServeSettings(config="g.yaml", token="short")


async def test_metrics_count_requests_samples_and_grader_errors(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    config = write_yaml(tmp_path, JUDGE_YAML.format(base_url=judge_server.base_url))
    async with serving(config, max_failure_rate=None) as (url, session, _):
        await post(session, f"{url}/score", {"samples": [{"response": "#oj:score=4"}, {"response": DOWN}]})
        await post(session, f"{url}/get_reward", {"query": ["#oj:score=2"]})
        await post(session, f"{url}/score", {"samples": "not a list"})
        async with session.get(f"{url}/metrics") as response:
            assert response.headers["Content-Type"].startswith("text/plain")
            text = await response.text()
    lines = set(text.splitlines())
    assert 'openjudge_serve_requests_total{route="score",status="200"} 1.0' in lines
    assert 'openjudge_serve_requests_total{route="score",status="400"} 1.0' in lines
    assert 'openjudge_serve_requests_total{route="openrlhf",status="200"} 1.0' in lines
    assert 'openjudge_serve_samples_total{outcome="scored",route="score"} 1.0' in lines
    assert 'openjudge_serve_samples_total{outcome="failed",route="score"} 1.0' in lines
    assert 'openjudge_serve_grader_errors_total{grader="quality",kind="provider_error"} 1.0' in lines
    assert "openjudge_serve_pending_samples 0.0" in lines
    assert 'openjudge_serve_request_seconds_count{route="score"} 1.0' in lines


async def test_bad_requests_are_400_naming_the_field(tmp_path: Path) -> None:
    async with serving(write_yaml(tmp_path, RULES_YAML)) as (url, session, _):
        async with session.post(f"{url}/score", data=b"{not json") as response:
            assert response.status == 400 and "not JSON" in (await response.json())["error"]
        status, body = await post(
            session, f"{url}/get_reward", {"query": ["a", "b"], "prompts": ["a"], "labels": None}
        )
        assert status == 400 and "'query' (2), 'prompts' (1)" in body["error"]
        status, body = await post(session, f"{url}/score", {"samples": [{"response": "a"}, 3]})
        assert status == 400 and "samples[1] must be an object" in body["error"]
        status, body = await post(
            session, f"{url}/score", {"samples": [{"response": "a"}], "groups": ["g", "h"]}
        )
        assert status == 400 and "'groups' (2)" in body["error"]
        status, body = await post(session, f"{url}/score", {"samples": []})
        assert status == 200 and body == {"results": []}
        async with session.get(f"{url}/score") as response:
            assert response.status == 405 and response.headers["Allow"] == "POST"
        status, body = await post(session, f"{url}/reward", {})
        assert status == 404 and "POST /get_reward" in body["error"]


async def test_an_openrlhf_query_that_does_not_start_with_its_prompt_fails_as_invalid_input(
    tmp_path: Path,
) -> None:
    async with serving(write_yaml(tmp_path, RULES_YAML), on_failure="fallback", fallback_score=0.0) as (
        url,
        session,
        _,
    ):
        status, body = await post(
            session, f"{url}/get_reward", {"query": ["A" + RIGHT], "prompts": ["B"], "labels": ["2"]}
        )
    assert status == 200
    assert body["rewards"] == [0.0] and body["extra_logs"]["openjudge/failed"] == [1.0]
    assert body["extra_logs"]["openjudge/correct/error"] == [1.0]


async def test_concurrent_requests_graded_together_each_get_their_own_rewards(tmp_path: Path) -> None:
    async with serving(write_yaml(tmp_path, RULES_YAML), max_concurrent_samples=7) as (url, session, server):
        sizes: list[int] = []
        grade_many = server.scorer.grade_many

        async def counted(samples: Any) -> Any:
            sizes.append(len(samples))
            return await grade_many(samples)

        server.scorer.grade_many = counted  # type: ignore[method-assign]  # counts the batches
        expected = []
        requests = []
        for i in range(40):
            right = i % 3 != 0
            query = f"Q{i}" + (
                f"<think>x</think><answer>\\boxed{{{i}}}</answer>" if right else f"\\boxed{{{i + 1}}}"
            )
            requests.append(
                post(
                    session, f"{url}/get_reward", {"query": [query], "prompts": [f"Q{i}"], "labels": [str(i)]}
                )
            )
            expected.append([1.0] if right else [0.0])
        answers = await asyncio.gather(*requests)
    assert [body["rewards"] for _, body in answers] == expected
    assert sum(sizes) == 40 and max(sizes) == 7  # batched, at most 7 samples at once
    assert len(sizes) < 40


async def test_a_judge_that_is_down_trips_the_breaker(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    config = write_yaml(tmp_path, JUDGE_YAML.format(base_url=judge_server.base_url))
    options = {"breaker_failures": 2, "breaker_cooldown_s": 60, "max_failure_rate": None}
    async with serving(config, **options) as (url, session, _):
        before = judge_server.stats().chat_requests
        kinds = []
        for _ in range(4):
            _, body = await post(session, f"{url}/score", {"samples": [{"response": f"x {DOWN}"}]})
            kinds.append(body["results"][0]["errors"]["quality"]["kind"])
        assert judge_server.stats().chat_requests - before == 2  # an open breaker makes no call
    assert kinds == ["provider_error", "provider_error", "circuit_open", "circuit_open"]


ROUTED_YAML = """\
version: 1
graders:
  math: {type: math_answer_equivalence, when: {task: math}, mapper: {response: response, reference: label}}
  facts: {type: string_match, when: {task: facts}, mapper: {response: response, reference: label}}
aggregators:
  - {type: weighted_mean, name: reward, weights: {math: 1, facts: 1}}
"""


async def test_routed_graders_say_where_they_do_not_apply_and_an_unrouted_sample_fails(
    tmp_path: Path,
) -> None:
    async with serving(write_yaml(tmp_path, ROUTED_YAML)) as (url, session, _):
        status, body = await post(
            session,
            f"{url}/score",
            {
                "samples": [
                    {"task": "math", "response": "\\boxed{4}", "label": "4"},
                    {"task": "facts", "response": "Rome", "label": "Paris"},
                    {"task": "poems", "response": "roses", "label": ""},
                ]
            },
        )
    assert status == 200
    math, facts, poem = body["results"]
    assert math["reward"] == 1.0 and math["not_applicable"] == ["facts"] and math["scores"]["facts"] is None
    assert facts["reward"] == 0.0 and facts["failed"] is False and facts["not_applicable"] == ["math"]
    assert poem["reward"] is None and poem["failed"] is True  # no grader applies: its failure, dropped
    assert poem["errors"]["reward"]["kind"] == "invalid_input"
