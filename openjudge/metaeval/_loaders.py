"""Read labelled items from JSON Lines, JSON arrays or CSV, in our formats or common benchmarks'.

Formats (``format=`` / ``--format``; ``auto`` picks one from the first record's fields):

==================  ==========================================================================
``pairwise``        ``prompt`` (or ``query``), ``response_a``, ``response_b``, ``label``
                    (``A``, ``B`` or ``tie``, any case); optional ``reference`` and ``id``.
``pointwise``       ``prompt`` (or ``query``), ``response``, ``label`` (a number on the
                    grader's raw scale); optional ``reference`` and ``id``.
``judgebench``      JudgeBench: ``question``, ``response_A``, ``response_B``, ``label``
                    (``A>B``, ``B>A``; ``A=B`` is read as a tie); id ``pair_id``.
``llmbar``          LLMBar ``dataset.json``: ``input``, ``output_1``, ``output_2``,
                    ``label`` (1 or 2).
``pandalm``         PandaLM ``testset-v1.json``: ``instruction``, ``input`` (appended to
                    the prompt after a blank line when it is text), ``response1``,
                    ``response2``, ``annotator1..3`` (0 tie, 1, 2). The label is the
                    majority; three different votes take ``annotator1``'s, as PandaLM's own
                    ``compute_metrics.py`` does. Id ``idx``.
``mtbench-human``   MT-Bench human judgements (``lmsys/mt_bench_human_judgments``, split
                    ``human``, saved as JSON Lines): ``conversation_a``, ``conversation_b``,
                    ``winner`` (``model_a``, ``model_b``, ``tie``, ``tie (bothbad)``),
                    ``turn``. The prompt is the user message of that turn and the responses
                    are the two assistants' replies to it; for turn 2 the first exchange of
                    each conversation is in the extra fields ``context_a`` and
                    ``context_b`` (``User: ...`` / ``Assistant: ...``). Each vote is one
                    item, so a pair voted on by three experts is judged three times.
==================  ==========================================================================

Fields a format does not use are kept as the item's ``extra`` and reach graders with the
sample. Nothing is fetched: download the benchmark files yourself. Without an id field an
item's id is a hash of its content (see :func:`openjudge.jobs._datasets.iter_samples`).

A record that cannot be used is an error naming the file, line and field; with
``skip_bad=True`` such records are left out and listed in ``skipped`` instead.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal, TypeAlias, get_args

from pydantic import JsonValue

from openjudge.errors import LabelledDataError
from openjudge.jobs._datasets import BadRecord, iter_samples
from openjudge.metaeval._items import LabelledSet, PairItem, PairLabel, PairwiseSet, PointItem, PointwiseSet

__all__ = [
    "FORMATS",
    "RECORDED_FORMATS",
    "LabelledDataError",
    "LabelledFormat",
    "RecordProblem",
    "RecordedFormat",
    "id_field",
    "load_labelled",
    "read_item",
]

LabelledFormat: TypeAlias = Literal[
    "auto", "pairwise", "pointwise", "judgebench", "llmbar", "pandalm", "mtbench-human"
]
FORMATS: tuple[str, ...] = get_args(LabelledFormat)

RecordedFormat: TypeAlias = Literal["auto", "judgebench", "llmbar", "judgements", "results"]
"""Files of judgements already made (read by :func:`openjudge.metaeval.load_recorded`)."""
RECORDED_FORMATS: tuple[str, ...] = get_args(RecordedFormat)


class RecordProblem(Exception):
    """One field of one record is unusable (the message starts with the field)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")


def _text(record: Mapping[str, JsonValue], field: str, *, optional: bool = False) -> str | None:
    value = record.get(field)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        if optional:
            return None
        raise RecordProblem(field, "missing (a string is required)")
    if not isinstance(value, str):
        raise RecordProblem(field, f"expected a string, got {type(value).__name__}")
    return value


def _required(record: Mapping[str, JsonValue], field: str) -> str:
    value = _text(record, field)
    assert value is not None
    return value


def _extra(record: Mapping[str, JsonValue], used: set[str]) -> dict[str, JsonValue]:
    return {k: v for k, v in record.items() if k not in used}


def _prompt(record: Mapping[str, JsonValue]) -> tuple[str, str]:
    if "prompt" in record or "query" not in record:
        return _required(record, "prompt"), "prompt"
    return _required(record, "query"), "query"


_LABELS: dict[str, PairLabel] = {"a": "A", "b": "B", "tie": "tie"}


def _native_pair(record: Mapping[str, JsonValue], id_: str, line: int) -> PairItem:
    prompt, prompt_field = _prompt(record)
    raw = record.get("label")
    label = _LABELS.get(raw.strip().lower()) if isinstance(raw, str) else None
    if label is None:
        raise RecordProblem("label", f"expected 'A', 'B' or 'tie' (got {raw!r})")
    used = {prompt_field, "response_a", "response_b", "label", "reference", "id"}
    return PairItem(
        id=id_,
        line=line,
        prompt=prompt,
        response_a=_required(record, "response_a"),
        response_b=_required(record, "response_b"),
        label=label,
        reference=_text(record, "reference", optional=True),
        extra=_extra(record, used),
    )


def _native_point(record: Mapping[str, JsonValue], id_: str, line: int) -> PointItem:
    prompt, prompt_field = _prompt(record)
    raw = record.get("label")
    if isinstance(raw, str):  # CSV cells are text
        try:
            raw = float(raw)
        except ValueError:
            raise RecordProblem("label", f"expected a number (got {raw!r})") from None
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise RecordProblem("label", f"expected a finite number (got {raw!r})")
    used = {prompt_field, "response", "label", "reference", "id"}
    return PointItem(
        id=id_,
        line=line,
        prompt=prompt,
        response=_required(record, "response"),
        label=float(raw),
        reference=_text(record, "reference", optional=True),
        extra=_extra(record, used),
    )


_JUDGEBENCH: dict[str, PairLabel] = {"A>B": "A", "B>A": "B", "A=B": "tie"}


def _judgebench(record: Mapping[str, JsonValue], id_: str, line: int) -> PairItem:
    raw = record.get("label")
    label = _JUDGEBENCH.get(raw.strip()) if isinstance(raw, str) else None
    if label is None:
        raise RecordProblem("label", f"expected 'A>B', 'B>A' or 'A=B' (got {raw!r})")
    return PairItem(
        id=id_,
        line=line,
        prompt=_required(record, "question"),
        response_a=_required(record, "response_A"),
        response_b=_required(record, "response_B"),
        label=label,
        extra=_extra(record, {"question", "response_A", "response_B", "label", "pair_id"}),
    )


def _number_label(record: Mapping[str, JsonValue], field: str, table: Mapping[int, PairLabel]) -> PairLabel:
    raw = record.get(field)
    if isinstance(raw, str) and raw.strip().isdigit():  # CSV
        raw = int(raw)
    if isinstance(raw, bool) or not isinstance(raw, int) or raw not in table:
        allowed = ", ".join(str(k) for k in table)
        raise RecordProblem(field, f"expected one of {allowed} (got {raw!r})")
    return table[raw]


def _llmbar(record: Mapping[str, JsonValue], id_: str, line: int) -> PairItem:
    return PairItem(
        id=id_,
        line=line,
        prompt=_required(record, "input"),
        response_a=_required(record, "output_1"),
        response_b=_required(record, "output_2"),
        label=_number_label(record, "label", {1: "A", 2: "B"}),
        extra=_extra(record, {"input", "output_1", "output_2", "label"}),
    )


_PANDALM: dict[int, PairLabel] = {0: "tie", 1: "A", 2: "B"}


def _pandalm(record: Mapping[str, JsonValue], id_: str, line: int) -> PairItem:
    votes = [_number_label(record, f"annotator{k}", _PANDALM) for k in (1, 2, 3)]
    label, count = Counter(votes).most_common(1)[0]
    if count == 1:
        label = votes[0]
    instruction = _required(record, "instruction")
    context = _text(record, "input", optional=True)
    prompt = f"{instruction}\n\n{context}" if context and context.strip() else instruction
    used = {"instruction", "input", "response1", "response2", "annotator1", "annotator2", "annotator3", "idx"}
    return PairItem(
        id=id_,
        line=line,
        prompt=prompt,
        response_a=_required(record, "response1"),
        response_b=_required(record, "response2"),
        label=label,
        extra=_extra(record, used),
    )


_MTBENCH: dict[str, PairLabel] = {"model_a": "A", "model_b": "B", "tie": "tie", "tie (bothbad)": "tie"}


def _turns(record: Mapping[str, JsonValue], field: str, turn: int) -> tuple[str, str, str]:
    """The turn's user message and assistant reply, and the earlier exchanges as a transcript."""
    conversation = record.get(field)
    if not isinstance(conversation, list):
        raise RecordProblem(field, "expected a list of {role, content} messages")
    texts: list[tuple[str, str]] = []
    for i, message in enumerate(conversation):
        role = message.get("role") if isinstance(message, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(role, str) or not isinstance(content, str):
            raise RecordProblem(f"{field}[{i}]", "expected an object with string 'role' and 'content'")
        texts.append((role, content))
    user_at = 2 * (turn - 1)
    if len(texts) < user_at + 2 or texts[user_at][0] != "user" or texts[user_at + 1][0] != "assistant":
        raise RecordProblem(
            field, f"turn {turn} needs a user message at {user_at} and the assistant's reply after it"
        )
    history = "\n\n".join(
        f"{'User' if role == 'user' else 'Assistant'}: {content}" for role, content in texts[:user_at]
    )
    return texts[user_at][1], texts[user_at + 1][1], history


def _mtbench(record: Mapping[str, JsonValue], id_: str, line: int) -> PairItem:
    raw = record.get("winner")
    label = _MTBENCH.get(raw) if isinstance(raw, str) else None
    if label is None:
        raise RecordProblem("winner", f"expected one of {', '.join(_MTBENCH)} (got {raw!r})")
    turn = record.get("turn", 1)
    if isinstance(turn, str) and turn.isdigit():
        turn = int(turn)
    if isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
        raise RecordProblem("turn", f"expected a turn number from 1 (got {turn!r})")
    prompt, reply_a, history_a = _turns(record, "conversation_a", turn)
    _, reply_b, history_b = _turns(record, "conversation_b", turn)
    extra = _extra(record, {"conversation_a", "conversation_b", "winner"})
    if turn > 1:
        extra["context_a"] = history_a
        extra["context_b"] = history_b
    return PairItem(
        id=id_, line=line, prompt=prompt, response_a=reply_a, response_b=reply_b, label=label, extra=extra
    )


_Reader: TypeAlias = Callable[[Mapping[str, JsonValue], str, int], PairItem | PointItem]

# Format -> (reader, field holding the id or None for content ids, fields that identify it).
_READERS: dict[str, tuple[_Reader, str | None, frozenset[str]]] = {
    "pairwise": (_native_pair, "id", frozenset({"response_a", "response_b", "label"})),
    "pointwise": (_native_point, "id", frozenset({"response", "label"})),
    "judgebench": (_judgebench, "pair_id", frozenset({"question", "response_A", "response_B", "label"})),
    "llmbar": (_llmbar, None, frozenset({"input", "output_1", "output_2", "label"})),
    "pandalm": (_pandalm, "idx", frozenset({"instruction", "response1", "response2", "annotator1"})),
    "mtbench-human": (_mtbench, None, frozenset({"conversation_a", "conversation_b", "winner"})),
}


def read_item(kind: str, record: Mapping[str, JsonValue], id_: str, line: int) -> PairItem | PointItem:
    """One record of a labelled format (not ``auto``) as an item.

    Raises:
        RecordProblem: A field is missing or unusable.
    """
    return _READERS[kind][0](record, id_, line)


def id_field(kind: str) -> str | None:
    """The field a format keeps its ids in (``None``: ids are content hashes)."""
    return _READERS[kind][1]


def _detect(record: Mapping[str, JsonValue], path: Path, line: int) -> str:
    for name, (_, _, fields) in _READERS.items():
        if fields <= record.keys():
            return name
    known = "; ".join(f"{name}: {', '.join(sorted(fields))}" for name, (_, _, fields) in _READERS.items())
    raise LabelledDataError(
        [
            f"{path}:{line}: cannot tell the format from the fields {sorted(record)}; "
            f"pass --format (formats and the fields they need: {known})"
        ],
        path=path,
    )


def _detect_file(path: Path) -> str:
    for record in iter_samples(path, on_error="skip", id_key=None):
        if not isinstance(record, BadRecord):
            return _detect(record.data, path, record.line)
    raise LabelledDataError([f"{path}: no usable records"], path=path)


def load_labelled(
    path: str | Path,
    *,
    format: LabelledFormat = "auto",
    skip_bad: bool = False,
    limit: int | None = None,
) -> LabelledSet:
    """Read a labelled file (see the module docstring for the formats).

    Args:
        path: A JSON Lines, JSON array or CSV file.
        format: The format, or ``"auto"`` to tell it from the first record.
        skip_bad: Leave out unusable records (listed in ``skipped``) instead of failing.
        limit: Read at most this many items.

    Raises:
        LabelledDataError: The file cannot be read, its format told, or a record used
            (without ``skip_bad``); the message names file, line and field.
    """
    p = Path(path)
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    kind = _detect_file(p) if format == "auto" else format
    problems: list[str] = []
    pairs: list[PairItem] = []
    points: list[PointItem] = []
    records = iter_samples(p, on_error="skip", id_key=_READERS[kind][1])
    reader = _READERS[kind][0]
    for record in records:
        if isinstance(record, BadRecord):
            problems.append(f"{p}: {record.message}")
            continue
        try:
            item = reader(record.data, record.id, record.line)
        except RecordProblem as exc:
            problems.append(f"{p}:{record.line}: {exc}")
            continue
        if isinstance(item, PairItem):
            pairs.append(item)
        else:
            points.append(item)
        if limit is not None and len(pairs) + len(points) >= limit:
            break
    if problems and not skip_bad:
        raise LabelledDataError(problems, path=p)
    if not pairs and not points:
        raise LabelledDataError(
            [f"{p}: no usable records", *problems[: LabelledDataError.shown_problems]], path=p
        )
    if kind == "pointwise":
        return PointwiseSet(tuple(points), source=str(p), format=kind, skipped=tuple(problems))
    return PairwiseSet(tuple(pairs), source=str(p), format=kind, skipped=tuple(problems))
