// heapman serve's page driven in Debian's headless Chromium (puppeteer-core over the DevTools
// protocol) against a real `heapman serve` of a real recording (samples/gc_game on bdwgc, RAM
// dumps after each level). What the page shows is checked against the heapman commands this
// script runs itself:
//   - 5 clicks on the timeline: each blame table equals `heapman blame --at seq:S --json -`, the
//     flame graph's frames are `heapman stacks --at seq:S`'s folded stacks (its top bar the
//     blame's live bytes, each frame's width its bytes over the top's), the heap map's PNG is
//     byte-equal to `heapman map --at seq:S`'s and shown at that PNG's size;
//   - a drag: the growth tables (by function, by type) equal `heapman diff --from seq:A --to
//     seq:B`'s, the garbage table `heapman churn`'s;
//   - a click on a frame zooms the flame graph to it, a click on the top bar back; a blame row
//     highlights its function's frames, and the bytes through them are the folded stacks';
//   - a dumped collection's objects equal `heapman objects`'s, its retained sizes by type
//     `heapman retained --by type`'s, a type's row its objects; an address opens its paths from
//     the roots: the listed steps equal `heapman paths`'s, the drawing has a box per step and an
//     arrow per reference, the DOT and GEXF links answer 200 with the bytes of `heapman paths
//     --dot/--gexf`;
//   - no JavaScript error, console error or failed request during the whole run, the server
//     asking for a token on every request.
//
//
// With --live, a log being written instead: guile (HEAPMAN_TEST_GUILE) collecting 60 times 100 ms
// apart, recorded in the background, served with --follow; while it runs the page must show at
// least 3 successive GC counts and redraw its answers at the end of the log, and once the log is
// complete its blame equals `heapman blame` at the point it shows; no JavaScript error either.
//
// With --heaprec, the sample game (gc_game, bdwgc) recorded by `heaprec run --serve 0`, the page
// opened on the URL heaprec prints: while the game plays the page must show at least 3 successive
// GC counts; the game's stdout equals a plain run's (the collection count masked: it depends on
// timing, run to run), it writes nothing on stderr, heaprec's lines aside; once the game has
// ended heaprec goes on serving, the page's blame equals `heapman blame` on the finished log, and
// Ctrl-C (SIGINT) ends heaprec with the game's exit status.
//
// Usage: node serve_browser_test.js [--live|--heaprec] HEAPMAN HEAPREC GC_GAME [CHROMIUM]
// Exit 0 passed, 1 failed, 4 skipped (no Chromium, or --live without guile: CTest's
// SKIP_RETURN_CODE). puppeteer-core comes from `npm ci` in this directory (cmake/deps.sh test
// runs it); without it the test fails.
'use strict';

const { spawn, execFileSync } = require('node:child_process');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const liveMode = process.argv[2] === '--live', heaprecMode = process.argv[2] === '--heaprec';
const [heapman, heaprec, gcGame, chromium = '/usr/bin/chromium'] =
  process.argv.slice(liveMode || heaprecMode ? 3 : 2);
const guile = process.env.HEAPMAN_TEST_GUILE || '';
const SKIP = 4;
const TOKEN = 'browsertest';
const W = 1000;  // the page's SVG width in user units (timeline, flame graph)
const PAD_L = 70, PAD_R = 10;  // the timeline's plot area, as page.js draws it

if (!heapman || !heaprec || !gcGame) {
  console.error('usage: node serve_browser_test.js [--live|--heaprec] HEAPMAN HEAPREC GC_GAME [CHROMIUM]');
  process.exit(2);
}
if (!fs.existsSync(chromium)) {
  console.log(`SKIP: no Chromium at ${chromium} (cmake/deps.sh test installs Debian's chromium)`);
  process.exit(SKIP);
}
if (liveMode && !(guile && fs.existsSync(guile))) {
  console.log('SKIP: no guile (HEAPMAN_TEST_GUILE; cmake/deps.sh test installs guile-3.0)');
  process.exit(SKIP);
}
let puppeteer;
try {
  puppeteer = require('puppeteer-core');
} catch (e) {
  console.error(`puppeteer-core is not installed in ${__dirname}: run cmake/deps.sh test ` +
                `(npm ci there)\n${e.message}`);
  process.exit(1);
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heapman-browser-'));
const log = 'game.hml';  // relative: the commands the page names run in `dir`
let server = null, browser = null;
const problems = [];  // JavaScript errors, console errors, failed requests
let checks = 0;

function check(actual, expected, what) {
  ++checks;
  assert.deepStrictEqual(actual, expected, what);
}

// `heapman ARGS` in `dir`: its stdout (a Buffer when `binary`).
function hm(args, binary = false) {
  return execFileSync(heapman, args, { cwd: dir, encoding: binary ? null : 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 256 << 20 });
}

function startServer(args = [log]) {
  return new Promise((resolve, reject) => {
    server = spawn(heapman, ['serve', ...args, '--port', '0'],
                   { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    server.stdout.on('data', d => {
      out += d;
      const m = /http:\/\/127\.0\.0\.1:\d+\/(\?token=\w+)?/.exec(out);
      if (m) resolve(m[0]);
    });
    server.on('exit', code => reject(new Error(`heapman serve exited (${code}) before its URL: ${out}`)));
  });
}

// The folded stacks as a tree: path ("a;b;c") -> bytes, and each path's children.
function foldedTree(text) {
  const bytes = new Map([['', 0]]), children = new Map([['', new Set()]]);
  for (const line of text.split('\n')) {
    const sp = line.lastIndexOf(' ');
    if (sp <= 0) continue;
    const n = Number(line.slice(sp + 1));
    let p = '';
    bytes.set('', bytes.get('') + n);
    for (const f of line.slice(0, sp).split(';')) {
      const c = p ? p + ';' + f : f;
      if (!bytes.has(c)) { bytes.set(c, 0); children.set(c, new Set()); children.get(p).add(c); }
      bytes.set(c, bytes.get(c) + n);
      p = c;
    }
  }
  return { bytes, children };
}

// The frames the page draws zoomed at `zoom`: its ancestors and itself across the whole width,
// then the frames under it at bytes / zoom's bytes, those narrower than 1 unit left out.
function expectedFrames(tree, zoom) {
  const frames = new Map();
  const chain = [''];
  if (zoom) zoom.split(';').forEach((f, i, a) => chain.push(a.slice(0, i + 1).join(';')));
  for (const p of chain) frames.set(p, { bytes: tree.bytes.get(p), width: W });
  const zb = tree.bytes.get(zoom);
  const walk = p => {
    for (const c of tree.children.get(p)) {
      const w = tree.bytes.get(c) / zb * W;
      if (w < 1) continue;
      frames.set(c, { bytes: tree.bytes.get(c), width: Number(w.toFixed(3)) });
      walk(c);
    }
  };
  walk(zoom);
  return frames;
}

async function drawnFrames(page) {
  return new Map(await page.$$eval('#flame g.frame', gs => gs.map(g => [g.dataset.path, {
    bytes: Number(g.dataset.bytes), width: Number(g.querySelector('rect').getAttribute('width')) }])));
}

async function table(page, id) {
  return page.$eval('#' + id, t => ({
    head: [...t.tHead.rows].flatMap(r => [...r.cells].map(c => c.textContent)),
    rows: [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent)),
  }));
}

// What the page's tables show for JSON rows: the keys given (else every key in order, titled
// with spaces for underscores), values as text.
function asTable(rows, keys, titles) {
  keys = keys || (rows.length ? Object.keys(rows[0]) : []);
  return { head: titles || keys.map(k => k.replace(/_/g, ' ')), rows: rows.map(r => keys.map(k => String(r[k] ?? ''))) };
}
const BLAME_KEYS = ['function', 'module', 'live_bytes', 'live_objects', 'share', 'top_types'];
const BLAME_TITLES = ['function', 'module', 'live bytes', 'objects', 'share %', 'top types'];

// Waits until the page has answered one more question than `before` and awaits nothing.
async function settled(page, before) {
  await page.waitForFunction(n => Number(document.documentElement.dataset.shown || 0) > n &&
    document.documentElement.dataset.state === 'ready', { timeout: 20000 }, before);
}
const shownNow = page => page.evaluate(() => Number(document.documentElement.dataset.shown || 0));

// The timeline's client coordinates of a fraction of its plot area.
async function timelineAt(page, f) {
  await page.$eval('#timeline', e => e.scrollIntoView({ block: 'center' }));
  const box = await (await page.$('#timeline')).boundingBox();
  const ux = PAD_L + f * (W - PAD_L - PAD_R);
  return { x: box.x + ux * box.width / W, y: box.y + box.height * 0.5 };
}

function dumpsOf(run) {
  try {
    run();
  } catch (e) {
    const m = /dumps in this log: GC ([\d, ]+)/.exec(String(e.stderr));
    if (m) return m[1].split(',').map(Number);
  }
  throw new Error('heapman objects --at gc:1 did not list the dumps');
}

const t0 = Date.now();
function phase(what) { console.log(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`); }

// A regex matching exactly `text`, as page.js makes it.
const exactly = text => '^' + text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$';

async function fetchInPage(page, url) {
  return page.evaluate(async u => {
    const r = await fetch(u);
    const b = new Uint8Array(await r.arrayBuffer());
    let s = '';
    for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
    return { status: r.status, base64: btoa(s) };
  }, url);
}

// Chromium with a page whose JavaScript errors, console errors and failed requests go to
// `problems`.
async function openBrowser() {
  browser = await puppeteer.launch({
    executablePath: chromium, headless: true, userDataDir: path.join(dir, 'profile'),
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 1000 });
  page.on('pageerror', e => problems.push('page error: ' + e.message));
  page.on('console', m => { if (m.type() === 'error') problems.push('console error: ' + m.text()); });
  page.on('response', r => { if (r.status() >= 400) problems.push(`HTTP ${r.status()} ${r.url()}`); });
  // A newer question aborts the older one: ERR_ABORTED is the page's own doing, not a failure.
  page.on('requestfailed', r => {
    if (r.failure()?.errorText !== 'net::ERR_ABORTED') problems.push(`failed ${r.url()}: ${r.failure()?.errorText}`);
  });
  return page;
}

const dataset = page => page.evaluate(() => ({ ...document.documentElement.dataset }));

// A log being written: the page follows it.
// A followed live.hml once its recorder finished: when the page has drawn the last generation,
// it shows the log's end, every GC, and blame there as heapman (with `blameArgs`) gives it, with
// no JavaScript error.
async function checkFinished(page, blameArgs) {
  await page.waitForFunction(async () => {
    const s = await (await fetch('api/status')).json();
    const d = document.documentElement.dataset;
    return s.complete && d.generation === String(s.generation) && d.state === 'ready';
  }, { timeout: 20000, polling: 200 });
  const d = await dataset(page);
  const info = JSON.parse(hm(['info', 'live.hml', '--json', '-']));
  check(d.point, 'seq:' + info.last_seq, 'the page follows the end of the log');
  check(Number(d.gcs), JSON.parse(hm(['gcs', 'live.hml', '--json', '-'])).gcs.length, 'every GC on the timeline');
  const blame = JSON.parse(hm(['blame', 'live.hml', ...blameArgs, '--at', d.point, '--stacks', '--top', '50', '--json', '-']));
  check(await table(page, 'blame'), asTable(blame.functions, BLAME_KEYS, BLAME_TITLES), `blame at ${d.point}`);
  check(d.jsErrors, '0', 'the page counted no error');
  check(problems, [], 'no JavaScript error, console error or failed request');
}

async function live() {
  const script = "(let loop ((i 0) (keep '())) (when (< i 60) (gc) (usleep 100000) " +
                 "(loop (+ i 1) (cons (make-vector 1000 i) keep))))";
  const rec = spawn(heaprec, ['run', '-o', path.join(dir, 'live.hml'), '--', guile, '--no-auto-compile',
    '-c', script], { env: { ...process.env, GUILE_AUTO_COMPILE: '0' }, stdio: ['ignore', 'ignore', 'inherit'] });
  let recorded = null;
  const ended = new Promise(resolve => rec.on('exit', code => { recorded = code; resolve(); }));
  const url = await startServer(['live.hml', '--follow', '--no-symbols']);
  const page = await openBrowser();
  await page.goto(url);
  phase('serving a log being written');
  // While the program runs: the GC counts the page shows, and how many answers it redrew.
  const counts = [];
  let redrawn = 0, lastShown = 0;
  while (recorded === null) {
    const d = await dataset(page);
    const n = Number(d.gcs || 0), shown = Number(d.shown || 0);
    if (d.gcs !== undefined && (!counts.length || counts[counts.length - 1] !== n)) counts.push(n);
    if (shown > lastShown) { ++redrawn; lastShown = shown; }
    await new Promise(r => setTimeout(r, 150));
  }
  await ended;
  check(recorded, 0, 'guile recorded');
  phase(`recorded; GC counts shown while it ran: ${counts.join(' ')}; answers redrawn ${redrawn} times`);
  assert.ok(counts.length >= 3, `at least 3 successive GC counts while the program ran (${counts.join(' ')})`);
  check([...counts].sort((a, b) => a - b), counts, 'the GC count only rises');
  assert.ok(redrawn >= 3, `the answers at the end of the log redrawn as it grew (${redrawn} times)`);

  // Once the log is complete: the page's last answers are heapman's on the finished log.
  await checkFinished(page, ['--no-symbols']);
  console.log(`serve browser test (live): ${checks} checks passed`);
}

// The game recorded and served by heaprec run --serve: the page follows it while it plays.
async function servedByHeaprec() {
  const args = ['60', '3000'];  // 60 levels of 3000 frames: 8-30 s recorded, 60-90 collections
  const masked = out => out.replace(/\d+ collections/, 'N collections');
  const plain = execFileSync(gcGame, args, { encoding: 'utf8' });
  const logPath = path.join(dir, 'live.hml');
  const rec = spawn(heaprec, ['run', '--serve', '0', '-o', logPath, '--', gcGame, ...args],
                    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  server = rec;  // cleanUp's SIGTERM: to the game while it plays, then to the server
  let out = '', err = '', exited = null;
  rec.stdout.on('data', d => { out += d; });
  rec.stderr.on('data', d => { err += d; });
  const ended = new Promise(resolve => rec.on('exit', (code, sig) => { exited = code ?? sig; resolve(); }));
  const until = async (re, what) => {
    for (let i = 0; i < 300 && !re.test(err); ++i) {
      if (exited !== null) throw new Error(`heaprec ended (${exited}) before ${what}: ${err}`);
      await new Promise(r => setTimeout(r, 50));
    }
    const m = re.exec(err);
    if (!m) throw new Error(`no ${what} from heaprec in 15 s: ${err}`);
    return m;
  };
  const url = (await until(/^heaprec: serving \S+ on (http:\/\/127\.0\.0\.1:\d+\/) while/m, 'URL'))[1];
  const page = await openBrowser();
  await page.goto(url);
  phase('serving the game while it plays');
  const counts = [];
  while (!/^heaprec: wrote /m.test(err)) {
    const d = await dataset(page);
    const n = Number(d.gcs || 0);
    if (d.gcs !== undefined && (!counts.length || counts[counts.length - 1] !== n)) counts.push(n);
    if (exited !== null) break;
    await new Promise(r => setTimeout(r, 150));
  }
  phase(`the game ended; GC counts shown while it played: ${counts.join(' ')}`);
  assert.ok(counts.length >= 3, `at least 3 successive GC counts while the game played (${counts.join(' ')})`);
  check([...counts].sort((a, b) => a - b), counts, 'the GC count only rises');
  await until(/^heaprec: still serving /m, 'still serving');
  check(masked(out), masked(plain), "the game's stdout is a plain run's");
  check(err.split('\n').filter(l => l && !l.startsWith('heaprec: ')), [], 'the game wrote nothing on stderr');

  // The finished log, still served: the page's last answers are heapman's.
  await checkFinished(page, []);
  rec.kill('SIGINT');
  await ended;
  check(exited, 0, "Ctrl-C: heaprec ends with the game's exit status");
  console.log(`serve browser test (heaprec --serve): ${checks} checks passed`);
}

async function main() {
  // A real recording: the bdwgc sample game, 3 levels, RAM dumps after each level end.
  execFileSync(heaprec, ['run', '--ram-dumps', 'event:level_end', '-o', path.join(dir, log), '--',
    gcGame, '3', '200'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const info = JSON.parse(hm(['info', log, '--json', '-']));
  // With a token, which every request of the page must then carry (a 401 fails the test).
  const url = await startServer([log, '--token', TOKEN]);
  assert.ok(url.endsWith('/?token=' + TOKEN), `the URL printed carries the token: ${url}`);
  const page = await openBrowser();
  phase('recorded, serving, browser started');
  await page.goto(url);
  await settled(page, 0);
  phase('page loaded');

  // ---- 5 moments on the timeline ---------------------------------------------------------------
  const span = info.last_seq - info.first_seq;
  for (const f of [0.13, 0.31, 0.52, 0.68, 0.91]) {
    const at = await timelineAt(page, f);
    const before = await shownNow(page);
    await page.mouse.click(at.x, at.y);
    await settled(page, before);
    const point = await page.evaluate(() => document.documentElement.dataset.point);
    const m = /^seq:(\d+)$/.exec(point);
    assert.ok(m, `a click at ${f} of the timeline chose ${point}`);
    const seq = Number(m[1]);
    assert.ok(Math.abs(seq - (info.first_seq + f * span)) <= span / (W - PAD_L - PAD_R) + 1,
              `a click at ${f} of the timeline is at seq:${seq}, not near ${f * span}`);
    check(await page.$eval('#point', p => p.textContent), 'point: ' + point, 'the point shown');

    // Blame: the rows of heapman blame at that point.
    const blameArgs = ['blame', log, '--at', point, '--stacks', '--top', '50', '--json', '-'];
    const blame = JSON.parse(hm(blameArgs));
    check(await page.$eval('#blame-command', p => p.textContent), 'heapman ' + blameArgs.join(' '),
          `the blame command at ${point}`);
    check(await table(page, 'blame'), asTable(blame.functions,
      BLAME_KEYS, BLAME_TITLES), `blame at ${point}`);
    assert.ok(blame.functions.length > 0, `blame at ${point} has rows`);

    // The flame graph: heapman stacks' folded stacks; the top bar holds the blame's live bytes.
    const stacksArgs = ['stacks', log, '--at', point];
    const tree = foldedTree(hm(stacksArgs));
    check(await page.$eval('#flame-command', p => p.textContent), 'heapman ' + stacksArgs.join(' '),
          `the flame graph's command at ${point}`);
    check(tree.bytes.get(''), Number(/^(\d+) bytes/.exec(blame.live)[1]),
          `the flame graph's total is the blame's live bytes at ${point}`);
    check(await drawnFrames(page), expectedFrames(tree, ''), `flame graph frames at ${point}`);

    // The heap map: the PNG of heapman map at that point, shown at its own size.
    const mapCommand = await page.$eval('#map-command', p => p.textContent);
    check(mapCommand, `heapman map ${log} --at ${point} --output answer.png`,
          `the map command at ${point}`);
    hm(["map", log, "--at", point, "--output", "map.png"]);
    const png = fs.readFileSync(path.join(dir, 'map.png'));
    const src = await page.$eval('#map', img => img.src);
    const shown = await fetchInPage(page, src);
    check(shown.status, 200, 'the map image answers');
    assert.ok(Buffer.from(shown.base64, 'base64').equals(png),
              `the heap map at ${point} is heapman map's PNG (${png.length} bytes)`);
    ++checks;
    check(await page.$eval('#map', img => [img.naturalWidth, img.naturalHeight]),
          [png.readUInt32BE(16), png.readUInt32BE(20)], `the map's size at ${point}`);
    phase(`clicked ${point}`);
  }

  // ---- zooming the flame graph (at the last moment clicked) -------------------------------------
  {
    const point = await page.evaluate(() => document.documentElement.dataset.point);
    const tree = foldedTree(hm(['stacks', log, '--at', point]));
    // The widest frame below the top with more than one frame drawn under it.
    const frames = expectedFrames(tree, '');
    const target = [...frames.keys()].filter(p => p && [...tree.children.get(p)].filter(c => frames.has(c)).length > 1)
      .sort((a, b) => frames.get(b).bytes - frames.get(a).bytes || a.split(';').length - b.split(';').length)[0];
    assert.ok(target, `the flame graph at ${point} has a frame with several callees`);
    const rect = await page.$(`#flame g.frame[data-path="${target.replace(/["\\]/g, '\\$&')}"] rect`);
    await rect.click();
    check(await page.evaluate(() => document.documentElement.dataset.flameZoom), target, 'zoomed frame');
    check(await drawnFrames(page), expectedFrames(tree, target), `flame graph zoomed to ${target}`);
    await (await page.$('#flame g.frame[data-path=""] rect')).click();
    check(await page.evaluate(() => document.documentElement.dataset.flameZoom), '', 'zoomed out');
    check(await drawnFrames(page), expectedFrames(tree, ''), 'flame graph zoomed out');
    phase('flame graph zoomed in and out');
  }

  // ---- a blame row highlights its function's frames in the flame graph ---------------------------
  {
    const point = await page.evaluate(() => document.documentElement.dataset.point);
    const blame = JSON.parse(hm(['blame', log, '--at', point, '--stacks', '--top', '50', '--json', '-']));
    const tree = foldedTree(hm(['stacks', log, '--at', point]));
    const fn = blame.functions[0].function;
    await page.click('#blame tbody tr:nth-child(1) td');
    check(await page.$eval('#flame-search', i => i.value), exactly(fn), 'the search a blame row sets');
    const nameOf = p => p.slice(p.lastIndexOf(';') + 1);
    check(await page.$$eval('#flame g.frame.match', gs => gs.map(g => g.dataset.path).sort()),
          [...expectedFrames(tree, '').keys()].filter(p => p && nameOf(p) === fn).sort(), `the frames of ${fn}`);
    // The bytes of the stacks through the function, each counted once.
    let matched = 0;
    const walk = p => {
      for (const c of tree.children.get(p)) {
        if (nameOf(c) === fn) matched += tree.bytes.get(c); else walk(c);
      }
    };
    walk('');
    check(Number(await page.evaluate(() => document.documentElement.dataset.flameMatched)), matched,
          `the bytes through ${fn}`);
    assert.ok(matched >= blame.functions[0].live_bytes, `the blame's bytes of ${fn} go through its frames`);
    assert.ok((await page.$eval('#stack', p => p.textContent)).includes(fn), 'the row\'s stack is shown');
    ++checks;
    phase(`blame row ${fn} highlighted`);
  }

  // ---- a range dragged on the timeline ----------------------------------------------------------
  {
    const a = await timelineAt(page, 0.22), b = await timelineAt(page, 0.83);
    const before = await shownNow(page);
    await page.mouse.move(a.x, a.y);
    await page.mouse.down();
    await page.mouse.move(b.x, b.y, { steps: 8 });
    await page.mouse.up();
    await settled(page, before);
    const range = await page.evaluate(() => document.documentElement.dataset.range);
    const m = /^(seq:\d+)\.\.(seq:\d+)$/.exec(range);
    assert.ok(m, `the drag chose ${range}`);
    const diffArgs = ['diff', log, '--from', m[1], '--to', m[2], '--top', '50', '--json', '-'];
    const diff = JSON.parse(hm(diffArgs));
    check(await page.$eval('#diff-command', p => p.textContent), 'heapman ' + diffArgs.join(' '), 'diff command');
    check(await table(page, 'diff'), asTable(diff.functions), `the growth from ${m[1]} to ${m[2]} by function`);
    check(await table(page, 'diff-types'), asTable(diff.types), `the growth from ${m[1]} to ${m[2]} by type`);
    assert.ok(diff.functions.length > 0 && diff.types.length > 0, 'the range has growth');
    const churnArgs = ['churn', log, '--from', m[1], '--to', m[2], '--top', '50', '--json', '-'];
    const churn = JSON.parse(hm(churnArgs));
    check(await page.$eval('#churn-command', p => p.textContent), 'heapman ' + churnArgs.join(' '), 'churn command');
    check(await table(page, 'churn'), asTable(churn.functions), `the garbage from ${m[1]} to ${m[2]}`);
    assert.ok(churn.functions.length > 0, 'the range has garbage');
    phase(`dragged ${range}`);
  }

  // ---- a dumped collection's objects and an object's paths from the roots ----------------------
  {
    // heapman's own list of the dumps: what objects says at a collection without one (gc:1, the
    // first, was not dumped: the game dumps after a level ends).
    const dumped = dumpsOf(() => hm(['objects', log, '--at', 'gc:1', '--top', '1']));
    const status = JSON.parse(Buffer.from((await fetchInPage(page, 'api/status?token=' + TOKEN)).base64, 'base64').toString());
    check(status.dumped_gcs, dumped, 'the collections with a RAM dump');
    check(await page.$$eval('#dumps button', bs => bs.map(b => b.textContent)), dumped.map(n => 'gc:' + n),
          'the dumped collections offered');
    const gc = dumped[Math.floor(dumped.length / 2)];
    let before = await shownNow(page);
    await page.click(`#dumps button[data-gc="${gc}"]`);
    await settled(page, before);
    const point = 'gc:' + gc;
    check(await page.evaluate(() => document.documentElement.dataset.point), point, 'the dumped point chosen');
    check(await table(page, 'objects'),
          asTable(JSON.parse(hm(['objects', log, '--at', point, '--top', '20', '--json', '-'])).objects),
          `objects at ${point}`);
    // Retained sizes by type; a type's row lists its objects.
    const retainedArgs = ['retained', log, '--at', point, '--by', 'type', '--top', '20', '--json', '-'];
    const retained = JSON.parse(hm(retainedArgs)).retained;
    check(await page.$eval('#retained-command', p => p.textContent), 'heapman ' + retainedArgs.join(' '),
          'the retained command');
    check(await table(page, 'retained'), asTable(retained), `retained by type at ${point}`);
    assert.ok(retained.length >= 2, `two types at ${point}`);
    const type = retained[1].type;
    before = await shownNow(page);
    await page.click('#retained tbody tr:nth-child(2) td');
    await settled(page, before);
    check(await page.evaluate(() => document.documentElement.dataset.objectsType), type, 'the type clicked');
    const typeRegex = exactly(type);
    const objectsArgs = ['objects', log, '--at', point, '--top', '20', '--type', typeRegex, '--json', '-'];
    check(await page.$eval('#objects-command', p => p.textContent),
          'heapman ' + objectsArgs.slice(0, -4).join(' ') + ` --type '${typeRegex}' --json -`, 'the objects command');
    const objects = JSON.parse(hm(objectsArgs));
    check(await table(page, 'objects'), asTable(objects.objects), `objects of type ${type} at ${point}`);
    assert.ok(objects.objects.length > 0 && objects.objects.every(o => o.type === type), `objects of type ${type}`);
    phase(`objects at ${point}, of type ${type}`);
    // The blame at a named collection too.
    const blame = JSON.parse(hm(['blame', log, '--at', point, '--stacks', '--top', '50', '--json', '-']));
    check(await table(page, 'blame'), asTable(blame.functions,
      BLAME_KEYS, BLAME_TITLES), `blame at ${point}`);

    // The object with the longest paths among those listed.
    let best = null;
    for (const [i, o] of objects.objects.entries()) {
      const p = JSON.parse(hm(['paths', log, '--at', point, o.address, '--json', '-']));
      if (!best || p.paths.length > best.paths.paths.length) best = { i, address: o.address, paths: p };
    }
    assert.ok(best.paths.paths.length >= 3, 'an object with a path of 3 steps');
    before = await shownNow(page);
    await page.click(`#objects tbody tr:nth-child(${best.i + 1}) td`);
    await settled(page, before);
    check(await page.evaluate(() => document.documentElement.dataset.paths), point + ' ' + best.address,
          'the paths asked');
    check(await page.$eval('#paths-command', p => p.textContent),
          `heapman paths ${log} --at ${point} ${best.address} --json -`, 'the paths command');
    const steps = asTable(best.paths.paths);
    check(await table(page, 'paths'), steps, `the paths to ${best.address}`);

    // The drawing: per path a box per step (root first) and an arrow per reference with its field.
    const drawn = await page.$$eval('#paths-drawing g.path', gs => gs.map(g => ({
      path: Number(g.dataset.path),
      nodes: [...g.querySelectorAll('g.step')].map(s => s.dataset.node),
      rootBox: g.querySelector('g.step').classList.contains('root'),
      fields: [...g.querySelectorAll('g.edge')].map(e => e.dataset.field),
      arrows: [...g.querySelectorAll('g.edge line')].filter(l => l.getAttribute('marker-end') === 'url(#arrow)').length,
    })));
    const byPath = new Map();
    for (const s of best.paths.paths) {
      if (!byPath.has(s.path)) byPath.set(s.path, []);
      byPath.get(s.path).push(s);
    }
    check(drawn, [...byPath].map(([p, ss]) => ({
      path: p, nodes: ss.map(s => s.node), rootBox: true, fields: ss.slice(1).map(s => String(s.field)),
      arrows: ss.length - 1 })), 'the paths drawn');
    const boxes = await page.$$eval('#paths-drawing g.step rect', rs => rs.filter(r => r.getBBox().width > 0 && r.getBBox().height > 0).length);
    check(boxes, best.paths.paths.length, 'a box per step');
    phase(`paths to ${best.address}`);

    // The downloads: the bytes of heapman paths --dot / --gexf.
    for (const [id, option, file] of [['paths-dot', '--dot', 'paths.dot'], ['paths-gexf', '--gexf', 'paths.gexf']]) {
      const href = await page.$eval('#' + id, a => a.href);
      check(await page.$eval('#' + id, a => a.hasAttribute('download')), true, `${id} downloads`);
      const got = await fetchInPage(page, href);
      check(got.status, 200, `${id} answers`);
      hm(['paths', log, '--at', point, best.address, option, file]);
      const want = fs.readFileSync(path.join(dir, file));
      assert.ok(Buffer.from(got.base64, 'base64').equals(want), `${id}: the bytes of heapman paths ${option}`);
      ++checks;
    }
  }

  check(await page.evaluate(() => document.documentElement.dataset.jsErrors), '0', 'the page counted no error');
  check(problems, [], 'no JavaScript error, console error or failed request');
  console.log(`serve browser test: ${checks} checks passed`);
}

function cleanUp() {
  if (server && server.exitCode === null) server.kill('SIGTERM');
  fs.rmSync(dir, { recursive: true, force: true });
}

// The game served by heaprec plays twice (plainly, then recorded): 25-55 s on 2 busy cores.
const limitS = heaprecMode ? 110 : 55;
const timer = setTimeout(() => { console.error(`serve browser test: over ${limitS} s`); cleanUp(); process.exit(1); },
                         limitS * 1000);
(liveMode ? live : heaprecMode ? servedByHeaprec : main)().then(async () => {
  await browser.close();
  phase('browser closed');
  clearTimeout(timer);
  cleanUp();
  server.on('exit', () => phase('server ended'));
}, async e => {
  console.error(e.stack || String(e));
  if (problems.length) console.error('in the page:\n  ' + problems.join('\n  '));
  if (browser) await browser.close().catch(() => {});
  clearTimeout(timer);
  cleanUp();
  process.exitCode = 1;
});
