// heapman serve's page: the timeline of live bytes at each GC; a click at any moment asks the
// server for blame (with each row's stack) and the heap map there, a drag for the growth over the
// range. Every answer shows the heapman command that gives it. <html data-js-errors> counts the
// page's JavaScript errors, data-state is "busy" while answers are awaited and "ready" after.
'use strict';

const root = document.documentElement;
let jsErrors = 0;
function countError() { root.dataset.jsErrors = String(++jsErrors); }
window.addEventListener('error', countError);
window.addEventListener('unhandledrejection', countError);

const token = new URLSearchParams(location.search).get('token') || '';
const TOP = 50;
const W = 1000, H = 180, PAD = { l: 70, r: 10, t: 10, b: 22 };

// One request at a time per panel: a newer question cancels the one still running.
const running = {};
let requestSerial = 0;
let pending = 0;

function setBusy(delta) {
  pending += delta;
  root.dataset.state = pending > 0 ? 'busy' : 'ready';
}

async function ask(panel, path, params, as) {
  if (running[panel]) {
    running[panel].controller.abort();
    const q = new URLSearchParams({ request: running[panel].id });
    if (token) q.set('token', token);
    fetch('api/cancel?' + q, { method: 'POST' }).catch(() => {});
  }
  const id = 'r' + (++requestSerial) + '-' + Math.random().toString(36).slice(2, 8);
  const controller = new AbortController();
  running[panel] = { id, controller };
  const q = new URLSearchParams(params);
  q.set('request', id);
  if (token) q.set('token', token);
  setBusy(+1);
  try {
    const res = await fetch('api/' + path + '?' + q, { signal: controller.signal });
    const command = res.headers.get('X-Heapman-Command') || '';
    if (!res.ok) {
      let message = res.status + ' ' + res.statusText;
      try { message = (await res.json()).error || message; } catch (e) { /* not JSON */ }
      return { error: message, command };
    }
    const body = as === 'blob' ? await res.blob() : as === 'text' ? await res.text() : await res.json();
    return { body, command };
  } catch (e) {
    if (e.name === 'AbortError') return { aborted: true };
    return { error: String(e) };
  } finally {
    if (running[panel] && running[panel].id === id) delete running[panel];
    setBusy(-1);
  }
}

function el(tag, attrs, text) {
  const e = document.createElementNS(tag === 'svg' || attrs.svg ? 'http://www.w3.org/2000/svg'
    : 'http://www.w3.org/1999/xhtml', tag);
  for (const [k, v] of Object.entries(attrs)) if (k !== 'svg') e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function showError(panel, message) {
  const p = document.getElementById(panel + '-error');
  p.hidden = !message;
  p.textContent = message || '';
}

function bytes(n) {
  const u = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; ++i; }
  return (i ? n.toFixed(1) : String(n)) + ' ' + u[i];
}

// A table from rows of JSON objects: the columns named, numbers right-aligned.
function fillTable(id, rows, columns, onRow) {
  const table = document.getElementById(id);
  const head = table.tHead, body = table.tBodies[0];
  head.textContent = '';
  body.textContent = '';
  const tr = el('tr', {});
  for (const c of columns) tr.appendChild(el('th', { class: c.n ? 'n' : '' }, c.title));
  head.appendChild(tr);
  rows.forEach((row, i) => {
    const r = el('tr', {});
    for (const c of columns) r.appendChild(el('td', { class: c.n ? 'n' : '' }, String(row[c.key] ?? '')));
    if (onRow) r.addEventListener('click', () => {
      for (const x of body.rows) x.classList.remove('chosen');
      r.classList.add('chosen');
      onRow(row, i);
    });
    body.appendChild(r);
  });
}

// ---- the timeline ------------------------------------------------------------------------------

let info = null, gcs = [], firstSeq = 0, endSeq = 1;
const svg = document.getElementById('timeline');

function xOf(seq) { return PAD.l + (seq - firstSeq) / Math.max(1, endSeq - firstSeq) * (W - PAD.l - PAD.r); }
function seqOf(x) {
  const f = Math.min(1, Math.max(0, (x - PAD.l) / (W - PAD.l - PAD.r)));
  return Math.round(firstSeq + f * (endSeq - firstSeq));
}

function drawTimeline(events) {
  svg.textContent = '';
  const max = Math.max(1, ...gcs.map(g => g.live_bytes));
  const yOf = b => PAD.t + (1 - b / max) * (H - PAD.t - PAD.b);
  svg.appendChild(el('line', { svg: 1, x1: PAD.l, x2: W - PAD.r, y1: H - PAD.b, y2: H - PAD.b, stroke: '#999' }));
  svg.appendChild(el('text', { svg: 1, x: 4, y: PAD.t + 10 }, bytes(max)));
  svg.appendChild(el('text', { svg: 1, x: 4, y: H - PAD.b }, '0'));
  svg.appendChild(el('text', { svg: 1, x: PAD.l, y: H - 6 }, 'seq ' + firstSeq));
  svg.appendChild(el('text', { svg: 1, x: W - PAD.r - 90, y: H - 6 }, 'seq ' + endSeq));
  for (const e of events) {
    const x = xOf(e.seq);
    svg.appendChild(el('line', { svg: 1, class: 'event', x1: x, x2: x, y1: PAD.t, y2: H - PAD.b }))
      .appendChild(el('title', { svg: 1 }, e.point));
  }
  if (gcs.length) {
    const pts = gcs.map(g => xOf(g.end_seq).toFixed(1) + ',' + yOf(g.live_bytes).toFixed(1));
    svg.appendChild(el('polyline', { svg: 1, class: 'line', points: pts.join(' ') }));
    for (const g of gcs) {
      svg.appendChild(el('circle', { svg: 1, class: 'gc', cx: xOf(g.end_seq), cy: yOf(g.live_bytes), r: 2 }))
        .appendChild(el('title', { svg: 1 }, 'GC ' + g.gc + ': ' + bytes(g.live_bytes) + ' live'));
    }
  }
  svg.appendChild(el('rect', { svg: 1, class: 'range', id: 'range', x: 0, y: PAD.t, width: 0, height: H - PAD.t - PAD.b }));
  svg.appendChild(el('line', { svg: 1, class: 'cursor', id: 'cursor', x1: -10, x2: -10, y1: PAD.t, y2: H - PAD.b }));
}

function svgX(ev) {
  const r = svg.getBoundingClientRect();
  return (ev.clientX - r.left) * W / r.width;
}

let dragFrom = null;
svg.addEventListener('mousedown', ev => { dragFrom = svgX(ev); });
svg.addEventListener('mousemove', ev => {
  if (dragFrom === null) return;
  const x = svgX(ev), range = document.getElementById('range');
  range.setAttribute('x', Math.min(x, dragFrom));
  range.setAttribute('width', Math.abs(x - dragFrom));
});
svg.addEventListener('mouseup', ev => {
  if (dragFrom === null) return;
  const x = svgX(ev), from = dragFrom;
  dragFrom = null;
  if (Math.abs(x - from) < 4) {
    document.getElementById('range').setAttribute('width', 0);
    choosePoint(seqOf(x));
  } else {
    chooseRange(seqOf(Math.min(x, from)), seqOf(Math.max(x, from)));
  }
});

// ---- answers at a point and over a range --------------------------------------------------------

let blameAnswer = null;

async function choosePoint(seq) {
  const point = 'seq:' + seq;
  const cursor = document.getElementById('cursor');
  cursor.setAttribute('x1', xOf(seq));
  cursor.setAttribute('x2', xOf(seq));
  root.dataset.point = point;
  document.getElementById('point').textContent = 'point: ' + point;
  await Promise.all([showBlame(point), showMap(point)]);
}

async function showBlame(point) {
  const a = await ask('blame', 'blame', { at: point, top: TOP, stacks: '' });
  if (a.aborted) return;
  document.getElementById('blame-command').textContent = a.command || '';
  showError('blame', a.error);
  if (a.error) { fillTable('blame', [], []); return; }
  blameAnswer = a.body;
  document.getElementById('blame-title').textContent = 'Blame at ' + a.body.point + ': ' + a.body.live;
  fillTable('blame', a.body.functions, [
    { key: 'function', title: 'function' }, { key: 'module', title: 'module' },
    { key: 'live_bytes', title: 'live bytes', n: 1 }, { key: 'live_objects', title: 'objects', n: 1 },
    { key: 'share', title: 'share %', n: 1 }, { key: 'top_types', title: 'top types' }],
  (row, i) => showStack(i + 1, row));
}

function showStack(rank, row) {
  const frames = (blameAnswer.stacks || []).filter(s => s.row === rank);
  document.getElementById('stack-title').textContent = 'Stack of ' + row.function;
  document.getElementById('stack-command').textContent =
    document.getElementById('blame-command').textContent;
  document.getElementById('stack').textContent = frames.map(f =>
    (f.role === 'caller' ? '   ' : '[' + f.role + '] ') + f.frame_function +
    (f.frame_module ? '  (' + f.frame_module + ')' : '') +
    (f.frame_location ? '  ' + f.frame_location : '')).join('\n') || 'no stack';
}

let mapUrl = null;
async function showMap(point) {
  const a = await ask('map', 'map', { at: point }, 'blob');
  if (a.aborted) return;
  document.getElementById('map-command').textContent = a.command || '';
  showError('map', a.error);
  const img = document.getElementById('map');
  if (mapUrl) URL.revokeObjectURL(mapUrl);
  mapUrl = a.error ? null : URL.createObjectURL(a.body);
  if (mapUrl) img.src = mapUrl; else img.removeAttribute('src');
}

async function chooseRange(from, to) {
  const a = await ask('diff', 'diff', { from: 'seq:' + from, to: 'seq:' + to, top: TOP });
  if (a.aborted) return;
  document.getElementById('diff-command').textContent = a.command || '';
  showError('diff', a.error);
  root.dataset.range = 'seq:' + from + '..seq:' + to;
  if (a.error) { fillTable('diff', [], []); return; }
  document.getElementById('diff-title').textContent = 'Growth from seq:' + from + ' to seq:' + to;
  const rows = a.body.functions || [];
  const columns = rows.length ? Object.keys(rows[0]).map(k => ({
    key: k, title: k.replace(/_/g, ' '), n: typeof rows[0][k] === 'number' })) : [];
  fillTable('diff', rows, columns);
}

// The timeline from the log as it is now; false when an answer failed.
async function loadTimeline() {
  const [i, g, e] = await Promise.all([ask('info', 'info', {}), ask('gcs', 'gcs', {}),
    ask('events', 'events', {})]);
  if (i.aborted || g.aborted) return false;
  if (i.error || g.error) throw new Error(i.error || g.error);
  info = i.body;
  gcs = g.body.gcs || [];
  firstSeq = info.first_seq;
  endSeq = Math.max(info.last_seq, firstSeq + 1);
  root.dataset.gcs = String(gcs.length);
  document.getElementById('log').textContent = info.file;
  document.getElementById('facts').textContent = (info.header.command_line || []).join(' ') +
    ' - ' + info.events + ' events, ' + gcs.length + ' GCs' + (following ? ' (live)' : '');
  drawTimeline(e.error || e.aborted ? [] : (e.body.events || []));
  return true;
}

// heapman serve --follow: the log grows while the page is open. Each second the page asks
// whether it did; then the timeline is drawn again and, unless a moment was clicked, the answers
// follow the end of the log.
let following = false, generation = 0, atEnd = true;
svg.addEventListener('mouseup', () => { atEnd = false; }, true);

async function poll() {
  try {
    const s = await (await fetch('api/status' + (token ? '?token=' + encodeURIComponent(token) : ''))).json();
    if (s.generation !== generation) {
      generation = s.generation;
      root.dataset.generation = String(generation);
      if (await loadTimeline()) {
        if (atEnd) await choosePoint(info.last_seq);
        else drawCursorAgain();
      }
    }
    if (s.complete) return;  // the recorder finished the log: nothing more will come
  } catch (e) {
    if (String(e).indexOf('Failed to fetch') < 0) throw e;  // the server stopped: stop asking
    return;
  }
  setTimeout(poll, 1000);
}

function drawCursorAgain() {
  const m = /^seq:(\d+)$/.exec(root.dataset.point || '');
  if (!m) return;
  const cursor = document.getElementById('cursor');
  cursor.setAttribute('x1', xOf(Number(m[1])));
  cursor.setAttribute('x2', xOf(Number(m[1])));
}

async function start() {
  setBusy(+1);
  try {
    const s = await (await fetch('api/status' + (token ? '?token=' + encodeURIComponent(token) : ''))).json();
    following = s.follow;
    generation = s.generation;
    await loadTimeline();
    await choosePoint(info.last_seq);
    if (following && !s.complete) setTimeout(poll, 1000);
  } finally {
    setBusy(-1);
  }
}

start();
