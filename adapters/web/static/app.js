// The SPA's entry: sign-in state, the node and session lists, the new-session form, the usage
// chart, and which session is open (the URL hash #/session/<id>).

import { api, el } from './util.js';
import { SessionView } from './session.js';
import { renderUsage } from './usage.js';
import { SessionBook, sessionActions, startFrom } from './lineage.js';
import { SchedulesPanel } from './schedules.js';
import { openExtras } from './extras.js';

const USAGE_DAYS = 14;
let view = null;
let extras = null; // issue 30's parts of the open session (extras.js)
let earlier = null; // the transcript a resumed or forked session keeps above (lineage.js)
const book = new SessionBook(); // sessions listed before: the ended ones offer Resume
const schedules = new SchedulesPanel();
const $ = (id) => document.getElementById(id);

async function boot() {
  const me = await api('/api/me');
  if (me.status === 401) {
    $('signin-needed').hidden = false;
    return;
  }
  $('app').hidden = false;
  $('me').textContent = me.body?.name || me.body?.subject || '';
  book.setOwner(me.body?.subject);
  document.addEventListener('rawp:conn', (e) => {
    if (e.detail.state !== 'ended') return;
    book.markEnded(e.detail.sessionId); // issue 30 §2: it offers Resume from now on
    loadSessions();
  });
  $('logout').onclick = async () => {
    await api('/logout', { method: 'POST' });
    location.replace('/');
  };
  $('end-session').onclick = endSession;
  $('new-session').addEventListener('submit', newSession);
  $('new-session').elements.node_id.addEventListener('change', loadAgents);
  window.addEventListener('hashchange', route);
  await Promise.all([loadNodes(), loadSessions(), loadUsage(), schedules.load()]);
  route();
}

async function loadNodes() {
  const res = await api('/api/nodes');
  const nodes = res.body?.nodes || [];
  $('nodes').replaceChildren(...nodes.map((n) => el('li', {
    class: `node-item ${n.status || ''}`, dataset: { nodeId: n.node_id },
  }, el('span', { class: 'dot', 'aria-hidden': 'true' }), `${n.device_name || n.node_id} `,
  el('span', { class: 'muted' }, n.status || ''))));
  const select = $('new-session').elements.node_id;
  select.replaceChildren(...nodes.map((n) => el('option', { value: n.node_id },
    n.device_name || n.node_id)));
  await loadAgents();
}

async function loadAgents() {
  const form = $('new-session');
  const nodeId = form.elements.node_id.value;
  const select = form.elements.agent_name;
  if (!nodeId) { select.replaceChildren(); return; }
  const res = await api(`/api/nodes/${encodeURIComponent(nodeId)}/agents`);
  const agents = res.body?.agents || [];
  select.replaceChildren(...agents.map((a) => el('option', { value: a.name }, a.name)));
}

async function loadSessions() {
  const res = await api('/api/sessions');
  if (!res.ok) return;
  const sessions = book.update(res.body?.sessions || []);
  $('sessions').replaceChildren(...sessions.map((s) => el('li', {
    class: `session-item${s.ended ? ' ended' : ''}`, dataset: { sessionId: s.session_id }, tabindex: '0',
    onclick: () => { location.hash = `#/session/${s.session_id}`; },
    onkeydown: (e) => { if (e.key === 'Enter') location.hash = `#/session/${s.session_id}`; },
  }, `${s.agent_name || 'agent'} `, el('span', { class: 'muted' },
    `${s.ended ? 'ended' : s.status || ''} · ${String(s.session_id).slice(0, 8)}`),
  sessionActions(s, fromList))));
  markCurrent(view?.sessionId);
}

// Issue 30 §2: Resume or Fork pressed in the list or the header; the new session opens.
async function fromList(info, fork) {
  const said = await startFrom(book, info, fork, openFrom);
  $('sessions-error').hidden = !said;
  $('sessions-error').textContent = said || '';
}

async function fromHeader(info, fork) {
  const said = await startFrom(book, info, fork, openFrom);
  if (said) view?.notice(said, 'error');
}

async function openFrom(id, lineage) {
  // The open session's transcript stays above the new one when it is the one continued.
  if (view && view.sessionId === lineage.from) earlier = { ...lineage, content: view.content };
  await loadSessions();
  location.hash = `#/session/${id}`;
}

async function loadUsage() {
  const res = await api(`/api/usage?days=${USAGE_DAYS}`);
  if (res.ok) renderUsage($('usage'), res.body?.days, USAGE_DAYS);
}

async function newSession(event) {
  event.preventDefault();
  const form = event.target;
  const error = form.querySelector('.form-error');
  error.hidden = true;
  const body = { agent_name: form.elements.agent_name.value };
  const ws = form.elements.workspace_path.value.trim();
  if (ws) body.workspace_path = ws;
  if (form.elements.worktree.checked) body.worktree = true; // issue 30 §3
  const res = await api(`/api/nodes/${encodeURIComponent(form.elements.node_id.value)}/sessions`,
    { json: body });
  if (res.status !== 201) {
    error.textContent = `${res.body?.error_code || res.status}: ${res.body?.message || ''}`;
    error.hidden = false;
    return;
  }
  await loadSessions();
  location.hash = `#/session/${res.body.session_id}`;
}

async function endSession() {
  if (!view) return;
  const id = view.sessionId;
  await api(`/api/sessions/${encodeURIComponent(id)}`, { method: 'DELETE' });
  location.hash = '';
  await loadSessions();
}

function route() {
  const m = location.hash.match(/^#\/session\/([\w-]+)$/);
  const id = m ? m[1] : null;
  if (view && view.sessionId === id) return;
  const kept = earlier?.content ? earlier : null;
  const moved = kept ? [...kept.content.childNodes] : [];
  earlier = null;
  extras?.close();
  extras = null;
  view?.close();
  view = null;
  $('session').hidden = !id;
  $('empty-main').hidden = Boolean(id);
  markCurrent(id);
  schedules.setSession(id ? book.get(id) : null);
  if (id) {
    $('session-title').textContent = `session ${id.slice(0, 8)}`;
    view = new SessionView(id);
    window.rawpView = view; // for the browser tests and the developer console
    extras = openExtras(view, book.get(id), fromHeader, kept && { ...kept, nodes: moved });
  }
}

function markCurrent(id) {
  for (const item of document.querySelectorAll('.session-item')) {
    item.classList.toggle('current', item.dataset.sessionId === id);
  }
}

boot();
