"""A TCP forwarder on loopback that the test can cut: a fake network between master and client.

The client is paired with the proxy's address, so every call and WebSocket of the master to
the client goes through it; `cut()` drops every connection open at that moment (a network
blip), while new connections keep working; `partition()` also refuses new ones until `heal()`.
"""

from __future__ import annotations

import contextlib
import socket
import threading

from tests.support import free_port


class CuttableProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self.cuts = 0
        self._closed = False
        self.partitioned = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                inbound, _ = self._server.accept()
            except OSError:
                return
            if self.partitioned:  # nothing gets through until `heal()`
                inbound.close()
                continue
            try:
                outbound = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
                outbound.settimeout(None)
            except OSError:
                inbound.close()
                continue
            with self._lock:
                self._open += [inbound, outbound]
            for a, b in ((inbound, outbound), (outbound, inbound)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def partition(self) -> int:
        """Cut every connection and refuse new ones until `heal()`: a lasting partition."""
        self.partitioned = True
        return self.cut()

    def heal(self) -> None:
        self.partitioned = False

    def cut(self) -> int:
        """Drop every connection open now; returns how many sockets were cut."""
        with self._lock:
            victims, self._open = self._open, []
        for sock in victims:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        self.cuts += 1
        return len(victims)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._server.close()
        self.cut()
