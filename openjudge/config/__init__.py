"""Job configuration: a YAML file naming providers, graders, aggregators and the data.

The application layer: it may build providers by name; the core never imports it. ::

    config = load_config("job.yaml")      # validated; ConfigError lists every problem with file:line
    job = build_job(config)               # providers, graders, aggregators and the runner

Each section of a config file is a frozen pydantic model named ``...Spec`` (``GraderSpec``
is one entry under ``graders:``); :class:`JobConfig` is the whole file.
"""

from openjudge.config._build import BuiltJob as BuiltJob
from openjudge.config._build import build_job as build_job
from openjudge.config._loader import load_config as load_config
from openjudge.config._loader import parse_config as parse_config
from openjudge.config._spec import GraderSpec as GraderSpec
from openjudge.config._spec import JobConfig as JobConfig
from openjudge.config._spec import ProviderSpec as ProviderSpec
from openjudge.config._spec import config_json_schema as config_json_schema
from openjudge.errors import ConfigError as ConfigError

__all__ = [
    "BuiltJob",
    "ConfigError",
    "GraderSpec",
    "JobConfig",
    "ProviderSpec",
    "build_job",
    "config_json_schema",
    "load_config",
    "parse_config",
]
