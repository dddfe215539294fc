"""SkyRL 0.3 training, rewarded by openjudge graders (docs/skyrl.md, "Training").

OPENJUDGE_GRADERS=/abs/path/graders.yaml python main_openjudge.py environment.env_class=openjudge ...
"""

from __future__ import annotations

import os
import sys

import ray
from skyrl.train.config import SkyRLTrainConfig
from skyrl.train.entrypoints.main_base import BasePPOExp
from skyrl.train.utils import validate_cfg
from skyrl.train.utils.utils import initialize_ray

from openjudge.integrations.skyrl import EnvScorer, OpenJudgeSkyRLSettings, register_env

ENV_CLASS = "openjudge"
FALLBACK_SCORE = 0.0  # the reward of a step whose grading failed (flagged in openjudge/failed)


def configure(argv: list[str], graders: str) -> SkyRLTrainConfig:
    """SkyRL's configuration from the command line, and the graders YAML checked by building it."""
    cfg = SkyRLTrainConfig.from_cli_overrides(argv)
    validate_cfg(cfg)
    EnvScorer.from_settings(OpenJudgeSkyRLSettings(config=graders, fallback_score=FALLBACK_SCORE)).close()
    return cfg


@ray.remote(num_cpus=1)
def skyrl_entrypoint(cfg: SkyRLTrainConfig, graders: str) -> None:
    register_env(ENV_CLASS, config=graders, fallback_score=FALLBACK_SCORE)  # this process's registry
    BasePPOExp(cfg).run()


def main() -> None:
    # An absolute path: the Ray task runs in a working directory of its own.
    graders = os.path.abspath(os.environ.get("OPENJUDGE_GRADERS", "graders.yaml"))
    cfg = configure(sys.argv[1:], graders)
    initialize_ray(cfg)
    ray.get(skyrl_entrypoint.remote(cfg, graders))


if __name__ == "__main__":
    main()
