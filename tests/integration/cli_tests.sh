#!/usr/bin/env bash
# heapman CLI integration test: writes a log with demo_log, then checks `heapman info` (text and
# JSON, exact counts), `heapman verify`, the replay verbs (gcs, events, blame, diff, churn, stacks:
# exact figures; the index file reused and rebuilt; the shell with piped commands), the options'
# grammar (refusals, old spellings), and the exit codes and messages for damaged or wrong inputs
# and wrong usage.
#
#   cli_tests.sh HEAPMAN DEMO_LOG VERSION   (VERSION: the project's, from CMake)
set -euo pipefail

HEAPMAN=$(realpath "${1:?usage: cli_tests.sh HEAPMAN DEMO_LOG VERSION}")
DEMO_LOG=$(realpath "${2:?usage: cli_tests.sh HEAPMAN DEMO_LOG VERSION}")
VERSION=${3:?usage: cli_tests.sh HEAPMAN DEMO_LOG VERSION}
source "$(dirname "${BASH_SOURCE[0]}")/support/harness.sh"
enter_work cli

# run EXPECTED_EXIT NAME CMD...: runs CMD with stdout/stderr captured in NAME.out / NAME.err
# and checks its exit status.
run() {
  local want=$1 name=$2
  shift 2
  local rc=0
  "$@" >"$name.out" 2>"$name.err" || rc=$?
  if [[ $rc -ne $want ]]; then
    fail "$name: '$*' exited $rc, expected $want"
    sed 's/^/  stdout: /' "$name.out" >&2
    sed 's/^/  stderr: /' "$name.err" >&2
  fi
}

# --version is the project's version (CMake's), not a literal of its own.
run 0 version "$HEAPMAN" --version
[[ "$(cat version.out)" == "heapman $VERSION" ]] || fail "version: '$(cat version.out)' is not 'heapman $VERSION'"

# --- a good log --------------------------------------------------------------------------------
run 0 demo "$DEMO_LOG" out.hml
expect_grep demo demo.out '^demo_log: wrote out.hml \([0-9]+ bytes, 2093 events\)$'
if [[ ! -s out.hml ]]; then
  echo "FAIL: demo_log wrote no out.hml; nothing else can be checked" >&2
  exit 1
fi

run 0 info_json "$HEAPMAN" info out.hml --json
python3 - info_json.out <<'EOF' || fail "info --json: wrong numbers (see above)"
import json, sys
with open(sys.argv[1]) as f:
    j = json.load(f)
want = {
    ("records", "alloc"): 1002,
    ("records", "free"): 960,
    ("records", "realloc"): 0,
    ("records", "stack_node"): 5,
    ("records", "collected"): 2,
    ("records", "string"): 2,
    ("records", "type_def"): 1,
    ("records", "gc_begin"): 2,
    ("records", "gc_end"): 2,
    ("records", "custom_event"): 4,
    ("records", "frame_mark"): 120,
    ("records", "thread_start"): 1,
    ("records", "thread_stop"): 1,
    ("records", "module_load"): 1,
    ("records", "lost"): 0,
    ("heaps", "native", "allocs"): 1002,
    ("heaps", "native", "frees"): 960,
    ("heaps", "native", "reallocs"): 0,
    ("frees",): 960,
    ("gcs",): 2,
    ("collected_objects",): 30,
    ("custom_events", "total"): 4,
    ("custom_events", "by_name", "level_start"): 2,
    ("custom_events", "by_name", "level_end"): 2,
    ("frame_marks",): 120,
    ("lost_events",): 0,
    ("events",): 2093,
    ("first_seq",): 0,
    ("last_seq",): 2092,
    ("complete",): True,
    ("truncated_reason",): "",
    ("format", "major"): 1,
    ("ram_dumps", "segments"): 30,
    ("ram_dumps", "bytes"): 1440,
    ("ram_dumps", "deduplicated_segments"): 29,
    ("chunks", "unknown"): 0,
    ("header", "recorder_version"): "demo_log 0.1.0",
    ("header", "pointer_size"): 8,
    ("header", "runtimes"): [{"kind": "native_malloc", "version": "glibc"}],
    ("header", "options"): {"source": "demo_log"},
}
bad = 0
for path, value in want.items():
    node = j
    for key in path:
        node = node[key]
    if node != value or type(node) is not type(value):
        print("info --json: %s = %r, expected %r" % (".".join(path), node, value), file=sys.stderr)
        bad += 1
if j["file_bytes"] <= 0 or j["header"]["command_line"][1:] != ["out.hml"]:
    print("info --json: bad file_bytes or command_line", file=sys.stderr)
    bad += 1
sys.exit(1 if bad else 0)
EOF

run 0 info_text "$HEAPMAN" info out.hml
expect_grep info_text info_text.out '^status +complete$'
expect_grep info_text info_text.out '^events +2093 \(seq 0\.\.2092\)$'
expect_grep info_text info_text.out '^GCs +2, collected objects 30$'
expect_grep info_text info_text.out '^frames +120$'

run 0 verify_ok "$HEAPMAN" verify out.hml
expect_grep verify_ok verify_ok.out '^out\.hml: OK, [0-9]+ chunks, 2093 events verified; complete$'

# --- replay verbs on the good log (exact figures of demo_log's workload) --------------------------
run 0 gcs_csv "$HEAPMAN" gcs out.hml --csv -
expect_grep gcs_csv gcs_csv.out '^gc,begin_seq,end_seq,time_ms,heap_before,heap_after,live_objects,live_bytes,collected_objects,collected_bytes,pause_us'
[[ $(grep -c '^[12],' gcs_csv.out) -eq 2 ]] || fail "gcs --csv: expected 2 GC rows"
expect_grep gcs_csv gcs_csv.out '^1,1044,1045,[0-9.]+,[0-9]+,[0-9]+,6,1536,15,720,'
[[ -s out.hml.hmx ]] || fail "no index file out.hml.hmx after the first replay verb"
run 0 gcs_json "$HEAPMAN" gcs out.hml --json -
run 0 frames_json "$HEAPMAN" events out.hml --frames --json -
python3 - gcs_json.out frames_json.out <<'EOF2' || fail "gcs/events --json: wrong JSON"
import json, sys
def load(path):  # duplicate keys would hide data: refuse them
    def pairs(kv):
        keys = [k for k, _ in kv]
        assert len(keys) == len(set(keys)), keys
        return dict(kv)
    return json.load(open(path), object_pairs_hook=pairs)
g = load(sys.argv[1])
assert g["count"] == "2" and [x["gc"] for x in g["gcs"]] == [1, 2], g
assert g["gcs"][0]["collected_objects"] == 15 and g["gcs"][1]["live_bytes"] == 3072, g["gcs"]
f = load(sys.argv[2])
assert len(f["frames"]) == 120 and f["frames"][0]["point"] == "frame:1", f["frames"][:2]
EOF2
run 0 events_csv "$HEAPMAN" events out.hml --csv -
expect_grep events_csv events_csv.out '^level_end,2,level_end#2,2091,'
run 0 blame "$HEAPMAN" blame out.hml --at level_end#1 --json -
python3 - blame.out <<'EOF2' || fail "blame --json: wrong numbers"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["query"] == "blame" and j["point"] == "level_end#1", j
assert j["live"] == "1536 bytes in 6 objects", j["live"]
assert sum(r["live_bytes"] for r in j["functions"]) == 1536, j["functions"]
assert j["warnings"] == [], j["warnings"]
EOF2
run 0 diff "$HEAPMAN" diff out.hml --from level_start#2 --to level_end#2 --by types --csv -
expect_grep diff diff.out '^\(native\),6,1536,12,3072,\+6,\+1536'
run 0 churn "$HEAPMAN" churn out.hml
expect_grep churn churn.out '^garbage: +1440 bytes collected \(30 objects\), 96000 bytes freed \(960 objects\)$'
run 0 stacks "$HEAPMAN" stacks out.hml --at gc:2
[[ $(awk '{ s += $NF } END { print s }' stacks.out) -eq 3072 ]] || fail "stacks at gc:2 do not add up to 3072 bytes"
# The index is reused, and rebuilt (said on stderr) when damaged.
run 0 blame_again "$HEAPMAN" blame out.hml --at level_end#1 --json -
cmp -s blame.out blame_again.out || fail "blame with the index differs from blame that built it"
[[ -s blame_again.err ]] && fail "blame with a good index wrote to stderr: $(cat blame_again.err)"
printf 'garbage' | dd of=out.hml.hmx bs=1 seek=100 conv=notrunc status=none
run 0 blame_rebuilt "$HEAPMAN" blame out.hml --at level_end#1 --json -
expect_grep blame_rebuilt blame_rebuilt.err 'index out\.hml\.hmx: corrupt: .*; rebuilding'
cmp -s blame.out blame_rebuilt.out || fail "blame after rebuilding the index differs"
# Bad input: named problem, valid range, non-zero exit.
run 2 blame_badgc "$HEAPMAN" blame out.hml --at gc:9
expect_grep blame_badgc blame_badgc.err '^heapman blame: unknown GC 9 \(log has GCs 1\.\.2\)$'
run 2 diff_badevent "$HEAPMAN" diff out.hml --from level_end#3 --to end
expect_grep diff_badevent diff_badevent.err "event 'level_end' occurs 2 times"
run 2 blame_badpoint "$HEAPMAN" blame out.hml --at frame:x
expect_grep blame_badpoint blame_badpoint.err "malformed point 'frame:x'"
run 2 blame_badsort "$HEAPMAN" blame out.hml --sort size
expect_grep blame_badsort blame_badsort.err "unknown sort key 'size'"
run 2 diff_nofrom "$HEAPMAN" diff out.hml --to end
expect_grep diff_nofrom diff_nofrom.err -- '--from POINT is required'
run 2 blame_nolog "$HEAPMAN" blame
expect_grep blame_nolog blame_nolog.err 'no log given'
# One grammar (verb_options_test.py runs every verb with every option): an option a verb does
# not take is refused, so is one that needs another, abbreviations are not read; an old spelling
# works for one release and says what it is now.
expect_grep diff diff.err '^heapman diff: `--by` is now `--table`; the old spelling goes in the next release$'
run 2 graph_top "$HEAPMAN" graph out.hml --at gc:2 --dot g.dot --top 3
expect_grep graph_top graph_top.err '^heapman graph: --top is not an option of graph; see heapman graph --help$'
[[ -e g.dot ]] && fail "graph_top: a refused command wrote g.dot"
run 2 leaks_at "$HEAPMAN" leaks out.hml --at gc:2
expect_grep leaks_at leaks_at.err '^heapman leaks: --at is not an option of leaks; see heapman leaks --help$'
run 2 types_exclude "$HEAPMAN" types out.hml --exclude-add foo
expect_grep types_exclude types_exclude.err '^heapman types: --exclude-add has an effect only with --since; see heapman types --help$'
run 2 diff_table "$HEAPMAN" diff out.hml --from gc:1 --to gc:2 --table born --csv -
expect_grep diff_table diff_table.err "^heapman diff: --table born: this answer has no such table \(its tables: functions, types"
run 0 types_since "$HEAPMAN" types out.hml --at level_end#2 --since level_end#1 --csv -
run 0 types_compare "$HEAPMAN" types out.hml --at level_end#2 --compare level_end#1 --csv -
cmp -s types_since.out types_compare.out || fail "types --compare (old spelling) differs from --since"
expect_grep types_compare types_compare.err '^heapman types: `--compare` is now `--since`'
run 0 info_json_file "$HEAPMAN" info out.hml --json info.json
expect_grep info_json_file info_json_file.out '^status +complete$'
cmp -s info.json info_json.out || fail "info --json FILE differs from the JSON on stdout"
run 0 info_json_stdout "$HEAPMAN" info out.hml --json -
cmp -s info_json_stdout.out info_json.out || fail "info --json - differs from info --json"
[[ -s info_json_stdout.err ]] && fail "info --json -: stderr: $(cat info_json_stdout.err)"
expect_grep info_json info_json.err '^heapman info: `--json` without a value is now `--json -`'
run 0 info_json_first "$HEAPMAN" info --json out.hml
cmp -s info_json_first.out info_json.out || fail "info --json LOG (the old flag first) differs"
cp out.hml same.hml
run 2 info_json_log "$HEAPMAN" info same.hml --json same.hml
cmp -s same.hml out.hml || fail "info --json wrote over the log"
printf 'blame --no-symbols\ninfo --json -\nquit\n' >shell_grammar.in
HOME="$PWD" run 0 shell_grammar "$HEAPMAN" out.hml <shell_grammar.in
expect_grep shell_grammar shell_grammar.err '^heapman blame: --no-symbols is an option of the log the shell has open'
expect_grep shell_grammar shell_grammar.out '"file":"out\.hml"'
run 0 list_options "$HEAPMAN" --list-options
python3 -c 'import json, sys; assert len(json.load(open(sys.argv[1]))["verbs"]) > 20' list_options.out ||
  fail "--list-options: not the verb table"

# The shell: commands piped in, errors printed, the shell goes on.
printf 'gcs\nblame --at gc:9\nevents --csv -\nquit\n' >shell.in
HOME="$PWD" run 0 shell "$HEAPMAN" out.hml <shell.in
expect_grep shell shell.out '^out\.hml: 2093 events, 2 GCs, 4 custom events, 120 frames'
expect_grep shell shell.out '^level_end,2,level_end#2,2091,'
expect_grep shell shell.err 'unknown GC 9 \(log has GCs 1\.\.2\)'
expect_grep shell .heapman_history '^events --csv -$'

# --- one flipped byte in the middle -------------------------------------------------------------
cp out.hml flipped.hml
size=$(stat -c %s out.hml)
python3 - flipped.hml "$((size / 2))" <<'EOF'
import sys
path, at = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    f.seek(at)
    b = f.read(1)[0]
    f.seek(at)
    f.write(bytes([b ^ 0xff]))
EOF
cmp -s out.hml flipped.hml && fail "flipping a byte changed nothing"
run 1 verify_flipped "$HEAPMAN" verify flipped.hml
expect_grep verify_flipped verify_flipped.err '^flipped\.hml: FAILED \[[a-z_]+\] chunk [0-9]+ at byte [0-9]+: '
run 1 info_flipped "$HEAPMAN" info flipped.hml
expect_grep info_flipped info_flipped.err 'chunk [0-9]+ at byte [0-9]+'
run 1 blame_flipped "$HEAPMAN" blame flipped.hml
expect_grep blame_flipped blame_flipped.err '^heapman blame: .*chunk [0-9]+ at byte [0-9]+'

# --- not logs ----------------------------------------------------------------------------------
: >empty.hml
run 1 verify_empty "$HEAPMAN" verify empty.hml
expect_grep verify_empty verify_empty.err '^empty\.hml: FAILED \[empty\] .*empty \(0 bytes\)'
mkdir adir
run 1 verify_dir "$HEAPMAN" verify adir
expect_grep verify_dir verify_dir.err '^adir: FAILED \[io\] .*is a directory'
run 1 verify_elf "$HEAPMAN" verify /bin/true
expect_grep verify_elf verify_elf.err '^/bin/true: FAILED \[not_a_log\] .*is not a HeapMan log'
run 1 verify_missing "$HEAPMAN" verify no-such.hml
expect_grep verify_missing verify_missing.err '^no-such\.hml: FAILED \[io\] cannot open: No such file'
run 1 info_empty "$HEAPMAN" info empty.hml
expect_grep info_empty info_empty.err '^heapman info: empty\.hml: .*empty \(0 bytes\)'
run 1 info_dir "$HEAPMAN" info adir
expect_grep info_dir info_dir.err 'is a directory'

# --- a truncated log ---------------------------------------------------------------------------
cp out.hml cut.hml
truncate -s $((size * 60 / 100)) cut.hml
run 0 info_cut "$HEAPMAN" info cut.hml
expect_grep info_cut info_cut.out '^status +TRUNCATED: .*end at byte [0-9]+$'
run 0 info_cut_json "$HEAPMAN" info cut.hml --json
python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["complete"] is False, j["complete"]
assert "end at byte" in j["truncated_reason"], j["truncated_reason"]
assert j["file_bytes"] == int(sys.argv[2]), j["file_bytes"]
' info_cut_json.out "$((size * 60 / 100))" || fail "info --json on the truncated log"
run 0 blame_cut "$HEAPMAN" blame cut.hml
expect_grep blame_cut blame_cut.out '^warning: the log is truncated'
run 0 verify_cut "$HEAPMAN" verify cut.hml
expect_grep verify_cut verify_cut.out '^cut\.hml: OK, [0-9]+ chunks, [0-9]+ events verified; truncated: '

# --- a FIFO or device as LOG: refused at once, never waited on ----------------------------------
mkfifo fifo.hml
for verb in info verify blame; do
  run 1 "fifo_$verb" timeout 10 "$HEAPMAN" $verb fifo.hml
  expect_grep "fifo_$verb" "fifo_$verb.err" 'fifo\.hml: .*is not a regular file \(a FIFO\); copy the log to a file first'
done
run 1 fifo_shell timeout 10 "$HEAPMAN" fifo.hml
expect_grep fifo_shell fifo_shell.err '^heapman: fifo\.hml: is not a regular file \(a FIFO\)'
run 1 chardev_blame timeout 10 "$HEAPMAN" blame /dev/null
expect_grep chardev_blame chardev_blame.err 'is not a regular file \(a character device\)'

# --- output that cannot be written: exit 1, never a silent 0 ------------------------------------
if [[ -w /dev/full ]]; then
  run 1 full_blame bash -c '"$0" blame out.hml > /dev/full' "$HEAPMAN"
  expect_grep full_blame full_blame.err '^heapman: writing standard output failed: No space left on device$'
  run 1 full_stacks "$HEAPMAN" stacks out.hml -o /dev/full
  expect_grep full_stacks full_stacks.err '^heapman: writing /dev/full failed: No space left on device$'
  run 1 full_csv "$HEAPMAN" blame out.hml --csv /dev/full
  expect_grep full_csv full_csv.err '^heapman: writing /dev/full failed: No space left on device$'
  run 1 full_json "$HEAPMAN" gcs out.hml --json /dev/full
  expect_grep full_json full_json.err '^heapman: writing /dev/full failed: No space left on device$'
  run 1 full_info bash -c '"$0" info out.hml > /dev/full' "$HEAPMAN"
  expect_grep full_info full_info.err '^heapman: writing standard output failed: No space left on device$'
fi

# --- regexes that would crash std::regex: refused (exit 2) or matched safely --------------------
long=$(python3 -c 'print("a" * 100000)')
run 2 long_exclude "$HEAPMAN" blame out.hml --exclude-add "$long"
expect_grep long_exclude long_exclude.err "^heapman blame: --exclude-add: bad regex 'a+\.\.\.': it is 100000 characters long, at most 1000 are accepted"
run 2 long_type "$HEAPMAN" allocs out.hml --type "$long"
expect_grep long_type long_type.err "^heapman allocs: bad type regex 'a+\.\.\.': it is 100000 characters long"
run 2 long_function "$HEAPMAN" allocs out.hml --function "$long"
expect_grep long_function long_function.err "^heapman allocs: bad function regex 'a+\.\.\.': it is 100000 characters long"
run 0 nested_exclude "$HEAPMAN" blame out.hml --exclude-add '((((((((((((((((((((a))))))))))))))))))))*c' --exclude-add '(a+)+b'

# --- a damaged chunk in the middle: the answer over the chunks before it, exit 1 ----------------
"$DEMO_LOG" big.hml 150000 >/dev/null
python3 - big.hml bigflip.hml bigtwice.hml bigdrop.hml bigramtwice.hml bigswap.hml <<'PY'
import struct, sys
src, flip, twice, drop, ramtwice, swap = sys.argv[1:7]
data = bytearray(open(src, "rb").read())
hlen = struct.unpack_from("<I", data, 12)[0]
off, chunks = 24 + hlen, []
while off + 40 <= len(data) and data[off:off + 4] == b"HMCK":
    ctype = struct.unpack_from("<H", data, off + 4)[0]
    stored = struct.unpack_from("<I", data, off + 8)[0]
    chunks.append((off, ctype, 40 + stored))
    off += 40 + stored
records = [c for c in chunks if c[1] == 1]
assert len(records) >= 4, chunks
# a payload byte of the third records chunk flipped: its checksum fails
o, _, n = records[2]
bad = bytearray(data)
bad[o + 40 + (n - 40) // 2] ^= 0xFF
open(flip, "wb").write(bad)
# the second records chunk written twice (checksums intact, sequence numbers repeat), without
# the footer (whose index would no longer match)
o, _, n = records[1]
index = [c for c in chunks if c[1] == 3]
end = index[0][0] if index else len(data)
open(twice, "wb").write(data[:o + n] + data[o:o + n] + data[o + n:end])
# Without the footer too (a recorder that died), chunks as a bad copy leaves them: the third
# records chunk lost (its first sequence number, for the checks, in bigdrop.hml.seq), the RAM dump
# written twice (its number in bigramtwice.hml.chunk), the third and fourth records chunks
# swapped.
body = [data[c[0]:c[0] + c[2]] for c in chunks if c[1] != 3]
kinds = [c[1] for c in chunks if c[1] != 3]
head = bytes(data[:24 + hlen])
third = [i for i, k in enumerate(kinds) if k == 1][2]
open(drop + ".seq", "w").write(str(struct.unpack_from("<Q", data, records[2][0] + 16)[0]))
open(drop, "wb").write(head + b"".join(body[:third] + body[third + 1:]))
ram = kinds.index(2)
open(ramtwice + ".chunk", "w").write(str(ram))
open(ramtwice, "wb").write(head + b"".join(body[:ram + 1] + [body[ram]] + body[ram + 1:]))
open(swap, "wb").write(head + b"".join(body[:third] + [body[third + 1], body[third]] + body[third + 2:]))
PY
run 1 flip_gcs "$HEAPMAN" gcs bigflip.hml --csv -
expect_grep flip_gcs flip_gcs.err '^warning: the log is damaged: chunk [0-9]+ at byte [0-9]+: payload checksum mismatch .*; results cover only the events before it \(up to seq [0-9]+\)'
expect_grep flip_gcs flip_gcs.err '^heapman gcs: bigflip\.hml is damaged \(chunk [0-9]+ at byte [0-9]+: .*\): the answer covers only the intact part before it; run `heapman verify bigflip\.hml` for details$'
last=$(sed -nE 's/.*results cover only the events before it \(up to seq ([0-9]+)\).*/\1/p' flip_gcs.err | head -1)
[[ ${last:-0} -gt 100000 ]] || fail "the damaged log's intact prefix ends at seq '${last:-}'"
# the damaged log's answer is the intact log's at the last intact event (the damaged log calls it
# "end")
run 1 flip_blame "$HEAPMAN" blame bigflip.hml --at "seq:${last:-0}"
run 0 big_blame "$HEAPMAN" blame big.hml --at "seq:${last:-0}"
expect_grep flip_blame flip_blame.out '^warning: the log is damaged: '
diff <(grep -v '^warning\|^log:\|^point:' flip_blame.out) <(grep -v '^warning\|^log:\|^point:' big_blame.out) ||
  fail "blame at the last intact seq differs between the damaged and the intact log"
run 1 flip_compare "$HEAPMAN" compare big.hml bigflip.hml
expect_grep flip_compare flip_compare.err '^heapman compare: bigflip\.hml is damaged \(chunk [0-9]+ at byte [0-9]+: '
run 1 twice_verify "$HEAPMAN" verify bigtwice.hml
expect_grep twice_verify twice_verify.err '^bigtwice\.hml: FAILED \[bad_sequence\] chunk 2 at byte [0-9]+: repeats chunk 1 \(the same sequence number, length and payload checksum\): a chunk written twice$'
run 1 twice_blame "$HEAPMAN" blame bigtwice.hml
expect_grep twice_blame twice_blame.err '^heapman blame: bigtwice\.hml is damaged \(chunk 2 at byte [0-9]+: repeats chunk 1 '
# A chunk missing from the middle of a log without footer: verify, info and every query say
# where (the chunk after the gap), the queries answer up to the gap; none renumbers the events.
lost=$(cat bigdrop.hml.seq)
run 1 drop_verify "$HEAPMAN" verify bigdrop.hml
expect_grep drop_verify drop_verify.err "^bigdrop\.hml: FAILED \[bad_sequence\] chunk 2 at byte [0-9]+: records start at sequence number [0-9]+, but the records before it \(chunk 1\) end at $lost: [0-9]+ sequence numbers are missing \(a chunk lost from the log\)$"
run 1 drop_info "$HEAPMAN" info bigdrop.hml
expect_grep drop_info drop_info.err 'chunk 2 at byte [0-9]+: records start at sequence number'
run 1 drop_gcs "$HEAPMAN" gcs bigdrop.hml --csv -
expect_grep drop_gcs drop_gcs.err "^warning: the log is damaged: chunk 2 at byte [0-9]+: records start .*; results cover only the events before it \(up to seq $((lost - 1))\)"
expect_grep drop_gcs drop_gcs.err '^heapman gcs: bigdrop\.hml is damaged \(chunk 2 at byte [0-9]+: '
run 1 drop_blame "$HEAPMAN" blame bigdrop.hml --at "seq:$((lost - 1))"
run 0 big_blame_lost "$HEAPMAN" blame big.hml --at "seq:$((lost - 1))"
diff <(grep -v '^warning\|^log:\|^point:' drop_blame.out) <(grep -v '^warning\|^log:\|^point:' big_blame_lost.out) ||
  fail "blame before the lost chunk differs between the damaged and the intact log"
run 2 drop_blame_after "$HEAPMAN" blame bigdrop.hml --at "seq:$lost"
expect_grep drop_blame_after drop_blame_after.err "seq:$lost is outside the log \(seq 0\.\.$((lost - 1))\)"
# The RAM dump written twice, and two records chunks swapped (the first shows as a gap).
ram=$(cat bigramtwice.hml.chunk)
run 1 ramtwice_verify "$HEAPMAN" verify bigramtwice.hml
expect_grep ramtwice_verify ramtwice_verify.err "^bigramtwice\.hml: FAILED \[bad_sequence\] chunk $((ram + 1)) at byte [0-9]+: repeats chunk $ram "
run 1 ramtwice_blame "$HEAPMAN" blame bigramtwice.hml
expect_grep ramtwice_blame ramtwice_blame.err "^heapman blame: bigramtwice\.hml is damaged \(chunk $((ram + 1)) at byte [0-9]+: repeats chunk $ram "
run 1 swap_verify "$HEAPMAN" verify bigswap.hml
expect_grep swap_verify swap_verify.err '^bigswap\.hml: FAILED \[bad_sequence\] chunk 2 at byte [0-9]+: records start at sequence number [0-9]+, but the records before it \(chunk 1\) end at '
run 1 swap_blame "$HEAPMAN" blame bigswap.hml
expect_grep swap_blame swap_blame.err '^heapman blame: bigswap\.hml is damaged \(chunk 2 at byte [0-9]+: records start at sequence number '

# --- out of memory: a message saying so, never a bare std::bad_alloc -----------------------------
# (30 MB of address space is too little to index the 2.6M-event log here; where it is enough, only
# the absence of the bare text is checked)
rm -f big.hml.hmx
rc=0
(ulimit -v 30000 && exec "$HEAPMAN" blame big.hml) >oom.out 2>oom.err || rc=$?
grep -q 'bad_alloc' oom.err && fail "out of memory printed a bare std::bad_alloc: $(cat oom.err)"
if [[ $rc -ne 0 ]]; then
  [[ $rc -eq 1 ]] || fail "out of memory exited $rc, expected 1"
  expect_grep oom oom.err '^heapman blame: out of memory\. The log may be corrupt \(check it with `heapman verify LOG`\) or need more memory than this machine has$'
fi

# --- Ctrl-C in the shell ends the command, not the shell ----------------------------------------
# `stacks -o FIFO` blocks opening a FIFO nobody reads: SIGINT ends that command only, the shell
# says "interrupted" and answers the next command; SIGINT at the prompt still ends the shell.
mkfifo sink.fifo
HOME="$PWD" python3 - "$HEAPMAN" <<'PY' || fail "Ctrl-C in the shell (see above)"
import signal, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "out.hml"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
p.stdin.write("stacks -o sink.fifo\n")
p.stdin.flush()

def wait_for(wchan, what):  # until the shell blocks in the kernel function `wchan`
    deadline = time.time() + 10
    while True:
        try:
            if wchan in open(f"/proc/{p.pid}/wchan").read():
                return
        except OSError:
            pass
        if time.time() > deadline:
            p.kill()
            sys.exit("the shell never blocked " + what)
        time.sleep(0.02)

wait_for("_partner", "opening the FIFO")  # wait_for_partner: open() of a FIFO nobody reads
p.send_signal(signal.SIGINT)
time.sleep(0.5)
if p.poll() is not None:
    sys.exit(f"the shell ended on SIGINT during a command (exit {p.returncode})")
p.stdin.write("gcs --csv -\n")
p.stdin.flush()
out = ""
while not out.startswith("gc,begin_seq,end_seq"):  # the answer: a header and 2 GCs
    out = p.stdout.readline()
    if not out:
        sys.exit("the shell did not answer after the interrupted command")
for _ in range(2):
    out += p.stdout.readline()
if out.count("\n") != 3:
    sys.exit("gcs answered: " + out)
wait_for("pipe_read", "waiting for the next command")  # back at the prompt
p.send_signal(signal.SIGINT)  # at the prompt: ends the shell, as before
_, err = p.communicate(timeout=10)
if "heapman stacks: interrupted" not in err:
    sys.exit("no 'interrupted' message: " + err)
if p.returncode != -signal.SIGINT:
    sys.exit(f"SIGINT at the prompt did not end the shell (exit {p.returncode})")
PY

# The same on a terminal: the Ctrl-C key during a command (the terminal sends SIGINT), then the
# next command, then Ctrl-C on an empty prompt, which ends the shell.
HOME="$PWD" python3 - "$HEAPMAN" <<'PY' || fail "Ctrl-C in the shell on a terminal (see above)"
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "out.hml"])
seen = b""
def expect(what, timeout=10):
    global seen
    deadline = time.time() + timeout
    while what.encode() not in seen:
        r, _, _ = select.select([fd], [], [], max(0.0, deadline - time.time()))
        if not r:
            sys.exit(f"no {what!r} on the terminal; it shows: {seen.decode(errors='replace')!r}")
        try:
            seen += os.read(fd, 4096)
        except OSError:
            sys.exit(f"the shell ended before {what!r}; it showed: {seen.decode(errors='replace')!r}")
    seen = seen[seen.index(what.encode()) + len(what):]
def blocked_in(wchan):
    deadline = time.time() + 10
    while wchan not in open(f"/proc/{pid}/wchan").read():
        if time.time() > deadline:
            sys.exit("the shell never blocked in " + wchan)
        time.sleep(0.02)
expect("heapman> ")
os.write(fd, b"stacks -o sink.fifo\r")
blocked_in("_partner")
os.write(fd, b"\x03")
expect("heapman stacks: interrupted")
expect("heapman> ")
os.write(fd, b"gcs --csv -\r")
expect("gc,begin_seq,end_seq")
expect("heapman> ")
os.write(fd, b"\x03")
deadline = time.time() + 10
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    if time.time() > deadline:
        os.kill(pid, 9)
        sys.exit("Ctrl-C on an empty prompt did not end the shell")
    time.sleep(0.05)
if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
    sys.exit(f"Ctrl-C on an empty prompt: wait status {status}, expected exit 0")
PY

# --- usage errors ------------------------------------------------------------------------------
run 2 bogus "$HEAPMAN" bogusverb
expect_grep bogus bogus.err "unknown verb 'bogusverb'"
run 2 info_nolog "$HEAPMAN" info
expect_grep info_nolog info_nolog.err 'no log given'
run 2 verify_nolog "$HEAPMAN" verify
run 2 noverb "$HEAPMAN"
expect_grep noverb noverb.err '^usage: heapman VERB'
run 2 info_badopt "$HEAPMAN" info out.hml --bogus-option
# --top takes a count: a negative one is refused by every verb that has it (not read as "all").
for verb in blame diff churn types allocs compare leaks; do
  run 2 "top_negative_$verb" "$HEAPMAN" $verb out.hml --top -1
  expect_grep "top_negative_$verb" "top_negative_$verb.err" "^heapman $verb: '-1' is not a count for option '--top': give a whole number, 0 or more \(0: no limit\)$"
done
run 0 top_zero "$HEAPMAN" blame out.hml --top 0
run 0 help "$HEAPMAN" --help
expect_grep help help.out '^usage: heapman VERB'

finish "all CLI checks passed"
