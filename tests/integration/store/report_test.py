#!/usr/bin/env python3
"""heapman report LOG --store S: the "across runs" section of the HTML report.

    report_test.py HEAPMAN HEAPREC GC_GAME REPORT_JS [CHROMIUM]

gc_game builds 13-20 are recorded (4 levels of 20 frames; its leak is on from build 17: 256
bytes a frame that recordInput keeps) and 13-19 ingested into a SQLite store with their build
tags. Then:
  - report b20.hml --store (not stored): the section's figures are heapman trend's rows for the
    peak and the live bytes at the end, with b20 last as "this log"; the step of the end's live
    bytes is build 17, its rise the one trend finds; each run's GC count is heapman gcs' count
    of its log; every custom event of the log has a figure;
  - report b15.hml --store (stored): its run is the one marked, under its tag 15;
  - both pages, and the DOM Chromium makes of them, are well formed for python's html.parser
    (every element closed, no stray end tag); in Chromium (with #selftest=1) no JavaScript
    error, the end's chart has a bar per run with the figures above, the step's label names
    build 17, this log's bar and table row are marked;
  - the report without --store is the page it was: its script is report.js without the
    renderers' mark, and it has no trends section; --tag without --store is refused (exit 2), a
    store that is not there too (exit 1, no file made);
  - a run of 2 levels (no leak finder: its event repeats fewer than 3 times) has no leak figures,
    a warning says so, and its table row shows dashes there, not 0.
Without CHROMIUM the browser part is left out (said on stdout).
"""
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from recorded import Work  # noqa: E402

HEAPMAN, HEAPREC, GC_GAME, REPORT_JS = (os.path.realpath(a) for a in sys.argv[1:5])
CHROMIUM = sys.argv[5] if len(sys.argv) > 5 else ""
W = Work("heapman-store-report-", HEAPREC, GC_GAME)
WORK = W.dir
STORE = os.path.join(WORK, "runs.sqlite")
failures, fail, run = W.failures, W.fail, W.run


def log_of(build):
    return os.path.join(WORK, "b%d.hml" % build)


def record(build):
    W.record(log_of(build), build)


STORED = list(range(13, 20))
with ThreadPoolExecutor(2) as pool:
    list(pool.map(record, STORED + [20]))
for b in STORED:
    run([HEAPMAN, "ingest", log_of(b), "--store", STORE, "--run-tag", "build=%d" % b], 0)


class Balance(html.parser.HTMLParser):
    """Every element closed in order (void elements aside), no end tag without its start."""
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
            "track", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors = [], []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("</%s> closes <%s>" % (tag, self.stack[-1] if self.stack else ""))
            if tag in self.stack:
                while self.stack.pop() != tag:
                    pass
        else:
            self.stack.pop()


def well_formed(text, what):
    p = Balance()
    p.feed(text)
    p.close()
    if p.errors or p.stack:
        fail("%s is not well formed: %s; unclosed %s" % (what, p.errors[:5], p.stack[:10]))


def page_data(page):
    m = re.search(r'<script type="application/json" id="heapman-data">(.*?)</script>', page, re.S)
    return json.loads(m.group(1))


def trends_of(page):
    s = [x for x in page_data(page)["sections"] if x["kind"] == "trends"]
    if len(s) != 1 or s[0]["id"] != "across-runs" or s[0]["title"] != "Across runs":
        fail("the page has %d trends sections: %s" % (len(s), [x["id"] for x in s]))
        return None
    return s[0]["data"]


def report(build, *extra):
    out = os.path.join(WORK, "b%d%s.html" % (build, "-store" if extra else ""))
    run([HEAPMAN, "report", log_of(build), "-o", out] + list(extra), 0)
    with open(out, encoding="utf-8") as f:
        return out, f.read()


def cli_trend(point):
    args = [HEAPMAN, "trend", "--store", STORE, "--json", "-"] + (["--point", point] if point
                                                                   else [])
    return json.loads(run(args, 0).stdout)


def gc_count(build):
    return int(json.loads(run([HEAPMAN, "gcs", log_of(build), "--json", "-"], 0).stdout)["count"])


# --- b20, not stored: drawn last as "this log" --------------------------------------------------
path20, page20 = report(20, "--store", STORE)
well_formed(page20, "b20's page")
d = trends_of(page20)
figs = {f["id"]: f for f in d["figures"]} if d else {}
b20_id = None
if d:
    if d["tag"] != "build" or d["thisLog"]["stored"] or d["thisLog"]["label"] != "this log":
        fail("b20's page: tag %s, thisLog %s" % (d["tag"], d["thisLog"]))
    b20_id = d["thisLog"]["logId"]
    want_ids = ["peak", "end"] + ["live:level_%s#%d" % (w, k) for k in range(1, 5)
                                   for w in ("start", "end")] + \
               ["gc-count", "gc-pause-p99", "leak-suspects", "growing-sites"]
    if sorted(figs) != sorted(want_ids):
        fail("figures %s, expected %s" % (sorted(figs), sorted(want_ids)))
    for fid, point in (("peak", None), ("end", "end")):
        cli = cli_trend(point)
        want = [[r["build"], r["run"], r["bytes"]] for r in cli["runs"]]
        got = figs.get(fid, {}).get("rows", [])
        if got[:-1] != want or not got or got[-1][0] != "this log" or got[-1][1] != b20_id:
            fail("%s: the page's rows %s, trend's %s + this log" % (fid, got, want))
    end = figs.get("end", {})
    cli = cli_trend("end")
    m = re.match(r"build (\d+): \+(\d+) bytes", cli["step"])
    step = end.get("step") or {}
    if not m or m.group(1) != "17":
        fail("trend --point end: step %s (expected build 17)" % cli["step"])
    # With this log (a leaking build) after them, the step is still build 17's; its rise the mean
    # after less the mean before, over the stored runs and this log.
    vals = [r[2] for r in end.get("rows", [])]
    at = [r[0] for r in end.get("rows", [])].index("17") if vals else 0
    rise = round(sum(vals[at:]) / len(vals[at:]) - sum(vals[:at]) / len(vals[:at])) if vals else 0
    if step.get("tag") != "17" or step.get("rise") != rise or step.get("at") != at:
        fail("the end's step %s, expected build 17 at %d, +%d" % (step, at, rise))
    if m and int(m.group(2)) != rise:
        fail("the end's rise %d differs from trend's %s" % (rise, m.group(2)))
    gcs = figs.get("gc-count", {}).get("rows", [])
    want = [[str(b), gc_count(b)] for b in STORED] + [["this log", gc_count(20)]]
    if [[r[0], r[2]] for r in gcs] != want:
        fail("GC counts %s, heapman gcs says %s" % ([[r[0], r[2]] for r in gcs], want))

# --- b15, stored: its own run marked ---------------------------------------------------------
path15, page15 = report(15, "--store", STORE)
well_formed(page15, "b15's page")
d15 = trends_of(page15)
b15_id = None
if d15:
    b15_id = d15["thisLog"]["logId"]
    ends = next(f for f in d15["figures"] if f["id"] == "end")["rows"]
    if not d15["thisLog"]["stored"] or d15["thisLog"]["label"] != "15" or \
            [r[1] for r in ends if r[0] == "15"] != [b15_id] or len(ends) != len(STORED):
        fail("b15's page: thisLog %s, end rows %s" % (d15["thisLog"], ends))

# --- the page without --store is the page it was ------------------------------------------------
_, plain = report(15)
with open(REPORT_JS, encoding="utf-8") as f:
    script = f.read()
mark = "  /*@HEAPMAN_RENDERERS@*/\n"
if script.count(mark) != 1:
    fail("report.js has %d renderers' marks" % script.count(mark))
if script.replace(mark, "") not in plain or "HEAPMAN_RENDERERS" in plain or \
        "renderers.trends" in plain:
    fail("the page without --store does not have report.js's script as it was")
if page_data(plain)["sections"] and any(s["kind"] == "trends" for s in page_data(plain)["sections"]):
    fail("the page without --store has a trends section")
well_formed(plain, "the page without --store")

# --- bad usage ----------------------------------------------------------------------------------
run([HEAPMAN, "report", log_of(15), "-o", os.path.join(WORK, "x.html"), "--tag", "build"], 2)
missing = os.path.join(WORK, "missing.sqlite")
r = run([HEAPMAN, "report", log_of(15), "-o", os.path.join(WORK, "y.html"), "--store", missing], 1)
if "no store at" not in r.stderr or os.path.exists(missing):
    fail("report --store on a missing store: %s (a file left: %s)" % (r.stderr.strip(),
                                                                      os.path.exists(missing)))

# --- in Chromium ----------------------------------------------------------------------------------
def dump_dom(path, fragment=""):
    profile = os.path.join(WORK, "chromium-%d" % len(os.listdir(WORK)))
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                        "--virtual-time-budget=10000", "--user-data-dir=" + profile, "--dump-dom",
                        "file://" + path + fragment], capture_output=True, text=True,
                       timeout=120)
    return r.stdout


def fmt_bytes(n):  # the page's fmtBytes
    if abs(n) < 1024:
        return "%d B" % n
    v, units = abs(n) / 1024, ["KiB", "MiB", "GiB"]
    i = 0
    while v >= 1024 and i < len(units) - 1:
        v /= 1024
        i += 1
    return ("-" if n < 0 else "") + ("%.0f" if v >= 100 else "%.1f") % v + " " + units[i]


def attrs_of(tag):
    return {k: html.unescape(v) for k, v in re.findall(r' ([\w-]+)="([^"]*)"', tag)}


if not CHROMIUM:
    print("chromium not found: the browser part is left out (cmake/deps.sh test installs it)")
else:
    for n, (path, this_tag, this_id) in enumerate(((path20, "this log", b20_id),
                                                   (path15, "15", b15_id))):
        # Exercised (every control used once: menus, sorts, filters): no JavaScript error.
        exercised = dump_dom(path, "#selftest=1")
        root = re.search(r"<html[^>]*>", exercised)
        a = attrs_of(root.group(0)) if root else {}
        if a.get("data-js-errors") != "0" or a.get("data-ready") != "1" or \
                a.get("data-selftest") != "done":
            fail("%s in Chromium: %s" % (path, a))
        # As loaded: what it shows.
        dom = dump_dom(path)
        well_formed(dom, "the DOM of " + path)
        i = dom.find('id="across-runs"')
        part = dom[i:dom.find("</section>", i)] if i >= 0 else ""
        chart = re.search(r'<svg[^>]*data-figure="end".*?</svg>', part, re.S)
        bars = [attrs_of(t) for t in re.findall(r"<rect[^>]*trend-bar[^>]*>", chart.group(0))] \
            if chart else []
        want = figs.get("end", {}).get("rows", []) if n == 0 else \
            next(f for f in d15["figures"] if f["id"] == "end")["rows"]
        if [[b["data-tag"], b["data-log-id"], int(b["data-value"])] for b in bars] != want:
            fail("%s: the end's bars %s, expected %s" % (path, bars, want))
        marked = [b["data-tag"] for b in bars if "this-log" in b["class"]]
        if marked != [this_tag]:
            fail("%s: the marked bars %s, expected %s" % (path, marked, this_tag))
        label = "step at build 17: +" + fmt_bytes(step.get("rise", 0))
        if not chart or label not in html.unescape(chart.group(0)):
            fail("%s: the end's chart does not say '%s'" % (path, label))
        rows = re.findall(r'<tr[^>]*data-log-id="(\w+)"[^>]*data-this-log="1"', part)
        if rows != [this_id]:
            fail("%s: the table's marked rows %s, expected %s" % (path, rows, this_id))

# A run whose custom event repeats twice (gc_game of 2 levels): the leak finder did not run, so
# it has no leak figures (left out with a warning), and the table says so with a dash, not 0.
run([HEAPREC, "run", "-o", log_of(12), "--", GC_GAME, "2", "20", "12"], 0)
STORE2 = os.path.join(WORK, "two.sqlite")
for b in (12, 13):
    run([HEAPMAN, "ingest", log_of(b), "--store", STORE2, "--run-tag", "build=%d" % b], 0)
path12, page12 = report(12, "--store", STORE2)
d12 = trends_of(page12)
if d12:
    for f in d12["figures"]:
        want_rows = ["13"] if f["id"] in ("leak-suspects", "growing-sites") else ["12", "13"]
        if [r[0] for r in f["rows"]] != want_rows:
            fail("the 2-level run's %s: rows %s, expected builds %s" % (f["id"], f["rows"], want_rows))
        if f["id"] == "leak-suspects" and f["warnings"] != [
                "1 run(s) without leak figures (no custom event repeats 3 times) left out"]:
            fail("the 2-level run's leak warning: %s" % f["warnings"])
if CHROMIUM and d12:
    dom = dump_dom(path12)
    row = re.search(r'<tr[^>]*data-log-id="%s"[^>]*>(.*?)</tr>' % d12["thisLog"]["logId"], dom)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1)) if row else []
    if cells[-3:-1] != ["\u2014", "\u2014"]:
        fail("the 2-level run's table row: %s (its leak counts should be dashes)" % cells)

if failures:
    print("%d failure(s); work left in %s" % (len(failures), WORK))
    sys.exit(1)
shutil.rmtree(WORK, ignore_errors=True)
print("ok")
