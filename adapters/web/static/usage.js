// The usage chart (#usage): tokens per day as inline SVG bars, stacked per node, with the cost
// in each bar's tooltip. Built from /api/usage (the master's metrics); no chart library.

const NS = 'http://www.w3.org/2000/svg';
const COLOURS = ['#6b7fd7', '#d7a76b', '#6bd7a7', '#d76b9a', '#9a6bd7', '#7fb0c9'];

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const isoDay = (ms) => new Date(ms).toISOString().slice(0, 10);

// One slot per day of the span asked for, ending today (UTC) or at the newest day in the
// answer if that is later: a day without figures keeps its empty slot, so one day of usage
// is one narrow bar at its place, not the whole width (issue 28 §2).
export function daySlots(dates, span, now = Date.now()) {
  const newest = dates.length && dates[dates.length - 1] > isoDay(now)
    ? dates[dates.length - 1] : isoDay(now);
  const end = Date.parse(`${newest}T00:00:00Z`);
  return Array.from({ length: span }, (_, k) => isoDay(end - (span - 1 - k) * DAY_MS));
}

export function renderUsage(target, days, span = 14) {
  const given = Array.isArray(days) ? days : [];
  const slots = daySlots([...new Set(given.map((r) => r.date))].sort(), span);
  const rows = given.filter((r) => slots.includes(r.date));
  const nodes = [...new Set(rows.map((r) => r.node_name || r.node_id))];
  if (!rows.length) {
    target.replaceChildren(document.createTextNode('No usage yet.'));
    return;
  }
  const total = (r) => (Number(r.input_tokens) || 0) + (Number(r.output_tokens) || 0);
  const perDay = slots.map((d) => rows.filter((r) => r.date === d));
  const max = Math.max(1, ...perDay.map((rs) => rs.reduce((s, r) => s + total(r), 0)));
  const W = 240;
  const H = 100;
  const barW = W / slots.length;
  const chart = svg('svg', { viewBox: `0 0 ${W} ${H + 14}`, width: '100%', role: 'img',
    'aria-label': 'Tokens per day and node' });
  perDay.forEach((rs, i) => {
    let y = H;
    for (const r of rs) {
      const h = (total(r) / max) * H;
      y -= h;
      const colour = COLOURS[nodes.indexOf(r.node_name || r.node_id) % COLOURS.length];
      const bar = svg('rect', { x: i * barW + 1, y, width: Math.max(1, barW - 2), height: h,
        fill: colour, class: 'usage-bar', 'data-date': r.date, 'data-node': r.node_id });
      const cost = Number(r.cost_usd || 0).toFixed(4);
      bar.append(svg('title', {}, `${r.date} · ${r.node_name || r.node_id}: ${r.input_tokens} in, `
        + `${r.output_tokens} out, $${cost}`));
      chart.append(bar);
    }
  });
  chart.append(svg('text', { x: 0, y: H + 12, class: 'usage-axis' }, slots[0].slice(5)));
  chart.append(svg('text', { x: W, y: H + 12, 'text-anchor': 'end', class: 'usage-axis' },
    slots[slots.length - 1].slice(5)));
  const legend = document.createElement('ul');
  legend.className = 'usage-legend';
  nodes.forEach((n, i) => {
    const item = document.createElement('li');
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.style.background = COLOURS[i % COLOURS.length];
    const cost = rows.filter((r) => (r.node_name || r.node_id) === n)
      .reduce((s, r) => s + Number(r.cost_usd || 0), 0);
    item.append(swatch, document.createTextNode(` ${n} — $${cost.toFixed(2)}`));
    legend.append(item);
  });
  target.replaceChildren(chart, legend);
}
