"""The documented SkyRL training script (examples/skyrl/main_openjudge.py) against skyrl 0.3.

skyrl 0.3.0 pairs with the pinned skyrl-gym 0.4 and needs Python 3.12 to validate a
config (its backends build pydantic models on ``typing.TypedDict``); it pins transformers
5.8 and peft 0.18. The test environment keeps neither, so the configuration test runs
where skyrl is installed (``pip install torch==2.13.0 skyrl==0.3.0 'ray==2.56.0' loguru
omegaconf hydra-core tensordict jaxtyping accelerate torchdata`` on Python 3.12) and is
skipped elsewhere; the page keeps showing the script the test runs.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from openjudge.config import ConfigError
from openjudge.testing.judge_server import JudgeServerProcess
from tests.integrations.skyrl.helpers import write_graders_yaml

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "examples" / "skyrl" / "main_openjudge.py"
PAGE = ROOT / "docs" / "skyrl.md"
OVERRIDES = [
    "environment.env_class=openjudge",
    "environment.skyrl_gym.max_env_workers=32",
    "generator.batched=false",
]


def test_the_page_shows_the_example_script() -> None:
    page = PAGE.read_text(encoding="utf-8")
    shown = re.search(r"cat > main_openjudge\.py <<'EOF'\n(.*?)^EOF$", page, re.DOTALL | re.MULTILINE)
    assert shown is not None
    assert shown.group(1) == SCRIPT.read_text(encoding="utf-8")
    for override in OVERRIDES:  # the command line the page shows is the one tested below
        assert f"    {override} \\" in page


def load_script() -> ModuleType:
    pytest.importorskip(
        "skyrl.train.entrypoints.main_base", reason="skyrl 0.3 (Python 3.12) is not installed"
    )
    spec = importlib.util.spec_from_file_location("main_openjudge", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_configures_skyrl_and_registers_the_env_where_the_generator_runs(
    tmp_path: Path, judge_server: JudgeServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = load_script()
    import skyrl_gym  # type: ignore[import-untyped]  # no py.typed

    graders = str(write_graders_yaml(tmp_path, judge_server.base_url))
    here = [*OVERRIDES, "trainer.logger=console"]  # SkyRL's default logger, wandb, needs WANDB_API_KEY
    cfg = script.configure(here, graders)  # SkyRL's own parse and validate_cfg
    assert cfg.environment.env_class == "openjudge"
    assert cfg.generator.batched is False
    assert cfg.environment.skyrl_gym.max_env_workers == 32

    with pytest.raises(ValueError, match="The '\\+' prefix for adding new config fields is not supported"):
        script.configure(["+environment.skyrl_gym.openjudge.config=/x.yaml"], graders)
    with pytest.raises(Exception, match="openjudge"):  # SkyRL's config declares no such section
        script.configure(["environment.skyrl_gym.openjudge.config=/x.yaml"], graders)
    broken = tmp_path / "broken.yaml"
    broken.write_text("version: 1\ngraders: {judge: {type: no_such_grader}}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="no_such_grader"):  # before Ray starts
        script.configure(here, str(broken))

    rewards: list[float] = []

    class Generator:
        """What ``BasePPOExp(cfg).run()`` does with the env, as SkyRLGymGenerator makes it."""

        def __init__(self, config: object) -> None:
            env_class = cfg.environment.env_class
            env_config = getattr(cfg.environment.skyrl_gym, env_class, {})
            self.env = skyrl_gym.make(
                env_class, env_config=env_config, extras={"reward_spec": {"ground_truth": "4"}}
            )

        def run(self) -> None:
            self.env.init([{"role": "user", "content": "What is 2+2?"}])
            rewards.append(self.env.step("4 #oj:score=5")["reward"])
            self.env.close()

    monkeypatch.setattr(script, "BasePPOExp", Generator)
    script.skyrl_entrypoint._function(cfg, graders)  # the Ray task's body, in this process
    assert rewards == [pytest.approx(1.0)]
    assert "openjudge" in sys.modules["skyrl_gym.envs.registration"].registry
