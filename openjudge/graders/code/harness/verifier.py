"""Assert-style tests decided in a process the solution never ran in: the *verifier*.

Before any solution code runs, the harness forks. The parent becomes the verifier: it
makes itself non-dumpable (no other process of its user can read its memory or open its
file descriptors through ``/proc``), confines itself like the solution, reads the test
code from a pipe the solution's process never held, and runs it with each function the
test names and the solution defines replaced by a *proxy*. The child becomes the
solution's process: it runs the solution, then serves the proxies' calls.

A proxy call sends the arguments as plain data (:mod:`.values`) to the solution's
process, which calls its function on fresh copies and sends back the return value as
plain data (or the exception's type name), plus the new contents of list, dict and set
arguments (the function may change them in place, as the test can observe). The
verifier decodes the reply into fresh built-in values, so every comparison, every
``assert`` and the test's own helpers run on objects the solution never touched. The
verdict goes to the grader on its own pipe, with a token from the test pipe, and counts
only when the test ran to the end. A verifier that fails before the test runs (its
confinement, or a test that does not compile) says so: that is the system's failure,
never the solution's.

What the solution can still do: return wrong values (it fails), exit or kill its
process group (the verifier sees the end of the channel, or dies: no verdict, so the
test fails), or hang (the time limit). It cannot see the expected values, the test's
code or the verdict pipe.

Standard library only; ``json`` is imported in the verifier alone, to read the
solution's replies with a parser that builds nothing but plain data.
"""

from __future__ import annotations

import builtins
import ctypes
import marshal
import os
import sys

from . import values

TYPE_CHECKING = False  # typing costs start-up time in the sandbox; mypy reads this name as True
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import CodeType
    from typing import NoReturn

__all__ = ["MAX_REPLY_BYTES", "Channel", "free_names", "split"]

MAX_REPLY_BYTES = 32 * 1024 * 1024
_PR_SET_DUMPABLE = 4
_PR_SET_PDEATHSIG = 1
_SIGKILL = 9
_MAX_NAMES = 10_000
_HEADER = 8
_EXITS = ("SystemExit", "KeyboardInterrupt", "GeneratorExit")


class SolutionGone(BaseException):
    """The solution's process stopped answering (it exited, crashed or broke the channel).

    A ``BaseException``, so that no ``except Exception`` in a test can swallow it.
    """


class SolutionExit(BaseException):
    """A proxied call ended the solution's interpreter (``SystemExit`` and the like)."""


class SolutionError(Exception):
    """A proxied call raised an exception that is not one of Python's built-in ones."""


def free_names(code: CodeType) -> set[str]:
    """Every global or attribute name the compiled test (and its nested functions) mentions."""
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= free_names(const)
    return names


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks = []
    while size > 0:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Channel:
    """The solution's side: report the solution's names, then answer requests until the verifier is done.

    Objects that are not data (instances of the solution's classes, bound methods) stay
    here, in a table; the verifier holds only their index (a *handle*) and asks for
    their attributes, sets them, or calls them.
    """

    def __init__(self, requests: int, replies: int) -> None:
        self.requests = requests
        self.replies = replies
        self.objects: list[object] = []

    def _send(self, record: dict[str, object], dumps: Callable[[object], str]) -> None:
        _write_all(self.replies, (dumps(record) + "\n").encode("utf-8", "surrogatepass"))

    def _register(self, value: object) -> object:
        self.objects.append(value)
        return [len(self.objects) - 1, type(value).__name__[:80]]

    def _resolve(self, body: object) -> object:
        if isinstance(body, list) and body and isinstance(body[0], int) and 0 <= body[0] < len(self.objects):
            return self.objects[body[0]]
        raise ValueError("unknown handle")

    def serve(
        self,
        namespace: dict[str, object],
        dumps: Callable[[object], str],
        on_error: Callable[[BaseException], None],
    ) -> int:
        """Answer the verifier's requests; the exit status for the process (86 on MemoryError)."""
        try:
            items = [(k, v) for k, v in list(namespace.items())[:_MAX_NAMES] if isinstance(k, str)]
            names = [k[:200] for k, v in items if callable(v)]
            modules = [
                k for k, v in items if type(v).__name__ == "module" and getattr(v, "__name__", None) == k
            ]
            self._send({"names": names, "modules": modules}, dumps)
            while True:
                header = _read_exact(self.requests, _HEADER)
                if header is None:
                    return 0
                body = _read_exact(self.requests, int.from_bytes(header, "little"))
                if body is None:
                    return 0
                self._send(self._answer(namespace, marshal.loads(body), on_error), dumps)
        except MemoryError:
            return 86
        except OSError:  # the verifier is gone
            return 0

    def _answer(
        self,
        namespace: dict[str, object],
        request: dict[str, object],
        on_error: Callable[[BaseException], None],
    ) -> dict[str, object]:
        ident = request["id"]
        try:
            op = request["op"]
            target = (
                self._resolve(request["handle"])
                if "handle" in request
                else namespace.get(str(request.get("name")))
            )
            if op == "getattr":
                returned = getattr(target, str(request["attr"]))
            elif op == "setattr":
                setattr(target, str(request["attr"]), values.decode(request["value"], resolve=self._resolve))
                returned = None
            else:
                if not callable(target):
                    raise NameError(f"name {request.get('name')!r} is not defined")
                args = values.decode(request["args"], resolve=self._resolve)
                kwargs = values.decode(request["kwargs"], resolve=self._resolve)
                if not isinstance(args, tuple) or not isinstance(kwargs, dict):
                    raise TypeError("malformed call")
                returned = target(*args, **kwargs)
                after = [
                    values.encode(a, register=self._register) if type(a) in (list, dict, set) else None
                    for a in args
                ]
                return {
                    "id": ident,
                    "ok": True,
                    "value": values.encode(returned, register=self._register),
                    "after": after,
                }
            return {"id": ident, "ok": True, "value": values.encode(returned, register=self._register)}
        except MemoryError:
            raise
        except BaseException as exc:  # the solution's failure: its type name is the answer
            on_error(exc)
            return {"id": ident, "ok": False, "error": type(exc).__name__[:80]}


class Remote:
    """An object of the solution's process, seen from the verifier: attributes and calls are asked for.

    Only its identity is known here: it equals itself alone, and it has no truth value,
    length or items (an object that is not data cannot pass for one).
    """

    __slots__ = ("_handle", "_link", "_type")
    _link: _Link
    _handle: int
    _type: str

    def __init__(self, link: _Link, handle: int, type_name: str) -> None:
        object.__setattr__(self, "_link", link)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_type", type_name)

    def __getattr__(self, name: str) -> object:
        return self._link.request({"op": "getattr", "handle": [self._handle], "attr": name}, ())

    def __setattr__(self, name: str, value: object) -> None:
        self._link.request(
            {"op": "setattr", "handle": [self._handle], "attr": name, "value": self._link.encode(value)}, ()
        )

    def __call__(self, *args: object, **kwargs: object) -> object:
        return self._link.call({"op": "call", "handle": [self._handle]}, args, kwargs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Remote) and other._handle == self._handle and other._link is self._link

    def __hash__(self) -> int:
        return hash(self._handle)

    def __bool__(self) -> bool:
        raise TypeError(f"the truth of a {self._type} object from the solution is unknown")

    def __repr__(self) -> str:
        return f"<{self._type} object in the solution's process>"


class _Link:
    """The verifier's side of the channel: requests out, replies (JSON lines, capped) in."""

    def __init__(self, requests: int, replies: int) -> None:
        import json  # only here: the solution's replies are read by a parser that builds plain data

        self.loads = json.loads
        self.requests = requests
        self.replies = replies
        self.buffer = bytearray()
        self.next_id = 0
        self.remotes: dict[int, Remote] = {}

    def line(self) -> dict[str, object]:
        while True:
            end = self.buffer.find(b"\n")
            if end != -1:
                raw = bytes(self.buffer[:end])
                del self.buffer[: end + 1]
                try:
                    record = self.loads(raw.decode("utf-8", "surrogatepass"))
                except (ValueError, RecursionError) as exc:
                    raise SolutionGone("the solution's process sent a malformed reply") from exc
                if not isinstance(record, dict):
                    raise SolutionGone("the solution's process sent a malformed reply")
                return record
            if len(self.buffer) > MAX_REPLY_BYTES:
                raise SolutionGone("the solution's reply is too large")
            chunk = os.read(self.replies, 1 << 16)
            if not chunk:
                raise SolutionGone("the solution's process ended")
            self.buffer += chunk

    def encode(self, value: object) -> object:
        return values.encode(value, register=self._handle_of)

    def _handle_of(self, value: object) -> object:
        if isinstance(value, Remote):
            return [object.__getattribute__(value, "_handle")]
        return [-1, type(value).__name__[:80]]  # a test's own object: the solution cannot receive it

    def _remote(self, body: object) -> object:
        if not (
            isinstance(body, list)
            and len(body) == 2
            and isinstance(body[0], int)
            and isinstance(body[1], str)
        ):
            raise ValueError("malformed handle")
        known = self.remotes.get(body[0])
        if known is None:
            known = self.remotes[body[0]] = Remote(self, body[0], body[1][:80])
        return known

    def decode(self, tree: object) -> object:
        return values.decode(tree, resolve=self._remote)

    def call(self, request: dict[str, object], args: tuple[object, ...], kwargs: dict[str, object]) -> object:
        request = {**request, "args": self.encode(args), "kwargs": self.encode(kwargs)}
        return self.request(request, args)

    def request(self, request: dict[str, object], args: tuple[object, ...]) -> object:
        self.next_id += 1
        body = marshal.dumps({"op": "call", **request, "id": self.next_id})
        try:
            _write_all(self.requests, len(body).to_bytes(_HEADER, "little") + body)
        except OSError as exc:
            raise SolutionGone("the solution's process ended") from exc
        reply = self.line()
        if reply.get("id") != self.next_id:
            raise SolutionGone("the solution's process answered out of turn")
        if reply.get("ok") is not True:
            raise _exception(str(reply.get("error", "Exception"))[:80])
        try:
            value = self.decode(reply.get("value"))
            after = reply.get("after")
            if isinstance(after, list):
                for arg, new in zip(args, after, strict=False):
                    if new is not None:
                        _update(arg, self.decode(new))
        except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
            raise SolutionGone("the solution's reply is not plain data") from exc
        return value


def _update(arg: object, new: object) -> None:
    """Apply an in-place change the solution made to a list, dict or set argument."""
    if type(arg) is list and type(new) is list:
        arg[:] = new
    elif (type(arg) is dict and type(new) is dict) or (type(arg) is set and type(new) is frozenset):
        arg.clear()
        arg.update(new)


def _exception(name: str) -> BaseException:
    if name in _EXITS:
        return SolutionExit(name)
    found = getattr(builtins, name, None)
    if isinstance(found, type) and issubclass(found, Exception):
        return found("raised in the solution's process")
    return SolutionError(name)


def _proxy(link: _Link, name: str) -> Callable[..., object]:
    def call(*args: object, **kwargs: object) -> object:
        return link.call({"name": name}, args, kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def split(spec: dict[str, object], confine: Callable[[], None], dumps: Callable[[object], str]) -> Channel:
    """Fork: return the solution's :class:`Channel` in the child; the parent verifies and never returns.

    ``spec`` holds ``test_fd`` (the test, from the grader) and ``verdict_fd`` (to the
    grader); ``confine`` applies the sandbox's limits and seccomp filter to the verifier.
    """
    test_fd, verdict_fd = int(str(spec["test_fd"])), int(str(spec["verdict_fd"]))
    request_r, request_w = os.pipe()
    reply_r, reply_w = os.pipe()
    verifier = os.getpid()
    libc = ctypes.CDLL(None, use_errno=True)
    # Non-dumpable before the fork, so the verifier never is for an instant: no process of
    # its user can then read its memory or open its descriptors through /proc.
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")
    solution = os.fork()
    if solution != 0:
        os.close(request_r)
        os.close(reply_w)
        _verify(test_fd, verdict_fd, _Link(request_w, reply_r), solution, request_w, confine, dumps)
    for fd in (request_w, reply_r, test_fd, verdict_fd):
        os.close(fd)
    libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # the solution's process keeps its own /proc/self
    libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
    if os.getppid() != verifier:
        os._exit(70)
    return Channel(request_r, reply_w)


def _verify(
    test_fd: int,
    verdict_fd: int,
    link: _Link,
    solution: int,
    request_w: int,
    confine: Callable[[], None],
    dumps: Callable[[object], str],
) -> NoReturn:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # the test's prints must not mix with the solution's output
    os.close(null)
    token, ok, error, system = "", False, "the verifier failed", True
    try:
        chunks = []
        while chunk := os.read(test_fd, 1 << 16):
            chunks.append(chunk)
        os.close(test_fd)
        message = marshal.loads(b"".join(chunks))  # written by the grader: trusted
        token = str(message["token"])
        confine()
        code = compile(str(message["test"]), "test.py", "exec")  # a test that does not compile: the dataset's
        system = False  # from here on, whatever happens is the solution's doing (or the test's verdict)
        ok, error = _run_test(code, link)
    except BaseException as exc:  # the verdict must be written whatever happened
        ok, error = False, f"{type(exc).__name__}: {exc}"[:200]
    record = {"event": "verdict", "token": token, "ok": ok, "error": error[:200], "system": system}
    try:
        _write_all(verdict_fd, (dumps(record) + "\n").encode("utf-8", "surrogatepass"))
        os.close(verdict_fd)
    except OSError:
        pass
    try:  # noqa: SIM105  # contextlib is not loaded in the sandbox: importing it costs start-up time
        os.close(request_w)  # the solution's process sees the end of its requests and finishes
    except OSError:
        pass
    _exit_like(solution)


def _run_test(code: CodeType, link: _Link) -> tuple[bool, str]:
    try:
        first = link.line()
    except SolutionGone:
        return False, "the solution did not run to the end"
    offered, modules = first.get("names"), first.get("modules")
    names = {n for n in offered if isinstance(n, str)} if isinstance(offered, list) else set()
    imported = {n for n in modules if isinstance(n, str)} if isinstance(modules, list) else set()
    namespace: dict[str, object] = {"__name__": "__main__", "__builtins__": builtins}
    wanted = free_names(code) - set(dir(builtins))
    for name in wanted & imported:  # a module the test uses unimported: the verifier's own import
        try:  # noqa: SIM105  # no contextlib here (start-up time)
            namespace[name] = __import__(name)
        except ImportError:
            pass
    for name in (wanted & names) - imported:
        namespace[name] = _proxy(link, name)
    try:
        exec(code, namespace)
    except BaseException as exc:
        if isinstance(exc, SolutionGone | SolutionExit):
            return False, f"{type(exc).__name__}: {exc}"
        _print_test_error(exc)
        return False, type(exc).__name__
    return True, ""


def _print_test_error(exc: BaseException) -> None:
    """The test's traceback on standard error (for the grader's ``stderr_tail``), from ``test.py`` on."""
    try:
        import traceback  # only on failure: it costs start-up time

        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != "test.py":
            tb = tb.tb_next
        traceback.print_exception(type(exc), exc, tb)
        sys.stderr.flush()
    except BaseException:  # printing must never change the verdict
        pass


def _exit_like(solution: int) -> NoReturn:
    """Wait for the solution's process and end the same way (its exit status or its signal)."""
    try:
        _, status = os.waitpid(solution, 0)
    except ChildProcessError:
        os._exit(0)
    if os.WIFSIGNALED(status):
        import signal  # only after a death by signal: it costs start-up time

        number = os.WTERMSIG(status)
        try:  # noqa: SIM105  # no contextlib here (start-up time)
            signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
        os.kill(os.getpid(), number)
        os._exit(128 + number)  # a signal that does not end a process by default
    os._exit(os.waitstatus_to_exitcode(status))
