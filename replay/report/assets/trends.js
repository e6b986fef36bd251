  // ---- trends across the runs of a store (heapman report --store) -------------------------
  // Put into report.js's closure by Builder::addRenderer: uses its helpers (el, sv, table,
  // niceStep, fmt*). {"tag", "store", "thisLog": {logId, stored, label}, "figures": [{id, name,
  // unit, point?, rows: [[tag, logId, value]], step: null | {at, tag, logId, before, after,
  // rise, noise}, warnings}], "notes"} (heapman/store/across_runs.h). A bar chart per figure
  // (the live bytes at the log's custom events share one, with a menu), the runs from the step
  // on in another colour with the means either side, this log's bar outlined; then one table of
  // every figure per run (a dash where a run has none: no leak figures without a repeated event).
  renderers.trends = function (box, data) {
    const figs = data.figures || [];
    const thisId = data.thisLog ? data.thisLog.logId : '';
    const fmtOf = (f) => f.unit === 'bytes' ? fmtBytes : f.unit === 'ns' ? fmtTime : fmtNum;
    box.classList.add('trends-box');
    box.append(el('p', {class: 'note', text: 'Runs of ' + data.store + ' in the order of their tag \u201c' +
      data.tag + '\u201d' + (data.thisLog ? '; this report\u2019s log is ' + (data.thisLog.stored ?
      'the run ' + data.tag + ' ' + data.thisLog.label + ' (outlined)' : 'not stored: drawn last as \u201cthis log\u201d (outlined)') : '') +
      '. A step: the least-squares change-point, as heapman trend finds it.'}));
    for (const n of data.notes || []) box.append(el('p', {class: 'note', text: n}));
    function chart(f) {
      const W = 640, H = 230, M = {l: 70, r: 12, t: 12, b: 48};
      const pw = W - M.l - M.r, ph = H - M.t - M.b;
      const rows = f.rows, n = rows.length, fmt = fmtOf(f);
      const svg = sv('svg', {viewBox: '0 0 ' + W + ' ' + H, class: 'trend-chart', 'data-figure': f.id,
        preserveAspectRatio: 'xMidYMid meet'});
      if (!n) {
        svg.append(sv('text', {x: M.l + 10, y: M.t + ph / 2, class: 'axis label', text: 'no runs'}));
        return svg;
      }
      let max = 0;
      for (const r of rows) max = Math.max(max, r[2]);
      const yMax = (max || 1) * 1.06;
      const Y = (v) => M.t + ph - v / yMax * ph;
      let step = niceStep(yMax, 4);
      if (f.unit === 'bytes' && yMax >= 1024) {  // binary steps, as the timeline's
        let unit = 1024;
        while (yMax / unit >= 1024) unit *= 1024;
        step = niceStep(yMax / unit, 4) * unit;
      }
      if (f.unit === 'count') step = Math.max(1, Math.round(step));  // no 2.5 GCs
      for (let v = 0; v <= yMax; v += step) {
        svg.append(sv('line', {x1: M.l, x2: W - M.r, y1: Y(v), y2: Y(v), class: 'grid'}));
        svg.append(sv('text', {x: M.l - 6, y: Y(v) + 4, class: 'axis y', text: fmt(v)}));
      }
      const slot = pw / n, bar = Math.max(1, slot * 0.7);
      const X = (i) => M.l + slot * i;
      const s = f.step;
      rows.forEach((r, i) => {
        const after = s && i >= s.at, mine = r[1] === thisId;
        svg.append(sv('rect', {x: X(i) + (slot - bar) / 2, y: Y(r[2]), width: bar, height: Math.max(0, M.t + ph - Y(r[2])),
          class: 'trend-bar' + (after ? ' after' : '') + (mine ? ' this-log' : ''), fill: after ? '#dd8452' : '#4c72b0',
          stroke: mine ? '#111' : 'none', 'stroke-width': mine ? 2 : 0, 'data-tag': r[0], 'data-log-id': r[1],
          'data-value': r[2]}, sv('title', {text: data.tag + ' ' + r[0] + ': ' + fmt(r[2]) +
          (f.unit === 'bytes' ? ' (' + fmtNum(r[2]) + ' bytes)' : '') + (mine ? ' \u2014 this log' : '')})));
      });
      if (s) {
        const split = X(s.at);
        svg.append(sv('line', {x1: M.l, x2: split, y1: Y(s.before), y2: Y(s.before), stroke: '#1f3f7a',
          'stroke-width': 2, class: 'trend-mean'}));
        svg.append(sv('line', {x1: split, x2: W - M.r, y1: Y(s.after), y2: Y(s.after), stroke: '#a03010',
          'stroke-width': 2, class: 'trend-mean'}));
      }
      // Under the bars: the first and last tags, this log's and the step's.
      const labels = new Map([[0, rows[0][0]], [n - 1, rows[n - 1][0]]]);
      rows.forEach((r, i) => { if (r[1] === thisId) labels.set(i, r[0]); });
      for (const [i, text] of labels) {
        const x = X(i) + slot / 2;
        svg.append(sv('text', {x: x, y: M.t + ph + 14, class: 'axis x', 'text-anchor': x > W - 60 ? 'end' : 'middle', text: text}));
      }
      svg.append(sv('text', {x: M.l + pw / 2, y: H - 6, class: 'axis label trend-step', text: s ?
        'step at ' + data.tag + ' ' + s.tag + ': ' + fmtSigned(s.rise, fmt) + ' (' + fmt(s.before) + ' \u2192 ' +
        fmt(s.after) + ' on average; noise ' + fmt(s.noise) + ')' : 'no step (no rise above 3\u00d7 the noise)'}));
      return svg;
    }
    function figureBox(f, extra) {
      return el('div', {class: 'trend', 'data-figure': f.id},
        el('h3', {class: 'run-title', text: f.name}), extra || null, chart(f),
        (f.warnings || []).map((w) => el('p', {class: 'warning', text: '\u26a0 ' + w})));
    }
    const grid = el('div', {class: 'trends', style: 'display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:12px'});
    const points = figs.filter((f) => f.point);
    for (const f of figs) {
      if (f.point) {
        if (f !== points[points.length - 1]) continue;  // one box for all the points, where the last is
        const holder = el('div');
        let chosen = points.length - 1;
        const sel = el('select', {class: 'point-select', 'data-select': 'trend-point', onchange: (e) => {
          chosen = Number(e.target.value);
          holder.firstChild.replaceWith(figureBox(points[chosen], sel));
        }});
        points.forEach((p, i) => sel.append(el('option', {value: i, text: p.point, selected: i === chosen})));
        holder.append(figureBox(points[chosen], sel));
        grid.append(holder);
      } else {
        grid.append(figureBox(f));
      }
    }
    box.append(grid);
    // One table: every figure but the points' per run (the rows of peak give the runs' order).
    const cols = figs.filter((f) => !f.point);
    const byRun = new Map();
    const order = [];
    for (const f of cols) for (const r of f.rows) {
      if (!byRun.has(r[1])) { byRun.set(r[1], {tag: r[0], id: r[1], v: {}}); order.push(r[1]); }
      byRun.get(r[1]).v[f.id] = r[2];
    }
    const stepOf = (id) => cols.filter((f) => f.step && f.step.logId === id).map((f) => f.name).join(', ');
    const columns = [{name: data.tag, get: (r) => r.tag}, {name: 'run', get: (r) => r.id + (r.id === thisId ? ' (this log)' : '')}]
      .concat(cols.map((f) => ({name: f.name, numeric: true, get: (r) => r.v[f.id] === undefined ? null : r.v[f.id],
        fmt: (v) => v === null ? '\u2014' : f.unit === 'ns' ? fmtTime(v) : fmtNum(v)})))  // —: the run has no such figure
      .concat([{name: 'step of', get: (r) => stepOf(r.id)}]);
    box.append(table(columns, order.map((id) => byRun.get(id)), {name: 'trend-runs',
      attrs: (r) => ({'data-log-id': r.id, 'data-this-log': r.id === thisId ? '1' : null})}));
  };
