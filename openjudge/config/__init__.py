"""Job configuration: a YAML file naming providers, graders, aggregators and the data.

The application layer: it may build providers by name; the core never imports it.
"""

from openjudge.config.loader import ConfigError as ConfigError
from openjudge.config.loader import load_config as load_config
from openjudge.config.schema import JobConfig as JobConfig

__all__ = ["ConfigError", "JobConfig", "load_config"]
