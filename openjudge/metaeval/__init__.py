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

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
    from openjudge.metaeval._loaders import LabelledDataError as LabelledDataError
    from openjudge.metaeval._loaders import load_labelled as load_labelled
    from openjudge.metaeval._metrics import summarize as summarize
    from openjudge.metaeval._report import MetaEvalReport as MetaEvalReport
    from openjudge.metaeval._rescore import load_recorded as load_recorded
    from openjudge.metaeval._rescore import merge_runs as merge_runs
    from openjudge.metaeval._runs import MetaEvalRun as MetaEvalRun
    from openjudge.metaeval._runs import collect as collect

_EXPORTS = {
    "MetaEvalRun": "openjudge.metaeval._runs",
    "collect": "openjudge.metaeval._runs",
    "ComparisonReport": "openjudge.metaeval._compare",
    "compare_runs": "openjudge.metaeval._compare",
    "collect_config": "openjudge.metaeval._configured",
    "render_comparison": "openjudge.metaeval._console",
    "render_report": "openjudge.metaeval._console",
    "render_html": "openjudge.metaeval._html",
    "write_html": "openjudge.metaeval._html",
    "PairItem": "openjudge.metaeval._items",
    "PairwiseSet": "openjudge.metaeval._items",
    "PointItem": "openjudge.metaeval._items",
    "PointwiseSet": "openjudge.metaeval._items",
    "LabelledDataError": "openjudge.metaeval._loaders",
    "load_labelled": "openjudge.metaeval._loaders",
    "summarize": "openjudge.metaeval._metrics",
    "read_judgements": "openjudge.metaeval._judgements",
    "write_judgements": "openjudge.metaeval._judgements",
    "load_recorded": "openjudge.metaeval._rescore",
    "merge_runs": "openjudge.metaeval._rescore",
    "MetaEvalReport": "openjudge.metaeval._report",
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
