#!/usr/bin/env bash
# bdwgc recorder overhead: gc_bench (small GC_malloc allocations ~20 frames deep, fixed live set)
# run in these modes, RUNS times each, interleaved:
#   plain      the program alone
#   rec        heaprec run (full stacks: --depth 32, the default)
#   rec_d1     heaprec run --depth 1 (splits the stack walk's cost from the rest)
#   rec_dump   heaprec run with HEAPMAN_RAM_DUMPS=every (a RAM dump at every collection)
#   heaptrack  heaptrack 1.4: it hooks malloc only, and libgc takes its heap with mmap/sbrk, so
#              heaptrack sees none of the GC allocations: its figure is the cost of being loaded,
#              not of recording them (still the peer's floor, and a check of the harness)
#
#   bench/run_gc_bench.sh BUILD_DIR [ALLOCS] [RUNS] [LIVE]
#
# What each figure is (all times from the program itself, CLOCK_MONOTONIC: the recorder's
# start-up and the log's finishing at exit are outside them):
#   ns/alloc       work time of the allocation loop / allocations (collections included)
#   CPU ns/alloc   CPU time in the loop / allocations: of the program's thread (hooks, sweep and
#                  dumps run there), and of all threads (the recorder's writer thread included).
#                  Robust to other load on the machine, unlike wall time; on 2 busy vCPUs the
#                  writer thread finds no free core, and wall time approaches the all-threads CPU
#   mutator ns     (work time - the program's own GC pause total) / allocations: hooks + waits
#   pause ms       mean GC pause as the program's collection callback sees it (START to END; the
#                  recorder copies the mark bits, the root set and the dump at RECLAIM_END,
#                  inside that span; the sweep itself runs on the writer thread)
#   log pause ms   mean GcEnd pauseNs from the log (the recorder's own START..END clock)
#   live MiB       mean live bytes the log shows at those collections (heapman gcs: bytes of
#                  tracked objects alive after the collection)
#   pause cost     pause(rec) - pause(plain), per collection and per live MiB: the mark-bit
#                  snapshot and the root set, measured from outside, in wall time and in CPU time
#                  of the collecting thread (the load-robust figure)
#   dump cost      pause(rec_dump) - pause(rec), the same way, next to memcpy's own speed on this
#                  machine (gc_bench --memcpy)
set -euo pipefail
build=${1:?usage: run_gc_bench.sh BUILD_DIR [ALLOCS] [RUNS] [LIVE]}
allocs=${2:-5000000}
runs=${3:-3}
live=${4:-20000}
bench="$build/bench/gc_bench"
heaprec="$build/recorder/heaprec"
heapman="$build/heapman/heapman"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gc-bench-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unset HEAPMAN_RAM_DUMPS

modes="plain rec rec_d1 rec_dump"
command -v heaptrack >/dev/null && modes="$modes heaptrack"

# run MODE RUN: the program's "key value" lines into $tmp/MODE.RUN.out; for recorded modes the
# log's `heapman info --json` and `heapman gcs --csv` (then the log itself is deleted).
run() {
  local mode=$1 n=$2 out="$tmp/$1.$2.out" log="$tmp/$1.$2.hml"
  local rc=0
  case $mode in
    plain) "$bench" "$allocs" "$live" >"$out" 2>"$tmp/err" || rc=$? ;;
    rec) "$heaprec" run -o "$log" -- "$bench" "$allocs" "$live" >"$out" 2>"$tmp/err" || rc=$? ;;
    rec_d1) "$heaprec" run --depth 1 -o "$log" -- "$bench" "$allocs" "$live" >"$out" 2>"$tmp/err" ||
              rc=$? ;;
    rec_dump) HEAPMAN_RAM_DUMPS=every "$heaprec" run -o "$log" -- "$bench" "$allocs" "$live" \
                >"$out" 2>"$tmp/err" || rc=$? ;;
    heaptrack) rm -f "$tmp"/ht.*
               heaptrack -o "$tmp/ht" "$bench" "$allocs" "$live" >"$tmp/ht.log" 2>"$tmp/err" || rc=$?
               grep -E '^[a-z_]+ [0-9.]+$' "$tmp/ht.log" >"$out" || true ;;
  esac
  if [[ $rc -ne 0 ]]; then
    echo "$mode run $n failed (exit $rc):" >&2
    cat "$tmp/err" >&2
    exit 1
  fi
  if [[ $mode == rec* ]]; then
    "$heapman" info "$log" --json "$log.json" >/dev/null
    "$heapman" gcs "$log" --csv - >"$log.gcs.csv" 2>/dev/null
    rm -f "$log" "$log.hmx"
  fi
}

echo "gc_bench $allocs allocations, live set $live structures, $runs runs per mode; $(nproc) CPUs," \
     "load average $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $(seq "$runs"); do
  for mode in $modes; do
    run "$mode" "$n"
    echo "$mode run $n: $(tr '\n' ' ' <"$tmp/$mode.$n.out")"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bench" --memcpy 64 >"$tmp/memcpy.out"

python3 - "$tmp" "$runs" "$modes" <<'PY'
import csv, glob, json, os, statistics, sys
tmp, runs, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()

def kv(path):
    return {k: float(v) for k, v in (l.split() for l in open(path) if l.strip())}

res = {m: [kv(f"{tmp}/{m}.{n}.out") for n in range(1, runs + 1)] for m in modes}
mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # nan: no collection in the loop
def field(m, key):
    return [r[key] for r in res[m]]
def mut(m):  # mutator ns per alloc: work time minus the program's own GC pauses
    return [(r["work_ns"] - r["gc_pause_ns_total"]) / r["allocs"] for r in res[m]]

plain = mean(field("plain", "ns_per_alloc"))
plain_min = min(field("plain", "ns_per_alloc"))
plain_mut = mean(mut("plain"))
labels = {"plain": "plain", "rec": "heaprec, depth 32", "rec_d1": "heaprec --depth 1",
          "rec_dump": "heaprec, depth 32, RAM dump every GC", "heaptrack": "heaptrack 1.4 (malloc only)"}
print()
cpu = lambda m, key: mean([r[key] / r["allocs"] for r in res[m]])
plain_cpu = cpu("plain", "process_cpu_ns")
print(f"| mode | wall ns/alloc (mean of {runs}) | min | wall slowdown (mean / min-based) | "
      "program-thread CPU ns/alloc | all-threads CPU ns/alloc | CPU slowdown | mutator ns/alloc"
      " | GCs | pause ms (program: wall / CPU) | log bytes/event |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for m in modes:
    nsa = field(m, "ns_per_alloc")
    bpe = "—"
    if m.startswith("rec"):
        infos = [json.load(open(p)) for p in sorted(glob.glob(f"{tmp}/{m}.*.hml.json"))]
        bpe = f"{mean([i['file_bytes'] / i['events'] for i in infos]):.2f}"
        if m == "rec_dump":
            bpe += " (with dumps)"
    print(f"| {labels[m]} | {mean(nsa):.1f} | {min(nsa):.1f} | {mean(nsa) / plain:.2f}x / "
          f"{min(nsa) / plain_min:.2f}x | {cpu(m, 'thread_cpu_ns'):.1f} | "
          f"{cpu(m, 'process_cpu_ns'):.1f} | {cpu(m, 'process_cpu_ns') / plain_cpu:.2f}x | "
          f"{mean(mut(m)):.1f} | {mean(field(m, 'gcs')):.0f} | "
          f"{mean(field(m, 'gc_pause_ns_mean')) / 1e6:.2f} / "
          f"{mean(field(m, 'gc_pause_cpu_ns_mean')) / 1e6:.2f} | {bpe} |")

def gcs(m, n=1):  # the collections of the timed loop: the last `gcs` rows of the log
    rows = list(csv.DictReader(open(f"{tmp}/{m}.{n}.hml.gcs.csv")))
    k = int(res[m][n - 1]["gcs"])
    return rows[-k:] if k else []

print()
loops = {m: [g for n in range(1, runs + 1) for g in gcs(m, n)] for m in modes if m.startswith("rec")}
live_mib = {m: mean([int(g["live_bytes"]) for g in rows]) / 2**20 for m, rows in loops.items()}
log_pause = {m: mean([float(g["pause_us"]) for g in rows]) / 1e3 for m, rows in loops.items()}
for m in loops:
    print(f"{labels[m]}: {len(loops[m])} loop GCs, mean live {live_mib[m]:.2f} MiB "
          f"(objects {mean([int(g['live_objects']) for g in loops[m]]):.0f}), log pause "
          f"{log_pause[m]:.2f} ms, program pause {mean(field(m, 'gc_pause_ns_mean')) / 1e6:.2f} ms")
live_obj = mean([int(g["live_objects"]) for g in loops["rec"]])
def pause(m, key):
    return mean(field(m, key)) / 1e6
for key, what in (("gc_pause_ns_mean", "wall"), ("gc_pause_cpu_ns_mean", "CPU")):
    pp, pr = pause("plain", key), pause("rec", key)
    sweep = pr - pp
    print(f"mark snapshot + root set per GC, {what}: {pr:.2f} - {pp:.2f} = {sweep:.2f} ms,"
          f" {sweep * 1e3 / live_mib['rec']:.0f} us per live MiB, {sweep * 1e6 / live_obj:.0f} ns per"
          f" live object")
    if "rec_dump" in loops:
        pd = pause("rec_dump", key)
        dump = pd - pr
        print(f"RAM dump per GC, {what}: {pd:.2f} - {pr:.2f} = {dump:.2f} ms, "
              f"{dump * 1e3 / live_mib['rec_dump']:.0f} us per live MiB")
if "rec_dump" in loops:
    info = [json.load(open(p)) for p in glob.glob(f"{tmp}/rec_dump.*.hml.json")]
    print(f"RAM dump logs: {mean([i['file_bytes'] for i in info]) / 2**20:.0f} MiB, "
          f"{mean([i['ram_dumps']['segments'] for i in info]):.0f} segments, "
          f"{mean([i['ram_dumps']['deduplicated_segments'] for i in info]):.0f} deduplicated, "
          f"{mean([i['ram_dumps']['bytes'] for i in info]) / 2**20:.1f} MiB dumped in all (segment lengths, deduplicated ones included)")
mc = kv(f"{tmp}/memcpy.out")
print(f"memcpy on this machine (64 MiB, best of 5): {mc['memcpy_warm_us_per_mb']:.0f} us/MiB into a "
      f"warm buffer, {mc['memcpy_fresh_mmap_us_per_mb']:.0f} us/MiB into fresh mmap'd memory")
PY
