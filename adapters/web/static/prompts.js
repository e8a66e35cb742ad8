// The reader's own prompts on a page that was reloaded or opened in a second tab (issue 28 §1;
// docs/web.md, "Reloading the page"). The master's replay holds the agent's frames, not the
// prompts; the gateway keeps the prompts this user sent from the web edge
// (GET /api/sessions/{id}/prompts). Each goes above the turn it started, where the replay's
// (or the live) `session.turn.start` names it in `prompt_message_id`; so every prompt shows
// once, in order, whether it came before the reload, from another tab, or from this page.

import { api, el } from './util.js';

export class PromptLog {
  constructor(sessionId, add) {
    this.sessionId = sessionId;
    this.add = add; // appends a node to the transcript, returns it
    this.texts = new Map(); // message_id → text, from the gateway
    this.shown = new Set(); // message_ids with a bubble (or known not to be ours)
    this.waiting = new Map(); // message_id → { node, load }: placed, text not known yet
    this.loads = 0; // loads started
    this.loading = false;
    this.again = false;
    this.load();
  }

  // The page's own prompt, bubbled when sent (composer): its turn adds nothing.
  own(messageId) {
    this.shown.add(messageId);
  }

  // A turn (or a refusal) names a prompt: its bubble goes here, once. Its text may not be
  // known yet (sent from another tab a moment ago): the bubble waits, hidden, for a load
  // that started after it was placed; if that load does not have it either, the prompt is
  // not this user's from the web (another edge's, or too old) and the place is dropped.
  place(messageId) {
    if (!messageId || this.shown.has(messageId)) return;
    this.shown.add(messageId);
    const node = this.add(el('div', { class: 'bubble user', dataset: { promptId: messageId } }));
    if (this.texts.has(messageId)) {
      node.textContent = this.texts.get(messageId);
      return;
    }
    node.hidden = true;
    this.waiting.set(messageId, { node, load: this.loads + 1 });
    this.load();
  }

  async load() {
    if (this.loading) {
      this.again = true; // placed during a load that may have started before the prompt
      return;
    }
    this.loading = true;
    this.loads += 1;
    const number = this.loads;
    const res = await api(`/api/sessions/${encodeURIComponent(this.sessionId)}/prompts`);
    this.loading = false;
    if (!res.ok) return; // signed out, gateway away: the waiting ones stay hidden
    for (const p of res.body?.prompts || []) this.texts.set(p.message_id, p.text);
    for (const [id, w] of this.waiting) {
      if (this.texts.has(id)) {
        w.node.textContent = this.texts.get(id);
        w.node.hidden = false;
        this.waiting.delete(id);
      } else if (w.load <= number) {
        w.node.remove();
        this.waiting.delete(id);
      }
    }
    if (this.again) {
      this.again = false;
      this.load();
    }
  }
}
