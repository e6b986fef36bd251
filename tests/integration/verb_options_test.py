#!/usr/bin/env python3
"""Every heapman verb against every option word: the grammar of verbs.h, from its own table.

    verb_options_test.py HEAPMAN DEMO_LOG README

`heapman --list-options` gives the verb table (each verb's options, what a run needs, the old
spellings). From it alone, with a log written by DEMO_LOG:

  1. every verb refuses every option word any verb knows (short forms and old spellings too) that
     it does not declare itself: exit 2 and "heapman V: --W is not an option of V; see heapman V
     --help";
  2. every verb takes every option it declares, each in a run of its own (with what the table
     says the run needs), and reads it: HEAPMAN_CHECK_OPTIONS=1 makes heapman name an option
     that was given but never read, so a verb that declares an option and ignores it fails here;
     an old spelling works and says what it is now;
     A verb that serves (`heapman serve`: "serves" in the table) runs until its first line says
     it listens, then gets SIGTERM and must exit 0;
  3. the same commands typed in the shell (`heapman LOG`) get the same answers, but for the
     options of the log itself (--no-symbols, --debug-dir, --path-map), which belong to the
     shell;
  4. README.md's table of options lists every option word with exactly the verbs that take it,
     and every old spelling.

A new verb or option is covered without touching this file, unless its value is of a kind the
test has no sample for (VALUE_SAMPLES: the test then fails saying so).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

HEAPMAN, DEMO_LOG, README = (os.path.realpath(a) for a in sys.argv[1:4])
WORK = tempfile.mkdtemp(prefix="heapman-verb-options-")
os.chdir(WORK)
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def run(args, stdin=None, env=None):
    e = dict(os.environ, HOME=WORK, HEAPMAN_CHECK_OPTIONS="1")
    if env:
        e.update(env)
    return subprocess.run([HEAPMAN] + args, input=stdin if stdin is not None else "",
                          capture_output=True, text=True, env=e, timeout=120)


def run_server(args):
    """A verb that serves: its first line (it listens, or it failed), then SIGTERM."""
    e = dict(os.environ, HOME=WORK, HEAPMAN_CHECK_OPTIONS="1")
    p = subprocess.Popen([HEAPMAN] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=e)
    first = p.stdout.readline()
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        err += "\n(did not end within 60 s of SIGTERM)"
    return subprocess.CompletedProcess(args, p.returncode, first + out, err)


# 20000 frame marks: a log long enough in time (about 50 ms) for video --realtime at 240 fps.
subprocess.run([DEMO_LOG, "out.hml", "20000"], check=True, capture_output=True)
LOG = "out.hml"
table = json.loads(run(["--list-options"]).stdout)["verbs"]
verbs = {v["name"]: v for v in table}
ffmpeg = shutil.which("ffmpeg") is not None

# The demo log: 2 GCs, both dumped (gc:2 the last), level_start/level_end twice, frame marks.
# Its end has no RAM dump, so the heap-graph verbs need --at (their table says so); leaks finds
# 3 repetitions nowhere, so it runs with --min-points 2 here; video draws after each GC only,
# small, at 240 fps (its recorded time is short).
LOG_ARGS = {"leaks": [("min-points", "2")],
            "video": [("every", "gc"), ("fps", "240"), ("size", "256x256")]}
address = None


def sample(verb, option, value):
    """A value the demo log takes for `value` (a value name of --list-options)."""
    global address
    if value.startswith("FILE"):  # an output or an input (read empty): a new file each time
        sample.files += 1
        path = "file%d%s" % (sample.files, value[4:].split("|")[0])
        open(path, "w").close()
        return path
    if value == "DIR":
        sample.files += 1
        return "dir%d" % sample.files
    if option == "port":  # any free one
        return "0"
    if value == "POINT":
        return "gc:1" if option == "from" else "gc:2"
    if value == "ADDR":
        if address is None:
            out = run(["objects", LOG, "--at", "gc:2", "--csv", "-", "--top", "1"]).stdout
            address = out.splitlines()[1].split(",")[0]
        return address
    if value == "LOG":
        return LOG
    if value in VALUE_SAMPLES:
        return VALUE_SAMPLES[value]
    if "|" in value:  # choices: the first
        return value.split("|")[0]
    return None


sample.files = 0
VALUE_SAMPLES = {"N": "2", "N,M,...": "1,2", "2^K": "65536", "BYTES": "0", "WxH": "256x256",
                 "EVENT": "level_end", "NAME": "level_end", "REGEX": ".", "HOST": "127.0.0.1",
                 "TOKEN": "t0ken", "SECONDS": "60", "KEY=VALUE": "build=1", "HEAP": "native",
                 "FROM=TO": "/nowhere=/else"}


def option_of(verb, name):
    return next((o for o in verbs[verb]["options"] if o["name"] == name), None)


def with_value(verb, name, value=None):
    """The arguments giving --name (its sample value, or `value`)."""
    o = option_of(verb, name)
    if o is None:
        fail("%s: the table names --%s, which %s does not declare" % (verb, name, verb))
        return []
    if not o["value"]:
        return ["--" + name]
    v = value if value is not None else sample(verb, name, o["value"])
    if v is None:
        fail("no sample value for %s (--%s of %s): add one to VALUE_SAMPLES" %
             (o["value"], name, verb))
        return []
    return [v] if o["positional"] else ["--" + name, v]


def command(verb, option=None, old=None, skip=None):
    """The arguments of a run of `verb` with `option`: what the table says every run needs (an
    alternative the option is itself, or else the first), what the option needs (but the need
    `skip`), the option (spelled `old` if given), then what this log needs."""
    args, given = [], set()

    def add(name, value=None):
        if name not in given:
            given.add(name)
            args.extend(with_value(verb, name, value))

    for n in verbs[verb]["needs"]:
        if n is skip or (n["option"] and n["option"] != option):
            continue
        alternatives = [a.partition("=") for a in n["with"].split("|")]
        pick = next((a for a in alternatives if a[0] == option), alternatives[0])
        add(pick[0], pick[2] or None)
    if option:
        add(option)
    for name, value in LOG_ARGS.get(verb, []):
        add(name, value)
    if old:
        args[args.index("--" + option)] = "--" + old
    return args


# --- 1. every verb refuses what it does not declare ---------------------------------------------
words = set()
for v in table:
    for o in v["options"]:
        if not o["positional"]:
            words.add("--" + o["name"])
            if o["short"]:
                words.add(o["short"])
    for r in v["renamed"]:
        words.add("--" + r["old"])


def declared(v):
    own = set()
    for o in v["options"]:
        if not o["positional"]:
            own.add("--" + o["name"])
            if o["short"]:
                own.add(o["short"])
    return own | {"--" + r["old"] for r in v["renamed"]}


checked = 0
for v in table:
    for w in sorted(words - declared(v) - {"--help", "-h"}):
        r = run([v["name"], LOG, w])
        want = "heapman %s: %s is not an option of %s; see heapman %s --help" % (
            v["name"], w, v["name"], v["name"])
        checked += 1
        if r.returncode != 2 or want not in r.stderr.splitlines():
            fail("heapman %s %s %s: exit %d, stderr %r; expected exit 2 and %r" %
                 (v["name"], LOG, w, r.returncode, r.stderr.strip(), want))
print("refused: %d (verb, option) pairs" % checked)

# --- 2. every verb takes and reads each option it declares --------------------------------------
runs = []  # (verb, args, the Renamed entry when an old spelling)
seen = set()
for v in table:
    name = v["name"]
    if name == "shell":  # it reads commands: its own run below, with the shell's checks
        continue
    for option in [None] + [o["name"] for o in v["options"] if o["name"] != "help"]:
        args = command(name, option)
        if (name, tuple(args)) not in seen:
            seen.add((name, tuple(args)))
            runs.append((name, args, None))
    for r in v["renamed"]:
        if r["bare"]:  # `--json` alone, the log after it
            runs.append((name, ["--" + r["now"]], r))
        else:
            runs.append((name, command(name, r["now"], old=r["old"]), r))

for name, args, renamed in runs:
    line = "heapman %s %s %s" % (name, LOG, " ".join(args))
    if name == "video" and any(a.endswith(".mp4") for a in args) and not ffmpeg:
        print("skipped (no ffmpeg on PATH): " + line)
        continue
    argv = [name] + (args + [LOG] if renamed and renamed["bare"] else [LOG] + args)
    r = run_server(argv) if verbs[name]["serves"] else run(argv)
    if r.returncode != 0:
        fail("%s: exit %d: %s" % (line, r.returncode, r.stderr.strip()))
    for l in r.stderr.splitlines():
        if "never read it" in l or "is not an option" in l or "has an effect only" in l:
            fail("%s: %s" % (line, l))
    if renamed and not re.search(r"^heapman %s: .*is now `--%s" % (name, renamed["now"]),
                                 r.stderr, re.M):
        fail("%s: the old spelling did not say what it is now: %r" % (line, r.stderr))
# The options of the log, given to the shell: taken, and read by the log it opens.
log_options = sorted({o["name"] for v in table for o in v["options"] if o["log_option"]})
for o in next(v for v in table if v["name"] == "shell")["options"]:
    if not o["log_option"]:
        continue
    args = ["--" + o["name"]] + ([sample("shell", o["name"], o["value"])] if o["value"] else [])
    r = run(["shell", LOG] + args, stdin="blame\nquit\n")
    if r.returncode != 0 or "never read" in r.stderr:
        fail("heapman shell %s %s: exit %d: %s" % (LOG, " ".join(args), r.returncode,
                                                   r.stderr.strip()))
print("taken and read: %d runs, and %d options of the log in the shell" %
      (len(runs), len(log_options)))

# An option that has an effect only beside another is refused without it, naming it.
for v in table:
    for n in v["needs"]:
        if not n["option"]:
            continue
        args = command(v["name"], n["option"], skip=n)
        r = run([v["name"], LOG] + args)
        want = "heapman %s: --%s has an effect only with --" % (v["name"], n["option"])
        if r.returncode != 2 or not r.stderr.startswith(want):
            fail("heapman %s %s %s: exit %d, %r; expected exit 2 and %r" %
                 (v["name"], LOG, " ".join(args), r.returncode, r.stderr.strip(), want))

# --- 3. the shell: the same table and parser ----------------------------------------------------
lines, expect = [], []  # expect[i]: what the stderr of lines[i] must hold (None: no error)


for v in table:
    if not v["shell"]:
        continue
    own = declared(v)
    for w in sorted(words - own - {"--help", "-h"})[:6]:  # a few refusals; step 1 has them all
        lines.append("%s %s" % (v["name"], w))
        expect.append("heapman %s: %s is not an option of %s; see '%s --help'" %
                      (v["name"], w, v["name"], v["name"]))
    for o in v["options"]:
        if o["log_option"]:
            lines.append("%s --%s" % (v["name"], o["name"]))
            expect.append("heapman %s: --%s is an option of the log the shell has open" %
                          (v["name"], o["name"]))
for name, args, renamed in runs:
    if not verbs[name]["shell"] or any("--" + o in args for o in log_options):
        continue
    if name == "video" and any(a.endswith(".mp4") for a in args) and not ffmpeg:
        continue
    lines.append(" ".join([name] + args))
    expect.append(None)
stdin = "".join("%s\nmark:%d\n" % (l, i) for i, l in enumerate(lines)) + "quit\n"
r = run([LOG], stdin=stdin)
chunks = re.split(r"^heapman: unknown command 'mark:\d+' \(type 'help'\)\n", r.stderr, flags=re.M)
if r.returncode != 0 or len(chunks) != len(lines) + 1:
    fail("shell: exit %d, %d answers for %d commands:\n%s" %
         (r.returncode, len(chunks) - 1, len(lines), r.stderr[-2000:]))
else:
    for line, want, err in zip(lines, expect, chunks):
        errors = [l for l in err.splitlines() if l.startswith("heapman ") and "is now `" not in l]
        if want is None and errors:
            fail("shell: %s: %s" % (line, errors))
        if want is not None and not any(l.startswith(want) for l in errors):
            fail("shell: %s: %r, expected %r" % (line, err.strip(), want))
print("shell: %d commands" % len(lines))

# --- 4. README.md's table of options --------------------------------------------------------------
text = open(README).read()


def readme_table(header):
    rows = []
    at = text.find(header)
    if at < 0:
        fail("README.md has no table headed %r" % header)
        return rows
    for l in text[at:].splitlines()[2:]:
        if not l.startswith("|"):
            break
        rows.append([c.strip() for c in l.strip("|").split("|")])
    return rows


takes = {}
for v in table:
    for o in v["options"]:
        if not o["positional"] and o["name"] != "help":
            takes.setdefault(o["name"], set()).add(v["name"])
listed = {}
for cells in readme_table("| option | meaning | verbs |"):
    for w in re.findall(r"`--([a-z-]+)", cells[0]):
        listed[w] = set(x.strip() for x in cells[2].split(","))
for w, vs in sorted(takes.items()):
    if w not in listed:
        fail("README.md's table of options has no row for --%s (%s)" % (w, ", ".join(sorted(vs))))
    elif listed[w] != vs:
        fail("README.md: --%s is taken by %s, the table says %s" %
             (w, ", ".join(sorted(vs)), ", ".join(sorted(listed[w]))))
for w in sorted(set(listed) - set(takes)):
    fail("README.md's table of options lists --%s, which no verb takes" % w)
old = {}
for cells in readme_table("| old spelling | verbs | now |"):
    m = re.match(r"`--([a-z-]+)", cells[0])
    if m:
        for verb in cells[1].split(","):
            old[(verb.strip(), m.group(1))] = cells[2]
for v in table:
    for r in v["renamed"]:
        if (v["name"], r["old"]) not in old:
            fail("README.md's old spellings do not list %s --%s" % (v["name"], r["old"]))

shutil.rmtree(WORK, ignore_errors=True)
if failures:
    print("%d check(s) failed" % len(failures), file=sys.stderr)
    sys.exit(1)
print("all verb-option checks passed")
