#!/usr/bin/env bash
# What watching a recording live costs the program: each program recorded plainly
# (heaprec run) and recorded with heaprec run --serve 0 while a client polls the server as the
# page does, RUNS times in turn (plain, served, plain, ... so that a machine whose speed drifts
# moves both alike). The client, as page.js: /api/status every 500 ms; when the generation moved
# (the log grew), /api/info, /api/gcs and /api/events; and, unless it rests, at the log's last
# seq /api/blame?top=50&stacks=, /api/stacks and, when due (at most every 5 s and every 10
# times the last map's time; always once the log is complete), /api/map, one after the other,
# then a rest of 3 times that round's time (none once the log is complete). Per mode, the
# medians of:
#   wall     from starting heaprec to its "wrote LOG" line (the program's run and the log's end)
#   cpu      user + sys of heaprec and the program (wait4's rusage of heaprec, less the server's
#            own CPU time read from /proc just before it is stopped)
#   server   the server's CPU time (heapman serve --follow), when the program ended and when it
#            was stopped (after the complete log's index and last answers), and the client's
#            rounds of answers at the end
# and the served/plain ratios of wall and cpu. The programs:
#   game     samples/gc_game GAME_ARGS (bdwgc: levels, frames, an audio thread)
#   guile    guile-3.0 running bench/guile_churn.scm GUILE_ROUNDS (a collection every few rounds)
#
#   bench/run_live_cost.sh BUILD_DIR [RUNS]
# RUNS 5; GAME_ARGS "40 3000"; GUILE_ROUNDS 150. Needs guile-3.0 and python3 (cmake/deps.sh
# test) and the targets heaprec, heapman, gc_game.
set -euo pipefail
build=$(realpath "${1:?usage: run_live_cost.sh BUILD_DIR [RUNS]}")
runs=${2:-5}
game_args=${GAME_ARGS:-40 3000}
rounds=${GUILE_ROUNDS:-150}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
heaprec="$build/recorder/heaprec"
game="$build/samples/gc_game"
for f in "$heaprec" "$build/heapman/heapman" "$game"; do
  [[ -x $f ]] || { echo "run_live_cost: $f not built" >&2; exit 1; }
done
guile=$(command -v guile-3.0 || command -v guile || true)
[[ -n $guile ]] || { echo "run_live_cost: no guile (cmake/deps.sh test)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/heapman-live-cost-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir home cache
# Hermetic guile (as tests/integration/guile): no auto-compilation cache, no init file.
export HOME="$work/home" XDG_CACHE_HOME="$work/cache" GUILE_AUTO_COMPILE=0
unset GUILE_LOAD_PATH GUILE_LOAD_COMPILED_PATH HEAPMAN_RAM_DUMPS MONO_ENV_OPTIONS

python3 - "$heaprec" "$runs" "$game" "$game_args" "$guile" "$here/guile_churn.scm" "$rounds" <<'PY'
import json, os, re, signal, statistics, subprocess, sys, threading, time, urllib.request

heaprec, runs, game, game_args, guile, churn, rounds = sys.argv[1:]
runs = int(runs)
programs = {
    'game': [game] + game_args.split(),
    'guile': [guile, '--no-auto-compile', '-s', churn, rounds],
}
tick = os.sysconf('SC_CLK_TCK')


def cpu_of(pid):  # user + sys seconds of a live process, from /proc
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick


def server_cpu_now(heaprec_pid):  # heaprec's children: the server
    with open(f'/proc/{heaprec_pid}/task/{heaprec_pid}/children') as f:
        return sum(cpu_of(int(k)) for k in f.read().split())


def client(url, stop, rounds_done):
    """Polls as page.js does until `stop` is set."""
    def get(path):
        with urllib.request.urlopen(url + path, timeout=60) as r:
            return r.read()
    generation, answered, rest_until = None, None, 0.0
    map_asked, map_took = None, 0.0
    while not stop.is_set():
        try:
            status = json.loads(get('api/status'))
            if status['generation'] != generation:  # the timeline, at every growth
                generation = status['generation']
                info = json.loads(get('api/info'))
                get('api/gcs')
                get('api/events')
            if answered != generation and (status['complete'] or time.monotonic() >= rest_until):
                # The answers at the end, then a rest of 3 times their time.
                start = time.monotonic()
                answered = generation
                at = f"seq:{info['last_seq']}"
                get(f'api/blame?at={at}&top=50&stacks=')
                get(f'api/stacks?at={at}')
                if (status['complete'] or map_asked is None or
                        start - map_asked >= max(5.0, 10 * map_took)):
                    map_asked = time.monotonic()
                    get(f'api/map?at={at}')
                    map_took = time.monotonic() - map_asked
                rest_until = time.monotonic() + 3 * (time.monotonic() - start)
                rounds_done[0] += 1
        except Exception:
            pass  # the log holds no chunk yet, or the server is between generations
        stop.wait(0.5)


def run(argv, served):
    log = os.path.abspath('live.hml')
    cmd = [heaprec, 'run'] + (['--serve', '0'] if served else []) + ['-o', log, '--'] + argv
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stop, rounds_done, poller, wall, during = threading.Event(), [0], None, None, 0.0
    for line in p.stderr:
        m = re.match(r'heaprec: serving \S+ on (\S+) while', line)
        if m:
            poller = threading.Thread(target=client, args=(m.group(1), stop, rounds_done))
            poller.start()
        if line.startswith('heaprec: wrote '):
            wall = time.monotonic() - t0
            during = server_cpu_now(p.pid) if served else 0.0
        if line.startswith('heaprec: still serving') or (not served and wall is not None):
            break
    stop.set()
    if poller:
        poller.join()
    server_cpu = 0.0
    if served:
        server_cpu = server_cpu_now(p.pid)
        p.send_signal(signal.SIGINT)
    p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0 or wall is None:
        sys.exit(f'run_live_cost: {cmd} ended with {p.returncode}')
    return wall, ru.ru_utime + ru.ru_stime - server_cpu, server_cpu, during, rounds_done[0]


print('| program | mode | wall s | CPU s | server CPU s | of it while the program ran | answer rounds | wall ratio | CPU ratio |')
print('|---|---|---|---|---|---|---|---|---|')
for name, argv in programs.items():
    got = {False: [], True: []}
    for r in range(runs):
        for served in (False, True):
            got[served].append(run(argv, served))
            w, c, s, d, n = got[served][-1]
            print(f'{name} run {r + 1} {"served" if served else "plain"}: wall {w:.2f} s, '
                  f'cpu {c:.2f} s, server {s:.2f} s ({d:.2f} s while the program ran), '
                  f'{n} answer rounds', file=sys.stderr)
    med = {k: [statistics.median(x[i] for x in v) for i in range(5)] for k, v in got.items()}
    for served in (False, True):
        w, c, s, d, n = med[served]
        ratio = (f'{w / med[False][0]:.3f} | {c / med[False][1]:.3f}' if served else '1 | 1')
        print(f'| {name} | {"--serve + client" if served else "plain"} | {w:.2f} | {c:.2f} | '
              f'{s:.2f} | {d:.2f} | {n:.0f} | {ratio} |')
PY
