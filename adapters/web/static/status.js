// The one status line (U-24…U-31): a single fixed element directly above the input box,
// updated in place on agent.state.changed; never a bubble, never in the history.

const SWAP_MS = 150; // U-29: a 100–200 ms cross-fade
const STATES = {
  // U-27: per-state text and icon; the animation is CSS on [data-state].
  thinking: ['🧠', 'Thinking…'],
  tool_calling: ['🔧', 'Running tool…'],
  awaiting_input: ['⏸', 'Waiting for input'],
  error: ['⚠', 'Error occurred'],
};

export class StatusLine {
  constructor(node) {
    this.node = node;
    this.icon = node.querySelector('.status-icon');
    this.text = node.querySelector('.status-text');
    this.lastSwap = 0;
    this.fadeTimer = null;
    this.toolLabel = null;
  }

  // U-28: the tool being run, when a tool.invoke.request names it.
  setTool(name, detail) {
    this.toolLabel = detail ? `Running: ${name} (${detail})…` : `Running: ${name}…`;
    if (this.node.dataset.state === 'tool_calling') this.show('tool_calling');
  }

  show(state) {
    if (state === 'idle' || !STATES[state]) {
      this.clear(); // U-27/U-30: idle removes the line
      return;
    }
    const [icon, label] = STATES[state];
    const text = state === 'tool_calling' && this.toolLabel ? this.toolLabel : label;
    const now = performance.now();
    const apply = () => {
      this.node.dataset.state = state;
      this.icon.textContent = icon;
      this.text.textContent = text;
      this.node.classList.remove('swapping');
    };
    clearTimeout(this.fadeTimer);
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
    this.node.hidden = true;
    this.node.classList.remove('swapping');
    delete this.node.dataset.state;
    this.icon.textContent = '';
    this.text.textContent = '';
    this.toolLabel = null;
  }
}
