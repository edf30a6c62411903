#!/usr/bin/env python3
"""Checks the include graph of the source folders (used by ctest).

Layers, lowest first: model, then policies and datasets (neither includes
the other), then harness. A file may include its own layer or a lower one.
Inside the tree, folders (model/ops, harness/run, ...) form a graph by their
includes; it must have no cycle. Prints each violation and exits 1; prints
the folder graph and exits 0 when it holds.

  scripts/check_layers.py [SOURCE_DIR]
"""
import os
import re
import sys

RANK = {"model": 0, "policies": 1, "datasets": 1, "harness": 2}
# Headers generated into the build tree (not in git), by the layer that owns
# them: scripts/build_info.cmake's commit of the build, for harness only.
GENERATED = {"kvbench_build_info.h": "harness"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder(path):
    return os.path.dirname(path)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    root = os.path.abspath(root)
    edges = {}  # folder -> set of folders it includes from
    bad = []
    for top in RANK:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    text = f.read()
                for inc in INCLUDE.findall(text):
                    if inc in GENERATED:
                        if RANK[GENERATED[inc]] > RANK[top]:
                            bad.append(f"{path}: {top} includes {inc} (generated, layer {GENERATED[inc]})")
                        continue
                    inc_top = inc.split("/")[0]
                    if inc_top not in RANK:
                        bad.append(f"{path}: includes \"{inc}\", outside the source layers")
                        continue
                    if not os.path.isfile(os.path.join(root, inc)):
                        bad.append(f"{path}: includes \"{inc}\", which does not exist")
                        continue
                    if RANK[inc_top] > RANK[top] or (RANK[inc_top] == RANK[top] and inc_top != top):
                        bad.append(f"{path}: {top} includes {inc} (layer {inc_top})")
                    a, b = folder(path), folder(inc)
                    if a != b:
                        edges.setdefault(a, set()).add(b)
    # Cycles among folders: depth-first search, reporting the first cycle met.
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                bad.append("folder cycle: " + " -> ".join(stack[stack.index(m):] + [m]))
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(edges):
        if n not in state:
            visit(n)
    if bad:
        for b in bad:
            print("error:", b)
        return 1
    for n in sorted(edges):
        print(f"{n} -> {', '.join(sorted(edges[n]))}")
    print("include graph: layers respected, no folder cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
