// The input box: sending prompts, the `/` command popup (G-CMD-01…19, from the cached
// agent.commands.publish list) and `@` file search (control.file.search →
// session.file.candidates, DPS §16.1). The popup sits in the page's column directly above the
// input box, so it pushes the transcript up instead of covering it (G-CMD-04/05).

import { el, uuid4 } from './util.js';

const SEARCH_DEBOUNCE_MS = 60;

// DPS §16.2.2: typed text is escaped, a picked file becomes a token.
function escapeTyped(text) {
  return text.replaceAll('\\', '\\\\').replaceAll('<@', '\\<@');
}

export class Composer {
  constructor(view) {
    this.view = view;
    this.input = document.getElementById('composer');
    this.form = document.getElementById('composer-form');
    this.popup = document.getElementById('popup');
    this.commands = []; // G-CMD-07: cached at session start, shown without a round trip
    this.searchEnabled = true;
    this.files = []; // picked files: {display_path, path}
    this.mode = null; // 'command' | 'file'
    this.items = [];
    this.selected = 0;
    this.query = null; // the running file search: {query_id, text}
    this.input.value = '';
    this.listeners = [
      [this.input, 'input', () => this.update()],
      [this.input, 'click', () => this.update()],
      [this.input, 'keydown', (e) => this.keydown(e)],
      [this.form, 'submit', (e) => { e.preventDefault(); this.submit(); }],
    ];
    for (const [node, type, fn] of this.listeners) node.addEventListener(type, fn);
    this.hide();
  }

  close() {
    for (const [node, type, fn] of this.listeners) node.removeEventListener(type, fn);
    clearTimeout(this.searchTimer);
    this.hide();
  }

  setCommands(commands) {
    this.commands = Array.isArray(commands) ? commands : [];
    if (this.mode === 'command') this.update();
  }

  setCapabilities(p) {
    if (p.file_reference && p.file_reference.search === false) this.searchEnabled = false;
  }

  // The word being typed at the caret, when it starts with `/` or `@` at the start of a line
  // or after whitespace (G-CMD-02); a slash inside a word (a URL, a path) opens nothing
  // (G-CMD-03).
  trigger() {
    const caret = this.input.selectionStart;
    const before = this.input.value.slice(0, caret);
    const m = before.match(/(^|\s)([/@])([^\s/@]*)$/);
    if (!m) return null;
    return { char: m[2], text: m[3], start: caret - m[3].length - 1, end: caret };
  }

  update() {
    const t = this.trigger();
    if (!t) { this.hide(); return; }
    if (t.char === '/') this.showCommands(t);
    else if (this.searchEnabled) this.search(t);
  }

  showCommands(t) {
    this.mode = 'command';
    this.token = t;
    // G-CMD-14: prefix match on the name; G-CMD-16: grouped by category, then alphabetical.
    const prefix = t.text.toLowerCase();
    const found = this.commands
      .filter((c) => String(c.name).toLowerCase().startsWith(prefix))
      .sort((a, b) => (a.category ? 0 : 1) - (b.category ? 0 : 1)
        || String(a.category || '').localeCompare(String(b.category || ''))
        || String(a.name).localeCompare(String(b.name)));
    this.render(found.map((c) => ({
      label: `/${c.name}`, detail: c.description || '', badge: c.category,
      insert: `/${c.name} `,
    })), 'No matching commands'); // G-CMD-17: the popup stays open with a notice
  }

  search(t) {
    this.mode = 'file';
    this.token = t;
    if (this.query && this.query.text === t.text) return;
    clearTimeout(this.searchTimer);
    this.searchTimer = setTimeout(() => {
      if (this.query) this.view.send('control.file.search.cancel', { query_id: this.query.query_id });
      const query_id = uuid4();
      this.query = { query_id, text: t.text };
      this.view.send('control.file.search', {
        query_id, query: t.text, scope: 'workspace', max_results: 20,
      });
    }, SEARCH_DEBOUNCE_MS);
    if (!this.items.length) this.render([], 'Searching…');
  }

  candidates(f) {
    const p = f.payload || {};
    if (this.mode !== 'file' || !this.query || p.query_id !== this.query.query_id) return;
    const list = Array.isArray(p.candidates) ? p.candidates : [];
    this.render(list.map((c) => ({
      label: c.name || c.path, detail: c.directory || '', file: c.path, insert: `@${c.path} `,
    })), 'No matching files');
  }

  render(items, emptyText) {
    this.items = items;
    this.selected = 0; // G-CMD-15: focus back on the first item whenever the list changes
    const nodes = items.map((item, i) => {
      // G-CMD-08/13: the name fixed at the left in monospace and bold, the description muted
      // and smaller beside it. G-CMD-10/11: each item padded 10 px top and bottom with a
      // 1 px divider (app.css .popup-item).
      const node = el('div', {
        class: 'popup-item', role: 'option', dataset: { index: String(i) },
        onmousedown: (e) => { e.preventDefault(); this.choose(i); },
        onmouseenter: () => this.select(i),
      }, el('span', { class: 'popup-name' }, item.label),
      item.badge ? el('span', { class: 'popup-badge' }, item.badge) : null,
      el('span', { class: 'popup-detail' }, item.detail));
      return node;
    });
    if (!nodes.length) nodes.push(el('div', { class: 'popup-empty' }, emptyText));
    this.popup.replaceChildren(...nodes);
    this.popup.hidden = false;
    this.popup.dataset.mode = this.mode;
    this.select(0);
  }

  // G-CMD-18: the selected row is highlighted across its whole width.
  select(i) {
    this.selected = i;
    this.popup.querySelectorAll('.popup-item').forEach((node, j) => {
      node.classList.toggle('selected', j === i);
      node.setAttribute('aria-selected', String(j === i));
    });
  }

  hide() {
    this.mode = null;
    this.items = [];
    this.popup.hidden = true;
    this.popup.replaceChildren();
    if (this.query) {
      this.view.send('control.file.search.cancel', { query_id: this.query.query_id });
      this.query = null;
    }
  }

  choose(i) {
    const item = this.items[i];
    if (!item || !this.token) return;
    const v = this.input.value;
    this.input.value = v.slice(0, this.token.start) + item.insert + v.slice(this.token.end);
    const caret = this.token.start + item.insert.length;
    this.input.setSelectionRange(caret, caret);
    if (item.file) this.files.push({ path: item.file, display_path: item.file });
    if (this.query) this.query = null; // answered: nothing to cancel
    this.hide();
    this.input.focus();
  }

  keydown(e) {
    if (!this.popup.hidden && this.items.length) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        const n = this.items.length;
        this.select((this.selected + (e.key === 'ArrowDown' ? 1 : n - 1)) % n);
        return;
      }
      if (e.key === 'Enter' || e.key === 'Tab') { e.preventDefault(); this.choose(this.selected); return; }
    }
    if (e.key === 'Escape' && !this.popup.hidden) { e.preventDefault(); this.hide(); return; }
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); this.submit(); }
  }

  // control.prompt.request: typed text escaped, each picked `@path` a <@file:ref|path> token.
  compose(text) {
    const refs = [];
    let out = '';
    let rest = text;
    for (;;) {
      let best = null;
      for (const f of this.files) {
        const at = rest.indexOf(`@${f.display_path}`);
        if (at >= 0 && (best === null || at < best.at)) best = { at, f };
      }
      if (!best) break;
      out += escapeTyped(rest.slice(0, best.at));
      let ref = refs.find((r) => r.path === best.f.path);
      if (!ref) {
        ref = { ref_id: `ref_${refs.length}`, path: best.f.path, display_path: best.f.display_path };
        refs.push(ref);
      }
      out += `<@file:${ref.ref_id}|${ref.display_path}>`;
      rest = rest.slice(best.at + best.f.display_path.length + 1);
    }
    out += escapeTyped(rest);
    return { prompt_text: out, file_references: refs };
  }

  submit() {
    const text = this.input.value;
    if (!text.trim()) return;
    const { prompt_text, file_references } = this.compose(text);
    const sent = this.view.send('control.prompt.request', {
      prompt_text,
      input_type: text.trimStart().startsWith('/') ? 'slash_command' : 'text',
      file_references,
      context_files: [],
    });
    this.view.userBubble(text, sent.message_id);
    this.input.value = '';
    this.files = [];
    this.hide();
  }
}
