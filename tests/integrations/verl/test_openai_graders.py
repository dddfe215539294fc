"""An OpenAI RFT grader JSON as VERL's reward: through the manager's scorer and through
``OpenJudgeRewardManager`` loaded by VERL's own loader on real batches."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import anyio
import pytest
from verl.trainer.ppo.reward import load_reward_manager

from openjudge.cli import main
from openjudge.integrations.verl import OpenJudgeRewardManager
from openjudge.integrations.verl._scoring import shared_scorer
from openjudge.integrations.verl._settings import OpenJudgeVerlSettings
from tests.integrations.verl.helpers import (
    Prompt,
    make_batch,
    make_tokenizer,
    trainer_config,
    words_of,
)

pytestmark = pytest.mark.slow  # VERL's own managers on real batches (seconds per test)

# The documented importlib route (VERL 0.7.1+).
OVERRIDES = [
    "reward.reward_manager.source=importlib",
    "reward.reward_manager.module.path=pkg://openjudge.integrations.verl",
    "reward.reward_manager.name=OpenJudgeRewardManager",
]
RFT_JOB = Path(__file__).resolve().parents[2] / "graders" / "openai" / "data" / "rft_job.json"


def imported_config(directory: Path) -> Path:
    """``openjudge import-openai-graders`` on the cookbook-style RFT job, mapped onto VERL's sample fields."""
    path = directory / "graders.yaml"
    assert main(["import-openai-graders", str(RFT_JOB), "-o", str(path)]) == 0
    text = path.read_text().replace(
        "    type: openai_grader\n",
        "    type: openai_grader\n    mapper: {response: response, item: extra_info}\n",
        1,
    )
    path.write_text(text)
    return path


def test_the_rft_grader_scores_verl_samples(tmp_path: Path) -> None:
    scorer = shared_scorer(OpenJudgeVerlSettings(config=str(imported_config(tmp_path))))  # on_failure=drop
    row = {"reference_answer": "Paris", "max_words": 20}
    samples = [
        {"response": json.dumps({"answer": "Paris", "explanation": "It is the capital."}), "extra_info": row},
        {"response": json.dumps({"answer": "paris", "explanation": "Capital."}), "extra_info": row},
        {"response": "Paris, obviously.", "extra_info": row},  # not JSON: the response's failure
    ]
    right, close, not_json = anyio.run(scorer.score_many, samples)
    assert (right.reward, right.failed) == (1.0, False)
    assert close.reward == pytest.approx(0.4)
    # A response-caused failure is the bottom score, not an error: on_failure=drop keeps it.
    assert (not_json.reward, not_json.failed) == (0.0, False)
    assert not_json.extra["openjudge/answer_format_and_reasoning/error"] == 0.0


ANSWER_GRADER = {
    "type": "multi",
    "name": "answer",
    "graders": {
        "said": {
            "type": "python",
            "name": "said",
            "source": "def grade(sample, item):\n    return 1.0 if item['answer'] in sample['output_text'].split() else 0.0\n",
        },
        "short": {
            "type": "string_check",
            "name": "short",
            "input": "{{ sample.output_text }}",
            "reference": "answer",
            "operation": "like",
        },
    },
    "calculate_output": "0.75 * said + 0.25 * short",
}


def test_through_verls_loader_on_a_real_batch(tmp_path: Path) -> None:
    graders = tmp_path / "graders.yaml"
    graders.write_text(
        "graders:\n  answer:\n    type: openai_grader\n    mapper: {response: response, item: extra_info}\n"
        f"    params:\n      grader: {json.dumps(ANSWER_GRADER)}\n"
    )
    prompts = [Prompt("what is 2+2 ?", "4", ["answer 4", "answer 5", "4"], extra_info={"answer": "4"})]
    tokenizer = make_tokenizer(words_of(prompts))
    manager = load_reward_manager(
        trainer_config([*OVERRIDES, f"+reward.openjudge.config={graders}"]),
        tokenizer,
        reward_router_address=None,
        reward_model_tokenizer=None,
    )
    assert isinstance(manager, OpenJudgeRewardManager)
    data = make_batch(tokenizer, prompts)

    async def run_all() -> list[float]:
        outs = await asyncio.gather(*(manager.run_single(data[i : i + 1]) for i in range(len(data))))
        return [float(out["reward_score"]) for out in outs]

    assert asyncio.run(run_all()) == [1.0, 0.25, 0.75]
