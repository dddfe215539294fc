"""A warm fork server for the local backends: the interpreter and the harness start once, each run forks.

Started by the grader as ``python -I -S -c "...; from harness.zygote import serve; serve(IDLE_S)"
CONTROL_FD GRADER_PID``. It imports everything a run needs (the harness, ``json`` for the
verifier, ``traceback`` for errors), then waits on the control socket. Each request is a
run's ``config`` (as :func:`harness.main.start` reads it) with its descriptors passed
alongside: a status socket, then standard input, output and error, the job pipe, the
result pipe and, for a verifier, the test and verdict pipes. For each request it forks; the
child puts those descriptors at 0, 1, 2, 3, ... and closes every other one, takes the
run's environment and session, and becomes the sandbox child exactly as a freshly started
interpreter would (:func:`harness.main.start`): it enters its namespaces, confines itself
and runs the solution there. The server itself never runs code it was sent, never reads a
job, a test or a verdict (they travel on pipes between the grader and the child), and is
non-dumpable, so no process of its user can read or change its memory.

On the status socket it says ``P<pid>`` once the child exists (or ``E<why>``), and
``X<code>`` when the child has ended (its exit status, or minus the signal that killed
it). It kills the child's whole process group before it reaps the child, so nothing of a
run outlives it (and, as the child subreaper, reaps whatever a run left orphaned); ``K`` from the grader (a timeout, a cancellation, an output overflow) or
the grader closing its end kills the group at once. When the control socket closes or the
grader dies, the server kills every run and exits; it also exits after ``IDLE_S`` seconds
without a run (the grader then starts a new one).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import gc
import json  # noqa: F401  # warmed here: each verifier imports it
import marshal
import os
import select
import signal
import socket
import sys
import traceback  # noqa: F401  # warmed here: a failing solution's traceback imports it

from . import confine, guards, main, namespaces, values, verifier  # noqa: F401  # warmed for every run

__all__ = ["FIRST_RUN_FD", "serve"]

FIRST_RUN_FD = 3  # the job pipe; then the result pipe, the test pipe and the verdict pipe
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_MAX_REQUEST = 1 << 20
_MAX_FDS = 8


def serve(idle_s: float) -> None:
    """Serve fork requests until the control socket closes (see the module docstring); never returns."""
    control = socket.socket(fileno=int(sys.argv[1]))
    grader = int(sys.argv[2])
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != grader:
        os._exit(main.EXIT_SETUP)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        os._exit(main.EXIT_SETUP)
    # A run's processes that outlive their parent come here, not to the machine's init (which,
    # in a container, may never reap them): the unshare backend's holder does, by design.
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    gc.freeze()  # what is imported stays untouched by the collector, so forks share its pages
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda number, frame: None)  # the wake-up byte is what counts
    _Server(control, wake_r, int(idle_s * 1000)).loop()


class _Server:
    def __init__(self, control: socket.socket, wake: int, idle_ms: int) -> None:
        self.control = control
        self.idle_ms = idle_ms
        self.wake = wake
        self.poller = select.poll()
        self.poller.register(control.fileno(), select.POLLIN)
        self.poller.register(wake, select.POLLIN)
        self.status: dict[int, int] = {}  # child pid -> its status socket
        self.owner: dict[int, int] = {}  # status socket -> child pid, while the grader may write to it

    def loop(self) -> None:
        while True:
            try:
                ready = self.poller.poll(None if self.status else self.idle_ms)
            except InterruptedError:
                continue
            if not ready and not self.status:  # idle: a request sent from now on finds the socket closed
                os._exit(0)
            for fd, _ in ready:
                if fd == self.wake:
                    self._drain_wake()
                    self._reap()
                elif fd == self.control.fileno():
                    self._request()
                elif fd in self.owner:
                    self._grader_says(fd)

    def _drain_wake(self) -> None:
        try:
            while os.read(self.wake, 4096):
                pass
        except BlockingIOError:
            pass

    def _request(self) -> None:
        try:
            data, fds, _, _ = socket.recv_fds(self.control, _MAX_REQUEST, _MAX_FDS)
        except InterruptedError:
            return
        except OSError:
            data, fds = b"", []
        if not data:  # the grader closed the control socket (or is gone): end every run, then exit
            self._shutdown()
        if len(fds) < 6:  # a status socket and at least five pipes: anything else is not a request
            for fd in fds:
                os.close(fd)
            return
        status_fd, run_fds = fds[0], fds[1:]
        try:
            pid = self._fork(data, run_fds)
        except OSError as exc:
            _send(status_fd, f"E{exc}".encode(errors="replace"))
            os.close(status_fd)
            return
        finally:
            for fd in run_fds:
                os.close(fd)
        self.status[pid] = status_fd
        self.owner[status_fd] = pid
        self.poller.register(status_fd, select.POLLIN)
        _send(status_fd, b"P%d" % pid)

    def _fork(self, config_bytes: bytes, run_fds: list[int]) -> int:
        me = os.getpid()
        pid = os.fork()
        if pid == 0:
            _become_run(me, config_bytes, run_fds)  # never returns
        return pid

    def _grader_says(self, fd: int) -> None:
        """``K`` (kill the run) or the end of the socket (the grader gave up on the run): kill it."""
        with contextlib.suppress(OSError):
            os.read(fd, 16)
        pid = self.owner.pop(fd)
        self.poller.unregister(fd)
        _kill(pid)

    def _reap(self) -> None:
        while True:
            try:
                found = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            except InterruptedError:
                continue
            if found is None:
                return
            pid = found.si_pid
            fd = self.status.pop(pid, None)
            if fd is not None:
                _kill(pid)  # the group, while the ended child still holds its number
            _, status = os.waitpid(pid, 0)
            if fd is None:  # an orphan of a run, handed to this subreaper: reaped, nothing to tell
                continue
            if self.owner.pop(fd, None) is not None:
                self.poller.unregister(fd)
            _send(fd, b"X%d" % os.waitstatus_to_exitcode(status))
            os.close(fd)

    def _shutdown(self) -> None:
        for pid in list(self.status):
            _kill(pid)
        while self.status:
            try:
                pid, _ = os.wait()
            except ChildProcessError:
                break
            except InterruptedError:
                continue
            self.status.pop(pid, None)
        os._exit(0)


def _kill(pid: int) -> None:
    """SIGKILL a child of this server and its process group (only ever called before it is reaped)."""
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(OSError):  # no such group (yet), or already gone
            kill(pid, signal.SIGKILL)


def _send(fd: int, message: bytes) -> None:
    with contextlib.suppress(OSError):  # the grader stopped listening: nothing to tell
        os.write(fd, message)


def _become_run(zygote: int, config_bytes: bytes, run_fds: list[int]) -> None:
    """In the forked child: this run's descriptors, session and environment, then the harness."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()  # its own process group, which the server kills when it ends
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 256) for fd in run_fds]
        for target, fd in enumerate(high):
            os.dup2(fd, target)
        os.closerange(len(high), 1 << 20)  # the server's sockets and every other run's: gone
        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # as a freshly started interpreter is
        config = marshal.loads(config_bytes)  # written by the grader: trusted
        if "parent_pid" in config:
            config["parent_pid"] = zygote
        env = config.pop("env")
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {})
        os.chdir(str(config.pop("cwd", "/")))
    except BaseException as exc:
        main.fail_setup(exc)
    main.start(config)
