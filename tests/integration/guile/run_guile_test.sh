#!/usr/bin/env bash
# guile-3.0, a real bdwgc program nobody here wrote, runs a Scheme workload plain and under
# `heaprec run`: stdout must be byte-identical and the exit status the same; then the log must
# pass `heapman verify`, and `heapman info --json` must show a complete log with no lost events,
# at least 3 collections (GcBegin and GcEnd records), Collected records, root sets and
# allocations in the collector's heaps.
#
#   run_guile_test.sh GUILE HEAPREC HEAPMAN SCRIPT
#
# Hermetic: no auto-compilation (nothing written to a cache), HOME and XDG_CACHE_HOME in a temp
# directory, no user init file (guile -s does not load ~/.guile).
set -euo pipefail

GUILE=${1:?usage: run_guile_test.sh GUILE HEAPREC HEAPMAN SCRIPT}
HEAPREC=$(realpath "${2:?usage}")
HEAPMAN=$(realpath "${3:?usage}")
SCRIPT=$(realpath "${4:?usage}")
source "$(dirname "${BASH_SOURCE[0]}")/../support/harness.sh"
enter_work guile
mkdir home cache
export HOME="$WORK/home" XDG_CACHE_HOME="$WORK/cache" GUILE_AUTO_COMPILE=0
unset GUILE_LOAD_PATH GUILE_LOAD_COMPILED_PATH GUILE_HISTORY HEAPMAN_RAM_DUMPS

plain_rc=0
"$GUILE" --no-auto-compile -s "$SCRIPT" >plain.out 2>plain.err || plain_rc=$?
rec_rc=0
"$HEAPREC" run -o guile.hml -- "$GUILE" --no-auto-compile -s "$SCRIPT" >rec.out 2>rec.err ||
  rec_rc=$?
echo "plain: exit $plain_rc, $(wc -c <plain.out) bytes of stdout; $(grep gc-times plain.err || true)"
echo "recorded: exit $rec_rc, $(wc -c <rec.out) bytes of stdout; $(grep gc-times rec.err || true)"
sed 's/^/  heaprec stderr: /' rec.err | grep -v gc-times || true

[[ $plain_rc -eq 0 ]] || fail "plain guile exited $plain_rc"
[[ $rec_rc -eq $plain_rc ]] || fail "recorded guile exited $rec_rc, plain $plain_rc"
[[ -s plain.out ]] || fail "plain guile printed nothing"
if ! cmp -s plain.out rec.out; then
  fail "stdout differs between the plain and the recorded run"
  diff plain.out rec.out | head -20 >&2 || true
fi

if [[ ! -s guile.hml ]]; then
  fail "no log written"
else
  "$HEAPMAN" verify guile.hml >verify.out 2>&1 || fail "heapman verify failed: $(cat verify.out)"
  if "$HEAPMAN" info guile.hml --json info.json >/dev/null 2>info.err; then
    python3 - info.json <<'PY' || fail "heapman info --json: see above"
import json, sys
info = json.load(open(sys.argv[1]))
rec, heaps = info["records"], info["heaps"]
gc_allocs = sum(h["allocs"] for k, h in heaps.items() if k.startswith("gc"))
print(f"log: {info['file_bytes']} bytes, {info['events']} events, {info['gcs']} GCs, "
      f"{info['collected_objects']} collected objects, GC-heap allocations {gc_allocs}, "
      f"heaps {json.dumps(heaps)}")
problems = []
def need(cond, what):
    if not cond:
        problems.append(what)
need(info["complete"], "log not complete: " + info["truncated_reason"])
need(info["lost_events"] == 0, f"{info['lost_events']} lost events")
need(any(r["kind"] == "bdwgc" for r in info["header"]["runtimes"]), "no bdwgc runtime in the header")
need(rec["gc_begin"] >= 3, f"gc_begin records: {rec['gc_begin']} (want >= 3)")
need(rec["gc_end"] >= 3, f"gc_end records: {rec['gc_end']} (want >= 3)")
need(abs(rec["gc_begin"] - rec["gc_end"]) <= 1, "gc_begin and gc_end counts differ by more than 1")
need(info["gcs"] >= 3, f"gcs {info['gcs']} (want >= 3)")
need(rec["collected"] >= 1, "no collected records")
need(info["collected_objects"] >= 1000, f"collected objects {info['collected_objects']}")
need(rec["root_set"] >= 3, f"root_set records: {rec['root_set']}")
need(gc_allocs >= 100000, f"allocations in GC heaps: {gc_allocs} (want >= 100000)")
need(info["collected_objects"] <= gc_allocs, "more objects collected than allocated")
for p in problems:
    print("  " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
  else
    fail "heapman info --json failed: $(cat info.err)"
  fi
fi

# The first query on a fresh log reads it only as far as its point: the chunks the footer marks
# as naming code (guile's JIT code lies outside every module) are read first, so the answer is
# the one the whole log's index gives.
if [[ -s guile.hml ]]; then
  cp guile.hml fresh.hml
  "$HEAPMAN" blame fresh.hml --at gc:2 >lazy.out 2>lazy.err || fail "first blame: $(cat lazy.err)"
  [[ ! -e fresh.hml.hmx ]] || fail "the first blame at gc:2 read the whole log (fresh.hml.hmx written)"
  "$HEAPMAN" churn fresh.hml >/dev/null 2>churn.err || fail "churn: $(cat churn.err)"
  [[ -e fresh.hml.hmx ]] || fail "churn wrote no index"
  "$HEAPMAN" blame fresh.hml --at gc:2 >eager.out 2>eager.err || fail "blame: $(cat eager.err)"
  cmp -s lazy.out eager.out || fail "blame at gc:2 differs between the first query and the indexed log"
fi

finish "guile test: all checks passed"
