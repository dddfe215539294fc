"""Through SkyRL's environment step, a response that breaks a grader is the step's (bottom)
reward, not the environment's ``fallback_score`` and not flagged as failed."""

from __future__ import annotations

from openjudge.graders.format import JsonMatchGrader
from openjudge.graders.llm_grader import LLMGrader
from openjudge.integrations.skyrl import EnvScorer, OpenJudgeEnv
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest
from openjudge.runner.aggregators import WeightedMeanAggregator
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel

PROMPT = [{"role": "user", "content": "Give the list."}]
EXTRAS = {"reward_spec": {"method": "rule", "ground_truth": "[1]"}, "data_source": "lists", "max_turns": 1}
DEEP = "[" * 600 + "]" * 600
FALLBACK = -1.0


def judge(request: ChatRequest) -> str:
    if "DOWN" in str(request.messages[-1]["content"]):
        raise ChatModelError("judge down", status_code=503, retryable=False)
    return '{"reason": "ok", "score": 5}'


def test_a_response_failure_is_the_reward_and_a_judge_outage_the_fallback() -> None:
    runner = GradingRunner(
        {
            "json": GraderConfig(
                JsonMatchGrader(strict_order=False), {"response": "response", "reference": "ground_truth"}
            ),
            "judge": GraderConfig(
                LLMGrader(
                    FunctionChatModel(judge),
                    name="judge",
                    template="Gold {gold} Predicted {predicted}",
                    score_range=(1, 5),
                ),
                {"gold": "ground_truth", "predicted": "response"},
            ),
        },
        aggregators=WeightedMeanAggregator("reward", {"json": 1, "judge": 1}),
        show_progress=False,
    )

    class Env(OpenJudgeEnv):
        scorer = EnvScorer(runner, fallback_score=FALLBACK)

    def step(action: str) -> tuple[float, float]:
        env = Env(env_config={}, extras=dict(EXTRAS))
        env.init([dict(m) for m in PROMPT])
        out = env.step(action)
        metrics = env.get_metrics()
        return float(out["reward"]), float(metrics["openjudge/failed"])

    try:
        assert step("[1]") == (1.0, 0.0)
        assert step(DEEP) == (0.5, 0.0)  # json scores its bottom (0.0); the judge's 5 is 1.0
        assert step("[1] \udcff") == (0.0, 0.0)  # a lone surrogate: both graders score their bottom
        assert step("[1] DOWN") == (FALLBACK, 1.0)  # the system failed: the environment's fallback
    finally:
        Env.scorer.close()
