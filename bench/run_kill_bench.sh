#!/usr/bin/env bash
# What a SIGKILL loses: a program with N threads that allocate as fast as they can is recorded,
# killed with SIGKILL after 2.5 s, and the time of the log's last event is compared with the
# moment of the kill (the recorder cannot write anything after it). Prints one line per run.
#
# Usage: bench/run_kill_bench.sh BUILD_DIR [RUNS] [THREADS...]   (default: 3 runs of 4 16 32)
set -euo pipefail
build=${1:?usage: run_kill_bench.sh BUILD_DIR [RUNS] [THREADS...]}
runs=${2:-3}
shift $(( $# >= 2 ? 2 : 1 ))
threads=("$@")
[ ${#threads[@]} -gt 0 ] || threads=(4 16 32)
heaprec=$build/recorder/heaprec
heapman=$build/heapman/heapman
prog=$build/bench/kill_churn
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for n in "${threads[@]}"; do
  for ((i = 1; i <= runs; i++)); do
    rm -f "$work"/k.hml*
    "$heaprec" run -o "$work/k.hml" -- "$prog" "$n" 2>/dev/null &
    sleep 0.5
    pid=$(pgrep -n -x kill_churn)
    sleep 2
    killed=$EPOCHREALTIME   # bash's own clock: no process to start under load
    kill -9 "$pid"
    wait || true
    "$heapman" info "$work/k.hml" --json >"$work/info.json" 2>/dev/null || true
    python3 - "$work/info.json" "$killed" "$n" <<'PY'
import json, sys
info = json.load(open(sys.argv[1]))
killed_ns = int(sys.argv[2].replace('.', '')) * 1000
last_ns = info['header']['start_wall_time_ns'] + info['duration_ns']
print(f"threads {sys.argv[3]:>3}  lost {(killed_ns - last_ns) / 1e6:7.1f} ms  events {info['events']}")
PY
  done
done
