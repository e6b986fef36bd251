#!/usr/bin/env bash
# Fuzzes the HeapMan log reader for a bounded time. Builds nothing: give it a built fuzzer.
#
#   tests/fuzz/run_fuzz.sh FUZZER [SEED_DIR | DEMO_LOG] [SECONDS]
#
#   FUZZER    the reader_fuzz binary (BUILD/tests/fuzz/reader_fuzz; HEAPMAN_FUZZ=ON, clang)
#   SEED_DIR  where the seed logs are (re)written: demo_log logs with 0, 4 and 40 frames and one
#             of many small chunks, and hand-mutated copies of them (truncated, flipped bits,
#             chunks stored raw; without footer, a chunk lost, repeated or moved).
#             Default: FUZZER's directory/seeds
#   DEMO_LOG  an executable file in that place is taken as the demo_log binary instead (the form
#             cmake/setup.sh uses); the seeds then go to the default SEED_DIR
#   SECONDS   fuzzing time, libFuzzer -max_total_time (default 60)
#
# Environment:
#   DEMO_LOG        demo_log binary (default: BUILD/samples/demo_log next to FUZZER, else PATH)
#   FUZZ_ARTIFACTS  directory for crash-/leak-/oom-/timeout- inputs (default: FUZZER's
#                   directory/artifacts); never commit these
#   FUZZ_CORPUS     keep the corpus the run grows here (default: a temporary directory)
#   FUZZ_JOBS       N > 1 runs libFuzzer in fork mode with N workers (default 1)
#   FUZZ_ARGS       extra libFuzzer arguments
#
# Exit status: 0 when the run ended without a finding; non-zero on any crash, sanitizer report,
# uncaught exception, leak, out-of-memory, oversized allocation or timeout (its input is then in
# FUZZ_ARTIFACTS, and the reproduce and minimize commands are printed), or on a usage error.
set -euo pipefail
export LC_ALL=C  # ls and comm agree on order

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}
[ $# -ge 1 ] && [ $# -le 3 ] || usage
fuzzer=$1
seeds=${2:-}
seconds=${3:-60}
[[ $seconds =~ ^[0-9]+$ ]] ||
  { echo "run_fuzz: SECONDS must be a whole number, not '$seconds'" >&2; exit 2; }
[ -f "$fuzzer" ] && [ -x "$fuzzer" ] ||
  { echo "run_fuzz: $fuzzer is not an executable (build target reader_fuzz)" >&2; exit 2; }
fuzzer=$(cd "$(dirname "$fuzzer")" && pwd)/$(basename "$fuzzer")

demo_log=${DEMO_LOG:-}
if [ -n "$seeds" ] && [ -f "$seeds" ]; then
  [ -x "$seeds" ] ||
    { echo "run_fuzz: $seeds is a file but not an executable demo_log" >&2; exit 2; }
  demo_log=$seeds
  seeds=
fi
seeds=${seeds:-$(dirname "$fuzzer")/seeds}
if [ -z "$demo_log" ]; then
  guess=$(dirname "$fuzzer")/../../samples/demo_log
  if [ -x "$guess" ]; then demo_log=$guess; else demo_log=$(command -v demo_log || true); fi
fi
[ -n "$demo_log" ] && [ -x "$demo_log" ] ||
  { echo "run_fuzz: demo_log not found; build target demo_log or set DEMO_LOG" >&2; exit 2; }

artifacts=${FUZZ_ARTIFACTS:-$(dirname "$fuzzer")/artifacts}
mkdir -p "$seeds" "$artifacts"
artifacts=$(cd "$artifacts" && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/heapman-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
corpus=${FUZZ_CORPUS:-$work/corpus}
mkdir -p "$corpus"

# ---- seeds -------------------------------------------------------------------------------------

size_of() { wc -c <"$1" | tr -d ' '; }
# u64le FILE OFFSET BYTES: the little-endian unsigned integer at OFFSET.
uint_le() {
  local v=0 i=0 b
  for b in $(od -An -v -tu1 -j "$2" -N "$3" "$1"); do
    v=$((v + (b << (8 * i))))
    i=$((i + 1))
  done
  echo "$v"
}
# flip FILE OFFSET MASK: XORs the byte at OFFSET with MASK, in place.
flip() {
  local b
  b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  # shellcheck disable=SC2059
  printf "$(printf '\\%03o' $((b ^ $3)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# cut SRC DST BYTES: the first BYTES bytes of SRC.
cut_to() { head -c "$3" "$1" >"$2"; }

rm -f "$seeds"/*.hml
"$demo_log" "$seeds/demo-4.hml" 4 >/dev/null
"$demo_log" "$seeds/demo-40.hml" 40 >/dev/null
"$demo_log" "$seeds/demo-0.hml" 0 >/dev/null
# 120 frames in 256-byte chunks: ~30 records chunks and RAM dumps among them (8 KB).
"$demo_log" "$seeds/demo-chunks.hml" 120 256 >/dev/null

src=$seeds/demo-40.hml
size=$(size_of "$src")
hlen=$(uint_le "$src" 12 4)
first_chunk=$((24 + hlen))
index_at=$(uint_le "$src" $((size - 16)) 8)  # the trailer names the index chunk
second_chunk=$((first_chunk + 40 + $(uint_le "$src" $((first_chunk + 8)) 4)))

# Truncated the ways a recorder dies: no footer, torn chunk, torn chunk header, torn trailer,
# only the header, inside the prefix.
cut_to "$src" "$seeds/trunc-no-footer.hml" "$index_at"
cut_to "$src" "$seeds/trunc-first-chunk-only.hml" "$second_chunk"
cut_to "$src" "$seeds/trunc-mid-chunk.hml" $((first_chunk + (second_chunk - first_chunk) / 2))
cut_to "$src" "$seeds/trunc-chunk-header.hml" $((second_chunk + 20))
cut_to "$src" "$seeds/trunc-trailer.hml" $((size - 5))
cut_to "$src" "$seeds/trunc-header-only.hml" "$first_chunk"
cut_to "$src" "$seeds/trunc-prefix.hml" 20

# Flipped bits: header, chunk header, payload, index chunk, trailer.
mutate() { cp "$src" "$seeds/$1.hml"; flip "$seeds/$1.hml" "$2" "$3"; }
mutate flip-header $((24 + hlen / 2)) 0x04
mutate flip-major 8 0x02
mutate flip-chunk-length $((first_chunk + 9)) 0x01
mutate flip-chunk-type $((first_chunk + 4)) 0x02
mutate flip-payload $((first_chunk + 40 + (second_chunk - first_chunk - 40) / 3)) 0x10
mutate flip-second-chunk $((second_chunk + 60)) 0x80
mutate flip-index $((index_at + 50)) 0x01
mutate flip-trailer-offset $((size - 16)) 0x08
mutate flip-footer-magic $((size - 1)) 0x20

# The same logs with every chunk stored raw (LZ4 undone) and no footer: mutations then land in
# the record streams themselves. Checksums are left zero; the fuzz target recomputes them.
if command -v python3 >/dev/null; then
  python3 - "$seeds" <<'EOF'
import struct, sys
from pathlib import Path

def unlz4(src, raw_len):  # LZ4 block format
    out, i = bytearray(), 0
    while i < len(src):
        token = src[i]; i += 1
        n = token >> 4
        if n == 15:
            while True:
                b = src[i]; i += 1; n += b
                if b != 255: break
        out += src[i:i + n]; i += n
        if i >= len(src): break
        off = src[i] | src[i + 1] << 8; i += 2
        m = token & 15
        if m == 15:
            while True:
                b = src[i]; i += 1; m += b
                if b != 255: break
        for _ in range(m + 4): out.append(out[-off])
    assert len(out) == raw_len
    return bytes(out)

for name in ("demo-4", "demo-40"):
    d = Path(sys.argv[1], name + ".hml").read_bytes()
    hlen, = struct.unpack_from("<I", d, 12)
    off, out = 24 + hlen, bytearray(d[:24 + hlen])
    while off + 40 <= len(d) and d[off:off + 4] == b"HMCK":
        typ, flags, stored, raw, seq, count = struct.unpack_from("<HHIIQI", d, off + 4)
        if typ == 3: break  # the index: dropped with the trailer
        body = d[off + 40:off + 40 + stored]
        if flags & 1: body = unlz4(body, raw)
        out += b"HMCK" + struct.pack("<HHIIQIIQ", typ, 0, len(body), len(body), seq, count, 0, 0)
        out += body
        off += 40 + stored
    Path(sys.argv[1], name + "-raw.hml").write_bytes(bytes(out))

# The log of many chunks without its footer (a recorder that died), then copied badly: a chunk
# lost from the middle, written twice, moved (docs/DESIGN.md §1.6: the chunk sequence).
d = Path(sys.argv[1], "demo-chunks.hml").read_bytes()
hlen, = struct.unpack_from("<I", d, 12)
off, chunks = 24 + hlen, []
while off + 40 <= len(d) and d[off:off + 4] == b"HMCK":
    typ, stored = struct.unpack_from("<HxxI", d, off + 4)
    if typ == 3: break
    chunks.append((typ, d[off:off + 40 + stored]))
    off += 40 + stored
records = [i for i, c in enumerate(chunks) if c[0] == 1]
ram = [i for i, c in enumerate(chunks) if c[0] == 2]
assert len(records) >= 6 and ram, "demo-chunks.hml: expected many records chunks and a RAM dump"
mid, dump = records[len(records) // 2], ram[0]
def seed(name, order):
    Path(sys.argv[1], "seq-" + name + ".hml").write_bytes(
        d[:24 + hlen] + b"".join(chunks[i][1] for i in order))
every = list(range(len(chunks)))
seed("no-footer", every)
seed("lost-records", [i for i in every if i != mid])
seed("lost-ram", [i for i in every if i != dump])
seed("records-twice", every[:mid + 1] + [mid] + every[mid + 1:])
seed("ram-twice", every[:dump + 1] + [dump] + every[dump + 1:])
seed("records-swapped", every[:mid] + [mid + 1, mid] + every[mid + 2:])
seed("ram-early", [dump] + [i for i in every if i != dump])
seed("ram-late", [i for i in every if i != dump] + [dump])
EOF
else
  echo "run_fuzz: no python3: skipping the raw-chunk seeds" >&2
fi

# Tokens of the format for the mutator (record tags are single bytes: no need to list them).
cat >"$work/heapman.dict" <<'EOF'
magic="HEAPMAN\x1a"
version_1_0="\x01\x00\x00\x00"
chunk_magic="HMCK"
footer_magic="HMFOOTER"
records_chunk="\x01\x00\x00\x00"
records_chunk_lz4="\x01\x00\x01\x00"
ram_chunk="\x02\x00\x00\x00"
index_chunk="\x03\x00\x00\x00"
varint_max="\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"
EOF

echo "run_fuzz: $(ls "$seeds" | wc -l) seeds in $seeds; fuzzing ${seconds}s;" \
  "artifacts in $artifacts" >&2

# ---- fuzz --------------------------------------------------------------------------------------

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_stack_use_after_return=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
args=(
  -max_total_time="$seconds"
  -detect_leaks=1
  -rss_limit_mb=2048
  -malloc_limit_mb=512
  -timeout=30
  -max_len=65536
  -dict="$work/heapman.dict"
  -artifact_prefix="$artifacts/"
  -print_final_stats=1
)
jobs=${FUZZ_JOBS:-1}
[ "$jobs" -gt 1 ] && args+=(-fork="$jobs")
# shellcheck disable=SC2206
args+=(${FUZZ_ARGS:-})

before=$(ls "$artifacts")
log=$work/fuzz.log
status=0
watchdog=()
command -v timeout >/dev/null && watchdog=(timeout --kill-after=30 $((seconds + 600)))
"${watchdog[@]}" "$fuzzer" "${args[@]}" "$corpus" "$seeds" >"$log" 2>&1 || status=$?

# Progress: first and last status lines (fork mode prints "#N: cov: ..." lines instead).
{ grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$log" || true
  grep -E '^#[0-9]+: cov:' "$log" | tail -1 || true
  grep -E '^stat::' "$log" || true; } | sed 's/^/run_fuzz: /' >&2
new=$(comm -13 <(echo "$before") <(ls "$artifacts") |
  grep -E '^(crash|leak|oom|timeout|slow-unit)-' || true)

if [ "$status" -eq 0 ] && [ -z "$new" ]; then
  echo "run_fuzz: OK, no findings in ${seconds}s" >&2
  exit 0
fi
set +e +o pipefail  # reporting from here on; `head` may close pipes early
echo "run_fuzz: FAILED (fuzzer exit status $status)" >&2
sed -n '/==[0-9]*== \{0,1\}ERROR\|runtime error\|terminate called\|invariant violated/,$p' \
  "$log" | head -80 >&2
if ! grep -q 'ERROR\|runtime error\|terminate\|invariant' "$log"; then
  tail -40 "$log" >&2  # no report: show how the run ended
fi
for f in $new; do
  echo "run_fuzz: finding $artifacts/$f ($(size_of "$artifacts/$f") bytes):" >&2
  xxd -l 512 "$artifacts/$f" >&2
  echo "  reproduce: $fuzzer $artifacts/$f" >&2
  echo "  minimize:  $fuzzer -minimize_crash=1 -runs=100000 -malloc_limit_mb=512" \
    "-exact_artifact_path=$artifacts/$f.min $artifacts/$f" >&2
done
[ "$status" -ne 0 ] || status=1
exit "$status"
