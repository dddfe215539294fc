"""Judge meta-evaluation: how far a judge config agrees with labels, and how it is biased.

::

    data = load_labelled("pairs.jsonl")                      # labelled pairs or scored responses
    run = await collect(runner, data, repeats=3)             # every grader judges every item
    report = summarize(run)                                  # agreement, biases, consistency, cost
    print(render_report(report))

* :mod:`.loaders`: our formats and JudgeBench, LLMBar, PandaLM, MT-Bench human files.
* :mod:`.runs`: run the graders (:func:`collect`; :func:`collect_config` for a config file).
* :mod:`.metrics` and :mod:`.stats`: the metrics, with bootstrap 95 % intervals over items.
* :mod:`.compare`: two configs on the same items, paired-bootstrap differences.
* :mod:`.rescore`: judgements already made, scored without a judge: benchmarks' stored
  outputs (:mod:`.recorded`, with their own headline rules from :mod:`.headline`), a
  meta-eval's ``--judgements`` file (:mod:`.judgements`), a run's results file.
* :mod:`.readings`, :mod:`.scales`: each figure in plain words; scores on the labels' scale.
* :mod:`.console`, :mod:`.html`: the text table and the HTML report.

Needs numpy (``pip install 'openjudge-graders[metaeval]'``). Names are imported on first use, so
importing this package (as the ``openjudge`` command does) costs nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openjudge.metaeval.compare import ComparisonReport as ComparisonReport
    from openjudge.metaeval.compare import compare_runs as compare_runs
    from openjudge.metaeval.configured import collect_config as collect_config
    from openjudge.metaeval.console import render_comparison as render_comparison
    from openjudge.metaeval.console import render_report as render_report
    from openjudge.metaeval.html import render_html as render_html
    from openjudge.metaeval.html import write_html as write_html
    from openjudge.metaeval.items import PairItem as PairItem
    from openjudge.metaeval.items import PairwiseSet as PairwiseSet
    from openjudge.metaeval.items import PointItem as PointItem
    from openjudge.metaeval.items import PointwiseSet as PointwiseSet
    from openjudge.metaeval.judgements import read_judgements as read_judgements
    from openjudge.metaeval.judgements import write_judgements as write_judgements
    from openjudge.metaeval.loaders import LabelledDataError as LabelledDataError
    from openjudge.metaeval.loaders import load_labelled as load_labelled
    from openjudge.metaeval.metrics import summarize as summarize
    from openjudge.metaeval.report import MetaEvalReport as MetaEvalReport
    from openjudge.metaeval.rescore import load_recorded as load_recorded
    from openjudge.metaeval.rescore import merge_runs as merge_runs
    from openjudge.metaeval.runs import MetaEvalRun as MetaEvalRun
    from openjudge.metaeval.runs import collect as collect

_EXPORTS = {
    "MetaEvalRun": "openjudge.metaeval.runs",
    "collect": "openjudge.metaeval.runs",
    "ComparisonReport": "openjudge.metaeval.compare",
    "compare_runs": "openjudge.metaeval.compare",
    "collect_config": "openjudge.metaeval.configured",
    "render_comparison": "openjudge.metaeval.console",
    "render_report": "openjudge.metaeval.console",
    "render_html": "openjudge.metaeval.html",
    "write_html": "openjudge.metaeval.html",
    "PairItem": "openjudge.metaeval.items",
    "PairwiseSet": "openjudge.metaeval.items",
    "PointItem": "openjudge.metaeval.items",
    "PointwiseSet": "openjudge.metaeval.items",
    "LabelledDataError": "openjudge.metaeval.loaders",
    "load_labelled": "openjudge.metaeval.loaders",
    "summarize": "openjudge.metaeval.metrics",
    "read_judgements": "openjudge.metaeval.judgements",
    "write_judgements": "openjudge.metaeval.judgements",
    "load_recorded": "openjudge.metaeval.rescore",
    "merge_runs": "openjudge.metaeval.rescore",
    "MetaEvalReport": "openjudge.metaeval.report",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'openjudge.metaeval' has no attribute {name!r}")
    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != "numpy":
            raise
        raise ImportError(
            "openjudge.metaeval needs numpy: pip install 'openjudge-graders[metaeval]'"
        ) from exc
    value = getattr(imported, name)
    globals()[name] = value
    return value
