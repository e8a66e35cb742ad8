// Thinking containers (U-11…U-23): one per content_index, distinct from response text, with
// a slow pulse while active, a "Thinking… Ns" label, summary mode by default, and a collapse
// to "Thought for Ns" when agent.thinking.done arrives.

import { el } from './util.js';

const COLLAPSE_MS = 200; // U-20: within 150–300 ms

export class Thinking {
  constructor(contentIndex, liveMode, onToggle) {
    this.started = performance.now();
    this.text = '';
    this.redacted = false;
    this.done = false;
    this.label = el('button', { class: 'thinking-label', type: 'button', 'aria-expanded': 'false' });
    this.body = el('div', { class: 'thinking-body' });
    // U-11: a separate container, styled apart from response bubbles (thinking.css part of
    // app.css). U-16: summary mode (body hidden) unless the reader chose the live mode.
    this.node = el('div', {
      class: `thinking active ${liveMode ? 'live' : 'summary'}`,
      dataset: { contentIndex: String(contentIndex) },
    }, this.label, this.body);
    this.label.addEventListener('click', () => {
      // U-22: a redacted block can never be expanded.
      if (this.redacted) return;
      const open = this.node.classList.toggle('expanded');
      this.label.setAttribute('aria-expanded', String(open));
      onToggle?.();
    });
    this.updateLabel();
    // U-15: the elapsed counter, ticking once a second while active.
    this.timer = setInterval(() => this.updateLabel(), 1000);
  }

  seconds() {
    return Math.max(0, Math.round((performance.now() - this.started) / 1000));
  }

  updateLabel() {
    if (this.done) return;
    this.label.textContent = `🧠 Thinking… ${this.seconds()}s`; // U-12, U-15
  }

  append(text) {
    if (this.redacted || this.done) return;
    this.text += text;
    this.body.textContent = this.text; // progressive in live mode (U-16); plain text only
  }

  setLive(live) {
    this.node.classList.toggle('live', live);
    this.node.classList.toggle('summary', !live);
  }

  // U-23: another block started: this one's indicator stops at once (no second active one).
  deactivate() {
    this.node.classList.remove('active');
    clearInterval(this.timer);
  }

  // U-17: agent.thinking.done runs U-18…U-21 in order.
  finish({ redacted = false, duration_ms: durationMs } = {}) {
    if (this.done) return;
    // U-18: the pulse stops immediately: .active goes, and with it the animation (no delay).
    this.deactivate();
    this.done = true;
    const secs = durationMs != null ? Math.max(0, Math.round(durationMs / 1000)) : this.seconds();
    if (redacted) {
      // U-22: no thinking text is ever shown; a placeholder replaces it, expanding disabled.
      this.redacted = true;
      this.text = '';
      this.body.textContent = '[사고 내용 생략] (thinking omitted)';
      this.node.classList.add('redacted');
      this.label.disabled = true;
      this.label.setAttribute('aria-disabled', 'true');
    }
    this.label.textContent = redacted ? `🧠 Thought for ${secs}s (omitted)` : `🧠 Thought for ${secs}s`;
    // U-19/U-20: collapse to the one-line summary, height and opacity animated in 200 ms.
    const from = this.body.getBoundingClientRect().height;
    const wasOpen = from > 0 && !this.node.classList.contains('expanded');
    if (wasOpen) {
      this.body.style.height = `${from}px`;
      this.body.getBoundingClientRect(); // commit the start height before transitioning
      this.node.classList.add('collapsing');
      this.body.style.height = '0px';
      this.body.style.opacity = '0';
      setTimeout(() => {
        this.node.classList.remove('collapsing');
        this.body.style.height = '';
        this.body.style.opacity = '';
      }, COLLAPSE_MS + 20);
    }
    this.node.classList.add('collapsed');
    this.node.classList.remove('live');
    this.node.classList.add('summary');
  }
}
