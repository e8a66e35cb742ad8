"""A TCP forwarder between a master replica and Redis that, once armed, spoils the reply to its
relay writer's script call: the integer Redis answers becomes a string that is not UTF-8,
which the replica's Redis client cannot decode. A fault at the wire that no `except
RedisError` catches — what kills a replica's writer the way a bug would (issue 29 §4)."""

from __future__ import annotations

import contextlib
import hashlib
import socket
import threading

from master.edge.replicas.redis_scripts import PUBLISH_SCRIPT
from tests.support import free_port

WRITER_CALL = hashlib.sha1(PUBLISH_SCRIPT.encode()).hexdigest().encode()  # EVALSHA's argument
SPOILT = b"$1\r\n\xff\r\n"  # a one-byte string that is not UTF-8, in place of ":<n>\r\n"


class WriterPoison:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.armed = False
        self.spoilt = 0
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                inbound, _ = self._server.accept()
                outbound = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                return
            outbound.settimeout(None)
            self._socks += [inbound, outbound]
            due = threading.Event()  # a writer's call went up: spoil the reply coming down
            threading.Thread(target=self._up, args=(inbound, outbound, due), daemon=True).start()
            threading.Thread(target=self._down, args=(outbound, inbound, due), daemon=True).start()

    def _up(self, source: socket.socket, sink: socket.socket, due: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                if self.armed and b"EVALSHA" in chunk and WRITER_CALL in chunk:
                    due.set()  # before the call reaches Redis, so before its reply
                sink.sendall(chunk)
        _shut(source, sink)

    def _down(self, source: socket.socket, sink: socket.socket, due: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                if due.is_set() and chunk.startswith(b":"):
                    due.clear()
                    chunk = SPOILT + chunk[chunk.index(b"\r\n") + 2 :]
                    self.spoilt += 1
                sink.sendall(chunk)
        _shut(source, sink)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._server.close()
        for sock in self._socks:
            with contextlib.suppress(OSError):
                sock.close()


def _shut(*socks: socket.socket) -> None:
    for sock in socks:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
