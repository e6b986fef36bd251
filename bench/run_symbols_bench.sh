#!/usr/bin/env bash
# run_symbols_bench.sh BUILD_DIR [COUNT]: the symbolizer on COUNT (default 400000) unique addresses
# from the project's own RelWithDebInfo binaries and the libstdc++ and libc they load, then the
# peers (elfutils eu-addr2line, binutils addr2line: -a -f -i -C, addresses on stdin) on the same
# addresses, and how often the answers agree with binutils'. The first run starts with an empty
# debug cache (XDG_CACHE_HOME in a temporary directory).
#
# Needs in BUILD_DIR: bench/symbols_bench, heapman/heapman, tests/logformat_tests.
set -euo pipefail
build=${1:?usage: run_symbols_bench.sh BUILD_DIR [COUNT]}
count=${2:-400000}
bench=$build/bench/symbols_bench
files=("$build/heapman/heapman" "$build/tests/logformat_tests")
# The libraries the program loads (libstdc++ without debug info unless its -dbg package is in).
while read -r lib; do files+=("$(realpath "$lib")"); done < <(
  ldd "$build/heapman/heapman" | awk '$1 ~ /^(libstdc\+\+|libc)\.so/ {print $3}')

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A cache of its own, empty at first: the first run inflates a compressed separate debug file
# (libc6-dbg's) into it, as a user's first query does; the later runs read that copy.
export XDG_CACHE_HOME="$work/cache"

echo "== HeapMan symbolizer, all hardware threads (3 runs: the first with an empty debug cache)"
"$bench" --count "$count" --dump "$work" --print "${files[@]}"
# Each later run's time and cost (its last lines also count the units it read).
for run in 2 3; do "$bench" --count "$count" "${files[@]}" | grep -E '^(resolveAll|freeing)'; done
echo "== HeapMan symbolizer, one thread"
"$bench" --count "$count" --threads 1 "${files[@]}" | grep -E '^(resolveAll|freeing)'

peer() {  # peer NAME COMMAND...: time COMMAND -e FILE < addresses for every file
  local name=$1 start end n=0
  shift
  if ! command -v "$1" > /dev/null; then
    echo "== $name: not installed"
    return
  fi
  start=$(date +%s.%N)
  for path in "$work"/*.path; do
    i=$(basename "$path" .path)
    # Exit status 1 when some address has no answer (eu-addr2line): not a failure here.
    "$@" -e "$(cat "$path")" < "$work/$i.addr" > "$work/$i.$name" || true
    n=$((n + $(wc -l < "$work/$i.addr")))
  done
  end=$(date +%s.%N)
  echo "== $name: $n addresses in $(echo "$end - $start" | bc) s ($(echo "$n / ($end - $start)" | bc) addresses/s, one thread)"
}
peer addr2line addr2line -a -f -i -C
# eu-addr2line takes milliseconds per address on these binaries (143/s on 20 000): every 40th.
for f in "$work"/*.addr; do awk 'NR % 40 == 1' "$f" > "$f.all" && mv "$f.all" "$f"; done
peer eu-addr2line eu-addr2line -a -f -i -C

if [ -e "$work/0.addr2line" ]; then
  echo "== agreement with binutils addr2line (same addresses)"
  python3 - "$work" <<'PY'
import glob, os, re, sys

def parse(path):
    out, cur = {}, None
    lines = open(path, errors="replace").read().split("\n")
    i = 0
    while i < len(lines):
        l = lines[i]
        if re.fullmatch(r"0x[0-9a-f]+", l):
            cur = out.setdefault(int(l, 16), [])
            i += 1
            continue
        if cur is None or i + 1 >= len(lines):
            break
        func, loc = l, re.sub(r" \(discriminator \d+\)$", "", lines[i + 1])
        file, _, line = loc.rpartition(":")
        line = int(line) if line.isdigit() else 0
        if func != "??" or line:
            cur.append((func, os.path.basename(file), line))
        i += 2
    return out

total = known = line = file = depth = chain = outer = ours_func = peer_func = 0
for peer_path in sorted(glob.glob(sys.argv[1] + "/*.addr2line")):
    peer = parse(peer_path)
    ours = parse(peer_path.replace(".addr2line", ".ours"))
    for a, p in peer.items():
        o = ours.get(a, [])
        total += 1
        peer_func += bool(p and p[-1][0] != "??")
        ours_func += bool(o and o[-1][0] != "??")
        if not p or not p[0][2]:
            continue
        known += 1
        line += bool(o) and o[0][2] == p[0][2]
        file += bool(o) and o[0][1] == p[0][1]
        depth += len(o) == len(p)
        chain += [f[2] for f in o] == [f[2] for f in p]
        outer += bool(o) and o[-1][0] == p[-1][0]
pct = lambda n, d: f"{100.0 * n / max(d, 1):.1f}%"
print(f"addresses {total}: with a function from binutils {pct(peer_func, total)}, from ours {pct(ours_func, total)}")
print(f"of the {known} with a line from binutils, equal in ours: innermost line {pct(line, known)}, "
      f"its file name {pct(file, known)}, inline depth {pct(depth, known)}, "
      f"the lines of the whole chain {pct(chain, known)}, outermost function name {pct(outer, known)}")
PY
fi
