"""Grader and aggregator classes of the user's, named ``module:Class`` in a config."""

from __future__ import annotations

import textwrap
from pathlib import Path

import anyio
import pytest

from openjudge.config import ConfigError, load_config
from openjudge.config._build import build_job
from openjudge.integrations.trl import OpenJudgeRewards
from openjudge.results import GraderScore

MODULE = '''
from openjudge.graders.base_grader import BaseGrader
from openjudge.results import GraderScore


class Exact(BaseGrader):
    def __init__(self, name: str = "exact", bonus: float = 0.0) -> None:
        super().__init__(name=name, score_range=(0, 2))
        self.bonus = bonus

    async def aevaluate(self, response: str, reference: str) -> GraderScore:
        score = float(response == reference) + self.bonus
        return GraderScore(name=self.name, score=score, reason="", score_range=self.score_range)


class Judged(BaseGrader):
    """Takes `model`: a judge, so it needs a provider."""

    def __init__(self, model: object, name: str = "judged") -> None:
        super().__init__(name=name, score_range=(1, 5))
        self.model = model

    async def aevaluate(self, response: str) -> GraderScore:
        return GraderScore(name=self.name, score=3.0, reason="")


class Doubled:
    def __init__(self, of: str) -> None:
        self.of = of

    def __call__(self, results):
        return GraderScore(name="doubled", score=2 * results[self.of].score, reason="")


class NotAGrader:
    pass
'''


@pytest.fixture
def folder(tmp_path: Path) -> tuple[Path, str]:
    """A folder holding a module of classes, under a name no other test imports."""
    module = f"custom_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(MODULE, encoding="utf-8")
    return tmp_path, module


def _config(folder: tuple[Path, str], body: str) -> Path:
    path, module = folder
    (path / "job.yaml").write_text(textwrap.dedent(body).replace("MOD", module), encoding="utf-8")
    return path / "job.yaml"


def test_a_grader_and_an_aggregator_class_are_built_and_run(folder: tuple[Path, str]) -> None:
    config = load_config(
        _config(
            folder,
            """
            graders:
              mine:
                type: MOD:Exact
                params: {bonus: 1}
            aggregators:
              - {type: MOD:Doubled, params: {of: mine}}
            """,
        )
    )
    runner = build_job(config, use_cache=False).runner
    assert runner.grader_configs["mine"].grader.name == "mine"  # named after the config's key
    results = anyio.run(
        runner.arun, [{"response": "4", "reference": "4"}, {"response": "5", "reference": "4"}]
    )
    assert [r.score for r in results["mine"] if isinstance(r, GraderScore)] == [2.0, 1.0]
    assert [r.score for r in results["Doubled"] if isinstance(r, GraderScore)] == [4.0, 2.0]


def test_mistakes_are_reported_together_with_lines(folder: tuple[Path, str]) -> None:
    path = _config(
        folder,
        """
        providers:
          p: {kind: openai, model: m, base_url: "http://127.0.0.1:9/v1", api_key: k}
        graders:
          a: {type: MOD:NotAGrader}
          b: {type: MOD:Judged}
          c: {type: MOD:Exact, provider: p}
          d: {type: MOD:Exact, params: {bonsu: 1}}
        aggregators:
          - {type: MOD:Doubled, weights: {d: 1}, params: {frm: d}}
          - {type: weighted_meen}
        """,
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    module = folder[1]
    assert info.value.problems == [
        f"{path}:11: aggregators.1.type: unknown aggregator type 'weighted_meen'; did you mean "
        "'weighted_mean'? (types: weighted_mean, min, gate; or a class of your own as 'module:ClassName')",
        f"{path}:5: graders.a.type: {module}:NotAGrader is not a grader: subclass "
        "openjudge.graders.base_grader.BaseGrader and implement 'async def aevaluate(self, <inputs>) -> GraderResult'",
        f"{path}:6: graders.b: grader type '{module}:Judged' is an LLM judge and needs 'provider: <name>'",
        f"{path}:7: graders.c.provider: grader type '{module}:Exact' is rule-based and takes no provider",
        f"{path}:8: graders.d.params.bonsu: unknown parameter 'bonsu'; did you mean 'bonus'? (valid: bonus, name)",
    ]


def test_the_trl_adapter_grades_with_a_class_beside_its_config(folder: tuple[Path, str]) -> None:
    path = _config(
        folder,
        """
        graders:
          mine: {type: MOD:Exact, mapper: {response: response, reference: reference}}
        """,
    )
    reward = OpenJudgeRewards.from_config(path).grader("mine")
    scores = anyio.run(lambda: reward(["q", "q"], ["4", "5"], reference=["4", "4"]))
    assert scores == [0.5, 0.0]  # normalised over the class's (0, 2)
