// heapman serve's page: the timeline of live bytes at each GC; a click at any moment asks the
// server for blame (with each row's stack), the flame graph of the live set's stacks and the heap
// map there, and the objects of a dumped collection, whose addresses open their paths from the
// roots (drawn, listed, downloadable as DOT and GEXF); a drag gives the growth over the range.
// Every answer shows the heapman command that gives it. <html data-js-errors> counts the
// page's JavaScript errors, data-state is "busy" while answers are awaited and "ready" after,
// data-shown counts the questions answered (a moment, a range, an object's paths) so far.
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

let shown = 0;
function answered() { root.dataset.shown = String(++shown); }

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
    : 'http://www.w3.org/1999/xhtml', tag);  // svg: 1 makes any tag an SVG element
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

let info = null, gcs = [], firstSeq = 0, endSeq = 1, timelineEvents = [];
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
      const dumped = dumpedGcs.has(g.gc);
      svg.appendChild(el('circle', { svg: 1, class: dumped ? 'gc dumped' : 'gc', 'data-gc': g.gc,
        cx: xOf(g.end_seq), cy: yOf(g.live_bytes), r: dumped ? 4 : 2 }))
        .appendChild(el('title', { svg: 1 }, 'GC ' + g.gc + ': ' + bytes(g.live_bytes) + ' live' +
          (dumped ? ' (RAM dump: objects and paths)' : '')));
    }
  }
  svg.appendChild(el('rect', { svg: 1, class: 'range', id: 'range', x: 0, y: PAD.t, width: 0, height: H - PAD.t - PAD.b }));
  svg.appendChild(el('line', { svg: 1, class: 'cursor', id: 'cursor', x1: -10, x2: -10, y1: PAD.t, y2: H - PAD.b }));
  drawCursorAgain();
}

function svgX(ev) {
  const r = svg.getBoundingClientRect();
  return (ev.clientX - r.left) * W / r.width;
}

// A click (the mouse moved less than 4 units) chooses a moment, a drag a range.
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
    const dumped = ev.target.classList && ev.target.classList.contains('dumped');
    const n = dumped ? Number(ev.target.dataset.gc) : null;
    if (dumped) { choosePoint('gc:' + n, seqOfGc(n)); return; }  // its objects and paths too
    const seq = seqOf(x);
    choosePoint('seq:' + seq, seq);
  } else {
    chooseRange(seqOf(Math.min(x, from)), seqOf(Math.max(x, from)));
  }
});

// ---- answers at a point and over a range --------------------------------------------------------

let blameAnswer = null;
let cursorSeq = null;

// `point` as the CLI takes it (seq:N, gc:N); `seq` where the cursor goes.
// withMap false: the heap map keeps the picture it shows (following the end of a log being
// written, see followEnd).
async function choosePoint(point, seq, withMap = true) {
  cursorSeq = seq;
  drawCursorAgain();
  root.dataset.point = point;
  document.getElementById('point').textContent = 'point: ' + point;
  await Promise.all([showBlame(point), withMap ? showMap(point) : null, showFlame(point),
    showObjects(point)]);
  answered();
}

function seqOfGc(n) {
  const g = gcs.find(x => x.gc === n);
  return g ? g.end_seq : null;
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
  setFlameSearch(exactly(row.function));  // the function's frames in the flame graph
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
let mapAskedAt = 0, mapTook = 0;  // ms: when the last map was asked and how long it took

async function showMap(point) {
  const t0 = performance.now();
  mapAskedAt = t0;
  const a = await ask('map', 'map', { at: point }, 'blob');
  mapTook = performance.now() - t0;
  if (a.aborted) return;
  document.getElementById('map-command').textContent = a.command || '';
  showError('map', a.error);
  const img = document.getElementById('map');
  if (mapUrl) URL.revokeObjectURL(mapUrl);
  mapUrl = a.error ? null : URL.createObjectURL(a.body);
  if (mapUrl) img.src = mapUrl; else img.removeAttribute('src');
}

// ---- the flame graph ---------------------------------------------------------------------------
// From the live set's folded stacks (heapman stacks: "outer;...;inner BYTES" a line), merged into
// a tree; each frame's width is its bytes over the zoomed frame's, frames narrower than
// FLAME_MIN units are left out. Zoomed, the frames above the zoomed one span the whole width.

const FLAME_ROW = 17, FLAME_MIN = 1;
let flameTree = null, flameZoom = null;

function foldedTree(text) {
  const top = { name: 'all', path: '', bytes: 0, children: new Map(), parent: null };
  for (const line of text.split('\n')) {
    const sp = line.lastIndexOf(' ');
    if (sp <= 0) continue;
    const n = Number(line.slice(sp + 1));
    if (!(n > 0)) continue;
    let node = top;
    node.bytes += n;
    for (const f of line.slice(0, sp).split(';')) {
      let c = node.children.get(f);
      if (!c) {
        c = { name: f, path: node.path ? node.path + ';' + f : f, bytes: 0, children: new Map(), parent: node };
        node.children.set(f, c);
      }
      c.bytes += n;
      node = c;
    }
  }
  return top;
}

// Heavier first, then by name: the same order for the same answer.
function childrenOf(node) {
  return [...node.children.values()].sort((a, b) => b.bytes - a.bytes || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function flameColor(name) {
  let h = 0;
  for (let i = 0; i < name.length; ++i) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return 'hsl(' + (h % 50 + 5) + ', 75%, ' + (58 + (h >> 8) % 18) + '%)';
}

// Frames whose name matches the search box are highlighted; "matched" is the bytes of the stacks
// through at least one of them (a match under a match counts once), as flamegraph.pl's search.
const flameSearch = document.getElementById('flame-search');
let flameMatch = null;
flameSearch.addEventListener('input', () => setFlameSearch(flameSearch.value));

function setFlameSearch(text) {
  flameSearch.value = text;
  flameMatch = null;
  flameSearch.classList.remove('bad');
  if (text) {
    try {
      flameMatch = new RegExp(text);
    } catch (e) {
      flameSearch.classList.add('bad');  // not a regex (yet): nothing highlighted
    }
  }
  drawFlame();
}

function matchedBytes(node) {
  if (node.parent && flameMatch.test(node.name)) return node.bytes;
  let n = 0;
  for (const c of node.children.values()) n += matchedBytes(c);
  return n;
}

function drawFlame() {
  const fsvg = document.getElementById('flame');
  fsvg.textContent = '';
  const matched = document.getElementById('flame-matched');
  if (flameTree && flameMatch) {
    const n = matchedBytes(flameTree);
    root.dataset.flameMatched = String(n);
    matched.textContent = 'matched: ' + bytes(n) + ' (' + (100 * n / Math.max(1, flameTree.bytes)).toFixed(2) + '%)';
  } else {
    delete root.dataset.flameMatched;
    matched.textContent = '';
  }
  if (!flameTree || !flameTree.bytes) {
    fsvg.setAttribute('height', FLAME_ROW + 4);
    fsvg.appendChild(el('text', { svg: 1, x: 4, y: 13 }, flameTree ? 'nothing alive at this point' : ''));
    return;
  }
  const zoom = flameZoom || flameTree;
  const chain = [];
  for (let n = zoom; n; n = n.parent) chain.unshift(n);
  let depth = 0;
  const frame = (node, x, w, d) => {
    const match = flameMatch && node.parent && flameMatch.test(node.name) ? ' match' : '';
    const g = el('g', { svg: 1, class: (node === zoom ? 'frame zoomed' : d < chain.length - 1 ? 'frame above' : 'frame') + match,
      'data-path': node.path, 'data-bytes': node.bytes, 'data-depth': d });
    g.appendChild(el('rect', { svg: 1, x: x.toFixed(3), y: d * FLAME_ROW, width: w.toFixed(3),
      height: FLAME_ROW - 1, fill: match ? '#c060e0' : node.parent ? flameColor(node.name) : '#ddd' }));
    const chars = Math.floor((w - 6) / 6.5);
    if (chars >= 3) {
      const label = node.name.length <= chars ? node.name : node.name.slice(0, chars - 1) + '\u2026';
      g.appendChild(el('text', { svg: 1, x: (x + 3).toFixed(1), y: d * FLAME_ROW + 12 }, label));
    }
    g.appendChild(el('title', { svg: 1 }, node.name + ': ' + bytes(node.bytes) + ' (' +
      (100 * node.bytes / flameTree.bytes).toFixed(2) + '% of ' + bytes(flameTree.bytes) + ')'));
    g.addEventListener('click', () => { flameZoom = node === flameTree ? null : node; drawFlame(); });
    fsvg.appendChild(g);
    depth = Math.max(depth, d);
  };
  chain.forEach((n, d) => frame(n, 0, W, d));
  const below = (node, x, d) => {
    for (const c of childrenOf(node)) {
      const w = c.bytes / zoom.bytes * W;
      if (w < FLAME_MIN) continue;
      frame(c, x, w, d);
      below(c, x, d + 1);
      x += w;
    }
  };
  below(zoom, 0, chain.length);
  fsvg.setAttribute('height', (depth + 1) * FLAME_ROW);
  root.dataset.flameZoom = zoom.path;
}

async function showFlame(point) {
  const a = await ask('flame', 'stacks', { at: point }, 'text');
  if (a.aborted) return;
  document.getElementById('flame-command').textContent = a.command || '';
  showError('flame', a.error);
  flameTree = a.error ? null : foldedTree(a.body);
  flameZoom = null;
  document.getElementById('flame-title').firstChild.textContent = 'Flame graph at ' + point + ' ';
  drawFlame();
}

// ---- objects of a dumped collection and their paths from the roots -----------------------------

const dumpedGcs = new Set();
const OBJECTS_TOP = 20;

function setDumped(list) {
  dumpedGcs.clear();
  for (const n of list || []) dumpedGcs.add(n);
  showDumps();
}

function showDumps() {
  const p = document.getElementById('dumps');
  p.textContent = '';
  if (!dumpedGcs.size) return;
  p.appendChild(document.createTextNode('collections with a RAM dump: '));
  for (const n of [...dumpedGcs].sort((a, b) => a - b)) {
    const b = el('button', { type: 'button', 'data-gc': n }, 'gc:' + n);
    b.addEventListener('click', () => choosePoint('gc:' + n, seqOfGc(n) ?? cursorSeq));
    p.appendChild(b);
  }
}

// The dumped collection whose heap graph a point shows (heapman's rule, graph::dumpedGcAt): the
// collection whose end the point is, or the first one to end after it when that one was dumped;
// null when there is none (no question is asked then: the page says where the dumps are).
// The state at seq:S is the one after event S; at gc:N the one after N's end.
function dumpedGcAt(point) {
  const m = /^(seq|gc):(\d+)$/.exec(point);
  if (!m) return null;
  const limit = m[1] === 'seq' ? Number(m[2]) + 1 : (seqOfGc(Number(m[2])) ?? -2) + 1;
  for (const n of dumpedGcs) if (seqOfGc(n) + 1 === limit) return n;
  let next = null;
  for (const g of gcs) if (g.end_seq + 1 > limit && (!next || g.end_seq < next.end_seq)) next = g;
  return next && dumpedGcs.has(next.gc) ? next.gc : null;
}

// At a dumped collection: the retained sizes by type (the dominator tree's) and the objects by
// retained size, all of them or those of the type clicked.
async function showObjects(point) {
  const title = document.getElementById('objects-title').firstChild;
  if (dumpedGcAt(point) === null) {
    running.objects?.controller.abort();
    running.retained?.controller.abort();
    title.textContent = 'Objects ';
    for (const id of ['objects-command', 'retained-command']) document.getElementById(id).textContent = '';
    showError('objects', dumpedGcs.size ? point + ' has no RAM dump: choose a collection that has one'
      : 'this log has no RAM dump (record with heaprec run --ram-dumps every, or event:NAME)');
    showError('retained', '');
    fillTable('objects', [], []);
    fillTable('retained', [], []);
    return;
  }
  await Promise.all([showRetained(point), showObjectList(point, null)]);
}

async function showRetained(point) {
  const a = await ask('retained', 'retained', { at: point, by: 'type', top: OBJECTS_TOP });
  if (a.aborted) return;
  document.getElementById('retained-command').textContent = a.command || '';
  showError('retained', a.error);
  const rows = a.error ? [] : (a.body.retained || []);
  if (!a.error) document.getElementById('objects-title').firstChild.textContent =
    'Objects at ' + a.body.point + ': ' + a.body.heap + ' ';
  fillTable('retained', rows, columnsOf(rows), async row => {
    await showObjectList(a.body.point, row.type);
    answered();
  });
}

// A regex matching exactly `text` (RE2 syntax).
function exactly(text) { return '^' + text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$'; }

async function showObjectList(point, type) {
  const params = { at: point, top: OBJECTS_TOP };
  if (type !== null) params.type = exactly(type);
  const a = await ask('objects', 'objects', params);
  if (a.aborted) return;
  document.getElementById('objects-command').textContent = a.command || '';
  showError('objects', a.error);
  root.dataset.objectsType = type ?? '';
  if (a.error) { fillTable('objects', [], []); return; }
  document.getElementById('objects-list-title').textContent =
    (type === null ? 'Objects' : 'Objects of type ' + type) + ' by retained size: ' + a.body.matched;
  const rows = a.body.objects || [];
  fillTable('objects', rows, columnsOf(rows), row => showPaths(a.body.point, row.address));
}

function columnsOf(rows) {
  return rows.length ? Object.keys(rows[0]).map(k => ({
    key: k, title: k.replace(/_/g, ' '), n: typeof rows[0][k] === 'number' })) : [];
}

function apiUrl(path, params) {
  const q = new URLSearchParams(params);
  if (token) q.set('token', token);
  return 'api/' + path + '?' + q;
}

async function showPaths(point, address) {
  const a = await ask('paths', 'paths', { at: point, address });
  if (a.aborted) return;
  document.getElementById('paths-command').textContent = a.command || '';
  showError('paths', a.error);
  const downloads = document.getElementById('paths-downloads');
  downloads.hidden = !!a.error;
  document.getElementById('paths-dot').href = apiUrl('paths.dot', { at: point, address });
  document.getElementById('paths-gexf').href = apiUrl('paths.gexf', { at: point, address });
  root.dataset.paths = point + ' ' + address;
  const rows = a.error ? [] : (a.body.paths || []);
  document.getElementById('paths-title').textContent = a.error ? 'Paths from the roots'
    : 'Paths from the roots to ' + address + ' at ' + a.body.point + ': ' + a.body.roots_reaching_them +
      ' roots reach it';
  fillTable('paths', rows, columnsOf(rows));
  drawPaths(rows);
  answered();
}

// Each path a row of boxes, the root on the left, the object on the right; an arrow is a
// reference, labelled with the field's offset in the holder.
function drawPaths(rows) {
  const psvg = document.getElementById('paths-drawing');
  psvg.textContent = '';
  const BOX_W = 170, BOX_H = 48, GAP = 46, ROW = BOX_H + 18, X0 = 4;
  const paths = [];
  for (const r of rows) {
    if (!paths.length || paths[paths.length - 1].path !== r.path) paths.push({ path: r.path, steps: [] });
    paths[paths.length - 1].steps.push(r);
  }
  let widest = 0;
  paths.forEach((p, i) => {
    const y = 8 + i * ROW;
    const g = psvg.appendChild(el('g', { svg: 1, class: 'path', 'data-path': p.path }));
    p.steps.forEach((s, j) => {
      const x = X0 + j * (BOX_W + GAP);
      if (j > 0) {
        const e = g.appendChild(el('g', { svg: 1, class: 'edge', 'data-field': String(s.field) }));
        e.appendChild(el('line', { svg: 1, x1: x - GAP, y1: y + BOX_H / 2, x2: x - 2, y2: y + BOX_H / 2,
          'marker-end': 'url(#arrow)' }));
        e.appendChild(el('text', { svg: 1, x: x - GAP + 4, y: y + BOX_H / 2 - 4 }, '+' + s.field));
      }
      const b = g.appendChild(el('g', { svg: 1, class: j === 0 ? 'step root' : 'step', 'data-node': s.node,
        'data-step': s.step }));
      b.appendChild(el('rect', { svg: 1, x, y, width: BOX_W, height: BOX_H, rx: 4 }));
      const fit = t => t.length <= 26 ? t : t.slice(0, 25) + '\u2026';
      b.appendChild(el('text', { svg: 1, x: x + 6, y: y + 14, class: 'node' }, fit(s.node)));
      b.appendChild(el('text', { svg: 1, x: x + 6, y: y + 28 }, fit(s.type)));
      b.appendChild(el('text', { svg: 1, x: x + 6, y: y + 42 },
        fit(bytes(s.size) + (s.retained ? ', retains ' + bytes(s.retained) : ''))));
      b.appendChild(el('title', { svg: 1 }, s.node + '\n' + s.type + '\n' + (s.function || '') +
        '\nsize ' + s.size + ' B, retained ' + s.retained + ' B'));
      widest = Math.max(widest, x + BOX_W + 4);
    });
  });
  const defs = psvg.appendChild(el('defs', { svg: 1 }));
  const marker = defs.appendChild(el('marker', { svg: 1, id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }));
  marker.appendChild(el('path', { svg: 1, d: 'M 0 0 L 10 5 L 0 10 z' }));
  psvg.setAttribute('width', Math.max(widest, 10));
  psvg.setAttribute('height', paths.length ? 8 + paths.length * ROW : 0);
}

// A range: what grew in it (heapman diff: by function and by type) and its garbage (churn).
async function chooseRange(from, to) {
  const range = { from: 'seq:' + from, to: 'seq:' + to };
  root.dataset.range = range.from + '..' + range.to;
  await Promise.all([showDiff(range), showChurn(range)]);
  answered();
}

async function showDiff(range) {
  const a = await ask('diff', 'diff', { ...range, top: TOP });
  if (a.aborted) return;
  document.getElementById('diff-command').textContent = a.command || '';
  showError('diff', a.error);
  const functions = a.error ? [] : (a.body.functions || []), types = a.error ? [] : (a.body.types || []);
  document.getElementById('diff-title').textContent = 'Growth from ' + range.from + ' to ' + range.to;
  fillTable('diff', functions, columnsOf(functions));
  fillTable('diff-types', types, columnsOf(types));
}

async function showChurn(range) {
  const a = await ask('churn', 'churn', { ...range, top: TOP });
  if (a.aborted) return;
  document.getElementById('churn-command').textContent = a.command || '';
  showError('churn', a.error);
  const rows = a.error ? [] : (a.body.functions || []);
  document.getElementById('churn-title').textContent = 'Garbage from ' + range.from + ' to ' + range.to +
    (a.error ? '' : ': ' + a.body.garbage);
  fillTable('churn', rows, columnsOf(rows));
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
  timelineEvents = e.error || e.aborted ? [] : (e.body.events || []);
  drawTimeline(timelineEvents);
  return true;
}

// heapman serve --follow: the log grows while the page is open. Every half second the page asks
// whether it did; then the timeline is drawn again at once and, unless a moment was clicked, the
// answers follow the end of the log: asked again as soon as the last ones are shown, so that slow
// answers never hold back the timeline nor get cancelled by the next growth before they show.
// The heap map is the exception: its picture needs a pass over the whole log as it then stands
// (the address ranges and the live-bytes strip), so while the recording runs it follows the end
// at most every MAP_FOLLOW_MS, and never more often than MAP_SHARE times the time it took: the
// server's work stays a small share of the machine the game plays on. The last growth (the
// recorder finished) draws it.
const POLL_MS = 500, MAP_FOLLOW_MS = 5000, MAP_SHARE = 10, ROUND_REST = 3;
let complete = false, resting = null;
let following = false, generation = 0, atEnd = true;
let answering = false, answeredGeneration = -1;
svg.addEventListener('mouseup', () => { atEnd = false; }, true);

function followEnd() {
  if (!atEnd || answering || answeredGeneration === generation || !info) return;
  answering = true;
  const g = generation;
  const mapDue = complete ||
    performance.now() - mapAskedAt >= Math.max(MAP_FOLLOW_MS, MAP_SHARE * mapTook);
  const t0 = performance.now();
  choosePoint('seq:' + info.last_seq, info.last_seq, mapDue).finally(() => {
    answeredGeneration = g;
    // The log grew meanwhile: the next answers after a pause of ROUND_REST times what these
    // took (the timeline still follows every growth), so that they take at most a quarter of
    // the server's time while the game plays; at once once the log is complete.
    const rest = complete ? 0 : ROUND_REST * (performance.now() - t0);
    resting = setTimeout(endRest, rest);
  });
}

function endRest() {
  clearTimeout(resting);
  resting = null;
  answering = false;
  followEnd();
}

async function poll() {
  try {
    const s = await (await fetch('api/status' + (token ? '?token=' + encodeURIComponent(token) : ''))).json();
    if (s.generation !== generation) {
      generation = s.generation;
      complete = s.complete;
      if (complete && resting !== null) {  // the last answers at once, after the timeline
        clearTimeout(resting);
        resting = null;
        answering = false;
      }
      setDumped(s.dumped_gcs);
      root.dataset.generation = String(generation);
      if (await loadTimeline()) followEnd();
    }
    if (s.complete) return;  // the recorder finished the log: nothing more will come
  } catch (e) {
    if (String(e).indexOf('Failed to fetch') < 0) throw e;  // the server stopped: stop asking
    return;
  }
  setTimeout(poll, POLL_MS);
}

function drawCursorAgain() {
  const cursor = document.getElementById('cursor');
  if (!cursor || cursorSeq === null) return;
  cursor.setAttribute('x1', xOf(cursorSeq));
  cursor.setAttribute('x2', xOf(cursorSeq));
}

async function start() {
  setBusy(+1);
  try {
    const s = await (await fetch('api/status' + (token ? '?token=' + encodeURIComponent(token) : ''))).json();
    following = s.follow;
    generation = s.generation;
    complete = s.complete;
    setDumped(s.dumped_gcs);
    root.dataset.generation = String(generation);
    await loadTimeline();
    if (following && !s.complete) {
      // The log grows while the first answers come (seconds, on a busy machine): the timeline
      // follows it from now on, not from when they are shown.
      setTimeout(poll, POLL_MS);
      followEnd();
    } else {
      answeredGeneration = generation;
      await choosePoint('seq:' + info.last_seq, info.last_seq);
    }
  } finally {
    setBusy(-1);
  }
}

start();
