#!/usr/bin/env python3
"""heapman ingest, trend and check on 30 recorded builds of samples/gc_game (issue 28's test).

    builds_test.py HEAPMAN HEAPREC GC_GAME [CLICKHOUSE_SERVER]

gc_game's build argument switches a leak on from build 17 (recordInput keeps 256 bytes a frame).
30 builds are recorded (4 levels of 20 frames, two at a time) and ingested into one SQLite store
by 8 heapman ingest processes at once: every run and row is there (counts from each ingest's
--json against the store's tables), and ingesting them all again adds nothing; a stored run's
blame and types at level_end#2 and at the end are heapman blame's and heapman types' rows, its
live bytes there their total; ingest --top 2 keeps 2 blame rows a point. Then:
  - trend --point level_end#3 --site recordInput names build 17 as the step, +15360 bytes
    (3 levels x 20 frames x 256 bytes), 0 before it; its --png chart is an 800x360 PNG;
    trend --figure gc-count is heapman gcs' count of each log, gc-pause-p99 the nearest rank of
    the stored pauses;
  - check with a budget (recordInput grows at most 1 KiB from level_end#1 to level_end#4) fails
    builds 17-30 (exit 1) and passes 1-16 (exit 0); its JUnit XML, read by python's xml module,
    has one failure exactly where the exit says so;
  - a corrupt log is refused (exit 1) before anything is written: with a good new log before it
    in the same command, the store's row counts do not change;
  - a log cut short is refused (exit 1) unless --allow-partial: then a partial run (ID.pN), once,
    which the complete log replaces; the cut log after it is not written; check on it says it is
    cut short;
  - a budget with unknown keys: exit 2, the keys and the line named;
  - trend on a store that is not there: exit 1, and no empty store left behind.
With CLICKHOUSE_SERVER (Debian's clickhouse-server), the same 30 logs are ingested 8 at once into a
server started on free loopback ports with its own directory: 30 runs, trend's series and step
the same as from SQLite, and as a user with a password (never printed; a wrong one: exit 1, saying
so); once it is stopped, an ingest into it exits 1 saying it cannot reach it.
"""
import csv
import io
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from recorded import Work  # noqa: E402

HEAPMAN, HEAPREC, GC_GAME = (os.path.realpath(a) for a in sys.argv[1:4])
CLICKHOUSE = sys.argv[4] if len(sys.argv) > 4 else ""
W = Work("heapman-store-builds-", HEAPREC, GC_GAME)
WORK = W.dir
STORE = os.path.join(WORK, "runs.sqlite")
failures, fail, run = W.failures, W.fail, W.run


def log_of(build):
    return os.path.join(WORK, "build%d.hml" % build)


def record(build):
    W.record(log_of(build), build)


def counts():
    db = sqlite3.connect(STORE)
    out = {t: db.execute("SELECT COUNT(*) FROM " + t).fetchone()[0]
           for t in ("runs", "tags", "gcs", "points", "sites", "types", "churn", "leaks")}
    db.close()
    return out


BUILDS = range(1, 31)
with ThreadPoolExecutor(2) as pool:
    list(pool.map(record, list(BUILDS) + [31]))


# --- 8 ingests at once ------------------------------------------------------------------------
def ingest(build):
    r = run([HEAPMAN, "ingest", log_of(build), "--store", STORE, "--run-tag", "build=%d" % build,
             "--run-tag", "platform=linux", "--json", "-"], 0)
    return json.loads(r.stdout)["runs"][0] if r.returncode == 0 else None


with ThreadPoolExecutor(8) as pool:
    rows = list(pool.map(ingest, BUILDS))
if all(rows):
    want = {"runs": 30, "tags": 60, "gcs": sum(r["gcs"] for r in rows),
            "points": sum(r["points"] for r in rows), "sites": sum(r["sites"] for r in rows),
            "leaks": sum(r["leaks"] for r in rows)}
    got = counts()
    for t, n in want.items():
        if got[t] != n:
            fail("after 8 parallel ingests the store has %d rows in %s, expected %d" %
                 (got[t], t, n))
    if any(r["status"] != "ingested" for r in rows):
        fail("a first ingest said: %s" % [r["status"] for r in rows])
before = counts()
r = run([HEAPMAN, "ingest"] + [log_of(b) for b in BUILDS] + ["--store", STORE, "--json", "-"], 0)
if r.returncode == 0:
    again = [x["status"] for x in json.loads(r.stdout)["runs"]]
    if again != ["already stored"] * 30:
        fail("ingesting the 30 logs again: %s" % again)
if counts() != before:
    fail("ingesting again changed the store: %s -> %s" % (before, counts()))

# The stored summary is heapman's own answers: blame and types at a repetition and at the end,
# row for row, and the live bytes there (all heaps) their total.
db = sqlite3.connect(STORE)
run_id = db.execute("SELECT r.run FROM runs r JOIN tags t ON t.run = r.run WHERE t.key = 'build' "
                    "AND t.value = '20'").fetchone()[0]
for point in ("level_end#2", "end"):
    stored_sites = sorted(db.execute("SELECT function, module, bytes, objects FROM sites WHERE "
                                     "run = ? AND point = ?", (run_id, point)).fetchall())
    stored_types = sorted(db.execute("SELECT type, bytes, objects FROM types WHERE run = ? AND "
                                     "point = ?", (run_id, point)).fetchall())
    stored_live = db.execute("SELECT SUM(live_bytes) FROM points WHERE run = ? AND point = ?",
                             (run_id, point)).fetchone()[0]
    blame = run([HEAPMAN, "blame", log_of(20), "--at", point, "--top", "100", "--csv", "-"], 0)
    want_sites = sorted((r["function"], r["module"], int(r["live_bytes"]), int(r["live_objects"]))
                        for r in csv.DictReader(io.StringIO(blame.stdout)))
    if not stored_sites or stored_sites != want_sites:
        fail("stored blame at %s differs from heapman blame:\n%s\n%s" %
             (point, stored_sites, want_sites))
    types = run([HEAPMAN, "types", log_of(20), "--at", point, "--csv", "-"], 0)
    want_types = sorted((r["type"], int(r["bytes"]), int(r["objects"]))
                        for r in csv.DictReader(io.StringIO(types.stdout)))
    if stored_types != want_types:
        fail("stored types at %s differ from heapman types:\n%s\n%s" %
             (point, stored_types, want_types))
    if stored_live != sum(t[1] for t in want_types):
        fail("stored live bytes at %s %s, heapman types' total %d" %
             (point, stored_live, sum(t[1] for t in want_types)))
db.close()

# --top: the blame rows kept at each point.
TOP = os.path.join(WORK, "top.sqlite")
run([HEAPMAN, "ingest", log_of(20), "--store", TOP, "--top", "2"], 0)
db = sqlite3.connect(TOP)
per_point = dict(db.execute("SELECT point, COUNT(*) FROM sites GROUP BY point").fetchall())
db.close()
if per_point.get("level_end#4") != 2 or max(per_point.values()) != 2:
    fail("ingest --top 2 kept %s blame rows per point" % per_point)

# --- trend ------------------------------------------------------------------------------------
r = run([HEAPMAN, "trend", "--store", STORE, "--tag", "build", "--point", "level_end#3",
         "--site", "recordInput", "--json", "-"], 0)
if r.returncode == 0:
    t = json.loads(r.stdout)
    series = [(x["build"], x["bytes"]) for x in t["runs"]]
    want = [(str(b), 15360 if b >= 17 else 0) for b in BUILDS]
    if series != want:
        fail("trend's series: %s, expected %s" % (series, want))
    steps = [x["build"] for x in t["runs"] if x["step"] == "step"]
    if steps != ["17"]:
        fail("trend marks %s as the step, expected build 17" % steps)
    if not t["step"].startswith("build 17: +15360 bytes"):
        fail("trend's step line: %r" % t["step"])
# Figures of the whole run: GC count as heapman gcs counts each log, pause p99 by nearest rank
# over the stored pauses; --figure with a live-bytes option, or an unknown one, is exit 2.
db = sqlite3.connect(STORE)
pauses = {}
for build, pause in db.execute("SELECT t.value, g.pause_ns FROM gcs g JOIN tags t ON t.run = g.run "
                               "AND t.key = 'build'"):
    pauses.setdefault(build, []).append(pause)
db.close()
p99 = {b: sorted(v)[-(-99 * len(v) // 100) - 1] for b, v in pauses.items()}
for fig, unit, want in (("gc-count", "count", {str(b): int(json.loads(run(
        [HEAPMAN, "gcs", log_of(b), "--json", "-"], 0).stdout)["count"]) for b in BUILDS}),
                        ("gc-pause-p99", "ns", p99)):
    r = run([HEAPMAN, "trend", "--store", STORE, "--figure", fig, "--json", "-"], 0)
    got = {x["build"]: x[unit] for x in json.loads(r.stdout or '{"runs": []}')["runs"]}
    if got != want:
        fail("trend --figure %s: %s, expected %s" % (fig, got, want))
run([HEAPMAN, "trend", "--store", STORE, "--figure", "gc-count", "--point", "end"], 2)
run([HEAPMAN, "trend", "--store", STORE, "--figure", "gc-counts"], 2)
CHART = os.path.join(WORK, "trend.png")
r = run([HEAPMAN, "trend", "--store", STORE, "--point", "level_end#3", "--site", "recordInput",
         "--png", CHART], 0)
if "step:      build 17: +15360 bytes" not in r.stdout:
    fail("trend's table does not name build 17:\n" + r.stdout)
with open(CHART, "rb") as f:
    head = f.read(24)
if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR" or \
        int.from_bytes(head[16:20], "big") != 800 or int.from_bytes(head[20:24], "big") != 360:
    fail("trend --png: not an 800x360 PNG: %r" % head)

# --- check ------------------------------------------------------------------------------------
BUDGET = os.path.join(WORK, "budget.toml")
with open(BUDGET, "w") as f:
    f.write('''# gc_game's memory budget
[[live]]
point = "level_end#*"
max = "64 MiB"

[[growth]]
site = "recordInput"
from = "level_end#1"
to = "level_end#4"
max = "1 KiB"
''')


def check(build):
    junit = os.path.join(WORK, "junit%d.xml" % build)
    r = run([HEAPMAN, "check", log_of(build), "--budget", BUDGET, "--junit", junit])
    return build, r, junit


with ThreadPoolExecutor(2) as pool:
    results = list(pool.map(check, BUILDS))
for build, r, junit in results:
    leaks = build >= 17
    if r.returncode != (1 if leaks else 0):
        fail("check build %d: exit %d, expected %d: %s" % (build, r.returncode, 1 if leaks else 0,
                                                            r.stderr.strip()))
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError) as e:
        fail("check build %d: JUnit XML unreadable: %s" % (build, e))
        continue
    cases = root.findall("./testsuite/testcase")
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    want = ["growth of site recordInput level_end#1 -> level_end#4"] if leaks else []
    if len(cases) != 5 or failed != want or root.get("tests") != "5" or \
            root.get("failures") != str(len(want)):
        fail("check build %d: JUnit has %d testcases (%s/%s), failed %s; expected 5, %s" %
             (build, len(cases), root.get("tests"), root.get("failures"), failed, want))
    if leaks:
        msg = cases[-1].find("failure").get("message")
        if not msg.startswith("15.0 KiB (5.0 KiB -> 20.0 KiB)"):
            fail("check build %d: failure message %r" % (build, msg))
    line = [l for l in r.stdout.splitlines() if l.startswith("growth of site recordInput")]
    if not line or not line[0].rstrip().endswith("FAIL" if leaks else "PASS"):
        fail("check build %d: the table says %r" % (build, line))

# --- bad input --------------------------------------------------------------------------------
before = counts()
corrupt = os.path.join(WORK, "corrupt.hml")
shutil.copy(log_of(1), corrupt)
with open(corrupt, "r+b") as f:
    size = os.path.getsize(corrupt)
    f.seek(size // 2)
    chunk = f.read(64)
    f.seek(size // 2)
    f.write(bytes(b ^ 0x5a for b in chunk))
r = run([HEAPMAN, "ingest", log_of(31), corrupt, "--store", STORE, "--run-tag", "build=31"], 1)
if "corrupt.hml is damaged" not in r.stderr or "nothing was written" not in r.stderr:
    fail("a corrupt log: %r" % r.stderr)
if counts() != before:
    fail("a corrupt log changed the store: %s -> %s" % (before, counts()))
# A log cut short (its recorder died, or copied while it was written): refused unless
# --allow-partial; then a partial run, its id the recording's and ".pN", which the complete log
# replaces; after that, the cut copy is not written again.
record_long = [HEAPREC, "run", "-o", os.path.join(WORK, "long.hml"), "--", GC_GAME, "6", "150", "32"]
run(record_long, 0)
whole = os.path.join(WORK, "long.hml")
cut = os.path.join(WORK, "cut.hml")
with open(whole, "rb") as f, open(cut, "wb") as g:
    g.write(f.read()[:os.path.getsize(whole) * 6 // 10])
PSTORE = os.path.join(WORK, "partial.sqlite")


def pingest(log, *extra, rc=0):
    r = run([HEAPMAN, "ingest", log, "--store", PSTORE, "--run-tag", "build=32", "--json", "-"] +
            list(extra), rc)
    return json.loads(r.stdout)["runs"][0] if r.returncode == 0 and rc == 0 else r


def pruns():
    db = sqlite3.connect(PSTORE)
    out = ([x[0] for x in db.execute("SELECT log_id FROM runs ORDER BY log_id")],
           db.execute("SELECT COUNT(*) FROM tags").fetchone()[0],
           db.execute("SELECT COUNT(*) FROM gcs").fetchone()[0])
    db.close()
    return out


pingest(log_of(2))  # another recording, untouched by what follows
r = pingest(cut, rc=1)
if "cut.hml is cut short" not in r.stderr or "nothing was written" not in r.stderr or \
        "--allow-partial" not in r.stderr:
    fail("a log cut short without --allow-partial: %r" % r.stderr)
if len(pruns()[0]) != 1:
    fail("a refused cut log was written: %s" % (pruns(),))
p = pingest(cut, "--allow-partial")
if not isinstance(p, dict) or p["status"] != "ingested (partial)" or \
        not re.fullmatch(r"[0-9a-f]{16}\.p[1-9][0-9]*", p["run"]):
    fail("a partial ingest: %s" % (p,))
elif pingest(cut, "--allow-partial").get("status") != "already stored":
    fail("the same cut log twice")
w = pingest(whole)
if isinstance(p, dict) and isinstance(w, dict):
    if w["status"] != "ingested" or p["run"] != w["run"] + ".p" + p["run"].split(".p")[1]:
        fail("the complete log after its partial run: %s, %s" % (w, p))
    other = pruns()[0]
    if len(other) != 2 or w["run"] not in other or p["run"] in other:
        fail("the complete log did not replace its partial run: %s" % other)
    before = pruns()
    if pingest(cut, "--allow-partial").get("status") != "complete run stored" or pruns() != before:
        fail("the cut log after its complete one was written: %s" % (pruns(),))

# check on the cut log: its part is checked, with a warning that says so (a crash cuts the run
# short, and a budget may pass on the part written).
with open(os.path.join(WORK, "tiny.toml"), "w") as f:
    f.write('[peak]\nmax = "1 GiB"\n')
r = run([HEAPMAN, "check", cut, "--budget", os.path.join(WORK, "tiny.toml")], 0)
if not re.search(r"warning: .*cut\.hml is cut short \(.*\): the figures checked are those of its "
                 r"[0-9,]+ events, not of the whole run", r.stdout + r.stderr):
    fail("check on a log cut short does not say so: %r %r" % (r.stdout, r.stderr))

missing = os.path.join(WORK, "typo.sqlite")
r = run([HEAPMAN, "trend", "--store", missing], 1)
if r.stderr.strip() != "heapman trend: no store at %s: heapman ingest LOG --store %s makes it" % (
        missing, missing) or os.path.exists(missing):
    fail("trend on a store that is not there: %r (left a file: %s)" %
         (r.stderr, os.path.exists(missing)))
bad = os.path.join(WORK, "bad.toml")
with open(bad, "w") as f:
    f.write('[peak]\nmax = "1 MiB"\nmaximum = 3\nheap_name = "gc"\n')
r = run([HEAPMAN, "check", log_of(1), "--budget", bad], 2)
want = ("heapman check: %s:3: unknown keys 'heap_name', 'maximum' in [peak] (known: heap, max, "
        "max_growth)" % bad)
if r.stderr.strip() != want:
    fail("unknown keys: %r, expected %r" % (r.stderr.strip(), want))



# --- the same into ClickHouse -----------------------------------------------------------------
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def trend_json(store):
    r = run([HEAPMAN, "trend", "--store", store, "--point", "level_end#3", "--site",
             "recordInput", "--json", "-"], 0)
    if r.returncode != 0:
        return None
    t = json.loads(r.stdout)
    return t["step"], [(x["build"], x["bytes"], x["step"]) for x in t["runs"]]


if CLICKHOUSE:
    ch = os.path.join(WORK, "clickhouse")
    os.mkdir(ch)
    port = free_port()
    with open(os.path.join(ch, "config.xml"), "w") as f:
        f.write("""<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{d}/server.log</log><errorlog>{d}/server.err.log</errorlog>
  <console>0</console></logger>
  <http_port>{http}</http_port><tcp_port>{tcp}</tcp_port><listen_host>127.0.0.1</listen_host>
  <path>{d}/data/</path><tmp_path>{d}/tmp/</tmp_path><user_files_path>{d}/user_files/</user_files_path>
  <format_schema_path>{d}/format_schemas/</format_schema_path><users_config>users.xml</users_config>
  <default_profile>default</default_profile><default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
</yandex>
""".format(d=ch, http=port, tcp=free_port()))
    with open(os.path.join(ch, "users.xml"), "w") as f:
        f.write("""<?xml version="1.0"?>
<yandex><profiles><default></default></profiles>
<users><default><password></password><networks><ip>127.0.0.1</ip></networks>
<profile>default</profile><quota>default</quota></default>
<ci><password>s3cr:t@pw</password><networks><ip>127.0.0.1</ip></networks>
<profile>default</profile><quota>default</quota></ci></users>
<quotas><default></default></quotas></yandex>
""")
    server = subprocess.Popen([CLICKHOUSE, "--config-file=" + os.path.join(ch, "config.xml")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = "http://127.0.0.1:%d/" % port
    for _ in range(300):
        try:
            if urllib.request.urlopen(url + "ping", timeout=1).read() == b"Ok.\n":
                break
        except OSError:
            time.sleep(0.1)
    else:
        fail("clickhouse-server did not start")
    STORE_CH = "clickhouse://127.0.0.1:%d/builds" % port
    try:
        def ingest_ch(build):
            run([HEAPMAN, "ingest", log_of(build), "--store", STORE_CH, "--run-tag",
                 "build=%d" % build], 0)

        run([HEAPMAN, "trend", "--store", STORE_CH], 0)  # the schema, before 8 race to make it
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(ingest_ch, BUILDS))
        got = urllib.request.urlopen(url, data=b"SELECT count() FROM builds.completed").read()
        if got != b"30\n":
            fail("ClickHouse has %r completed runs, expected 30" % got)
        sq, ck = trend_json(STORE), trend_json(STORE_CH)
        if sq is None or sq != ck:
            fail("trend from ClickHouse %s differs from SQLite's %s" % (ck, sq))
        # A user with a password: the same series; the password never printed; a wrong one is
        # exit 1 saying so.
        authed = "clickhouse://ci:s3cr%%3At%%40pw@127.0.0.1:%d/builds" % port
        if trend_json(authed) != ck:
            fail("trend as the user ci differs: %s" % (trend_json(authed),))
        r = run([HEAPMAN, "trend", "--store", authed, "--json", "-"], 0)
        if "s3cr" in r.stdout + r.stderr or \
                json.loads(r.stdout or "{}").get("store") != \
                "clickhouse://ci:***@127.0.0.1:%d/builds" % port:
            fail("trend as the user ci printed: %r %r" % (r.stdout[:200], r.stderr))
        r = run([HEAPMAN, "ingest", log_of(1), "--store", authed.replace("s3cr", "wrong"),
                 "--run-tag", "build=1"], 1)
        want = ("heapman ingest: ClickHouse at 127.0.0.1:%d refused the user ci: a wrong "
                "password or an unknown user (HTTP " % port)
        if not r.stderr.startswith(want) or "wrong%3At" in r.stderr or "wrong:t" in r.stderr:
            fail("a wrong password: %r" % r.stderr)
    finally:
        server.terminate()
        server.wait(timeout=30)
    r = run([HEAPMAN, "ingest", log_of(1), "--store", STORE_CH], 1)
    if "cannot reach ClickHouse at 127.0.0.1:%d" % port not in r.stderr:
        fail("a stopped ClickHouse: %r" % r.stderr)
else:
    print("ClickHouse: skipped (no clickhouse-server)")

if failures:
    print("%d check(s) failed; files kept in %s" % (len(failures), WORK), file=sys.stderr)
    sys.exit(1)
shutil.rmtree(WORK, ignore_errors=True)
print("30 builds: ingested 8 at once, trend's step at build 17, check fails 17-30 and passes 1-16")
