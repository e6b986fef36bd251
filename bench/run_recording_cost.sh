#!/usr/bin/env bash
# What recording costs the program, every row of issue 26's table in one run: each program run
# plainly and recorded, RUNS times in turn (plain, recorded, ... so that a machine whose speed
# drifts moves both alike); the median CPU time (user + sys of the whole process tree, from
# /usr/bin/time) of each, and their ratio. The programs:
#   mcs        Mono's C# compiler (mono-boehm) compiling a generated project of MCS_FILES files
#              (~120 lines each: generics, LINQ, lambdas, iterators, events, structs, exceptions),
#              managed stacks on (the default) and off (--mono-stacks off); also its peak RSS
#   gbrainy    the GTK# puzzle game (Debian's gbrainy on mono-boehm) under Xvfb, playing its memory
#              games (timers, redraws) for GBRAINY_S seconds, stacks on and off; CPU and peak RSS
#   game       bench/mono/MonoBench.exe game GAME_FRAMES (the Mono benchmark game), stacks on and
#              off; CPU time and the program's own work time (mono-boehm's ~2 s at shutdown, CPU
#              idle, is in the CPU figure but not the work figure)
#   guile      guile-3.0 running bench/guile_churn.scm GUILE_ROUNDS (lists of fresh strings, a
#              collection every few rounds), recorded without and with --ram-dumps every
#   malloc     bench/churn_program EVENTS (malloc/free from call depth 3-15), recorded by heaprec
#              and by heaptrack in the same run; the log bytes per malloc/free event of both
# Prints the table as Markdown on stdout, progress on stderr, and how long it took.
#
#   bench/run_recording_cost.sh BUILD_DIR [RUNS]
# Environment: MCS_FILES (300), GBRAINY_S (15), GAME_FRAMES (100000), GUILE_ROUNDS (300),
# EVENTS (10000000); ROWS: the programs to run, of "mcs gbrainy game guile malloc" (all of them;
# ROWS="mcs gbrainy game" is the Mono rows alone, ~5 minutes with RUNS 3). Needs cmake/deps.sh
# test and bench (mono-boehm, mcs, guile-3.0, heaptrack, gbrainy, xvfb) and the targets heaprec,
# heapman_preload, churn_program, mono_bench. Takes about 8 minutes with RUNS 3 on 2 cores.
set -euo pipefail
build=${1:?usage: run_recording_cost.sh BUILD_DIR [RUNS]}
runs=${2:-3}
mcs_files=${MCS_FILES:-300}
gbrainy_s=${GBRAINY_S:-15}
frames=${GAME_FRAMES:-100000}
rounds=${GUILE_ROUNDS:-300}
events=${EVENTS:-10000000}
rows=" ${ROWS:-mcs gbrainy game guile malloc} "
want() { [[ $rows == *" $1 "* ]]; }
here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath "$build")
heaprec=$build/recorder/heaprec
churn=$build/bench/churn_program
game=$build/bench/MonoBench.exe
built=("$heaprec")  # only what the rows asked for run
want malloc && built+=("$churn")
want game && built+=("$game")
for f in "${built[@]}"; do
  [[ -e $f ]] || { echo "run_recording_cost: $f not built" >&2; exit 1; }
done
needs=()
want mcs || want gbrainy || want game && needs+=(mono-boehm)
want mcs && needs+=(mcs)
want gbrainy && needs+=(Xvfb)
want guile && needs+=(guile)
want malloc && needs+=(heaptrack)
for p in "${needs[@]}"; do
  command -v "$p" >/dev/null || { echo "run_recording_cost: no $p (cmake/deps.sh test; cmake/deps.sh bench)" >&2; exit 1; }
done
want mcs && mcs_exe=$(grep -o '[^ ]*mcs\.exe' "$(command -v mcs)" | head -1)
if want gbrainy; then
  gbrainy_exe=$(grep -o '[^ "]*gbrainy\.exe' "$(command -v gbrainy || echo /usr/games/gbrainy)" | head -1)
  gbrainy_exe=${gbrainy_exe//\$libdir/\/usr\/lib\/x86_64-linux-gnu}
  [[ -f $gbrainy_exe ]] || gbrainy_exe=/usr/lib/x86_64-linux-gnu/gbrainy/gbrainy.exe
  [[ -f $gbrainy_exe ]] || { echo "run_recording_cost: no gbrainy.exe (cmake/deps.sh bench)" >&2; exit 1; }
fi

start=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/recording-cost-XXXXXX")
xvfb_pid=
cleanup() {
  [[ -n $xvfb_pid ]] && kill "$xvfb_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"  # a crashing Mono leaves its mono_crash.* files in the current directory
mkdir home cache
# Hermetic guile (as tests/integration/guile): no auto-compilation cache, no init file.
export HOME="$work/home" XDG_CACHE_HOME="$work/cache" GUILE_AUTO_COMPILE=0
unset GUILE_LOAD_PATH GUILE_LOAD_COMPILED_PATH HEAPMAN_RAM_DUMPS MONO_ENV_OPTIONS

# The C# project mcs compiles: MCS_FILES files in 17 namespaces, each class using two others.
gen_project() {
  local dir=$1 n=$2 i j k
  mkdir -p "$dir"
  for ((i = 0; i < n; i++)); do
    j=$(((i * 7 + 3) % n))
    k=$(((i * 13 + 5) % n))
    cat >"$dir/Unit$i.cs" <<CS
using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;

namespace Game.Module$((i % 17))
{
    public enum State$i { Idle, Running, Blocked, Done, Failed }

    public interface IUnit$i
    {
        int Id { get; }
        string Describe();
        IEnumerable<int> Costs(int limit);
    }

    public struct Point$i : IEquatable<Point$i>
    {
        public readonly double X, Y;
        public Point$i(double x, double y) { X = x; Y = y; }
        public double Length => Math.Sqrt(X * X + Y * Y);
        public static Point$i operator +(Point$i a, Point$i b) => new Point$i(a.X + b.X, a.Y + b.Y);
        public bool Equals(Point$i o) => X == o.X && Y == o.Y;
        public override bool Equals(object o) => o is Point$i && Equals((Point$i)o);
        public override int GetHashCode() => X.GetHashCode() * 31 + Y.GetHashCode();
        public override string ToString() => \$"({X:F2}, {Y:F2})";
    }

    public class Unit$i : IUnit$i, IComparable<Unit$i>
    {
        private readonly Dictionary<string, List<Point$i>> tracks = new Dictionary<string, List<Point$i>>();
        private State$i state = State$i.Idle;
        public int Id { get; private set; }
        public string Name { get; set; }
        public event EventHandler<EventArgs> Changed;

        public Unit$i(int id, string name) { Id = id; Name = name ?? "unit$i"; }

        public string Describe()
        {
            var sb = new StringBuilder();
            sb.Append(Name).Append('#').Append(Id).Append(' ').Append(state);
            foreach (var kv in tracks.OrderBy(t => t.Key))
                sb.AppendFormat(" {0}:{1}", kv.Key, kv.Value.Count);
            return sb.ToString();
        }

        public IEnumerable<int> Costs(int limit)
        {
            for (int c = 0; c < limit; c++)
            {
                if (c % 3 == 0) continue;
                yield return c * $((i % 11 + 1));
            }
        }

        public void Add(string key, Point$i p)
        {
            List<Point$i> list;
            if (!tracks.TryGetValue(key, out list)) { list = new List<Point$i>(); tracks[key] = list; }
            list.Add(p);
            state = list.Count > 10 ? State$i.Blocked : State$i.Running;
            Changed?.Invoke(this, EventArgs.Empty);
        }

        public double Score(Func<Point$i, double> weight)
        {
            return tracks.Values.SelectMany(l => l).Where(p => p.Length > 0.5).Sum(weight);
        }

        public Game.Module$((j % 17)).Unit$j Partner(Game.Module$((j % 17)).Unit$j other)
        {
            try
            {
                if (other == null) throw new ArgumentNullException(nameof(other));
                return other.Id > Id ? other : null;
            }
            catch (ArgumentException e) when (e.ParamName == "other")
            {
                return null;
            }
        }

        public int CompareTo(Unit$i other) => other == null ? 1 : Id.CompareTo(other.Id);

        public static List<Tuple<int, string>> Table(IEnumerable<Unit$i> units)
        {
            var q = from u in units
                    where u.state != State$i.Failed
                    group u by u.Id % 4 into g
                    orderby g.Key
                    select Tuple.Create(g.Key, string.Join(",", g.Select(x => x.Name)));
            return q.ToList();
        }

        public string Kind()
        {
            switch (state)
            {
                case State$i.Idle: return "idle";
                case State$i.Running: return "running " + tracks.Count;
                case State$i.Blocked: return string.Format("blocked at {0}", Id);
                default: return state.ToString().ToLowerInvariant();
            }
        }
    }

    public static class Unit${i}Extensions
    {
        public static T Pick<T>(this IList<T> list, Random r) where T : class => list.Count == 0 ? null : list[r.Next(list.Count)];
        public static Dictionary<int, Game.Module$((k % 17)).Unit$k> Index(this IEnumerable<Game.Module$((k % 17)).Unit$k> units)
            => units.GroupBy(u => u.Id).ToDictionary(g => g.Key, g => g.First());
    }

    public class Pool$i<T> where T : class, new()
    {
        private readonly Stack<T> free = new Stack<T>();
        public int Created { get; private set; }
        public T Get() { if (free.Count > 0) return free.Pop(); Created++; return new T(); }
        public void Put(T item) => free.Push(item);
    }
}
CS
  done
}
want mcs && gen_project "$work/project" "$mcs_files"

# A virtual X server for gbrainy, on the first free display (-displayfd).
display=
if want gbrainy; then
  exec 9<> <(:)
  Xvfb -displayfd 9 -screen 0 1024x768x24 -nolisten tcp >/dev/null 2>&1 &
  xvfb_pid=$!
  read -r -t 10 display <&9 || { echo "run_recording_cost: Xvfb did not start" >&2; exit 1; }
  exec 9<&-
fi
memory_games="Memorize words, Memorize faces, Memorize numbers, Memorize figures and text, Counting dots"

# one LABEL MODE: runs LABEL's program once in MODE (plain, rec, nostacks, dumps, heaptrack) and
# appends "cpu_s maxrss_kb work_ms log_bytes" to t.LABEL.MODE.
one() {
  local label=$1 mode=$2 rec=() cmd=() ok=0 workms=- bytes=-
  rm -rf r.hml r.hml.* ht.* out.dll
  case $mode in
    plain) ;;
    rec) rec=("$heaprec" run -o r.hml --) ;;
    nostacks) rec=("$heaprec" run --mono-stacks off -o r.hml --) ;;
    dumps) rec=("$heaprec" run --ram-dumps every -o r.hml --) ;;
    heaptrack) rec=(heaptrack -o "$work/ht") ;;
  esac
  case $label in
    mcs) cmd=(mono-boehm "$mcs_exe" -target:library -out:out.dll "$work"/project/*.cs) ;;
    gbrainy) cmd=(timeout -s TERM "$gbrainy_s" "${rec[@]}" mono-boehm "$gbrainy_exe" --customgame "$memory_games")
             rec=() ok=124 ;;
    game) cmd=(mono-boehm "$game" game "$frames") ;;
    guile) cmd=(guile --no-auto-compile -s "$here/guile_churn.scm" "$rounds") ;;
    malloc) cmd=("$churn" "$events") ;;
  esac
  local rc=0
  DISPLAY=:$display /usr/bin/time -f "%U %S %M" -o time.out "${rec[@]}" "${cmd[@]}" >out.txt 2>err.txt || rc=$?
  if [[ $rc != 0 && $rc != "$ok" ]]; then
    echo "run_recording_cost: $label $mode failed ($rc):" >&2
    tail -5 err.txt >&2
    exit 1
  fi
  [[ $label == mcs && ! -s out.dll ]] && { echo "run_recording_cost: mcs wrote no assembly" >&2; tail -5 out.txt >&2; exit 1; }
  [[ $label == game ]] && workms=$(sed -nE 's/^work ms ([0-9.]+) .*/\1/p' out.txt)
  [[ -f r.hml ]] && bytes=$(stat -c %s r.hml)
  [[ $mode == heaptrack ]] && bytes=$(stat -c %s "$work"/ht.* | head -1)
  # The last line of a killed process's time output is its status line: take the figures line.
  tail -1 time.out | awk -v w="$workms" -v b="$bytes" '{ printf "%.3f %d %s %s\n", $1 + $2, $3, w, b }' >>"t.$label.$mode"
}

# med LABEL MODE COLUMN: the median of that column over the runs.
med() { sort -g -k"$3","$3" "t.$1.$2" | awk -v c="$3" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'; }

plan=(
  "mcs plain rec nostacks"
  "gbrainy plain rec nostacks"
  "game plain rec nostacks"
  "guile plain rec dumps"
  "malloc plain rec heaptrack"
)
echo "recording cost: $runs runs of each, in turn; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for line in "${plan[@]}"; do
  read -r label modes <<<"$line"
  want "$label" || continue
  for ((r = 1; r <= runs; r++)); do
    for mode in $modes; do
      one "$label" "$mode"
      echo "  $label $mode run $r: $(tail -1 "t.$label.$mode") (cpu s, maxrss KiB, work ms, log bytes)" >&2
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# The malloc row's events: the program's own count (its last run's output).
want malloc && malloc_events=$(sed -nE 's/^plain: ([0-9]+) alloc.*/\1/p' out.txt)

row() {  # NAME LABEL MODE BASE_MODE: a CPU row
  local p r
  p=$(med "$2" "$4" 1)
  r=$(med "$2" "$3" 1)
  awk -v n="$1" -v p="$p" -v r="$r" 'BEGIN { printf "| %s | %.3f | %.3f | **%.2fx** |\n", n, p, r, r / p }'
}
echo
echo "| row (CPU s, user + sys, median of $runs) | plain | recorded | ratio |"
echo "| --- | --- | --- | --- |"
if want mcs; then
  row "mcs, $mcs_files files, managed stacks on" mcs rec plain
  row "mcs, \`--mono-stacks off\`" mcs nostacks plain
fi
if want gbrainy; then
  row "gbrainy, ${gbrainy_s} s of memory games under Xvfb, stacks on" gbrainy rec plain
  row "gbrainy, \`--mono-stacks off\`" gbrainy nostacks plain
fi
want game && row "Mono game ($frames frames), stacks on" game rec plain
want game && row "Mono game, \`--mono-stacks off\`" game nostacks plain
want game && awk -v p="$(med game plain 3)" -v r="$(med game rec 3)" -v o="$(med game nostacks 3)" \
  'BEGIN { printf "| Mono game, work ms (the program'"'"'s own), stacks on / off | %.1f | %.1f / %.1f | **%.2fx / %.2fx** |\n", p, r, o, r / p, o / p }'
if want guile; then
  row "guile churning lists ($rounds rounds)" guile rec plain
  row "guile, \`--ram-dumps every\`" guile dumps plain
  row "guile, \`--ram-dumps every\` against recording without" guile dumps rec
fi
want malloc && awk -v p="$(med malloc plain 1)" -v r="$(med malloc rec 1)" -v h="$(med malloc heaptrack 1)" \
  'BEGIN { printf "| malloc churn (%s), heaprec / heaptrack | %.3f | %.3f / %.3f | %.2fx / %.2fx: **%.2f** of heaptrack'"'"'s |\n", "'"$events"' events", p, r, h, r / p, h / p, (r / p) / (h / p) }'
want malloc && awk -v b="$(med malloc rec 4)" -v h="$(med malloc heaptrack 4)" -v n="$malloc_events" \
  'BEGIN { printf "| log bytes per malloc/free event (%d events), heaprec / heaptrack | | %.2f / %.2f | |\n", n, b / n, h / n }'
rss() {  # NAME LABEL MODE: a peak-RSS row
  awk -v n="$1" -v p="$(med "$2" plain 2)" -v r="$(med "$2" "$3" 2)" \
    'BEGIN { printf "| %s (MB) | %.0f | %.0f | **%.2fx** |\n", n, p / 1024, r / 1024, r / p }'
}
want mcs && rss "resident memory, mcs, stacks on" mcs rec
want gbrainy && rss "resident memory, gbrainy, stacks on" gbrainy rec
want game && rss "resident memory, Mono game, stacks on" game rec
echo
echo "took $(($(date +%s) - start)) s"
