#!/usr/bin/env bash
# heapman serve under load: guile (Debian's guile-3.0, a real bdwgc program) running
# bench/guile_churn.scm is recorded once with a RAM dump every DUMP_EVERY collections; then
# `heapman serve` answers CLIENTS concurrent clients, each asking QUERIES questions at random
# points of the log, one of three kinds in turn:
#
#   blame   /api/blame?at=seq:S&top=50          any seq of the log
#   map     /api/map?at=seq:S                   the heap-map PNG there
#   paths   /api/paths?at=gc:N&type=.&max-paths=5   root paths at a dumped GC
#
# It prints, as a Markdown table, each kind's count, errors, and latency p50 / p99 / max in ms
# (wall time of the request as the client sees it), with the log's size and the server's
# threads. Any error (a non-200 answer, a lost request) makes it exit 1.
#
#   bench/run_serve_bench.sh BUILD_DIR [ROUNDS] [CLIENTS] [QUERIES] [THREADS] [DUMP_EVERY]
#
# ROUNDS 1250 (guile_churn.scm's rounds: about 100 M events); CLIENTS 50; QUERIES 20; THREADS 4
# (the server's --threads); DUMP_EVERY 50. Needs guile-3.0 and python3 (cmake/deps.sh test).
set -euo pipefail
build=$(realpath "${1:?usage: run_serve_bench.sh BUILD_DIR [ROUNDS] [CLIENTS] [QUERIES] [THREADS] [DUMP_EVERY]}")
rounds=${2:-1250}
clients=${3:-50}
queries=${4:-20}
threads=${5:-4}
every=${6:-50}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
heaprec="$build/recorder/heaprec"
heapman="$build/heapman/heapman"
for f in "$heaprec" "$heapman"; do
  [[ -x $f ]] || { echo "run_serve_bench: $f not built" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/heapman-serve-bench-XXXXXX")
server=
trap '[[ -n $server ]] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
mkdir home cache
export HOME="$work/home" XDG_CACHE_HOME="$work/cache" GUILE_AUTO_COMPILE=0
unset GUILE_LOAD_PATH GUILE_LOAD_COMPILED_PATH HEAPMAN_RAM_DUMPS

echo "recording guile_churn.scm ($rounds rounds, a RAM dump every $every GCs)..." >&2
"$heaprec" run -o g.hml --ram-dumps "every:$every" -- guile --no-auto-compile \
  -s "$here/guile_churn.scm" "$rounds" >/dev/null 2>rec.err || { cat rec.err >&2; exit 1; }
"$heapman" info g.hml --json info.json >/dev/null
echo "indexing..." >&2
"$heapman" gcs g.hml --csv gcs.csv >/dev/null

"$heapman" serve g.hml --port 0 --threads "$threads" --no-symbols >serve.out 2>serve.err &
server=$!
# The server builds its own index (LOG.serve.hmx) before it listens: a pass over the log, about
# a minute for 100 M events.
echo "starting the server..." >&2
start=$SECONDS
for _ in $(seq 6000); do grep -q '^heapman serve:' serve.out 2>/dev/null && break; sleep 0.1; done
echo "the server listened after $((SECONDS - start)) s" >&2
port=$(sed -n 's|^heapman serve: .* on http://127.0.0.1:\([0-9]*\)/.*|\1|p' serve.out)
[[ -n $port ]] || { echo "run_serve_bench: the server did not start:" >&2; cat serve.err >&2; exit 1; }

python3 - "$port" "$clients" "$queries" "$threads" info.json "$every" <<'PY'
import http.client, json, random, sys, threading, time

port, clients, queries, threads = (int(a) for a in sys.argv[1:5])
info = json.load(open(sys.argv[5]))
last = info["last_seq"]
every = int(sys.argv[6])
# The dumped GCs that paths answers at: the server says which of every EVERY-th GC it can use.
dumped = []
probe = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
for n in range(1, info.get("gcs", 0) + 1):
    if len(dumped) >= 10:
        break
    if n % every not in (0, 1):
        continue
    probe.request("GET", "/api/paths?type=.&max-paths=5&at=gc:%d" % n)
    r = probe.getresponse()
    r.read()
    if r.status == 200:
        dumped.append(n)
times = {"blame": [], "map": [], "paths": []}
errors = {k: 0 for k in times}
reasons = {}  # "map 503": count (an HTTP status, or the exception's name)
lock = threading.Lock()

def client(seed):
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    for i in range(queries):
        kind = ("blame", "map", "paths")[(seed + i) % 3]
        if kind == "paths" and not dumped:
            kind = "blame"
        if kind == "blame":
            url = "/api/blame?top=50&at=seq:%d" % rng.randrange(last)
        elif kind == "map":
            url = "/api/map?at=seq:%d" % rng.randrange(last)
        else:
            url = "/api/paths?type=.&max-paths=5&at=gc:%d" % rng.choice(dumped)
        t = time.perf_counter()
        try:
            conn.request("GET", url)
            r = conn.getresponse()
            r.read()
            ok = r.status == 200
            why = str(r.status)
        except Exception as e:
            ok = False
            why = type(e).__name__
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        dt = (time.perf_counter() - t) * 1000
        with lock:
            times[kind].append(dt)
            if not ok:
                errors[kind] += 1
                reasons[kind + " " + why] = reasons.get(kind + " " + why, 0) + 1

t0 = time.perf_counter()
ts = [threading.Thread(target=client, args=(s,)) for s in range(clients)]
for t in ts: t.start()
for t in ts: t.join()
wall = time.perf_counter() - t0

def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100.0 * len(v)))] if v else float("nan")

print("log: %d events, %d GCs, paths at %d dumped GCs; %d clients x %d queries, server --threads %d; "
      "%.1f s in all" % (info["events"], info.get("gcs", 0), len(dumped), clients, queries,
                         threads, wall))
print()
print("| query | count | errors | p50 ms | p99 ms | max ms |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for k, v in times.items():
    if v:
        print("| %s | %d | %d | %.0f | %.0f | %.0f |" % (k, len(v), errors[k], pct(v, 50),
                                                        pct(v, 99), max(v)))
if reasons:
    print()
    print("errors: " + ", ".join("%s x%d" % (k, n) for k, n in sorted(reasons.items())))
sys.exit(1 if sum(errors.values()) else 0)
PY
