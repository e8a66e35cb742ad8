// Tool cards, diffs, task lists and approval prompts: the structured parts of a transcript.

import { el, withoutName } from './util.js';

// A tool card: header (tool and title) that expands to the output; tool.invoke.stream output
// is shown live while the tool runs.
export class ToolCard {
  constructor(invocationId, toolName, title) {
    this.output = '';
    this.head = el('button', { class: 'tool-head', type: 'button', 'aria-expanded': 'true' });
    this.status = el('span', { class: 'tool-status' }, 'running');
    this.name = el('span', { class: 'tool-name' }, toolName || 'tool');
    this.title = el('span', { class: 'tool-title' }, cardTitle(title, toolName));
    this.head.append(this.name, this.title, this.status);
    this.body = el('div', { class: 'tool-body' });
    this.live = el('pre', { class: 'tool-output' });
    this.body.append(this.live);
    this.node = el('div', { class: 'tool-card open running', dataset: { invocationId } },
      this.head, this.body);
    this.head.addEventListener('click', () => {
      const open = this.node.classList.toggle('open');
      this.head.setAttribute('aria-expanded', String(open));
    });
  }

  setRequest(toolName, title) {
    if (toolName) this.name.textContent = toolName;
    if (title) this.title.textContent = cardTitle(title, this.name.textContent);
  }

  stream({ text = '', mode = 'append', stream }) {
    this.output = mode === 'replace' ? text : this.output + text;
    this.live.textContent = this.output;
    this.live.dataset.stream = stream || '';
  }

  result(payload) {
    const { status, output_type: type, output, error, duration_ms: ms } = payload;
    this.node.classList.remove('running');
    this.node.classList.add(`status-${status}`);
    this.status.textContent = ms != null ? `${status} · ${ms} ms` : status;
    const parts = [];
    if (type === 'diff' && typeof output === 'string') parts.push(renderDiff(output));
    else if (type === 'structured' && output && Array.isArray(output.tasks)) {
      parts.push(renderTasks(output.tasks));
    } else if (type === 'file_list' && Array.isArray(output)) {
      parts.push(el('ul', { class: 'file-list' }, ...output.map((f) => el('li', {},
        typeof f === 'string' ? f : f.path || JSON.stringify(f)))));
    } else if (type !== 'empty' && output != null && output !== '') {
      const text = typeof output === 'string' ? output : JSON.stringify(output, null, 2);
      parts.push(el('pre', { class: 'tool-output' }, text));
    }
    if (error) parts.push(el('p', { class: 'tool-error' }, error.message || error.code || 'error'));
    // The live output stays when the result adds nothing to show.
    if (parts.length) this.body.replaceChildren(...parts);
  }
}

// The header shows the tool's name, then what the call works on: a title that starts with the
// name (`Edit src/app.py`, as agents title calls) loses it, so the card does not read
// `Edit Edit src/app.py`.
function cardTitle(title, toolName) {
  const text = typeof title === 'string' ? title.trim() : '';
  return text ? (withoutName(text, toolName) || '') : '';
}

// G-DIFF-08: a unified diff as a table with two line-number columns: deleted lines carry only
// the old number, added lines only the new one, context lines both.
export function renderDiff(text) {
  const table = el('table', { class: 'diff' });
  const body = el('tbody');
  table.append(body);
  let oldNo = 0;
  let newNo = 0;
  for (const line of text.replace(/\n$/, '').split('\n')) {
    const hunk = line.match(/^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$/);
    if (hunk) {
      oldNo = Number(hunk[1]);
      newNo = Number(hunk[2]);
      body.append(el('tr', { class: 'hunk' }, el('td', { class: 'ln' }), el('td', { class: 'ln' }),
        el('td', { class: 'code' }, line)));
      continue;
    }
    if (line.startsWith('--- ') || line.startsWith('+++ ') || line.startsWith('diff ')
      || line.startsWith('index ')) {
      body.append(el('tr', { class: 'file' }, el('td', { class: 'ln' }), el('td', { class: 'ln' }),
        el('td', { class: 'code' }, line)));
      continue;
    }
    let kind = 'ctx';
    let o = '';
    let n = '';
    if (line.startsWith('-')) { kind = 'del'; o = oldNo++; }
    else if (line.startsWith('+')) { kind = 'add'; n = newNo++; }
    else if (line.startsWith('\\')) { kind = 'note'; }
    else { o = oldNo++; n = newNo++; }
    body.append(el('tr', { class: kind },
      el('td', { class: 'ln ln-old' }, String(o)),
      el('td', { class: 'ln ln-new' }, String(n)),
      el('td', { class: 'code' }, line)));
  }
  return table;
}

const TASK_ICONS = { pending: '○', in_progress: '◐', completed: '●', cancelled: '⊘' };

// Task lists (DPS §8 as structured tool output) and plans (agent.plan.updated, DPS §9).
export function renderTasks(tasks) {
  return el('ul', { class: 'tasks' }, ...tasks.map((t) => el('li', {
    class: `task ${t.status || 'pending'}`,
    dataset: { status: t.status || 'pending' },
  }, el('span', { class: 'task-icon', 'aria-hidden': 'true' }, TASK_ICONS[t.status] || '○'),
  el('span', { class: 'task-text' }, t.content || ''))));
}

// An interaction request: the options as buttons (U-02: animated, interactive). Clicking one
// sends control.interaction.response with that option_id; the prompt then shows the answer.
export function renderApproval(frame, send) {
  const p = frame.payload || {};
  const node = el('div', { class: 'approval', dataset: { interactionId: p.interaction_id } },
    el('p', { class: 'approval-prompt' }, p.prompt || 'The agent asks:'));
  const answer = (payload, label) => {
    send('control.interaction.response', { interaction_id: p.interaction_id, ...payload },
      { parent_id: frame.message_id });
    node.classList.add('answered');
    for (const b of node.querySelectorAll('button, input')) b.disabled = true;
    node.append(el('p', { class: 'approval-answer' }, `→ ${label}`));
  };
  const options = Array.isArray(p.options) ? p.options : [];
  const row = el('div', { class: 'approval-options' });
  for (const o of options) {
    row.append(el('button', {
      type: 'button', class: `option ${o.kind || ''}`, dataset: { optionId: o.option_id },
      onclick: () => answer({ option_id: o.option_id }, o.label || o.option_id),
    }, o.label || o.option_id));
  }
  if (p.kind === 'input') {
    const input = el('input', { class: 'approval-input', type: 'text' });
    row.append(input, el('button', { type: 'button', class: 'option',
      onclick: () => answer({ text: input.value }, input.value) }, 'Send'));
  }
  node.append(row);
  return node;
}

// The agent moved on without this page's answer: another edge (Slack, Discord, a second tab)
// answered, or the turn ended. The prompt closes so it cannot be answered twice.
export function closeApproval(node, why) {
  if (node.classList.contains('answered')) return;
  node.classList.add('answered', 'closed');
  for (const b of node.querySelectorAll('button, input')) b.disabled = true;
  node.append(el('p', { class: 'approval-answer' }, why));
}

// agent.file: base64 chunks joined per file_id; at `final` a download link (and the image
// itself for raster images; an <img> never runs script).
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

export class FileAssembler {
  constructor() { this.parts = new Map(); }

  add(p) {
    const parts = this.parts.get(p.file_id) || [];
    parts[p.chunk_index ?? parts.length] = p.data || '';
    this.parts.set(p.file_id, parts);
    if (!p.final) return null;
    this.parts.delete(p.file_id);
    const bytes = parts.map((b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
    const blob = new Blob(bytes, { type: p.mime_type || 'application/octet-stream' });
    const url = URL.createObjectURL(blob);
    const name = p.name || 'file';
    return el('div', { class: 'file-card', dataset: { fileId: p.file_id } },
      IMAGE_TYPES.has(p.mime_type) ? el('img', { src: url, alt: name }) : null,
      el('a', { href: url, download: name }, `⬇ ${name}`),
      el('span', { class: 'muted' }, ` ${p.size_bytes ?? blob.size} bytes`));
  }
}
