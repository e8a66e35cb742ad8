// The one status line (U-24…U-31): a single fixed element directly above the input box,
// updated in place on agent.state.changed; never a bubble, never in the history.

import { withoutName } from './util.js';

const SWAP_MS = 150; // U-29: a 100–200 ms cross-fade
const DETAIL_MAX = 60;
const STATES = {
  // U-27: per-state text and icon; the animation is CSS on [data-state].
  thinking: ['🧠', 'Thinking…'],
  tool_calling: ['🔧', 'Running tool…'],
  awaiting_input: ['⏸', 'Waiting for input'],
  error: ['⚠', 'Error occurred'],
};

// U-28: what a tool.invoke.request works on: its title, else its path or command.
export function toolDetail(p) {
  const input = p.input || {};
  const fromInput = [input.file_path, input.path, input.command].find(
    (v) => typeof v === 'string' && v.trim());
  let detail = typeof p.title === 'string' && p.title.trim()
    ? withoutName(p.title.trim(), p.tool_name) : null;
  if (detail === null) detail = fromInput || null;
  return detail ? detail.slice(0, DETAIL_MAX) : null;
}

export class StatusLine {
  constructor(node) {
    this.node = node;
    this.icon = node.querySelector('.status-icon');
    this.text = node.querySelector('.status-text');
    this.lastSwap = 0;
    this.fadeTimer = null;
    this.state = null; // the state shown, or about to be once a cross-fade ends
    this.toolLabel = null;
  }

  // U-28: the tool being run, when a tool.invoke.request names it. It may arrive while the
  // cross-fade into tool_calling is under way (same tick): the fade's end reads the label then.
  setTool(name, detail) {
    this.toolLabel = detail ? `Running: ${name} (${detail})…` : `Running: ${name}…`;
    if (this.state === 'tool_calling' && this.fadeTimer === null) {
      this.text.textContent = this.toolLabel;
    }
  }

  label(state) {
    return state === 'tool_calling' && this.toolLabel ? this.toolLabel : STATES[state][1];
  }

  show(state) {
    if (state === 'idle' || !STATES[state]) {
      this.clear(); // U-27/U-30: idle removes the line
      return;
    }
    if (this.state === 'tool_calling' && state !== 'tool_calling') this.toolLabel = null;
    this.state = state;
    const now = performance.now();
    const apply = () => {
      this.fadeTimer = null;
      this.node.dataset.state = state;
      this.icon.textContent = STATES[state][0];
      this.text.textContent = this.label(state); // read now, not when the fade began
      this.node.classList.remove('swapping');
    };
    clearTimeout(this.fadeTimer);
    this.fadeTimer = null;
    // U-29: cross-fade only when changes are slower than the animation; a burst of state
    // changes replaces the text at once instead of queueing animations behind it.
    const wasVisible = !this.node.hidden;
    if (wasVisible && now - this.lastSwap > SWAP_MS * 2) {
      this.node.classList.add('swapping');
      this.fadeTimer = setTimeout(apply, SWAP_MS / 2);
    } else {
      apply();
    }
    this.lastSwap = now;
    this.node.hidden = false;
  }

  // U-30/U-36: removed immediately (hidden, emptied); nothing of it is left in the transcript.
  clear() {
    clearTimeout(this.fadeTimer);
    this.fadeTimer = null;
    this.state = null;
    this.node.hidden = true;
    this.node.classList.remove('swapping');
    delete this.node.dataset.state;
    this.icon.textContent = '';
    this.text.textContent = '';
    this.toolLabel = null;
  }
}
