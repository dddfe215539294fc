from __future__ import annotations

import subprocess
import sys

import pytest

import openjudge.integrations.verl.group as group

pytestmark = pytest.mark.slow  # fresh interpreters importing VERL


def test_public_names() -> None:
    assert group.__all__ == [
        "GraderGroupJudge",
        "GroupJudgingError",
        "GroupSettings",
        "GroupVerdict",
        "Member",
        "MemberDropped",
        "MemberReward",
        "OpenJudgeAgentLoopManager",
        "OpenJudgeAgentLoopWorker",
    ]
    assert group.OpenJudgeAgentLoopManager.__name__ == "OpenJudgeAgentLoopManager"
    assert group.OpenJudgeAgentLoopWorker.__module__ == "openjudge.integrations.verl.group._worker"
    assert group.GraderGroupJudge.__module__ == "openjudge.integrations.verl.group.judges"
    assert group.Member.__module__ == "openjudge.integrations.verl.group.members"
    assert group.MemberReward.__module__ == "openjudge.integrations.verl.group._verdict"
    assert group.GroupVerdict.__name__ == "GroupVerdict" and group.MemberDropped.__name__ == "MemberDropped"


def test_importing_the_package_does_not_import_verl() -> None:
    code = (
        "import sys, openjudge.integrations.verl.group; print('verl' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
