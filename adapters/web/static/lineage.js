// Resume and fork (issue 30 §2; docs/web.md, "Resume and fork"). An ended session offers
// Resume: a new session continues the agent's own conversation of it (`resume`), and the page
// switches to it with the earlier transcript kept above. Any session, live or ended, offers
// Fork: a new session continues a copy (`resume` + `fork`) and opens. Both are session starts
// on the same node with the same agent (POST /api/nodes/{id}/sessions); the master refuses a
// session that is not the reader's, and the client an agent that cannot (shown in words).
//
// The master lists live sessions only, so the page remembers the sessions it has listed
// (per signed-in subject, the newest LIMIT, in localStorage): one no longer listed is shown
// as ended, with Resume and Fork, until it ages out.

import { api, el } from './util.js';

const LIMIT = 20;

export class SessionBook {
  constructor() {
    this.key = null;
    this.entries = []; // {session_id, node_id, agent_name, created_at, ended}
  }

  setOwner(subject) {
    this.key = `rawp.sessions.${subject || ''}`;
    try { this.entries = JSON.parse(localStorage.getItem(this.key) || '[]'); } catch { this.entries = []; }
    if (!Array.isArray(this.entries)) this.entries = [];
  }

  // The live listing in; the list to show out: the live ones, then the remembered ended ones.
  // A session this page saw end is ended even if a listing taken a moment before still has it
  // (TERMINATED is final).
  update(listed) {
    const gone = new Set(this.entries.filter((e) => e.ended).map((e) => e.session_id));
    const live = listed.filter((s) => !gone.has(s.session_id));
    const ids = new Set(live.map((s) => s.session_id));
    const ended = this.entries.filter((e) => !ids.has(e.session_id))
      .map((e) => ({ ...e, ended: true }));
    const keep = (s) => ({ session_id: s.session_id, node_id: s.node_id,
      agent_name: s.agent_name, created_at: s.created_at, ended: Boolean(s.ended) });
    this.entries = [...live.map(keep), ...ended.map(keep)].slice(0, LIMIT);
    this.save();
    return [...live, ...ended.slice(0, Math.max(0, LIMIT - live.length))];
  }

  add(session) {
    this.entries = [{ ...session, ended: false },
      ...this.entries.filter((e) => e.session_id !== session.session_id)].slice(0, LIMIT);
    this.save();
  }

  markEnded(id) {
    const entry = this.get(id);
    if (entry) entry.ended = true;
    this.save();
  }

  get(id) {
    return this.entries.find((e) => e.session_id === id) || null;
  }

  save() {
    if (this.key) localStorage.setItem(this.key, JSON.stringify(this.entries));
  }
}

// Start the new session; `open(id, info)` switches to it. The refusal's words, or null.
export async function startFrom(book, info, fork, open) {
  const body = { agent_name: info.agent_name, resume: info.session_id };
  if (fork) body.fork = true;
  const res = await api(`/api/nodes/${encodeURIComponent(info.node_id)}/sessions`, { json: body });
  if (res.status !== 201) {
    return `⚠ ${fork ? 'Fork' : 'Resume'} refused: ${res.body?.error_code || res.status}: `
      + `${res.body?.message || ''}`;
  }
  const made = { session_id: res.body.session_id, node_id: info.node_id,
    agent_name: info.agent_name, created_at: new Date().toISOString() };
  book.add(made);
  await open(made.session_id, { from: info.session_id, fork });
  return null;
}

// The buttons beside an entry of the session list.
export function sessionActions(s, act) {
  const button = (label, fork) => el('button', {
    type: 'button', class: fork ? 'fork' : 'resume',
    onclick: (e) => { e.stopPropagation(); act(s, fork); },
  }, label);
  return el('span', { class: 'session-actions' },
    s.ended ? button('Resume', false) : null, button('Fork', true));
}

// The open session's Resume and Fork buttons in the header.
export class LineageButtons {
  constructor(view, info, act) {
    this.view = view;
    this.info = info;
    this.resume = document.getElementById('resume');
    this.fork = document.getElementById('fork');
    this.resume.hidden = true;
    this.fork.hidden = !info;
    if (!info) return;
    this.resume.onclick = () => act(info, false);
    this.fork.onclick = () => act(info, true);
    if (info.ended) this.ended();
    this.onConn = (e) => {
      if (e.detail.sessionId === view.sessionId && e.detail.state === 'ended') this.ended();
    };
    document.addEventListener('rawp:conn', this.onConn);
  }

  ended() {
    this.info.ended = true;
    this.resume.hidden = false;
  }

  close() {
    if (this.onConn) document.removeEventListener('rawp:conn', this.onConn);
  }
}

// What stays above a resumed or forked session: the transcript it came from.
export function earlierTranscript(content, from, fork) {
  const earlier = el('div', { class: 'earlier', dataset: { sessionId: from } },
    ...content.childNodes);
  const said = fork
    ? `🍴 Forked from session ${from.slice(0, 8)}: a copy of that conversation goes on here.`
    : `🔁 Resumed session ${from.slice(0, 8)}: the agent goes on with that conversation.`;
  return [earlier, el('div', { class: 'notice lineage' }, said)];
}
