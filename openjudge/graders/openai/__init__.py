"""OpenAI's grader JSON (RFT and Evals) run unchanged as openjudge graders.

* :func:`from_openai_grader` / :class:`OpenAIGrader`: one grader JSON (``string_check``,
  ``text_similarity``, ``score_model``, ``label_model``, ``python``, ``multi``) as a
  grader; in a job config, ``type: openai_grader`` with ``params.grader``.
* :func:`job_config_yaml`: a job config from a grader JSON, an RFT job, a graders run
  request or an eval's testing criteria (``openjudge import-openai-graders``).

Modules: :mod:`._spec` (the JSON's types), :mod:`._templates` (``{{ item.x }}``),
:mod:`._sample` (the ``sample`` namespace), :mod:`._similarity` (metrics),
:mod:`._python_grader` (``grade()`` in the sandbox), :mod:`._model_graders` (judges),
:mod:`._formula` (``calculate_output``), :mod:`._blame` (OpenAI's errors mapped).
"""

from openjudge.graders.openai._grader import OpenAIGrader as OpenAIGrader
from openjudge.graders.openai._grader import from_openai_grader as from_openai_grader
from openjudge.graders.openai._grader import read_grader_json as read_grader_json
from openjudge.graders.openai._importer import graders_in as graders_in
from openjudge.graders.openai._importer import job_config_yaml as job_config_yaml
from openjudge.graders.openai._spec import parse_grader as parse_grader

__all__ = [
    "OpenAIGrader",
    "from_openai_grader",
    "graders_in",
    "job_config_yaml",
    "parse_grader",
    "read_grader_json",
]
