// HeapMan report page: draws the document that `heapman report` embeds (docs/DESIGN.md §3.10).
// No framework, no network: plain DOM and SVG. Sections of other kinds are drawn by renderers
// registered in `renderers` (see "Sections" at the end).
'use strict';
(function () {
  const D = JSON.parse(document.getElementById('heapman-data').textContent);
  // Sections passed as files (heapman report --section FILE), each parsed apart.
  for (const e of document.querySelectorAll('script.heapman-section')) {
    const source = e.getAttribute('data-source');
    try {
      const s = JSON.parse(e.textContent);
      if (typeof s !== 'object' || s === null || typeof s.kind !== 'string')
        throw new Error('not an object with a "kind"');
      D.sections.push({id: String(s.id || 'section-' + D.sections.length), title: String(s.title || source),
        kind: s.kind, run: typeof s.run === 'number' ? s.run : 0, data: s.data});
    } catch (err) {
      D.sections.push({id: 'section-' + D.sections.length, title: source, kind: 'error', run: -1,
        data: 'this section could not be read: ' + err.message});
    }
  }
  const SVGNS = 'http://www.w3.org/2000/svg';
  const HEAP_COLORS = {
    native: '#4e79a7', gc: '#f28e2b', gc_atomic: '#e15759', gc_uncollectable: '#76b7b2',
    gcj: '#59a14f', gc_typed: '#edc948', managed: '#b07aa1', other: '#9c755f'
  };
  const ROLE = ['excluded', 'charged', 'caller'];
  const ROWS_SHOWN = 1000;  // table rows drawn before "show all"

  // ---- helpers ------------------------------------------------------------------------------
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      const v = attrs[k];
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of kids.flat()) if (c !== null && c !== undefined) e.append(c);
    return e;
  }
  function sv(tag, attrs, ...kids) {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs || {}) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, String(attrs[k]));
    }
    for (const c of kids.flat()) if (c) e.append(c);
    return e;
  }
  function fmtBytes(n) {
    const a = Math.abs(n);
    const sign = n < 0 ? '-' : '';
    if (a < 1024) return sign + a + ' B';
    const u = ['KiB', 'MiB', 'GiB', 'TiB'];
    let v = a / 1024, i = 0;
    while (v >= 1024 && i < u.length - 1) { v /= 1024; ++i; }
    return sign + (v >= 100 ? v.toFixed(0) : v.toFixed(1)) + ' ' + u[i];
  }
  function fmtNum(n) { return Number(n).toLocaleString('en-US'); }
  function fmtSigned(n, f) { return (n > 0 ? '+' : '') + f(n); }
  function fmtCount(n) {
    const a = Math.abs(n);
    if (a >= 1e9) return (n / 1e9).toFixed(1) + 'G';
    if (a >= 1e6) return (n / 1e6).toFixed(1) + 'M';
    if (a >= 1e4) return (n / 1e3).toFixed(0) + 'k';
    return String(n);
  }
  function fmtTime(ns) {
    if (ns === null || ns === undefined) return '';
    if (ns >= 1e9) return (ns / 1e9).toFixed(2) + ' s';
    return (ns / 1e6).toFixed(1) + ' ms';
  }
  function hashColor(name) {
    let h = 2166136261;
    for (let i = 0; i < name.length; ++i) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
    h >>>= 0;
    return 'hsl(' + (10 + h % 45) + ',' + (60 + (h >> 8) % 25) + '%,' + (58 + (h >> 16) % 14) + '%)';
  }
  function niceStep(max, ticks) {
    const raw = max / ticks;
    const p = Math.pow(10, Math.floor(Math.log10(raw || 1)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }
  function nearestIndex(sorted, x, key) {  // index of the element whose key is closest to x
    let lo = 0, hi = sorted.length - 1;
    if (hi < 0) return -1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (key(sorted[mid]) < x) lo = mid + 1; else hi = mid;
    }
    if (lo > 0 && Math.abs(key(sorted[lo - 1]) - x) <= Math.abs(key(sorted[lo]) - x)) return lo - 1;
    return lo;
  }

  // ---- one run's derived data -----------------------------------------------------------------
  function prepare(run, index) {
    run.index = index;
    run.tag = D.runs.length > 1 ? (index === 0 ? 'A' : 'B') : '';
    run.site = (i) => run.sites[i];
    // Time at a position: interpolated between the GCs, events and frame marks (which have
    // clock times); positions carry the CLI's points, times are approximate between them.
    const t = [];
    for (const g of run.gcs.rows) t.push([g[1], g[2]]);
    for (const e of run.events.rows) t.push([e[2], e[3]]);
    for (const f of run.frameMarks.rows) t.push([f[1], f[2]]);
    t.sort((a, b) => a[0] - b[0]);
    run.timeAt = function (limit) {
      if (!t.length) return null;
      const i = nearestIndex(t, limit, (p) => p[0]);
      const a = t[i];
      const b = t[Math.min(i + (a[0] < limit ? 1 : -1), t.length - 1)] || a;
      if (!b || b === a || b[0] === a[0]) return a[1];
      return a[1] + (b[1] - a[1]) * (limit - a[0]) / (b[0] - a[0]);
    };
    // Named marks for the hover: GCs, events, frame marks, sorted by position.
    run.marks = [];
    for (const g of run.gcs.rows) run.marks.push({limit: g[1], name: 'gc:' + g[0], kind: 'gc', gc: g});
    for (const e of run.events.rows) run.marks.push({limit: e[2], name: e[0] + '#' + e[1], kind: 'event'});
    for (const f of run.frameMarks.rows) run.marks.push({limit: f[1], name: 'frame:' + f[0], kind: 'frame'});
    run.marks.sort((a, b) => a.limit - b.limit);
    const s = run.series;
    s.total = s.limit.map((_, i) => s.bytes.reduce((acc, h) => acc + h[i], 0));
    s.totalObjects = s.limit.map((_, i) => s.objects.reduce((acc, h) => acc + h[i], 0));
    // Selection: blame at the peak (the point with the most live bytes), growth from the first
    // point to the peak (or to the end when the peak is first).
    let peak = 0;
    run.points.forEach((p, i) => { if (p.totalBytes > run.points[peak].totalBytes) peak = i; });
    run.sel = {point: peak, from: 0, to: peak > 0 ? peak : run.points.length - 1, flame: 'live'};
    const hash = new URLSearchParams(location.hash.slice(1));
    const want = hash.get(run.tag ? 'at' + run.tag : 'at') || hash.get('at');
    if (want) {
      const i = run.points.findIndex((p) => p.name === want);
      if (i >= 0) run.sel.point = i;
    }
    for (const [k, key] of [['from', 'from'], ['to', 'to']]) {
      const v = hash.get(k);
      const i = v ? run.points.findIndex((p) => p.name === v) : -1;
      if (i >= 0) run.sel[key] = i;
    }
    run.listeners = [];
    run.notify = () => run.listeners.forEach((f) => f());
    return run;
  }

  function pointLabel(p) { return p.name + (p.peak ? ' (peak)' : ''); }
  function pointSelect(run, key, onChange) {
    const s = el('select', {class: 'point-select', 'data-select': key, onchange: (e) => {
      run.sel[key] = Number(e.target.value);
      onChange();
    }});
    run.points.forEach((p, i) => {
      const o = el('option', {value: i, text: pointLabel(p) + ' \u2014 ' + fmtBytes(p.totalBytes)});
      if (i === run.sel[key]) o.selected = true;
      s.append(o);
    });
    return s;  // the views draw it anew on every change of the selection
  }

  // ---- stacks -------------------------------------------------------------------------------
  function stackView(run, stackId, caption) {
    const box = el('div', {class: 'stack'});
    if (caption) box.append(el('div', {class: 'stack-caption', text: caption}));
    if (stackId < 0) { box.append(el('div', {class: 'frame', text: '(no stack)'})); return box; }
    const st = run.stacks[stackId];
    const ol = el('ol', {class: 'frames'});
    for (let i = 0; i < st.length; i += 2) {
      const f = run.frames[st[i]], role = ROLE[st[i + 1]];
      ol.append(el('li', {class: 'frame ' + role, title: role},
        el('span', {class: 'fn', text: f[0]}),
        f[1] ? el('span', {class: 'mod', text: f[1]}) : null,
        f[2] ? el('span', {class: 'loc', text: f[2]}) : null,
        role === 'caller' ? null : el('span', {class: 'role', text: role})));
    }
    box.append(ol);
    return box;
  }
  // Folded stack (root first, names only) as a frame list, leaf first.
  function foldedView(run, flameIdx, caption) {
    const box = el('div', {class: 'stack'}, el('div', {class: 'stack-caption', text: caption}));
    const ol = el('ol', {class: 'frames'});
    const names = run.flameStacks[flameIdx].map((n) => run.names[n]).reverse();
    for (const n of names) ol.append(el('li', {class: 'frame caller'}, el('span', {class: 'fn', text: n})));
    box.append(ol);
    return box;
  }

  // ---- sortable table with expandable rows --------------------------------------------------
  // columns: {name, get(row), numeric, bytes, signed, abs, fmt(value), title(row)}; opts: {name, expand(row),
  // attrs(row), sort, desc, filter}
  function table(columns, rows, opts) {
    opts = opts || {};
    let sortCol = opts.sort === undefined ? -1 : opts.sort;
    let desc = opts.desc !== false, limit = ROWS_SHOWN, query = '';
    const wrap = el('div', {class: 'table-wrap'});
    const tableEl = el('table', {class: 'hm-table', 'data-table': opts.name || ''});
    const thead = el('thead'), tbody = el('tbody');
    tableEl.append(thead, tbody);
    const more = el('button', {class: 'more', onclick: () => { limit = Infinity; draw(); }});
    const count = el('span', {class: 'count'});
    const tools = el('div', {class: 'table-tools'},
      el('input', {type: 'search', placeholder: 'filter rows\u2026', oninput: (e) => {
        query = e.target.value.toLowerCase(); draw(); }}), count);
    function cell(c, r) {
      const v = c.get(r);
      if (!c.numeric) return el('td', {text: v, title: c.title ? c.title(r) : null});
      let text = c.fmt ? c.fmt(v) : c.bytes ? fmtBytes(v) : fmtNum(v);
      if (c.signed) text = (v > 0 ? '+' : '') + text;
      const cls = 'num' + (c.signed ? (v > 0 ? ' up' : v < 0 ? ' down' : '') : '');
      return el('td', {class: cls, text: text, title: c.bytes ? fmtNum(v) + ' bytes' : null});
    }
    function draw() {
      thead.textContent = '';
      const tr = el('tr');
      columns.forEach((c, i) => tr.append(el('th', {
        class: (c.numeric ? 'num ' : '') + (i === sortCol ? (desc ? 'sorted desc' : 'sorted asc') : ''),
        title: 'sort', onclick: () => {
          if (sortCol === i) desc = !desc; else { sortCol = i; desc = !!c.numeric; }
          draw();
        }, text: c.name})));
      thead.append(tr);
      let shown = rows;
      if (query) shown = rows.filter((r) => columns.some((c) => !c.numeric &&
        String(c.get(r)).toLowerCase().includes(query)));
      if (sortCol >= 0) {
        const c = columns[sortCol];
        const key = c.abs ? (r) => Math.abs(c.get(r)) : c.get;
        shown = shown.slice().sort((a, b) => {
          const x = key(a), y = key(b);
          const d = c.numeric ? x - y : String(x).localeCompare(String(y));
          return desc ? -d : d;
        });
      }
      tbody.textContent = '';
      const n = Math.min(shown.length, limit);
      for (let i = 0; i < n; ++i) {
        const r = shown[i];
        const row = el('tr', Object.assign({class: 'hm-row' + (opts.expand ? ' expandable' : '')},
          opts.attrs ? opts.attrs(r) : {}));
        columns.forEach((c) => row.append(cell(c, r)));
        if (opts.expand) {
          row.addEventListener('click', () => {
            const next = row.nextSibling;
            if (next && next.classList && next.classList.contains('detail')) {
              next.remove(); row.classList.remove('open'); return;
            }
            row.classList.add('open');
            row.after(el('tr', {class: 'detail'}, el('td', {colspan: columns.length}, opts.expand(r))));
          });
        }
        tbody.append(row);
      }
      count.textContent = fmtNum(shown.length) + (shown.length === 1 ? ' row' : ' rows') +
        (n < shown.length ? ', first ' + fmtNum(n) + ' shown' : '') +
        (opts.expand ? ' \u00b7 click a row for its stack' : '');
      more.textContent = 'show all ' + fmtNum(shown.length) + ' rows';
      more.style.display = n < shown.length ? '' : 'none';
    }
    draw();
    wrap.append(tools, tableEl, more);
    return wrap;
  }

  // ---- the timeline chart --------------------------------------------------------------------
  const chartState = {mode: 'bytes', yMax: {bytes: 0, objects: 0}};
  function chartYMax(mode) {
    let m = 0;
    for (const run of D.runs) {
      const s = run.series;
      const arr = mode === 'bytes' ? s.peak : s.totalObjects;
      for (const v of arr) m = Math.max(m, v);
      if (mode === 'bytes') for (const g of run.gcs.rows) m = Math.max(m, g[4]);
    }
    return m || 1;
  }

  function timeline(run) {
    const box = el('div', {class: 'chart-box'});
    const tip = el('div', {class: 'tip', hidden: true});
    const W = D.runs.length > 1 ? 660 : 1320, H = 300;
    const M = {l: 64, r: 14, t: 14, b: 58};
    const pw = W - M.l - M.r, ph = H - M.t - M.b;
    const first = run.summary.firstSeq, last = Math.max(run.summary.endSeq, first + 1);
    let x0 = first, x1 = last;  // the range shown: drag on the chart to zoom, double-click to reset
    const X = (l) => M.l + (l - x0) / (x1 - x0) * pw;
    const Xinv = (px) => x0 + (px - M.l) / pw * (x1 - x0);
    function draw() {
      box.textContent = '';
      const inView = (l) => l >= x0 && l <= x1;
      const mode = chartState.mode;
      const yMax = chartYMax(mode) * 1.06;
      const Y = (v) => M.t + ph - v / yMax * ph;
      const svg = sv('svg', {viewBox: '0 0 ' + W + ' ' + H, class: 'timeline', 'data-run': run.index,
        'data-mode': mode, preserveAspectRatio: 'xMidYMid meet'});
      const clipId = 'plot-clip-' + run.index;
      svg.append(sv('defs', {}, sv('clipPath', {id: clipId}, sv('rect', {x: M.l, y: 0, width: pw, height: M.t + ph + 5}))));
      const plot = sv('g', {'clip-path': 'url(#' + clipId + ')'});
      // y grid
      let step = niceStep(yMax, 5);
      if (mode === 'bytes' && yMax >= 1024) {  // binary steps: 256 KiB, 1 MiB, ...
        let unit = 1024;
        while (yMax / unit >= 1024) unit *= 1024;
        step = niceStep(yMax / unit, 5) * unit;
      }
      for (let v = 0; v <= yMax; v += step) {
        svg.append(sv('line', {x1: M.l, x2: W - M.r, y1: Y(v), y2: Y(v), class: 'grid'}));
        svg.append(sv('text', {x: M.l - 6, y: Y(v) + 4, class: 'axis y', text:
          mode === 'bytes' ? fmtBytes(v) : fmtCount(v)}));
      }
      // x axis: positions, with times where the log has them
      const xs = niceStep(x1 - x0, 7);
      for (let v = Math.ceil(x0 / xs) * xs; v <= x1; v += xs) {
        svg.append(sv('line', {x1: X(v), x2: X(v), y1: M.t + ph, y2: M.t + ph + 4, class: 'tick'}));
        const anchor = X(v) > W - M.r - 20 ? 'end' : 'middle';
        svg.append(sv('text', {x: X(v), y: M.t + ph + 16, class: 'axis x', 'text-anchor': anchor, text: fmtCount(v)}));
        const tm = run.timeAt(v);
        if (tm !== null) svg.append(sv('text', {x: X(v), y: M.t + ph + 28, class: 'axis x time',
          'text-anchor': anchor, text: fmtTime(tm)}));
      }
      svg.append(sv('text', {x: M.l + pw / 2, y: H - 4, class: 'axis label', text:
        'event sequence number (the CLI\u2019s seq:S) \u00b7 clock time below, interpolated between GCs and events \u00b7 ' +
        (x0 > first || x1 < last ? 'zoomed: double-click to see all' : 'drag to zoom')}));
      svg.append(plot);
      // growth range
      const pf = run.points[run.sel.from], pt = run.points[run.sel.to];
      if (pf && pt) {
        const a = Math.min(pf.limit, pt.limit), b = Math.max(pf.limit, pt.limit);
        plot.append(sv('rect', {x: X(a), y: M.t, width: Math.max(1, X(b) - X(a)), height: ph, class: 'growth-range'}));
      }
      // stacked areas per heap
      const s = run.series;
      const arrs = mode === 'bytes' ? s.bytes : s.objects;
      const base = new Array(s.limit.length).fill(0);
      arrs.forEach((h, hi) => {
        let top = '', bottom = '';
        for (let i = 0; i < s.limit.length; ++i) {
          top += (i ? 'L' : 'M') + X(s.limit[i]).toFixed(1) + ',' + Y(base[i] + h[i]).toFixed(1);
        }
        for (let i = s.limit.length - 1; i >= 0; --i) {
          bottom += 'L' + X(s.limit[i]).toFixed(1) + ',' + Y(base[i]).toFixed(1);
        }
        for (let i = 0; i < s.limit.length; ++i) base[i] += h[i];
        const name = run.heaps[hi];
        plot.append(sv('path', {d: top + bottom + 'Z', class: 'area', fill: HEAP_COLORS[name] || '#999',
          'data-heap': name}));
      });
      if (mode === 'bytes' && s.limit.length) {
        let d = '';
        for (let i = 0; i < s.limit.length; ++i) d += (i ? 'L' : 'M') + X(s.limit[i]).toFixed(1) + ',' + Y(s.peak[i]).toFixed(1);
        plot.append(sv('path', {d: d, class: 'peak-line'}));
      }
      // GC pauses: bars on a band under the plot, height by pause
      let maxPause = 0;
      for (const g of run.gcs.rows) maxPause = Math.max(maxPause, g[3]);
      for (const g of run.gcs.rows) {
        const h = maxPause ? Math.max(1, g[3] / maxPause * 14) : 1;
        plot.append(sv('rect', {x: X(g[1]) - 0.75, y: M.t + ph - h, width: 1.5, height: h, class: 'gc-pause'}));
      }
      // custom events and frame marks
      for (const e of run.events.rows) {
        plot.append(sv('line', {x1: X(e[2]), x2: X(e[2]), y1: M.t, y2: M.t + ph,
          class: 'event-mark' + (run.events.rows.length > 60 ? ' crowded' : ''),
          'data-point': e[0] + '#' + e[1]}));
      }
      // labels of the events, when they fit: horizontal, in rows at the top of the plot
      if (run.events.rows.length <= 30) {
        const ends = [];
        for (const e of run.events.rows) {
          const text = e[0] + '#' + e[1], w = text.length * 5.8;
          const x = X(e[2]) + 3 + w > W - M.r ? X(e[2]) - 3 - w : X(e[2]) + 3;
          let row = 0;
          while (row < ends.length && ends[row] > x) ++row;
          if (row > 3) continue;
          ends[row] = x + w + 4;
          const y = M.t + 22 + row * 12;
          plot.append(sv('rect', {x: x - 1, y: y - 9, width: w + 2, height: 11, class: 'event-label-bg'}));
          plot.append(sv('text', {x: x, y: y, class: 'event-label', text: text}));
        }
      }
      for (const f of run.frameMarks.rows) {
        plot.append(sv('line', {x1: X(f[1]), x2: X(f[1]), y1: M.t + ph, y2: M.t + ph + 3, class: 'frame-mark',
          'data-point': 'frame:' + f[0]}));
      }
      // The series' value at a sample position ('' when no sample is there).
      const seriesAt = (limit, arr) => {
        const i = nearestIndex(s.limit, limit, (v) => v);
        return i >= 0 && s.limit[i] === limit ? arr[i] : '';
      };
      // one point per GC: live bytes (objects) after it; smaller when they crowd
      let shownGcs = 0;
      for (const g of run.gcs.rows) if (inView(g[1])) ++shownGcs;
      const radius = Math.max(1.1, Math.min(2.6, pw / Math.max(1, shownGcs) / 3));
      for (const g of run.gcs.rows) {
        plot.append(sv('circle', {cx: X(g[1]), cy: Y(mode === 'bytes' ? g[4] : g[5]), r: radius, class: 'gc-point',
          'data-point': 'gc:' + g[0], 'data-live-bytes': g[4], 'data-live-objects': g[5],
          'data-series-bytes': seriesAt(g[1], s.total), 'data-series-objects': seriesAt(g[1], s.totalObjects),
          'data-pause-ns': g[3]}));
      }
      // blame points: diamonds on top
      run.points.forEach((p, i) => {
        if (!inView(p.limit)) return;
        const cx = X(p.limit), cy = M.t + 2;
        svg.append(sv('path', {d: 'M' + cx + ',' + (cy - 6) + 'l5,6l-5,6l-5,-6z',
          class: 'blame-point' + (i === run.sel.point ? ' selected' : ''), 'data-point': p.name,
          onclick: (ev) => { ev.stopPropagation(); run.sel.point = i; run.notify(); }},
          sv('title', {text: pointLabel(p) + ': blame and flame graph here'})));
      });
      // hover
      const cursor = sv('line', {x1: 0, x2: 0, y1: M.t, y2: M.t + ph, class: 'cursor', visibility: 'hidden'});
      const overlay = sv('rect', {x: M.l, y: M.t, width: pw, height: ph, class: 'overlay'});
      const brush = sv('rect', {x: 0, y: M.t, width: 0, height: ph, class: 'brush', visibility: 'hidden'});
      svg.append(cursor, brush, overlay);
      // Drag to zoom into a range of positions; double-click to see the whole log again.
      let dragFrom = null, dragged = false;
      const pxOf = (ev) => { const r = svg.getBoundingClientRect(); return (ev.clientX - r.left) / r.width * W; };
      overlay.addEventListener('mousedown', (ev) => { dragFrom = pxOf(ev); dragged = false; });
      overlay.addEventListener('mouseup', (ev) => {
        if (dragFrom === null) return;
        const a = Math.max(M.l, Math.min(dragFrom, pxOf(ev))), b = Math.min(M.l + pw, Math.max(dragFrom, pxOf(ev)));
        dragFrom = null;
        brush.setAttribute('visibility', 'hidden');
        if (b - a < 4) return;
        dragged = true;
        const n0 = Xinv(a), n1 = Xinv(b);
        x0 = Math.max(first, Math.floor(n0)); x1 = Math.min(last, Math.max(x0 + 10, Math.ceil(n1)));
        draw();
      });
      overlay.addEventListener('dblclick', () => { x0 = first; x1 = last; draw(); });
      const ext = sv('line', {x1: 0, x2: 0, y1: M.t, y2: M.t + ph, class: 'ext-cursor', visibility: 'hidden'});
      svg.append(ext);
      // The marker of a frame slider: kept across redraws (zoom, a new blame point).
      run.setCursor = (limit) => {
        run.cursorAt = limit;
        if (limit === null || !inView(limit)) { ext.setAttribute('visibility', 'hidden'); return; }
        ext.setAttribute('x1', X(limit)); ext.setAttribute('x2', X(limit));
        ext.setAttribute('data-limit', String(limit));
        ext.setAttribute('visibility', 'visible');
      };
      if (run.cursorAt !== undefined) run.setCursor(run.cursorAt);
      function at(ev) {
        const r = svg.getBoundingClientRect();
        const px = (ev.clientX - r.left) / r.width * W;
        const limit = Xinv(px);
        const tol = 6 / pw * (x1 - x0);
        const mi = nearestIndex(run.marks, limit, (m) => m.limit);
        const mark = mi >= 0 && Math.abs(run.marks[mi].limit - limit) <= tol ? run.marks[mi] : null;
        const si = nearestIndex(s.limit, limit, (v) => v);
        return {limit: mark ? mark.limit : Math.round(limit), mark: mark, si: si, px: px,
          py: (ev.clientY - r.top) / r.height * H};
      }
      overlay.addEventListener('mousemove', (ev) => {
        if (dragFrom !== null && ev.buttons === 1) {
          const a = Math.min(dragFrom, pxOf(ev)), b = Math.max(dragFrom, pxOf(ev));
          brush.setAttribute('x', a); brush.setAttribute('width', b - a); brush.setAttribute('visibility', 'visible');
        }
        const a = at(ev);
        cursor.setAttribute('x1', X(a.limit)); cursor.setAttribute('x2', X(a.limit));
        cursor.setAttribute('visibility', 'visible');
        const name = a.mark ? a.mark.name : 'seq:' + Math.max(0, a.limit - 1);
        tip.textContent = '';
        tip.append(el('div', {class: 'tip-point', text: name}));
        const tm = run.timeAt(a.limit);
        if (tm !== null) tip.append(el('div', {class: 'tip-time', text: '\u2248 ' + fmtTime(tm)}));
        if (a.mark && a.mark.gc) {
          const g = a.mark.gc;
          tip.append(el('div', {text: 'after GC ' + g[0] + ': ' + fmtBytes(g[4]) + ' in ' + fmtNum(g[5]) +
            ' objects; collected ' + fmtBytes(g[6]) + '; pause ' + (g[3] / 1e3).toFixed(0) + ' \u00b5s'}));
        }
        if (a.si >= 0) {
          const list = el('div', {class: 'tip-heaps'});
          run.heaps.forEach((h, hi) => list.append(el('div', {},
            el('span', {class: 'swatch', style: 'background:' + (HEAP_COLORS[h] || '#999')}),
            h + ': ' + fmtBytes(s.bytes[hi][a.si]) + ', ' + fmtNum(s.objects[hi][a.si]) + ' objects')));
          tip.append(el('div', {class: 'tip-sample', text: 'sample at seq:' + Math.max(0, s.limit[a.si] - 1) +
            ' (highest total since the sample before: ' + fmtBytes(s.peak[a.si]) + ')'}), list);
        }
        tip.append(el('div', {class: 'tip-hint', text: 'click: blame the nearest point \u00b7 shift-click: growth from it'}));
        tip.hidden = false;
        if (dragFrom === null) run.hoverListeners.forEach((f) => f(a.limit));
        const left = a.px / W * 100;
        tip.style.left = left > 60 ? '' : 'calc(' + left + '% + 12px)';
        tip.style.right = left > 60 ? 'calc(' + (100 - left) + '% + 12px)' : '';
        tip.style.top = Math.max(0, a.py / H * box.clientHeight - 20) + 'px';
      });
      overlay.addEventListener('mouseleave', () => { tip.hidden = true; cursor.setAttribute('visibility', 'hidden'); });
      overlay.addEventListener('click', (ev) => {
        if (dragged) { dragged = false; return; }
        const a = at(ev);
        const pi = nearestIndex(run.points, a.limit, (p) => p.limit);
        if (pi < 0) return;
        if (ev.shiftKey) run.sel.from = pi; else run.sel.point = pi;
        if (ev.shiftKey && run.sel.to < pi) run.sel.to = run.points.length - 1;
        run.notify();
        run.cursorListeners.forEach((f) => f(a.limit));
      });
      box.append(svg, tip);
    }
    run.cursorListeners = run.cursorListeners || [];
    run.hoverListeners = run.hoverListeners || [];
    run.redrawChart = draw;
    run.listeners.push(draw);
    draw();
    return box;
  }

  function legend(run) {
    const items = run.heaps.map((h) => el('span', {class: 'legend-item'},
      el('span', {class: 'swatch', style: 'background:' + (HEAP_COLORS[h] || '#999')}), h));
    items.push(el('span', {class: 'legend-item'}, el('span', {class: 'swatch dot'}), 'GC (live after it)'));
    items.push(el('span', {class: 'legend-item'}, el('span', {class: 'swatch pause'}), 'GC pause'));
    items.push(el('span', {class: 'legend-item'}, el('span', {class: 'swatch event'}), 'custom event'));
    items.push(el('span', {class: 'legend-item'}, el('span', {class: 'swatch diamond'}), 'point with a blame'));
    if (chartState.mode === 'bytes') items.push(el('span', {class: 'legend-item'}, el('span', {class: 'swatch peakl'}), 'highest total between samples'));
    return el('div', {class: 'legend'}, items);
  }

  // ---- blame, growth, churn -------------------------------------------------------------------
  function blameView(run) {
    const box = el('div');
    function draw() {
      box.textContent = '';
      const p = run.points[run.sel.point];
      const cols = [
        {name: 'function', get: (r) => run.sites[r[0]][0], title: (r) => run.sites[r[0]][2]},
        {name: 'module', get: (r) => run.sites[r[0]][1]},
        {name: 'live bytes', numeric: true, bytes: true, get: (r) => r[1]},
        {name: 'objects', numeric: true, get: (r) => r[2]},
        {name: 'share', numeric: true, get: (r) => r[1] / Math.max(1, p.totalBytes),
          fmt: (v) => (v * 100).toFixed(1) + '%'},
        {name: 'top types', get: (r) => r[6]}];
      const t = table(cols, p.rows, {name: 'blame', sort: 2, expand: (r) => stackView(run, r[3],
        'the row\u2019s stack with the most live bytes: ' + fmtBytes(r[4]) + ' in ' + fmtNum(r[5]) +
        ' objects (leaf first; frames the leaf-exclusion list skipped are marked excluded)'),
        attrs: (r) => ({'data-function': run.sites[r[0]][0], 'data-module': run.sites[r[0]][1],
          'data-location': run.sites[r[0]][2], 'data-bytes': r[1], 'data-objects': r[2]})});
      box.append(el('div', {class: 'controls'}, el('label', {text: 'at '}), pointSelect(run, 'point', run.notify),
        el('span', {class: 'summary', 'data-blame-point': p.name, text: fmtBytes(p.totalBytes) + ' live in ' +
          fmtNum(p.totalObjects) + ' objects, ' + fmtNum(p.sites) + ' functions' +
          (p.rows.length < p.sites ? ' (the ' + fmtNum(p.rows.length) + ' largest listed)' : '') +
          ' \u00b7 heapman blame LOG --at ' + p.name})), t);
    }
    run.listeners.push(draw);
    draw();
    return box;
  }

  function growthView(run) {
    const box = el('div');
    function draw() {
      box.textContent = '';
      const a = run.points[run.sel.from], b = run.points[run.sel.to];
      const bySite = new Map();
      const take = (p, side) => {
        for (const r of p.rows) {
          let g = bySite.get(r[0]);
          if (!g) bySite.set(r[0], g = {site: r[0], bA: 0, oA: 0, bB: 0, oB: 0, stack: -1});
          if (side) { g.bB = r[1]; g.oB = r[2]; g.stack = r[3]; } else { g.bA = r[1]; g.oA = r[2]; if (g.stack < 0) g.stack = r[3]; }
        }
      };
      take(a, 0); take(b, 1);
      const rows = [...bySite.values()].filter((g) => g.bA !== g.bB || g.oA !== g.oB);
      const cols = [
        {name: 'function', get: (g) => run.sites[g.site][0], title: (g) => run.sites[g.site][2]},
        {name: 'module', get: (g) => run.sites[g.site][1]},
        {name: 'bytes at ' + a.name, numeric: true, bytes: true, get: (g) => g.bA},
        {name: 'bytes at ' + b.name, numeric: true, bytes: true, get: (g) => g.bB},
        {name: '\u0394 bytes', numeric: true, bytes: true, signed: true, abs: true, get: (g) => g.bB - g.bA},
        {name: '\u0394 objects', numeric: true, signed: true, get: (g) => g.oB - g.oA}];
      const cut = a.rows.length < a.sites || b.rows.length < b.sites;
      box.append(el('div', {class: 'controls'}, el('label', {text: 'from '}), pointSelect(run, 'from', run.notify),
        el('label', {text: ' to '}), pointSelect(run, 'to', run.notify),
        el('span', {class: 'summary', text: fmtSigned(b.totalBytes - a.totalBytes, fmtBytes) + ' live, ' +
          fmtSigned(b.totalObjects - a.totalObjects, fmtNum) + ' objects \u00b7 heapman diff LOG --from ' +
          a.name + ' --to ' + b.name + (cut ? ' (only the functions listed at both points)' : '')})),
      table(cols, rows, {name: 'growth', sort: 4, expand: (g) => stackView(run, g.stack,
        'the function\u2019s stack with the most live bytes at ' + (g.bB ? b.name : a.name)),
        attrs: (g) => ({'data-function': run.sites[g.site][0], 'data-delta-bytes': g.bB - g.bA})}));
    }
    run.listeners.push(draw);
    draw();
    return box;
  }

  function churnView(run) {
    const c = run.churn;
    // A row's stack: the garbage stack with the most bytes through its function.
    const heaviest = new Map();
    run.garbageFlame.forEach((line, li) => {
      for (const n of new Set(run.flameStacks[line[0]])) {
        const cur = heaviest.get(n);
        if (cur === undefined || run.garbageFlame[cur][1] < line[1]) heaviest.set(n, li);
      }
    });
    const nameIdx = new Map(run.names.map((n, i) => [n, i]));
    const cols = [
      {name: 'function', get: (r) => run.sites[r[0]][0], title: (r) => run.sites[r[0]][2]},
      {name: 'module', get: (r) => run.sites[r[0]][1]},
      {name: 'allocated', numeric: true, bytes: true, get: (r) => r[2]},
      {name: 'collected', numeric: true, bytes: true, get: (r) => r[4]},
      {name: 'freed', numeric: true, bytes: true, get: (r) => r[6]},
      {name: 'garbage', numeric: true, bytes: true, get: (r) => r[4] + r[6]},
      {name: 'garbage objects', numeric: true, get: (r) => r[3] + r[5]}];
    return el('div', {},
      el('div', {class: 'controls'}, el('span', {class: 'summary', text: 'from ' + c.from + ' to ' + c.to + ': ' +
        fmtBytes(c.collectedBytes) + ' collected by GCs (' + fmtNum(c.collectedObjects) + ' objects), ' +
        fmtBytes(c.freedBytes) + ' freed explicitly (' + fmtNum(c.freedObjects) + ') \u00b7 heapman churn LOG'})),
      table(cols, c.rows, {name: 'churn', sort: 5, expand: (r) => {
        const ni = nameIdx.get(run.sites[r[0]][0]);
        const li = ni === undefined ? undefined : heaviest.get(ni);
        if (li === undefined) return el('div', {class: 'stack', text: '(no garbage stack through this function)'});
        const line = run.garbageFlame[li];
        return foldedView(run, line[0], 'the garbage stack with the most bytes through this function: ' +
          fmtBytes(line[1]) + ' in ' + fmtNum(line[2]) + ' objects (leaf first)');
      }, attrs: (r) => ({'data-function': run.sites[r[0]][0], 'data-garbage-bytes': r[4] + r[6]})}));
  }

  // ---- icicle flame graph ----------------------------------------------------------------------
  function buildTree(run, lines) {
    const root = {name: 'all', value: 0, objects: 0, kids: new Map(), depth: 0, parent: null};
    let maxDepth = 0;
    for (const [si, bytes, objects] of lines) {
      let n = root;
      n.value += bytes; n.objects += objects;
      for (const ni of run.flameStacks[si]) {
        let k = n.kids.get(ni);
        if (!k) n.kids.set(ni, k = {name: run.names[ni], value: 0, objects: 0, kids: new Map(), depth: n.depth + 1, parent: n});
        k.value += bytes; k.objects += objects;
        n = k;
      }
      maxDepth = Math.max(maxDepth, n.depth);
    }
    root.maxDepth = maxDepth;
    return root;
  }

  function flameView(run) {
    const box = el('div', {class: 'flame-box'});
    let zoom = null, search = '';
    const ROW = 18;
    function draw() {
      box.textContent = '';
      const p = run.points[run.sel.point];
      const live = run.sel.flame === 'live';
      const tree = buildTree(run, live ? p.flame : run.garbageFlame);
      let focus = tree;
      if (zoom) {  // find the zoomed path again in this tree
        for (const name of zoom) {
          let next = null;
          for (const k of focus.kids.values()) if (k.name === name) next = k;
          if (!next) break;
          focus = next;
        }
      }
      const modeSel = el('select', {class: 'flame-mode', onchange: (e) => { run.sel.flame = e.target.value; zoom = null; draw(); }},
        el('option', {value: 'live', text: 'live set at the blame point', selected: live}),
        el('option', {value: 'garbage', text: 'garbage over the whole log', selected: !live}));
      const info = el('span', {class: 'summary', text: (live ? 'live at ' + p.name : 'garbage from ' + run.churn.from +
        ' to ' + run.churn.to) + ': ' + fmtBytes(tree.value) + ' in ' + fmtNum(tree.objects) +
        ' objects \u00b7 roots at the top \u00b7 click to zoom' + (live ? ' \u00b7 heapman stacks LOG --at ' + p.name : '')});
      const find = el('input', {type: 'search', placeholder: 'highlight function\u2026', value: search,
        oninput: (e) => { search = e.target.value.toLowerCase(); paint(); }});
      box.append(el('div', {class: 'controls'}, modeSel, el('label', {text: ' at '}), pointSelect(run, 'point', run.notify), find, info));
      const ancestors = [];
      for (let n = focus; n; n = n.parent) ancestors.unshift(n);
      const canvas = el('div', {class: 'flame', 'data-mode': run.sel.flame});
      let rowsDrawn = 0;
      const tip = el('div', {class: 'tip', hidden: true});
      const cells = [];
      function addCell(n, leftPct, widthPct, row, isAncestor) {
        const c = el('div', {class: 'cell' + (isAncestor ? ' ancestor' : ''),
          style: 'left:' + leftPct + '%;width:' + widthPct + '%;top:' + (row * ROW) + 'px;background:' + hashColor(n.name),
          'data-name': n.name, 'data-bytes': n.value,
          onclick: () => {
            const path = [];
            for (let m = n; m && m.parent; m = m.parent) path.unshift(m.name);
            zoom = path.length ? path : null;
            draw();
          },
          onmousemove: (ev) => {
            const r = canvas.getBoundingClientRect();
            tip.textContent = '';
            tip.append(el('div', {class: 'tip-point', text: n.name}),
              el('div', {text: fmtBytes(n.value) + ' (' + (n.value / Math.max(1, tree.value) * 100).toFixed(1) +
                '% of all) in ' + fmtNum(n.objects) + ' objects'}));
            tip.hidden = false;
            const x = ev.clientX - r.left;
            tip.style.left = x > r.width * 0.6 ? '' : (x + 14) + 'px';
            tip.style.right = x > r.width * 0.6 ? (r.width - x + 14) + 'px' : '';
            tip.style.top = (ev.clientY - r.top + 14) + 'px';
          },
          onmouseleave: () => { tip.hidden = true; }},
        widthPct > 2.5 ? n.name : '');
        cells.push(c);
        canvas.append(c);
        rowsDrawn = Math.max(rowsDrawn, row + 1);
      }
      ancestors.forEach((n, i) => { if (n !== focus) addCell(n, 0, 100, i, true); });
      const minPct = 0.08;
      (function layout(n, left, width, row) {
        addCell(n, left, width, row, false);
        let x = left;
        const kids = [...n.kids.values()].sort((a, b) => b.value - a.value);
        for (const k of kids) {
          const w = n.value ? width * k.value / n.value : 0;
          if (w >= minPct) layout(k, x, w, row + 1);
          x += w;
        }
      })(focus, 0, 100, ancestors.length - 1);
      function paint() {
        for (const c of cells) c.classList.toggle('match', !!search && c.getAttribute('data-name').toLowerCase().includes(search));
      }
      paint();
      canvas.style.height = (rowsDrawn * ROW + 2) + 'px';
      canvas.append(tip);
      box.append(canvas);
    }
    run.listeners.push(draw);
    draw();
    return box;
  }

  // ---- sections of other kinds ---------------------------------------------------------------
  // A renderer draws a section's `data` into `box`. To add a kind, add `renderers.KIND =
  // function (box, data, run, id)` here; `run` is the section's run (or null for the whole
  // page), `id` the section's.
  const renderers = {
    error: function (box, message) { box.append(el('p', {class: 'warning', text: String(message)})); },
    // {"columns":[{"name","numeric","bytes","signed"}], "rows":[[...]], "details":[[str...]]?,
    //  "note":"...", "sort":col, "sortAbs":bool, "open":bool (the first row opened at load)}
    table: function (box, data, run, id) {
      const cols = data.columns.map((c, i) => ({name: c.name, numeric: !!c.numeric, bytes: !!c.bytes,
        signed: !!c.signed || /^\u0394/.test(c.name), abs: !!data.sortAbs && /^\u0394/.test(c.name), get: (r) => r[i]}));
      const rows = data.rows.map((r, i) => Object.assign(r.slice(), {index: i}));
      if (data.note) box.append(el('p', {class: 'note', text: data.note}));
      box.append(table(cols, rows, {name: id, sort: data.sort, expand: data.details ? (r) => {
        const chain = el('ol', {class: 'chain'});
        for (const step of data.details[r.index] || []) chain.append(el('li', {text: step}));
        return chain;
      } : null}));
      if (data.open) {  // the first row opened at load (the top leak suspect's root path)
        const first = box.querySelector('tr.expandable');
        if (first) first.click();
      }
    },
    // {"frames":[{"seq":S,"point":"gc:N","image":"data:image/png;base64,...","label":"...",
    //  "liveBytes":B}] (label, liveBytes optional), "note":"..."}:
    // a slider over the frames; moving it shows the frame's position on the run's chart, and
    // hovering or clicking the chart moves it to the frame nearest the pointer.
    frames: function (box, data, run) {
      const frames = data.frames || [];
      if (data.note) box.append(el('p', {class: 'note', text: data.note}));
      if (!frames.length) { box.append(el('p', {class: 'note', text: 'no frames'})); return; }
      const img = el('img', {class: 'frame-image', alt: 'frame'});
      const label = el('span', {class: 'summary'});
      const slider = el('input', {type: 'range', min: 0, max: frames.length - 1, value: 0, class: 'frame-slider'});
      function show(i) {
        const f = frames[i];
        img.src = f.image;
        img.setAttribute('data-point', f.point || ('seq:' + f.seq));
        img.setAttribute('data-limit', String(f.seq + 1));
        label.textContent = (f.label || f.point || ('seq:' + f.seq)) + ' (' + (i + 1) + ' of ' + frames.length + ')' +
          (typeof f.liveBytes === 'number' ? ': ' + fmtBytes(f.liveBytes) + ' live' : '');
        slider.value = String(i);
        if (run && run.setCursor) run.setCursor(f.seq + 1);
      }
      slider.addEventListener('input', () => show(Number(slider.value)));
      // Hovering or clicking the chart: the frame nearest the pointer (the box keeps the
      // position and the frame it chose, for the browser tests).
      const follow = (how) => (limit) => {
        const i = Math.max(0, nearestIndex(frames, limit - 1, (f) => f.seq));
        box.setAttribute('data-' + how + '-limit', String(limit));
        box.setAttribute('data-' + how + '-frame', String(i));
        if (String(i) !== slider.value || how === 'chart') show(i);
      };
      if (run) {
        run.cursorListeners.push(follow('chart'));
        run.hoverListeners.push(follow('hover'));
      }
      box.classList.add('frames-box');
      box.append(el('div', {class: 'controls'}, slider, label), img);
      show(0);
    }
  };
  /*@HEAPMAN_RENDERERS@*/

  // ---- page --------------------------------------------------------------------------------
  function card(title, id, kids, help) {
    return el('section', {class: 'card', id: id},
      el('h2', {}, title, help ? el('span', {class: 'help', text: help}) : null), kids);
  }
  function perRun(make) {
    return el('div', {class: 'runs n' + D.runs.length}, D.runs.map((run) => el('div', {class: 'run'},
      D.runs.length > 1 ? el('h3', {class: 'run-title', text: run.tag + ': ' + run.log}) : null, make(run))));
  }
  function stat(label, value, title) {
    return el('div', {class: 'stat', title: title || null}, el('div', {class: 'stat-value', text: value}),
      el('div', {class: 'stat-label', text: label}));
  }
  function summary(run) {
    const s = run.summary;
    const peak = run.points.find((p) => p.peak) || run.points[run.points.length - 1];
    const end = run.points[run.points.length - 1];
    const box = el('div', {class: 'stats'},
      stat('peak live', fmtBytes(peak.totalBytes), 'at ' + peak.name + ' (' + fmtNum(peak.totalBytes) + ' bytes)'),
      stat('live at the end', fmtBytes(end.totalBytes), fmtNum(end.totalObjects) + ' objects'),
      stat('events', fmtCount(s.events), fmtNum(s.events) + ' events: ' + fmtNum(s.allocs) + ' allocations, ' + fmtNum(s.frees) + ' frees'),
      stat('GCs', fmtNum(s.gcs), 'total pause ' + fmtTime(s.gcPauseNs)),
      stat('GC pause', fmtTime(s.gcPauseNs)),
      stat('garbage', fmtBytes(run.churn.collectedBytes + run.churn.freedBytes)),
      stat('custom events', fmtNum(s.customEvents)),
      stat('frames', fmtNum(s.frameMarks)));
    const out = el('div', {}, box);
    for (const w of s.warnings) out.append(el('p', {class: 'warning', text: '\u26a0 ' + w}));
    if (!run.symbolized) out.append(el('p', {class: 'warning', text: 'native frames are not symbolized (--no-symbols)'}));
    return out;
  }
  function differences() {
    const [a, b] = D.runs;
    const endA = a.points[a.points.length - 1], endB = b.points[b.points.length - 1];
    const peakA = a.points.find((p) => p.peak) || endA, peakB = b.points.find((p) => p.peak) || endB;
    const row = (name, va, vb, f) => el('tr', {}, el('td', {text: name}), el('td', {class: 'num', text: f(va)}),
      el('td', {class: 'num', text: f(vb)}), el('td', {class: 'num ' + (vb > va ? 'up' : vb < va ? 'down' : ''), text: fmtSigned(vb - va, f)}));
    return el('table', {class: 'hm-table diff-summary'},
      el('thead', {}, el('tr', {}, el('th', {text: ''}), el('th', {class: 'num', text: 'A: ' + a.log}),
        el('th', {class: 'num', text: 'B: ' + b.log}), el('th', {class: 'num', text: 'B \u2212 A'}))),
      el('tbody', {},
        row('peak live bytes', peakA.totalBytes, peakB.totalBytes, fmtBytes),
        row('live bytes at the end', endA.totalBytes, endB.totalBytes, fmtBytes),
        row('live objects at the end', endA.totalObjects, endB.totalObjects, fmtNum),
        row('events', a.summary.events, b.summary.events, fmtNum),
        row('GCs', a.summary.gcs, b.summary.gcs, fmtNum),
        row('GC pause (ms)', a.summary.gcPauseNs / 1e6, b.summary.gcPauseNs / 1e6, (v) => v.toFixed(1)),
        row('garbage bytes', a.churn.collectedBytes + a.churn.freedBytes, b.churn.collectedBytes + b.churn.freedBytes, fmtBytes)));
  }
  function about(pageBytes) {
    const ul = el('ul', {class: 'about'});
    for (const run of D.runs) {
      const pre = D.runs.length > 1 ? run.tag + ': ' : '';
      ul.append(el('li', {text: pre + 'The live series is ' + run.series.method + '.'}));
      ul.append(el('li', {text: pre + 'GCs drawn: ' + fmtNum(run.gcs.rows.length) + ' of ' + fmtNum(run.gcs.total) +
        '; custom events: ' + fmtNum(run.events.rows.length) + ' of ' + fmtNum(run.events.total) + '; frame marks: ' +
        fmtNum(run.frameMarks.rows.length) + ' of ' + fmtNum(run.frameMarks.total) + ' (evenly chosen when there are more).'}));
      ul.append(el('li', {text: pre + 'Blame and the live flame graph are computed at ' + run.points.length +
        ' points: the custom events (else the GCs) evenly chosen, the sample with the most live bytes, the end, and any --at. ' +
        'Each lists its largest functions (exact, as heapman blame); flame graphs keep the heaviest stacks and sum the rest.'}));
    }
    ul.append(el('li', {text: 'Page: ' + fmtBytes(pageBytes) + ', drawn in ' + '%RENDER%' + ' ms.'}));
    return ul;
  }

  function render() {
    D.runs.forEach(prepare);
    const app = document.getElementById('app');
    app.textContent = '';
    const title = D.runs.map((r) => r.log).join(' vs ');
    document.title = 'HeapMan \u2014 ' + title;
    const nav = el('nav', {}, el('span', {class: 'brand', text: 'HeapMan'}), el('span', {class: 'title', text: title}));
    const links = [['timeline', 'Timeline'], ['blame', 'Blame'], ['growth', 'Growth'], ['churn', 'Churn'], ['flame', 'Flame graph']];
    if (D.runs.length > 1) links.unshift(['differences', 'Differences']);
    for (const s of D.sections) if (!links.some((l) => l[0] === s.id)) links.push([s.id, s.title]);
    links.push(['about', 'About the data']);
    const linkBox = el('span', {class: 'links'});
    const seen = new Set();
    for (const [id, text] of links) {
      if (seen.has(text)) continue;
      seen.add(text);
      linkBox.append(el('a', {href: '#' + id, text: text, onclick: (e) => {
        e.preventDefault(); const t = document.getElementById(id); if (t) t.scrollIntoView();
      }}));
    }
    nav.append(linkBox);
    app.append(nav);
    app.append(perRun(summary));
    if (D.runs.length > 1) {
      const extra = D.sections.filter((s) => s.run < 0);
      app.append(card('Differences', 'differences', [differences()], 'A and B at their ends'));
      for (const s of extra) {
        const box = el('div');
        (renderers[s.kind] || unknown(s.kind))(box, s.data, null, s.id);
        app.append(card(s.title, s.id, [box]));
      }
    }
    const modeSel = el('select', {class: 'chart-mode', onchange: (e) => {
      chartState.mode = e.target.value;
      D.runs.forEach((r) => { r.redrawChart(); r.legendBox.replaceWith(r.legendBox = legend(r)); });
    }}, el('option', {value: 'bytes', text: 'live bytes'}), el('option', {value: 'objects', text: 'live objects'}));
    app.append(card('Live heap over time', 'timeline', [el('div', {class: 'controls'}, modeSel),
      perRun((run) => { const c = timeline(run); run.legendBox = legend(run); return el('div', {}, c, run.legendBox); })],
      'per heap kind, stacked; hover for the point names the CLI takes'));
    app.append(card('Blame', 'blame', [perRun(blameView)], 'who holds the live bytes at a point'));
    app.append(card('Growth', 'growth', [perRun(growthView)], 'what grew between two points'));
    app.append(card('Churn', 'churn', [perRun(churnView)], 'who makes the garbage, whole log'));
    app.append(card('Flame graph', 'flame', [perRun(flameView)], 'icicle: callers above callees, width = bytes'));
    for (const s of D.sections) {
      if (s.run < 0 && D.runs.length > 1) continue;  // drawn after the comparison
      const run = D.runs[s.run] || null;
      const box = el('div');
      (renderers[s.kind] || unknown(s.kind))(box, s.data, run, s.id);
      app.append(card(s.title + (D.runs.length > 1 && run ? ' \u2014 ' + run.tag + ': ' + run.log : ''), s.id, [box]));
    }
    const pageBytes = document.documentElement.outerHTML.length;
    const aboutBox = about(pageBytes);
    app.append(card('About the data', 'about', [aboutBox]));
    const ms = performance.now();
    aboutBox.lastChild.textContent = aboutBox.lastChild.textContent.replace('%RENDER%', ms.toFixed(0));
    const root = document.documentElement;
    root.setAttribute('data-render-ms', ms.toFixed(1));
    root.setAttribute('data-ready', '1');
    if (new URLSearchParams(location.hash.slice(1)).get('selftest') === '1') selfTest(root);
  }

  // The browser tests' exercise (#selftest=1 in the URL): hovers and clicks every kind of
  // control once with synthetic events, so that an error in a handler shows in data-js-errors;
  // what it saw goes into data-selftest-* attributes.
  function selfTest(root) {
    const at = (e, type, fx, fy, extra) => {
      const r = e.getBoundingClientRect();
      e.dispatchEvent(new MouseEvent(type, Object.assign({bubbles: true, clientX: r.left + r.width * fx,
        clientY: r.top + r.height * fy}, extra || {})));
    };
    const tips = [];
    let zoomed = 0;
    document.querySelectorAll('.chart-box').forEach((box) => {
      const o = () => box.querySelector('.overlay');  // a redraw replaces it
      at(o(), 'mousemove', 0.5, 0.5);
      const tip = box.querySelector('.tip');
      tips.push(tip.hidden ? '' : tip.querySelector('.tip-point').textContent);
      at(o(), 'mouseleave', 0.5, 0.5);
      at(o(), 'mousedown', 0.3, 0.5);
      at(o(), 'mousemove', 0.6, 0.5, {buttons: 1});
      at(o(), 'mouseup', 0.6, 0.5);
      if (/zoomed/.test(box.querySelector('.axis.label').textContent)) ++zoomed;
      at(o(), 'mousemove', 0.5, 0.5);
      at(o(), 'dblclick', 0.5, 0.5);
      at(o(), 'click', 0.25, 0.5, {shiftKey: true});
      at(o(), 'click', 0.75, 0.5);
    });
    root.setAttribute('data-selftest-tips', tips.join(' '));
    root.setAttribute('data-selftest-zoomed', String(zoomed));
    document.querySelectorAll('select').forEach((s) => {
      if (s.options.length < 2) return;
      s.selectedIndex = s.getAttribute('data-select') === 'from' ? 0 : s.options.length - 1;
      s.dispatchEvent(new Event('change'));
    });
    document.querySelectorAll('table.hm-table th').forEach((th) => th.click());
    let details = 0;
    document.querySelectorAll('table.hm-table').forEach((t) => {
      const row = t.querySelector('tr.expandable');
      if (row && !row.classList.contains('open')) row.click();
      if (row) details += t.querySelectorAll('tr.detail').length;
    });
    root.setAttribute('data-selftest-details', String(details));
    document.querySelectorAll('.flame').forEach((f) => {
      const cells = f.querySelectorAll('.cell');
      if (cells.length > 1) { at(cells[1], 'mousemove', 0.5, 0.5); cells[1].click(); }
    });
    document.querySelectorAll('input[type=search]').forEach((i) => {
      i.value = 'a'; i.dispatchEvent(new Event('input'));
    });
    document.querySelectorAll('input.frame-slider').forEach((i) => {
      i.value = i.max; i.dispatchEvent(new Event('input'));
    });
    root.setAttribute('data-selftest', 'done');
  }
  function unknown(kind) {
    return (box) => box.append(el('p', {class: 'warning', text: 'this page has no renderer for sections of kind "' + kind + '"'}));
  }

  render();
})();
