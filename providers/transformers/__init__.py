"""In-process judges and reward models on torch (``kind: transformers``).

Two faces over one engine:

* :class:`TransformersChatModel`: a causal LM as a judge for the ``llm`` graders, with
  batched generation, logprob scores and constrained JSON output (llguidance);
* :class:`TransformersRewardModel`: a ``*ForSequenceClassification`` reward model for
  :class:`~providers.vllm_reward.RewardModelGrader` (``type: reward_model``).

Importing this package imports neither torch nor transformers; a model loads on its
first call (or ``load()``), on a worker thread, once per provider object. Install with
``pip install 'openjudge[transformers]'`` after installing torch for your platform.

Layout: :mod:`.settings` (what to load), :mod:`.loading` (device, dtype, checkpoint),
:mod:`.batcher` (the dynamic batcher and its worker thread), :mod:`.engine` (lazy load +
batcher), :mod:`.generation` / :mod:`.scoring` (the forward passes), :mod:`.logprobs`,
:mod:`.constraints` (llguidance), and the two chat-core adapters :mod:`.chat`, :mod:`.reward`.
"""

from __future__ import annotations

import importlib.util

from providers.transformers.chat import TransformersChatModel as TransformersChatModel
from providers.transformers.errors import InferenceError as InferenceError
from providers.transformers.reward import TransformersRewardModel as TransformersRewardModel
from providers.transformers.settings import TransformersSettings as TransformersSettings

__all__ = [
    "InferenceError",
    "TransformersChatModel",
    "TransformersRewardModel",
    "TransformersSettings",
    "constraints_installed",
]


def constraints_installed() -> bool:
    """Whether llguidance (constrained decoding, part of the ``transformers`` extra) is installed."""
    return importlib.util.find_spec("llguidance") is not None
