// The SPA's entry: sign-in state, the node and session lists, the new-session form, the usage
// chart, and which session is open (the URL hash #/session/<id>).

import { api, el } from './util.js';
import { SessionView } from './session.js';
import { renderUsage } from './usage.js';

const USAGE_DAYS = 14;
let view = null;
const $ = (id) => document.getElementById(id);

async function boot() {
  const me = await api('/api/me');
  if (me.status === 401) {
    $('signin-needed').hidden = false;
    return;
  }
  $('app').hidden = false;
  $('me').textContent = me.body?.name || me.body?.subject || '';
  $('logout').onclick = async () => {
    await api('/logout', { method: 'POST' });
    location.replace('/');
  };
  $('end-session').onclick = endSession;
  $('new-session').addEventListener('submit', newSession);
  $('new-session').elements.node_id.addEventListener('change', loadAgents);
  window.addEventListener('hashchange', route);
  await Promise.all([loadNodes(), loadSessions(), loadUsage()]);
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
  const sessions = res.body?.sessions || [];
  $('sessions').replaceChildren(...sessions.map((s) => el('li', {
    class: 'session-item', dataset: { sessionId: s.session_id }, tabindex: '0',
    onclick: () => { location.hash = `#/session/${s.session_id}`; },
    onkeydown: (e) => { if (e.key === 'Enter') location.hash = `#/session/${s.session_id}`; },
  }, `${s.agent_name || 'agent'} `, el('span', { class: 'muted' },
    `${s.status || ''} · ${String(s.session_id).slice(0, 8)}`))));
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
  view?.close();
  view = null;
  $('session').hidden = !id;
  $('empty-main').hidden = Boolean(id);
  for (const item of document.querySelectorAll('.session-item')) {
    item.classList.toggle('current', item.dataset.sessionId === id);
  }
  if (id) {
    $('session-title').textContent = `session ${id.slice(0, 8)}`;
    view = new SessionView(id);
    window.rawpView = view; // for the browser tests and the developer console
  }
}

boot();
