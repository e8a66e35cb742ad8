"""The floor under the master's CPU per frame: a bare asyncio forwarder (issue 35).

`.venv/bin/python bench/forwarder.py --sockets 9000 --rate 1` pairs N upstream sockets with N
downstream sockets through a child process whose `asyncio.Protocol.data_received` writes what
it reads to the paired socket: no WebSocket, no parsing, no bookkeeping — the least an asyncio
process can do to relay a message from one socket to another. This process sends each
upstream socket `--rate` messages a second (300 bytes, each socket at a random phase, as
bench/scale.py's sessions) and prints the forwarder's CPU per message: at a message a second
per socket each message is its own wake-up, read and write, and this is what that costs here.
bench/scale.py runs `floor` after its master has stopped, with the same number of streaming
sockets, rate and frame size, and prints the master's CPU per frame against it (issue 35).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support import free_port  # the repository's root is on the path now

MESSAGE_BYTES = 300  # about a delta frame's size; one newline a message, counted


class Downstream(asyncio.Protocol):
    """The forwarder's side facing the reader: names its pair in its first line."""

    def __init__(self, pairs: dict[bytes, asyncio.Transport]) -> None:
        self.pairs, self.head = pairs, b""

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.head += data
        if b"\n" in self.head:
            self.pairs[self.head.split(b"\n", 1)[0]] = self.transport
            self.transport.write(b"+")  # paired: the sender may name it now


class Upstream(asyncio.Protocol):
    """The forwarder's side facing the sender: its first line names its pair, then every byte
    is written to the pair as it comes."""

    def __init__(self, pairs: dict[bytes, asyncio.Transport]) -> None:
        self.pairs, self.head, self.down = pairs, b"", None

    def data_received(self, data: bytes) -> None:
        if self.down is None:
            self.head += data
            if b"\n" not in self.head:
                return
            key, data = self.head.split(b"\n", 1)
            self.down = self.pairs[key]
            if not data:
                return
        self.down.write(data)


async def forward(up_port: int, down_port: int) -> None:
    loop = asyncio.get_running_loop()
    pairs: dict[bytes, asyncio.Transport] = {}
    await loop.create_server(lambda: Downstream(pairs), "127.0.0.1", down_port, backlog=4096)
    await loop.create_server(lambda: Upstream(pairs), "127.0.0.1", up_port, backlog=4096)
    print("ready", flush=True)
    await asyncio.Event().wait()


class Counting(asyncio.Protocol):
    """The reader's side: counts the messages that came through, says when all have."""

    received = 0
    expected = 0
    all_in: asyncio.Event

    def __init__(self) -> None:
        self.paired = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        if not self.paired.done():  # the forwarder's "+": this reader's pair is known
            self.paired.set_result(None)
            data = data[1:]
        Counting.received += data.count(b"\n")
        if Counting.received >= Counting.expected:
            Counting.all_in.set()


async def load(args, forwarder: psutil.Process, up_port: int, down_port: int) -> dict:
    loop = asyncio.get_running_loop()
    message = b"x" * (args.message_bytes - 1) + b"\n"
    Counting.received = 0
    Counting.all_in = asyncio.Event()
    senders = []
    for number in range(args.sockets):
        key = b"%d\n" % number
        reader, counting = await loop.create_connection(Counting, "127.0.0.1", down_port)
        reader.write(key)
        await counting.paired  # its pair is known before the sender names it
        sender, _ = await loop.create_connection(asyncio.Protocol, "127.0.0.1", up_port)
        sender.write(key)
        senders.append(sender)
    await asyncio.sleep(2)
    count = int(args.rate * args.seconds)

    async def send(transport) -> None:
        start = time.monotonic() + random.random() / args.rate
        for i in range(count):
            delay = start + i / args.rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            transport.write(message)

    Counting.expected = count * args.sockets
    before = forwarder.cpu_times()
    await asyncio.gather(*(send(transport) for transport in senders))
    # The last messages may still be on their way; the rest count as lost.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(Counting.all_in.wait(), args.seconds)
    after = forwarder.cpu_times()
    return {
        "sent": count * args.sockets,
        "received": Counting.received,
        "cpu_s": after.user + after.system - before.user - before.system,
        "system_s": after.system - before.system,  # the kernel's share: reads, writes, wake-ups
    }


def floor(sockets: int, rate: float, seconds: float, message_bytes: int = MESSAGE_BYTES) -> dict:
    """Run the forwarder in a child process and load it; its CPU per message, µs (`us`, the
    kernel's share `system_us`), and the messages sent and received. Needs 2 × `sockets` + 64
    descriptors here and in the child (the caller raises the limit)."""
    args = argparse.Namespace(
        sockets=sockets, rate=rate, seconds=seconds, message_bytes=max(2, message_bytes)
    )
    ports = [free_port(), free_port()]
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", *map(str, ports)], stdout=subprocess.PIPE
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
        figures = asyncio.run(load(args, psutil.Process(child.pid), *ports))
    finally:
        child.kill()
        child.wait()
    received = max(1, figures["received"])
    return {
        **figures,
        "us": figures["cpu_s"] / received * 1e6,
        "system_us": figures["system_s"] / received * 1e6,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sockets", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=20)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--message-bytes", type=int, default=MESSAGE_BYTES)
    parser.add_argument("--serve", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # two sockets a pair each side
    if args.serve:
        asyncio.run(forward(*args.serve))
        return 0
    if 2 * args.sockets + 64 > hard:
        sys.exit(f"--sockets {args.sockets} needs {2 * args.sockets + 64} descriptors; {hard}")
    figures = floor(args.sockets, args.rate, args.seconds, args.message_bytes)
    print(
        f"bare asyncio forwarder: {args.sockets:,} sockets at {args.rate:g} messages/s each, "
        f"{figures['received']:,} of {figures['sent']:,} messages relayed, "
        f"{figures['us']:.1f} µs of the forwarder's CPU a message, "
        f"of which the kernel's {figures['system_us']:.1f} µs"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
