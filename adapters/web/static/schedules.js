// Scheduled prompts (issue 30 §5; docs/web.md, "Schedules"): the reader's schedules in the
// sidebar with Pause/Resume and Delete, and a form making one for the open session's node and
// agent (in the browser's time zone). The master keeps and runs them (docs/schedules.md); every
// route acts as the signed-in subject, so only the reader's own are listed or changed.

import { api, el } from './util.js';

function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

export class SchedulesPanel {
  constructor() {
    this.list = document.getElementById('schedules');
    this.form = document.getElementById('new-schedule');
    this.target = document.getElementById('schedule-target');
    this.error = this.form.querySelector('.form-error');
    this.session = null;
    this.form.addEventListener('submit', (e) => { e.preventDefault(); this.create(); });
  }

  // The open session (or null): the node and agent a new schedule runs on.
  setSession(info) {
    this.session = info;
    this.form.querySelector('button[type=submit]').disabled = !info;
    this.target.textContent = info
      ? `Runs on this session's node with ${info.agent_name}, in a new session each time.`
      : 'Open a session: a schedule runs on its node and agent.';
  }

  async load() {
    const res = await api('/api/schedules');
    if (!res.ok) {
      this.list.replaceChildren(el('li', { class: 'muted' },
        `${res.body?.error_code || res.status}: ${res.body?.message || ''}`));
      return;
    }
    const found = res.body?.schedules || [];
    this.list.replaceChildren(...found.map((s) => this.item(s)));
    if (!found.length) this.list.append(el('li', { class: 'muted' }, 'none yet'));
  }

  item(s) {
    const state = s.paused ? 'paused' : `next ${when(s.next_run_at)}`;
    const last = s.last_outcome ? ` · last: ${s.last_outcome}` : '';
    const missed = s.missed_runs ? ` · ${s.missed_runs} missed` : '';
    return el('li', { class: `schedule-item ${s.paused ? 'paused' : ''}`,
      dataset: { scheduleId: s.schedule_id } },
    el('div', { class: 'schedule-prompt' }, s.prompt),
    el('div', { class: 'muted schedule-when' },
      `${s.schedule} (${s.timezone || 'UTC'}) · ${s.agent_name} · ${state}${last}${missed}`),
    el('button', { type: 'button', class: s.paused ? 'resume' : 'pause',
      onclick: () => this.call(`${s.schedule_id}/${s.paused ? 'resume' : 'pause'}`, 'POST') },
    s.paused ? 'Resume' : 'Pause'),
    el('button', { type: 'button', class: 'delete',
      onclick: () => window.confirm('Delete this schedule?') && this.call(s.schedule_id, 'DELETE') },
    'Delete'));
  }

  async call(path, method) {
    const res = await api(`/api/schedules/${path}`, { method });
    this.error.hidden = res.ok;
    if (!res.ok) this.error.textContent = `${res.body?.error_code || res.status}: ${res.body?.message || ''}`;
    await this.load();
  }

  async create() {
    if (!this.session) return;
    const f = this.form.elements;
    const body = {
      node_id: this.session.node_id,
      agent_name: this.session.agent_name,
      schedule: f.schedule.value.trim(),
      prompt: f.prompt.value.trim(),
      timezone: Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC',
    };
    const res = await api('/api/schedules', { json: body });
    this.error.hidden = res.status === 201;
    if (res.status !== 201) {
      this.error.textContent = `${res.body?.error_code || res.status}: ${res.body?.message || ''}`;
      return;
    }
    this.form.reset();
    await this.load();
  }
}
