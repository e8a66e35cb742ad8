"""A fork server for the `rawp` processes the suite starts (issue 18: the suite's time).

Every `rawp master`, `client` or `gateway` a test starts used to pay ~1 CPU-second of imports
(Quart, SQLAlchemy, aiohttp, slack-bolt, discord.py, pydantic models) before running any of
its own code; the fault and failover tests restart them hundreds of times, and on two cores
that was most of the suite's time. Here one process per test worker imports all of it once
and forks a child per `rawp` command: the child is a real process of its own — own pid,
own session and process group, the test's environment, working directory and pipes — and runs
exactly what `python -m rawp_app.cli ARGS` runs, `rawp_app.cli.main(ARGS)`, then exits through the
normal interpreter shutdown. Only the imports are shared, never a socket, thread or event loop
(the server holds none when it forks).

Only the suite forks: `tests/conftest.py` calls `enable()`. `bench/` starts its processes
through `tests.support` too, and a benchmark must measure real start-ups and unshared memory.
`RAWP_TEST_PREFORK=0` makes the suite start every process the ordinary way (`subprocess.Popen`);
it passes either way.

Wire: one SOCK_SEQPACKET message per launch (JSON: argv, env, cwd; SCM_RIGHTS: the child's
stdin, stdout and stderr); the server answers the child's pid, then — on the same connection,
when it has reaped the child — its exit status as `subprocess` reports it (negative: a signal).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENABLED = False  # see enable()


def enable() -> None:
    """Fork this process's `rawp` commands from now on, unless RAWP_TEST_PREFORK=0."""
    global ENABLED
    ENABLED = os.environ.get("RAWP_TEST_PREFORK", "1") != "0"


# What a `rawp` process imports on its way to serving; importing more than one command needs
# costs the children nothing (the pages are shared copy-on-write).
PRELOAD = (
    "rawp_app.cli",
    "master.app",
    "master.server",
    "client.app",
    "client.server",
    "gateway.cli",
    "gateway.storage.conversation_store",
    "rawp_app.launch",
    "rawp_app.up",
    "adapters.slack.platform",
    "adapters.discord.platform",
    "adapters.console.platform",
    "redis.asyncio",
)
MAX_MESSAGE = 1 << 20


# --- the server (its own process: `python -m tests.prefork SOCKET`) ------------------------------


def serve(path: str) -> int:
    """Serve launches until stdin closes (the test worker is gone); in a forked child, run its
    command and return its exit code instead."""
    import importlib

    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    # Out of the collector's sight: a child's collections would otherwise walk (and so copy)
    # every page of the imported modules' objects it shares with this process.
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes select through the pipe
    children: dict[int, socket.socket] = {}
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        ready, _, _ = select.select([listener, wake_r, sys.stdin], [], [])
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1):
            return 0  # the worker ended: its children are its `Processes`' to end
        if wake_r in ready:
            os.read(wake_r, 4096)
            _reap(children)
        if listener in ready:
            conn, _ = listener.accept()
            message, fds, _, _ = socket.recv_fds(conn, MAX_MESSAGE, 3)
            request = json.loads(message)
            pid = os.fork()
            if pid == 0:  # the child: drop the server's state, become the command
                listener.close()
                for other in children.values():
                    other.close()
                os.close(wake_r)
                os.close(wake_w)
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                return _become(request, fds, conn)
            for fd in fds:
                os.close(fd)
            children[pid] = conn
            conn.send(json.dumps({"pid": pid}).encode())
            _reap(children)  # a SIGCHLD may have come before the child was registered


def _reap(children: dict[int, socket.socket]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is not None:
            code = os.waitstatus_to_exitcode(status)
            with contextlib.suppress(OSError):
                conn.send(json.dumps({"returncode": code}).encode())
            conn.close()


def _become(request: dict, fds: list[int], conn: socket.socket) -> int:
    conn.close()
    os.setsid()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in set(fds):
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [str(ROOT / "rawp" / "cli.py"), *request["args"]]
    from rawp_app.cli import main

    try:
        code = main(request["args"])
    except SystemExit as exc:  # as the interpreter reports it (argparse exits this way)
        code = exc.code
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    _exit(0 if code is None else code)


def _exit(code: int) -> None:
    """The interpreter's exit up to, not including, tearing down every module: non-daemon
    threads joined, atexit functions run (logging's flush among them), stdio flushed. The
    teardown of a heap holding every import would cost the child more than its imports did."""
    threading._shutdown()  # what Py_FinalizeEx does first (private, stable since 3.x)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


# --- the test side ---------------------------------------------------------------------------


class PreforkedProcess:
    """The parts of `subprocess.Popen` the suite uses, for a child of the fork server."""

    def __init__(self, args: list[str], conn: socket.socket, pid: int, pipes: dict) -> None:
        self.args = args
        self.pid = pid
        self.returncode: int | None = None
        self.stdin, self.stdout, self.stderr = pipes["stdin"], pipes["stdout"], pipes["stderr"]
        self._conn = conn
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        if self.returncode is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._receive(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self._receive(timeout)
        assert self.returncode is not None
        return self.returncode

    def _receive(self, timeout: float | None) -> None:
        with self._lock:
            if self.returncode is not None:
                return
            ready, _, _ = select.select([self._conn], [], [], timeout)
            if not ready:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            data = self._conn.recv(4096)
            self._conn.close()
            # No answer: the server itself died; the child's fate is unknown, say "killed".
            self.returncode = json.loads(data)["returncode"] if data else -signal.SIGKILL

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, input: bytes | None = None, timeout: float | None = None):
        """As `Popen.communicate`: each pipe read to its end on a thread of its own (so neither
        fills while the other is read), within `timeout` (TimeoutExpired after it)."""
        if self.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                if input is not None:
                    self.stdin.write(input)
                self.stdin.close()
        results: dict[str, bytes] = {}
        readers = [
            threading.Thread(target=lambda n=name, s=stream: results.__setitem__(n, s.read()))
            for name, stream in (("out", self.stdout), ("err", self.stderr))
            if stream is not None
        ]
        for reader in readers:
            reader.daemon = True
            reader.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        for reader in readers:
            reader.join(None if deadline is None else max(0, deadline - time.monotonic()))
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        self.wait(None if deadline is None else max(0, deadline - time.monotonic()))
        return results.get("out"), results.get("err")

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        self.wait()


class ForkServer:
    """One per test worker, started on first use and ended with the worker."""

    def __init__(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="rawp-prefork-")
        self.path = os.path.join(self._dir, "s")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.prefork", self.path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=ROOT,
            start_new_session=True,
        )
        line = self.proc.stdout.readline()
        if line != b"ready\n":
            raise RuntimeError(f"the fork server did not start: {line!r}")

    def launch(
        self,
        args: Sequence[str],
        env: dict[str, str],
        cwd: Path | str,
        stdin=None,
        stdout=None,
        stderr=None,
    ) -> PreforkedProcess:
        ours, theirs, pipes = [], [], {}
        for name, spec, fd in (("stdin", stdin, 0), ("stdout", stdout, 1), ("stderr", stderr, 2)):
            pipes[name] = None
            if spec == subprocess.PIPE:
                r, w = os.pipe()
                child, mine = (r, w) if name == "stdin" else (w, r)
                pipes[name] = os.fdopen(mine, "wb" if name == "stdin" else "rb")
                theirs.append(child)
                ours.append(child)
            elif spec == subprocess.STDOUT:
                theirs.append(theirs[1])
            elif spec == subprocess.DEVNULL:
                child = os.open(os.devnull, os.O_RDWR)
                theirs.append(child)
                ours.append(child)
            elif spec is None:
                theirs.append(fd)
            else:
                theirs.append(spec if isinstance(spec, int) else spec.fileno())
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            conn.connect(self.path)
            request = {"args": list(args), "env": dict(env), "cwd": str(cwd)}
            socket.send_fds(conn, [json.dumps(request).encode()], theirs)
            pid = json.loads(conn.recv(4096))["pid"]
        finally:
            for fd in ours:
                os.close(fd)
        return PreforkedProcess([sys.executable, "-m", "rawp_app.cli", *args], conn, pid, pipes)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
            os.rmdir(self._dir)


def run(
    args: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | str = ROOT,
    timeout: float = 60,
) -> subprocess.CompletedProcess:
    """`subprocess.run([python, -m, rawp_app.cli, *args], capture_output=True, text=True,
    stdin=DEVNULL)`, forked from the server unless RAWP_TEST_PREFORK=0."""
    env = dict(os.environ if env is None else env)
    if not ENABLED:
        return subprocess.run(
            [sys.executable, "-m", "rawp_app.cli", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    proc = fork_server().launch(
        args, env, cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), err.decode())


_server: ForkServer | None = None


def fork_server() -> ForkServer:
    global _server
    if _server is None or _server.proc.poll() is not None:
        _server = ForkServer()
    return _server


def close_fork_server() -> None:
    global _server
    if _server is not None:
        _server.close()
        _server = None


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1]))
