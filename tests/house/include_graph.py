#!/usr/bin/env python3
"""The project's include graph holds its layering: no file includes itself through others (no
cycle), and no layer includes one above it.

    include_graph.py SOURCE_DIR

Layers, lowest first; a file may include files of its own layer or of a lower one:
  the product:   logformat < recorder, replay < heapman   (recorder and replay never meet)
  the recorder:  common < core < collector < hooks;  launcher uses common only
Also: no weak function in the recorder outside its installable header (a weak reference is an
include the graph cannot see: core calling up into a layer that may not be linked in).
Prints every breach and exits 1, or prints a one-line summary and exits 0.
"""
import os
import re
import sys

ROOTS = ["logformat", "recorder", "replay", "heapman"]
SOURCE = re.compile(r"\.(c|cc|cpp|h|hpp)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
WEAK = re.compile(r"__attribute__\s*\(\(\s*weak\s*\)\)")

# (layer of a file, layers it may include); the first matching prefix wins.
LAYERS = [
    ("recorder/include/", "recorder.api", {"recorder.api"}),
    ("recorder/common/", "recorder.common", {"recorder.common", "logformat"}),
    ("recorder/core/", "recorder.core", {"recorder.core", "recorder.common", "logformat"}),
    ("recorder/collector/", "recorder.collector",
     {"recorder.collector", "recorder.core", "recorder.common", "logformat"}),
    ("recorder/hooks/", "recorder.hooks",
     {"recorder.hooks", "recorder.collector", "recorder.core", "recorder.common", "recorder.api",
      "logformat"}),
    ("recorder/launcher/", "recorder.launcher", {"recorder.launcher", "recorder.common", "logformat"}),
    ("logformat/", "logformat", {"logformat"}),
    ("replay/", "replay", {"replay", "logformat"}),
    ("heapman/", "heapman", {"heapman", "replay", "logformat"}),
]


def layer_of(path):
    for prefix, name, _ in LAYERS:
        if path.startswith(prefix):
            return name
    return None


def allowed(name):
    return next(a for _, n, a in LAYERS if n == name)


def main():
    src = os.path.abspath(sys.argv[1])
    files = []
    for root in ROOTS:
        for d, _, names in os.walk(os.path.join(src, root)):
            files += [os.path.relpath(os.path.join(d, n), src) for n in names if SOURCE.search(n)]
    known = set(files)
    # Include directories: every */include folder of the product, as CMake gives them.
    include_dirs = sorted({f[: f.index("/include/") + len("/include/")] for f in files
                           if "/include/" in f})

    def resolve(including, name):
        here = os.path.normpath(os.path.join(os.path.dirname(including), name))
        if here in known:
            return here
        for d in include_dirs:
            there = os.path.normpath(os.path.join(d, name))
            if there in known:
                return there
        return None  # a system or generated header

    graph, breaches = {}, []
    for f in sorted(files):
        text = open(os.path.join(src, f), encoding="utf-8", errors="replace").read()
        graph[f] = []
        for name in INCLUDE.findall(text):
            target = resolve(f, name)
            if not target:
                continue
            graph[f].append(target)
            a, b = layer_of(f), layer_of(target)
            if a and b and b not in allowed(a):
                breaches.append(f"{f} includes {target}: {a} may not include {b}")
        if f.startswith("recorder/") and not f.startswith("recorder/include/") and WEAK.search(text):
            breaches.append(f"{f} declares a weak function: register the call or include its layer")

    # Cycles: depth-first search, reporting each back edge's loop once.
    state, stack, cycles = {}, [], set()

    def visit(f):
        state[f] = 1
        stack.append(f)
        for t in graph[f]:
            if state.get(t) == 1:
                loop = stack[stack.index(t):] + [t]
                cycles.add(" -> ".join(loop))
            elif t not in state:
                visit(t)
        stack.pop()
        state[f] = 2

    sys.setrecursionlimit(10000)
    for f in sorted(graph):
        if f not in state:
            visit(f)
    breaches += [f"include cycle: {c}" for c in sorted(cycles)]
    for b in breaches:
        print(b)
    if breaches:
        return 1
    edges = sum(len(v) for v in graph.values())
    print(f"{len(graph)} files, {edges} includes: no cycle, no layer includes one above it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
