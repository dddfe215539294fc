"""Test helpers: a graders YAML against the local judge server, and a GRPOTrainer on a tiny model.

Nothing is downloaded: the model is a one-layer Llama built from a config and the
tokenizer a whitespace word-level one built with ``tokenizers``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from datasets import Dataset  # type: ignore[import-untyped]  # no py.typed
from tokenizers import Tokenizer, models, pre_tokenizers  # type: ignore[import-untyped]  # no py.typed
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl.trainer.grpo_config import GRPOConfig
from trl.trainer.grpo_trainer import GRPOTrainer

PAD, UNK, EOS = "[PAD]", "[UNK]", "[EOS]"
WORDS = ["what", "is", "2+2", "?", "the", "answer", "4", "5"]

GRADERS_YAML = """\
version: 1
providers:
  judge:
    kind: openai
    model: openjudge-test-judge
    base_url: {base_url}
    api_key: sk-test
    timeout_s: 5
    max_retries: 0
    limits: {{max_concurrency: {provider_limit}}}
graders:
  correct:
    type: string_match
    params: {{match_mode: contains}}
    mapper: {{response: response, reference: answer}}
  helpful:
    type: llm
    provider: judge
    params:
      template: "Question: {{question}}\\nAnswer: {{answer}}\\nHow helpful is the answer? Score 1 to 5."
      score_range: [1, 5]
    mapper: {{question: prompt, answer: response}}
aggregators:
  - type: weighted_mean
    name: reward
    weights: {{correct: 2, helpful: 1}}
runner: {{max_concurrency: {runner_limit}, timeout_s: 10}}
cache: {{enabled: false}}
"""


def write_graders_yaml(
    directory: Path, base_url: str, *, provider_limit: int = 64, runner_limit: int = 32
) -> Path:
    """A rule grader ``correct`` (the ``answer`` column in the response), an HTTP judge
    ``helpful`` (1 to 5), and ``reward`` = (2 x correct + helpful) / 3 on normalised scores."""
    path = directory / "graders.yaml"
    path.write_text(
        GRADERS_YAML.format(base_url=base_url, provider_limit=provider_limit, runner_limit=runner_limit),
        encoding="utf-8",
    )
    return path


def make_tokenizer(words: Sequence[str] = WORDS) -> PreTrainedTokenizerFast:
    """A whitespace word-level tokenizer over ``words`` with a minimal chat template."""
    vocab: dict[str, int] = {PAD: 0, UNK: 1, EOS: 2}
    for w in words:
        vocab.setdefault(w, len(vocab))
    model = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    model.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]  # transformers 5 leaves it unannotated
        tokenizer_object=model,
        pad_token=PAD,
        unk_token=UNK,
        eos_token=EOS,
        model_input_names=["input_ids", "attention_mask"],  # Llama takes no token_type_ids (transformers 4)
    )
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    return tokenizer


def make_trainer(
    output_dir: Path,
    reward_funcs: Sequence[Callable[..., object]],
    dataset: Dataset,
    *,
    num_generations: int = 2,
    batch_size: int = 4,
    max_completion_length: int = 4,
    reward_weights: Sequence[float] | None = None,
) -> GRPOTrainer:
    """A real GRPOTrainer on CPU over a one-layer Llama with a few thousand parameters."""
    tokenizer = make_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer.get_vocab()),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    args = GRPOConfig(
        output_dir=str(output_dir),
        per_device_train_batch_size=batch_size,
        num_generations=num_generations,
        max_completion_length=max_completion_length,
        use_cpu=True,
        bf16=False,
        report_to=[],
        logging_steps=1,
        max_steps=1,
        save_strategy="no",
        reward_weights=list(reward_weights) if reward_weights is not None else None,
    )
    return GRPOTrainer(
        model=LlamaForCausalLM(config),  # type: ignore[no-untyped-call]  # transformers 5 leaves it unannotated
        reward_funcs=list(reward_funcs),  # type: ignore[arg-type]  # TRL's hint omits the async functions it awaits
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
