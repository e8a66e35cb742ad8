"""The master's WebSocket protocol under uvicorn: its `websockets-sansio` one, with reading
paused only when messages pile up (issue 35).

uvicorn pauses a socket's reading after every message it queues for the app and resumes it
when the app has taken the message. On asyncio's selector loop each pause and resume is a
`selector.unregister` and `register` — an `epoll_ctl` call and a new key each way. An edge
sends the master a frame now and then (a prompt, an approval), so every one of them paid both:
when 9,800 sessions were prompted in the same second (bench/scale.py), the re-registering was
~30 % of the master's work on those frames (py-spy), and the sessions' first frames queued
behind it.

Rules:

1. A message is queued for the app as uvicorn queues it (the same checks: discarded after the
   app's close, UTF-8 checked); reading is paused only once `PAUSE_AT` messages wait, so an
   edge that floods the master is still held back, with at most `PAUSE_AT` messages and one
   read's worth more waiting.
2. Reading resumes as uvicorn resumes it: when the app has taken every waiting message.
"""

from __future__ import annotations

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

PAUSE_AT = 16  # messages waiting for the app before reading is paused (rule 1)


class EdgeWebSocketProtocol(WebSocketsSansIOProtocol):
    def send_receive_event_to_app(self) -> None:
        # uvicorn's own method pauses reading unless it is paused already: seen as paused for
        # the call, it only queues the message (rule 1).
        paused, self.read_paused = self.read_paused, True
        try:
            super().send_receive_event_to_app()
        finally:
            self.read_paused = paused
        if not self.read_paused and self.queue.qsize() >= PAUSE_AT:
            self.read_paused = True
            self.transport.pause_reading()
