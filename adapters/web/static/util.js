// Small DOM and protocol helpers shared by the SPA's modules. Untrusted text only ever reaches
// the page through textContent / createTextNode: nothing here builds HTML from strings.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// crypto.randomUUID exists only in secure contexts; a LAN address over http is not one.
export function uuid4() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// DPS §2 envelope for a frame the browser sends (docs/protocol.md, "Envelope").
export function frame(type, sessionId, payload, extra = {}) {
  return {
    v: 'rawp-dps-1.0',
    type,
    message_id: uuid4(),
    timestamp: new Date().toISOString(),
    session_id: sessionId,
    payload,
    ...extra,
  };
}

export async function api(path, options = {}) {
  const init = { credentials: 'same-origin', ...options };
  if (options.json !== undefined) {
    init.method = init.method || 'POST';
    init.headers = { 'Content-Type': 'application/json' };
    init.body = JSON.stringify(options.json);
  }
  const res = await fetch(path, init);
  let body = null;
  if (res.status !== 204) {
    try { body = await res.json(); } catch { body = null; }
  }
  return { status: res.status, ok: res.ok, body };
}

// `detail` without a leading tool name: agents title a call `Edit src/app.py`, and neither the
// status line nor a tool card may read `Edit (Edit src/app.py)` (U-28; gateway/rendering/views.py
// does the same for chat). Null when nothing but the name is left.
export function withoutName(detail, name) {
  if (!name || detail.slice(0, name.length).toLowerCase() !== name.toLowerCase()) return detail;
  const rest = detail.slice(name.length);
  if (rest && !/^[\s:\-–—]/.test(rest)) return detail; // `Editor …` is not the tool `Edit`
  return rest.replace(/^[\s:\-–—]+/, '') || null;
}
