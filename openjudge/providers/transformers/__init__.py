"""In-process judges and reward models on torch (``kind: transformers``).

Two faces, each over its own loaded-once model:

* :class:`TransformersChatModel`: a causal LM as a judge for the ``llm`` graders (a
  :class:`~openjudge.models.chat_client.ChatClient`), with batched generation, logprob
  scores and constrained JSON output (llguidance);
* :class:`TransformersRewardModel`: a ``*ForSequenceClassification`` reward model (a
  :class:`~openjudge.models.reward_model.RewardModel`) for
  :class:`~openjudge.graders.reward_model.RewardModelGrader` (``type: reward_model``).

Importing this package imports neither torch nor transformers; a model loads on its
first call (or ``load()``), on a worker thread, once per provider object. Install with
``pip install 'openjudge-graders[transformers]'`` after installing torch for your platform.

Layout: :mod:`._settings` (what to load), :mod:`._loading` (device, dtype, checkpoint),
:mod:`._batcher` (the dynamic batcher and its worker thread), :mod:`._local_model` (lazy
load + batcher), :mod:`._requests`, :mod:`._generation` / :mod:`._scoring` (the forward
passes), :mod:`._logprobs`, :mod:`._constraints` (llguidance); only :mod:`._transport`
(one attempt under the core's engine), :mod:`._chat` and :mod:`._reward` touch the core.
"""

from __future__ import annotations

from openjudge.errors import InferenceError as InferenceError
from openjudge.providers.transformers._chat import TransformersChatModel as TransformersChatModel
from openjudge.providers.transformers._chat import constraints_installed as constraints_installed
from openjudge.providers.transformers._reward import TransformersRewardModel as TransformersRewardModel
from openjudge.providers.transformers._settings import TransformersSettings as TransformersSettings

__all__ = [
    "InferenceError",
    "TransformersChatModel",
    "TransformersRewardModel",
    "TransformersSettings",
    "constraints_installed",
]
