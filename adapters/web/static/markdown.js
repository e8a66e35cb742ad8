// A small markdown subset rendered into DOM nodes (paragraphs, headings, code fences, inline
// code, bold, italic, lists). Text is only ever set with textContent, so agent output cannot
// inject markup. The renderer is re-run on the whole block on every delta: it must accept any
// prefix of a document, because streaming cuts markdown anywhere (U-10).

import { el } from './util.js';

const FENCE = /^\s*(```|~~~)\s*([\w+.-]*)\s*$/;
const BULLET = /^\s*[-*+]\s+(.*)$/;
const ORDERED = /^\s*\d+[.)]\s+(.*)$/;
const HEADING = /^(#{1,6})\s+(.*)$/;

export function renderMarkdown(text, target) {
  const out = document.createDocumentFragment();
  const lines = text.split('\n');
  let i = 0;
  let para = [];
  const flushPara = () => {
    if (para.length) out.append(el('p', {}, ...inline(para.join('\n'))));
    para = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(FENCE);
    if (fence) {
      flushPara();
      const body = [];
      i += 1;
      let closed = false;
      while (i < lines.length) {
        if (lines[i].trim() === fence[1]) { closed = true; i += 1; break; }
        body.push(lines[i]);
        i += 1;
      }
      // U-09: a code block reserves a minimum height as soon as its opening fence arrives
      // (CSS .code-block min-height) and grows as lines come. U-10: an unclosed fence is
      // rendered as an open code block instead of leaking ``` into the text.
      const pre = el('pre', { class: closed ? 'code-block' : 'code-block open' },
        el('code', { 'data-lang': fence[2] || null }, body.join('\n')));
      out.append(pre);
      continue;
    }
    if (!line.trim()) { flushPara(); i += 1; continue; }
    const heading = line.match(HEADING);
    if (heading) {
      flushPara();
      out.append(el(`h${Math.min(heading[1].length + 2, 6)}`, {}, ...inline(heading[2])));
      i += 1;
      continue;
    }
    if (BULLET.test(line) || ORDERED.test(line)) {
      flushPara();
      const ordered = !BULLET.test(line);
      const pattern = ordered ? ORDERED : BULLET;
      const list = el(ordered ? 'ol' : 'ul');
      while (i < lines.length && pattern.test(lines[i])) {
        list.append(el('li', {}, ...inline(lines[i].match(pattern)[1])));
        i += 1;
      }
      out.append(list);
      continue;
    }
    para.push(line);
    i += 1;
  }
  flushPara();
  target.replaceChildren(out);
}

// CommonMark's flanking rules, in short: an opening marker is followed by a non-space and a
// closing one preceded by one; `_` and `__` neither open nor close inside a word. So
// `a __x=1 … b __y=2` and `snake_case_name` keep their underscores.
const SPACE = /\s/;
const WORD = /[\p{L}\p{N}]/u;

function canOpen(text, i, marker) {
  const next = text[i + marker.length];
  if (next === undefined || SPACE.test(next)) return false;
  return marker[0] !== '_' || i === 0 || !WORD.test(text[i - 1]);
}

function closer(text, from, marker) {
  for (let j = text.indexOf(marker, from); j >= 0; j = text.indexOf(marker, j + 1)) {
    if (SPACE.test(text[j - 1])) continue;
    const after = text[j + marker.length];
    if (marker[0] === '_' && after !== undefined && WORD.test(after)) continue;
    // A single marker does not close on half of a double one (`*a **` stays literal).
    if (marker.length === 1 && (after === marker || text[j - 1] === marker)) continue;
    return j;
  }
  return -1;
}

// Inline spans: `code`, **bold**, *italic* / _italic_. A marker counts only when its closing
// partner is already there; an unclosed `**` or backtick during streaming is shown as the
// literal characters until the rest arrives (U-10), so nothing below it changes style.
export function inline(text) {
  const nodes = [];
  let buf = '';
  let i = 0;
  const flush = () => { if (buf) nodes.push(document.createTextNode(buf)); buf = ''; };
  while (i < text.length) {
    const rest = text.slice(i);
    if (rest[0] === '`') {
      const end = text.indexOf('`', i + 1);
      if (end > i + 1) {
        flush();
        nodes.push(el('code', {}, text.slice(i + 1, end)));
        i = end + 1;
        continue;
      }
    } else if (rest.startsWith('**') || rest.startsWith('__')) {
      const marker = rest.slice(0, 2);
      const end = canOpen(text, i, marker) ? closer(text, i + 2, marker) : -1;
      if (end > i + 2) {
        flush();
        nodes.push(el('strong', {}, ...inline(text.slice(i + 2, end))));
        i = end + 2;
        continue;
      }
      buf += marker; // a double marker that does not pair stays whole, never half an `*`
      i += 2;
      continue;
    } else if ((rest[0] === '*' || rest[0] === '_') && canOpen(text, i, rest[0])) {
      const end = closer(text, i + 1, rest[0]);
      if (end > i + 1) {
        flush();
        nodes.push(el('em', {}, ...inline(text.slice(i + 1, end))));
        i = end + 1;
        continue;
      }
    }
    buf += text[i];
    i += 1;
  }
  flush();
  return nodes;
}
