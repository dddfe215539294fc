"""Which local sandbox backends work on this machine, probed once per session."""

from __future__ import annotations

import anyio
import pytest

from openjudge.graders.code import sandbox_backend
from openjudge.graders.code._backends import works

LOCAL_BACKENDS = ("bwrap", "unshare", "process")
# The fast tier (scripts/test.sh --fast) runs each backend test on unshare alone: what
# ``auto`` picks when running as root; the full run covers every backend.
_ONLY_IN_FULL = pytest.mark.slow


def _backend_params(names: tuple[str, ...]) -> list[object]:
    return [name if name == "unshare" else pytest.param(name, marks=_ONLY_IN_FULL) for name in names]


@pytest.fixture(scope="session")
def backend_problems() -> dict[str, str | None]:
    """Each local backend's reason for not working here, or None when it works."""

    async def probe() -> dict[str, str | None]:
        return {name: await works(sandbox_backend(name)) for name in LOCAL_BACKENDS}  # type: ignore[arg-type]  # the literal names

    return anyio.run(probe)


@pytest.fixture(params=_backend_params(LOCAL_BACKENDS))
def backend_name(request: pytest.FixtureRequest, backend_problems: dict[str, str | None]) -> str:
    """Each local backend in turn, skipped where it cannot run (bwrap needs `apt-get install bubblewrap`)."""
    name = str(request.param)
    problem = backend_problems[name]
    if problem is not None:
        pytest.skip(f"the {name} backend does not work here: {problem}")
    return name


@pytest.fixture(params=_backend_params(("bwrap", "unshare")))
def namespaced_backend(request: pytest.FixtureRequest, backend_problems: dict[str, str | None]) -> str:
    """The backends that hide the machine (new namespaces), skipped where they cannot run."""
    name = str(request.param)
    problem = backend_problems[name]
    if problem is not None:
        pytest.skip(f"the {name} backend does not work here: {problem}")
    return name
