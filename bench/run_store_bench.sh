#!/usr/bin/env bash
# The store of many runs: 8 writers at once putting 1000 generated run summaries (bench/
# store_bench.cpp: 10 levels, ~460 rows a run, a leak from run 500 on) into SQLite and into a
# ClickHouse server started for the bench (Debian's clickhouse-server, free loopback ports, its own
# directory), the row counts checked exact, the ingest throughput, and heapman trend's latency
# over the 1000 runs (median of RUNS): live bytes at a point, and a site's bytes there (the
# change-point at run 500 checked). Then heapman ingest of one recorded gc_game log (summary and
# write), median of RUNS.
#
#   bench/run_store_bench.sh BUILD_DIR [RUNS]
#
# RUNS 5. Without clickhouse-server (cmake/deps.sh test) its rows say so.
set -euo pipefail
build=$(realpath "${1:?usage: run_store_bench.sh BUILD_DIR [RUNS]}")
runs=${2:-5}
bench="$build/bench/store_bench"
heapman="$build/heapman/heapman"
for b in "$bench" "$heapman" "$build/recorder/heaprec" "$build/samples/gc_game"; do
  [[ -x $b ]] || { echo "run_store_bench: $b not built" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/heapman-store-XXXXXX")
server=""
cleanup() {
  [[ -n $server ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
export HOME="$work"
"$bench" expect 1000 > expect.txt

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# 8 writers x 125 runs; prints "seconds runs/s rows/s exact|MISMATCH".
fill() {
  local store=$1 t0 t1 rows
  t0=$(now)
  for w in 0 1 2 3 4 5 6 7; do "$bench" put "$store" $((w * 125)) 125 > "put$w.txt" & done
  wait
  t1=$(now)
  "$bench" counts "$store" > counts.txt
  rows=$(awk '{s += $2} END {print s}' expect.txt)
  local verdict=exact
  cmp -s counts.txt expect.txt || { verdict=MISMATCH; diff counts.txt expect.txt >&2 || true; }
  awk -v a="$t0" -v b="$t1" -v r="$rows" -v v="$verdict" \
    'BEGIN {printf "%.2f s | %.0f runs/s | %.0f rows/s | %s", b - a, 1000 / (b - a), r / (b - a), v}'
}

# Median seconds of a trend command over RUNS runs.
trend_time() {
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(now)
    "$heapman" trend "$@" > trend.out
    t1=$(now)
    awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", b - a}'
  done | median
}

report() {  # NAME STORE
  local name=$1 store=$2 fill_row live site step
  fill_row=$(fill "$store")
  live=$(trend_time --store "$store" --tag build --point level_end#3)
  site=$(trend_time --store "$store" --tag build --point level_end#3 --site '^recordInput')
  step=$(awk '/^step:/ {sub(":", "", $3); print $2, $3}' trend.out)
  echo "| $name | $fill_row | $live s | $site s (step at $step) |"
}

echo "8 writers x 125 generated runs (1000 runs, $(awk '{s += $2} END {print s}' expect.txt) rows); trend: median of $runs"
echo
echo "| store | 8 writers, wall | ingest | rows | counts | trend --point | trend --site |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
report SQLite "$work/runs.sqlite"

ch=$(command -v clickhouse-server || true)
[[ -z $ch && -x /usr/sbin/clickhouse-server ]] && ch=/usr/sbin/clickhouse-server
if [[ -n $ch ]]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  tcp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkdir ch
  cat > ch/config.xml <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$work/ch/server.log</log><errorlog>$work/ch/server.err.log</errorlog><console>0</console></logger>
  <http_port>$port</http_port><tcp_port>$tcp</tcp_port><listen_host>127.0.0.1</listen_host>
  <path>$work/ch/data/</path><tmp_path>$work/ch/tmp/</tmp_path><user_files_path>$work/ch/user_files/</user_files_path>
  <format_schema_path>$work/ch/format_schemas/</format_schema_path><users_config>users.xml</users_config>
  <default_profile>default</default_profile><default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
</yandex>
XML
  cat > ch/users.xml <<XML
<?xml version="1.0"?>
<yandex><profiles><default></default></profiles>
<users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
<quotas><default></default></quotas></yandex>
XML
  "$ch" --config-file="$work/ch/config.xml" > ch/stdout.log 2>&1 &
  server=$!
  for _ in $(seq 300); do
    curl -sf "http://127.0.0.1:$port/ping" > /dev/null 2>&1 && break
    sleep 0.1
  done
  url="clickhouse://127.0.0.1:$port/bench"
  "$bench" counts "$url" > /dev/null  # the schema, before 8 writers race to make it
  report "ClickHouse 18.16" "$url"
else
  echo "| ClickHouse | (no clickhouse-server: cmake/deps.sh test) | | | | | |"
fi

# One real log: heapman ingest (summarize + write) of gc_game 3 levels x 300 frames.
"$build/recorder/heaprec" run -o game.hml -- "$build/samples/gc_game" 3 300 1 > /dev/null 2>&1
"$heapman" info game.hml > /dev/null  # the index built once, as after a first command
for i in $(seq "$runs"); do
  t0=$(now)
  "$heapman" ingest game.hml --store "one$i.sqlite" --run-tag build=1 > /dev/null
  t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", b - a}'
done | median > one.txt
echo
echo "heapman ingest of one recorded gc_game log (3 levels x 300 frames, $(stat -c %s game.hml) bytes, index built): $(cat one.txt) s (median of $runs)"
