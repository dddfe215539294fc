"""Choosing a sandbox backend by name, and ``auto``: the strongest one that works on this machine."""

from __future__ import annotations

import logging
import shutil

from openjudge.graders.code._local import LocalBackend, ProcessBackend
from openjudge.graders.code._namespaced import BwrapBackend, UnshareBackend
from openjudge.graders.code._sandbox import (
    BackendName,
    SandboxBackend,
    SandboxError,
    SandboxJob,
    SandboxLimits,
    SandboxRun,
)

__all__ = ["AutoBackend", "sandbox_backend"]

logger = logging.getLogger(__name__)

_PROBE = SandboxJob(code="print(6 * 7)")
_PROBE_LIMITS = SandboxLimits(timeout_s=30.0)


async def works(backend: SandboxBackend) -> str | None:
    """None if ``backend`` runs a trivial program correctly here, else why not."""
    try:
        run = await backend.run(_PROBE, _PROBE_LIMITS)
    except SandboxError as exc:
        return str(exc)
    if run.outcome != "ok" or run.stdout != "42\n":
        return f"the probe program ended with {run.outcome} ({run.error_type or run.stderr[-200:]})"
    return None


class AutoBackend:
    """The first of ``unshare``, ``bwrap`` and ``process`` whose probe run succeeds here.

    ``unshare`` comes first: its runs are forked by a warm fork server (no interpreter
    start per run), and its isolation is bubblewrap's (the same namespaces and file-system
    view; seccomp refuses new namespaces as ``--disable-userns`` does), or stronger when
    the grader runs as root, where bubblewrap keeps the sandbox user mapped to root outside
    (``RLIMIT_NPROC`` does not bind, root's own files stay readable to it) and ``unshare``
    makes it the host's ``nobody``. ``bwrap`` serves where user namespaces are open only to
    programs allowed them (bubblewrap's AppArmor profile on Ubuntu 24.04). The choice is
    made on first use and kept; falling back to ``process`` is logged as a warning, because
    that backend does not hide the machine from the code.
    """

    name = "auto"

    def __init__(self, *, work_root: str | None = None) -> None:
        self.work_root = work_root
        self._chosen: SandboxBackend | None = None

    async def choose(self) -> SandboxBackend:
        """The backend ``auto`` stands for here (probing on the first call)."""
        if self._chosen is not None:
            return self._chosen
        candidates: list[LocalBackend] = [UnshareBackend(work_root=self.work_root)]
        if shutil.which("bwrap"):
            candidates.append(BwrapBackend(work_root=self.work_root))
        for candidate in candidates:
            problem = await works(candidate)
            if problem is None:
                logger.info("code sandbox: using the %s backend", candidate.name)
                self._chosen = candidate
                return candidate
            logger.info("code sandbox: the %s backend does not work here: %s", candidate.name, problem)
        logger.warning(
            "code sandbox: no namespace backend works here (install bubblewrap or allow user namespaces); "
            "falling back to the 'process' backend, which does not hide the file system from the code"
        )
        self._chosen = ProcessBackend(work_root=self.work_root)
        return self._chosen

    async def run(self, job: SandboxJob, limits: SandboxLimits) -> SandboxRun:
        return await (await self.choose()).run(job, limits)


def sandbox_backend(
    name: BackendName, *, url: str | None = None, work_root: str | None = None
) -> SandboxBackend:
    """The backend called ``name``.

    Args:
        name: ``auto``, ``bwrap``, ``unshare``, ``process`` or ``sandbox_fusion``.
        url: The ``run_code`` endpoint of a SandboxFusion service (``sandbox_fusion`` only).
        work_root: Where local backends create temporary directories.

    Raises:
        ValueError: An unknown name, or ``sandbox_fusion`` without ``url`` (or ``url`` for a local backend).
    """
    if name == "sandbox_fusion":
        if not url:
            raise ValueError(
                "sandbox 'sandbox_fusion' needs sandbox_url, e.g. http://localhost:8080/run_code"
            )
        from openjudge.graders.code._sandbox_fusion import SandboxFusionBackend

        return SandboxFusionBackend(url)
    if url:
        raise ValueError(f"sandbox_url is only used with sandbox='sandbox_fusion', not {name!r}")
    if name == "auto":
        return AutoBackend(work_root=work_root)
    if name == "bwrap":
        return BwrapBackend(work_root=work_root)
    if name == "unshare":
        return UnshareBackend(work_root=work_root)
    if name == "process":
        return ProcessBackend(work_root=work_root)
    raise ValueError(f"unknown sandbox {name!r}; choose one of auto, bwrap, unshare, process, sandbox_fusion")
