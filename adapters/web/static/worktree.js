// The session's git worktree (issue 30 §3; docs/web.md, "Worktrees"): Diff, Merge and Discard in
// the header while the session has one. Whether it has one is asked when the session opens:
// GET /api/sessions/{id}/worktree answers the diff, or 404 NO_WORKTREE (no buttons then). The
// worktree outlives its session, so an ended session keeps the buttons. Merge and Discard ask
// first, and their outcome — or the refusal, in words — stays in the panel under the header.

import { api } from './util.js';

// What a refusal means for the reader, beside the master's own message.
const REFUSALS = {
  MERGE_CONFLICT: 'The branch does not merge cleanly: nothing was merged and the worktree stays '
    + '(look at the diff, or discard it).',
  MERGE_REFUSED: 'The workspace is no longer on the branch the session started from: nothing '
    + 'was merged.',
  NO_WORKTREE: 'This session has no worktree (any more): it was merged or discarded, or the '
    + 'session was started without one.',
};

export function refusalText(res) {
  const code = res.body?.error_code || `HTTP ${res.status}`;
  const words = REFUSALS[code] ? `${REFUSALS[code]} ` : '';
  return `❌ ${words}(${code}: ${res.body?.message || ''})`;
}

export class WorktreeControls {
  constructor(sessionId) {
    this.sessionId = sessionId;
    this.url = `/api/sessions/${encodeURIComponent(sessionId)}/worktree`;
    this.group = document.getElementById('worktree');
    this.panel = document.getElementById('worktree-panel');
    this.result = document.getElementById('worktree-result');
    this.diffBox = document.getElementById('worktree-diff');
    this.group.hidden = true;
    delete this.group.dataset.worktree;
    this.panel.hidden = true;
    this.closed = false;
    document.getElementById('wt-diff').onclick = () => this.diff();
    document.getElementById('wt-merge').onclick = () => this.act('merge');
    document.getElementById('wt-discard').onclick = () => this.act('discard');
    document.getElementById('worktree-close').onclick = () => { this.panel.hidden = true; };
    this.probe();
  }

  close() {
    this.closed = true;
  }

  async probe() {
    const res = await api(this.url);
    if (this.closed) return;
    this.group.hidden = !res.ok;
    // What the probe found (for the tests and the developer console): yes, or why not.
    this.group.dataset.worktree = res.ok ? 'yes' : res.body?.error_code || String(res.status);
  }

  show(text, outcome) {
    this.panel.hidden = false;
    this.result.textContent = text;
    this.result.dataset.outcome = outcome;
  }

  async diff() {
    const res = await api(this.url);
    if (this.closed) return;
    if (!res.ok) {
      this.diffBox.hidden = true;
      this.show(refusalText(res), 'error');
      return;
    }
    const b = res.body || {};
    const text = String(b.diff || '');
    this.diffBox.hidden = !text.trim();
    this.diffBox.firstElementChild.textContent = text;
    const cut = b.truncated ? ' (cut by the machine: the diff is over 1 MB)' : '';
    this.show(text.trim() ? `Diff of ${b.branch} against ${b.base_branch}${cut}:`
      : `No changes on ${b.branch} yet.`, 'diff');
  }

  async act(action) {
    const question = action === 'merge'
      ? 'Merge this worktree into its branch? The session ends first.'
      : 'Discard this worktree and its branch? Its changes are lost; the session ends first.';
    if (!window.confirm(question)) return;
    const res = await api(this.url, { json: { action } });
    if (this.closed) return;
    this.diffBox.hidden = true;
    if (!res.ok) {
      this.show(refusalText(res), 'error');
      return;
    }
    const b = res.body || {};
    this.group.hidden = true; // merged or discarded: nothing is left to act on
    this.show(action === 'merge'
      ? `✅ Merged ${b.branch} into ${b.into}; the worktree and its branch are removed and the `
        + 'session has ended.'
      : `🗑 Discarded the worktree and branch ${b.branch}; the session has ended.`, action);
  }
}
