// The session's WebSocket through the web edge (/api/sessions/{id}/stream, contract issue 21):
// DPS frames both ways, reconnect with the last message id, duplicates dropped by message_id.

// Frames the master makes itself, or that no replay buffer places: never a resume cursor
// (docs/edge-api.md §9.4, "Reconnecting").
const NOT_A_CURSOR = (type) => type === 'session.history' || type === 'session.error'
  || type.startsWith('node.');
// 1000: session deleted; 1001: session ended otherwise. Anything else (1012 master link
// dropped, 1013 too slow, 1006 network) is worth a reconnect.
const FINAL_CODES = new Set([1000, 1001]);
const SEEN_LIMIT = 4096;
// A page has no cursor when it opens (a reload, a second tab): it asks from the start with a
// cursor no buffer knows, which the master answers with the greeting, `session.history` and
// every frame still held (docs/edge-api.md, "Reconnecting"). Without any cursor it would get
// the greeting only, and a reloaded transcript would be empty (issue 28 §1).
export const FROM_START = '00000000-0000-0000-0000-000000000000';

export class Stream {
  constructor(sessionId, { onFrame, onState }) {
    this.sessionId = sessionId;
    this.onFrame = onFrame;
    this.onState = onState;
    this.lastMessageId = FROM_START;
    this.seen = new Set();
    this.seenOrder = [];
    this.closed = false;
    this.retry = 0;
    this.outbox = [];
    this.replayLeft = 0;
    this.connect();
  }

  url() {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    let url = `${proto}//${location.host}/api/sessions/${encodeURIComponent(this.sessionId)}/stream`;
    if (this.lastMessageId) url += `?last_message_id=${encodeURIComponent(this.lastMessageId)}`;
    return url;
  }

  connect() {
    this.onState('connecting');
    const ws = new WebSocket(this.url());
    this.ws = ws;
    this.replayLeft = 0;
    ws.onopen = () => {
      this.retry = 0;
      this.onState('open');
      for (const text of this.outbox.splice(0)) ws.send(text);
    };
    ws.onmessage = (event) => this.receive(event.data);
    ws.onclose = (event) => {
      if (this.ws !== ws) return;
      if (this.closed) return;
      if (FINAL_CODES.has(event.code)) {
        this.onState('ended', event.reason);
        return;
      }
      this.onState('reconnecting');
      const delay = Math.min(5000, 250 * 2 ** this.retry);
      this.retry += 1;
      this.timer = setTimeout(() => this.connect(), delay);
    };
  }

  receive(text) {
    let f;
    try { f = JSON.parse(text); } catch { return; }
    if (!f || typeof f !== 'object' || typeof f.type !== 'string') return;
    // U-31: the `replayed` frames after session.history are a replay; counted here, before
    // duplicates are dropped, because a replayed frame may be one this page already has.
    let replayed = false;
    if (f.type === 'session.history') {
      this.replayLeft = Number(f.payload?.replayed) || 0;
    } else if (this.replayLeft > 0) {
      this.replayLeft -= 1;
      replayed = true;
    }
    if (f.message_id) {
      // A frame may come twice across a reattach blip: drop it by message_id (§9.4).
      if (this.seen.has(f.message_id)) return;
      this.seen.add(f.message_id);
      this.seenOrder.push(f.message_id);
      if (this.seenOrder.length > SEEN_LIMIT) this.seen.delete(this.seenOrder.shift());
      if (!NOT_A_CURSOR(f.type)) this.lastMessageId = f.message_id;
    }
    this.onFrame(f, replayed);
  }

  send(f) {
    const text = JSON.stringify(f);
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(text);
    else this.outbox.push(text);
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    this.ws?.close(1000);
  }
}
