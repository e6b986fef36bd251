#!/usr/bin/env python3
"""Scores `heapman leaks` on the leak corpus (manifest.txt): how many planted leaks it names among
its first 3 suspects, and how many suspects it reports that are no planted leak.

Each program of the manifest is recorded N times and analysed twice per run:

  default      heaprec run --ram-dumps event:level_end   -> heapman leaks LOG --top 0 --json F
  level_start  heaprec run --ram-dumps event:level_start -> heapman leaks LOG --top 0 --json F
                                                             --at-each level_start

(a point's heap is the first collection after its event, the one `--ram-dumps event:NAME` dumps;
the programs never force a collection, so each mode records its own log). `--top 0` keeps every
suspect in the JSON, so that all of them are scored.

Scores, per program, run and mode:
  recall  a planted leak is found when one of the first 3 suspects (by rank) names it: one of
          its names (manifest.txt) is a substring of the suspect's holder, holder_type,
          container, container_site, entry_type or entry_site
  false   in a program that does not leak, every suspect; in one that does, every suspect that
          names none of its planted leaks

Prints a table per program (found/planted summed over the runs, false suspects summed over the
runs, seconds per recording) and the totals per mode. Exit status: 1 when a program could not be
built, recorded or analysed; otherwise 0, unless strict (--strict or HEAPMAN_LEAK_CORPUS_STRICT=1),
where anything short of 100% recall and 0 false suspects in every mode is 1 as well.

Environment: HEAPMAN_LEAK_CORPUS_RUNS (N; default 5, or --default-runs), HEAPMAN_LEAK_CORPUS_JOBS
(programs recorded at once; default 2), HEAPMAN_LEAK_CORPUS_STRICT. The CTest test
leaks/corpus_score runs this with --default-runs 1.

  score.py --bin-dir BUILD/tests/integration/leaks/corpus --heaprec BUILD/recorder/heaprec \\
           --heapman BUILD/heapman/heapman [--only NAME,...] [--modes default,level_start]
           [--keep DIR] [--details]
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

FIELDS = ("holder", "holder_type", "container", "container_site", "entry_type", "entry_site")
MODES = {
    # mode: (the event --ram-dumps dumps after, heapman leaks' point options)
    "default": ("level_end", []),
    "level_start": ("level_start", ["--at-each", "level_start"]),
}
TOP = 3


class Program:
    def __init__(self, name, lang, pattern, leaks):
        self.name, self.lang, self.pattern = name, lang, pattern
        self.leaks = leaks  # one list of alternative names per planted leak; [] for none


def read_manifest(path):
    programs = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            if len(words) < 4 or words[1] not in ("c", "cs"):
                sys.exit(f"{path}:{number}: want NAME c|cs PATTERN none|NAMES..., not {line.strip()!r}")
            expected = words[3:]
            leaks = [] if expected == ["none"] else [w.split("|") for w in expected]
            programs.append(Program(words[0], words[1], words[2], leaks))
    return programs


def names(suspect, alternatives):
    return any(a in str(suspect.get(f) or "") for f in FIELDS for a in alternatives)


def score(program, suspects):
    """(planted leaks found in the top 3, false suspects, one line per suspect)."""
    ranked = sorted(suspects, key=lambda s: s.get("rank", 0))
    found = sum(1 for leak in program.leaks if any(names(s, leak) for s in ranked[:TOP]))
    false, lines = 0, []
    for s in ranked:
        hits = [i + 1 for i, leak in enumerate(program.leaks) if names(s, leak)]
        if not hits:
            false += 1
        mark = "leak " + ",".join(map(str, hits)) if hits else "FALSE"
        lines.append(f"    {s.get('rank')}. [{mark}] {s.get('holder')} | {s.get('container')} "
                     f"({s.get('container_site')}) | entries {s.get('entry_type')} from "
                     f"{s.get('entry_site')} | {s.get('bytes_per_step')} B/step")
    return found, false, lines


def command_of(program, bin_dir, mono):
    if program.lang == "c":
        return [os.path.join(bin_dir, program.name)]
    return [mono, os.path.join(bin_dir, program.name + ".exe")]


def run_one(program, run, mode, args, work):
    """Records and analyses one program once; a dict with the outcome."""
    event, point_options = MODES[mode]
    stem = os.path.join(work, f"{program.name}-{mode}-{run}")
    log, out = stem + ".hml", stem + ".json"
    result = {"program": program.name, "run": run, "mode": mode, "error": None}
    record = [args.heaprec, "run", "--ram-dumps", "event:" + event, "-o", log, "--"] + \
        command_of(program, args.bin_dir, args.mono)
    started = time.monotonic()
    try:
        p = subprocess.run(record, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        result["record_seconds"] = time.monotonic() - started
        if p.returncode != 0:
            result["error"] = f"recording exited {p.returncode}: {p.stderr.strip()[-400:]}"
            return result
        leaks = [args.heapman, "leaks", log, "--top", "0", "--json", out] + point_options
        p = subprocess.run(leaks, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
        if p.returncode != 0:
            result["error"] = f"heapman leaks exited {p.returncode}: {(p.stderr or p.stdout).strip()[-400:]}"
            return result
        with open(out) as f:
            answer = json.load(f)
    except (OSError, subprocess.TimeoutExpired, ValueError) as e:
        result["error"] = str(e)
        return result
    finally:
        if not args.keep and os.path.exists(log):
            os.remove(log)
    found, false, lines = score(program, answer.get("suspects", []))
    result.update(found=found, false=false, lines=lines,
                  dumped=answer.get("dumped_points"), points=len(answer.get("points", [])))
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--manifest", default=os.path.join(here, "manifest.txt"))
    parser.add_argument("--bin-dir", required=True, help="where the corpus programs were built")
    parser.add_argument("--heaprec", required=True)
    parser.add_argument("--heapman", required=True)
    parser.add_argument("--mono", default="mono-boehm")
    parser.add_argument("--runs", type=int, help="runs per program (default: HEAPMAN_LEAK_CORPUS_RUNS, "
                        "else --default-runs, else 5)")
    parser.add_argument("--default-runs", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("HEAPMAN_LEAK_CORPUS_JOBS", "2")))
    parser.add_argument("--modes", default="default,level_start")
    parser.add_argument("--languages", default="c,cs", help="the languages to score (c,cs)")
    parser.add_argument("--only", help="comma-separated program names")
    parser.add_argument("--keep", help="keep the logs and JSON answers in this directory")
    parser.add_argument("--details", action="store_true", help="print every run's suspects")
    parser.add_argument("--strict", action="store_true",
                        default=os.environ.get("HEAPMAN_LEAK_CORPUS_STRICT", "") not in ("", "0"))
    args = parser.parse_args()
    runs = args.runs or int(os.environ.get("HEAPMAN_LEAK_CORPUS_RUNS") or args.default_runs)
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            sys.exit(f"unknown mode {m!r} (default, level_start)")
    languages = set(args.languages.split(","))
    programs = [p for p in read_manifest(args.manifest) if p.lang in languages]
    if args.only:
        wanted = set(args.only.split(","))
        programs = [p for p in programs if p.name in wanted]
    if not programs:
        sys.exit("no program to score")
    missing = [p.name for p in programs if not os.path.exists(command_of(p, args.bin_dir, args.mono)[-1])]
    if missing:
        sys.exit("not built (cmake --build BUILD --target leak_corpus): " + ", ".join(missing))

    work = args.keep or tempfile.mkdtemp(prefix="leak-corpus-")
    os.makedirs(work, exist_ok=True)
    started = time.monotonic()
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = [pool.submit(run_one, p, r, m, args, work)
                       for p in programs for r in range(1, runs + 1) for m in modes]
            results = [f.result() for f in futures]
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - started

    by = {(r["program"], r["mode"]): [] for r in results}
    for r in results:
        by[(r["program"], r["mode"])].append(r)
    errors = [r for r in results if r["error"]]

    print(f"leak corpus: {len(programs)} programs, {runs} run(s) each, modes {', '.join(modes)}; "
          f"recall: planted leaks named by one of the first {TOP} suspects; false: suspects naming "
          "no planted leak")
    head = f"{'program':<18} {'lang':<4} {'pattern':<23} {'leaks':>5}"
    for m in modes:
        head += f" | {m + ' recall':>18} {'false':>5}"
    head += " | rec s"
    print(head)
    print("-" * len(head))
    totals = {m: [0, 0, 0, 0, 0] for m in modes}  # found, planted, false, false in non-leaks, errors
    for p in programs:
        row = f"{p.name:<18} {p.lang:<4} {p.pattern:<23} {len(p.leaks) if p.leaks else 'none':>5}"
        seconds = []
        for m in modes:
            rs = by[(p.name, m)]
            ok = [r for r in rs if not r["error"]]
            seconds += [r["record_seconds"] for r in rs if "record_seconds" in r]
            found = sum(r["found"] for r in ok)
            planted = len(p.leaks) * len(ok)
            false = sum(r["false"] for r in ok)
            t = totals[m]
            t[0] += found
            t[1] += planted
            t[2] += false
            t[3] += false if not p.leaks else 0
            t[4] += len(rs) - len(ok)
            recall = f"{found}/{planted}" if p.leaks else "-"
            if len(ok) < len(rs):
                recall = f"ERR {len(rs) - len(ok)} " + recall
            row += f" | {recall:>18} {false:>5}"
        row += f" | {sum(seconds) / len(seconds):5.2f}" if seconds else " |     -"
        print(row)
    print("-" * len(head))
    for m in modes:
        found, planted, false, false_non_leaks, errs = totals[m]
        pct = 100.0 * found / planted if planted else 100.0
        print(f"total {m:<12} recall {found}/{planted} ({pct:.1f}%), false suspects {false} "
              f"({false_non_leaks} in programs that do not leak, {false - false_non_leaks} beside "
              f"planted leaks)" + (f", {errs} failed runs" if errs else ""))
    print(f"elapsed {elapsed:.1f} s with {args.jobs} job(s)")

    if args.details:
        print()
        for r in sorted(results, key=lambda r: (r["program"], r["mode"], r["run"])):
            if r["error"]:
                continue
            p = next(p for p in programs if p.name == r["program"])
            print(f"{r['program']} {r['mode']} run {r['run']}: found {r['found']}/{len(p.leaks)}, "
                  f"false {r['false']}, {r['points']} points, {r['dumped']} dumped")
            for line in r["lines"]:
                print(line)
    for r in errors:
        print(f"ERROR {r['program']} {r['mode']} run {r['run']}: {r['error']}", file=sys.stderr)
    if errors:
        return 1
    if args.strict:
        short = [m for m in modes if totals[m][0] < totals[m][1] or totals[m][2] > 0]
        if short:
            print("strict (HEAPMAN_LEAK_CORPUS_STRICT): recall below 100% or false suspects in mode(s) "
                  + ", ".join(short), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
