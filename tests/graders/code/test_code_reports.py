"""Reading a sandbox child's report: only what a run can say, in linear time."""

from __future__ import annotations

import json

from openjudge.graders.code._reports import parse_report

P61 = 2**61 - 1


def _report(*records: dict[str, object]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in ({"event": "started"}, *records))


def test_call_indices_a_run_cannot_have_are_ignored() -> None:
    """Huge or negative indices (whose hashes a forged report can make collide) are not kept."""
    forged = [{"event": "call", "index": k * P61, "ok": True, "value": 1} for k in range(1, 5_000)]
    report = parse_report(_report(*forged, {"event": "call", "index": -1, "ok": True, "value": 1}))
    assert report.calls == {}
    kept = parse_report(_report({"event": "call", "index": 2, "ok": True, "value": 7}))
    assert kept.calls[2].ok is True and kept.calls[2].value == 7


def test_the_first_report_of_a_call_counts() -> None:
    report = parse_report(
        _report(
            {"event": "call", "index": 0, "ok": True, "value": 1},
            {"event": "call", "index": 0, "ok": True, "value": 2},
        )
    )
    assert report.calls[0].value == 1
