"""Judge meta-evaluation: how far a judge config agrees with labels, and how it is biased.

::

    data = load_labelled("pairs.jsonl")                      # labelled pairs or scored responses
    run = await collect(runner, data, repeats=3)             # every grader judges every item
    report = summarize(run)                                  # agreement, biases, consistency, cost
    print(render_report(report))

* :func:`load_labelled`: our formats and JudgeBench, LLMBar, PandaLM, MT-Bench human files.
* :func:`collect` runs the graders (:func:`collect_config` for a config file);
  :func:`summarize` computes the metrics, with bootstrap 95 % intervals over items.
* :func:`compare_runs`: two configs on the same items, paired-bootstrap differences.
* :func:`load_recorded`, :func:`read_judgements`, :func:`merge_runs`: judgements already
  made (benchmarks' stored outputs, a meta-eval's ``--judgements`` file), scored without a judge.
* :func:`render_report`, :func:`render_comparison`, :func:`write_html`: the text table and
  the HTML report, each figure with a reading in plain words.

Needs numpy (``pip install 'openjudge-graders[metaeval]'``). Names are imported on first use, so
importing this package (as the ``openjudge`` command does) costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_exports
from openjudge.errors import LabelledDataError as LabelledDataError

if TYPE_CHECKING or not lazy_exports(globals(), extras={"numpy": "metaeval"}):
    from openjudge.metaeval._compare import ComparisonReport as ComparisonReport
    from openjudge.metaeval._compare import compare_runs as compare_runs
    from openjudge.metaeval._configured import collect_config as collect_config
    from openjudge.metaeval._console import render_comparison as render_comparison
    from openjudge.metaeval._console import render_report as render_report
    from openjudge.metaeval._html import render_html as render_html
    from openjudge.metaeval._html import write_html as write_html
    from openjudge.metaeval._items import PairItem as PairItem
    from openjudge.metaeval._items import PairwiseSet as PairwiseSet
    from openjudge.metaeval._items import PointItem as PointItem
    from openjudge.metaeval._items import PointwiseSet as PointwiseSet
    from openjudge.metaeval._judgements import read_judgements as read_judgements
    from openjudge.metaeval._judgements import write_judgements as write_judgements
    from openjudge.metaeval._loaders import load_labelled as load_labelled
    from openjudge.metaeval._metrics import summarize as summarize
    from openjudge.metaeval._report import MetaEvalReport as MetaEvalReport
    from openjudge.metaeval._rescore import load_recorded as load_recorded
    from openjudge.metaeval._rescore import merge_runs as merge_runs
    from openjudge.metaeval._runs import MetaEvalRun as MetaEvalRun
    from openjudge.metaeval._runs import collect as collect

__all__ = [
    "ComparisonReport",
    "LabelledDataError",
    "MetaEvalReport",
    "MetaEvalRun",
    "PairItem",
    "PairwiseSet",
    "PointItem",
    "PointwiseSet",
    "collect",
    "collect_config",
    "compare_runs",
    "load_labelled",
    "load_recorded",
    "merge_runs",
    "read_judgements",
    "render_comparison",
    "render_html",
    "render_report",
    "summarize",
    "write_html",
    "write_judgements",
]
