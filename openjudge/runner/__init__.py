"""The runner: many samples through many graders, concurrently, with aggregators.

``GradingRunner`` maps each sample's fields to each grader's inputs (``GraderConfig``),
runs every (sample, grader) pair through a bounded pool with per-pair timeouts, and
combines per-grader results with an aggregator. ``GraderConfig(when=...)`` and
``graders_field`` route graders to the samples they apply to (elsewhere: ``NotApplicable``).
``tune_collector=True`` raises the garbage collector's young threshold while a run is
active (``batch_collector``); it is off by default, as it changes the whole process
(``openjudge run`` turns it on).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_exports

if TYPE_CHECKING or not lazy_exports(globals()):
    from openjudge.runner._collector import batch_collector as batch_collector
    from openjudge.runner._grader_config import GraderConfig as GraderConfig
    from openjudge.runner.aggregators import Aggregator as Aggregator
    from openjudge.runner.aggregators import GateAggregator as GateAggregator
    from openjudge.runner.aggregators import MinAggregator as MinAggregator
    from openjudge.runner.aggregators import RoutedAggregator as RoutedAggregator
    from openjudge.runner.aggregators import WeightedMeanAggregator as WeightedMeanAggregator
    from openjudge.runner.grading_runner import GradingRunner as GradingRunner

__all__ = [
    "Aggregator",
    "GateAggregator",
    "GraderConfig",
    "GradingRunner",
    "MinAggregator",
    "RoutedAggregator",
    "WeightedMeanAggregator",
    "batch_collector",
]
