#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Checks `dacce report --format json -n 0` output against expected paths.

usage: check-report.py EXPECTED REPORT.json MIN_EXACT_PERCENT

Every context whose innermost frame names a function of EXPECTED must be
exactly the expected path (innermost first); contexts ending elsewhere (the
loops in main, libc) are not judged.  Fails when any judged context differs,
when a function of EXPECTED never shows up, or when the judged samples are
fewer than MIN_EXACT_PERCENT of all samples.  Prints one line.
"""
import json
import sys


def expected_paths(path):
    paths = {}
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        frames = []
        for word in line.split():
            name, _, times = word.partition("*")
            if name == "":
                frames.append("*")
            else:
                frames.extend([name] * (int(times) if times else 1))
        paths[frames[0]] = frames
    return paths


def main():
    expected = expected_paths(sys.argv[1])
    report = json.load(open(sys.argv[2]))
    minimum = float(sys.argv[3])
    total = report["total_samples"]
    judged = 0
    seen = set()
    for ctx in report["contexts"]:
        names = [f["function"] for f in ctx["frames"] if not f["inlined"]]
        if not names or names[0] not in expected:
            continue
        want = expected[names[0]]
        ok = len(names) == len(want) and all(w in ("*", n) for w, n in zip(want, names))
        if not ok:
            print("e2e: wrong context for %s (%d samples):\n  got:  %s\n  want: %s"
                  % (names[0], ctx["samples"], " ".join(names), " ".join(want)))
            sys.exit(1)
        judged += ctx["samples"]
        seen.add(names[0])
    missing = sorted(set(expected) - seen)
    if missing:
        print("e2e: no samples for %s" % ", ".join(missing))
        sys.exit(1)
    percent = 100.0 * judged / total if total else 0.0
    if percent < minimum:
        print("e2e: only %.1f%% of %d samples in judged contexts (want >= %.1f%%)"
              % (percent, total, minimum))
        sys.exit(1)
    print("e2e: %d of %d samples in judged contexts, all exact" % (judged, total))


main()
