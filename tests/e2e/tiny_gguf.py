"""Write a tiny random-weight llama GGUF (about 0.5 MB) so a real server can run with no download."""

from __future__ import annotations

from pathlib import Path

import numpy as np

N_EMBD, N_LAYER, N_HEAD, N_FF, N_CTX = 64, 2, 4, 128, 4096
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def _vocab() -> tuple[list[bytes], list[float], list[int]]:
    import gguf

    t = gguf.TokenType
    tokens = [b"<unk>", b"<s>", b"</s>"]
    types = [t.UNKNOWN, t.CONTROL, t.CONTROL]
    for byte in range(256):
        tokens.append(f"<0x{byte:02X}>".encode())
        types.append(t.BYTE)
    # "\u2581" alone, as every real SentencePiece vocabulary has it: without it a space
    # encodes as the three byte tokens of "\u2581", which llguidance cannot read as a space.
    pieces = [chr(c) for c in range(32, 127)] + [
        "\u2581" + w for w in ("", "score", "reason", "ok", "good", "the", "a")
    ]
    for piece in pieces:
        tokens.append(piece.encode("utf-8"))
        types.append(t.NORMAL)
    scores = [0.0, 0.0, 0.0] + [-float(i) for i in range(len(tokens) - 3)]
    return tokens, scores, [int(x) for x in types]


def write_tiny_gguf(path: Path, seed: int = 0) -> Path:
    import gguf

    rng = np.random.default_rng(seed)
    tokens, scores, types = _vocab()
    vocab = len(tokens)

    def weights(*shape: int) -> np.ndarray:  # (out, in), as convert_hf_to_gguf writes them
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(N_CTX)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_vocab_size(vocab)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_chat_template(CHAT_TEMPLATE)
    writer.add_tensor("token_embd.weight", weights(vocab, N_EMBD))
    writer.add_tensor("output_norm.weight", np.ones(N_EMBD, np.float32))
    writer.add_tensor("output.weight", weights(vocab, N_EMBD))
    for i in range(N_LAYER):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(N_EMBD, np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"blk.{i}.{name}.weight", weights(N_EMBD, N_EMBD))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(N_EMBD, np.float32))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", weights(N_FF, N_EMBD))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", weights(N_FF, N_EMBD))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", weights(N_EMBD, N_FF))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
