"""The sandbox_fusion backend against a local stub of SandboxFusion's run_code API."""

from __future__ import annotations

import json

import pytest

from openjudge.graders.code import CodeExecutionGrader, FunctionCall, SandboxError, SandboxJob, SandboxLimits
from openjudge.graders.code._sandbox_fusion import SandboxFusionBackend, split_output
from openjudge.graders.code.harness.values import decode
from openjudge.results import GraderError, GraderScore

from .fusion_stub import fusion_stub

pytestmark = pytest.mark.anyio

CASES: list[dict[str, object]] = [
    {"test": "assert solve(123457) == 246914"},
    {"call": {"function": "solve", "args": [300007], "expected": 600014}},
    {"input": "500009", "output": "1000018"},
]
SOLUTION = "def solve(x):\n    return 2 * x\nimport sys\ndata = sys.stdin.read().strip()\nif data:\n    print(solve(int(data)))\n"


async def test_requests_follow_the_api_and_verdicts_stay_here() -> None:
    with fusion_stub() as stub:
        grader = CodeExecutionGrader(
            sandbox="sandbox_fusion", sandbox_url=stub.url, timeout_s=4, memory_mb=256
        )
        result = await grader.aevaluate(response=SOLUTION, test_cases=CASES)
        assert isinstance(result, GraderScore) and result.score == 1.0
        assert result.metadata["sandbox"] == "sandbox_fusion"
        request = stub.requests[0]
        assert {
            k: request[k] for k in ("language", "run_timeout", "memory_limit_MB", "files", "fetch_files")
        } == {
            "language": "python",
            "run_timeout": 4,
            "memory_limit_MB": 256,
            "files": {},
            "fetch_files": [],
        }
        sent = " ".join(str(r["code"]) + str(r["stdin"]) for r in stub.requests)
        assert not any(v in sent for v in ("246914", "600014", "1000018"))  # expected values stay here
        hack = "class A:\n    def __eq__(self, o): return True\ndef solve(x): return A()\nprint(1000018)\n"
        hacked = await grader.aevaluate(response=hack, test_cases=CASES[:2])
        assert isinstance(hacked, GraderScore) and hacked.score == 0.0


async def test_outcomes_map_from_the_response() -> None:
    with fusion_stub() as stub:
        backend = SandboxFusionBackend(stub.url)
        calls = (FunctionCall("f", ((1, 2),)),)
        ok = await backend.run(SandboxJob("def f(t): return {t}\nprint('out')", calls=calls), SandboxLimits())
        assert (ok.outcome, ok.stdout, ok.backend) == ("ok", "out\n", "sandbox_fusion")
        assert ok.calls[0] is not None and decode(ok.calls[0].value) == frozenset({(1, 2)})
        slow = await backend.run(SandboxJob("while True: pass"), SandboxLimits(timeout_s=1))
        assert slow.outcome == "timeout"
        crash = await backend.run(SandboxJob("1/0"), SandboxLimits())
        assert (crash.outcome, crash.error_type) == ("error", "ZeroDivisionError")
        await backend.aclose()


async def test_service_failures_are_errors_never_scores() -> None:
    with fusion_stub() as stub:
        grader = CodeExecutionGrader(sandbox=SandboxFusionBackend(stub.url, max_attempts=3, max_retry_s=10))
        stub.fail_next = [503, 502]
        recovered = await grader.aevaluate(response=SOLUTION, test_cases=CASES[:1])
        assert isinstance(recovered, GraderScore) and recovered.score == 1.0  # retried
        stub.fail_next = [503, 503, 503]
        gone = await grader.aevaluate(response=SOLUTION, test_cases=CASES[:1])
        assert isinstance(gone, GraderError) and gone.kind == "provider_error"
        assert "failed after 3 attempts" in gone.message
        stub.fail_next = [400]
        refused = await grader.aevaluate(response=SOLUTION, test_cases=CASES[:1])
        assert isinstance(refused, GraderError) and "HTTP 400" in refused.message
        stub.sandbox_error = True
        broken = await grader.aevaluate(response=SOLUTION, test_cases=CASES[:1])
        assert isinstance(broken, GraderError) and "injected sandbox error" in broken.message
    with pytest.raises(SandboxError, match="failed after 1 attempts"):
        await SandboxFusionBackend("http://127.0.0.1:9/run_code", max_attempts=1).run(
            SandboxJob("pass"), SandboxLimits()
        )


def test_report_lines_are_removed_from_the_output() -> None:
    marker = "@m@"
    started = json.dumps({"event": "started"})
    text = f"\n{marker}{started}\nab\n\n{marker}{{}}\ncd"
    assert split_output(text, marker) == ("ab\ncd", f"{started}\n{{}}".encode())
    assert split_output("plain\n", marker) == ("plain\n", b"")


def test_configuration_is_checked() -> None:
    with pytest.raises(ValueError, match="http"):
        SandboxFusionBackend("localhost:8080")
    with pytest.raises(ValueError, match="max_attempts"):
        SandboxFusionBackend("http://localhost:8080/run_code", max_attempts=0)
