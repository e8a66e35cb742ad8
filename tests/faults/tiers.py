"""Breaking a tier on purpose: SIGKILL, SIGSTOP and SIGCONT of one process, and a TCP proxy that
cuts its link at a chosen byte of the stream (so a cut can land in the middle of a frame).

Every process here was started by `tests.support.Processes` in its own process group; the
signals go to the process itself (the master and the gateway are one process each), and
`Processes.close()` still ends whatever is left of the group at teardown.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
import time

from tests.edge.proxy import CuttableProxy


def sigkill(proc: subprocess.Popen) -> None:
    """Kill without warning and reap it: a dead tier holds no port and sends nothing more."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGCONT)  # a stopped process dies as well, but say so
        os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL, f"pid {proc.pid} outlived SIGKILL"


def sigstop(proc: subprocess.Popen) -> None:
    """Freeze: its sockets stay open and nothing answers on them (a hung process, a GC pause
    that never ends, a VM paused by its host)."""
    os.kill(proc.pid, signal.SIGSTOP)
    _wait_state(proc, "T", "stopped")


def sigcont(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGCONT)
    _wait_state(proc, "RSD", "running again")


def _wait_state(proc: subprocess.Popen, states: str, what: str, limit: float = 5.0) -> None:
    """Signals are asynchronous: wait until /proc says the process is in one of `states`."""
    deadline = time.monotonic() + limit
    state = "?"
    while time.monotonic() < deadline:
        with open(f"/proc/{proc.pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
        if state in states:
            return
        time.sleep(0.005)
    raise AssertionError(f"pid {proc.pid} not {what} within {limit}s (state {state})")


class RandomCutProxy(CuttableProxy):
    """A `CuttableProxy` that can also be armed to cut every open connection once `after`
    more bytes have passed from the target back to the caller (`arm(after)`): the cut lands
    wherever that byte falls, mid-frame as often as not. The proxy counts every byte it
    forwards that way (`downstream`), so a test can size its random cut points on a real turn.
    """

    def __init__(self, target_port: int) -> None:
        self._count_lock = threading.Lock()
        self.downstream = 0
        self._armed_at: int | None = None
        self.fired = threading.Event()
        super().__init__(target_port)

    def arm(self, after: int) -> None:
        with self._count_lock:
            self._armed_at = self.downstream + max(1, after)
            self.fired.clear()

    def disarm(self) -> None:
        with self._count_lock:
            self._armed_at = None

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        # Bytes from the target are those read from an outbound socket, i.e. one whose peer
        # is the target's port.
        try:
            from_target = source.getpeername()[1] == self.target_port
        except OSError:
            return
        try:
            while chunk := source.recv(65536):
                if from_target and self._forward_counted(chunk, sink):
                    return
                if not from_target:
                    sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def _forward_counted(self, chunk: bytes, sink: socket.socket) -> bool:
        """Forward `chunk`, or the part of it before the armed byte and then cut; True if cut."""
        with self._count_lock:
            start = self.downstream
            self.downstream += len(chunk)
            armed = self._armed_at
            hit = armed is not None and self.downstream >= armed
            if hit:
                self._armed_at = None
        if not hit:
            sink.sendall(chunk)
            return False
        sink.sendall(chunk[: armed - start - 1])
        self.cut()
        self.fired.set()
        return True
