"""``text_similarity`` metrics, each from the library that defines it.

OpenAI names its metrics but not their settings. The metric set (``bleu``, ``gleu``,
``meteor``, ``rouge_1`` ... ``rouge_5``, ``rouge_l``) is exactly what NLTK's
``nltk.translate`` and Google's ``rouge-score`` provide, and the guide says
``fuzzy_match`` uses rapidfuzz; so each metric is that library's, with its defaults:

=============  ================================================================================
metric         computed as (tokens: ``text.split()`` unless the library tokenises itself)
=============  ================================================================================
fuzzy_match    ``rapidfuzz.fuzz.WRatio(input, reference, processor=utils.default_process) / 100``
               (the rapidfuzz scorer of the guide's own Python-grader example)
bleu           ``nltk.translate.bleu_score.sentence_bleu([ref], hyp)``: BLEU-4, uniform weights,
               no smoothing (a short text without a shared 4-gram scores ~0, as in NLTK)
gleu           ``nltk.translate.gleu_score.sentence_gleu([ref], hyp)`` (1- to 4-grams)
meteor         ``nltk.translate.meteor_score.meteor_score([ref], hyp)``: exact, Porter-stem and
               WordNet-synonym matches; without NLTK's WordNet data (``nltk.download("wordnet")``)
               the synonym stage matches nothing and ``metadata["meteor_synonyms"]`` is false
rouge_N, _l    ``rouge_score.rouge_scorer.RougeScorer(["rougeN"|"rougeL"]).score(ref, hyp).fmeasure``
               (its own tokeniser: lower-cased ASCII letters and digits, no stemming; text in
               other scripts has no tokens there and scores 0)
cosine         cosine similarity of two embeddings from an ``embedder`` you pass (openjudge has
               no embeddings provider in its config yet: the YAML refuses ``cosine``)
=============  ================================================================================

The libraries are the optional extra ``openai-graders`` (``pip install
'openjudge-graders[openai-graders]'``). Measured import cost on one core: rapidfuzz
0.1 s; NLTK's translate modules 0.7-0.9 s; rouge-score 1.0 s (it imports NLTK and
absl). Each is imported once, when the first grader that needs it is built.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeAlias

from openjudge.graders.openai._spec import SimilarityMetric

__all__ = ["EXTRA", "Embedder", "Metric", "cosine", "metric_for"]

EXTRA = "openai-graders"
Embedder: TypeAlias = Callable[[Sequence[str]], Awaitable[Sequence[Sequence[float]]]]
"""An async function from texts to their embedding vectors (one per text, in order)."""


def _require(module: str, package: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"this text_similarity metric needs {package}: pip install 'openjudge-graders[{EXTRA}]'"
        ) from exc


@dataclass(frozen=True, slots=True)
class Metric:
    """A synchronous metric: ``score(input, reference) -> (value in [0, 1], metadata)``."""

    name: SimilarityMetric
    score: Callable[[str, str], tuple[float, dict[str, Any]]]


class _NoSynonyms:
    """A WordNet stand-in with no synsets: METEOR then matches exact words and stems only."""

    def synsets(self, *_args: object, **_kwargs: object) -> list[object]:
        return []


def _wordnet() -> tuple[object, bool]:
    corpus = importlib.import_module("nltk.corpus")
    try:
        corpus.wordnet.ensure_loaded()
    except LookupError:
        return _NoSynonyms(), False
    return corpus.wordnet, True


def metric_for(name: SimilarityMetric) -> Metric:
    """The metric called ``name`` (importing its library now).

    Raises:
        ImportError: Its library is not installed (the message names the extra).
        ValueError: ``cosine``, which needs an embedder (see :func:`cosine`).
    """
    if name == "fuzzy_match":
        fuzz = _require("rapidfuzz.fuzz", "rapidfuzz")
        utils = _require("rapidfuzz.utils", "rapidfuzz")

        def fuzzy(hyp: str, ref: str) -> tuple[float, dict[str, Any]]:
            return float(fuzz.WRatio(hyp, ref, processor=utils.default_process)) / 100.0, {}

        return Metric(name, fuzzy)
    if name == "bleu":
        bleu = _require("nltk.translate.bleu_score", "nltk")

        def sentence_bleu(hyp: str, ref: str) -> tuple[float, dict[str, Any]]:
            import warnings

            with warnings.catch_warnings():  # NLTK warns on every zero n-gram overlap
                warnings.simplefilter("ignore")
                return float(bleu.sentence_bleu([ref.split()], hyp.split())), {}

        return Metric(name, sentence_bleu)
    if name == "gleu":
        gleu = _require("nltk.translate.gleu_score", "nltk")
        return Metric(name, lambda hyp, ref: (float(gleu.sentence_gleu([ref.split()], hyp.split())), {}))
    if name == "meteor":
        meteor = _require("nltk.translate.meteor_score", "nltk")
        wordnet, synonyms = _wordnet()

        def meteor_score(hyp: str, ref: str) -> tuple[float, dict[str, Any]]:
            value = meteor.meteor_score([ref.split()], hyp.split(), wordnet=wordnet)
            return float(value), {"meteor_synonyms": synonyms}

        return Metric(name, meteor_score)
    if name.startswith("rouge_"):
        rouge = _require("rouge_score.rouge_scorer", "rouge-score")
        kind = "rougeL" if name == "rouge_l" else f"rouge{name[-1]}"
        scorer = rouge.RougeScorer([kind])

        def rouge_score(hyp: str, ref: str) -> tuple[float, dict[str, Any]]:
            result = scorer.score(ref, hyp)[kind]
            return float(result.fmeasure), {"precision": result.precision, "recall": result.recall}

        return Metric(name, rouge_score)
    raise ValueError(
        "evaluation_metric 'cosine' compares embeddings and needs an embeddings model: openjudge has no "
        "embeddings provider yet, so pass embedder=<async texts -> vectors> to from_openai_grader(), or "
        "use fuzzy_match, bleu, gleu, meteor or rouge_* instead"
    )


async def cosine(embedder: Embedder, hyp: str, ref: str) -> float:
    """Cosine similarity of the two texts' embeddings, clipped to [0, 1] (0 when one is all zeros).

    Raises:
        ValueError: The embedder returned something other than two equal-length finite vectors.
    """
    vectors = await embedder([hyp, ref])
    if len(vectors) != 2:
        raise ValueError(f"the embedder returned {len(vectors)} vectors for 2 texts")
    a, b = (list(map(float, v)) for v in vectors)
    if len(a) != len(b) or not a or not all(math.isfinite(x) for x in (*a, *b)):
        raise ValueError("the embedder returned vectors of different lengths or non-finite values")
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    if norm == 0:
        return 0.0
    return min(1.0, max(0.0, sum(x * y for x, y in zip(a, b, strict=True)) / norm))
