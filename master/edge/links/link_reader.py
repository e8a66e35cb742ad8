"""The master's end of a client link: whole data frames parsed in one pass (issue 20 §2).

websockets parses each incoming frame through a chain of generators (`Protocol.parse` →
`Frame.parse` → `StreamReader.read_exact`). In py-spy, while `bench/relay.py` floods, that was
about a third of the master's CPU per relayed frame. A client link carries almost nothing but
small, whole, unmasked text frames. So this connection parses those itself and queues them
where websockets would (`recv_messages`). Every other frame (Ping, Pong, Close, a fragment,
anything unusual) goes to websockets whole and unchanged.

Rules:

1. Until the handshake is done, bytes go to websockets as they arrive. The one exception: the
   bytes after the end of the 101 response's head stay here, because websockets would
   otherwise start parsing frames.
2. websockets' parser is only ever given whole frames. So it always stands at a frame boundary,
   and it can take over the stream at any frame.
3. A whole, unfragmented data frame is queued directly: FIN set, no RSV bits, TEXT or BINARY,
   unmasked, within `max_size`, and no fragmented message in progress. It is the same `Frame`
   websockets' own path would queue, so the queue's flow control (pause reading above its
   high-water mark) applies as before.
4. A control frame (Ping, Pong, Close) of at most 125 bytes waits here until it is whole, then
   goes to websockets. websockets answers the Ping, acknowledges the Pong and handles the Close.
5. Anything else hands the rest of the stream to websockets for good, from that frame's first
   byte: a masked frame, RSV bits, a fragment or continuation, an unknown opcode, a frame over
   `max_size`, an oversized control frame. websockets then fails the connection exactly as it
   would have. A frame over `max_size` is never buffered here first.
6. Once the state is no longer OPEN (after a Close, say), everything goes to websockets.
7. A data frame of rule 3 may instead be taken at once by `take_now`, the link's own handler
   (master.edge.links.client_link rule 9), when no frame waits in the queue before it: the
   handler says True when it has dealt with the frame, False to leave it to the queue. A text
   frame that is not valid UTF-8 is never offered: websockets' own path fails the link for it.
   Taking a frame here spares the queue's hand-off to the reading task — a future, a wake-up
   of that task, a chain of coroutines left waiting for the next frame — which at 10,000
   sessions sending a frame a second each was most of what a relayed frame cost (issue 35).

`tests/master/test_link_reader.py` checks these rules against websockets' own reader, on
the same bytes over real sockets: same messages, same close codes.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable

from websockets.asyncio.client import ClientConnection
from websockets.frames import Frame, Opcode
from websockets.protocol import State

HEAD_END = b"\r\n\r\n"  # the end of the 101 response's head (rule 1)
DATA_OPCODES = {0x1: Opcode.TEXT, 0x2: Opcode.BINARY}
CONTROL_OPCODES = frozenset({0x8, 0x9, 0xA})  # Close, Ping, Pong
CONTROL_MAX = 125  # RFC 6455 §5.5
LENGTH_16, LENGTH_64 = struct.Struct("!H"), struct.Struct("!Q")  # extended payload lengths


class Mode(enum.Enum):
    HANDSHAKE = "handshake"
    FAST = "fast"
    WEBSOCKETS = "websockets"  # rules 5–6: websockets reads the rest


class LinkConnection(ClientConnection):
    """`websockets.asyncio.client.connect(..., create_connection=LinkConnection)`."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.mode = Mode.HANDSHAKE
        self._pending = bytearray()  # the start of a frame not yet whole
        self._head_tail = b""  # the handshake's last 3 bytes: its end may straddle two reads
        self.take_now: Callable[[str | bytes], bool] | None = None  # rule 7

    def data_received(self, data: bytes) -> None:
        if self.mode is Mode.WEBSOCKETS:
            super().data_received(data)
            return
        if self.mode is Mode.HANDSHAKE:
            data = self._through_handshake(data)
            if not data:
                return
        self._pending += data
        self._parse()

    def _through_handshake(self, data: bytes) -> bytes:
        """Rule 1: websockets gets the response's head; returns what came after it."""
        seen = self._head_tail + data
        end = seen.find(HEAD_END)
        if end < 0:
            self._head_tail = seen[-3:]
            super().data_received(data)
            return b""
        cut = end + len(HEAD_END) - len(self._head_tail)  # ≥ 1: the tail can't hold all of it
        super().data_received(data[:cut])
        rest = data[cut:]
        if self.protocol.state is State.OPEN:
            self.mode = Mode.FAST
            return rest
        self._hand_over(rest)  # refused, or failed: websockets deals with it
        return b""

    def _parse(self) -> None:
        buffer = self._pending
        size = len(buffer)
        position = 0
        queue = self.recv_messages
        limit = self.protocol.max_message_size
        unusual = False  # rule 5: websockets reads on from `position`
        while size - position >= 2:
            first, second = buffer[position], buffer[position + 1]
            length, head = second & 0x7F, 2
            if length == 126:
                head = 4
            elif length == 127:
                head = 10
            if size - position < head:
                break  # the length is not whole yet
            if head == 4:
                (length,) = LENGTH_16.unpack_from(buffer, position + 2)
            elif head == 10:
                (length,) = LENGTH_64.unpack_from(buffer, position + 2)
            opcode = first & 0x0F
            plain = (first & 0xF0) == 0x80 and not second & 0x80  # FIN, no RSV, unmasked
            if opcode in DATA_OPCODES:
                usual = plain and self.protocol.current_size is None
                unusual = not usual or (limit is not None and length > limit)
            else:
                unusual = opcode not in CONTROL_OPCODES or not plain or length > CONTROL_MAX
            if unusual:
                break
            end = position + head + length
            if end > size:
                break  # the frame is not whole yet
            if opcode in DATA_OPCODES:  # rule 3
                data = bytes(buffer[position + head : end])
                position = end
                if self.take_now is None or len(queue.frames) or not self._taken(opcode, data):
                    queue.put(Frame(DATA_OPCODES[opcode], data))
                continue
            frame = bytes(buffer[position:end])  # rule 4
            position = end
            super().data_received(frame)
            if self.protocol.state is not State.OPEN:  # rule 6
                unusual = True
                break
        if unusual:
            rest = bytes(buffer[position:])
            buffer.clear()
            self._hand_over(rest)
        else:
            del buffer[:position]

    def _taken(self, opcode: int, data: bytes) -> bool:
        """Rule 7: offer one whole data frame to `take_now`."""
        assert self.take_now is not None
        if opcode == 0x2:
            return self.take_now(data)
        try:
            text = data.decode()
        except UnicodeDecodeError:
            return False  # websockets' path fails the link with 1007, as it always did
        return self.take_now(text)

    def _hand_over(self, rest: bytes) -> None:
        self.mode = Mode.WEBSOCKETS
        if rest:
            super().data_received(rest)
